"""Codes of the keys and targets of an original file and its synthetic copies.

synthpop's ``disclosure()`` works on tables of a target against the combination of the keys.
Every variable is coded once over the original and all synthetic copies together, so that a
level means the same in every file; a missing value is a level of its own (synthpop's
``"Missing"``).  Numeric variables are used value by value unless a number of groups is asked
for: then they are cut into intervals whose breaks are the quantiles of the original and all
synthetic values together (synthpop's ``group_num``), with equal-width intervals when the
quantiles give fewer than three groups, and the special codes (``missing_codes``, synthpop's
``cont.na``) kept as levels of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit._codes import encode_column, factorize, first_index
from sdckit.errors import DataError, ParameterError

__all__ = ["VariableCodes", "encode_keys", "encode_variable"]

MISSING_LABEL = "missing"


@dataclass(frozen=True)
class VariableCodes:
    """One variable coded over the original file (``codes[0]``) and each synthetic copy.

    Code ``j < len(levels)`` is the level ``levels[j]`` (named ``names[levels[j]]`` for grouped
    variables, whose levels are group numbers); the next code is the missing level when
    ``has_missing``.  Labels are made only when asked for (there may be a level per record).
    """

    name: str
    codes: tuple[np.ndarray, ...]
    levels: pl.Series
    names: tuple[str, ...] | None
    has_missing: bool

    @property
    def n_levels(self) -> int:
        return len(self.levels) + int(self.has_missing)

    def label(self, code: int) -> str:
        """The printable level of a code."""
        if code >= len(self.levels):
            return MISSING_LABEL
        value = self.levels[code]
        return self.names[value] if self.names is not None else _label(value)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every level's label, in code order (one per level: for small variables)."""
        return tuple(self.label(j) for j in range(self.n_levels))

    def code_of(self, value: object) -> int:
        """The code of a level given as a value (``None`` for the missing level); -1 if absent."""
        if value is None:
            return self.n_levels - 1 if self.has_missing else -1
        text = _label(value)
        if self.names is not None:
            return next((j for j in range(len(self.levels)) if self.label(j) == text), -1)
        hits = np.flatnonzero(
            self.levels.map_elements(_label, return_dtype=pl.String).to_numpy() == text
        )  # (a user's level: once per call, not per record)
        return int(hits[0]) if len(hits) else -1


def _stack(name: str, parts: Sequence[pl.Series]) -> pl.Series:
    try:
        frames = [pl.DataFrame({name: s}) for s in parts]
        return pl.concat(frames, how="vertical_relaxed").get_column(name)
    except (pl.exceptions.PolarsError, TypeError) as exc:
        raise DataError(
            f"The variable {name!r} has different types in the original and the synthetic "
            "files (e.g. text in one, numbers in the other); give it the same type in both."
        ) from exc


