"""The numba kernel of secondary suppression by Gaussian elimination (see ``gauss.py``).

The kernel keeps a basis of the *moves*: changes of the non-empty inner cells that leave every
published cell unchanged.  Row ``i`` of the live matrix is a basis move, column ``c`` what the
moves do to cell ``c`` (its linear functional on the moves).  At the start the moves are the
unit changes of single inner cells (the rows of the model matrix ``X``).  A cell is computable
from the published cells exactly when its column is zero; a respondent who knows his own
single-contributor cells ``S`` computes cell ``b`` exactly when ``b``'s column lies in the span
of the columns of ``S``.  Both statements hold in any basis of the moves.

Publishing cell ``c`` keeps the moves that do not change ``c``: among the rows ``j_1 .. j_k``
with a non-zero in column ``c`` one pivot row ``p`` is dropped and every other row becomes
``x_p * row_j - x_j * row_p`` (divided by the gcd of its entries; modulo P, ``row_j - (x_j /
x_p) * row_p``).  The pivot (``_pivot``) is, in floating point, the row with the largest
``|x_p|`` (partial pivoting), then the shortest; in exact arithmetic a row with the smallest
``|x_p|`` (a unit where there is one, so that the other rows are not multiplied up and the
entries stay small; modulo P any), and among those the row whose columns the other rows share
most, since the update adds ``|row_p \\ row_j|`` entries to every other row (least fill-in;
half the entries merged of taking the shortest row on a five-dimensional table).  The span of
the moves, and so every decision, does not depend on the pivot, only the work and the size of
the entries do.  (A chained update, ``x_{i-1} * row_{j_i} - x_i * row_{j_{i-1}}``, meant to
reduce fill-in, multiplied the rows up: integer overflow on tables of a few hundred rows,
wrong decisions in floating point; tried again with unit values only and rows in table order,
its repeated differences still overflowed on an 18,720-cell table.)

Checks before publishing ``c``:

* R0 (a primary becomes computable: its column is proportional to ``c``'s), by comparing the
  columns of the primaries in the shortest row of ``c`` with ``c``'s, before any update;
* the singleton rules, after a tentative update of the rows (written in place, with an
  undo buffer of the old rows, their slots, counts and list heads): for every changed column,
  a primary proportional to the column of a respondent's single cell, or in the span of the
  columns of a respondent's several cells (small dense rank tests), and no combination of a
  respondent's primary single-contributor cells computable from the published cells or by
  another respondent.  For a respondent with several cells, a change of any one of his columns
  re-checks every primary and every other respondent sharing a row with *any* of his cells
  (a primary can fall into the span of his columns while sharing rows only with the ones
  that did not change).  A failed check undoes the update and suppresses ``c``.

Storage (plain arrays, grouped in the records of ``_gauss_state``: the live matrix, the
respondents, the work space, the growing buffers, the fingerprints): rows as sorted
``(column, value)`` blocks in the pool ``pc`` / ``pv`` (``rs`` start, ``rl`` length, ``rcap``
capacity; a row that grows moves to the end of the pool, compaction reclaims the garbage);
columns as lists of rows (``lp`` from ``cs``, ``cl``, plus a linked log ``lg_row`` /
``lg_next`` from ``chead`` for rows that gained the column later; stale
entries are checked against the row on reading); ``cnt`` the exact number of non-zeros of
every live column, with histograms of the counts of the primaries and of the respondents'
cells, which let most checks stop at one comparison.

Values are exact integers (``int64``; each new row is divided by the gcd of its entries; when
an entry reaches 2**31, every row is taken modulo the Mersenne prime ``P = 2**61 - 1`` and the
elimination goes on there, see ``run_chunk``), residues modulo P from the start, or
``float64`` with a relative tolerance.  Products modulo P are computed in int64 without
overflow (``_mulmod``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

import sdckit.tables.suppression._gauss_modular as fp
from sdckit.tables.suppression._gauss_modular import ATT, LIVE, PRIM, P
from sdckit.tables.suppression._gauss_modular import invmod as _invmod
from sdckit.tables.suppression._gauss_modular import mulmod as _mulmod
from sdckit.tables.suppression._gauss_modular import rank_mod as _rank_mod
from sdckit.tables.suppression._gauss_modular import residue as _residue
from sdckit.tables.suppression._gauss_state import Buffers, LiveMatrix

__all__ = ["ATT", "FLOAT", "INTEGER", "LIVE", "MODULAR", "PRIM", "P", "column_entries", "run_chunk"]

# column flags: LIVE, PRIM, ATT (from _gauss_modular)

# counters (ctr)
C_PTOP = 0  # end of the used row pool
C_LTOP = 1  # end of the used link log
C_OVER = 2  # an integer entry reached the limit: go on modulo P
C_STAMP = 3  # stamp counter
C_STEPS = 4  # cells published with an update of the moves
C_RGARB = 5  # garbage in the row pool
C_BROKEN = 6  # frozen cells published although a singleton rule failed
C_NATT = 7  # respondents' cells (attackers) alive
C_NMULTI = 8  # respondents with several single-contributor cells
C_WORK = 9  # work units (row entries merged)
C_UNDO = 10  # tentative updates undone
C_MODE = 11  # the arithmetic now: FLOAT, INTEGER or MODULAR
C_MOD_FROM = 12  # 1 + the position from which the elimination went on modulo P (0: never)
C_FP_PAIRS = 13  # pairs with equal fingerprint keys checked exactly
C_FP_SCANS = 14  # updates checked by scanning instead (too many keys, a frozen cell, a collision)
N_COUNTERS = 15

# arithmetic (the ``exact`` argument of the functions below)
FLOAT = 0  # float64 with a relative tolerance
INTEGER = 1  # exact integers (int64, rows divided by their gcd)
MODULAR = 2  # integers modulo the Mersenne prime P (int64 residues in [0, P))

# decisions
PUBLISHED = 1  # published, the moves updated
IN_SPAN = 2  # published, already computable from published cells
SECONDARY = 3  # suppressed: it would make a primary computable
SECONDARY_SINGLE = 4  # suppressed: a singleton rule (one respondent would compute a primary)
FORCED_UNSAFE = 5  # a frozen cell published although it discloses a primary
STOPPED = 6  # suppressed: not decided when the elimination stopped (its time limit)

_LIMIT = 1 << 31


@njit(cache=True, inline="always")
def _find(pc, start, length, col):
    lo = start
    hi = start + length
    while lo < hi:
        mid = (lo + hi) >> 1
        v = pc[mid]
        if v < col:
            lo = mid + 1
        elif v > col:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, inline="always")
def _gcd(a, b):
    a = abs(a)
    b = abs(b)
    while b != 0:
        a, b = b, a % b
    return a


@njit(cache=True, inline="always")
def _nonzero(v, scale, exact, tol):
    if exact:
        return v != 0
    return abs(v) > tol * scale


@njit(cache=True, inline="always")
def _next_stamp(ctr):
    ctr[C_STAMP] += 1
    return ctr[C_STAMP]


@njit(cache=True, inline="always")
def _set_cnt(col, new, cnt, flags, hist_p, hist_a):
    f = flags[col]
    if f & PRIM:
        hist_p[cnt[col]] -= 1
        hist_p[new] += 1
    if f & ATT:
        hist_a[cnt[col]] -= 1
        hist_a[new] += 1
    cnt[col] = new


@njit(cache=True, inline="always")
def _set_flags(col, new, cnt, flags, hist_p, hist_a, ctr):
    f = flags[col]
    if (f & PRIM) and not (new & PRIM):
        hist_p[cnt[col]] -= 1
    if (new & PRIM) and not (f & PRIM):
        hist_p[cnt[col]] += 1
    if (f & ATT) and not (new & ATT):
        hist_a[cnt[col]] -= 1
        ctr[C_NATT] -= 1
    if (new & ATT) and not (f & ATT):
        hist_a[cnt[col]] += 1
        ctr[C_NATT] += 1
    flags[col] = new


@njit(cache=True, inline="always")
def _collect(lv, c, stamp, tag, out_r, out_v):
    """Rows holding column ``c`` (checked, de-duplicated) with their values."""
    cs, cl, lp, chead, lg_row, lg_next = lv.cs, lv.cl, lv.lp, lv.chead, lv.lg_row, lv.lg_next
    ralive, rs, rl, pc, pv = lv.ralive, lv.rs, lv.rl, lv.pc, lv.pv
    k = 0
    for t in range(cs[c], cs[c] + cl[c]):
        k = _take(ralive, rs, rl, pc, pv, lp[t], c, stamp, tag, out_r, out_v, k)
    t = chead[c]
    while t >= 0:
        k = _take(ralive, rs, rl, pc, pv, lg_row[t], c, stamp, tag, out_r, out_v, k)
        t = lg_next[t]
    return k


@njit(cache=True, inline="always")
def _take(ralive, rs, rl, pc, pv, j, c, stamp, tag, out_r, out_v, k):
    """Row ``j`` of a column list of ``c`` as the ``k``-th row of ``c`` if it is live, not
    taken yet (``stamp``) and still holds ``c`` (lists keep stale entries); returns the
    count."""
    if ralive[j] and stamp[j] != tag:
        idx = _find(pc, rs[j], rl[j], c)
        if idx >= 0:
            stamp[j] = tag
            out_r[k] = j
            out_v[k] = pv[idx]
            k += 1
    return k


@njit(cache=True, inline="always")
def _shortest(rows, n, rl):
    """The shortest of the rows ``rows[:n]`` (a column proportional to one with these rows
    has a non-zero in each of them: scanning the shortest finds it)."""
    best = rows[0]
    for i in range(1, n):
        if rl[rows[i]] < rl[best]:
            best = rows[i]
    return best


@njit(cache=True, inline="always")
def _proportional(lv, q, rows, vals, n, exact, tol):
    """Whether column ``q`` is proportional to the vector ``vals[:n]`` on ``rows[:n]``.

    The caller has checked that ``q`` has exactly ``n`` non-zeros.
    """
    rs, rl, pc, pv = lv.rs, lv.rl, lv.pc, lv.pv
    i0 = _find(pc, rs[rows[0]], rl[rows[0]], q)
    if i0 < 0:
        return False
    x0 = pv[i0]
    for i in range(1, n):
        idx = _find(pc, rs[rows[i]], rl[rows[i]], q)
        if idx < 0:
            return False
        if exact == MODULAR:
            if _mulmod(pv[idx], vals[0]) != _mulmod(vals[i], x0):
                return False
            continue
        lhs = pv[idx] * vals[0]
        rhs = vals[i] * x0
        if _nonzero(lhs - rhs, abs(lhs) + abs(rhs), exact, tol):
            return False
    return True


@njit(cache=True, inline="always")
def _merge(lv, buf, n_c, alpha, n_p, beta, exact, tol):
    """``alpha * cur - beta * prev`` (``cur_c`` / ``cur_v[:n_c]``, ``prv_c`` /
    ``prv_v[:n_p]`` of ``buf``) into ``s_c``/``s_v`` (modulo P: ``cur - beta * prev``, the
    caller passing ``beta = b / a``).

    Updates the counts of the columns that the row gains or loses; the gained columns go to
    ``fills``.  Returns (length, number of fills, overflow, the divisor of the row: its gcd
    in integers, else 1).
    """
    flags, cnt, hist_p, hist_a = lv.flags, lv.cnt, lv.hist_p, lv.hist_a
    cur_c, cur_v, prv_c, prv_v = buf.cur_c, buf.cur_v, buf.prv_c, buf.prv_v
    s_c, s_v, fills = buf.s_c, buf.s_v, buf.fills
    ia = 0
    ib = 0
    n = 0
    nf = 0
    while ia < n_c or ib < n_p:
        ca = cur_c[ia] if ia < n_c else -1
        cb = prv_c[ib] if ib < n_p else -1
        if ca >= 0 and (flags[ca] & LIVE) == 0:
            ia += 1
            continue
        if cb >= 0 and (flags[cb] & LIVE) == 0:
            ib += 1
            continue
        if ca >= 0 and (cb < 0 or ca < cb):
            s_c[n] = ca
            s_v[n] = cur_v[ia] if exact == MODULAR else alpha * cur_v[ia]
            n += 1
            ia += 1
        elif cb >= 0 and (ca < 0 or cb < ca):
            s_c[n] = cb
            if exact == MODULAR:
                s_v[n] = P - _mulmod(beta, prv_v[ib])  # both non-zero residues: non-zero
            else:
                s_v[n] = -beta * prv_v[ib]
            n += 1
            _set_cnt(cb, cnt[cb] + 1, cnt, flags, hist_p, hist_a)
            fills[nf] = cb
            nf += 1
            ib += 1
        else:
            if exact == MODULAR:
                lhs = cur_v[ia]
                rhs = _mulmod(beta, prv_v[ib])
                v = lhs - rhs
                if v < 0:
                    v += P
            else:
                lhs = alpha * cur_v[ia]
                rhs = beta * prv_v[ib]
                v = lhs - rhs
            if _nonzero(v, abs(lhs) + abs(rhs), exact, tol):
                s_c[n] = ca
                s_v[n] = v
                n += 1
            else:
                _set_cnt(ca, cnt[ca] - 1, cnt, flags, hist_p, hist_a)
            ia += 1
            ib += 1
    over = False
    div = 1
    if n > 0 and exact != MODULAR:
        if exact:
            g = s_v[0] * 0
            for t in range(n):
                g = _gcd(g, s_v[t])
                if g == 1:
                    break
            if g > 1:
                div = g
                for t in range(n):
                    s_v[t] = s_v[t] // g
            for t in range(n):
                if abs(s_v[t]) >= _LIMIT:
                    over = True
                    break
        else:
            mx = 0.0
            for t in range(n):
                if abs(s_v[t]) > mx:
                    mx = abs(s_v[t])
            if mx > 0.0:
                for t in range(n):
                    s_v[t] = s_v[t] / mx
    return n, nf, over, div


@njit(cache=True, inline="always")
def _copy_row(lv, j, out_c, out_v):
    rs, rl, pc, pv, flags = lv.rs, lv.rl, lv.pc, lv.pv, lv.flags
    n = 0
    for t in range(rs[j], rs[j] + rl[j]):
        col = pc[t]
        if flags[col] & LIVE:
            out_c[n] = col
            out_v[n] = pv[t]
            n += 1
    return n


@njit(cache=True)
def _chain(lv, work, buf, k, keep_old, exact, tol):
    """Eliminate the published column: drop the pivot row ``jr[0]`` and replace every other
    row ``jr[i]`` (values ``jv`` in the published column) by ``jv[0] * row_i - jv[i] * pivot``
    (divided by the gcd of its entries; modulo P, ``row_i - (jv[i] / jv[0]) * pivot``, one
    product per entry of the pivot).

    A new row is written in place when it fits its slot, else at the end of the pool.  With
    ``keep_old`` (a tentative update) the old content of a row written in place is first
    copied to ``ub_c`` / ``ub_v`` from ``u_off[i]`` (-1: not in place, the old slot is
    untouched), for the undo.  (Writing every tentative row at the end of the pool instead
    filled the pool with garbage: a compaction every few steps, half the time of a large
    table with singleton rules.)

    Row ``jr[i]`` becomes ``(fa[i] * row - fb[i] * pivot) / fg[i]`` (written for the
    fingerprints).  The caller has flagged the published column dead and made room in the
    pools (and in ``ub_c``: the old lengths of the rows).  Returns the length of the pivot
    row (its live columns and values are left in ``prv_c`` / ``prv_v``).
    """
    rs, rl, rcap, ralive, pc, pv = lv.rs, lv.rl, lv.rcap, lv.ralive, lv.pc, lv.pv
    chead, lg_row, lg_next, cnt, ctr = lv.chead, lv.lg_row, lv.lg_next, lv.cnt, lv.ctr
    flags, hist_p, hist_a = lv.flags, lv.hist_p, lv.hist_a
    jr, jv, u_off, fa, fb, fg = work.jr, work.jv, work.u_off, work.fa, work.fb, work.fg
    prv_c, prv_v, cur_c, cur_v = buf.prv_c, buf.prv_v, buf.cur_c, buf.cur_v
    s_c, s_v, fills, ub_c, ub_v = buf.s_c, buf.s_v, buf.fills, buf.ub_c, buf.ub_v
    ptop = ctr[C_PTOP]
    ltop = ctr[C_LTOP]
    n_p = _copy_row(lv, jr[0], prv_c, prv_v)
    for t in range(n_p):
        col = prv_c[t]
        _set_cnt(col, cnt[col] - 1, cnt, flags, hist_p, hist_a)
    ralive[jr[0]] = 0
    ctr[C_RGARB] += rcap[jr[0]]
    u_off[0] = -1
    utop = 0
    inv_a = _invmod(jv[0]) if exact == MODULAR else jv[0] * 0
    for i in range(1, k):
        j = jr[i]
        n_c = _copy_row(lv, j, cur_c, cur_v)
        a = jv[0]
        b = jv[i]
        if exact == INTEGER:
            g = _gcd(a, b)
            alpha = a // g
            beta = b // g
        elif exact == MODULAR:  # row_i - (b / a) * pivot: one product per pivot entry
            alpha = a * 0 + 1
            beta = _mulmod(b, inv_a)
        else:
            alpha = a
            beta = b
        n, nf, over, div = _merge(lv, buf, n_c, alpha, n_p, beta, exact, tol)
        ctr[C_WORK] += n_c + n_p
        fa[i] = alpha
        fb[i] = beta
        fg[i] = div
        if over:
            ctr[C_OVER] = 1
        u_off[i] = -1
        if n <= rcap[j]:
            start = rs[j]
            if keep_old:
                u_off[i] = utop
                for t in range(rl[j]):
                    ub_c[utop + t] = pc[start + t]
                    ub_v[utop + t] = pv[start + t]
                utop += rl[j]
        else:
            ctr[C_RGARB] += rcap[j]
            start = ptop
            cap = n + (n >> 2) + 2
            ptop += cap
            rcap[j] = cap
            rs[j] = start
        for t in range(n):
            pc[start + t] = s_c[t]
            pv[start + t] = s_v[t]
        rl[j] = n
        for t in range(nf):
            col = fills[t]
            lg_row[ltop] = j
            lg_next[ltop] = chead[col]
            chead[col] = ltop
            ltop += 1
    ctr[C_PTOP] = ptop
    ctr[C_LTOP] = ltop
    ctr[C_STEPS] += 1
    return n_p


@njit(cache=True)
def _compact_rows(lv, extra):
    """The live matrix with its rows copied to a new pool of their size and ``extra``."""
    rs, rl, rcap, ralive, pc, pv, ctr = lv.rs, lv.rl, lv.rcap, lv.ralive, lv.pc, lv.pv, lv.ctr
    m = rs.shape[0]
    live = 0
    for j in range(m):
        if ralive[j]:
            live += rl[j] + (rl[j] >> 2) + 2
    size = live + (live >> 1) + extra + 1024
    npc = np.empty(size, dtype=pc.dtype)
    npv = np.empty(size, dtype=pv.dtype)
    top = 0
    for j in range(m):
        if not ralive[j]:
            rcap[j] = 0
            continue
        n = rl[j]
        s = rs[j]
        for t in range(n):
            npc[top + t] = pc[s + t]
            npv[top + t] = pv[s + t]
        rs[j] = top
        cap = n + (n >> 2) + 2
        rcap[j] = cap
        top += cap
    ctr[C_PTOP] = top
    ctr[C_RGARB] = 0
    return _with_lists(lv, npc, npv, lv.lp, lv.lg_row, lv.lg_next)


@njit(cache=True)
def _with_lists(lv, pc, pv, lp, lg_row, lg_next):
    """The live matrix with a new row pool and new column lists (the arrays that grow)."""
    return LiveMatrix(
        lv.rs, lv.rl, lv.rcap, lv.ralive, pc, pv, lv.cs, lv.cl, lp, lv.chead, lg_row, lg_next,
        lv.cnt, lv.flags, lv.hist_p, lv.hist_a, lv.ctr,
    )  # fmt: skip


@njit(cache=True)
def _compact_lists(lv, extra_log):
    """Rebuild every live column's list of rows from the rows themselves; empty the link log.

    Two passes over the live rows (a counting sort by column): the lists come out exact (no
    stale entries), in row order, at a cost proportional to the live matrix (checking each old
    entry against its row instead took a binary search per entry, seconds on a large table).
    The log grows with the lists, so that rebuilds stay a small share of the work.
    """
    cs, cl, lp, chead, lg_row, lg_next = lv.cs, lv.cl, lv.lp, lv.chead, lv.lg_row, lv.lg_next
    ralive, rs, rl, pc, flags, ctr = lv.ralive, lv.rs, lv.rl, lv.pc, lv.flags, lv.ctr
    n = cs.shape[0]
    m = rs.shape[0]
    count = np.zeros(n, dtype=np.int64)
    for j in range(m):
        if ralive[j]:
            for t in range(rs[j], rs[j] + rl[j]):
                col = pc[t]
                if flags[col] & LIVE:
                    count[col] += 1
    total = 0
    for c in range(n):
        cs[c] = total
        cl[c] = 0
        chead[c] = -1
        total += count[c]
    nlp = np.empty(total + 1024, dtype=lp.dtype)
    for j in range(m):
        if ralive[j]:
            for t in range(rs[j], rs[j] + rl[j]):
                col = pc[t]
                if flags[col] & LIVE:
                    nlp[cs[col] + cl[col]] = j
                    cl[col] += 1
    size = max(lg_row.shape[0], extra_log + 1024, total // 2)
    nrow = np.empty(size, dtype=lg_row.dtype)
    nnext = np.empty(size, dtype=lg_next.dtype)
    ctr[C_LTOP] = 0
    return _with_lists(lv, lv.pc, lv.pv, nlp, nrow, nnext)


# --------------------------------------------------------------------------- rank tests
@njit(cache=True)
def _rank_of(lv, cols, n_cols, stamp, rmap):
    """Rank of the columns ``cols[:n_cols]`` (a small dense elimination over their rows:
    modulo P in the integer arithmetics, else in floating point)."""
    if n_cols == 0:
        return 0
    cnt, pv, ctr = lv.cnt, lv.pv, lv.ctr
    total = 0
    for q in range(n_cols):
        total += cnt[cols[q]]
    wr = np.empty(total + 1, dtype=np.int64)
    wv = np.empty(total + 1, dtype=pv.dtype)
    starts = np.zeros(n_cols + 1, dtype=np.int64)
    for q in range(n_cols):
        sub = _next_stamp(ctr)
        k = _collect(lv, cols[q], stamp, sub, wr[starts[q] :], wv[starts[q] :])
        starts[q + 1] = starts[q] + k
    rows_tag = _next_stamp(ctr)
    nr = 0
    for i in range(starts[n_cols]):
        r = wr[i]
        if rmap[r, 1] != rows_tag:
            rmap[r, 1] = rows_tag
            rmap[r, 0] = nr
            nr += 1
    if nr == 0:
        return 0
    if ctr[C_MODE] != FLOAT:
        residues = np.zeros((nr, n_cols), dtype=np.int64)
        for q in range(n_cols):
            for i in range(starts[q], starts[q + 1]):
                residues[rmap[wr[i], 0], q] = _residue(np.int64(wv[i]))
        return _rank_mod(residues)
    dense = np.zeros((nr, n_cols))
    for q in range(n_cols):
        for i in range(starts[q], starts[q + 1]):
            dense[rmap[wr[i], 0], q] = float(wv[i])
    rank = 0
    row = 0
    for q in range(n_cols):
        if row >= nr:
            break
        best = row
        big = abs(dense[row, q])
        for r in range(row + 1, nr):
            if abs(dense[r, q]) > big:
                big = abs(dense[r, q])
                best = r
        if big <= 1e-9:
            continue
        if best != row:
            for x in range(n_cols):
                tmp = dense[row, x]
                dense[row, x] = dense[best, x]
                dense[best, x] = tmp
        for r in range(nr):
            if r != row and dense[r, q] != 0.0:
                f = dense[r, q] / dense[row, q]
                for x in range(q, n_cols):
                    dense[r, x] -= f * dense[row, x]
        # keep the pivot row of unit size (the entries are small integers at the start)
        piv = dense[row, q]
        for x in range(q, n_cols):
            dense[row, x] /= piv
        row += 1
        rank += 1
    return rank


@njit(cache=True)
def _group_members(resp, g, flags, prim_only, out):
    """The live cells of respondent ``g`` (only his primaries with ``prim_only``) into
    ``out``; returns how many."""
    gptr, gcells = resp.gptr, resp.gcells
    n = 0
    for t in range(gptr[g], gptr[g + 1]):
        s = gcells[t]
        if (flags[s] & ATT) and (not prim_only or (flags[s] & PRIM)):
            out[n] = s
            n += 1
    return n


@njit(cache=True)
def _in_group_span(lv, resp, b, g, stamp, rmap, tmp):
    """Whether column ``b`` lies in the span of respondent ``g``'s cells."""
    n = _group_members(resp, g, lv.flags, False, tmp)
    support = 0
    for i in range(n):
        support += lv.cnt[tmp[i]]
    if n == 0 or lv.cnt[b] > support:
        return False
    r1 = _rank_of(lv, tmp, n, stamp, rmap)
    tmp[n] = b
    r2 = _rank_of(lv, tmp, n + 1, stamp, rmap)
    return r2 == r1


