"""Node classes rolled up from a more specific node's classes (ARX's snapshots).

The records are grouped once, at the bottom node (every key at level 0).  The classes of any
other node are then built by grouping *classes*, not records: a node's classes are unions of
the classes of every more specific node, so the classes of a cached, more specific node (its
*snapshot*: the class of each bottom class, the class sizes and a level-0 representative per
class) are generalised and regrouped.  Only the final per-record class index touches every
record, and it is a single gather through the bottom classes.

Classes are numbered in lexicographic order of their codes (key 0 first), whatever node they
were rolled up from, so the same node always gives the same numbering.

This module works on arrays only (it is used by :mod:`sdckit.lattice._data`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sdckit._codes import factorize

__all__ = ["Snapshots"]

# Snapshots kept per data set: at most this many, holding at most this many array elements.
_MAX_SNAPSHOTS = 256
_MAX_ELEMENTS = 1 << 24
_PACK_LIMIT = 1 << 62
_EMPTY = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class _Snapshot:
    levels: tuple[int, ...]
    of_bottom: np.ndarray  # int64, per bottom class: its class at this node
    sizes: np.ndarray  # int64, records per class
    rep: np.ndarray  # (n_classes, n_keys) int32: a level-0 code tuple of each class
    codes: np.ndarray  # (n_classes, n_keys) int32: the class's codes at this node

    @property
    def n_elements(self) -> int:
        return int(self.of_bottom.size + self.sizes.size + 2 * self.rep.size)


def _group(codes: np.ndarray, widths: Sequence[int]) -> tuple[np.ndarray, int]:
    """Canonical group ids of the rows of ``codes``: in lexicographic order of the rows."""
    n_rows = codes.shape[0]
    size = 1
    for w in widths:
        size *= max(int(w), 1)
    if n_rows == 0:
        return np.zeros(0, dtype=np.int64), 0
    if size >= _PACK_LIMIT:
        # too many code combinations to pack into an int64: sort the rows themselves
        _, inverse = np.unique(codes, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64)
        return inverse, int(inverse.max()) + 1
    packed = np.zeros(n_rows, dtype=np.int64)
    for j, w in enumerate(widths):
        packed *= max(int(w), 1)
        packed += codes[:, j]
    ids, n_groups = factorize(packed, size=size)
    if size > min(1 << 24, 4 * n_rows + 65_536):
        # the hash path numbers groups by first appearance: renumber them by their key
        keys = np.empty(n_groups, dtype=np.int64)
        keys[ids] = packed
        rank = np.empty(n_groups, dtype=np.int64)
        rank[np.argsort(keys, kind="stable")] = np.arange(n_groups, dtype=np.int64)
        ids = rank[ids]
    return ids, n_groups


class Snapshots:
    """The bottom node's classes and a bounded cache of rolled-up nodes, for one data set."""

    def __init__(self, base: np.ndarray, maps: Sequence[np.ndarray]) -> None:
        self.maps = tuple(maps)
        n_keys = len(self.maps)
        widths = [m.shape[1] for m in self.maps]
        bottom_of, n_bottom = _group(base, widths)
        # each record's bottom class: the one per-record array a node's index is gathered from
        self.record_class = bottom_of
        sizes = np.bincount(bottom_of, minlength=n_bottom).astype(np.int64)
        rep = np.empty((n_bottom, n_keys), dtype=np.int32)
        rep[bottom_of] = base
        self.bottom = _Snapshot(
            levels=(0,) * n_keys,
            of_bottom=np.arange(n_bottom, dtype=np.int64),
            sizes=sizes,
            rep=rep,
            codes=rep,
        )
        # a ring of cached nodes: their levels and class counts side by side, to choose a
        # parent with one vectorised comparison
        self.n_elements = 0
        self._slots: list[_Snapshot | None] = [None] * _MAX_SNAPSHOTS
        self._index: dict[tuple[int, ...], int] = {}
        self._levels = np.zeros((_MAX_SNAPSHOTS, n_keys), dtype=np.int64)
        self._counts = np.full(_MAX_SNAPSHOTS, _EMPTY, dtype=np.int64)
        self._next = 0
        self._offsets = np.cumsum([0] + [m.shape[1] for m in self.maps[:-1]]).astype(np.int64)

    def _parent(self, levels: tuple[int, ...]) -> _Snapshot:
        """The cached node below ``levels`` (every level <=) with the fewest classes."""
        if not self._index:
            return self.bottom
        below = (self._levels <= np.asarray(levels)).all(axis=1) & (self._counts != _EMPTY)
        if not below.any():
            return self.bottom
        slot = int(np.argmin(np.where(below, self._counts, _EMPTY)))
        snap = self._slots[slot]
        return self.bottom if snap is None else snap

    def snapshot(self, levels: tuple[int, ...]) -> _Snapshot:
        """The classes of node ``levels``, rolled up from the closest cached node."""
        if not any(levels):
            return self.bottom
        slot = self._index.get(levels)
        if slot is not None:
            return self._slots[slot]  # type: ignore[return-value]
        parent = self._parent(levels)
        level_maps = [self.maps[j][lv] for j, lv in enumerate(levels)]
        widths = np.array([int(m.max()) + 1 if m.size else 1 for m in level_maps], np.int64)
        if float(np.prod(widths.astype(np.float64))) < _PACK_LIMIT:
            from sdckit.lattice._kernels import rollup_groups

            ids, keys, first, sizes, codes = rollup_groups(
                parent.rep, np.concatenate(level_maps), self._offsets, widths, parent.sizes
            )
            # number the classes by their key: the same numbering from any parent
            order = np.argsort(keys, kind="stable")
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size, dtype=np.int64)
            ids = rank[ids]
            sizes = sizes[order]
            rep = parent.rep[first[order]]
            codes = codes[order]
        else:
            codes = np.empty(parent.rep.shape, dtype=np.int64)
            for j, level_map in enumerate(level_maps):
                codes[:, j] = level_map[parent.rep[:, j]]
            ids, n_classes = _group(codes, widths.tolist())
            sizes = np.bincount(ids, weights=parent.sizes, minlength=n_classes).astype(np.int64)
            rep = np.empty((n_classes, parent.rep.shape[1]), dtype=np.int32)
            rep[ids] = parent.rep
            codes = np.empty(rep.shape, dtype=np.int32)
            for j, level_map in enumerate(level_maps):
                codes[:, j] = level_map[rep[:, j]]
        snap = _Snapshot(
            levels=levels, of_bottom=ids[parent.of_bottom], sizes=sizes, rep=rep, codes=codes
        )
        self._store(snap)
        return snap

    def _store(self, snap: _Snapshot) -> None:
        """Keep ``snap`` in the next slot of the ring; drop the oldest beyond the budget."""
        slot = self._next
        self._evict(slot)
        while self.n_elements + snap.n_elements > _MAX_ELEMENTS and self._index:
            slot = (slot + 1) % _MAX_SNAPSHOTS
            self._evict(slot)
        self._slots[self._next] = snap
        self._index[snap.levels] = self._next
        self._levels[self._next] = snap.levels
        self._counts[self._next] = snap.sizes.size
        self.n_elements += snap.n_elements
        self._next = (self._next + 1) % _MAX_SNAPSHOTS

    def _evict(self, slot: int) -> None:
        old = self._slots[slot]
        if old is not None:
            del self._index[old.levels]
            self.n_elements -= old.n_elements
            self._slots[slot] = None
            self._counts[slot] = _EMPTY

    def classes(
        self, levels: tuple[int, ...]
    ) -> tuple[Callable[[], np.ndarray], np.ndarray, np.ndarray]:
        """A function giving each record's class, the class sizes and the class codes at node
        ``levels`` (the per-record index is the only part that touches every record: it is
        gathered when asked for)."""
        snap = self.snapshot(levels)
        record_class = self.record_class
        return (lambda: snap.of_bottom[record_class]), snap.sizes, snap.codes
