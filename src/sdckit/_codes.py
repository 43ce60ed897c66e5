"""Key variables as dense integer codes, and the one frequency kernel every measure shares.

Each key column is dictionary-encoded once into integer codes ``0 .. L-1`` (levels sorted), with
``-1`` for a missing value (null, or NaN in a float column).  Group ids for any subset of keys
come from a mixed-radix combination of the codes, factorised with a counting sort when the code
space is small and with a hash group-by otherwise: O(n) in both cases, no Python loop over
records.

Only numpy and polars are needed: the encoding, the combination and the hash factorisation run
in polars and numpy, so that a command that counts frequencies does not pay for importing and
loading compiled kernels.  Once numba is loaded anyway (SUDA2, the masking methods), the
factorisation uses its compiled hash table (:mod:`sdckit._kernels`), which gives the same ids.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property

import numpy as np
import polars as pl

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

# Below this many values the hash factorisation is done with numpy (no per-call overhead).
_SMALL = 1 << 15

# From this many records on, the key columns are encoded on two threads.
_PARALLEL = 1 << 17

# Long vectors are converted to numpy's index type a chunk of this many values at a time.
_CHUNK = 1 << 18


class KeyCodes:
    """Key variables as an ``(n, m)`` int32 matrix of codes (missing = -1) and their levels.

    The codes are kept one contiguous array per key variable (:meth:`column`); the matrix
    :attr:`codes` is assembled from them the first time it is asked for.

    Attributes
    ----------
    names : tuple of str
        The key variables, in the order of the code columns.
    codes : numpy.ndarray
        ``codes[i, j]`` is the level number of record ``i`` on key ``j``, or -1 if missing.
    levels : tuple of polars.Series
        ``levels[j][c]`` is the value of level ``c`` of key ``j`` (sorted, no missing).
    """

    def __init__(
        self,
        names: Sequence[str],
        codes: np.ndarray | None = None,
        levels: Sequence[pl.Series] = (),
        *,
        columns: Sequence[np.ndarray] | None = None,
        n_records: int | None = None,
    ) -> None:
        self.names = tuple(names)
        self.levels = tuple(levels)
        if columns is None:
            if codes is None:
                raise ValueError("KeyCodes needs the code matrix or the code columns.")
            matrix = np.asarray(codes)
            self.__dict__["codes"] = matrix
            columns = [matrix[:, j] for j in range(matrix.shape[1])]
            n_records = matrix.shape[0]
        self._columns = tuple(columns)
        if n_records is None:
            n_records = len(self._columns[0]) if self._columns else 0
        self._n = int(n_records)

    @cached_property
    def codes(self) -> np.ndarray:
        """The ``(n, m)`` int32 code matrix (C order), built from the columns once."""
        out = np.empty((self._n, len(self._columns)), dtype=np.int32)
        for j, col in enumerate(self._columns):
            out[:, j] = col
        return out

    @property
    def n_records(self) -> int:
        """Number of records."""
        return self._n

    @property
    def columns(self) -> tuple[np.ndarray, ...]:
        """The codes of each key variable (one int32 array per key, in key order)."""
        return self._columns

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of non-missing levels of each key."""
        return np.array([len(lv) for lv in self.levels], dtype=np.int64)

    @cached_property
    def column_missing(self) -> tuple[bool, ...]:
        """Whether each key variable has a missing value."""
        return tuple(bool(len(col) and col.min() < 0) for col in self._columns)

    @property
    def has_missing(self) -> bool:
        """Whether any key value is missing."""
        return any(self.column_missing)

    @property
    def missing(self) -> np.ndarray:
        """Boolean ``(n, m)`` matrix: True where a key value is missing."""
        return self.codes < 0

    def column(self, name: str) -> np.ndarray:
        """The codes of one key variable."""
        return self._columns[self.names.index(name)]

    def __repr__(self) -> str:
        return f"KeyCodes(names={self.names}, n_records={self._n})"


def _writable(values: np.ndarray) -> np.ndarray:
    """``values``, copied if it is a read-only view (of a polars buffer)."""
    return values if values.flags.writeable else values.copy()