def _label(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else str(value)
    return str(value)


def _breaks(values: np.ndarray, n: int, style: str, name: str) -> np.ndarray:
    """Class breaks of classInt's ``quantile`` (R's type-7 quantiles) or ``equal`` style.

    As classInt does, ``n`` at least the number of distinct values makes every value a class
    of its own (breaks half-way between them).
    """
    distinct = np.unique(values)
    if len(distinct) == 1:
        raise DataError(
            f"The variable {name!r} has a single value (besides missing values and "
            "missing_codes); there is nothing to group: leave it out of ngroups."
        )
    if n >= len(distinct):
        gaps = np.diff(distinct)
        half = gaps.mean() / 2
        br = np.r_[distinct[0] - half, distinct[:-1] + gaps / 2, distinct[-1] + half]
    elif style == "quantile":
        br = np.quantile(values, np.linspace(0.0, 1.0, n + 1))
    else:
        br = np.linspace(values.min(), values.max(), n + 1)
    return np.unique(br)


def _grouped(
    name: str, stacked: pl.Series, n: int, special: Sequence[float]
) -> tuple[pl.Series, list[str]]:
    """Group numbers of a numeric variable (special codes after the intervals, missing kept),
    and the label of each group number."""
    if not stacked.dtype.is_numeric():
        raise ParameterError(
            f"A number of groups is given for {name!r}, which is not numeric; only numeric "
            "variables can be grouped (drop it from ngroups_keys / ngroups_targets)."
        )
    x = stacked.cast(pl.Float64).fill_nan(None).fill_null(np.nan).to_numpy()
    if np.isinf(x).any():
        raise DataError(
            f"The variable {name!r} has infinite values; recode them (or list them in "
            "missing_codes) before grouping it."
        )
    codes_special = np.unique(np.asarray(special, dtype=np.float64))
    is_special = np.isin(x, codes_special)
    ok = ~np.isnan(x) & ~is_special
    if not ok.any():
        raise DataError(f"The variable {name!r} has no values to group (all are missing).")
    values = x[ok]
    breaks = _breaks(values, n, "quantile", name)
    if len(breaks) - 1 + len(codes_special) < 3:  # synthpop: too few groups, try equal widths
        breaks = _breaks(values, n, "equal", name)
    n_int = max(len(breaks) - 1, 1)
    group = np.full(len(x), -1, dtype=np.int64)
    # [b_i, b_{i+1}) with the last interval closed: R's cut(right = FALSE, include.lowest = TRUE)
    group[ok] = np.clip(np.searchsorted(breaks, values, side="right") - 1, 0, n_int - 1)
    group[is_special] = n_int + np.searchsorted(codes_special, x[is_special])
    if len(breaks) == 1:
        names = [f"[{_label(breaks[0])},{_label(breaks[0])}]"]
    else:
        names = [
            f"[{_label(breaks[i])},{_label(breaks[i + 1])}" + ("]" if i == n_int - 1 else ")")
            for i in range(n_int)
        ]
    names += [_label(float(v)) for v in codes_special]
    series = pl.Series(name, group).set(pl.Series(group < 0), None)
    return series, names


def encode_variable(
    name: str,
    parts: Sequence[pl.Series],
    ngroups: int = 0,
    missing_codes: Sequence[float] = (),
) -> VariableCodes:
    """Code ``name`` over the original (``parts[0]``) and the synthetic copies together."""
    stacked = _stack(name, parts)
    if missing_codes:
        present = stacked.head(len(parts[0]))
        for code in missing_codes:
            if not bool((present == code).any()):
                raise ParameterError(
                    f"A value listed in missing_codes for {name!r} does not occur in the "
                    "original file; list only codes the variable uses."
                )
    names: list[str] | None = None
    if ngroups:
        stacked, names = _grouped(name, stacked, ngroups, [float(c) for c in missing_codes])
    codes, levels = encode_column(stacked)
    has_missing = bool((codes < 0).any())
    if has_missing:
        codes = np.where(codes < 0, len(levels), codes)
    codes = codes.astype(np.int64)
    bounds = np.cumsum([0, *(len(p) for p in parts)])
    split = tuple(codes[a:b] for a, b in itertools.pairwise(bounds))
    return VariableCodes(name, split, levels, None if names is None else tuple(names), has_missing)


def encode_keys(variables: Sequence[VariableCodes]) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Dense ids of the key combinations in every file, and each id's code per key variable."""
    n_files = len(variables[0].codes)
    stacked = np.column_stack([np.concatenate(v.codes) for v in variables])
    key = np.zeros(len(stacked), dtype=np.int64)
    bound = 1
    for j, v in enumerate(variables):
        if bound * max(v.n_levels, 1) >= (1 << 62):
            key, bound = factorize(key, bound)
        key = key * max(v.n_levels, 1) + stacked[:, j]
        bound *= max(v.n_levels, 1)
    ids, n_ids = factorize(key, bound)
    ids = ids.astype(np.int64)
    per_key = stacked[first_index(ids, n_ids)] if n_ids else np.zeros((0, len(variables)))
    sizes = [len(c) for c in variables[0].codes]
    bounds = np.cumsum([0, *sizes])
    split = tuple(ids[bounds[i] : bounds[i + 1]] for i in range(n_files))
    return split, per_key.astype(np.int64)
