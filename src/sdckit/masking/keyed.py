"""PRAM and additive noise as plans built from aggregates and applied to any slice of records.

The in-memory :class:`~sdckit.masking.Pram` and :class:`~sdckit.masking.AddNoise` draw their
random numbers keyed by the seed and each record's global row index
(:mod:`sdckit._keyed_random`), so their output for a record does not depend on the other
records of a slice.  What depends on the whole file is small and computed first: PRAM's
transition matrices need the category counts (per stratum), additive noise the standard
deviations (per stratum, exact: :mod:`sdckit._exact_sums`).  A *plan* holds those; applied to a
slice of records that carries their row index, it gives exactly the in-memory output of those
records.  The engines (:mod:`sdckit.engines`) build the plans from group-bys and apply them per
partition.

* :func:`pram_plan` / :class:`PramPlan` (person-level variables; household-level variables are
  drawn per household and stay in memory);
* :func:`noise_plan` / :class:`NoisePlan` (``method="additive"``, with balance edits);
* :func:`draw_codes`, :func:`pram_lane`: the draw kernel the in-memory PRAM shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._exact_sums import Moments
from sdckit._keyed_random import _uniform, normals, stream_key
from sdckit._validation import check_seed
from sdckit.errors import DataError, ParameterError
from sdckit.masking._strata import base_sequence, stratum_seeds, stream_seed

__all__ = [
    "ROW",
    "NoisePlan",
    "PramPlan",
    "add_keyed_noise",
    "codes_against",
    "decode",
    "draw_codes",
    "edits_hold",
    "noise_key",
    "noise_matrix",
    "noise_plan",
    "normalise",
    "pram_keys",
    "pram_lane",
    "pram_plan",
    "stratum_codes",
    "violations",
]

#: The column of the global row index (0 .. n - 1 in file order) the plans key their draws by.
ROW = "__sdckit_row"

#: Streams derived from the seed: PRAM's matrices per stratum (0, as before), the draws (2).
_DRAWS = 2


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


def pram_keys(seed: Any, n_strata: int) -> tuple[list[np.random.SeedSequence], int]:
    """The matrices' seed sequence of each stratum and the key of the draws, from ``seed``."""
    base = base_sequence(seed)
    return stratum_seeds(base, n_strata), stream_key(stream_seed(base, _DRAWS))


# ------------------------------------------------------------------------------ PRAM plan
@dataclass(frozen=True)
class PramPlan:
    """What PRAM needs of the whole file: levels, the matrices per stratum, the draws' key.

    Apply it to a slice of records (a polars DataFrame with the column :data:`ROW`) with
    :meth:`apply`.
    """

    variables: tuple[str, ...]
    levels: dict[str, pl.Series]
    strata: str | None
    strata_levels: pl.Series | None
    matrices: dict[str, list[np.ndarray]]
    key: int
    forbidden: list[dict[str, Any]]
    present: dict[tuple[str, ...], pl.DataFrame]
    max_redraws: int

    def apply(self, frame: pl.DataFrame, rows: np.ndarray | None = None) -> pl.DataFrame:
        """The slice with its PRAM variables drawn (``rows``: default, the :data:`ROW` column)."""
        if rows is None:
            rows = frame.get_column(ROW).to_numpy()
        strata_col = frame.get_column(self.strata) if self.strata is not None else None
        st = stratum_codes(strata_col, self.strata_levels, frame.height)
        original = {c: codes_against(frame.get_column(c), self.levels[c]) for c in self.variables}
        new = {
            c: draw_codes(original[c], st, self.matrices[c], self.key, pram_lane(i, 0), rows)
            for i, c in enumerate(self.variables)
        }
        out = decode(frame, new, self.levels)
        if not (self.forbidden or self.present):
            return out
        bad = violations(out, self.forbidden, self.present)
        for attempt in range(1, self.max_redraws + 1):
            if not bad.any():
                break
            for i, c in enumerate(self.variables):
                lane = pram_lane(i, attempt)
                redrawn = draw_codes(original[c], st, self.matrices[c], self.key, lane, rows, bad)
                new[c] = np.where(bad, redrawn, new[c])
            out = decode(frame, new, self.levels)
            bad = violations(out, self.forbidden, self.present)
        if bad.any():
            for c in self.variables:
                new[c] = np.where(bad, original[c], new[c])
            out = decode(frame, new, self.levels)
        return out


