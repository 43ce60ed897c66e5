"""Compiled kernels (numba), imported only by the code paths that need them."""

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


@numba.njit(cache=True, nogil=True)
def column_ranges(codes: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest code and whether a missing code (-1) occurs, per chosen column (one pass)."""
    n = codes.shape[0]
    m = columns.shape[0]
    largest = np.full(m, -1, dtype=np.int64)
    missing = np.zeros(m, dtype=np.bool_)
    for i in range(n):
        for t in range(m):
            c = np.int64(codes[i, columns[t]])
            if c > largest[t]:
                largest[t] = c
            elif c < 0:
                missing[t] = True
    return largest, missing


@numba.njit(cache=True, nogil=True)
def dense_integer_codes(
    values: np.ndarray, missing: np.ndarray, lo: int, span: int
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """Dense codes (sorted levels, -1 for missing) of integers in ``[lo, lo + span)``."""
    n = values.shape[0]
    present = np.zeros(span, dtype=np.bool_)
    has_missing = missing.shape[0] == n
    for i in range(n):
        if has_missing and missing[i]:
            continue
        present[np.int64(values[i]) - lo] = True
    remap = np.empty(span, dtype=np.int32)
    count = 0
    for j in range(span):
        if present[j]:
            remap[j] = count
            count += 1
    out = np.empty(n, dtype=np.int32)
    for i in range(n):
        if has_missing and missing[i]:
            out[i] = -1
        else:
            out[i] = remap[np.int64(values[i]) - lo]
    return out, present


@numba.njit(cache=True, nogil=True)
def combine_columns(
    codes: np.ndarray, columns: np.ndarray, radices: np.ndarray, shift: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """Mixed-radix key of the chosen code columns, one pass over the rows."""
    n = codes.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = np.int64(0)
        for t in range(columns.shape[0]):
            key = key * radices[t] + (np.int64(codes[i, columns[t]]) + shift[t])
        out[i] = key
    return out
