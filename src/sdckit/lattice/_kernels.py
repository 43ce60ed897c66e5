"""The compiled roll-up kernel: a node's classes from a more specific node's classes.

One pass over the parent's classes: each class's level-0 representative is generalised to the
node's levels, packed into one int64 key and grouped in an open-addressing hash table.  The
kernel is compiled on its first call and cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["rollup_groups"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def rollup_groups(
    rep: np.ndarray,
    flat_maps: np.ndarray,
    offsets: np.ndarray,
    widths: np.ndarray,
    parent_sizes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Group the parent classes by their generalised codes.

    ``flat_maps[offsets[j] + c]`` is the node's code of level-0 code ``c`` of key ``j``; the
    codes of key ``j`` are below ``widths[j]`` and the product of the widths fits an int64.
    Returns each parent class's group (in order of first appearance), each group's packed
    key, its first parent class, its size and its codes.
    """
    n, m = rep.shape
    bits = 1
    while (1 << bits) < 2 * n + 2:
        bits += 1
    cap = 1 << bits
    mask = cap - 1
    shift = np.uint64(64 - bits)
    slot_key = np.empty(cap, dtype=np.int64)
    slot_id = np.full(cap, -1, dtype=np.int64)
    ids = np.empty(n, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    codes = np.empty((n, m), dtype=np.int32)
    row = np.empty(m, dtype=np.int32)
    n_groups = 0
    for i in range(n):
        key = np.int64(0)
        for j in range(m):
            row[j] = flat_maps[offsets[j] + rep[i, j]]
            key = key * widths[j] + row[j]
        slot = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while True:
            found = slot_id[slot]
            if found < 0:
                slot_id[slot] = n_groups
                slot_key[slot] = key
                keys[n_groups] = key
                first[n_groups] = i
                codes[n_groups] = row
                found = n_groups
                n_groups += 1
                break
            if slot_key[slot] == key:
                break
            slot = (slot + 1) & mask
        ids[i] = found
        sizes[found] += parent_sizes[i]
    return ids, keys[:n_groups], first[:n_groups], sizes[:n_groups], codes[:n_groups]
