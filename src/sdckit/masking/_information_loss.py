"""Information loss of microaggregation: ``100 * SSE / SST`` on z-scores (benchmarks.md A1).

:func:`information_loss_sse` evaluates any grouping; :func:`information_loss_lower_bound` is the
sum over variables of the optimal univariate SSE (Hansen-Mukherjee), a lower bound for every
k-partition.  Both are re-exported by :mod:`sdckit.masking._microaggregation`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_int
from sdckit.errors import ParameterError
from sdckit.masking._univariate import optimal_univariate_labels

__all__ = ["information_loss_lower_bound", "information_loss_sse"]


def _as_matrix(values: Any) -> np.ndarray:
    if isinstance(values, pl.DataFrame):
        values = values.cast(pl.Float64).fill_nan(None).to_numpy()
    elif hasattr(values, "to_numpy"):
        values = values.to_numpy()
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ParameterError("The 'values' parameter must be a 1-D or 2-D array of numbers.")
    return x


def _zscores(x: np.ndarray) -> np.ndarray:
    """Column z-scores (ddof 0) over the observed values; NaN stays NaN; constant columns 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = ~np.isnan(x)
        count = observed.sum(axis=0)
        mean = np.where(count > 0, np.nansum(x, axis=0) / np.maximum(count, 1), 0.0)
        centred = x - mean
        sd = np.sqrt(np.nansum(centred**2, axis=0) / np.maximum(count, 1))
        z = np.where(sd > 0, centred / np.where(sd > 0, sd, 1.0), 0.0)
    return np.where(observed, z, np.nan)


def _groups_matrix(groups: Any, n: int, p: int) -> np.ndarray:
    g = np.asarray(groups)
    if g.ndim == 1:
        g = np.repeat(g[:, None], p, axis=1)
    if g.shape != (n, p):
        raise ParameterError(
            "The 'groups' parameter must have one label per record (or one per record and "
            "variable)."
        )
    return g.astype(np.int64)


def information_loss_sse(values: Any, groups: Any) -> float:
    """Information loss ``100 * SSE / SST`` of a grouping, on z-scores (benchmarks.md A1).

    Parameters
    ----------
    values : array-like, shape (n, p)
        The original values (NaN or null = missing, left out of both sums).
    groups : array-like of int, shape (n,) or (n, p)
        The group of each record (or of each record and variable).

    Returns
    -------
    float
        ``100 * SSE / SST`` with ``SST`` the total and ``SSE`` the within-group sum of squares
        of the z-scores (0 when every variable is constant).

    Examples
    --------
    >>> from sdckit.masking import information_loss_sse
    >>> round(information_loss_sse([[1.0], [2.0], [10.0], [11.0]], [0, 0, 1, 1]), 4)
    1.2195
    """
    x = _as_matrix(values)
    n, p = x.shape
    g = _groups_matrix(groups, n, p)
    z = _zscores(x)
    sst = float(np.nansum(z**2))
    if sst == 0.0:
        return 0.0
    sse = 0.0
    for j in range(p):
        obs = ~np.isnan(z[:, j])
        _, inv = np.unique(g[obs, j], return_inverse=True)
        zj = z[obs, j]
        counts = np.bincount(inv)
        means = np.bincount(inv, weights=zj) / counts
        sse += float(np.sum((zj - means[inv]) ** 2))
    return 100.0 * sse / sst


def information_loss_lower_bound(values: Any, k: int) -> float:
    """Lower bound of ``100 * SSE / SST`` for any grouping with groups of at least ``k``.

    The sum over variables of the optimal univariate SSE (Hansen-Mukherjee), on z-scores,
    divided by SST (benchmarks.md A1.3).  No multivariate k-partition can do better.

    Examples
    --------
    >>> from sdckit.masking import information_loss_lower_bound
    >>> round(information_loss_lower_bound([[1.0], [2.0], [10.0], [11.0]], 2), 4)
    1.2195
    """
    k = check_int(k, "k", minimum=1)
    z = _zscores(_as_matrix(values))
    sst = float(np.nansum(z**2))
    if sst == 0.0:
        return 0.0
    total = 0.0
    for j in range(z.shape[1]):
        zj = z[~np.isnan(z[:, j]), j]
        if len(zj) >= k:
            total += optimal_univariate_labels(zj, k)[1]
    return 100.0 * total / sst
