"""Arithmetic modulo the Mersenne prime ``P = 2**61 - 1`` and column fingerprints for the
Gauss kernel (``_gauss_kernel.py``; the records of arrays are those of ``_gauss_state.py``).

Fingerprints.  Every tracked column (a primary, or the cell of a respondent with one
single-contributor cell) carries two random linear functionals of itself modulo P,
``h(col) = sum_i w_i * M[i, col]`` with random row weights ``w`` (two independent sets), and
the key ``h1 / h2`` (``P`` when ``h2 = 0``).  Proportional columns have equal keys, always
(the functionals are linear); unequal columns collide with probability about ``1 / P``, and
every collision is checked exactly on the rows before it counts.  So rule R1 (a primary
proportional to one respondent's cell) is found by looking keys up in a hash table instead of
scanning rows: the work per update is the length of the pivot row, where scanning a row for
every changed column took its square (98 % of a five-dimensional table's time).

An update replaces row ``i`` by ``(alpha_i * row_i - beta_i * pivot) / g_i`` (modulo P with
``alpha_i = g_i = 1``) and drops the pivot row ``p``.  With the weight of row ``i`` rescaled to
``w_i * g_i / alpha_i``, the columns outside the pivot row keep their fingerprint, and a
column of the pivot row gets ``h - M[p, col] * (w_p + sum_i w_i * beta_i / alpha_i)``.  A
tentative update computes the new fingerprints aside (``check``) and stores them only when the
update stands (``commit``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "ATT",
    "LIVE",
    "PRIM",
    "P",
    "commit",
    "init",
    "invmod",
    "matches",
    "mulmod",
    "rank_mod",
    "residue",
    "table_size",
    "update_keys",
]

P = (1 << 61) - 1
_M31 = (1 << 31) - 1
_M30 = (1 << 30) - 1


@njit(cache=True, inline="always")
def mulmod(a, b):
    """``a * b mod P`` for residues ``a, b`` in ``[0, P)``, in int64 without overflow.

    With ``a = ah 2^31 + al`` and ``b = bh 2^31 + bl``: ``2^62 = 2`` and ``2^61 = 1`` mod P,
    so ``a b = 2 ah bh + mid 2^31 + al bl`` with every partial sum below ``2^63``.  (The casts
    let the floating-point kernel compile; it never calls this.)
    """
    a = np.int64(a)
    b = np.int64(b)
    ah = a >> 31
    al = a & _M31
    bh = b >> 31
    bl = b & _M31
    mid = ah * bl + al * bh  # < 2^62
    lo = al * bl  # < 2^62
    r = ((ah * bh) << 1) + (mid >> 30) + ((mid & _M30) << 31) + (lo & P) + (lo >> 61)
    r = (r & P) + (r >> 61)
    if r >= P:
        r -= P
    return r


@njit(cache=True)
def invmod(a):
    """The inverse of the non-zero residue ``a`` modulo P (``a ** (P - 2)``)."""
    result = np.int64(1)
    base = np.int64(a)
    e = P - 2
    while e > 0:
        if e & 1:
            result = mulmod(result, base)
        base = mulmod(base, base)
        e >>= 1
    return result


@njit(cache=True, inline="always")
def residue(v):
    """The residue of the integer ``v`` modulo P, in ``[0, P)``."""
    r = v % P
    if r < 0:
        r += P
    return r


@njit(cache=True)
def rank_mod(a):
    """Rank modulo P of the residue matrix ``a`` (overwritten): fraction-free elimination,
    ``row_r <- pivot * row_r - a_rq * row_pivot``."""
    nr, nc = a.shape
    rank = 0
    for q in range(nc):
        if rank >= nr:
            break
        piv = -1
        for r in range(rank, nr):
            if a[r, q] != 0:
                piv = r
                break
        if piv < 0:
            continue
        if piv != rank:
            for x in range(nc):
                t = a[rank, x]
                a[rank, x] = a[piv, x]
                a[piv, x] = t
        p0 = a[rank, q]
        for r in range(rank + 1, nr):
            f = a[r, q]
            if f == 0:
                continue
            for x in range(q, nc):
                v = mulmod(p0, a[r, x]) - mulmod(f, a[rank, x])
                if v < 0:
                    v += P
                a[r, x] = v
        rank += 1
    return rank


# --------------------------------------------------------------------------- fingerprints
# column flags (the kernel's)
LIVE = 1  # held in the rows (an undecided candidate, a primary or a respondent's cell)
PRIM = 2  # a primary that must not be computable
ATT = 4  # an unpublished single-contributor inner cell: its respondent knows its value
_EMPTY = -1
_GONE = -2
_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64


def table_size(n_tracked: int) -> int:
    """Slots of the hash table: a power of two, at least four per tracked column."""
    size = 1024
    while size < 4 * n_tracked:
        size *= 2
    return size


@njit(cache=True, inline="always")
def _slot(key, mask):
    x = key ^ (key >> 29)
    x = x * _MIX
    return (x ^ (x >> 32)) & mask


@njit(cache=True)
def _insert(key, col, tkey, tcol, tstat):
    mask = tkey.shape[0] - 1
    s = _slot(key, mask)
    while tkey[s] != _EMPTY and tkey[s] != _GONE:
        s = (s + 1) & mask
    if tkey[s] == _EMPTY:
        tstat[0] += 1  # slots ever used (entries and tombstones)
    tkey[s] = key
    tcol[s] = col


@njit(cache=True)
def _delete(key, col, tkey, tcol):
    mask = tkey.shape[0] - 1
    s = _slot(key, mask)
    while tkey[s] != _EMPTY:
        if tkey[s] == key and tcol[s] == col:
            tkey[s] = _GONE
            return
        s = (s + 1) & mask


@njit(cache=True)
def _key(a, b):
    if b == 0:
        return P
    return mulmod(a, invmod(b))


@njit(cache=True)
def _tracked(col, flags, cgrp, gsize):
    """0: not tracked; bit 1: a live primary; bit 2: a live one-cell respondent's cell."""
    f = flags[col]
    if (f & LIVE) == 0:
        return 0
    t = 0
    if f & PRIM:
        t |= 1
    if (f & ATT) and gsize[cgrp[col]] == 1:
        t |= 2
    return t


