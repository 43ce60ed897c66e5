"""Compiled kernels (numba), imported only by the code paths that need them.

The kernels are compiled on their first call and cached on disk (``cache=True``), so a later
process only loads them.  :func:`sdckit._codes.factorize` uses :func:`hash_factorize` only once
numba is loaded anyway (its import and the loading of the cache cost about a second).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["hash_factorize"]


@numba.njit(cache=True, nogil=True)
def _insert_all(
    slot_key: np.ndarray, slot_id: np.ndarray, keys: np.ndarray, bits: int
) -> None:  # pragma: no cover - jit
    """Re-insert known (key, id) pairs into an empty table of 2**bits slots."""
    mask = (1 << bits) - 1
    multiplier = np.uint64(11400714819323198485)
    shift = np.uint64(64 - bits)
    for gid in range(keys.shape[0]):
        v = keys[gid]
        h = np.int64((np.uint64(v) * multiplier) >> shift)
        while slot_id[h] >= 0:
            h = (h + 1) & mask
        slot_key[h] = v
        slot_id[h] = gid


@numba.njit(cache=True, nogil=True)
def hash_factorize(values: np.ndarray) -> tuple[np.ndarray, int]:  # pragma: no cover - jit
    """Group ids in order of first appearance, by open addressing (one pass, O(n)).

    The table starts small and doubles when half full, so its size follows the number of
    groups, not of records (fewer cache misses when groups are far fewer than records).
    """
    n = values.shape[0]
    bits = 12
    size = 1 << bits
    slot_key = np.empty(size, dtype=np.int64)
    slot_id = np.full(size, -1, dtype=np.int64)
    keys = np.empty(max(n, 1), dtype=np.int64)  # key of each group id
    out = np.empty(n, dtype=np.int64)
    next_id = 0
    multiplier = np.uint64(11400714819323198485)
    for i in range(n):
        if 2 * (next_id + 1) > size:
            bits += 1
            size = 1 << bits
            slot_key = np.empty(size, dtype=np.int64)
            slot_id = np.full(size, -1, dtype=np.int64)
            _insert_all(slot_key, slot_id, keys[:next_id], bits)
        mask = size - 1
        shift = np.uint64(64 - bits)
        v = values[i]
        h = np.int64((np.uint64(v) * multiplier) >> shift)
        while True:
            sid = slot_id[h]
            if sid < 0:
                slot_key[h] = v
                slot_id[h] = next_id
                keys[next_id] = v
                out[i] = next_id
                next_id += 1
                break
            if slot_key[h] == v:
                out[i] = sid
                break
            h = (h + 1) & mask
    return out, next_id
