"""Maximum-entropy rows and cumulative intervals of perturbation tables (the R package ptable).

Used by :mod:`sdckit.tables.ptable` (counts) and :mod:`sdckit.tables.ptable_magnitude`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import InfeasibleError

__all__ = ["DIGITS", "EPS", "entropy_row", "intervals"]

EPS = 1e-8  # the R package's lower bound of every probability (1 / 10^8)
DIGITS = 8  # decimals of the cumulative bounds


def entropy_row(
    v: np.ndarray, V: float, lower: np.ndarray, mono: bool, equal_variance: bool
) -> np.ndarray:
    """Maximum-entropy probabilities of one row (a strictly convex problem: one optimum)."""
    n = len(v)
    vf = v.astype(float)
    v2 = vf**2
    cons: list[dict[str, Any]] = [
        {"type": "eq", "fun": lambda p: np.sum(p) - 1.0, "jac": lambda p: np.ones(n)},
        {"type": "eq", "fun": lambda p: vf @ p, "jac": lambda p: vf},
    ]
    if equal_variance:
        cons.append({"type": "eq", "fun": lambda p: v2 @ p - V, "jac": lambda p: v2})
    else:
        cons.append({"type": "ineq", "fun": lambda p: V - v2 @ p, "jac": lambda p: -v2})
    zero = np.flatnonzero(v == 0)
    if mono and len(zero):
        # non-decreasing from the most negative deviation up to v = 0 (as the R package)
        for a, b in itertools.pairwise(range(int(zero[0]) + 1)):
            g = np.zeros(n)
            g[b], g[a] = 1.0, -1.0
            cons.append({"type": "ineq", "fun": lambda p, g=g: g @ p, "jac": lambda p, g=g: g})

    def objective(p: np.ndarray) -> float:
        q = np.clip(p, 1e-300, None)
        return float(np.sum(q * np.log(q)))

    def gradient(p: np.ndarray) -> np.ndarray:
        return np.log(np.clip(p, 1e-300, None)) + 1.0

    from scipy.optimize import minimize  # (on first use)

    start = np.exp(-v2 / (2.0 * max(V, 1e-3)))
    start = np.maximum(start / start.sum(), lower)
    start /= start.sum()
    res = minimize(
        objective,
        start,
        jac=gradient,
        method="SLSQP",
        constraints=cons,
        bounds=list(zip(lower.tolist(), [1.0] * n, strict=True)),
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    p = np.clip(res.x, lower, 1.0)
    var = float(v2 @ p)
    if V + 1e-7 < var <= V * (1.0 + 1e-4) and np.any(v == 0):
        # SLSQP can stop a hair above the variance bound on long rows: move that much
        # probability to "no change" (sum, zero mean and the monotony towards v = 0 stay)
        t = 1.0 - V / var
        p = p * (1.0 - t)
        p[v == 0] += t
    ok = abs(p.sum() - 1.0) < 1e-7 and abs(vf @ p) < 1e-7 and v2 @ p <= V + 1e-7
    if not ok:
        raise InfeasibleError("no ptable row")
    return p / p.sum()


def intervals(frame: pl.DataFrame) -> pl.DataFrame:
    """Cumulative bounds rounded to 8 decimals, the last one 1, ``p`` their difference.

    The bounds are what the cell keys are compared with, so ``p`` is recomputed from them
    (as in the R package).
    """
    frame = frame.with_columns(pl.col("p").cum_sum().over("i").round(DIGITS).alias("p_int_ub"))
    frame = frame.with_columns(
        pl.when(pl.col("j") == pl.col("j").max().over("i"))
        .then(1.0)
        .otherwise(pl.col("p_int_ub"))
        .alias("p_int_ub")
    )
    frame = frame.with_columns(
        pl.col("p_int_ub").shift(1, fill_value=0.0).over("i").alias("p_int_lb")
    ).with_columns((pl.col("p_int_ub") - pl.col("p_int_lb")).alias("p"))
    return frame.select("i", "j", "v", "p", "p_int_lb", "p_int_ub")
