"""Per-class figures computed in numpy on the class table (one row per key combination).

Every engine reduces the records to the *finest table*: one row per combination of the key
variables and the sensitive variables (missing values as values of their own), with the number
of records ``n``, the number of non-missing weights ``nw``, the weight sum ``W`` and the smallest
weight ``wmin``.  That table is small (at most one row per record, in practice far fewer), so
everything after the group-by is computed here, in the same way as the in-process measures:

* the equivalence classes (rows of the finest table with equal keys) and their ``fk``/``Fk_hat``,
  with missing key values as wildcards (:mod:`sdckit.engines._wildcard`) or as a category;
* Benedetti-Franconi risk per class (:func:`sdckit.risk.benedetti_franconi_risk`);
* l-diversity per class from the counts of the (class, sensitive value) pairs;
* the file-level figures (the names of :meth:`sdckit.risk.RiskAssessment.figures`).

The per-class columns are then joined back to the records on the engine.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index, group_ids
from sdckit.errors import DataError, SdcWarning
from sdckit.risk.diversity import recursive_l
from sdckit.risk.individual import benedetti_franconi_risk

__all__ = ["NW", "WMIN", "ClassFigures", "N", "W", "class_figures", "file_figures"]

#: Column names of the aggregates in a finest table (prefixed so they never meet a user column).
N, NW, W, WMIN = "__sdc_n", "__sdc_nw", "__sdc_w", "__sdc_wmin"


@dataclass(frozen=True)
class ClassFigures:
    """The figures of every equivalence class, and where its first finest-table row is.

    Attributes
    ----------
    first : numpy.ndarray
        Row of the finest table that represents each class (its key values).
    n : numpy.ndarray
        Records per class.
    columns : dict of str to numpy.ndarray
        The per-record columns, one value per class: ``fk``, ``Fk_hat``, ``risk`` and the
        l-diversity columns.
    figures : dict
        File-level figures (without the household ones, which need a second pass).
    """

    first: np.ndarray
    n: np.ndarray
    columns: dict[str, np.ndarray]
    figures: dict[str, float | int]


def _codes(table: pl.DataFrame, names: Sequence[str]) -> np.ndarray:
    codes = np.empty((table.height, len(names)), dtype=np.int32)
    for j, name in enumerate(names):
        codes[:, j] = encode_column(table.get_column(name))[0]
    return codes


def check_finest(table: pl.DataFrame, keys: Sequence[str], weight: str | None) -> None:
    """The checks :class:`~sdckit.Microdata` makes, on the aggregated table (no data values)."""
    records = int(table.get_column(N).sum()) if table.height else 0
    if records == 0:
        raise DataError("The data has no records; a disclosure assessment needs records.")
    if records == 1:
        raise DataError(
            "The data has a single record; disclosure risk and protection need at least "
            "two records."
        )
    if weight is not None:
        missing = records - int(table.get_column(NW).sum())
        if missing:
            raise DataError(
                f"The weight column {weight!r} has {missing} missing value(s); every record "
                "needs a positive sampling weight (impute or drop those records)."
            )
        sums = table.get_column(W).to_numpy()
        if not np.all(np.isfinite(sums)):
            raise DataError(
                f"The weight column {weight!r} has infinite or NaN values; weights must be finite."
            )
        if float(table.get_column(WMIN).min()) <= 0:  # type: ignore[arg-type]
            raise DataError(
                f"The weight column {weight!r} has zero or negative values; sampling weights "
                "must be positive."
            )
    for k in keys:
        if table.get_column(k).null_count() == table.height:
            raise DataError(
                f"The key variable {k!r} is missing for every record; drop it from the key "
                "variables."
            )


def class_risk(fk: np.ndarray, Fk: np.ndarray, weighted: bool, method: str) -> np.ndarray:
    """Benedetti-Franconi risk per class, as :func:`sdckit.risk.individual_risk_of` does."""
    if not weighted:
        return 1.0 / fk
    if bool(np.any(Fk < fk)):
        warnings.warn(
            "Some key combinations have a weight sum below their sample count (weights "
            "below 1); their risk is capped at 1/fk.",
            SdcWarning,
            stacklevel=4,
        )
    return benedetti_franconi_risk(fk, np.maximum(Fk, fk), method)  # type: ignore[arg-type]


def _pair_diversity(
    gid: np.ndarray, n_groups: int, value_code: np.ndarray, count: np.ndarray, c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct, entropy and recursive l per group from aggregated rows.

    Row ``i`` stands for ``count[i]`` records of group ``gid[i]`` with the value ``value_code[i]``
    (-1 = missing); a (group, value) pair may occur on several rows.
    """
    size = np.bincount(gid, weights=count, minlength=n_groups)
    miss = value_code < 0
    missing = np.bincount(gid[miss], weights=count[miss], minlength=n_groups)
    valid = ~miss
    radix = int(value_code.max()) + 2 if len(value_code) else 1
    pair_key = gid[valid].astype(np.int64) * radix + value_code[valid]
    uniq, inverse = np.unique(pair_key, return_inverse=True)
    pair_count = np.bincount(inverse, weights=count[valid], minlength=len(uniq))
    pair_group = uniq // radix
    distinct = np.bincount(pair_group, minlength=n_groups).astype(np.float64)
    share = pair_count / size[pair_group]
    plogp = np.bincount(pair_group, weights=share * np.log(share), minlength=n_groups)
    with_missing = (missing > 0) & (distinct > 0)
    miss_share = np.where(with_missing, missing / np.where(size > 0, size, 1.0), 1.0)
    plogp = plogp + np.where(with_missing, miss_share * np.log(miss_share), 0.0)
    recursive = recursive_l(pair_group, pair_count, n_groups, c)
    recursive[distinct == 0] = 0.0
    return distinct + with_missing, np.exp(-plogp), recursive


