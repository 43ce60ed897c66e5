"""Utility of synthetic data: the propensity-score mean squared error (pMSE, Woo et al. 2009).

A classifier that cannot tell the original records from the synthetic ones is the sign of a
synthetic file that resembles the original: the pMSE measures how far the fitted propensity
scores are from the synthetic share, and its ratio to the null expectation is close to 1 for
a good synthetic file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._results import Summary
from sdckit._validation import check_columns_exist, column_list
from sdckit.errors import ColumnError
from sdckit.microdata import as_microdata

__all__ = ["PropensityMSEResult", "propensity_mse"]


@dataclass(frozen=True, repr=False)
class PropensityMSEResult:
    """The propensity-score mean squared error of a synthetic file.

    Attributes
    ----------
    variables : tuple of str
        The variables of the logistic regression (main effects).
    pmse : float
        ``mean((p_i - c)^2)`` over the stacked original and synthetic records, with ``p_i`` the
        fitted probability that record ``i`` is synthetic and ``c`` the synthetic share.
    pmse_null : float
        Its expectation when both files come from the same distribution:
        ``(k - 1) (1 - c)^2 c / N`` with ``k`` the number of model parameters.
    pmse_ratio : float
        ``pmse / pmse_null`` (close to 1 for a good synthetic file; NaN if the null is 0).
    n_original, n_synthetic : int
        Numbers of records of the two files.
    """

    variables: tuple[str, ...]
    pmse: float
    pmse_null: float
    pmse_ratio: float
    n_original: int
    n_synthetic: int

    def summary(self) -> Summary:
        """pMSE, its null expectation and their ratio."""
        rows: list[tuple[str, Any]] = [
            ("variables", ", ".join(self.variables)),
            ("original records", self.n_original),
            ("synthetic records", self.n_synthetic),
            ("pMSE", self.pmse),
            ("pMSE under the null", self.pmse_null),
            ("pMSE ratio", self.pmse_ratio),
        ]
        return Summary("Propensity-score MSE of the synthetic file", rows)

    def __repr__(self) -> str:
        return f"PropensityMSEResult(pmse={self.pmse:.6g}, pmse_ratio={self.pmse_ratio:.6g})"


def propensity_mse(original: Any, synthetic: Any, variables: Sequence[str]) -> PropensityMSEResult:
    """Propensity-score mean squared error (pMSE) of a synthetic file (Woo et al. 2009).

    A logistic regression (main effects; numeric variables with more than 10 distinct values
    standardised, the others as category indicators) predicts whether a record is synthetic;
    ``pmse = mean((p_i - c)^2)`` with ``c`` the synthetic share.  Also returned: its null
    expectation ``(k - 1) (1 - c)^2 c / N`` and the ratio (close to 1 for good data).

    Parameters
    ----------
    original, synthetic : DataFrame, Microdata or Protected
        The two files (they may differ in size).
    variables : list of str
        Variables of the model.

    Returns
    -------
    PropensityMSEResult

    Examples
    --------
    >>> import polars as pl
    >>> o = pl.DataFrame({"a": [1, 2, 1, 2, 1, 2], "b": ["x", "x", "y", "y", "x", "y"]})
    >>> res = propensity_mse(o, o, ["a", "b"])  # identical files: nothing to tell apart
    >>> round(res.pmse, 12), round(res.pmse_null, 6)
    (0.0, 0.041667)
    """
    from sklearn.linear_model import LogisticRegression

    left = as_microdata(original).frame
    right = as_microdata(synthetic).frame
    cols = list(column_list(variables, "variables"))
    if not cols:
        raise ColumnError("The pMSE needs variables: pass variables=[...].")
    check_columns_exist(cols, list(left.columns), "variable (original file)")
    check_columns_exist(cols, list(right.columns), "variable (synthetic file)")
    both = pl.concat([left.select(cols), right.select(cols)], how="vertical_relaxed")
    parts = []
    for c in cols:
        s = both.get_column(c)
        if s.dtype.is_numeric() and s.n_unique() > 10:
            v = s.cast(pl.Float64).to_numpy()
            v = (v - np.nanmean(v)) / (np.nanstd(v) or 1.0)
            parts.append(np.nan_to_num(v)[:, None])
        else:
            codes, levels = encode_column(s.cast(pl.String))
            parts.append(np.eye(len(levels) + 1)[codes + 1][:, 1:])
    x = np.hstack(parts)
    y = np.r_[np.zeros(left.height), np.ones(right.height)]
    model = LogisticRegression(max_iter=5000).fit(x, y)
    p = model.predict_proba(x)[:, 1]
    c = right.height / len(y)
    pmse = float(np.mean((p - c) ** 2))
    k = x.shape[1] + 1
    null = (k - 1) * (1 - c) ** 2 * c / len(y)
    return PropensityMSEResult(
        variables=tuple(cols),
        pmse=pmse,
        pmse_null=float(null),
        pmse_ratio=pmse / null if null else float("nan"),
        n_original=left.height,
        n_synthetic=right.height,
    )
