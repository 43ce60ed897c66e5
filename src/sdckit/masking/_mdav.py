"""Numba kernel of MDAV microaggregation (methods.md M6.1).

The kernel takes standardised data and returns group labels; the
public API (standardisation, strata, aggregation, results) is in
:mod:`sdckit.masking._microaggregation`.

MDAV keeps the remaining records in a column-major ``(p, m)`` array and removes a group by
swapping its records with the last active ones, so that every distance pass runs over contiguous
memory and vectorises.  The passes run in float32 (half the memory traffic); one scan keeps the
few smallest and largest float32 distances, and every decision is taken on exact float64
distances among the records that the float32 error bound cannot exclude (a full scan when the
short lists do not settle it).  Ties in an argmax or argmin go to the record with the lowest
original index, which makes the partition independent of the storage order and equal to a plain
float64 implementation (tests compare with one).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["mdav_labels"]


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
def _sqdist_pass32(zt: np.ndarray, m: int, q: np.ndarray, d: np.ndarray) -> None:
    """Float32 screening distances: four coordinates per sweep (less traffic on ``d``)."""
    p = zt.shape[0]
    j = 0
    first = True
    while j < p:
        if p - j >= 4:
            r0, r1, r2, r3 = zt[j], zt[j + 1], zt[j + 2], zt[j + 3]
            q0, q1, q2, q3 = q[j], q[j + 1], q[j + 2], q[j + 3]
            for i in range(m):
                a = r0[i] - q0
                b = r1[i] - q1
                c = r2[i] - q2
                e = r3[i] - q3
                v = (a * a + b * b) + (c * c + e * e)
                d[i] = v if first else d[i] + v
            j += 4
        elif p - j >= 2:
            r0, r1 = zt[j], zt[j + 1]
            q0, q1 = q[j], q[j + 1]
            for i in range(m):
                a = r0[i] - q0
                b = r1[i] - q1
                v = a * a + b * b
                d[i] = v if first else d[i] + v
            j += 2
        else:
            r0 = zt[j]
            q0 = q[j]
            for i in range(m):
                a = r0[i] - q0
                d[i] = a * a if first else d[i] + a * a
            j += 1
        first = False


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
    zt32: np.ndarray,
    idx: np.ndarray,
    m: int,
    labels: np.ndarray,
    label: int,
    colsum: np.ndarray,
) -> int:
    """Label and remove the records at ``positions``; return the new active count."""
    p = zt.shape[0]
    orig = np.empty(positions.shape[0], dtype=np.int64)
    for t in range(positions.shape[0]):
        orig[t] = idx[positions[t]]
    order = np.argsort(orig)
    for t in range(positions.shape[0]):  # in original index order (same sums in every kernel)
        i = positions[order[t]]
        for j in range(p):
            colsum[j] -= zt[j, i]
    pos_sorted = np.sort(positions)[::-1]
    for t in range(pos_sorted.shape[0]):
        i = pos_sorted[t]
        labels[idx[i]] = label
        last = m - 1
        if i != last:
            for j in range(p):
                zt[j, i] = zt[j, last]
                zt32[j, i] = zt32[j, last]
            idx[i] = idx[last]
        m -= 1
    return m


@njit(cache=True)
def _argmax_exact(
    zt: np.ndarray,
    idx: np.ndarray,
    m: int,
    q: np.ndarray,
    d32: np.ndarray,
    eps: float,
) -> int:
    """Exact farthest record from ``q`` among those the float32 distances cannot exclude."""
    top = d32[0]
    for i in range(1, m):
        if d32[i] > top:
            top = d32[i]
    thr = top - 2.0 * eps
    best = -1
    best_d = -1.0
    for i in range(m):
        if d32[i] < thr:
            continue
        e = _sqdist_one(zt, i, q)
        if e > best_d or (e == best_d and idx[i] < idx[best]):
            best = i
            best_d = e
    return best


@njit(cache=True)
def _group_around(
    zt: np.ndarray,
    idx: np.ndarray,
    m: int,
    centre: int,
    q: np.ndarray,
    k: int,
    d32: np.ndarray,
    eps: float,
    buf_d: np.ndarray,
    buf_i: np.ndarray,
    out: np.ndarray,
) -> None:
    """``centre`` and its k-1 nearest active records, in ``out``.

    ``d32`` holds float32 distances to ``q`` (the centre's coordinates), exact within ``eps``:
    the (k-1)-th smallest of them bounds the candidates, which are then ranked exactly.
    """
    out[0] = centre
    if k == 1:
        return
    saved = d32[centre]
    d32[centre] = -1.0
    _k_smallest(d32, m, idx, k, out)
    thr = d32[out[k - 1]] + 2.0 * eps
    d32[centre] = saved
    count = 0
    for i in range(m):
        if i != centre and d32[i] <= thr:
            buf_d[count] = _sqdist_one(zt, i, q)
            buf_i[count] = idx[i]  # rank by original index on ties
            count += 1
    sel = np.empty(k - 1, dtype=np.int64)
    _k_smallest(buf_d, count, buf_i, k - 1, sel)
    # map the chosen candidates back to positions
    for i in range(m):
        if i != centre and d32[i] <= thr:
            for u in range(k - 1):
                if buf_i[sel[u]] == idx[i]:
                    out[u + 1] = i


@njit(cache=True)
def _eps(zt: np.ndarray, max_norm2: float, q: np.ndarray) -> float:
    """Bound on |float32 distance - float64 distance| for queries at ``q``."""
    p = zt.shape[0]
    qn = 0.0
    for j in range(p):
        qn += q[j] * q[j]
    return 2.0**-20 * (4.0 + 2.0 * p) * (max_norm2 + qn)


@njit(cache=True)
def _extremes(
    d32: np.ndarray,
    m: int,
    low_pos: np.ndarray,
    low_val: np.ndarray,
    high_pos: np.ndarray,
    high_val: np.ndarray,
) -> None:
    """One scan: the ``len(low_pos)`` smallest and ``len(high_pos)`` largest of ``d32[:m]``.

    Lists are sorted (ascending / descending); unused slots hold +inf / -inf and -1.  Blocks
    of 64 values are first tested as a whole (a vectorised count), most are skipped.
    """
    n_low = low_pos.shape[0]
    n_high = high_pos.shape[0]
    low_val[:] = np.inf
    low_pos[:] = -1
    high_val[:] = -np.inf
    high_pos[:] = -1
    lo_thr = np.float32(np.inf) if n_low > 0 else np.float32(-np.inf)
    hi_thr = np.float32(-np.inf) if n_high > 0 else np.float32(np.inf)
    for start in range(0, m, 64):
        end = min(start + 64, m)
        hit = 0
        for i in range(start, end):
            v = d32[i]
            hit += (v < lo_thr) | (v > hi_thr)
        if hit == 0:
            continue
        for i in range(start, end):
            v = d32[i]
            if v < lo_thr:
                t = n_low - 1
                while t > 0 and low_val[t - 1] > v:
                    low_val[t] = low_val[t - 1]
                    low_pos[t] = low_pos[t - 1]
                    t -= 1
                low_val[t] = v
                low_pos[t] = i
                lo_thr = low_val[n_low - 1]
            if v > hi_thr:
                t = n_high - 1
                while t > 0 and high_val[t - 1] < v:
                    high_val[t] = high_val[t - 1]
                    high_pos[t] = high_pos[t - 1]
                    t -= 1
                high_val[t] = v
                high_pos[t] = i
                hi_thr = high_val[n_high - 1]


@njit(cache=True)
def _farthest_fast(
    zt: np.ndarray,
    idx: np.ndarray,
    m: int,
    q: np.ndarray,
    d32: np.ndarray,
    eps: float,
    high_pos: np.ndarray,
    high_val: np.ndarray,
) -> int:
    """Exact farthest record from ``q``, from the float32 top list (full scan if needed)."""
    n_high = high_pos.shape[0]
    thr = high_val[0] - 2.0 * eps
    if high_pos[n_high - 1] >= 0 and high_val[n_high - 1] >= thr:
        return _argmax_exact(zt, idx, m, q, d32, eps)
    best = -1
    best_d = -1.0
    for t in range(n_high):
        i = high_pos[t]
        if i < 0 or high_val[t] < thr:
            break
        e = _sqdist_one(zt, i, q)
        if e > best_d or (e == best_d and idx[i] < idx[best]):
            best = i
            best_d = e
    return best


@njit(cache=True)
def _group_fast(
    zt: np.ndarray,
    idx: np.ndarray,
    m: int,
    centre: int,
    q: np.ndarray,
    k: int,
    d32: np.ndarray,
    eps: float,
    low_pos: np.ndarray,
    low_val: np.ndarray,
    buf_d: np.ndarray,
    buf_i: np.ndarray,
    out: np.ndarray,
) -> None:
    """``centre`` and its k-1 nearest records, from the float32 low list (full scan if needed)."""
    out[0] = centre
    if k == 1:
        return
    n_low = low_pos.shape[0]
    # the (k-1)-th smallest value among the others
    seen = 0
    thr = np.inf
    for t in range(n_low):
        if low_pos[t] < 0:
            break
        if low_pos[t] == centre:
            continue
        seen += 1
        if seen == k - 1:
            thr = low_val[t] + 2.0 * eps
            break
    if seen < k - 1 or (low_pos[n_low - 1] >= 0 and low_val[n_low - 1] <= thr):
        _group_around(zt, idx, m, centre, q, k, d32, eps, buf_d, buf_i, out)
        return
    count = 0
    for t in range(n_low):
        i = low_pos[t]
        if i < 0 or low_val[t] > thr:
            break
        if i == centre:
            continue
        buf_d[count] = _sqdist_one(zt, i, q)
        buf_i[count] = idx[i]
        count += 1
    sel = np.empty(k - 1, dtype=np.int64)
    _k_smallest(buf_d, count, buf_i, k - 1, sel)
    for u in range(k - 1):
        orig = buf_i[sel[u]]
        for t in range(n_low):
            if low_pos[t] >= 0 and idx[low_pos[t]] == orig:
                out[u + 1] = low_pos[t]
                break


@njit(cache=True)
def mdav_labels(z: np.ndarray, k: int) -> np.ndarray:
    """MDAV group labels (0, 1, ... in order of formation) of the rows of ``z`` (n, p).

    ``z`` should already be standardised.  Groups have exactly ``k`` records except the last,
    which has ``k .. 2k-1`` (or all records when ``n < 2k``).  Distance passes run in float32
    (half the memory traffic); every decision is then taken on exact float64 distances among
    the records the float32 values cannot exclude, so the result is that of float64 MDAV.
    """
    n, p = z.shape
    labels = np.full(n, -1, dtype=np.int64)
    if n < 2 * k:
        labels[:] = 0
        return labels
    zt = np.ascontiguousarray(z.T).copy()
    zt32 = zt.astype(np.float32)
    idx = np.arange(n)
    d = np.empty(n)
    d32 = np.empty(n, dtype=np.float32)
    buf_d = np.empty(n)
    buf_i = np.empty(n, dtype=np.int64)
    max_norm2 = 0.0
    for i in range(n):
        s = 0.0
        for j in range(p):
            s += z[i, j] * z[i, j]
        if s > max_norm2:
            max_norm2 = s
    colsum = np.zeros(p)
    for j in range(p):
        s = 0.0
        for i in range(n):
            s += zt[j, i]
        colsum[j] = s
    grp = np.empty(k, dtype=np.int64)
    m = n
    label = 0
    q = np.empty(p)
    q32 = np.empty(p, dtype=np.float32)
    qs = np.empty(p)
    low_pos = np.empty(k + 16, dtype=np.int64)
    low_val = np.empty(k + 16, dtype=np.float32)
    high_pos = np.empty(16, dtype=np.int64)
    high_val = np.empty(16, dtype=np.float32)
    no_pos = np.empty(0, dtype=np.int64)
    no_val = np.empty(0, dtype=np.float32)
    while m >= 3 * k:
        c = colsum / m
        for j in range(p):
            q32[j] = c[j]
        _sqdist_pass32(zt32, m, q32, d32)
        _extremes(d32, m, no_pos, no_val, high_pos, high_val)
        r = _farthest_fast(zt, idx, m, c, d32, _eps(zt, max_norm2, c), high_pos, high_val)
        for j in range(p):
            q[j] = zt[j, r]
            q32[j] = zt32[j, r]
        eps = _eps(zt, max_norm2, q)
        _sqdist_pass32(zt32, m, q32, d32)
        _extremes(d32, m, low_pos, low_val, high_pos, high_val)
        s = _farthest_fast(zt, idx, m, q, d32, eps, high_pos, high_val)
        s_orig = idx[s]
        for j in range(p):  # keep s's coordinates: its position may change on removal
            qs[j] = zt[j, s]
            q32[j] = zt32[j, s]
        _group_fast(zt, idx, m, r, q, k, d32, eps, low_pos, low_val, buf_d, buf_i, grp)
        m = _remove(grp, zt, zt32, idx, m, labels, label, colsum)
        label += 1
        if labels[s_orig] >= 0:  # degenerate data (s fell into the first group)
            continue
        eps = _eps(zt, max_norm2, qs)
        _sqdist_pass32(zt32, m, q32, d32)
        _extremes(d32, m, low_pos, low_val, no_pos, no_val)
        s_pos = -1
        for i in range(m):
            if idx[i] == s_orig:
                s_pos = i
                break
        _group_fast(zt, idx, m, s_pos, qs, k, d32, eps, low_pos, low_val, buf_d, buf_i, grp)
        m = _remove(grp, zt, zt32, idx, m, labels, label, colsum)
        label += 1
    if m >= 2 * k:
        c = colsum / m
        _sqdist_pass(zt, m, c, d)
        r = _argmax_tie_low(d, m, idx)
        for j in range(p):
            q[j] = zt[j, r]
            q32[j] = zt32[j, r]
        _sqdist_pass32(zt32, m, q32, d32)
        _group_around(zt, idx, m, r, q, k, d32, _eps(zt, max_norm2, q), buf_d, buf_i, grp)
        m = _remove(grp, zt, zt32, idx, m, labels, label, colsum)
        label += 1
    for i in range(m):
        labels[idx[i]] = label
    return labels
