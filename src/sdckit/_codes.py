"""Key variables as dense integer codes, and the one frequency kernel every measure shares.

Each key column is dictionary-encoded once into integer codes ``0 .. L-1`` (levels sorted), with
``-1`` for a missing value (null, or NaN in a float column).  Group ids for any subset of keys
come from a mixed-radix combination of the codes, factorised with a counting sort when the code
space is small and with a hash group-by otherwise: O(n) in both cases, no Python loop over
records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "KeyCodes",
    "combine_codes",
    "encode_column",
    "encode_keys",
    "factorize",
    "first_index",
    "group_ids",
    "group_sizes",
]

# Code spaces up to this size are factorised with np.bincount instead of hashing.
_DIRECT_LIMIT = 1 << 24


@dataclass(frozen=True)
class KeyCodes:
    """Key variables as an ``(n, m)`` int32 matrix of codes (missing = -1) and their levels.

    Attributes
    ----------
    names : tuple of str
        The key variables, in the order of the code columns.
    codes : numpy.ndarray
        ``codes[i, j]`` is the level number of record ``i`` on key ``j``, or -1 if missing.
    levels : tuple of polars.Series
        ``levels[j][c]`` is the value of level ``c`` of key ``j`` (sorted, no missing).
    """

    names: tuple[str, ...]
    codes: np.ndarray
    levels: tuple[pl.Series, ...]

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of non-missing levels of each key."""
        return np.array([len(lv) for lv in self.levels], dtype=np.int64)

    @property
    def missing(self) -> np.ndarray:
        """Boolean ``(n, m)`` matrix: True where a key value is missing."""
        return self.codes < 0

    def column(self, name: str) -> np.ndarray:
        """The codes of one key variable."""
        return self.codes[:, self.names.index(name)]


def encode_column(series: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """Encode one column as int32 codes (missing = -1) and its sorted levels."""
    s = series
    if s.dtype.is_float():
        s = s.fill_nan(None)  # NaN is missing; -0.0 and 0.0 are one level
        s = pl.select(pl.when(s == 0).then(pl.lit(0.0, s.dtype)).otherwise(s)).to_series()
        s = s.alias(series.name)
    if s.dtype == pl.Categorical or s.dtype == pl.Enum:
        s = s.cast(pl.String)
    n = len(s)
    if n and s.null_count() == n:
        return np.full(n, -1, dtype=np.int32), s.drop_nulls()
    if s.dtype.is_integer() and n > 0:
        lo, hi = s.min(), s.max()
        if lo is not None and hi is not None and int(hi) - int(lo) <= max(4 * n, 1 << 16):
            from sdckit._kernels import dense_integer_codes

            mask = s.is_null().to_numpy() if s.null_count() else np.zeros(0, dtype=bool)
            values = s.fill_null(lo).to_numpy(allow_copy=True)  # stays integer: exact
            codes, present = dense_integer_codes(values, mask, int(lo), int(hi) - int(lo) + 1)
            levels = pl.Series(s.name, np.flatnonzero(present) + int(lo)).cast(s.dtype)
            return codes, levels
    arr = s.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    encoded = pc.dictionary_encode(arr)
    dictionary = pl.Series(s.name, encoded.dictionary)
    raw = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(dictionary.to_numpy(), kind="stable") if len(dictionary) else np.array([])
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    if encoded.null_count:
        valid = pc.is_valid(encoded.indices).to_numpy(zero_copy_only=False)
        safe = np.where(valid, raw, 0).astype(np.int64)
        codes = np.where(valid, rank[safe] if len(rank) else -1, -1).astype(np.int32)
    else:
        codes = rank[raw.astype(np.int64)]
    levels = dictionary.gather(pl.Series(order.astype(np.int64))) if len(order) else dictionary
    return codes, levels


def encode_keys(frame: pl.DataFrame, names: Sequence[str]) -> KeyCodes:
    """Encode the key variables ``names`` of ``frame`` (see :class:`KeyCodes`)."""
    n = frame.height
    codes = np.empty((n, len(names)), dtype=np.int32)
    levels = []
    for j, name in enumerate(names):
        col_codes, col_levels = encode_column(frame.get_column(name))
        codes[:, j] = col_codes
        levels.append(col_levels)
    return KeyCodes(tuple(names), codes, tuple(levels))


def factorize(values: np.ndarray, size: int | None = None) -> tuple[np.ndarray, int]:
    """Dense group ids ``0..G-1`` for an int64 vector.

    ``size`` is an exclusive upper bound on the values when known (values must be >= 0); small
    ranges are factorised by counting (ids follow the values), larger ones with a compiled hash
    table (ids follow the first appearance).  Both are O(n).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if size is not None and size <= min(_DIRECT_LIMIT, 4 * n + 65_536):
        present = np.zeros(size, dtype=bool)
        present[values] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[values], int(remap[-1] + 1)
    from sdckit._kernels import hash_factorize  # numba is imported only when needed

    ids, n_ids = hash_factorize(np.ascontiguousarray(values, dtype=np.int64))
    return ids, int(n_ids)


def combine_codes(
    codes: np.ndarray, columns: Sequence[int] | None = None
) -> tuple[np.ndarray, int]:
    """Combine code columns into one int64 key per record (missing = its own value).

    Returns the combined key and an exclusive upper bound of its values.  When the mixed-radix
    product would overflow, the partial key is factorised first, so the result is always exact.
    """
    if columns is None:
        columns = range(codes.shape[1])
    columns = list(columns)
    n = codes.shape[0]
    if not columns:
        return np.zeros(n, dtype=np.int64), 1
    from sdckit._kernels import column_ranges, combine_columns

    # radix of each column: its number of levels, plus one when it has missing values
    largest, has_missing = column_ranges(codes, np.asarray(columns, dtype=np.int64))
    shifts = [1 if h else 0 for h in has_missing]
    radices = [max(int(top) + 1 + s, 1) for top, s in zip(largest, shifts, strict=True)]
    bound = int(np.prod(np.array(radices, dtype=object)))
    if bound < (1 << 62):
        key = combine_columns(
            codes,
            np.asarray(columns, dtype=np.int64),
            np.asarray(radices, dtype=np.int64),
            np.asarray(shifts, dtype=np.int64),
        )
        return key, bound
    key = np.zeros(n, dtype=np.int64)
    bound = 1
    for j, radix, shift in zip(columns, radices, shifts, strict=True):
        col = codes[:, j].astype(np.int64) + shift
        if bound * radix >= (1 << 62):
            key, bound = factorize(key, bound)
        key = key * radix + col
        bound *= radix
    return key, bound


def group_ids(codes: np.ndarray, columns: Sequence[int] | None = None) -> tuple[np.ndarray, int]:
    """Dense group ids of the records over ``columns`` of ``codes`` (missing is a value)."""
    key, bound = combine_codes(codes, columns)
    return factorize(key, bound)


def first_index(ids: np.ndarray, n_groups: int) -> np.ndarray:
    """Position of the first record of each group (for group-level values)."""
    first = np.empty(n_groups, dtype=np.int64)
    positions = np.arange(len(ids), dtype=np.int64)
    first[ids[::-1]] = positions[::-1]  # the last write wins: the first occurrence
    return first


def group_sizes(
    ids: np.ndarray, n_groups: int, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-group record counts and, with weights, per-group weight sums."""
    counts = np.bincount(ids, minlength=n_groups).astype(np.float64)
    sums = None if weights is None else np.bincount(ids, weights=weights, minlength=n_groups)
    return counts, sums