@njit(cache=True)
def init(col_ptr, col_row, flags, resp, fpr):
    """Fingerprints of the tracked columns of the model matrix (entries 1), and the table
    (``resp``: the :class:`Respondents`, ``fpr``: the :class:`Fingerprints` to fill)."""
    cgrp, gsize = resp.cgrp, resp.gsize
    w1, w2, h1, h2, keyof = fpr.w1, fpr.w2, fpr.h1, fpr.h2, fpr.keyof
    tkey, tcol, tstat = fpr.tkey, fpr.tcol, fpr.tstat
    tkey[:] = _EMPTY
    tstat[0] = 0
    for c in range(flags.shape[0]):
        if not _tracked(c, flags, cgrp, gsize):
            continue
        a = np.int64(0)
        b = np.int64(0)
        for t in range(col_ptr[c], col_ptr[c + 1]):
            r = col_row[t]
            a += w1[r]
            if a >= P:
                a -= P
            b += w2[r]
            if b >= P:
                b -= P
        h1[c] = a
        h2[c] = b
        keyof[c] = _key(a, b)
        _insert(keyof[c], c, tkey, tcol, tstat)


@njit(cache=True)
def update_keys(fpr, k, n_p, integer, flags, resp, work, buf):
    """The fingerprints after an update (see the module docstring), computed aside.

    The update dropped the pivot row ``jr[0]`` (its live columns and values ``prv_c`` /
    ``prv_v[:n_p]`` of ``buf``) and replaced row ``jr[i]`` by ``(fa[i] * row - fb[i] *
    pivot) / fg[i]`` (``jr``, ``fa``, ``fb``, ``fg`` of ``work``).  Writes to ``fpr`` the
    rows' new weights (``nw1`` / ``nw2``, per ``i``; ``integer`` arithmetic only) and, for
    the tracked columns of the pivot row, their numbers ``ccol``, new fingerprints ``nh1`` /
    ``nh2`` and keys ``nkey``.  Returns how many.
    """
    jr, fa, fb, fg = work.jr, work.fa, work.fb, work.fg
    prv_c, prv_v = buf.prv_c, buf.prv_v
    cgrp, gsize = resp.cgrp, resp.gsize
    w1, w2, h1, h2, nw1, nw2 = fpr.w1, fpr.w2, fpr.h1, fpr.h2, fpr.nw1, fpr.nw2
    ccol, nh1, nh2, nkey = fpr.ccol, fpr.nh1, fpr.nh2, fpr.nkey
    s1 = w1[jr[0]]
    s2 = w2[jr[0]]
    for i in range(1, k):
        j = jr[i]
        a = residue(np.int64(fa[i]))
        inv = a if (a == 1 or a == P - 1) else invmod(a)
        f = mulmod(residue(np.int64(fb[i])), inv)
        s1 += mulmod(w1[j], f)
        if s1 >= P:
            s1 -= P
        s2 += mulmod(w2[j], f)
        if s2 >= P:
            s2 -= P
        if integer:
            g = mulmod(residue(np.int64(fg[i])), inv)
            nw1[i] = mulmod(w1[j], g)
            nw2[i] = mulmod(w2[j], g)
    n = 0
    for t in range(n_p):
        col = prv_c[t]
        kind = _tracked(col, flags, cgrp, gsize)
        if kind == 0:
            continue
        v = residue(np.int64(prv_v[t]))
        a = h1[col] - mulmod(v, s1)
        if a < 0:
            a += P
        b = h2[col] - mulmod(v, s2)
        if b < 0:
            b += P
        ccol[n] = col
        nh1[n] = a
        nh2[n] = b
        n += 1
    # keys h1 / h2 with one inverse for all (Montgomery's trick: prefix products in nkey)
    run = np.int64(1)
    for i in range(n):
        if nh2[i] != 0:
            run = mulmod(run, nh2[i])
        nkey[i] = run
    inv = invmod(run)
    for i in range(n - 1, -1, -1):
        if nh2[i] == 0:
            nkey[i] = P
            continue
        before = nkey[i - 1] if i > 0 else np.int64(1)
        inv_i = mulmod(inv, before)  # 1 / nh2[i]
        inv = mulmod(inv, nh2[i])  # 1 / (the product of the entries before i)
        nkey[i] = mulmod(nh1[i], inv_i)
    return n


