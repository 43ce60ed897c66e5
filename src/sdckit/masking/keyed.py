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

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._exact_sums import Moments
from sdckit._keyed_random import normals
from sdckit.errors import DataError, ParameterError
from sdckit.masking._keyed_draws import (
    codes_against,
    decode,
    draw_codes,
    group_seeds,
    noise_key,
    normalise,
    pram_keys,
    pram_lane,
    stratum_codes,
)
from sdckit.masking._pram import _as_combinations, _transition_matrix
from sdckit.masking._strata import base_sequence
from sdckit.masking.noise import _check_edits, _column_matrix, _edit_sum, refuse_infinite

__all__ = [
    "ROW",
    "NoisePlan",
    "PramPlan",
    "add_keyed_noise",
    "codes_against",
    "decode",
    "draw_codes",
    "edits_hold",
    "group_seeds",
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
    return _column_matrix(frame, list(columns))


def edits_hold(frame: pl.DataFrame, edits: Sequence[tuple[str, tuple[str, ...]]]) -> bool:
    """Whether the balance edits hold in the records of ``frame`` (as the in-memory check)."""
    try:
        _check_edits(frame, list(edits))
    except DataError:
        return False
    return True


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
    refuse_infinite(variables, moments.infinite.any(axis=0))
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