def _to_numpy(series: pl.Series) -> np.ndarray:
    return _writable(series.to_numpy())


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
    n_null = s.null_count()
    if n_null == n:  # no values (or none at all): no levels
        return np.full(n, -1, dtype=np.int32), s.drop_nulls()
    if s.dtype.is_integer() and n > 0:
        lo, hi = s.min(), s.max()
        if lo is not None and hi is not None and int(hi) - int(lo) <= max(4 * n, 1 << 16):
            return _encode_integers(s, int(lo), int(hi), n_null)
    try:
        return _encode_sorted(s, n_null)
    except (pl.exceptions.PolarsError, TypeError, ValueError):  # pragma: no cover - exotic types
        return _encode_arrow(s)


def _encode_integers(s: pl.Series, lo: int, hi: int, n_null: int) -> tuple[np.ndarray, pl.Series]:
    """Integers in a small range: the offset from the smallest value, renumbered densely."""
    span = hi - lo + 1
    values = (s.fill_null(lo) if n_null else s).to_numpy()
    # offset from the smallest value, exact in every integer type (it is below span)
    if values.dtype == np.uint64:
        offsets = (values - np.uint64(lo)).astype(np.int32)
    elif values.dtype.itemsize <= 2:
        offsets = np.subtract(values, lo, dtype=np.int32)
    else:
        offsets = (values.astype(np.int64, copy=False) - lo).astype(np.int32)
    if n_null:
        offsets[s.is_null().to_numpy()] = span  # a slot of its own, past the values
    present = _present(offsets, span + 1)[:span]
    n_present = int(np.count_nonzero(present))
    if n_present == span:  # every value of the range occurs: the offset is the code
        codes = offsets
        if n_null:
            codes[codes == span] = -1
    else:
        remap = np.full(span + 1, -1, dtype=np.int32)  # the last slot takes the missing values
        remap[np.flatnonzero(present)] = np.arange(n_present, dtype=np.int32)
        codes = np.empty_like(offsets)
        for start in range(0, len(offsets), _CHUNK):
            stop = start + _CHUNK
            np.take(remap, offsets[start:stop], out=codes[start:stop])
    if lo + span <= (1 << 62):
        levels = pl.Series(s.name, np.flatnonzero(present) + lo).cast(s.dtype)
    else:  # pragma: no cover - UInt64 codes near 2**64
        levels = s.drop_nulls().unique().sort()
    return codes, levels


def _present(values: np.ndarray, size: int) -> np.ndarray:
    """Which of ``0 .. size-1`` occur in ``values`` (non-negative integers below ``size``).

    Counted a chunk at a time: numpy converts the index values to its index type first, and a
    chunk's copy is reused memory where the whole vector's would be fresh pages.
    """
    present = np.zeros(size, dtype=bool)
    for start in range(0, len(values), _CHUNK):
        present |= np.bincount(values[start : start + _CHUNK], minlength=size) > 0
    return present


def _encode_sorted(s: pl.Series, n_null: int) -> tuple[np.ndarray, pl.Series]:
    """Any other column: its sorted distinct values, and each value's position among them."""
    levels = s.drop_nulls().unique().sort()
    if s.dtype == pl.String:
        codes = s.cast(pl.Enum(levels)).to_physical().cast(pl.Int32)
        return _to_numpy(codes.fill_null(-1) if n_null else codes), levels
    if n_null:
        positions = levels.search_sorted(s.fill_null(levels[0]))
        codes = _to_numpy(positions.cast(pl.Int32))
        codes[s.is_null().to_numpy()] = -1
        return codes, levels
    return _to_numpy(levels.search_sorted(s).cast(pl.Int32)), levels


def _encode_arrow(s: pl.Series) -> tuple[np.ndarray, pl.Series]:  # pragma: no cover - fallback
    """Dictionary encoding through pyarrow, for types polars cannot sort or search."""
    import pyarrow as pa
    import pyarrow.compute as pc

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
    """Encode the key variables ``names`` of ``frame`` (see :class:`KeyCodes`).

    Large files encode their columns on two threads (numpy and polars release the GIL in the
    work); each column's result does not depend on that.
    """
    series = [frame.get_column(name) for name in names]
    workers = min(len(series), os.cpu_count() or 1, 2)
    if workers > 1 and frame.height >= _PARALLEL:
        with ThreadPoolExecutor(workers) as pool:
            encoded = list(pool.map(encode_column, series))
    else:
        encoded = [encode_column(s) for s in series]
    return KeyCodes(
        tuple(names),
        levels=tuple(lv for _, lv in encoded),
        columns=[codes for codes, _ in encoded],
        n_records=frame.height,
    )