def decode(frame: pl.DataFrame, codes: Mapping[str, np.ndarray], levels: Mapping[str, pl.Series]):
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


def violations(
    frame: pl.DataFrame,
    forbidden: Sequence[Mapping[str, Any]],
    present: Mapping[tuple[str, ...], pl.DataFrame],
) -> np.ndarray:
    """Records with a forbidden combination, or a combination of a ``must_exist`` group that
    is not among ``present`` (the group's combinations in the original file)."""
    bad = np.zeros(frame.height, dtype=bool)
    for combo in forbidden:
        expr = pl.lit(True)
        for col, value in combo.items():
            expr = expr & (pl.col(col) == value).fill_null(False)
        bad |= frame.select(expr).to_series().to_numpy()
    for group, combos in present.items():
        found = combos.select(list(group)).unique().with_columns(_ok=pl.lit(True))
        joined = (
            frame.select(list(group))
            .with_row_index("_row")
            .join(found, on=list(group), how="left", nulls_equal=True)
        )
        bad |= ~joined.sort("_row").get_column("_ok").fill_null(False).to_numpy()
    return bad


def pram_plan(
    method: Any,
    counts: Mapping[str, pl.DataFrame],
    *,
    strata: str | None,
    present: Mapping[tuple[str, ...], pl.DataFrame] | None = None,
    seed: Any = None,
) -> PramPlan:
    """The plan of a :class:`~sdckit.masking.Pram` from the category counts of the file.

    ``counts[var]``: one row per value of ``var`` (per stratum value, in the column
    ``strata``, when given) with its number of records in the column ``"__n"``; missing values
    may appear (they are not counted).  ``present``: the combinations of each ``must_exist``
    group in the file.  ``seed`` (default: the method's) must give the same stream as in
    memory: an integer.
    """
    from sdckit.masking._pram import _as_combinations, _transition_matrix

    cols = tuple(counts)
    levels = {c: encode_column(counts[c].get_column(c).unique())[1] for c in cols}
    strata_levels = None
    if strata is not None:
        values = pl.concat([counts[c].get_column(strata) for c in cols]).unique()
        strata_levels = encode_column(values)[1]
    n_strata = 1 if strata_levels is None else len(strata_levels) + 1
    table = {}
    for c in cols:
        frame = counts[c]
        code = codes_against(frame.get_column(c), levels[c])
        st = stratum_codes(
            frame.get_column(strata) if strata is not None else None, strata_levels, frame.height
        )
        keep = code >= 0
        n_lv = len(levels[c])
        flat = np.bincount(
            st[keep] * max(n_lv, 1) + code[keep],
            weights=frame.get_column("__n").to_numpy()[keep].astype(np.float64),
            minlength=n_strata * max(n_lv, 1),
        )
        table[c] = flat.reshape(n_strata, max(n_lv, 1))[:, :n_lv]
    seeds, key = pram_keys(method.seed if seed is None else seed, n_strata)
    settings = method._settings()
    matrices: dict[str, list[np.ndarray]] = {c: [] for c in cols}
    for s in range(n_strata):
        rng = np.random.default_rng(seeds[s])
        for c in cols:
            n_lv = len(levels[c])
            cnt = table[c][s]
            if n_lv == 0 or cnt.sum() == 0:
                matrices[c].append(np.eye(n_lv))
                continue
            matrices[c].append(_transition_matrix(c, n_lv, cnt, rng, settings)[0])
    must = [tuple(g) for g in (method.must_exist or [])]
    if must and present is None:
        raise ParameterError("PRAM with 'must_exist' needs the combinations present in the file.")
    return PramPlan(
        variables=cols,
        levels=levels,
        strata=strata,
        strata_levels=strata_levels,
        matrices=matrices,
        key=key,
        forbidden=_as_combinations(method.forbidden, "forbidden"),
        present={g: present[g] for g in must} if present else {},
        max_redraws=int(method.max_redraws),
    )


