"""The keyed draws PRAM and noise share with their plans (see :mod:`sdckit.masking.keyed`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
import polars as pl

from sdckit._keyed_random import _uniform, stream_key
from sdckit._validation import check_seed
from sdckit.masking._strata import base_sequence, stratum_seeds, stream_seed

__all__ = [
    "codes_against",
    "decode",
    "draw_codes",
    "group_seeds",
    "noise_key",
    "normalise",
    "pram_keys",
    "pram_lane",
    "stratum_codes",
]

#: Streams derived from the seed: PRAM's matrices per stratum (0, as before), PRAM's draws (2),
#: the noise's draws within strata (3: its own, so that PRAM and noise with one seed draw
#: independently; with one stream a record's PRAM uniform was the first uniform of its noise).
_DRAWS = 2
_NOISE_DRAWS = 3


def pram_lane(variable: int, attempt: int) -> int:
    """The lane of the draws of the ``variable``-th PRAM variable at redraw ``attempt``."""
    return attempt * 65536 + variable


# ------------------------------------------------------------------------------ encoding
def normalise(series: pl.Series) -> pl.Series:
    """The values as :func:`sdckit._codes.encode_column` compares them (NaN missing, -0.0 as
    0.0, categories as text)."""
    s = series
    if s.dtype.is_float():
        s = s.fill_nan(None)
        s = pl.select(pl.when(s == 0).then(pl.lit(0.0, s.dtype)).otherwise(s)).to_series()
    if s.dtype == pl.Categorical or s.dtype == pl.Enum:
        s = s.cast(pl.String)
    return s.alias(series.name)


def codes_against(series: pl.Series, levels: pl.Series) -> np.ndarray:
    """Codes of ``series`` in ``levels`` (the sorted levels of the whole file); -1 for missing
    values and for values not among the levels."""
    s = normalise(series)
    if len(levels) == 0:
        return np.full(len(s), -1, dtype=np.int32)
    lv = levels
    if s.dtype != lv.dtype:
        s = s.cast(lv.dtype, strict=False)
    mapped = s.replace_strict(
        lv, pl.Series(np.arange(len(lv), dtype=np.int32)), default=-1, return_dtype=pl.Int32
    )
    return mapped.fill_null(-1).to_numpy().astype(np.int32, copy=False)


def stratum_codes(series: pl.Series | None, levels: pl.Series | None, n: int) -> np.ndarray:
    """Stratum number of each record: the sorted levels' order, missing values last."""
    if series is None or levels is None:
        return np.zeros(n, dtype=np.int64)
    codes = codes_against(series, levels).astype(np.int64)
    codes[codes < 0] = len(levels)
    return codes


# ------------------------------------------------------------------------------ draws
@numba.njit(cache=True, nogil=True)
def _draw_kernel(
    codes: np.ndarray,
    strata: np.ndarray,
    cum: np.ndarray,
    last: np.ndarray,
    key: np.uint64,
    lane: np.uint64,
    rows: np.ndarray,
    select: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    out = codes.copy()
    n_levels = cum.shape[2]
    for i in range(codes.shape[0]):
        c = codes[i]
        if c < 0 or not select[i]:
            continue
        s = strata[i]
        u = _uniform(key, lane, rows[i])
        pick = last[s, c]
        for j in range(n_levels):
            if u < cum[s, c, j]:
                pick = j
                break
        out[i] = pick
    return out


def draw_codes(
    codes: np.ndarray,
    strata: np.ndarray,
    matrices: Sequence[np.ndarray],
    key: int,
    lane: int,
    rows: np.ndarray,
    select: np.ndarray | None = None,
) -> np.ndarray:
    """New codes: record ``i`` (where ``select``, not missing) draws from row ``codes[i]`` of
    the matrix of its stratum ``strata[i]``, with the keyed uniform of ``(key, lane, rows[i])``.
    """
    n_levels = matrices[0].shape[0] if matrices else 0
    if n_levels == 0:  # no levels: every value is missing
        return np.asarray(codes, dtype=np.int32).copy()
    stack = np.zeros((max(len(matrices), 1), n_levels, n_levels))
    for s, m in enumerate(matrices):
        stack[s] = m
    cum = np.cumsum(stack, axis=2)
    positive = stack > 0
    # past the last cumulative sum (rounding): the last level that can be drawn
    last = np.where(positive.any(axis=2), n_levels - 1 - np.argmax(positive[:, :, ::-1], axis=2), 0)
    return _draw_kernel(
        np.ascontiguousarray(codes, dtype=np.int32),
        np.ascontiguousarray(strata, dtype=np.int64),
        cum,
        last.astype(np.int64),
        np.uint64(key),
        np.uint64(lane),
        np.ascontiguousarray(rows, dtype=np.int64),
        np.ones(len(codes), dtype=np.bool_) if select is None else np.asarray(select, np.bool_),
    )


def group_seeds(seed: Any, n_groups: int) -> list[np.random.SeedSequence]:
    """The seed sequence of each stratum (group ``s``: spawn key ``(0, s)``), as the in-memory
    methods within strata derive them."""
    return stratum_seeds(base_sequence(seed), n_groups)


def pram_keys(seed: Any, n_strata: int) -> tuple[list[np.random.SeedSequence], int]:
    """The matrices' seed sequence of each stratum and the key of the draws, from ``seed``."""
    base = base_sequence(seed)
    return stratum_seeds(base, n_strata), stream_key(stream_seed(base, _DRAWS))


def decode(
    frame: pl.DataFrame, codes: Mapping[str, np.ndarray], levels: Mapping[str, pl.Series]
) -> pl.DataFrame:
    """``frame`` with each column of ``codes`` replaced by its levels (missing values kept
    exactly as they were, null or NaN)."""
    updates = []
    for c, new in codes.items():
        lv = levels[c]
        if len(lv) == 0:  # missing for every record: nothing to PRAM
            continue
        original = frame.get_column(c)
        drawn = lv.gather(pl.Series(np.where(new >= 0, new, 0))).alias(c)
        drawn = drawn.cast(original.dtype, strict=False)
        updates.append(
            pl.select(
                pl.when(pl.Series(new >= 0)).then(drawn).otherwise(original).alias(c)
            ).to_series()
        )
    return frame.with_columns(updates)


def noise_key(seed: Any) -> int:
    """The key of the normals of :class:`~sdckit.masking.AddNoise`.

    Without strata the key is the first number of the seed's Generator (so an integer seed and
    ``numpy.random.default_rng`` of it give the same key); within strata (a
    :class:`numpy.random.SeedSequence`, the base of the strata's streams) it is stream ``3`` of
    it (PRAM's draws use stream 2).  One key for the file, within strata too: the draws are
    keyed by the record's row.
    """
    if isinstance(seed, np.random.SeedSequence):
        return stream_key(stream_seed(seed, _NOISE_DRAWS))
    return int(check_seed(seed).integers(0, 2**64, dtype=np.uint64))
