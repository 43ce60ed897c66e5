"""Information loss for continuous variables (methods.md M13, worked example E1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import linalg

from sdckit._results import Summary
from sdckit.errors import ColumnError, DataError
from sdckit.utility._inputs import paired_frames, weights_of

__all__ = ["ContinuousLossResult", "continuous_loss"]


def _weighted_mean_cov(x: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and covariance matrix (unbiased; frequency-weighted with weights)."""
    if w is None:
        return x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    mean = np.average(x, axis=0, weights=w)
    centred = x - mean
    cov = (centred * w[:, None]).T @ centred / (w.sum() - 1.0)
    return mean, np.atleast_2d(cov)


def _correlation(cov: np.ndarray) -> np.ndarray:
    sd = np.sqrt(np.diag(cov))
    with np.errstate(invalid="ignore", divide="ignore"):
        return cov / np.outer(sd, sd)


def _column_means(values: np.ndarray) -> np.ndarray:
    """Column means ignoring NaN; NaN for a column without finite values."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=0)
    sums = np.where(finite, values, 0.0).sum(axis=0)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _mean_relative(a: np.ndarray, b: np.ndarray) -> float:
    """Mean of |a - b| / |a| over the entries with a != 0 (NaN if there are none)."""
    a, b = np.ravel(a), np.ravel(b)
    keep = (a != 0) & np.isfinite(a) & np.isfinite(b)
    if not keep.any():
        return float("nan")
    return float(np.mean(np.abs(a[keep] - b[keep]) / np.abs(a[keep])))


@dataclass(frozen=True, repr=False)
class ContinuousLossResult:
    """Information loss between the original and the protected continuous variables.

    Attributes
    ----------
    variables : tuple of str
    mse, mae : float
        Mean squared and mean absolute error over all compared values.
    mean_variation : float
        Mean of ``|x - x'| / |x|`` over the values with ``x != 0``.
    il1s : float
        Size-corrected loss ``(1/(n p)) sum |x - x'| / (sqrt(2) S_j)``; ``il1s_sum`` is the
        unnormalised sum (sdcMicro's current ``dUtility(method="IL1s")``).  Constant
        variables (``S_j = 0``) are left out of both (their per-variable value is NaN).
    sse_sst : float
        ``100 * sum ||z - z'||^2 / sum ||z - mean(z)||^2`` on the original's z-scores (percent).
    mean_variation_means, mean_variation_variances, mean_variation_covariances,
    mean_variation_correlations : float
        Mean relative change of the statistics (Domingo-Ferrer and Torra).
    eigen : float
        ``sum_j |l_j - l'_j| / l_j`` over the eigenvalues of the correlation matrices.
    per_variable : polars.DataFrame
        One row per variable: mse, mae, mean_variation, il1s, variance_ratio, bias, relative_bias.
    correlation_original, correlation_difference : numpy.ndarray
    pca_angles_degrees : numpy.ndarray
        Principal angles between the planes of the first two principal components.
    n_compared : int
        Number of value pairs compared (pairs with a missing value are skipped).
    """

    variables: tuple[str, ...]
    mse: float
    mae: float
    mean_variation: float
    il1s: float
    il1s_sum: float
    sse_sst: float
    mean_variation_means: float
    mean_variation_variances: float
    mean_variation_covariances: float
    mean_variation_correlations: float
    eigen: float
    per_variable: pl.DataFrame
    correlation_original: np.ndarray
    correlation_difference: np.ndarray
    pca_angles_degrees: np.ndarray
    n_compared: int
    n_missing: int

    def to_frame(self) -> pl.DataFrame:
        """One row per variable (polars)."""
        return self.per_variable

    def summary(self) -> Summary:
        """The file-level measures."""
        rows: list[tuple[str, Any]] = [
            ("variables", len(self.variables)),
            ("mean squared error", self.mse),
            ("mean absolute error", self.mae),
            ("mean variation of values", self.mean_variation),
            ("IL1s (size-corrected, per value)", self.il1s),
            ("SSE/SST (%)", self.sse_sst),
            ("mean variation of means", self.mean_variation_means),
            ("mean variation of variances", self.mean_variation_variances),
            ("mean variation of covariances", self.mean_variation_covariances),
            ("mean variation of correlations", self.mean_variation_correlations),
            ("eigenvalue comparison", self.eigen),
            ("largest correlation change", float(np.nanmax(np.abs(self.correlation_difference)))),
            ("values compared", self.n_compared),
            ("value pairs with a missing value", self.n_missing),
        ]
        return Summary("Information loss: continuous variables", rows)


def continuous_loss(
    original: Any,
    protected: Any,
    *,
    numeric: Any = None,
    weight: str | None = None,
) -> ContinuousLossResult:
    """Compare the continuous variables of an original and a protected file.

    Parameters
    ----------
    original, protected : DataFrame, Microdata or Protected
        The two files, with the same records in the same order.
    numeric : list of str, optional
        Variables to compare (default: the numeric role of the original Microdata).
    weight : str, optional
        Weight column for the weighted statistics (means, variances, covariances).

    Returns
    -------
    ContinuousLossResult

    Examples
    --------
    Worked example E1 (ages and hours per week of three people).  The squared differences are
    4 + 49 + 36 (age) and 36 + 0 + 9 (hours): 134 / 6; the worked example's "132 / 6 = 22" is
    an arithmetic slip.

    >>> import polars as pl
    >>> x = pl.DataFrame({"age": [36, 41, 52], "hours": [17, 35, 5]})
    >>> y = pl.DataFrame({"age": [34, 48, 58], "hours": [23, 35, 2]})
    >>> res = continuous_loss(x, y, numeric=["age", "hours"])
    >>> round(res.mse * 6, 9), res.mae, round(res.mean_variation, 6)
    (134.0, 4.0, 0.215769)
    """
    left, right, cols, md = paired_frames(original, protected, numeric, "numeric")
    for frame, which in ((left, "original"), (right, "protected")):
        for c in cols:
            if not frame.schema[c].is_numeric():
                raise ColumnError(
                    f"The variable {c!r} of the {which} file is not numeric; continuous loss "
                    "compares numbers (use categorical_loss for categories)."
                )
    x = left.select(pl.col(c).cast(pl.Float64) for c in cols).to_numpy()
    y = right.select(pl.col(c).cast(pl.Float64) for c in cols).to_numpy()
    w = weights_of(left, weight, md)
    valid = np.isfinite(x) & np.isfinite(y)
    n_missing = int((~valid).sum())
    complete = valid.all(axis=1)
    if complete.sum() < 2:
        raise DataError("Fewer than two records have every compared value in both files.")
    diff = np.where(valid, x - y, np.nan)
    absdiff = np.abs(diff)
    mse = float(np.nanmean(diff**2))
    mae = float(np.nanmean(absdiff))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(valid & (x != 0), absdiff / np.abs(x), np.nan)
    mean_variation = float(np.nanmean(rel))
    sd = np.array([np.nanstd(x[valid[:, j], j], ddof=1) for j in range(x.shape[1])])
    sd = np.where(sd > 0, sd, np.nan)  # a constant variable has no size-corrected loss
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = absdiff / (np.sqrt(2.0) * sd)
    il1s_sum = float(np.nansum(scaled))
    il1s = il1s_sum / max(int(np.isfinite(scaled).sum()), 1)
    xm, ym = x[complete], y[complete]
    wc = None if w is None else w[complete]
    mean_x, cov_x = _weighted_mean_cov(xm, wc)
    mean_y, cov_y = _weighted_mean_cov(ym, wc)
    sd_c = np.sqrt(np.diag(cov_x))
    with np.errstate(divide="ignore", invalid="ignore"):
        zx = (xm - mean_x) / sd_c
        zy = (ym - mean_x) / sd_c
        sse_sst = float(100.0 * np.nansum((zx - zy) ** 2) / np.nansum(zx**2))
    corr_x, corr_y = _correlation(cov_x), _correlation(cov_y)
    off = ~np.eye(len(cols), dtype=bool)
    ev_x = np.sort(linalg.eigvalsh(np.nan_to_num(corr_x)))[::-1]
    ev_y = np.sort(linalg.eigvalsh(np.nan_to_num(corr_y)))[::-1]
    keep = ev_x > 1e-12
    eigen = float(np.sum(np.abs(ev_x[keep] - ev_y[keep]) / ev_x[keep]))
    angles = np.array([])
    if len(cols) >= 2:
        vx = linalg.eigh(np.nan_to_num(corr_x))[1][:, ::-1][:, :2]
        vy = linalg.eigh(np.nan_to_num(corr_y))[1][:, ::-1][:, :2]
        angles = np.degrees(linalg.subspace_angles(vx, vy))
    var_x, var_y = np.diag(cov_x), np.diag(cov_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        variance_ratio = np.where(var_x > 0, var_y / var_x, np.nan)
    per_variable = pl.DataFrame(
        {
            "variable": list(cols),
            "mse": np.nanmean(diff**2, axis=0),
            "mae": np.nanmean(absdiff, axis=0),
            "mean_variation": np.nanmean(rel, axis=0),
            "il1s": _column_means(scaled),
            "variance_ratio": variance_ratio,
            "bias": mean_y - mean_x,
            "relative_bias": (mean_y - mean_x) / np.where(mean_x != 0, np.abs(mean_x), np.nan),
        }
    )
    return ContinuousLossResult(
        variables=cols,
        mse=mse,
        mae=mae,
        mean_variation=mean_variation,
        il1s=il1s,
        il1s_sum=il1s_sum,
        sse_sst=sse_sst,
        mean_variation_means=_mean_relative(mean_x, mean_y),
        mean_variation_variances=_mean_relative(var_x, var_y),
        mean_variation_covariances=_mean_relative(cov_x[off], cov_y[off]),
        mean_variation_correlations=_mean_relative(corr_x[off], corr_y[off]),
        eigen=eigen,
        per_variable=per_variable,
        correlation_original=corr_x,
        correlation_difference=corr_y - corr_x,
        pca_angles_degrees=angles,
        n_compared=int(valid.sum()),
        n_missing=n_missing,
    )
