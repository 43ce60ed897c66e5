"""Column values as the check compares them: text, integer codes, numbers, missing masks.

Written with polars and numpy only (the check shares no code with the methods it checks).
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["CodedFrame", "as_number", "as_text", "codes", "is_missing", "joint_codes"]


def is_missing(s: pl.Series) -> np.ndarray:
    """Null (and NaN) values as a boolean array."""
    if s.dtype.is_float():
        return s.is_null().to_numpy() | s.is_nan().fill_null(False).to_numpy()
    return s.is_null().to_numpy()


def as_text(s: pl.Series) -> pl.Series:
    """Values as text for comparisons across types (``7``, ``7.0`` and ``"7"`` compare equal)."""
    if s.dtype == pl.String:
        return s
    if s.dtype.is_float():
        s = s.fill_nan(None)
        kept = s.drop_nulls()
        if kept.len() and bool((kept == kept.round(0)).all()) and kept.abs().max() < 2**53:
            s = s.cast(pl.Int64, strict=False)
    return s.cast(pl.String)


def as_number(s: pl.Series) -> np.ndarray:
    """Values as float64 (NaN for missing); dates and times as their integer representation."""
    if s.dtype.is_temporal():
        s = s.to_physical()
    if s.dtype == pl.Boolean:
        s = s.cast(pl.Int8)
    if not s.dtype.is_numeric():
        s = s.cast(pl.Float64, strict=False)
    return s.cast(pl.Float64).fill_nan(None).to_numpy().astype(np.float64, copy=False)


def codes(s: pl.Series) -> tuple[np.ndarray, int]:
    """Dense integer codes of the values (missing = -1) and the number of codes."""
    if s.dtype.is_float():
        s = s.fill_nan(None)
    if s.dtype.is_nested() or s.dtype == pl.Object:
        s = s.cast(pl.String, strict=False) if not s.dtype.is_nested() else s.hash()
    if s.dtype in (pl.String, pl.Categorical) or isinstance(s.dtype, pl.Enum):
        # texts: their category numbers, made dense (faster than sorting the texts)
        physical = s.cast(pl.Categorical).to_physical()
        missing = physical.is_null().to_numpy()
        values = physical.fill_null(0).to_numpy()
        kept = np.unique(values[~missing]) if (~missing).any() else np.zeros(0, values.dtype)
        out = np.searchsorted(kept, values).astype(np.int64)
        out[missing] = -1
        return out, len(kept)
    ranked = s.rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1
    n = int(ranked.max()) + 1 if len(ranked) else 0
    return ranked, n


def joint_codes(*columns: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of the combinations of several code arrays (a missing part: -1 for the row)."""
    if not columns:
        raise ValueError("joint_codes needs at least one column")
    missing = np.zeros(len(columns[0]), dtype=bool)
    for c in columns:
        missing |= c < 0
    frame = pl.DataFrame({f"c{i}": c for i, c in enumerate(columns)})
    ranked = frame.select(pl.struct(pl.all()).rank("dense")).to_series()
    out = ranked.cast(pl.Int64).to_numpy() - 1
    out[missing] = -1
    kept = np.unique(out[~missing]) if (~missing).any() else np.zeros(0, np.int64)
    if len(kept) and kept[-1] + 1 != len(kept):  # re-densify after removing the missing rows
        remap = np.full(int(out.max()) + 1, -1, dtype=np.int64)
        remap[kept] = np.arange(len(kept))
        out = np.where(out >= 0, remap[np.maximum(out, 0)], -1)
    return out, len(kept)


class CodedFrame:
    """The :func:`codes` of a frame's columns, each computed once (a check reads a column's
    codes for its groups, its risk, its comparable records and its households)."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame
        self._codes: dict[str, tuple[np.ndarray, int]] = {}

    def __call__(self, name: str) -> tuple[np.ndarray, int]:
        if name not in self._codes:
            self._codes[name] = codes(self.frame.get_column(name))
        return self._codes[name]