@njit(cache=True)
def _group_safe(lv, resp, g, other, stamp, rmap, tmp):
    """Respondent ``g``'s primary cells: no combination is computable from the published
    cells, nor by respondent ``other`` (-1: none) from his own cells."""
    n = _group_members(resp, g, lv.flags, True, tmp)
    if n == 0:
        return True
    if other < 0:
        if resp.gsize[g] < 2:
            return True
        return _rank_of(lv, tmp, n, stamp, rmap) == n
    m = _group_members(resp, other, lv.flags, False, tmp[n:])
    if m == 0:
        return True
    r_other = _rank_of(lv, tmp[n:], m, stamp, rmap)
    r_both = _rank_of(lv, tmp, n + m, stamp, rmap)
    return r_both == r_other + n


@njit(cache=True)
def _check_changed(lv, resp, work, n_u, forced, unsafe, exact, tol, hashed):
    """The singleton rules on the columns ``u_cols[:n_u]`` (of ``work``): the columns of the
    pivot row of a tentative update.

    The update applies one linear map ``M`` to every column (the pivot row dropped, every
    other row ``j`` replaced by ``(a_j * row_j - b_j * pivot) / g_j``), whose kernel is the
    span of the published column ``c``.  A linear relation among columns holds after the
    update exactly when some combination of them was a multiple of ``c`` before; with a
    non-zero multiple that combination is non-zero in the pivot row, so one of the columns
    has an entry there.  Relations among columns without an entry in the pivot row (rows
    only rescaled) are as before, and were checked when they arose.  So a rule can newly
    fail only through a column of the pivot row: a primary proportional to a respondent's
    cell, in the span of a respondent's cells, or a respondent's primaries dependent (the
    checks below start from each such column, in either role, and for a respondent with
    several cells re-check all of his cells).

    With ``hashed`` the rule R1 for respondents with one cell (a primary proportional to his
    cell) was checked by the fingerprints (``_gauss_modular``) and is skipped here.

    Returns the first violation (0: none; 1: a primary computable, 2: computable by one
    respondent, 3: a respondent's cells computable).  With ``forced`` the scan goes on and the
    violating primaries are marked unsafe.
    """
    rs, rl, pc, flags, cnt = lv.rs, lv.rl, lv.pc, lv.flags, lv.cnt
    hist_p, hist_a, ctr = lv.hist_p, lv.hist_a, lv.ctr
    own, cgrp, gsize, gptr = resp.own, resp.cgrp, resp.gsize, resp.gptr
    u_cols, stamp2, cstamp, rmap = work.u_cols, work.stamp2, work.cstamp, work.rmap
    wr, wv, tmp, gseen, gseen2 = work.wr, work.wv, work.tmp, work.gseen, work.gseen2
    found = 0
    gtag = _next_stamp(ctr)
    multi = ctr[C_NMULTI] > 0
    for ii in range(n_u):
        q = u_cols[ii]
        f = flags[q]
        if (f & LIVE) == 0:
            continue
        if f & PRIM:
            code = 0
            nq = cnt[q]
            if nq == 0:
                code = 1
            elif (hist_a[nq] > 0 and not hashed) or multi:
                tag = _next_stamp(ctr)
                n = _collect(lv, q, stamp2, tag, wr, wv)
                if hist_a[nq] > 0 and not hashed:
                    r0 = _shortest(wr, n, rl)
                    for t in range(rs[r0], rs[r0] + rl[r0]):
                        s = pc[t]
                        if s == q or (flags[s] & ATT) == 0 or cnt[s] != n:
                            continue
                        g = cgrp[s]
                        if gsize[g] != 1 or own[q] == g:
                            continue
                        if _proportional(lv, s, wr, wv, n, exact, tol):
                            code = 2
                            break
                if code == 0 and multi:
                    # respondents with several cells whose cells share a row with q
                    gsub = _next_stamp(ctr)
                    for i in range(n):
                        r = wr[i]
                        for t in range(rs[r], rs[r] + rl[r]):
                            s = pc[t]
                            if (flags[s] & ATT) == 0:
                                continue
                            g = cgrp[s]
                            if gsize[g] < 2 or own[q] == g or gseen2[g] == gsub:
                                continue
                            gseen2[g] = gsub
                            if _in_group_span(lv, resp, q, g, stamp2, rmap, tmp):
                                code = 2
                                break
                        if code:
                            break
            if code:
                if not forced:
                    return code
                unsafe[q] = 1 if code == 1 else 2
                _set_flags(q, flags[q] & ~PRIM, cnt, flags, hist_p, hist_a, ctr)
                found = code
        f = flags[q]
        if (f & ATT) and (f & LIVE):
            g = cgrp[q]
            nq = cnt[q]
            if gsize[g] == 1 and nq > 0 and hist_p[nq] > 0 and not hashed:
                tag = _next_stamp(ctr)
                n = _collect(lv, q, stamp2, tag, wr, wv)
                r0 = _shortest(wr, n, rl)
                for t in range(rs[r0], rs[r0] + rl[r0]):
                    b = pc[t]
                    if b == q or (flags[b] & PRIM) == 0 or cnt[b] != n or own[b] == g:
                        continue
                    if _proportional(lv, b, wr, wv, n, exact, tol):
                        if not forced:
                            return 2
                        unsafe[b] = 2
                        _set_flags(b, flags[b] & ~PRIM, cnt, flags, hist_p, hist_a, ctr)
                        found = 2
            if multi and gseen[g] != gtag:
                gseen[g] = gtag
                # groups to re-check: this respondent's, and those sharing rows with it
                if not _group_safe(lv, resp, g, -1, stamp2, rmap, tmp):
                    if not forced:
                        return 3
                    ctr[C_BROKEN] += 1
                    found = 3
                # every live cell of the respondent, not only the changed ones: a primary (or
                # another respondent's cells) in the span of his cells shares a row with one
                # of them, but not necessarily with one whose column changed
                members = np.empty(gptr[g + 1] - gptr[g], dtype=np.int64)
                n_m = _group_members(resp, g, flags, False, members)
                ptag = _next_stamp(ctr)
                g1tag = _next_stamp(ctr)
                gseen2[g] = g1tag
                for mi in range(n_m):
                    tag = _next_stamp(ctr)
                    n = _collect(lv, members[mi], stamp2, tag, wr, wv)
                    for i in range(n):
                        r = wr[i]
                        for t in range(rs[r], rs[r] + rl[r]):
                            s = pc[t]
                            fs = flags[s]
                            if (fs & LIVE) == 0:
                                continue
                            if fs & ATT:
                                g1 = cgrp[s]
                                if gseen2[g1] != g1tag:
                                    gseen2[g1] = g1tag
                                    if gsize[g1] >= 2 or gsize[g] >= 2:
                                        ok = _group_safe(lv, resp, g, g1, stamp2, rmap, tmp)
                                        ok = ok and _group_safe(lv, resp, g1, g, stamp2, rmap, tmp)
                                        if not ok:
                                            if not forced:
                                                return 3
                                            ctr[C_BROKEN] += 1
                                            found = 3
                            if (fs & PRIM) and cstamp[s] != ptag:
                                cstamp[s] = ptag
                                if gsize[g] < 2 or own[s] == g:
                                    continue
                                if _in_group_span(lv, resp, s, g, stamp2, rmap, tmp):
                                    if not forced:
                                        return 2
                                    unsafe[s] = 2
                                    _set_flags(s, flags[s] & ~PRIM, cnt, flags, hist_p, hist_a, ctr)
                                    found = 2
    return found