def factorize(values: np.ndarray, size: int | None = None) -> tuple[np.ndarray, int]:
    """Dense group ids ``0..G-1`` for an int64 vector.

    ``size`` is an exclusive upper bound on the values when known (values must be >= 0); small
    ranges are factorised by counting (ids follow the values), larger ones with a hash table
    (ids follow the first appearance).  Both are O(n).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if size is not None and size <= min(_DIRECT_LIMIT, 4 * n + 65_536):
        present = np.zeros(size, dtype=bool)
        present[values] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[values], int(remap[-1] + 1)
    return _hash_factorize(np.ascontiguousarray(values, dtype=np.int64))


def _hash_factorize(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Group ids in order of first appearance (numba once loaded, else numpy or polars)."""
    if "sdckit._kernels" in sys.modules or "numba" in sys.modules:
        return _factorize_numba(values)
    if len(values) < _SMALL:
        return _factorize_numpy(values)
    return _factorize_polars(values)


def _factorize_numba(values: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_hash_factorize` with the compiled open-addressing table."""
    from sdckit._kernels import hash_factorize

    ids, n_ids = hash_factorize(np.ascontiguousarray(values, dtype=np.int64))
    return ids, int(n_ids)


def _factorize_numpy(values: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_hash_factorize` by sorting (O(n log n); for short vectors)."""
    uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq), dtype=np.int64)
    return rank[inverse.reshape(-1)], len(uniq)


def _factorize_polars(values: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_hash_factorize` with polars' hash tables (multi-threaded)."""
    series = pl.Series(values)
    distinct = series.unique(maintain_order=True)
    ids = series.replace_strict(
        distinct, pl.int_range(len(distinct), dtype=pl.Int64, eager=True), return_dtype=pl.Int64
    )
    return _to_numpy(ids), len(distinct)


def _as_columns(
    codes: np.ndarray | KeyCodes, columns: Sequence[int] | None
) -> tuple[list[np.ndarray], int]:
    """The chosen code columns as 1-D arrays, and the number of records."""
    if isinstance(codes, KeyCodes):
        picked = list(range(len(codes.names))) if columns is None else list(columns)
        return [codes.columns[j] for j in picked], codes.n_records
    picked = list(range(codes.shape[1])) if columns is None else list(columns)
    return [codes[:, j] for j in picked], codes.shape[0]


def combine_codes(
    codes: np.ndarray | KeyCodes, columns: Sequence[int] | None = None
) -> tuple[np.ndarray, int]:
    """Combine code columns into one int64 key per record (missing = its own value).

    ``codes`` is an ``(n, m)`` code matrix or a :class:`KeyCodes`.  Returns the combined key
    and an exclusive upper bound of its values.  When the mixed-radix product would overflow,
    the partial key is factorised first, so the result is always exact.
    """
    cols, n = _as_columns(codes, columns)
    if not cols:
        return np.zeros(n, dtype=np.int64), 1
    if n == 0:
        return np.zeros(0, dtype=np.int64), 1
    # radix of each column: its number of levels, plus one when it has missing values
    shifts = [1 if int(col.min()) < 0 else 0 for col in cols]
    radices = [max(int(col.max()) + 1 + s, 1) for col, s in zip(cols, shifts, strict=True)]
    bound = 1
    for radix in radices:
        bound *= radix
    if bound < (1 << 62):
        # sum_j (c_j + s_j) * prod_{u > j} r_u, the shifts folded into one constant
        key = cols[0].astype(np.int64)
        offset = shifts[0]
        for col, radix, shift in zip(cols[1:], radices[1:], shifts[1:], strict=True):
            key *= radix
            key += col
            offset = offset * radix + shift
        if offset:
            key += offset
        return key, bound
    key = np.zeros(n, dtype=np.int64)
    bound = 1
    for col, radix, shift in zip(cols, radices, shifts, strict=True):
        if bound * radix >= (1 << 62):
            key, bound = factorize(key, bound)
        key = key * radix + (col.astype(np.int64) + shift)
        bound *= radix
    return key, bound


def group_ids(
    codes: np.ndarray | KeyCodes, columns: Sequence[int] | None = None
) -> tuple[np.ndarray, int]:
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
