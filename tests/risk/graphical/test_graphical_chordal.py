"""Chordal graph machinery: MCS, perfect sequences, junction trees, edge moves."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.risk.graphical import (
    can_add_edge,
    can_remove_edge,
    chordal_graphs,
    graph_from_cliques,
    is_chordal,
    junction_tree,
    perfect_sequence,
    random_chordal_graph,
)


@pytest.mark.parametrize(("m", "count"), [(1, 1), (2, 2), (3, 8), (4, 61), (5, 822)])
def test_number_of_labelled_chordal_graphs(m: int, count: int) -> None:
    assert sum(1 for _ in chordal_graphs(m)) == count


def _graph(m: int, edges: object) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(m))
    g.add_edges_from(edges)  # type: ignore[arg-type]
    return g


def test_chordality_and_cliques_agree_with_networkx_on_all_graphs_of_five_vertices() -> None:
    pairs = list(itertools.combinations(range(5), 2))
    for mask in range(1 << len(pairs)):
        g = _graph(5, [p for b, p in enumerate(pairs) if mask >> b & 1])
        assert is_chordal(g) == nx.is_chordal(g)
        if not is_chordal(g):
            continue
        cliques, separators = perfect_sequence(g)
        assert {frozenset(c) for c in cliques} == set(nx.chordal_graph_cliques(g))
        assert len(separators) == len(cliques) - 1
        for j in range(1, len(cliques)):  # running intersection property
            earlier = set().union(*cliques[:j])
            assert set(separators[j - 1]) == set(cliques[j]) & earlier
            assert any(set(separators[j - 1]) <= set(c) for c in cliques[:j])


def test_path_and_cycle() -> None:
    assert perfect_sequence(nx.path_graph(4)) == ([(0, 1), (1, 2), (2, 3)], [(1,), (2,)])
    with pytest.raises(ParameterError, match="not chordal"):
        perfect_sequence(nx.cycle_graph(4))
    # two components: an empty separator
    assert perfect_sequence(_graph(3, [(0, 1)])) == ([(0, 1), (2,)], [()])


def test_edge_moves_keep_chordality_or_are_refused() -> None:
    path = nx.path_graph(4)
    assert not can_add_edge(path, 0, 3)  # would close a chordless 4-cycle
    assert can_add_edge(path, 0, 2)
    assert not can_add_edge(path, 0, 1)  # already an edge
    chorded = nx.cycle_graph(4)
    chorded.add_edge(0, 2)
    assert not can_remove_edge(chorded, 0, 2)  # the chord lies in two cliques
    assert can_remove_edge(chorded, 0, 1)  # in one clique only
    assert not can_remove_edge(chorded, 1, 3)  # not an edge


def test_edge_moves_match_brute_force_on_four_vertices() -> None:
    for edges in chordal_graphs(4):
        g = _graph(4, edges)
        for u, v in itertools.combinations(range(4), 2):
            h = g.copy()
            if h.has_edge(u, v):
                h.remove_edge(u, v)
                in_cliques = sum(1 for c in nx.chordal_graph_cliques(g) if {u, v} <= c)
                assert can_remove_edge(g, u, v) == nx.is_chordal(h) == (in_cliques == 1)
            else:
                h.add_edge(u, v)
                assert can_add_edge(g, u, v) == nx.is_chordal(h)


@given(st.integers(1, 12), st.integers(0, 10_000), st.floats(0.0, 1.0))
def test_random_chordal_graphs_are_chordal_with_a_junction_tree(
    m: int, seed: int, density: float
) -> None:
    g = random_chordal_graph(m, seed, density=density)
    assert sorted(g.nodes) == list(range(m))
    assert nx.is_chordal(g)
    tree = junction_tree(g)
    assert nx.is_forest(tree)
    for v in range(m):  # the cliques holding v form a subtree
        holding = [c for c in tree.nodes if v in c]
        assert nx.is_connected(tree.subgraph(holding))
    for a, b, sep in tree.edges(data="separator"):
        assert set(sep) == set(a) & set(b)
    assert nx.utils.graphs_equal(graph_from_cliques(m, tree.nodes), g)


def test_random_chordal_graph_is_reproducible() -> None:
    a = random_chordal_graph(9, 5)
    b = random_chordal_graph(9, 5)
    assert set(a.edges) == set(b.edges)
