"""A dimension of a statistical table: a tree of codes with a total at its root.

A :class:`Hierarchy` lists its nodes in depth-first order (the total first), with the parent of
each node.  It can be given as a flat list of codes, as a mapping ``parent -> children``, or as
codes whose prefixes of given lengths define the levels (industry codes such as ``"C"`` >
``"C10"`` > ``"C101"``), or from a :class:`~sdckit.hierarchies.GeneralisationHierarchy` (its
labels of each level under those of the level above).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sdckit.errors import DataError, ParameterError
from sdckit.hierarchies import GeneralisationHierarchy

__all__ = ["Hierarchy"]


@dataclass(frozen=True, repr=False)
class Hierarchy:
    """A tree of codes with a total at its root (node 0).

    Attributes
    ----------
    codes : tuple of str
        The codes in depth-first order; ``codes[0]`` is the total.
    parent : numpy.ndarray
        ``parent[i]`` is the node number of the parent of node ``i`` (-1 for the total).

    Examples
    --------
    >>> h = Hierarchy.from_dict({"Total": ["N", "S"], "N": ["N1", "N2"]})
    >>> h.codes
    ('Total', 'N', 'N1', 'N2', 'S')
    >>> [h.codes[i] for i in h.leaves]
    ['N1', 'N2', 'S']
    """

    codes: tuple[str, ...]
    parent: np.ndarray

    def __post_init__(self) -> None:
        if len(set(self.codes)) != len(self.codes):
            raise DataError("A hierarchy lists a code twice; every code must be unique.")
        if len(self.codes) < 2:
            raise DataError("A hierarchy needs a total and at least one code below it.")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def flat(cls, codes: Iterable[object], total: str = "Total") -> Hierarchy:
        """A one-level hierarchy: ``total`` over ``codes``."""
        items = [str(c) for c in codes]
        return cls.from_dict({str(total): items})

    @classmethod
    def from_dict(cls, tree: Mapping[object, Sequence[object]]) -> Hierarchy:
        """A hierarchy from ``parent -> children``; the root is the parent no one lists."""
        children = {str(p): [str(c) for c in kids] for p, kids in tree.items()}
        listed = {c for kids in children.values() for c in kids}
        roots = [p for p in children if p not in listed]
        if len(roots) != 1:
            raise DataError(
                "A hierarchy given as parent -> children needs exactly one root (a parent that "
                f"is nobody's child); found {len(roots)}."
            )
        codes: list[str] = []
        parent: list[int] = []
        stack: list[tuple[str, int]] = [(roots[0], -1)]
        seen: set[str] = set()
        while stack:
            code, par = stack.pop()
            if code in seen:
                raise DataError("A hierarchy lists a code under two parents (or in a cycle).")
            seen.add(code)
            codes.append(code)
            parent.append(par)
            me = len(codes) - 1
            for kid in reversed(children.get(code, [])):
                stack.append((kid, me))
        return cls(tuple(codes), np.asarray(parent, dtype=np.int64))

    @classmethod
    def from_code_lengths(
        cls, codes: Iterable[object], lengths: Sequence[int], total: str = "Total"
    ) -> Hierarchy:
        """A hierarchy from the leaf ``codes``, whose prefixes of ``lengths`` give the levels.

        With ``lengths=[1, 3]`` the code ``"C101"`` lies under ``"C10"`` (its first three
        characters), which lies under ``"C"`` (its first character), under the total.
        """
        lens = [int(v) for v in lengths]
        if not lens or any(b <= a for a, b in itertools.pairwise(lens)) or lens[0] < 1:
            raise ParameterError("The 'lengths' parameter must be increasing positive integers.")
        tree: dict[str, list[str]] = {str(total): []}
        for code in sorted({str(c) for c in codes}):
            chain = [code[:n] for n in lens if n < len(code)] + [code]
            parent = str(total)
            for node in chain:
                kids = tree.setdefault(parent, [])
                if node not in kids:
                    kids.append(node)
                tree.setdefault(node, [])
                parent = node
        return cls.from_dict({p: k for p, k in tree.items() if k})

    @classmethod
    def from_generalisation(
        cls, hierarchy: GeneralisationHierarchy, total: str = "Total"
    ) -> Hierarchy:
        """The tree of a generalisation hierarchy: each label under its label one level up.

        The original values are the leaves.  A label that stays the same from one level to
        the next is one node; when the top level has one label it is the total, otherwise
        ``total`` is added above the top level's labels.

        Raises
        ------
        DataError
            A label names two different groups (at two levels): rename one of them.

        Examples
        --------
        >>> from sdckit.hierarchies import GeneralisationHierarchy
        >>> g = GeneralisationHierarchy.from_prefixes(["011", "012", "021"], keep=[2, 1])
        >>> h = Hierarchy.from_generalisation(g)
        >>> h.codes
        ('*', '0**', '01*', '011', '012', '02*', '021')
        """
        if not isinstance(hierarchy, GeneralisationHierarchy):
            raise ParameterError(
                "Hierarchy.from_generalisation takes a GeneralisationHierarchy "
                "(sdckit.hierarchies)."
            )
        rows = hierarchy.table()
        top = {row[-1] for row in rows}
        root = next(iter(top)) if len(top) == 1 else str(total)
        tree: dict[str, list[str]] = {root: []}
        parent_of: dict[str, str] = {}
        for row in rows:
            chain = [row[0]]
            for label in row[1:]:
                if label != chain[-1]:  # a label kept from the level below is the same node
                    chain.append(label)
            if chain[-1] != root:
                chain.append(root)
            for child, parent in itertools.pairwise(chain):
                known = parent_of.setdefault(child, parent)
                if known != parent:
                    raise DataError(
                        "A label of the generalisation hierarchy names two different groups "
                        "(it appears under two labels); give each group its own label."
                    )
                kids = tree.setdefault(parent, [])
                if child not in kids:
                    kids.append(child)
        return cls.from_dict({p: k for p, k in tree.items() if k})

    @classmethod
    def coerce(cls, spec: object, values: Iterable[object] | None = None) -> Hierarchy:
        """Turn a dimension spec (Hierarchy, GeneralisationHierarchy, dict, list of codes, or
        None) into a Hierarchy."""
        if isinstance(spec, Hierarchy):
            return spec
        if isinstance(spec, GeneralisationHierarchy):
            return cls.from_generalisation(spec)
        if isinstance(spec, Mapping):
            return cls.from_dict(spec)
        if spec is None:
            if values is None:
                raise ParameterError("A dimension without a hierarchy needs its codes.")
            return cls.flat(values)
        if isinstance(spec, str):
            raise ParameterError(
                "A hierarchy must be a Hierarchy, a dict parent -> children or a list of codes."
            )
        return cls.flat(spec)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ structure
    @property
    def total(self) -> str:
        """The code of the total (root)."""
        return self.codes[0]

    @property
    def size(self) -> int:
        """Number of nodes (codes), the total included."""
        return len(self.codes)

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """``children[i]``: node numbers of the children of node ``i``."""
        kids: list[list[int]] = [[] for _ in self.codes]
        for i, p in enumerate(self.parent.tolist()):
            if p >= 0:
                kids[p].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def internal(self) -> np.ndarray:
        """Node numbers of the nodes with children (the totals and sub-totals)."""
        return np.asarray([i for i, k in enumerate(self.children) if k], dtype=np.int64)

    @cached_property
    def leaves(self) -> np.ndarray:
        """Node numbers of the leaves."""
        return np.asarray([i for i, k in enumerate(self.children) if not k], dtype=np.int64)

    @cached_property
    def depth(self) -> np.ndarray:
        """Depth of each node (the total has depth 0)."""
        depth = np.zeros(self.size, dtype=np.int64)
        for i in range(1, self.size):  # parents come before children in depth-first order
            depth[i] = depth[self.parent[i]] + 1
        return depth

    @cached_property
    def index(self) -> dict[str, int]:
        """Node number of each code."""
        return {c: i for i, c in enumerate(self.codes)}

    @cached_property
    def ancestor_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(node, ancestor)`` pairs, each node paired with itself and every ancestor."""
        nodes: list[int] = []
        ancs: list[int] = []
        for i in range(self.size):
            a = i
            while a >= 0:
                nodes.append(i)
                ancs.append(a)
                a = int(self.parent[a])
        return np.asarray(nodes, dtype=np.int64), np.asarray(ancs, dtype=np.int64)

    def __repr__(self) -> str:
        return f"Hierarchy(total={self.total!r}, codes={self.size}, leaves={len(self.leaves)})"
