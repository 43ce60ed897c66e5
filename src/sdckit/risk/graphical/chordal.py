"""Chordal graphs: maximum cardinality search, perfect sequences, junction trees, edge moves.

Graphs are undirected, on the vertices ``0 .. m-1``, given as a :class:`networkx.Graph` or as a
list of adjacency sets (the fast form used by the model search).  methods.md M5.1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import networkx as nx
import numpy as np

from sdckit._validation import check_int, check_real, check_seed
from sdckit.errors import ParameterError

__all__ = [
    "can_add_edge",
    "can_remove_edge",
    "chordal_graphs",
    "graph_from_cliques",
    "is_chordal",
    "junction_tree",
    "maximum_cardinality_search",
    "perfect_sequence",
    "random_chordal_graph",
]

Adjacency = list[set[int]]


def _adjacency(graph: nx.Graph | Adjacency) -> Adjacency:
    if isinstance(graph, nx.Graph):
        nodes = sorted(graph.nodes)
        if nodes != list(range(len(nodes))):
            raise ParameterError(
                "The 'graph' parameter must have the vertices 0 .. m-1 (relabel it with "
                "networkx.convert_node_labels_to_integers)."
            )
        return [set(graph.neighbors(v)) for v in nodes]
    return [set(a) for a in graph]


def maximum_cardinality_search(graph: nx.Graph | Adjacency) -> tuple[list[int], list[int]]:
    """MCS order of the vertices and the number of earlier neighbours of each, in that order.

    Ties go to the smallest vertex, so the order is deterministic.  For a chordal graph the
    order is the reverse of a perfect elimination ordering.
    """
    adj = _adjacency(graph)
    m = len(adj)
    weight = [0] * m
    numbered = [False] * m
    order: list[int] = []
    labels: list[int] = []
    for _ in range(m):
        best = -1
        for v in range(m):
            if not numbered[v] and (best < 0 or weight[v] > weight[best]):
                best = v
        order.append(best)
        labels.append(weight[best])
        numbered[best] = True
        for u in adj[best]:
            if not numbered[u]:
                weight[u] += 1
    return order, labels


def _perfect_sequence(adj: Adjacency) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]] | None:
    """Cliques and separators (with multiplicity), or None if the graph is not chordal."""
    order, labels = maximum_cardinality_search(adj)
    position = {v: i for i, v in enumerate(order)}
    cliques: list[set[int]] = []
    separators: list[tuple[int, ...]] = []
    previous = -1
    for i, v in enumerate(order):
        earlier = [u for u in adj[v] if position[u] < i]
        if earlier:
            last = max(earlier, key=position.__getitem__)
            if not set(earlier).difference([last]) <= adj[last]:
                return None
        if i == 0 or labels[i] <= previous:
            if i > 0:
                separators.append(tuple(sorted(earlier)))
            cliques.append({v, *earlier})
        else:
            cliques[-1].add(v)
        previous = labels[i]
    return [tuple(sorted(c)) for c in cliques], separators


def is_chordal(graph: nx.Graph | Adjacency) -> bool:
    """True if every cycle of length four or more has a chord (MCS test).

    Examples
    --------
    >>> import networkx as nx
    >>> from sdckit.risk.graphical import is_chordal
    >>> is_chordal(nx.cycle_graph(4)), is_chordal(nx.path_graph(4))
    (False, True)
    """
    return _perfect_sequence(_adjacency(graph)) is not None


def perfect_sequence(
    graph: nx.Graph | Adjacency,
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """Maximal cliques in a perfect sequence and their separators, with multiplicity.

    ``separators[j-1] = cliques[j] & (cliques[0] | ... | cliques[j-1])`` (the running
    intersection property); an empty separator marks a new connected component.

    Raises
    ------
    ParameterError
        If the graph is not chordal.

    Examples
    --------
    >>> import networkx as nx
    >>> from sdckit.risk.graphical import perfect_sequence
    >>> perfect_sequence(nx.path_graph(4))
    ([(0, 1), (1, 2), (2, 3)], [(1,), (2,)])
    """
    result = _perfect_sequence(_adjacency(graph))
    if result is None:
        raise ParameterError(
            "The graph is not chordal, so it defines no decomposable model; add chords to its "
            "cycles of length four or more."
        )
    return result


def junction_tree(graph: nx.Graph | Adjacency) -> nx.Graph:
    """A junction tree (forest for a disconnected graph) of a chordal graph.

    Nodes are the maximal cliques (tuples of vertices); each edge carries its separator as the
    attribute ``"separator"``.  Each clique of the perfect sequence is joined to an earlier clique
    that contains its separator.

    Examples
    --------
    >>> import networkx as nx
    >>> from sdckit.risk.graphical import junction_tree
    >>> tree = junction_tree(nx.path_graph(3))
    >>> sorted(tree.edges(data="separator"))
    [((0, 1), (1, 2), (1,))]
    """
    cliques, separators = perfect_sequence(graph)
    tree = nx.Graph()
    tree.add_nodes_from(cliques)
    for j, sep in enumerate(separators, start=1):
        if not sep:
            continue
        parent = next(c for c in cliques[:j] if set(sep) <= set(c))
        tree.add_edge(parent, cliques[j], separator=sep)
    return tree


def graph_from_cliques(m: int, cliques: Iterable[Iterable[int]]) -> nx.Graph:
    """The graph on ``0 .. m-1`` whose edges join every pair inside each clique."""
    graph = nx.Graph()
    graph.add_nodes_from(range(m))
    for clique in cliques:
        graph.add_edges_from(itertools.combinations(sorted(clique), 2))
    return graph


def can_add_edge(graph: nx.Graph | Adjacency, u: int, v: int) -> bool:
    """True if ``u`` and ``v`` are not adjacent and the graph stays chordal with edge ``uv``."""
    adj = _adjacency(graph)
    if u == v or v in adj[u]:
        return False
    adj[u].add(v)
    adj[v].add(u)
    return _perfect_sequence(adj) is not None


def can_remove_edge(graph: nx.Graph | Adjacency, u: int, v: int) -> bool:
    """True if ``uv`` is an edge whose removal leaves the graph chordal.

    For a chordal graph this holds exactly when ``uv`` lies in one maximal clique.
    """
    adj = _adjacency(graph)
    if v not in adj[u]:
        return False
    adj[u].discard(v)
    adj[v].discard(u)
    return _perfect_sequence(adj) is not None


def random_chordal_graph(
    m: int, seed: np.random.Generator | int | None = None, *, density: float = 0.5
) -> nx.Graph:
    """A random chordal graph on ``0 .. m-1`` (Takemura & Endo's Algorithm 2).

    Vertices join in a random order; each new vertex is joined to a random subset of one random
    maximal clique of the graph so far (each member kept with probability ``density``).  Every
    chordal graph can come out, though not with equal probability.

    Examples
    --------
    >>> from sdckit.risk.graphical import is_chordal, random_chordal_graph
    >>> is_chordal(random_chordal_graph(8, seed=1))
    True
    """
    m = check_int(m, "m", minimum=1)
    density = check_real(density, "density", minimum=0.0, maximum=1.0)
    rng = check_seed(seed)
    order = rng.permutation(m)
    adj: Adjacency = [set() for _ in range(m)]
    cliques: list[set[int]] = [{int(order[0])}]
    for v in order[1:]:
        v = int(v)
        clique = sorted(cliques[int(rng.integers(len(cliques)))])
        keep = [u for u in clique if rng.random() < density]
        for u in keep:
            adj[u].add(v)
            adj[v].add(u)
        new = {v, *keep}
        if set(keep) == set(clique):
            cliques = [c for c in cliques if not c <= new]
        cliques.append(new)
    graph = nx.Graph()
    graph.add_nodes_from(range(m))
    graph.add_edges_from((u, w) for u in range(m) for w in adj[u] if u < w)
    return graph


def chordal_graphs(m: int) -> Iterator[frozenset[tuple[int, int]]]:
    """Every labelled chordal graph on ``0 .. m-1``, as edge sets (brute force; small ``m``)."""
    m = check_int(m, "m", minimum=1, maximum=6)
    pairs: Sequence[tuple[int, int]] = list(itertools.combinations(range(m), 2))
    for mask in range(1 << len(pairs)):
        edges = [p for b, p in enumerate(pairs) if mask >> b & 1]
        adj: Adjacency = [set() for _ in range(m)]
        for u, v in edges:
            adj[u].add(v)
            adj[v].add(u)
        if _perfect_sequence(adj) is not None:
            yield frozenset(edges)