# ------------------------------------------------------------------------------ noise plan
@dataclass(frozen=True)
class NoisePlan:
    """What additive noise needs of the whole file: the noise sd per stratum and variable."""

    variables: tuple[str, ...]
    scale: np.ndarray  # strata x variables: noise / 100 * sd
    strata: str | None
    strata_levels: pl.Series | None
    key: int
    balance: list[tuple[str, tuple[str, ...]]]

    def apply(self, frame: pl.DataFrame, rows: np.ndarray | None = None) -> pl.DataFrame:
        """The slice with noise added (``rows``: default, the :data:`ROW` column)."""
        from sdckit.masking.noise import _column_matrix, _edit_sum

        if rows is None:
            rows = frame.get_column(ROW).to_numpy()
        x = _column_matrix(frame, self.variables)
        strata_col = frame.get_column(self.strata) if self.strata is not None else None
        st = stratum_codes(strata_col, self.strata_levels, frame.height)
        y = add_keyed_noise(x, self.scale[st], self.key, rows)
        new = {v: y[:, j] for j, v in enumerate(self.variables)}
        for total, comps in self.balance:
            before_total = frame.get_column(total).cast(pl.Float64).fill_nan(None)
            tot = _edit_sum([new[c] for c in comps])
            unchanged = np.ones(len(tot), dtype=bool)
            for c in comps:
                before = frame.get_column(c).cast(pl.Float64).fill_nan(None).to_numpy()
                unchanged &= (before == new[c]) | (np.isnan(before) & np.isnan(new[c]))
            tot = np.where(unchanged, before_total.fill_null(np.nan).to_numpy(), tot)
            tot[before_total.is_null().to_numpy()] = np.nan
            new[total] = tot
        return frame.with_columns(
            pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)
            for name, values in new.items()
        )


def add_keyed_noise(x: np.ndarray, scale: np.ndarray, key: int, rows: np.ndarray) -> np.ndarray:
    """``x + z * scale`` with ``z`` the keyed normals of ``(key, lane j, rows)`` for column
    ``j`` (``scale``: one row per record or one for all); missing values stay missing."""
    y = x.copy()
    scale = np.broadcast_to(scale, x.shape)
    for j in range(x.shape[1]):
        active = scale[:, j] > 0
        if active.any():
            z = normals(key, j, rows)
            y[:, j] = np.where(active, x[:, j] + z * scale[:, j], x[:, j])
    return y


def noise_matrix(frame: pl.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The noise variables as a float64 matrix, NaN for missing values (as in memory)."""
    from sdckit.masking.noise import _column_matrix

    return _column_matrix(frame, list(columns))


def edits_hold(frame: pl.DataFrame, edits: Sequence[tuple[str, tuple[str, ...]]]) -> bool:
    """Whether the balance edits hold in the records of ``frame`` (as the in-memory check)."""
    from sdckit.masking.noise import _check_edits

    try:
        _check_edits(frame, list(edits))
    except DataError:
        return False
    return True


def noise_key(seed: Any) -> int:
    """The key of the normals of :class:`~sdckit.masking.AddNoise`.

    Without strata the key is the first number of the seed's Generator (so an integer seed and
    ``numpy.random.default_rng`` of it give the same key); within strata (a
    :class:`numpy.random.SeedSequence`, the base of the strata's streams) it is stream ``2`` of
    it.  One key for the file, within strata too: the draws are keyed by the record's row.
    """
    if isinstance(seed, np.random.SeedSequence):
        return stream_key(stream_seed(seed, _DRAWS))
    return int(check_seed(seed).integers(0, 2**64, dtype=np.uint64))


def noise_plan(
    method: Any,
    moments: Moments,
    variables: Sequence[str],
    *,
    strata: str | None,
    strata_levels: pl.Series | None,
    balance: Sequence[tuple[str, tuple[str, ...]]] = (),
    seed: Any = None,
) -> NoisePlan:
    """The plan of :class:`~sdckit.masking.AddNoise` (``method="additive"``) from the exact
    moments of the variables (one group per stratum level, missing stratum last)."""
    noise = float(method.noise)
    chosen = method.seed if seed is None else seed
    by_strata = strata is not None
    return NoisePlan(
        variables=tuple(variables),
        scale=noise / 100 * moments.sd(),
        strata=strata,
        strata_levels=strata_levels,
        key=noise_key(base_sequence(chosen) if by_strata else chosen),
        balance=[(t, tuple(c)) for t, c in balance],
    )
