"""Compiled kernels (numba), imported only by the code paths that need them."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["hash_factorize"]


@numba.njit(cache=True, nogil=True)
def hash_factorize(values: np.ndarray) -> tuple[np.ndarray, int]:  # pragma: no cover - jit
    """Group ids in order of first appearance, by open addressing (one pass, O(n))."""
    n = values.shape[0]
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    size = 1 << bits
    mask = size - 1
    slot_key = np.empty(size, dtype=np.int64)
    slot_id = np.full(size, -1, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    next_id = 0
    multiplier = np.uint64(11400714819323198485)
    shift = np.uint64(64 - bits)
    for i in range(n):
        v = values[i]
        h = np.int64((np.uint64(v) * multiplier) >> shift)
        while True:
            sid = slot_id[h]
            if sid < 0:
                slot_key[h] = v
                slot_id[h] = next_id
                out[i] = next_id
                next_id += 1
                break
            if slot_key[h] == v:
                out[i] = sid
                break
            h = (h + 1) & mask
    return out, next_id