def _diversity(
    codes: np.ndarray,
    n_keys: int,
    sensitive: Sequence[str],
    gid: np.ndarray,
    n_groups: int,
    count: np.ndarray,
    c: float,
) -> dict[str, np.ndarray]:
    """l-diversity columns per class (the names of :meth:`RiskAssessment.to_frame`).

    ``gid`` groups the rows of the finest table by their keys, a missing key value being a value
    of its own (the classes of in-process l-diversity, whatever the missing-value rule of
    ``fk``)."""
    out: dict[str, np.ndarray] = {}
    s_cols = {s: n_keys + j for j, s in enumerate(sensitive)}
    for s in sensitive:
        d, e, r = _pair_diversity(gid, n_groups, codes[:, s_cols[s]], count, c)
        out[f"l_distinct_{s}"], out[f"l_entropy_{s}"], out[f"l_recursive_{s}"] = d, e, r
    if len(sensitive) >= 2:
        multi_e = np.full(n_groups, np.inf)
        multi_r = np.full(n_groups, np.inf)
        for s in sensitive:
            others = [*range(n_keys), *(s_cols[o] for o in sensitive if o != s)]
            sub, n_sub = group_ids(codes, others)
            _, e, r = _pair_diversity(sub, n_sub, codes[:, s_cols[s]], count, c)
            r = np.where(r == 0, np.inf, r)
            sub_group = np.zeros(n_sub, dtype=np.int64)
            sub_group[sub] = gid
            np.minimum.at(multi_e, sub_group, e)
            np.minimum.at(multi_r, sub_group, r)
        multi_r[np.isinf(multi_r)] = 0.0
        out["l_entropy_multi"], out["l_recursive_multi"] = multi_e, multi_r
    return out


def class_figures(
    finest: pl.DataFrame,
    keys: Sequence[str],
    *,
    sensitive: Sequence[str] = (),
    weighted: bool,
    missing: str = "wildcard",
    alpha: float = 1.0,
    method: str = "approx",
    ks: Sequence[int] = (2, 3, 5),
    c: float = 2.0,
) -> ClassFigures:
    """Figures of every equivalence class from the finest table (see the module docstring)."""
    from sdckit.engines._wildcard import wildcard_frequencies

    codes = _codes(finest, [*keys, *sensitive])
    n_keys = len(keys)
    gid, n_groups = group_ids(codes, range(n_keys))
    first = first_index(gid, n_groups)
    count = finest.get_column(N).cast(pl.Float64).to_numpy()
    n = np.bincount(gid, weights=count, minlength=n_groups)
    wsum = np.bincount(gid, weights=finest.get_column(W).to_numpy(), minlength=n_groups)
    rep = codes[first, :n_keys]
    if missing == "wildcard" and bool((rep < 0).any()):
        fk, Fk = wildcard_frequencies(rep, n, wsum, alpha)
    else:
        fk, Fk = n.copy(), wsum
    if not weighted:
        Fk = fk
    risk = class_risk(fk, Fk, weighted, method)
    columns: dict[str, np.ndarray] = {"fk": fk, "Fk_hat": Fk.astype(np.float64), "risk": risk}
    if sensitive:
        columns.update(_diversity(codes, n_keys, sensitive, gid, n_groups, count, c))
    return ClassFigures(
        first=first, n=n, columns=columns, figures=file_figures(n, columns, ks, sensitive)
    )


def file_figures(
    n: np.ndarray, columns: dict[str, np.ndarray], ks: Sequence[int], sensitive: Sequence[str]
) -> dict[str, float | int]:
    """File-level figures from per-class values weighted by the records of each class."""
    fk, risk = columns["fk"], columns["risk"]
    records = int(n.sum())
    er = float(np.dot(n, risk))
    out: dict[str, float | int] = {
        "records": records,
        "sample_uniques": int(n[fk == 1].sum()),
    }
    for k in ks:
        out[f"k{k}_violations"] = int(n[fk < k].sum())
    out["expected_reidentifications"] = er
    out["global_risk_pct"] = 100.0 * er / records
    out["highest_risk"] = float(risk.max())
    for name, values in columns.items():
        if name.startswith("l_"):
            out[name] = float(values.min())
    return out
