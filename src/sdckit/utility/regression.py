"""Regression on original and protected data: coefficients and confidence-interval overlap.

Karr, Kohnen, Oganian, Reiter and Sanil (2006): for each coefficient with intervals (L, U) on
the original and (L', U') on the protected data, with overlap [max(L, L'), min(U, U')],
``J = 1/2 [(min(U, U') - max(L, L')) / (U - L) + (min(U, U') - max(L, L')) / (U' - L')]``.
J is 1 for identical intervals and negative when they do not overlap; ``overlap`` is J and
``overlap_truncated`` is ``max(J, 0)``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_choice, check_real
from sdckit.errors import ParameterError
from sdckit.utility._inputs import _frame_of

__all__ = ["RegressionComparison", "ci_overlap", "regression_comparison"]


def ci_overlap(lower: Any, upper: Any, lower2: Any, upper2: Any) -> np.ndarray:
    """Confidence-interval overlap J of Karr et al. (2006) for arrays of intervals.

    Examples
    --------
    >>> ci_overlap([0.0], [2.0], [1.0], [3.0]).tolist()
    [0.5]
    """
    lo, up = np.asarray(lower, float), np.asarray(upper, float)
    lo2, up2 = np.asarray(lower2, float), np.asarray(upper2, float)
    inter = np.minimum(up, up2) - np.maximum(lo, lo2)
    return 0.5 * (inter / (up - lo) + inter / (up2 - lo2))


@dataclass(frozen=True, repr=False)
class RegressionComparison:
    """Coefficients of one model fitted on the original and on the protected data.

    ``coefficients`` has one row per term: ``estimate_original``, ``estimate_protected``,
    their confidence bounds, ``overlap`` (J) and ``overlap_truncated``.
    """

    formula: str
    family: str
    coefficients: pl.DataFrame
    mean_overlap: float

    def to_frame(self) -> pl.DataFrame:
        """One row per coefficient (polars)."""
        return self.coefficients

    def summary(self) -> Summary:
        """The model and the mean confidence-interval overlap."""
        rows: list[tuple[str, Any]] = [
            ("coefficients", self.coefficients.height),
            ("mean CI overlap", self.mean_overlap),
            ("smallest CI overlap", float(self.coefficients["overlap"].min())),
        ]
        return Summary(f"Regression comparison: {self.formula} ({self.family})", rows)


def _fit(frame: pl.DataFrame, formula: str, family: str, weight: str | None, alpha: float):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    data = frame.to_pandas()
    fam = sm.families.Gaussian() if family == "linear" else sm.families.Binomial()
    kwargs: dict[str, Any] = {}
    if weight is not None:
        kwargs["freq_weights"] = data[weight].to_numpy(dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # linear: t quantiles with the residual degrees of freedom, as OLS
        model = smf.glm(formula, data=data, family=fam, **kwargs).fit(use_t=family == "linear")
    ci = model.conf_int(alpha=alpha)
    return model.params, ci


def regression_comparison(
    original: Any,
    protected: Any,
    formula: str,
    *,
    family: Literal["linear", "logistic"] = "linear",
    weight: str | None = None,
    alpha: float = 0.05,
) -> RegressionComparison:
    """Fit ``formula`` on both files and compare coefficients and confidence intervals.

    Parameters
    ----------
    original, protected : DataFrame, Microdata or Protected
    formula : str
        A model formula such as ``"income ~ age + C(sex)"`` (patsy syntax).
    family : {"linear", "logistic"}
    weight : str, optional
        Frequency weights.
    alpha : float
        1 - confidence level of the intervals.

    Examples
    --------
    >>> import polars as pl
    >>> x = pl.DataFrame({"y": [1.0, 2.1, 2.9, 4.2, 5.1], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> res = regression_comparison(x, x, "y ~ x")
    >>> res.mean_overlap
    1.0
    """
    check_choice(family, "family", ("linear", "logistic"))
    alpha = check_real(
        alpha, "alpha", minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=False
    )
    if not isinstance(formula, str) or "~" not in formula:
        raise ParameterError("The 'formula' parameter must be a model formula like 'y ~ x + z'.")
    left, _ = _frame_of(original)
    right, _ = _frame_of(protected)
    try:
        p1, ci1 = _fit(left, formula, family, weight, alpha)
        p2, ci2 = _fit(right, formula, family, weight, alpha)
    except Exception as exc:  # patsy / statsmodels errors: report without data values
        raise ParameterError(
            f"The model {formula!r} could not be fitted ({type(exc).__name__}); check the "
            "variable names and types in the formula."
        ) from None
    terms = [t for t in p1.index if t in p2.index]
    lo1, up1 = ci1.loc[terms, 0].to_numpy(), ci1.loc[terms, 1].to_numpy()
    lo2, up2 = ci2.loc[terms, 0].to_numpy(), ci2.loc[terms, 1].to_numpy()
    j = ci_overlap(lo1, up1, lo2, up2)
    coefficients = pl.DataFrame(
        {
            "term": terms,
            "estimate_original": p1.loc[terms].to_numpy(),
            "estimate_protected": p2.loc[terms].to_numpy(),
            "lower_original": lo1,
            "upper_original": up1,
            "lower_protected": lo2,
            "upper_protected": up2,
            "overlap": j,
            "overlap_truncated": np.maximum(j, 0.0),
        }
    )
    return RegressionComparison(
        formula=formula,
        family=family,
        coefficients=coefficients,
        mean_overlap=float(np.mean(j)),
    )
