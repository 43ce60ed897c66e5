"""Numba kernels of microaggregation: MDAV and optimal univariate (Hansen-Mukherjee).

methods.md M6.1 and M6.3.  The kernels take standardised data and return group labels; the
public API (standardisation, strata, aggregation, results) is in
:mod:`sdckit.masking.microaggregation`.

MDAV keeps the remaining records in a column-major ``(p, m)`` array and removes a group by
swapping its records with the last active ones, so that every distance pass runs over contiguous
memory and vectorises.  Ties in an argmax or argmin go to the record with the lowest original
index, which makes the partition independent of the storage order.  The search for the record
farthest from the centroid of the remaining records is pruned with the triangle inequality
around a pivot (an earlier centroid): only records whose distance bound can beat the current best
are measured exactly.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["mdav_labels", "optimal_univariate_labels", "optimal_univariate_sse"]


@njit(cache=True)
def _sqdist_pass(zt: np.ndarray, m: int, q: np.ndarray, d: np.ndarray) -> None:
    """``d[i] = ||zt[:, i] - q||^2`` for the first ``m`` records (column-major data)."""
    p = zt.shape[0]
    for i in range(m):
        d[i] = 0.0
    for j in range(p):
        qj = q[j]
        row = zt[j]
        for i in range(m):
            t = row[i] - qj
            d[i] += t * t


@njit(cache=True)
def _sqdist_one(zt: np.ndarray, i: int, q: np.ndarray) -> float:
    s = 0.0
    for j in range(zt.shape[0]):
        t = zt[j, i] - q[j]
        s += t * t
    return s


@njit(cache=True)
def _argmax_tie_low(d: np.ndarray, m: int, idx: np.ndarray) -> int:
    best = 0
    for i in range(1, m):
        if d[i] > d[best] or (d[i] == d[best] and idx[i] < idx[best]):
            best = i
    return best


@njit(cache=True)
def _k_smallest(d: np.ndarray, m: int, idx: np.ndarray, k: int, out: np.ndarray) -> None:
    """Positions of the ``k`` smallest ``d`` (ties to the lowest original index), in ``out``."""
    sel_d = np.empty(k)
    sel_i = np.empty(k, dtype=np.int64)
    count = 0
    for i in range(m):
        di = d[i]
        if count == k:
            last = k - 1
            if di > sel_d[last] or (di == sel_d[last] and idx[i] > idx[sel_i[last]]):
                continue
            pos = last
        else:
            pos = count
            count += 1
        # insertion into the sorted selection
        while pos > 0 and (
            sel_d[pos - 1] > di or (sel_d[pos - 1] == di and idx[sel_i[pos - 1]] > idx[i])
        ):
            sel_d[pos] = sel_d[pos - 1]
            sel_i[pos] = sel_i[pos - 1]
            pos -= 1
        sel_d[pos] = di
        sel_i[pos] = i
    for t in range(k):
        out[t] = sel_i[t]


@njit(cache=True)
def _remove(
    positions: np.ndarray,
    zt: np.ndarray,
    idx: np.ndarray,
    dc: np.ndarray,
    m: int,
    labels: np.ndarray,
    label: int,
    colsum: np.ndarray,
) -> int:
    """Label and remove the records at ``positions``; return the new active count."""
    pos_sorted = np.sort(positions)[::-1]
    p = zt.shape[0]
    for t in range(pos_sorted.shape[0]):
        i = pos_sorted[t]
        labels[idx[i]] = label
        for j in range(p):
            colsum[j] -= zt[j, i]
        last = m - 1
        if i != last:
            for j in range(p):
                zt[j, i] = zt[j, last]
            idx[i] = idx[last]
            dc[i] = dc[last]
        m -= 1
    return m


@njit(cache=True)
def _farthest_from_centroid(
    zt: np.ndarray,
    idx: np.ndarray,
    dc: np.ndarray,
    m: int,
    colsum: np.ndarray,
    pivot: np.ndarray,
    d: np.ndarray,
) -> int:
    """Active position farthest from the centroid (pruned by the pivot bound ``dc``)."""
    p = zt.shape[0]
    c = colsum / m
    drift = 0.0
    for j in range(p):
        t = c[j] - pivot[j]
        drift += t * t
    drift = np.sqrt(drift)
    # start from the record farthest from the pivot
    start = 0
    for i in range(1, m):
        if dc[i] > dc[start]:
            start = i
    best = start
    best_d = _sqdist_one(zt, start, c)
    bound = np.sqrt(best_d) * (1.0 - 1e-9) - 1e-12
    n_exact = 0
    for i in range(m):
        if dc[i] + drift < bound or i == start:
            continue
        n_exact += 1
        e = _sqdist_one(zt, i, c)
        if e > best_d or (e == best_d and idx[i] < idx[best]):
            best = i
            best_d = e
            bound = np.sqrt(best_d) * (1.0 - 1e-9) - 1e-12
    if n_exact * 8 > m:  # the bound has become weak: move the pivot to the centroid
        _sqdist_pass(zt, m, c, d)
        for i in range(m):
            dc[i] = np.sqrt(d[i])
        for j in range(p):
            pivot[j] = c[j]
    return best


@njit(cache=True)
def _group_around(
    zt: np.ndarray, idx: np.ndarray, m: int, centre: int, k: int, d: np.ndarray, out: np.ndarray
) -> None:
    """``centre`` and its k-1 nearest active records (``d`` must hold distances to it)."""
    saved = d[centre]
    d[centre] = -1.0
    _k_smallest(d, m, idx, k, out)
    d[centre] = saved


@njit(cache=True)
def mdav_labels(z: np.ndarray, k: int) -> np.ndarray:
    """MDAV group labels (0, 1, ... in order of formation) of the rows of ``z`` (n, p).

    ``z`` should already be standardised.  Groups have exactly ``k`` records except the last,
    which has ``k .. 2k-1`` (or all records when ``n < 2k``).
    """
    n, p = z.shape
    labels = np.full(n, -1, dtype=np.int64)
    if n < 2 * k:
        labels[:] = 0
        return labels
    zt = np.ascontiguousarray(z.T).copy()
    idx = np.arange(n)
    d = np.empty(n)
    colsum = np.zeros(p)
    for j in range(p):
        s = 0.0
        for i in range(n):
            s += zt[j, i]
        colsum[j] = s
    pivot = colsum / n
    _sqdist_pass(zt, n, pivot, d)
    dc = np.sqrt(d[:n])
    grp = np.empty(k, dtype=np.int64)
    m = n
    label = 0
    q = np.empty(p)
    while m >= 3 * k:
        r = _farthest_from_centroid(zt, idx, dc, m, colsum, pivot, d)
        for j in range(p):
            q[j] = zt[j, r]
        _sqdist_pass(zt, m, q, d)
        s = _argmax_tie_low(d, m, idx)
        s_orig = idx[s]
        for j in range(p):  # keep s's coordinates: its position may change on removal
            q[j] = zt[j, s]
        _group_around(zt, idx, m, r, k, d, grp)
        m = _remove(grp, zt, idx, dc, m, labels, label, colsum)
        label += 1
        if labels[s_orig] >= 0:  # degenerate data (s fell into the first group)
            continue
        _sqdist_pass(zt, m, q, d)
        s_pos = -1
        for i in range(m):
            if idx[i] == s_orig:
                s_pos = i
                break
        _group_around(zt, idx, m, s_pos, k, d, grp)
        m = _remove(grp, zt, idx, dc, m, labels, label, colsum)
        label += 1
    if m >= 2 * k:
        c = colsum / m
        _sqdist_pass(zt, m, c, d)
        r = _argmax_tie_low(d, m, idx)
        for j in range(p):
            q[j] = zt[j, r]
        _sqdist_pass(zt, m, q, d)
        _group_around(zt, idx, m, r, k, d, grp)
        m = _remove(grp, zt, idx, dc, m, labels, label, colsum)
        label += 1
    for i in range(m):
        labels[idx[i]] = label
    return labels


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
