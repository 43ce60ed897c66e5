"""Optimal univariate microaggregation (Hansen & Mukherjee 2003; methods.md M6.3).

The optimal k-partition of sorted values has contiguous groups of ``k .. 2k-1`` records; it is
a shortest path over prefix sums: ``D[j] = min_{j-2k+1 <= i <= j-k} D[i] + SSE(x[i:j])``,
O(nk) time.  The values are centred before the prefix sums for numerical stability.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["optimal_univariate_labels", "optimal_univariate_sse"]


@njit(cache=True)
def _optimal_univariate_sorted(x: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Hansen-Mukherjee on sorted ``x``: group start positions' labels and the optimal SSE."""
    n = x.shape[0]
    shift = 0.0
    for i in range(n):
        shift += x[i]
    shift /= n
    s1 = np.zeros(n + 1)
    s2 = np.zeros(n + 1)
    for i in range(n):
        v = x[i] - shift
        s1[i + 1] = s1[i] + v
        s2[i + 1] = s2[i] + v * v
    inf = np.inf
    cost = np.full(n + 1, inf)
    prev = np.full(n + 1, -1, dtype=np.int64)
    cost[0] = 0.0
    for j in range(k, n + 1):
        lo = max(0, j - 2 * k + 1)
        hi = j - k
        best = inf
        arg = -1
        for i in range(lo, hi + 1):
            if cost[i] == inf:
                continue
            cnt = j - i
            a = s1[j] - s1[i]
            sse = (s2[j] - s2[i]) - a * a / cnt
            if sse < 0.0:
                sse = 0.0
            c = cost[i] + sse
            if c < best:
                best = c
                arg = i
        cost[j] = best
        prev[j] = arg
    labels_sorted = np.empty(n, dtype=np.int64)
    # backtrack: groups numbered from the end, then renumbered in increasing order
    j = n
    g = 0
    while j > 0:
        i = prev[j]
        for t in range(i, j):
            labels_sorted[t] = g
        g += 1
        j = i
    for t in range(n):
        labels_sorted[t] = g - 1 - labels_sorted[t]
    return labels_sorted, cost[n]


def optimal_univariate_labels(x: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Optimal univariate k-partition of ``x`` (labels in input order, minimal SSE).

    Requires ``len(x) >= k``.  Groups are contiguous in the sorted order and have ``k .. 2k-1``
    records.  The SSE is the within-group sum of squares of ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    labels_sorted, sse = _optimal_univariate_sorted(x[order], int(k))
    labels = np.empty_like(labels_sorted)
    labels[order] = labels_sorted
    return labels, float(sse)


def optimal_univariate_sse(x: np.ndarray, k: int) -> float:
    """Minimal within-group sum of squares of a univariate k-partition of ``x``."""
    return optimal_univariate_labels(x, k)[1]
