"""Information loss on weighted estimates: category totals, means and a regression.

The users of a public-use file estimate with its weights.  :func:`weighted_estimates` computes
the same estimates on the original file with its weights and on the released file with *its*
weights (after a method changed, rounded or recalibrated them) and compares them:

totals
    The weighted total of every category of each variable in ``totals`` (a missing value is a
    category of its own).  A value suppressed in the released file falls into the released
    file's missing category, which the original file does not have (or has smaller): that
    weight is compared with nothing.  The component's loss is the total variation distance
    between the weighted category shares of the two files,
    ``TVD = 1/2 sum_c |T_c / T - T'_c / T'|``, the share of the weighted total that is lost
    (moved to the missing category, ``lost_share``) or moved to another category
    (``moved_share = TVD - lost_share``).
means
    The weighted mean of each numeric variable in ``means`` over its non-missing values; the
    loss is the relative error ``|m' - m| / |m|`` capped at 1 (0 when both are 0, 1 when only
    the original mean is 0 or the released variable is not numeric).
regression
    A formula such as ``"income ~ age + C(sex)"`` fitted by weighted least squares
    (statsmodels WLS, rows with a missing value dropped) on both files; the loss is
    ``1 - mean max(J, 0)`` over the original's coefficients, with J the confidence-interval
    overlap of Karr et al. (2006, :func:`sdckit.utility.regression.ci_overlap`), a coefficient
    the released file cannot estimate counting with overlap 0.

A variable absent from the released file (dropped before release) counts as fully lost: loss
1 for its component (and for the regression when the formula needs it).  A released file
without its weight column gets equal weights scaled to the original total.  ``loss`` is the
mean of the components' losses, in [0, 1].
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_columns_exist, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import Microdata
from sdckit.utility._inputs import _frame_of
from sdckit.utility.regression import ci_overlap

__all__ = ["WeightedEstimates", "weighted_estimates", "weighted_estimates_loss"]

_ESTIMATE_SCHEMA = {
    "kind": pl.String,
    "variable": pl.String,
    "category": pl.String,
    "original": pl.Float64,
    "released": pl.Float64,
    "relative_difference": pl.Float64,
    "ci_overlap": pl.Float64,
}
_COMPONENT_SCHEMA = {
    "kind": pl.String,
    "variable": pl.String,
    "measure": pl.String,
    "loss": pl.Float64,
    "lost_share": pl.Float64,
    "moved_share": pl.Float64,
}


@dataclass(frozen=True, repr=False)
class WeightedEstimates:
    """Weighted estimates of the original and the released file, and the loss between them.

    Attributes
    ----------
    estimates : polars.DataFrame
        One row per estimate: ``kind`` ("total", "mean" or "coefficient"), ``variable`` (the
        variable, or the model term), ``category`` (for totals; null for the missing
        category), ``original``, ``released`` (null when the released file cannot give it),
        ``relative_difference`` (``(released - original) / |original|``) and ``ci_overlap``
        (J, for coefficients).
    components : polars.DataFrame
        One row per compared quantity: ``kind``, ``variable`` (the formula for the
        regression), ``measure``, ``loss`` in [0, 1], and for totals ``lost_share`` and
        ``moved_share``.
    loss : float
        Mean of the components' losses.
    total_original, total_released : float
        Sum of the weights of each file.
    released_weight : str or None
        The released file's weight column, or None when equal weights were used.
    formula : str or None
        The regression formula.
    """

    estimates: pl.DataFrame
    components: pl.DataFrame
    loss: float
    total_original: float
    total_released: float
    released_weight: str | None
    formula: str | None

    def to_frame(self) -> pl.DataFrame:
        """One row per estimate (polars)."""
        return self.estimates

    def summary(self) -> Summary:
        """The loss and the loss of every component."""
        rows: list[tuple[str, Any]] = [
            ("loss (mean of components)", self.loss),
            ("total weight, original", self.total_original),
            ("total weight, released", self.total_released),
            ("released weights", self.released_weight or "equal (none released)"),
        ]
        for kind, variable, measure, loss in self.components.select(
            "kind", "variable", "measure", "loss"
        ).iter_rows():
            rows.append((f"{kind} {variable}: {measure}", loss))
        return Summary("Loss on weighted estimates", rows)

    def __repr__(self) -> str:
        return f"WeightedEstimates(loss={self.loss:.4g}, components={self.components.height})"


# ------------------------------------------------------------------------------- weights
def _checked_weights(frame: pl.DataFrame, column: str, which: str) -> np.ndarray:
    series = frame.get_column(column)
    if not series.dtype.is_numeric():
        raise ColumnError(f"The weight column {column!r} of the {which} file is not numeric.")
    values = series.cast(pl.Float64).fill_nan(None)
    if values.null_count():
        raise DataError(
            f"The weight column {column!r} of the {which} file has missing values; every "
            "record needs a positive weight."
        )
    w = values.to_numpy()
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise DataError(
            f"The weight column {column!r} of the {which} file has zero, negative or infinite "
            "values; weights must be positive and finite."
        )
    return w


def _original_weights(frame: pl.DataFrame, md: Microdata, weight: str | None) -> np.ndarray:
    name = weight if weight is not None else md.weight
    if name is None:
        return np.ones(frame.height)  # a census: every record weighs 1
    check_columns_exist([name], list(frame.columns), "weight (original file)")
    return _checked_weights(frame, name, "original")


def _released_weights(
    frame: pl.DataFrame, md: Microdata, name: str | None, total: float
) -> tuple[np.ndarray, str | None]:
    column = md.weight if md.weight is not None else name
    if column is not None and column in frame.columns:
        return _checked_weights(frame, column, "released"), column
    return np.full(frame.height, total / max(frame.height, 1)), None


# ---------------------------------------------------------------------------- estimates
def _as_categories(series: pl.Series) -> pl.Series:
    if series.dtype.is_float():
        series = series.fill_nan(None)
    return series.cast(pl.String)


def _category_totals(series: pl.Series, weights: np.ndarray) -> dict[str | None, float]:
    grouped = (
        pl.DataFrame({"c": _as_categories(series), "w": weights})
        .group_by("c")
        .agg(pl.col("w").sum())
    )
    return dict(zip(grouped["c"].to_list(), grouped["w"].to_list(), strict=True))


def _relative(original: float | None, released: float | None) -> float | None:
    if original is None or released is None or original == 0:
        return None
    return (released - original) / abs(original)


def _totals(
    name: str,
    left: pl.DataFrame,
    right: pl.DataFrame,
    w: np.ndarray,
    w_rel: np.ndarray,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    before = _category_totals(left.get_column(name), w)
    present = name in right.columns
    after = _category_totals(right.get_column(name), w_rel) if present else {}
    order = sorted(c for c in before if c is not None) + [None] * (None in before)
    order += sorted(c for c in after if c is not None and c not in before)
    if None in after and None not in before:
        order.append(None)
    total, total_rel = float(w.sum()), float(w_rel.sum())
    rows = []
    for c in order:
        orig = before.get(c, 0.0)
        rel = after.get(c, 0.0) if present else None
        rows.append(
            {
                "kind": "total",
                "variable": name,
                "category": c,
                "original": orig,
                "released": rel,
                "relative_difference": _relative(orig, rel),
                "ci_overlap": None,
            }
        )
    if not present:
        component = {"loss": 1.0, "lost_share": 1.0, "moved_share": 0.0}
    else:
        shares = [before.get(c, 0.0) / total - after.get(c, 0.0) / total_rel for c in order]
        tvd = 0.5 * sum(abs(d) for d in shares)
        lost = max(after.get(None, 0.0) / total_rel - before.get(None, 0.0) / total, 0.0)
        tvd = min(max(tvd, 0.0), 1.0)
        component = {"loss": tvd, "lost_share": lost, "moved_share": max(tvd - lost, 0.0)}
    component.update(kind="total", variable=name, measure="total variation distance of shares")
    return rows, component


def _weighted_mean(series: pl.Series, weights: np.ndarray) -> float | None:
    if not series.dtype.is_numeric():
        return None
    x = series.cast(pl.Float64).fill_nan(None).to_numpy()
    ok = np.isfinite(x)
    if not ok.any():
        return None
    return float(np.sum(x[ok] * weights[ok]) / np.sum(weights[ok]))


def _means(
    name: str, left: pl.DataFrame, right: pl.DataFrame, w: np.ndarray, w_rel: np.ndarray
) -> tuple[dict[str, Any], dict[str, Any]]:
    if not left.get_column(name).dtype.is_numeric():
        raise ColumnError(
            f"The variable {name!r} in 'means' is not numeric in the original file; list it in "
            "'totals' instead."
        )
    orig = _weighted_mean(left.get_column(name), w)
    if orig is None:
        raise ColumnError(
            f"The variable {name!r} in 'means' has no value in the original file; drop it."
        )
    rel = _weighted_mean(right.get_column(name), w_rel) if name in right.columns else None
    if rel is None:
        loss = 1.0
    elif orig == 0:
        loss = 0.0 if rel == 0 else 1.0
    else:
        loss = min(abs(rel - orig) / abs(orig), 1.0)
    row = {
        "kind": "mean",
        "variable": name,
        "category": None,
        "original": orig,
        "released": rel,
        "relative_difference": _relative(orig, rel),
        "ci_overlap": None,
    }
    component = {
        "kind": "mean",
        "variable": name,
        "measure": "relative error of the mean (capped at 1)",
        "loss": loss,
        "lost_share": None,
        "moved_share": None,
    }
    return row, component


def _wls(frame: pl.DataFrame, formula: str, weights: np.ndarray) -> tuple[Any, Any]:
    import statsmodels.formula.api as smf

    data = frame.to_pandas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.wls(formula, data=data, weights=weights).fit()
    return fit.params, fit.conf_int()


def _regression(
    formula: str, left: pl.DataFrame, right: pl.DataFrame, w: np.ndarray, w_rel: np.ndarray
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    try:
        p1, ci1 = _wls(left, formula, w)
    except Exception as exc:  # patsy / statsmodels errors: report without data values
        raise ParameterError(
            f"The regression {formula!r} could not be fitted on the original file "
            f"({type(exc).__name__}); check the variable names and types in the formula."
        ) from None
    try:
        p2, ci2 = _wls(right, formula, w_rel)
    except Exception:  # a variable dropped or suppressed everywhere: nothing estimable
        p2 = ci2 = None
    rows, overlaps = [], []
    for term in p1.index:
        known = p2 is not None and term in p2.index and np.isfinite(ci2.loc[term]).all()
        j = None
        if known:
            lo1, up1, lo2, up2 = (*ci1.loc[term], *ci2.loc[term])
            j = float(ci_overlap(lo1, up1, lo2, up2))
        overlaps.append(max(j, 0.0) if j is not None and np.isfinite(j) else 0.0)
        orig, rel = float(p1[term]), (float(p2[term]) if known else None)
        rows.append(
            {
                "kind": "coefficient",
                "variable": str(term),
                "category": None,
                "original": orig,
                "released": rel,
                "relative_difference": _relative(orig, rel),
                "ci_overlap": j,
            }
        )
    component = {
        "kind": "regression",
        "variable": formula,
        "measure": "1 - mean confidence-interval overlap",
        "loss": float(min(max(1.0 - np.mean(overlaps), 0.0), 1.0)),
        "lost_share": None,
        "moved_share": None,
    }
    return rows, component


def weighted_estimates(
    original: Any,
    released: Any,
    *,
    weight: str | None = None,
    totals: str | Sequence[str] = (),
    means: str | Sequence[str] = (),
    regression: str | None = None,
) -> WeightedEstimates:
    """Compare weighted totals, means and a regression between the original and released file.

    Parameters
    ----------
    original : Microdata, DataFrame or Protected
        The original file with its weight (``Microdata.weight``, or ``weight``; without a
        weight every record weighs 1).
    released : DataFrame, Microdata or Protected
        The released file; it may lack columns (a dropped variable counts as lost) and its
        weight (equal weights scaled to the original total are then used).  Its weight is its
        Microdata weight role, else the column named like the original's weight.
    weight : str, optional
        The weight column of the original (default: its weight role).
    totals : list of str
        Variables whose weighted category totals are compared.
    means : list of str
        Numeric variables whose weighted means are compared.
    regression : str, optional
        A formula such as ``"income ~ age + C(sex)"`` fitted by weighted least squares.

    Returns
    -------
    WeightedEstimates
        ``loss`` in [0, 1], ``to_frame()`` one row per estimate, ``components`` one row per
        compared quantity (see the module docstring for the definitions).

    Raises
    ------
    ParameterError
        Nothing to compare, or a formula that cannot be fitted on the original file.
    ColumnError
        A variable that the original file does not have, or a non-numeric one in ``means``.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit import Microdata
    >>> orig = Microdata(
    ...     pl.DataFrame({"region": ["N", "N", "S", "S"], "w": [1.0, 3.0, 2.0, 2.0]}),
    ...     keys=["region"], weight="w",
    ... )
    >>> rel = pl.DataFrame({"region": ["N", None, "S", "S"], "w": [2.0, 2.0, 2.0, 2.0]})
    >>> res = weighted_estimates(orig, rel, totals=["region"])
    >>> res.to_frame()["released"].to_list()  # N, S and the suppressed (missing) value
    [2.0, 4.0, 2.0]
    >>> res.loss  # a quarter of the weight lost to the missing category
    0.25
    """
    left, md = _frame_of(original)
    right, md_rel = _frame_of(released)
    total_vars = column_list(totals, "totals")
    mean_vars = column_list(means, "means")
    if regression is not None and (not isinstance(regression, str) or "~" not in regression):
        raise ParameterError(
            "The 'regression' parameter must be a model formula like 'income ~ age + C(sex)'."
        )
    if not (total_vars or mean_vars or regression):
        raise ParameterError(
            "Nothing to compare: pass totals=[...], means=[...] or regression='y ~ x'."
        )
    check_columns_exist(total_vars + mean_vars, list(left.columns), "variable (original file)")
    w = _original_weights(left, md, weight)
    name = weight if weight is not None else md.weight
    w_rel, released_weight = _released_weights(right, md_rel, name, float(w.sum()))

    rows: list[dict[str, Any]] = []
    components: list[dict[str, Any]] = []
    for var in total_vars:
        var_rows, component = _totals(var, left, right, w, w_rel)
        rows += var_rows
        components.append(component)
    for var in mean_vars:
        row, component = _means(var, left, right, w, w_rel)
        rows.append(row)
        components.append(component)
    if regression is not None:
        reg_rows, component = _regression(regression, left, right, w, w_rel)
        rows += reg_rows
        components.append(component)
    estimates = pl.DataFrame(rows, schema=_ESTIMATE_SCHEMA)
    table = pl.DataFrame(components, schema=_COMPONENT_SCHEMA)
    return WeightedEstimates(
        estimates=estimates,
        components=table,
        loss=float(table["loss"].mean()),  # type: ignore[arg-type]
        total_original=float(w.sum()),
        total_released=float(w_rel.sum()),
        released_weight=released_weight,
        formula=regression,
    )


def weighted_estimates_loss(original: Microdata, protected: Microdata) -> float:
    """The R-U map's ``"weighted_estimates"`` loss: keys as totals, numeric variables as means.

    The loss of :func:`weighted_estimates` with the original's key variables as ``totals``,
    its numeric variables as ``means`` and no regression.
    """
    return weighted_estimates(
        original, protected, totals=original.keys, means=original.numeric
    ).loss
