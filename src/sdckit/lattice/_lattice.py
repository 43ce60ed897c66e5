"""The generalisation lattice as index arithmetic: node ids, cones, successors.

A node (one level per key) has the id ``sum(level[j] * stride[j])``, strides of the mixed radix
``height[j] + 1`` with the last key fastest, so ids follow the lexicographic order of levels and
every successor (one key one level up) has a larger id than its node.  The set of nodes above a
node (its *up-cone*, every level >=) and below it (*down-cone*) are boxes of the lattice; their
ids are built by broadcasting, without a Python object per node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdckit.errors import ParameterError

__all__ = ["Lattice"]

# Per-node state is kept in arrays of the lattice's size: refuse lattices that would not fit.
MAX_NODES = 1 << 25


class Lattice:
    """Index arithmetic over the lattice of ``heights``."""

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = np.asarray(heights, dtype=np.int64)
        self.radix = self.heights + 1
        size = 1
        for r in self.radix.tolist():
            size *= r
        if size > MAX_NODES:
            raise ParameterError(
                f"the lattice has {size} nodes, more than the {MAX_NODES} a search can hold; "
                "use fewer keys or shorter hierarchies."
            )
        self.size = size
        strides = np.ones(len(self.radix), dtype=np.int64)
        for j in range(len(self.radix) - 2, -1, -1):
            strides[j] = strides[j + 1] * self.radix[j + 1]
        self.strides = strides
        self.top = self.id_of(self.heights)

    def id_of(self, levels: Sequence[int] | np.ndarray) -> int:
        """The id of a node."""
        return int(np.dot(np.asarray(levels, dtype=np.int64), self.strides))

    def levels_of(self, node: int) -> tuple[int, ...]:
        """The levels of node ``node``."""
        return tuple(int(v) for v in (node // self.strides) % self.radix)

    def levels_of_many(self, nodes: np.ndarray) -> np.ndarray:
        """``(len(nodes), n_keys)`` levels of many nodes."""
        return (np.asarray(nodes, dtype=np.int64)[:, None] // self.strides) % self.radix

    def _box(self, low: Sequence[int], high: Sequence[int]) -> np.ndarray:
        ids = np.zeros(1, dtype=np.int64)
        for j, (lo, hi) in enumerate(zip(low, high, strict=True)):
            ids = np.add.outer(ids, np.arange(lo, hi + 1, dtype=np.int64) * self.strides[j])
            ids = ids.reshape(-1)
        return ids

    def up_cone(self, levels: Sequence[int]) -> np.ndarray:
        """Ids of the node and of every more general node."""
        return self._box(levels, self.heights.tolist())

    def down_cone(self, levels: Sequence[int]) -> np.ndarray:
        """Ids of the node and of every more specific node."""
        return self._box([0] * len(self.heights), levels)

    def successors(self, node: int, levels: Sequence[int]) -> list[int]:
        """Ids of the nodes one level up in one key, in key order."""
        return [
            node + int(self.strides[j]) for j, lv in enumerate(levels) if lv < int(self.heights[j])
        ]

    def level_sums(self) -> np.ndarray:
        """The sum of the levels of every node, by id."""
        return self.sums([np.arange(r, dtype=np.int64) for r in self.radix.tolist()])

    def sums(self, per_key: Sequence[np.ndarray]) -> np.ndarray:
        """``sum(per_key[j][level[j]])`` of every node, by id."""
        total = np.zeros(1, dtype=np.asarray(per_key[0]).dtype)
        for values in per_key:
            total = np.add.outer(total, values).reshape(-1)
        return total

    def minimal(self, mask: np.ndarray) -> np.ndarray:
        """Ids of the nodes of ``mask`` none of whose direct predecessors is in ``mask``."""
        ids = np.flatnonzero(mask)
        keep = np.ones(ids.size, dtype=bool)
        for j in range(len(self.heights)):
            has_pred = (ids // self.strides[j]) % self.radix[j] > 0
            pred = ids[has_pred] - self.strides[j]
            keep[np.flatnonzero(has_pred)[mask[pred]]] = False
        return ids[keep]