@njit(cache=True)
def matches(fpr, n, cstamp, tag, flags, resp):
    """Pairs (primary, one-cell respondent's cell, not his own) to check exactly after the
    update: one per key that a changed column has.

    Columns with equal keys are proportional (with probability ``1 - 2 / P`` for columns that
    are not: two fingerprints), so a key's group (the changed columns with that key and the
    unchanged ones in the table) breaks rule R1 exactly when it holds a primary and a
    respondent's cell that are not his own, and one such pair, checked exactly, decides it
    (a pair that fails the exact check is a collision: the caller then scans).  Returns the
    number of pairs written to ``out_a`` / ``out_b`` (-1: more keys than they hold).
    """
    ccol, nkey, keyof, tkey, tcol = fpr.ccol, fpr.nkey, fpr.keyof, fpr.tkey, fpr.tcol
    members, out_a, out_b = fpr.members, fpr.out_a, fpr.out_b
    cgrp, gsize, own = resp.cgrp, resp.gsize, resp.own
    for i in range(n):
        cstamp[ccol[i]] = tag
    order = np.argsort(nkey[:n])
    mask = tkey.shape[0] - 1
    n_out = 0
    lo = 0
    while lo < n:
        key = nkey[order[lo]]
        hi = lo + 1
        while hi < n and nkey[order[hi]] == key:
            hi += 1
        # the group: changed columns order[lo:hi], and the table's unchanged ones
        n_m = 0
        for u in range(lo, hi):
            members[n_m] = ccol[order[u]]
            n_m += 1
        s = _slot(key, mask)
        while tkey[s] != _EMPTY:
            if tkey[s] == key:
                y = tcol[s]
                fresh = cstamp[y] != tag and keyof[y] == key and n_m < members.shape[0]
                if fresh and _tracked(y, flags, cgrp, gsize):
                    members[n_m] = y
                    n_m += 1
            s = (s + 1) & mask
        # a primary x and a cell y of a respondent other than x's own
        first_att = -1
        other_att = -1
        for u in range(n_m):
            y = members[u]
            if _tracked(y, flags, cgrp, gsize) & 2:
                if first_att < 0:
                    first_att = y
                elif other_att < 0 and cgrp[y] != cgrp[first_att]:
                    other_att = y
        if first_att >= 0:
            found_x = -1
            found_y = -1
            for u in range(n_m):
                x = members[u]
                if (_tracked(x, flags, cgrp, gsize) & 1) == 0:
                    continue
                if x != first_att and own[x] != cgrp[first_att]:
                    found_x = x
                    found_y = first_att
                    break
                if other_att >= 0 and x != other_att and own[x] != cgrp[other_att]:
                    found_x = x
                    found_y = other_att
                    break
            if found_x >= 0:
                if n_out >= out_a.shape[0]:
                    return -1
                out_a[n_out] = found_x
                out_b[n_out] = found_y
                n_out += 1
        lo = hi
    return n_out


@njit(cache=True)
def commit(fpr, n, k, jr, integer, flags, resp):
    """Store the fingerprints that ``update_keys`` computed (the update stands)."""
    ccol, nh1, nh2, nkey, nw1, nw2 = fpr.ccol, fpr.nh1, fpr.nh2, fpr.nkey, fpr.nw1, fpr.nw2
    h1, h2, keyof, w1, w2 = fpr.h1, fpr.h2, fpr.keyof, fpr.w1, fpr.w2
    tkey, tcol, tstat = fpr.tkey, fpr.tcol, fpr.tstat
    cgrp, gsize = resp.cgrp, resp.gsize
    for i in range(n):
        col = ccol[i]
        if nkey[i] != keyof[col]:
            _delete(keyof[col], col, tkey, tcol)
            _insert(nkey[i], col, tkey, tcol, tstat)
        keyof[col] = nkey[i]
        h1[col] = nh1[i]
        h2[col] = nh2[i]
    if integer:
        for i in range(1, k):
            w1[jr[i]] = nw1[i]
            w2[jr[i]] = nw2[i]
    if 4 * tstat[0] > 3 * tkey.shape[0]:  # too many tombstones: insert the live keys again
        tkey[:] = _EMPTY
        tstat[0] = 0
        for col in range(flags.shape[0]):
            if _tracked(col, flags, cgrp, gsize):
                _insert(keyof[col], col, tkey, tcol, tstat)
