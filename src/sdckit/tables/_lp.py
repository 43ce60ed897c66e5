"""Linear programming helpers on HiGHS (through highspy): feasibility intervals and attacker LPs.

One HiGHS model is built per independent block of unknowns and re-solved with a changed
objective for the minimum and the maximum of every unknown, so the simplex warm-starts.

Scaling: HiGHS works with absolute tolerances (about 1e-7), so a block whose bounds reach
millions or billions would be decided at the level of rounding noise.  Every block is divided
by a power of two (:func:`lp_scale`) that brings its largest finite bound to about 1000, and
the results are multiplied back; powers of two keep the scaling exact in floating point.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sdckit.errors import DataError

__all__ = ["components", "cover_points", "feasibility_intervals", "lp_scale", "new_highs", "solve"]

_INF = highspy.kHighsInf
_STATE = {"banner": False}
_BANNER_LOCK = threading.Lock()
_ST = highspy.HighsModelStatus
#: Statuses that answer the LP: optimal, infeasible, unbounded.
_DEFINITE = (_ST.kOptimal, _ST.kInfeasible, _ST.kUnbounded, _ST.kUnboundedOrInfeasible)
#: Blocks with at least this many requirements to decide start with coverage LPs.
_COVER_FROM = 200
#: Blocks with at least this many unknowns are first decided group by group (local proofs).
LOCAL_PROOFS_FROM = 5_000
#: Problems with at least this many unknowns decide their blocks in threads (when asked).
_THREADS_FROM = 500


def _highs() -> highspy.Highs:
    """A HiGHS instance; the one-time licence banner HiGHS prints to stdout is swallowed.

    The first instance is made under a lock: two threads redirecting the standard output at
    the same time could leave it pointing at the null device.
    """
    if _STATE["banner"]:
        return highspy.Highs()
    with _BANNER_LOCK:
        if _STATE["banner"]:
            return highspy.Highs()
        return _first_highs()


def _first_highs() -> highspy.Highs:
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    _STATE["banner"] = True
    return h


def new_highs(
    matrix: sp.csr_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    cost: np.ndarray | None = None,
    presolve: bool = True,
) -> highspy.Highs:
    """A silent HiGHS model ``min cost @ x`` s.t. ``row_lower <= A x <= row_upper``, bounds.

    ``presolve=False`` switches HiGHS's presolve off: it runs at every solve, which costs more
    than it saves on some models solved again and again (see :func:`protect_paths
    <sdckit.tables.suppression._common.protect_paths>`), and less on others (the attacker
    LPs of the optimal method: twice the time without it on a 240-cell table).
    """
    csc = sp.csc_matrix(matrix)
    csc.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_ = csc.shape[1]
    lp.num_row_ = csc.shape[0]
    lp.col_cost_ = np.zeros(csc.shape[1]) if cost is None else np.asarray(cost, dtype=float)
    lp.col_lower_ = np.where(np.isfinite(col_lower), col_lower, -_INF)
    lp.col_upper_ = np.where(np.isfinite(col_upper), col_upper, _INF)
    lp.row_lower_ = np.where(np.isfinite(row_lower), row_lower, -_INF)
    lp.row_upper_ = np.where(np.isfinite(row_upper), row_upper, _INF)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = csc.indptr.astype(np.int32)
    lp.a_matrix_.index_ = csc.indices.astype(np.int32)
    lp.a_matrix_.value_ = csc.data.astype(float)
    h = _highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if not presolve:
        h.setOptionValue("presolve", "off")
    h.passModel(lp)
    return h


def solve(h: highspy.Highs) -> highspy.HighsModelStatus:
    """Run ``h`` (warm-started from its last basis) and return a trustworthy model status.

    A warm start from the basis of an unbounded (or numerically troubled) solve can leave the
    simplex with status Unknown, or with a wrong infeasible/unbounded verdict.  Any status other
    than optimal is therefore checked by clearing the solver (dropping the basis) and solving
    again from scratch; if that still gives no answer the dual simplex, then the primal simplex,
    then the interior point method are tried.  After an unbounded or infeasible answer the
    solver is cleared, so that the next solve of the same model does not start from its basis.
    """
    h.run()
    status = h.getModelStatus()
    if status == _ST.kOptimal:
        return status
    _STATE["cold_resolves"] = _STATE.get("cold_resolves", 0) + 1
    h.clearSolver()
    h.run()
    status = h.getModelStatus()
    if status not in _DEFINITE:
        for option, value in (("simplex_strategy", 1), ("simplex_strategy", 4), ("solver", "ipm")):
            saved = h.getOptionValue(option)
            if isinstance(saved, tuple):  # (status, value) in some highspy versions
                saved = saved[-1]
            h.clearSolver()
            h.setOptionValue(option, value)
            h.run()
            status = h.getModelStatus()
            h.setOptionValue(option, saved)
            if status in _DEFINITE:
                break
    if status != _ST.kOptimal:
        h.clearSolver()  # the next solve must not start from this basis
    return status


def lp_scale(*arrays: np.ndarray, target: float = 1024.0) -> float:
    """A power of two ``s`` such that the largest finite ``|value| / s`` is about ``target``.

    Examples
    --------
    >>> lp_scale(np.array([3e9, 1.0, np.inf])) == 2.0**32 / 1024
    True
    >>> lp_scale(np.zeros(2))
    1.0
    """
    peak = 0.0
    for arr in arrays:
        a = np.abs(np.asarray(arr, dtype=float))
        a = a[np.isfinite(a)]
        if a.size:
            peak = max(peak, float(a.max()))
    if peak <= 0.0:
        return 1.0
    return float(2.0 ** np.ceil(np.log2(peak))) / target


def components(matrix: sp.csr_matrix) -> tuple[int, np.ndarray]:
    """Connected blocks of columns that share a row of ``matrix``.

    The graph is bipartite (a node per row and per column, an edge per non-zero), so its
    size is the number of non-zeros: the product ``A' A`` would hold the square of every
    row's length (a grand total over 35,000 unknowns: 1.2e9 entries).  The blocks are
    numbered ``0 .. n - 1`` in the order of their smallest column, as a connected-components
    labelling of the columns alone numbers them.

    Examples
    --------
    >>> a = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 1, 0]]))
    >>> n, labels = components(a)
    >>> n, labels.tolist()  # column 3 is in no row: a block of its own
    (3, [0, 1, 0, 2])
    """
    m, k = matrix.shape
    if k == 0:
        return 0, np.zeros(0, dtype=np.int64)
    coo = sp.coo_matrix(matrix)
    nz = coo.data != 0
    rows, cols = coo.row[nz], coo.col[nz]
    graph = sp.coo_matrix(
        (np.ones(len(rows), dtype=np.int8), (cols, k + rows)), shape=(k + m, k + m)
    ).tocsr()
    _, labels = connected_components(graph, directed=False)
    col_labels = labels[:k]
    # blocks numbered by their smallest column (rows without unknowns do not count)
    _, first, inverse = np.unique(col_labels, return_index=True, return_inverse=True)
    renumber = np.empty(len(first), dtype=np.int64)
    renumber[np.argsort(first, kind="stable")] = np.arange(len(first))
    return len(first), renumber[inverse.ravel()]


def _interval_lp(
    h: highspy.Highs,
    j: int,
    n_col: int,
    sense: highspy.ObjSense,
    with_point: bool = False,
    scale: float = 1.0,
) -> Any:
    h.changeColCost(j, 1.0)
    h.changeObjectiveSense(sense)
    status = solve(h)
    value = float(h.getInfo().objective_function_value) * scale
    point = np.asarray(h.getSolution().col_value) * scale if with_point else None
    h.changeColCost(j, 0.0)
    if status == highspy.HighsModelStatus.kOptimal:
        return (value, point) if with_point else value
    if status in (
        highspy.HighsModelStatus.kUnbounded,
        highspy.HighsModelStatus.kUnboundedOrInfeasible,
    ):
        inf = np.inf if sense == highspy.ObjSense.kMaximize else -np.inf
        return (inf, None) if with_point else inf
    if status == highspy.HighsModelStatus.kInfeasible:
        raise DataError(
            "The published cells and the a priori bounds are inconsistent (no table fits them); "
            "check the table's totals and bounds."
        )
    raise DataError(
        "The linear programming solver (HiGHS) stopped without an answer "
        f"({h.modelStatusToString(status)}); the table may be too large or badly scaled for "
        'an exact audit: try the audit with intervals="check" or split the table.'
    )


def cover_points(
    a: sp.csr_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    jj: np.ndarray,
    up: np.ndarray,
    down: np.ndarray,
    start: np.ndarray,
    scale: float = 1.0,
    max_rounds: int = 8,
) -> list[np.ndarray]:
    """Feasible points that reach many requirements at once (coverage LPs).

    For the unknowns ``jj`` (positions in ``a``'s columns) the requirements are ``x_j >=
    start_j + up`` (where ``up > 0``) and ``x_j <= start_j - down`` (where ``down > 0``).  For
    each direction one LP maximises ``sum_k t_k`` with ``t_k <= 1`` and ``t_k <= (x_j -
    start_j) / level_k`` over the feasible set: its solution reaches every requirement it
    can reach together with the others.  The LP is solved again for the requirements not yet
    reached (the reached ones no longer count) while that reaches more of them.  One such LP
    replaces many single-unknown LPs: the points returned decide those requirements exactly
    (each is a feasible point), and the remaining ones are left to single LPs.
    """
    n, m = a.shape[1], a.shape[0]
    points: list[np.ndarray] = []
    for sign, level in ((1.0, up), (-1.0, down)):
        ks = np.flatnonzero(level > 0)
        if len(ks) < 2:
            continue
        t = len(ks)
        idx = np.arange(t)
        link = sp.csr_matrix(
            (
                np.r_[level[ks] / scale, -sign * np.ones(t)],
                (np.r_[idx, idx], np.r_[n + idx, jj[ks]]),
            ),
            shape=(t, n + t),
        )
        full = sp.vstack([sp.hstack([a, sp.csr_matrix((m, t))]), link]).tocsr()
        h = new_highs(
            full,
            np.r_[row_lower / scale, np.full(t, -np.inf)],
            np.r_[row_upper / scale, -sign * start[jj[ks]] / scale],
            np.r_[col_lower / scale, np.full(t, -np.inf)],
            np.r_[col_upper / scale, np.ones(t)],
            np.r_[np.zeros(n), np.ones(t)],
        )
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        open_ = np.ones(t, dtype=bool)
        for _ in range(max_rounds):
            if solve(h) != _ST.kOptimal:
                break
            x = np.asarray(h.getSolution().col_value)[:n] * scale
            points.append(x)
            moved = sign * (x[jj[ks]] - start[jj[ks]])
            done = open_ & (moved >= level[ks] * (1.0 - 1e-9))
            open_ &= ~done
            if not open_.any() or done.sum() < max(2, 0.02 * t):
                break
            off = (n + np.flatnonzero(~open_)).astype(np.int32)
            h.changeColsCost(len(off), off, np.zeros(len(off)))
    return points


def _check_block(
    h: highspy.Highs,
    cols: np.ndarray,
    want: np.ndarray,
    need: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
    scale: float = 1.0,
    seeds: list[np.ndarray] | None = None,
) -> None:
    """Prove or refute each wanted unknown's requirement, solving as few LPs as possible.

    Every LP solution is a feasible point; the running minimum and maximum of each unknown
    over those points (starting from the true values) already prove many requirements.  An LP
    is solved only where the points seen so far do not reach a requirement, so the verdicts
    are exact while the intervals may be inner approximations.
    """
    need_lo, need_hi, need_width, start = need
    seen_lo = start[cols].astype(float).copy()
    seen_hi = seen_lo.copy()
    for x in seeds or []:
        np.maximum(seen_hi, x, out=seen_hi)
        np.minimum(seen_lo, x, out=seen_lo)
    n = len(cols)
    for jj, j in enumerate(cols):
        if not want[j]:
            continue
        tol = 1e-7 * (scale + abs(start[j]))
        width = max(need_width[j], 1e-6 * (scale + abs(start[j])))
        done_hi = done_lo = False
        for _ in range(2):
            if not done_hi and (
                seen_hi[jj] < need_hi[j] - tol or seen_hi[jj] - seen_lo[jj] < width - tol
            ):
                v, x = _interval_lp(h, jj, n, highspy.ObjSense.kMaximize, True, scale)
                done_hi = True
                seen_hi[jj] = v
                if x is not None:
                    np.maximum(seen_hi, x, out=seen_hi)
                    np.minimum(seen_lo, x, out=seen_lo)
                    seen_hi[jj] = v
            if not done_lo and (
                seen_lo[jj] > need_lo[j] + tol or seen_hi[jj] - seen_lo[jj] < width - tol
            ):
                v, x = _interval_lp(h, jj, n, highspy.ObjSense.kMinimize, True, scale)
                done_lo = True
                seen_lo[jj] = v
                if x is not None:
                    np.maximum(seen_hi, x, out=seen_hi)
                    np.minimum(seen_lo, x, out=seen_lo)
                    seen_lo[jj] = v
        lo[j], hi[j] = seen_lo[jj], seen_hi[jj]


def _decide(
    sub: sp.csr_matrix,
    rl: np.ndarray,
    ru: np.ndarray,
    cl: np.ndarray,
    cu: np.ndarray,
    cols: np.ndarray,
    want: np.ndarray,
    need: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """Decide the wanted requirements of one model (coverage LPs first when there are many)."""
    s = lp_scale(rl, ru, cl, cu)
    h = new_highs(sub, rl / s, ru / s, cl / s, cu / s)
    seeds = None
    if want[cols].sum() >= _COVER_FROM:
        need_lo, need_hi, need_width, start = need
        jj = np.flatnonzero(want[cols])
        j = cols[jj]
        base = start[j]
        width = need_width[j]
        up = np.where(np.isfinite(need_hi[j]), need_hi[j] - base, 0.0)
        down = np.where(np.isfinite(need_lo[j]), base - need_lo[j], 0.0)
        up = np.where((up <= 0) & (down <= 0), width, up)  # only a width asked
        seeds = cover_points(sub, rl, ru, cl, cu, jj, up, down, start[cols], s)
    _check_block(h, cols, want, need, lo, hi, s, seeds)


def _met(
    j: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    need: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Whether the (inner) intervals of unknowns ``j`` already meet their requirements."""
    need_lo, need_hi, need_width, start = need
    tol = 1e-7 * (1.0 + np.abs(start[j]))
    width = np.maximum(need_width[j], 1e-6 * (1.0 + np.abs(start[j])))
    with np.errstate(invalid="ignore"):
        return (
            (hi[j] >= need_hi[j] - tol)
            & (lo[j] <= need_lo[j] + tol)
            & (hi[j] - lo[j] >= width - tol)
        )


def _local_proofs(
    csc: sp.csc_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    cols: np.ndarray,
    want: np.ndarray,
    need: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    groups: list[np.ndarray | tuple[np.ndarray, np.ndarray]],
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    """Requirements of a large block proved on small models; returns the ones still open.

    For a group of the block's unknowns, the model keeps every relation that touches one of
    them and fixes every other unknown at its start value (a feasible point).  Each solution of
    that small model, completed by the start values, is a feasible point of the whole block,
    so a requirement it reaches is reached in the block too (a proof); a requirement it does
    not reach is left to the whole block's model (no verdict), as is every requirement that
    fails (only the whole block's model can refute one).  A group that is the whole block is
    skipped.  A group given as ``(columns, own)`` decides only the requirements of ``own`` (a
    subset of its columns); the others move in it without being asked about.
    """
    _, _, _, start = need
    open_ = want.copy()
    in_block = np.zeros(len(want), dtype=bool)
    in_block[cols] = True
    asked = np.zeros(len(want), dtype=bool)  # the group's open requirements, reset after it
    for group in groups:
        g, own = group if isinstance(group, tuple) else (group, group)
        g, own = g[in_block[g]], own[in_block[own]]
        if not open_[own].any() or len(g) == len(cols):
            continue
        asked[own] = open_[own]
        sub = csc[:, g]
        rows = np.flatnonzero(np.bincount(sub.indices, minlength=sub.shape[0]))
        sub = sub[rows].tocsr()
        # the fixed unknowns move the rows' bounds by their start values (zero deviations)
        shift = csc[rows] @ start - sub @ start[g]
        g_lo = np.full(len(want), np.nan)
        g_hi = np.full(len(want), np.nan)
        _decide(
            sub,
            row_lower[rows] - shift,
            row_upper[rows] - shift,
            col_lower[g],
            col_upper[g],
            g,
            asked,
            need,
            g_lo,
            g_hi,
        )
        j = own[asked[own]]
        asked[own] = False
        done = j[_met(j, g_lo, g_hi, need)]
        lo[done], hi[done] = g_lo[done], g_hi[done]
        open_[done] = False
    return open_


def _interval_milp(
    matrix: sp.csr_matrix,
    lo_r: np.ndarray,
    hi_r: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    j: int,
    sign: float,
) -> float:
    c = np.zeros(matrix.shape[1])
    c[j] = sign
    from scipy.optimize import Bounds, LinearConstraint, milp  # (on first use)

    res = milp(
        c,
        constraints=LinearConstraint(matrix, lo_r, hi_r),
        bounds=Bounds(lb, ub),
        integrality=np.ones(matrix.shape[1]),
    )
    if res.status == 0:
        return float(sign * res.fun)
    if res.status == 2:
        raise DataError(
            "No integer table fits the published cells and the bounds; check the table."
        )
    return sign * -np.inf


def feasibility_intervals(
    matrix: sp.csr_matrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    *,
    integer: bool = False,
    targets: np.ndarray | None = None,
    need: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    groups: list[np.ndarray | tuple[np.ndarray, np.ndarray]] | None = None,
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum of each unknown subject to ``row_lower <= A x <= row_upper``.

    The unknowns are split into independent blocks first; each block is one HiGHS model.
    With ``need = (lower, upper, width, feasible_point)`` only the requirements
    ``min <= lower``, ``max >= upper`` and ``max - min >= width`` are decided (exactly), and the
    returned intervals may be narrower than the true ones (see :func:`_check_block`); there
    ``groups`` (arrays of unknowns, such as the sub-tables of a hierarchical table) let a large
    block prove most requirements on small models first (see :func:`_local_proofs`).
    With ``threads > 1`` independent blocks are decided at the same time (same answers).
    """
    matrix = sp.csr_matrix(matrix)
    k = matrix.shape[1]
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    want = np.ones(k, dtype=bool) if targets is None else np.zeros(k, dtype=bool)
    if targets is not None:
        want[targets] = True
    n_blocks, labels = components(matrix)
    csc = matrix.tocsc()
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=n_blocks))]

    def block(b: int) -> None:
        cols = order[bounds[b] : bounds[b + 1]]
        sub = csc[:, cols]
        # the rows with a non-zero (sorted): a count, not numpy 2's hashing np.unique
        rows = np.flatnonzero(np.bincount(sub.nonzero()[0], minlength=sub.shape[0]))
        sub = sub[rows].tocsr()
        rl, ru = row_lower[rows], row_upper[rows]
        cl, cu = col_lower[cols], col_upper[cols]
        if integer:
            for jj, j in enumerate(cols):
                if want[j]:
                    lo[j] = _interval_milp(sub, rl, ru, cl, cu, jj, 1.0)
                    hi[j] = _interval_milp(sub, rl, ru, cl, cu, jj, -1.0)
            return
        if need is not None:
            block_want = want
            if groups is not None and len(cols) >= LOCAL_PROOFS_FROM:
                block_want = _local_proofs(
                    csc, row_lower, row_upper, col_lower, col_upper, cols, want, need, groups,
                    lo, hi,
                )  # fmt: skip
                if not block_want[cols].any():
                    return
            _decide(sub, rl, ru, cl, cu, cols, block_want, need, lo, hi)
            return
        s = lp_scale(rl, ru, cl, cu)
        h = new_highs(sub, rl / s, ru / s, cl / s, cu / s)
        for jj, j in enumerate(cols):
            if want[j]:
                lo[j] = _interval_lp(h, jj, len(cols), highspy.ObjSense.kMinimize, scale=s)
                hi[j] = _interval_lp(h, jj, len(cols), highspy.ObjSense.kMaximize, scale=s)

    # each block reads the inputs and writes its own unknowns only: the blocks are decided in
    # threads (HiGHS releases the GIL), the largest first, with the same answers in any order
    todo = [b for b in range(n_blocks) if want[order[bounds[b] : bounds[b + 1]]].any()]
    if threads > 1 and len(todo) > 1 and k >= _THREADS_FROM:
        todo.sort(key=lambda b: bounds[b] - bounds[b + 1])
        with ThreadPoolExecutor(min(threads, len(todo))) as pool:
            for _ in pool.map(block, todo):
                pass
    else:
        for b in todo:
            block(b)
    return lo, hi