@njit(cache=True)
def _proportional_now(lv, a, b, stamp, wr, wv, exact, tol):
    """Exactly: whether the live columns ``a`` and ``b`` are proportional now."""
    if lv.cnt[a] != lv.cnt[b] or lv.cnt[a] == 0:
        return False
    tag = _next_stamp(lv.ctr)
    n = _collect(lv, a, stamp, tag, wr, wv)
    return _proportional(lv, b, wr, wv, n, exact, tol)


_SAMPLE = 16  # rows sampled for the shared-column counts of the pivot choice


@njit(cache=True, inline="always")
def _pivot(lv, work, k, exact):
    """The pivot among the rows ``jr[:k]`` of the published column (values ``jv``).

    Floating point: the largest value (partial pivoting), then the shortest row, then the
    last in table order.  Exact: among the rows with the smallest value (a unit where there
    is one, so that the other rows are not multiplied up; modulo P every non-zero residue
    will do), the row whose live columns the other rows share most: the update adds
    ``|pivot \\ row_i|`` entries to every other row, so this is the least fill-in.  The
    shares are counted on up to ``_SAMPLE`` rows spread over the ``k``, for the rows at most
    about twice as long as the shortest; ties go to the shorter row, then to the last in
    table order (a consistent choice).  On a 42,120-cell five-dimensional table this halved
    the entries merged (and the time) against taking the shortest row.  The pivot changes no
    decision (the span of the moves does not depend on it), only the work.
    """
    rs, rl, pc, flags, ctr = lv.rs, lv.rl, lv.pc, lv.flags, lv.ctr
    jr, jv, cstamp, share = work.jr, work.jv, work.cstamp, work.share
    ip = 0
    if not exact:
        for i in range(1, k):
            a_i = abs(jv[i])
            a_p = abs(jv[ip])
            if a_i > a_p or (
                a_i == a_p
                and (rl[jr[i]] < rl[jr[ip]] or (rl[jr[i]] == rl[jr[ip]] and jr[i] > jr[ip]))
            ):
                ip = i
        return ip
    best_v = abs(jv[0])
    min_len = rl[jr[0]]
    for i in range(1, k):
        if exact == INTEGER and abs(jv[i]) < best_v:
            best_v = abs(jv[i])
        if rl[jr[i]] < min_len:
            min_len = rl[jr[i]]
    tag = _next_stamp(ctr)
    step = max(1, k // _SAMPLE)
    n_sample = 0
    for i in range(0, k, step):
        n_sample += 1
        r = jr[i]
        for t in range(rs[r], rs[r] + rl[r]):
            col = pc[t]
            if cstamp[col] != tag:
                cstamp[col] = tag
                share[col] = 0
            share[col] += 1
    best_fill = -1
    for i in range(k):
        r = jr[i]
        if rl[r] > 2 * min_len + 8 or (exact == INTEGER and abs(jv[i]) != best_v):
            continue
        fill = 0
        for t in range(rs[r], rs[r] + rl[r]):
            col = pc[t]
            if flags[col] & LIVE:
                fill += n_sample - (share[col] if cstamp[col] == tag else 0)
        if (
            best_fill < 0
            or fill < best_fill
            or (fill == best_fill and (rl[r] < rl[jr[ip]] or (rl[r] == rl[jr[ip]] and r > jr[ip])))
        ):
            best_fill = fill
            ip = i
    return ip


@njit(cache=True)
def _to_residues(v, n):
    for t in range(n):
        v[t] = _residue(v[t])


@njit(cache=True)
def column_entries(lv, cols):
    """The entries of the live rows (the moves left) in the columns ``cols``.

    Returns ``(row, j, value)`` triplets, one per live row ``row`` with a non-zero entry
    ``value`` in column ``cols[j]``.
    """
    rs, rl, ralive, pc, pv = lv.rs, lv.rl, lv.ralive, lv.pc, lv.pv
    k = len(cols)
    n_out = 0
    for i in range(len(rs)):
        if ralive[i]:
            for j in range(k):
                if _find(pc, rs[i], rl[i], cols[j]) >= 0:
                    n_out += 1
    rows = np.empty(n_out, dtype=np.int64)
    which = np.empty(n_out, dtype=np.int64)
    vals = np.empty(n_out, dtype=pv.dtype)
    t = 0
    for i in range(len(rs)):
        if ralive[i]:
            for j in range(k):
                at = _find(pc, rs[i], rl[i], cols[j])
                if at >= 0:
                    rows[t] = i
                    which[t] = j
                    vals[t] = pv[at]
                    t += 1
    return rows, which, vals


# --------------------------------------------------------------------------- the driver
@njit(cache=True)
def run_chunk(order, kinds, lo, hi, decision, unsafe, lv, resp, work, buf, fpr, run):
    """Decide the cells ``order[lo:hi]`` (``kinds``: 0 candidate, 1 frozen: always published).

    ``lv`` is the live matrix, ``resp`` the respondents, ``work`` and ``buf`` the work space
    and ``fpr`` the fingerprints (records of ``_gauss_state``); ``run`` is ``(exact, tol,
    budget, hashed)``.

    With ``budget > 0`` a candidate whose update would merge more than about ``budget`` row
    entries is suppressed unchecked (``STOPPED``), the end of the time limit: suppressing
    a candidate is always safe, and the cheap ones are still decided exactly.

    With ``hashed`` (exact arithmetic, singleton rules on) the fingerprints of the tracked
    columns (see ``_gauss_modular``) are kept and rule R1 for one-cell respondents is checked
    through them.

    ``exact`` is the arithmetic (FLOAT, INTEGER or MODULAR) at the start; when an integer
    entry reaches 2**31, every row is taken modulo P and the elimination goes on in MODULAR
    (``ctr[C_MODE]``, ``ctr[C_MOD_FROM]``): the integer state is exact until then, so its
    residues are the state of the elimination modulo P.

    Returns the records ``lv`` and ``buf`` (new ones when arrays grew).
    """
    exact, tol, budget, hashed = run
    # arrays that never grow (the row pool, the column lists and the buffers do)
    rs, rl, rcap, chead = lv.rs, lv.rl, lv.rcap, lv.chead
    cnt, flags, hist_p, hist_a, ctr = lv.cnt, lv.flags, lv.hist_p, lv.hist_a, lv.ctr
    stamp, cstamp, jr, jv = work.stamp, work.cstamp, work.jr, work.jv
    u_rs, u_rl, u_rcap = work.u_rs, work.u_rl, work.u_rcap
    u_cols, u_cnt, u_head = work.u_cols, work.u_cnt, work.u_head
    ctr[C_MODE] = exact
    for pos in range(lo, hi):
        exact = ctr[C_MODE]
        c = order[pos]
        forced = kinds[pos] == 1
        if (flags[c] & LIVE) == 0:
            decision[pos] = IN_SPAN
            continue
        tag = _next_stamp(ctr)
        k = _collect(lv, c, stamp, tag, jr, jv)
        if k == 0:
            decision[pos] = IN_SPAN
            _set_flags(c, 0, cnt, flags, hist_p, hist_a, ctr)
            continue
        # R0: a primary whose column is proportional to c's (it has c's rows: look in one)
        r_best = jr[0]
        for i in range(k):
            if rl[jr[i]] < rl[r_best]:
                r_best = jr[i]
        viol = 0
        pc = lv.pc
        for t in range(rs[r_best], rs[r_best] + rl[r_best] if hist_p[k] > 0 else rs[r_best]):
            b = pc[t]
            if b == c or (flags[b] & PRIM) == 0 or cnt[b] != k:
                continue
            if _proportional(lv, b, jr, jv, k, exact, tol):
                viol = 1
                if not forced:
                    break
                unsafe[b] = 1
                _set_flags(b, flags[b] & ~PRIM, cnt, flags, hist_p, hist_a, ctr)
        if viol and not forced:
            decision[pos] = SECONDARY
            if (flags[c] & ATT) == 0:
                _set_flags(c, 0, cnt, flags, hist_p, hist_a, ctr)
            continue
        if budget > 0 and not forced:
            # the update merges every other row with the pivot row (at least the shortest)
            work_units = (k - 1) * rl[r_best]
            for i in range(k):
                work_units += rl[jr[i]]
            if work_units > budget:
                decision[pos] = STOPPED
                if (flags[c] & ATT) == 0:
                    _set_flags(c, 0, cnt, flags, hist_p, hist_a, ctr)
                continue
        ip = _pivot(lv, work, k, exact)
        if ip:
            j_swap = jr[0]
            jr[0] = jr[ip]
            jr[ip] = j_swap
            v_swap = jv[0]
            jv[0] = jv[ip]
            jv[ip] = v_swap
        lv, buf = _make_room(lv, work, buf, k)
        saved_flags_c = flags[c]
        tentative = ctr[C_NATT] > 0
        n_u = 0
        n_piv = 0
        saved_ltop = saved_ptop = saved_garb = 0
        if tentative:
            utag = _next_stamp(ctr)
            pc = lv.pc
            for i in range(k):
                j = jr[i]
                u_rs[i] = rs[j]
                u_rl[i] = rl[j]
                u_rcap[i] = rcap[j]
                for t in range(rs[j], rs[j] + rl[j]):
                    col = pc[t]
                    if (flags[col] & LIVE) and cstamp[col] != utag:
                        cstamp[col] = utag
                        u_cols[n_u] = col
                        u_cnt[n_u] = cnt[col]
                        u_head[n_u] = chead[col]
                        n_u += 1
                if i == 0:
                    n_piv = n_u
            saved_ltop = ctr[C_LTOP]
            saved_ptop = ctr[C_PTOP]
            saved_garb = ctr[C_RGARB]
        _set_flags(c, 0, cnt, flags, hist_p, hist_a, ctr)
        integer_chain = exact == INTEGER  # the factors fa, fb, fg are integers
        n_p = _chain(lv, work, buf, k, tentative, exact, tol)
        if ctr[C_OVER]:
            # an entry reached 2**31 (exact in int64 still): on modulo P from here
            _to_residues(lv.pv, ctr[C_PTOP])
            _to_residues(buf.ub_v, buf.ub_v.shape[0])
            ctr[C_OVER] = 0
            ctr[C_MODE] = MODULAR
            ctr[C_MOD_FROM] = pos + 1
            exact = MODULAR
        res = 0
        n_fp = 0
        use_fp = tentative and hashed
        if use_fp:
            # rule R1 for one-cell respondents by the fingerprints: pairs with equal keys
            # after the update, each checked exactly on the rows
            n_fp = fp.update_keys(fpr, k, n_p, integer_chain, flags, resp, work, buf)
            n_pairs = fp.matches(fpr, n_fp, cstamp, _next_stamp(ctr), flags, resp)
            if n_pairs < 0 or (forced and n_pairs > 0):
                # more keys than listed, or a frozen cell (every violating primary is to be
                # marked): the scans of _check_changed instead
                use_fp = False
                ctr[C_FP_SCANS] += 1
            else:
                ctr[C_FP_PAIRS] += n_pairs
                for i in range(n_pairs):
                    x, y = fpr.out_a[i], fpr.out_b[i]
                    if _proportional_now(lv, x, y, work.stamp2, work.wr, work.wv, exact, tol):
                        res = 2
                        break
                    # not proportional: fingerprints that collide (probability ~2 / P)
                    use_fp = False
                    ctr[C_FP_SCANS] += 1
                    break
        if tentative and (res == 0 or forced):
            # only the pivot row's columns can enter a new linear relation (see
            # _check_changed); u_cols[:n_piv] are they (the pivot row was scanned first)
            res2 = _check_changed(lv, resp, work, n_piv, forced, unsafe, exact, tol, use_fp)
            if res2:
                res = res2
        if tentative:
            if res and not forced:
                _undo(lv, work, buf, k, n_u)
                ctr[C_LTOP] = saved_ltop
                ctr[C_PTOP] = saved_ptop
                ctr[C_RGARB] = saved_garb
                if saved_flags_c & ATT:
                    _set_flags(c, saved_flags_c, cnt, flags, hist_p, hist_a, ctr)
                decision[pos] = SECONDARY if res == 1 else SECONDARY_SINGLE
                continue
            if hashed:
                fp.commit(fpr, n_fp, k, jr, integer_chain, flags, resp)
            # respondents' cells whose column became zero are computable: no private knowledge
            for i in range(n_u):
                col = u_cols[i]
                if (flags[col] & ATT) and cnt[col] == 0 and (flags[col] & PRIM) == 0:
                    _set_flags(col, 0, cnt, flags, hist_p, hist_a, ctr)
        decision[pos] = FORCED_UNSAFE if (forced and (viol or res)) else PUBLISHED
    return lv, buf


@njit(cache=True, inline="always")
def _make_room(lv, work, buf, k):
    """Room in the pools for the update of the rows ``jr[:k]`` (pivot first), and in the
    buffers for its longest row; returns the records (new ones for what grew)."""
    jr, rl, ctr = work.jr, lv.rl, lv.ctr
    need_rows = 0
    need_log = 16
    longest = 0
    for i in range(k):
        both = rl[jr[i]] + (rl[jr[0]] if i > 0 else 0)
        need_rows += both + (both >> 2) + 2
        need_log += rl[jr[0]] if i > 0 else 0
        if both > longest:
            longest = both
    if ctr[C_RGARB] > (ctr[C_PTOP] >> 1) and ctr[C_PTOP] > (1 << 22):
        lv = _compact_rows(lv, need_rows)
    if ctr[C_PTOP] + need_rows > lv.pc.shape[0]:
        lv = _compact_rows(lv, need_rows)
    if ctr[C_LTOP] + need_log > lv.lg_row.shape[0]:
        lv = _compact_lists(lv, 2 * need_log + lv.lg_row.shape[0] // 2)
    prv_c, prv_v, cur_c, cur_v = buf.prv_c, buf.prv_v, buf.cur_c, buf.cur_v
    s_c, s_v, fills, ub_c, ub_v = buf.s_c, buf.s_v, buf.fills, buf.ub_c, buf.ub_v
    grown = False
    if longest + 2 > s_c.shape[0]:
        size = 2 * (longest + 2)
        prv_c = np.empty(size, dtype=prv_c.dtype)
        prv_v = np.empty(size, dtype=prv_v.dtype)
        cur_c = np.empty(size, dtype=cur_c.dtype)
        cur_v = np.empty(size, dtype=cur_v.dtype)
        s_c = np.empty(size, dtype=s_c.dtype)
        s_v = np.empty(size, dtype=s_v.dtype)
        fills = np.empty(size, dtype=fills.dtype)
        grown = True
    if ctr[C_NATT] > 0:  # a tentative update: room for the undo copies of the rows
        old_len = 0
        for i in range(1, k):
            old_len += rl[jr[i]]
        if old_len > ub_c.shape[0]:
            ub_c = np.empty(2 * old_len, dtype=ub_c.dtype)
            ub_v = np.empty(2 * old_len, dtype=ub_v.dtype)
            grown = True
    if grown:
        buf = Buffers(prv_c, prv_v, cur_c, cur_v, s_c, s_v, fills, ub_c, ub_v)
    return lv, buf


@njit(cache=True)
def _undo(lv, work, buf, k, n_u):
    """Undo a tentative update of the rows ``jr[:k]``: their old content, slots, the counts
    and list heads of the ``n_u`` columns touched (the caller restores the pool tops)."""
    rs, rl, rcap, ralive, pc, pv = lv.rs, lv.rl, lv.rcap, lv.ralive, lv.pc, lv.pv
    jr, u_off, u_rs, u_rl, u_rcap = work.jr, work.u_off, work.u_rs, work.u_rl, work.u_rcap
    ub_c, ub_v = buf.ub_c, buf.ub_v
    for i in range(k):
        j = jr[i]
        if u_off[i] >= 0:  # written in place: the old content back
            for t in range(u_rl[i]):
                pc[u_rs[i] + t] = ub_c[u_off[i] + t]
                pv[u_rs[i] + t] = ub_v[u_off[i] + t]
        rs[j] = u_rs[i]
        rl[j] = u_rl[i]
        rcap[j] = u_rcap[i]
        ralive[j] = 1
    cnt, flags, hist_p, hist_a = lv.cnt, lv.flags, lv.hist_p, lv.hist_a
    for i in range(n_u):
        col = work.u_cols[i]
        _set_cnt(col, work.u_cnt[i], cnt, flags, hist_p, hist_a)
        lv.chead[col] = work.u_head[i]
    lv.ctr[C_STEPS] -= 1
    lv.ctr[C_UNDO] += 1
