"""Secondary suppression by Gaussian elimination (Langsrud's method, as in GaussSuppression).

The table is its model matrix ``X``: one row per non-empty inner cell, one column per cell,
``X[i, c] = 1`` when inner cell ``i`` lies under cell ``c`` (the published value of ``c`` is
``X[:, c] @ inner_values``).  A cell is computable from a set ``P`` of published cells exactly
when its column lies in the span of the columns of ``P``.

Algorithm (our implementation of the published method; the R code was read, not translated):

1. Cells that are never suppressed (frozen cells, empty cells above a primary) are published
   first, then the candidates (safe cells) in decreasing order of their cost of suppression
   (ties: the cell whose inner cells lie in the larger margins first, by ``X' X (|cost| + 1)``
   as GaussSuppression's default candidate order; then cells over more inner cells), so that
   expensive cells are published and cheap ones suppressed.  A candidate is published unless
   publishing it would make a primary computable (or break a singleton rule below); then it
   becomes a secondary suppression.
   Because the published span only grows and each addition was checked against every primary,
   no primary is computable from the final pattern.
2. The published span is kept as a Gaussian elimination: the live matrix is the Schur
   complement of the published columns (rows that are not yet eliminated, columns of the
   undecided candidates, of the primaries and of the respondents' single-contributor cells).
   Publishing ``c`` pivots on one row of ``c``'s current column (exact: a row with the
   smallest entry, a unit where there is one, and among those the row whose columns the
   other rows share most, the least fill-in; floating point: the largest entry); a primary
   ``b`` becomes computable exactly when its current column is proportional to ``c``'s,
   which is checked before the update.  The pivot choice does not change any decision (the
   span does not depend on it), only the work and the fill-in.
3. Arithmetic is exact: the model matrix has small integer entries, every row operation is
   ``a * row_j - b * row_p`` followed by division by the gcd of the row, so the entries stay
   integers.  When one reaches 2**31 (in tables of four or more dimensions the entries grow),
   the elimination goes on modulo the Mersenne prime ``P = 2**61 - 1`` from where it is: the
   integer state is exact, so its residues are the state of the same elimination modulo P,
   and every later operation is exact modulo P (no restart, no rounding).  A decision modulo
   P differs from the rational one only when P divides every one of the largest non-zero
   minors of the columns involved (a rank drops modulo P), integers that would have to be
   multiples of a 61-bit prime.  ``details["arithmetic"]`` says which arithmetic ended the
   elimination and ``details["modular_from"]`` at which candidate it went modular;
   ``arithmetic="modular"`` works modulo P from the start and ``"float"`` in floating point
   with a relative tolerance of 1e-9 (the two may be compared, as the tests do).

Singletons and one respondent's cells (the singleton problem).  An inner cell with a single
contributor is known to that respondent.  The rules enforced, for every primary ``b``:

* R0: ``b`` is not computable from the published cells;
* R1: ``b`` is not computable from the published cells together with the cells of any single
  respondent (``b`` itself excepted when it is that respondent's own cells); without
  ``contributors`` each single-contributor inner cell is its own respondent, with
  ``contributors`` the cells of one respondent are one attacker;
* R2: for a respondent with several single-contributor cells, no combination of his primary
  cells is computable from the published cells, or by another respondent from his own
  cells (rank tests of the two respondents' current columns).

R1 and R2 are checked exactly on the live matrix: ``b`` is computable with respondent ``g``'s
knowledge exactly when ``b``'s current column lies in the span of the current columns of
``g``'s cells (for one cell: is proportional to it).  While any respondent's cell is
undecided the update is tentative: it is done, the changed columns are checked (for a
respondent with several cells, against all of his cells, changed or not) and undone when a
rule fails.  For a respondent with one cell, R1 is found through column fingerprints (two
random linear functionals of every primary's and respondent's column modulo P, updated from
the pivot row alone; equal keys mark proportional columns, and one pair per key is checked
exactly on the rows, see ``_gauss_modular``), so the check costs the length of the pivot row
instead of its square.  This is at least as strong as GaussSuppression's defaults (``anySum`` for
frequency tables, ``numttHTT`` for magnitude tables): a respondent's own cells combined with
the published cells never reveal another primary, whatever the order of the elimination.
The tentative updates and the rank tests cost time on tables with many single-contributor
cells; ``details["undone"]`` counts the updates undone.

The linear-algebra guarantee ignores bounds and protection levels.  Tables up to
``repair_limit`` cells are then audited by LP (methods.md M11.2) with their protection levels;
failing primaries get their cheapest protecting cells (the attacker LP) and the elimination is
re-run with those cells forced, until the audit passes (or the LP repair adds the rest); a
primary that no pattern can protect raises an InfeasibleError.  The audit's LPs are the
costly part: a re-run whose pattern holds the audited one and the protecting cells is audited
only for the primaries short before (more suppressions never narrow an interval), and the
repair starts from the last audit's verdicts when they are those of the pattern.  On tables of
2,000 cells or more the pattern is instead completed sub-table by sub-table (the modular
method's protection of each failing sub-table, keeping every cell the elimination suppressed,
then the repair of the whole table), because one protecting LP over a whole large table takes
seconds; in tables of three or more dimensions the repair's protecting LPs are tried on one
sub-table's model first.  Above 200,000 cells the elimination's pattern is not audited before
the completion (its audit cost three times the completion and repair on a 1,000,000-cell
table, and it had primaries short of their levels, as in every large table measured); the
repair after the completion audits the result.

The elimination's time grows with its fill-in: seconds on two- and three-way tables of a
million cells, hours on a five-dimensional one of that size (the moves become long
combinations of inner cells).  ``elimination_time_limit`` bounds it: in its last 30 %, a
candidate whose update would merge more than ``_BUDGET`` row entries is suppressed
unchecked and the cheaper ones are decided as before; when it is over, every candidate left
is suppressed unless its column is already zero.  A suppressed
candidate never makes anything computable, so the rules hold for the pattern as before.

``forced`` cells are always suppressed, ``hidden`` cells are never published (suppressed in
the result, counted in ``details["hidden"]``) but need no protection, ``protected`` cells are
never suppressed (published first; status PROTECTED in the result).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

import sdckit.tables.suppression._common as _common
from sdckit.errors import InfeasibleError, ParameterError, SdcWarning
from sdckit.protection import Boolean, Instance, Integer, Options, Param, Real
from sdckit.tables._contributors import single_unit
from sdckit.tables._method import TableMethod
from sdckit.tables.audit._core import lp_audit
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    cell_costs,
    contract_table,
    make_result,
    protecting_cells,
    repair,
    search_costs,
    under_protected,
)
from sdckit.tables.table import CellStatus, Table
from sdckit.twins import function_twin

__all__ = ["GaussSuppression", "suppress_gauss"]


def _fingerprints() -> Any:
    """The fingerprint module of the kernel (numba), imported on first use."""
    import sdckit.tables.suppression._gauss_modular as fingerprints

    return fingerprints


def _kernel() -> Any:
    """The numba kernel module, imported on first use (numba adds a tenth of a second to
    ``import sdckit.tables``)."""
    import sdckit.tables.suppression._gauss_kernel as kernel

    return kernel


_CELLS = Instance(
    (np.ndarray, pl.Series, list, tuple), "cell numbers or a boolean mask, one entry per cell"
)
_IDS = Instance((np.ndarray, pl.Series, list, tuple), "one respondent number per cell (integers)")
_TOL = 1e-9
#: Above this many cells the elimination's pattern goes to the completion sub-table by
#: sub-table without an audit of its own (on the 1,000,000-cell benchmark table that audit
#: took 178 s, the completion and its repair about a minute).
_AUDIT_FIRST_UP_TO = 200_000
#: Rule R1 for one-cell respondents by column fingerprints (exact and modular arithmetic);
#: ``False`` scans the rows instead, as in floating point (the tests compare both paths).
_FINGERPRINTS = True
#: The cells published first are taken by the fewest moves changing them at the time
#: (``False``: in the order given; the tests compare both), in chunks of at least
#: ``_FEWEST_CHUNK`` and at most a ``1 / _FEWEST_SHARE`` of those left.
_FEWEST_FIRST = True
_FEWEST_CHUNK = 256
_FEWEST_SHARE = 64
#: The clock of ``elimination_time_limit`` (the tests replace it).
_CLOCK = time.perf_counter
#: In the last part of the time limit, a candidate whose update would merge more than this
#: many row entries is suppressed unchecked (a late candidate of the 1,000,000-cell
#: five-dimensional benchmark table merges about a million).
_BUDGET = 1 << 15
#: That last part: this fraction of the limit (on that table 0.3 gave 117,191 secondaries
#: worth 40.4 M and ended at 526 s of 600; 0.1 gave 153,724 worth 44.1 M).
_BUDGET_SHARE = 0.3
#: Test hooks: the positions of the order at which the elimination goes to the budget mode
#: and at which it stops deciding, as the time limit does (``None``: by the clock only).
_STOP_AT: int | None = None
_CUT_AT: int | None = None


def _fingerprint_weights(m: int, prime: int) -> tuple[np.ndarray, np.ndarray]:
    """The two sets of random row weights of the fingerprints, residues in ``[1, prime)``.

    Seeded with a constant: the weights change no decision, only the work (a collision of
    two keys is checked exactly and then falls back to scanning the rows).  The tests
    replace this function by weights that collide on purpose.
    """
    rng = np.random.default_rng(0x5DC)
    w1 = rng.integers(1, prime, size=m, dtype=np.int64)
    w2 = rng.integers(1, prime, size=m, dtype=np.int64)
    return w1, w2


# --------------------------------------------------------------------------- the model
@dataclass
class _Model:
    """The model matrix of a table and the roles of its cells, ready for the kernel."""

    m: int  # rows (non-empty inner cells)
    n: int  # cells
    row_cell: np.ndarray  # cell of each row
    row_ptr: np.ndarray  # CSR of the rows (live cells only)
    row_col: np.ndarray
    col_ptr: np.ndarray  # CSC (rows of each cell)
    col_row: np.ndarray
    n_rows: np.ndarray  # rows under each cell
    rgrp: np.ndarray  # respondent group of each single-contributor row (-1: other rows)
    gsize: np.ndarray
    own: np.ndarray  # the group all of a cell's rows belong to (-1: none)
    cgrp: np.ndarray  # the group of an attacker cell (-1: not an attacker)
    gptr: np.ndarray  # CSR of the cells of each group
    gcells: np.ndarray
    tie: np.ndarray  # X' X weight: the order of equal candidates


def _ancestors(h: Any) -> tuple[np.ndarray, np.ndarray]:
    """CSR of every node's ancestors (itself included), in increasing node order."""
    nodes, ancs = h.ancestor_pairs
    order = np.lexsort((ancs, nodes))
    ptr = np.zeros(h.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(nodes, minlength=h.size), out=ptr[1:])
    return ptr, ancs[order].astype(np.int64)


def _build_model(
    table: Table,
    live: np.ndarray,
    rows_mask: np.ndarray,
    groups: np.ndarray,
    weight: np.ndarray | None = None,
) -> _Model:
    """Rows: the cells of ``rows_mask`` (inner, non-empty); columns: the ``live`` cells.

    With ``weight`` (one per cell), ``tie`` is ``X' X weight`` over every cell of the table:
    for each cell, the weight of all cells sharing an inner cell with it (counted per inner
    cell), the order of equal candidates (see ``_order``).
    """
    row_cell = np.flatnonzero(rows_mask)
    pr, acc = model_entries(table, row_cell)
    return model_from_entries(
        len(row_cell), table.n_cells, pr, acc, row_cell, live, groups[row_cell], weight
    )


def model_entries(table: Table, row_cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The model matrix's entries ``(row, cell)``: every cell that holds inner cell
    ``row_cell[row]`` (itself and each of its totals), grouped by row, increasing in cell."""
    m = len(row_cell)
    shape = table.shape
    strides = np.ones(len(shape), dtype=np.int64)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    leaf = np.unravel_index(row_cell, shape)
    pr = np.arange(m, dtype=np.int64)
    acc = np.zeros(m, dtype=np.int64)
    for d, h in enumerate(table.hierarchies):
        ptr, anc = _ancestors(h)
        node = leaf[d][pr]
        cnt = ptr[node + 1] - ptr[node]
        first = np.repeat(ptr[node], cnt)
        offs = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        acc = np.repeat(acc, cnt) + anc[first + offs] * strides[d]
        pr = np.repeat(pr, cnt)
        del first, offs, node, cnt
    return pr, acc


def model_from_entries(
    m: int,
    n: int,
    pr: np.ndarray,
    acc: np.ndarray,
    row_cell: np.ndarray,
    live: np.ndarray,
    rgrp: np.ndarray,
    weight: np.ndarray | None = None,
) -> _Model:
    """The kernel's model from the entries ``(pr, acc)`` of an ``m x n`` 0/1 model matrix.

    ``pr`` must be grouped by row and increasing in ``acc`` within a row.  ``row_cell`` is
    the cell each row is (the attacker cell of a single-contributor row), ``rgrp`` the
    respondent group of each row (-1: none); only the ``live`` columns are kept.
    """
    tie = np.zeros(n)
    if weight is not None:
        row_weight = np.bincount(pr, weights=weight[acc], minlength=m)
        tie = np.bincount(acc, weights=row_weight[pr], minlength=n)
        del row_weight
    keep = live[acc]
    pr, acc = pr[keep], acc[keep]
    # rows: already grouped by row and increasing in cell number within a row
    row_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(pr, minlength=m), out=row_ptr[1:])
    order = np.argsort(acc, kind="stable")
    col_row = pr[order]
    del order
    n_rows = np.bincount(acc, minlength=n).astype(np.int64)
    col_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_rows, out=col_ptr[1:])
    g_count = int(rgrp.max(initial=-1)) + 1
    gsize = np.bincount(rgrp[rgrp >= 0], minlength=g_count).astype(np.int64)
    if len(gsize) == 0:
        gsize = np.zeros(1, dtype=np.int64)
    own = np.full(n, -1, dtype=np.int64)
    has = n_rows > 0
    if len(col_row):
        g_of = rgrp[col_row]
        starts = col_ptr[:-1][has]
        lo = np.minimum.reduceat(g_of, starts)
        hi = np.maximum.reduceat(g_of, starts)
        own[np.flatnonzero(has)] = np.where((lo == hi) & (lo >= 0), lo, -1)
    cgrp = np.full(n, -1, dtype=np.int64)
    single = rgrp >= 0
    cgrp[row_cell[single]] = rgrp[single]
    by_group = np.argsort(rgrp[single], kind="stable")
    gcells = row_cell[single][by_group].astype(np.int64)
    gptr = np.zeros(len(gsize) + 1, dtype=np.int64)
    np.cumsum(gsize, out=gptr[1:])
    return _Model(
        m, n, row_cell.astype(np.int64), row_ptr, acc.astype(np.int32), col_ptr,
        col_row.astype(np.int32), n_rows, rgrp.astype(np.int64), gsize, own, cgrp, gptr, gcells,
        tie,
    )  # fmt: skip


@dataclass
class _Elimination:
    decision: np.ndarray  # per position of the order
    unsafe: np.ndarray  # per cell: 1 computable, 2 computable by one respondent
    counters: np.ndarray
    mode: int  # the arithmetic at the end (K.FLOAT, K.INTEGER, K.MODULAR)
    modular_from: int  # the position from which it went on modulo P (-1: never)
    budget_from: int  # candidates decided before the budget mode (-1: never in it)
    #: (row, j, value) of the moves left in the columns ``extract[j]`` (see _eliminate)
    extracted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _eliminate(
    model: _Model,
    order: np.ndarray,
    kinds: np.ndarray,
    flags: np.ndarray,
    mode: int,
    progress: Callable[[str, int, int], Any] | None,
    budget_at: float | None = None,
    deadline: float | None = None,
    stop_at: int | None = None,
    cut_at: int | None = None,
    extract: np.ndarray | None = None,
) -> _Elimination:
    """Run the kernel over ``order`` chunk by chunk.

    From the time ``budget_at`` (of ``_CLOCK``), or from position ``stop_at``, the
    elimination goes on in budget mode, once every cell to publish first (``kinds`` 1, never
    suppressed) is decided: a candidate whose update would merge more than ``_BUDGET`` row
    entries is suppressed unchecked (``K.STOPPED``), the cheaper ones are decided as before.
    From ``deadline`` (or position ``cut_at``) the candidates left are decided without
    updates: published when their column is zero (already computable from the published
    cells, so publishing them tells nothing new), suppressed (``K.STOPPED``) otherwise.
    Suppressing a candidate is always safe, and every published cell passed the checks, so
    the pattern keeps every rule.

    The cells to publish first (``kinds`` 1, at the start of ``order``) are taken in the
    order of the fewest moves that change them *now*: that part of ``order`` is sorted again
    before every chunk (kept small there) by the current counts.  A cell changed by one move
    is published by dropping that move, with no update, and the fill-in of the others stays
    low.  The span of the moves once they are all published, and so every decision, does not
    depend on their order (on the 1,075,932-cell five-dimensional table of
    ``bench/bench_gauss.py``, the rank test of a pattern took 150 s in this order and 370 s in
    the order of the rows at the start).  ``order`` is permuted in place there, so
    ``decision`` refers to the order as it ends.

    ``extract`` (cell numbers) asks for the entries of the moves left at the end in those
    cells' columns (``extracted``: exact integers unless ``mode`` went modular).
    """
    K = _kernel()
    m, n = model.m, model.n
    vdt = np.float64 if mode == K.FLOAT else np.int64
    nnz = len(model.row_col)
    rs = model.row_ptr[:-1].copy()
    rl = np.diff(model.row_ptr).astype(np.int64)
    rcap = rl.copy()
    ralive = np.ones(m, dtype=np.uint8)
    pool = max(3 * nnz, 1 << 16)
    pc = np.zeros(pool, dtype=np.int32)
    pc[:nnz] = model.row_col
    pv = np.zeros(pool, dtype=vdt)
    pv[:nnz] = 1
    cs = model.col_ptr[:-1].copy()
    cl = model.n_rows.copy()
    lp = model.col_row.copy()
    chead = np.full(n, -1, dtype=np.int64)
    log = max(nnz, 1 << 16)
    lg_row = np.zeros(log, dtype=np.int32)
    lg_next = np.zeros(log, dtype=np.int64)
    cnt = model.n_rows.copy()
    flags = flags.copy()
    hist_p = np.bincount(cnt[(flags & K.PRIM) > 0], minlength=m + 2).astype(np.int64)
    hist_a = np.bincount(cnt[(flags & K.ATT) > 0], minlength=m + 2).astype(np.int64)
    ctr = np.zeros(K.N_COUNTERS, dtype=np.int64)
    ctr[K.C_PTOP] = nnz
    ctr[K.C_NATT] = int(np.sum((flags & K.ATT) > 0))
    ctr[K.C_NMULTI] = int(np.sum(model.gsize >= 2))
    n_groups = len(model.gsize)
    gmax = int(model.gsize.max(initial=1))
    stamp = np.zeros(m, dtype=np.int64)
    stamp2 = np.zeros(m, dtype=np.int64)
    cstamp = np.zeros(n, dtype=np.int64)
    share = np.zeros(n, dtype=np.int64)
    rmap = np.zeros((m, 2), dtype=np.int64)
    gseen = np.zeros(n_groups, dtype=np.int64)
    gseen2 = np.zeros(n_groups, dtype=np.int64)
    jr = np.zeros(m, dtype=np.int64)
    jv = np.zeros(m, dtype=vdt)
    keys = np.zeros(m, dtype=np.int64)
    width = int(rl.max(initial=0)) * 2 + 16
    prv_c = np.zeros(width, dtype=np.int32)
    prv_v = np.zeros(width, dtype=vdt)
    cur_c = np.zeros(width, dtype=np.int32)
    cur_v = np.zeros(width, dtype=vdt)
    s_c = np.zeros(width, dtype=np.int32)
    s_v = np.zeros(width, dtype=vdt)
    fills = np.zeros(width, dtype=np.int64)
    u_rs = np.zeros(m, dtype=np.int64)
    u_rl = np.zeros(m, dtype=np.int64)
    u_rcap = np.zeros(m, dtype=np.int64)
    u_cols = np.zeros(n, dtype=np.int64)
    u_cnt = np.zeros(n, dtype=np.int64)
    u_head = np.zeros(n, dtype=np.int64)
    ub_c = np.zeros(max(4 * width, 1 << 16), dtype=np.int32)
    ub_v = np.zeros(ub_c.shape[0], dtype=vdt)
    u_off = np.zeros(m, dtype=np.int64)
    wr = np.zeros(m, dtype=np.int64)
    wv = np.zeros(m, dtype=vdt)
    tmp = np.zeros(2 * gmax + 4, dtype=np.int64)
    fa = np.zeros(m, dtype=vdt)
    fb = np.zeros(m, dtype=vdt)
    fg = np.zeros(m, dtype=vdt)
    # fingerprints of the primaries and one-cell respondents' cells (rule R1 by hashing)
    fp = _fingerprints()
    hashed = _FINGERPRINTS and mode != K.FLOAT and ctr[K.C_NATT] > 0
    n_fp = n if hashed else 1
    m_fp = m if hashed else 1
    w1, w2 = _fingerprint_weights(m_fp, fp.P)
    h1 = np.zeros(n_fp, dtype=np.int64)
    h2 = np.zeros(n_fp, dtype=np.int64)
    keyof = np.zeros(n_fp, dtype=np.int64)
    size = fp.table_size(int(np.sum((flags & (K.PRIM | K.ATT)) > 0)) if hashed else 0)
    tkey = np.zeros(size, dtype=np.int64)
    tcol = np.zeros(size, dtype=np.int64)
    tstat = np.zeros(2, dtype=np.int64)
    nw1 = np.zeros(m_fp, dtype=np.int64)
    nw2 = np.zeros(m_fp, dtype=np.int64)
    ccol = np.zeros(n_fp, dtype=np.int64)
    nh1 = np.zeros(n_fp, dtype=np.int64)
    nh2 = np.zeros(n_fp, dtype=np.int64)
    nkey = np.zeros(n_fp, dtype=np.int64)
    fp_members = np.zeros(n_fp, dtype=np.int64)
    out_a = np.zeros(1 << 16, dtype=np.int64)
    out_b = np.zeros(1 << 16, dtype=np.int64)
    if hashed:
        fp.init(
            model.col_ptr, model.col_row, flags, model.cgrp, model.gsize, w1, w2, h1, h2, keyof,
            tkey, tcol, tstat,
        )  # fmt: skip
    decision = np.zeros(len(order), dtype=np.int8)
    unsafe = np.zeros(n, dtype=np.int8)
    total = len(order)
    n_first = int(np.count_nonzero(kinds))
    pos = 0
    chunk = 256
    budget_pos = cut_from = -1  # positions where the budget mode and the cut began
    budget = 0
    if progress is not None:
        progress("elimination", 0, total)
    while pos < total:
        now = _CLOCK() if budget_at is not None else 0.0
        due = (budget_at is not None and now >= budget_at) or (
            stop_at is not None and pos >= stop_at
        )
        if budget_pos < 0 and pos >= n_first and due:
            budget_pos, budget = pos, _BUDGET
        if budget_pos >= 0 and (
            (deadline is not None and now >= deadline) or (cut_at is not None and pos >= cut_at)
        ):
            cut_from = pos
            break
        first_left = n_first - pos
        if _FEWEST_FIRST and first_left > 1:
            by_count = pos + np.argsort(cnt[order[pos:n_first]], kind="stable")
            order[pos:n_first] = order[by_count]
            chunk = min(chunk, max(_FEWEST_CHUNK, first_left // _FEWEST_SHARE))
        hi = min(total, pos + chunk)
        # the test hooks' positions end a chunk
        if budget_pos < 0 and stop_at is not None and pos < max(stop_at, n_first):
            hi = min(hi, max(stop_at, n_first))
        if budget_pos >= 0 and cut_at is not None:
            hi = min(hi, max(cut_at, pos + 1))
        started = time.perf_counter()
        (
            pc, pv, lp, lg_row, lg_next, prv_c, prv_v, cur_c, cur_v, s_c, s_v, fills, ub_c, ub_v,
        ) = K.run_chunk(
            order, kinds, pos, hi, decision, unsafe,
            rs, rl, rcap, ralive, pc, pv,
            cs, cl, lp, chead, lg_row, lg_next,
            cnt, flags, model.own, model.cgrp, model.gsize, model.gptr, model.gcells,
            hist_p, hist_a,
            ctr, stamp, stamp2, cstamp, share, rmap, gseen, gseen2,
            jr, jv, keys, prv_c, prv_v, cur_c, cur_v, s_c, s_v, fills,
            u_rs, u_rl, u_rcap, u_cols, u_cnt, u_head, ub_c, ub_v, u_off,
            wr, wv, tmp, fa, fb, fg,
            hashed, w1, w2, h1, h2, keyof, tkey, tcol, tstat, nw1, nw2, ccol, nh1, nh2, nkey,
            fp_members, out_a, out_b,
            mode, _TOL, budget,
        )  # fmt: skip
        mode = int(ctr[K.C_MODE])
        pos = hi
        spent = time.perf_counter() - started
        # about half a second per chunk between progress reports
        chunk = int(min(max(chunk * (0.5 / max(spent, 1e-3)), 64), 1 << 20))
        if progress is not None:
            progress("elimination", pos, total)
    if cut_from >= 0:
        # the candidates left: published if already computable, else suppressed
        computable = cnt[order[cut_from:]] == 0
        decision[cut_from:] = np.where(computable, K.IN_SPAN, K.STOPPED)
        if progress is not None:
            progress("elimination", total, total)
    budget_from = budget_pos - n_first if budget_pos >= 0 else -1
    extracted = None
    if extract is not None:
        cols = np.asarray(extract, dtype=np.int32)
        extracted = K.column_entries(rs, rl, ralive, pc, pv, cols)
    return _Elimination(
        decision, unsafe, ctr, mode, int(ctr[K.C_MOD_FROM]) - 1, budget_from, extracted
    )


# --------------------------------------------------------------------------- the method
def _cells(table: Table, cells: Any, name: str) -> np.ndarray:
    if cells is None:
        return np.zeros(table.n_cells, dtype=bool)
    if isinstance(cells, pl.Series):
        cells = cells.to_numpy()
    return table._cells_mask(cells, name)


def _groups(table: Table, rows_mask: np.ndarray, singletons: bool, contributors: Any) -> np.ndarray:
    """The respondent group of each single-contributor inner cell (-1 elsewhere)."""
    groups = np.full(table.n_cells, -1, dtype=np.int64)
    if not singletons:
        return groups
    single = rows_mask & (table.n_contributors == 1)
    if contributors is None:
        # a table built with respondent/holding ids knows whose cells they are
        contributors = single_unit(table.contributions, table.n_cells)
    if contributors is None:
        groups[single] = np.arange(int(single.sum()))
        return groups
    ids = contributors.to_numpy() if isinstance(contributors, pl.Series) else contributors
    ids = np.asarray(ids)
    if ids.shape != (table.n_cells,) or not (
        np.issubdtype(ids.dtype, np.integer)
        or (np.issubdtype(ids.dtype, np.floating) and np.all(ids[single] == np.round(ids[single])))
    ):
        raise ParameterError(
            "GaussSuppression: 'contributors' must hold one integer respondent number per cell "
            "(used for the single-contributor inner cells)."
        )
    _, codes = np.unique(ids[single].astype(np.int64), return_inverse=True)
    groups[single] = codes
    return groups


def _order(search: np.ndarray, model: _Model, cells: np.ndarray) -> np.ndarray:
    """``cells`` by decreasing cost, then by decreasing ``tie`` (the weight of the cells they
    share inner cells with: of two equal cells the one in the larger margins is published),
    then by decreasing number of inner cells, then by number.

    The tie order is GaussSuppression's (``CandidatesDefault``: ``X' X (freq + 1)``); on
    SSBtools' z1 table it gives that package's published pattern (3 secondaries where the
    order by cell number gave 5).
    """
    keys = (cells, -model.n_rows[cells], -model.tie[cells], -search[cells])
    return cells[np.lexsort(keys)]


def _gauss_pattern(
    table: Table,
    w: np.ndarray,
    *,
    singletons: bool,
    contributors: Any,
    forced: np.ndarray,
    hidden: np.ndarray,
    frozen: np.ndarray,
    arithmetic: str,
    progress: Callable[[str, int, int], Any] | None,
    secondary_zeros: bool = False,
    time_limit: float | None = None,
) -> tuple[Table, dict[str, Any], np.ndarray, np.ndarray]:
    """One run of the elimination; returns the table, figures, and the unsafe primaries."""
    K = _kernel()
    t0 = time.perf_counter()
    status = table.status
    primary = status == CellStatus.PRIMARY
    empty = status == CellStatus.EMPTY
    inner = ~table.is_total
    # with secondary_zeros the empty cells are candidates (last: their cost is 0), and the
    # empty inner cells rows of the model (unknowns once a zero is suppressed)
    zero_candidate = empty & ~forced & ~hidden & ~frozen & secondary_zeros
    rows_mask = inner & (~empty | zero_candidate)
    candidate = ((status == CellStatus.SAFE) | zero_candidate) & ~forced & ~hidden & ~frozen
    publish_first = (frozen | (status == CellStatus.PROTECTED) | empty) & ~primary & ~candidate
    groups = _groups(table, rows_mask, singletons, contributors)
    attacker = groups >= 0
    live = primary | candidate | publish_first | attacker
    if progress is not None:
        progress("model", 0, 1)
    model = _build_model(table, live, rows_mask, groups, np.abs(w) + 1.0)
    if progress is not None:
        progress("model", 1, 1)
    t1 = time.perf_counter()
    search = search_costs(table, w)
    has_rows = model.n_rows > 0
    first = np.flatnonzero(publish_first & has_rows)
    cand = np.flatnonzero(candidate & has_rows)
    order = np.r_[_order(search, model, first), _order(search, model, cand)]
    kinds = np.r_[np.ones(len(first), dtype=np.int8), np.zeros(len(cand), dtype=np.int8)]
    flags = np.zeros(table.n_cells, dtype=np.uint8)
    flags[live & has_rows] = K.LIVE
    flags[primary & has_rows] |= K.PRIM
    flags[attacker] |= K.ATT
    modes = {"exact": K.INTEGER, "modular": K.MODULAR, "float": K.FLOAT}
    budget_at = deadline = None
    if time_limit is not None:
        deadline = _CLOCK() + time_limit
        budget_at = deadline - _BUDGET_SHARE * time_limit
    res = _eliminate(
        model, order, kinds, flags, modes[arithmetic], progress, budget_at=budget_at,
        deadline=deadline, stop_at=_STOP_AT, cut_at=_CUT_AT,
    )  # fmt: skip
    t2 = time.perf_counter()
    dec = res.decision
    secondary = np.zeros(table.n_cells, dtype=bool)
    secondary[order[(dec == K.SECONDARY) | (dec == K.SECONDARY_SINGLE) | (dec == K.STOPPED)]] = True
    secondary |= (forced | hidden) & ~primary & ~empty & (status != CellStatus.PROTECTED)
    zeros_suppressed = int(np.sum(secondary & empty))
    new_status = status.copy()
    new_status[secondary & (status != CellStatus.SECONDARY)] = CellStatus.SECONDARY
    new_status[frozen & ~primary] = CellStatus.PROTECTED
    out = table.with_status(status=new_status)
    exposed = np.flatnonzero(primary & ~has_rows)
    unsafe_exact = np.union1d(np.flatnonzero(res.unsafe == 1), exposed)
    unsafe_single = np.flatnonzero(res.unsafe == 2)
    ctr = res.counters
    details = {
        "rows": model.m,
        "model_nonzeros": len(model.row_col),
        "candidates": len(cand),
        "updates": int(ctr[K.C_STEPS]),
        "undone": int(ctr[K.C_UNDO]),
        "secondary_reveal": int(np.sum(dec == K.SECONDARY)),
        "secondary_singleton": int(np.sum(dec == K.SECONDARY_SINGLE)),
        "hidden": int(hidden.sum()),
        "secondary_zeros": zeros_suppressed,
        "arithmetic": {K.INTEGER: "exact", K.MODULAR: "modular", K.FLOAT: "float"}[res.mode],
        "modular_from": res.modular_from,
        "stopped": None if res.budget_from < 0 else "elimination_time_limit",
        "budget_from": len(cand) if res.budget_from < 0 else res.budget_from,
        "undecided": int(np.sum(dec == K.STOPPED)),
        "work": int(ctr[K.C_WORK]),
        "fingerprint_pairs": int(ctr[K.C_FP_PAIRS]),
        "fingerprint_scans": int(ctr[K.C_FP_SCANS]),
        "timings": {"model": t1 - t0, "elimination": t2 - t1},
    }
    if ctr[K.C_BROKEN]:
        details["singleton_rules_broken_by_frozen"] = int(ctr[K.C_BROKEN])
    return out, details, unsafe_exact, unsafe_single


class GaussSuppression(TableMethod):
    """Secondary suppression by Gaussian elimination (Langsrud's method, GaussSuppression).

    The candidates (safe cells) are taken by decreasing cost; each is published unless that
    would make a primary computable from the published cells (exact Gaussian elimination of
    the table's model matrix), or computable by one respondent who knows his own
    single-contributor cells; then it is suppressed.  Tables up to ``repair_limit`` cells are
    audited by LP with their protection levels and repaired (from 2,000 cells on, completed
    sub-table by sub-table as in the modular method).  See :mod:`.gauss` for the algorithm
    and the singleton rules.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing a cell; candidates are published in decreasing order of cost
        (equal costs: the cell in the larger margins first, GaussSuppression's default
        order).
    singletons : bool, default True
        Protect against respondents who know their own single-contributor cells (rules R1,
        R2 of :mod:`.gauss`).
    contributors : array, optional
        One respondent number per cell; single-contributor inner cells with the same number
        belong to one respondent (default: the unit of each such cell when the table was
        built with respondent or holding ids, ``Table.contributions``; else each is its own).
    forced, hidden, protected : array, optional
        Cells (numbers or a boolean mask) always suppressed; never published but needing no
        protection (suppressed in the result); never suppressed.
    repair_limit : int, default 2000000
        Tables with at most this many cells are audited by LP and repaired (0: never).  The
        elimination guarantees only that no primary is computable exactly; on large tables
        its pattern has primaries short of their levels, so the default covers them (a
        1,000,000-cell two-way table: 7 s of elimination, about a minute in all).
    max_rounds : int, default 5
        Rounds of audit, cheapest protecting cells and re-run of the elimination.
    arithmetic : {"exact", "modular", "float"}, default "exact"
        Integer elimination, going on modulo the prime ``2**61 - 1`` when an entry reaches
        ``2**31`` (see :mod:`.gauss`); modulo that prime from the start; or floating point.
    secondary_zeros : bool, default False
        Empty (zero) cells may be suppressed as secondaries; they are the last candidates
        (cost 0), as with GaussSuppression's ``secondaryZeros = TRUE``.  By default an empty
        cell is always published.  ``details["secondary_zeros"]`` counts those suppressed.
    elimination_time_limit : float, optional
        Seconds allowed for each run of the elimination (the audit and repair after it are
        not limited).  In the last 30 % of it, a candidate whose update would merge more
        than 32,768 row entries is suppressed unchecked and the cheaper ones are decided as
        before; when it is over, every candidate left is suppressed unless already
        computable from the published cells.  Suppressing a candidate is always safe, so the
        pattern keeps every rule, at the cost of more suppressions.  ``details["stopped"]``
        is then ``"elimination_time_limit"``, ``details["budget_from"]`` counts the
        candidates decided before that part and ``details["undecided"]`` those
        suppressed unchecked; a warning says so.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, GaussSuppression, MarkedCells, apply_rules
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = GaussSuppression().apply(apply_rules(t, MarkedCells(cells=[4], upper=1)))
    >>> res.n_secondary, res.protected
    (3, True)
    """

    name: ClassVar[str] = "Gaussian elimination suppression"
    alias: ClassVar[str] = "gauss"
    kind: ClassVar[str] = "suppression"
    description: ClassVar[str] = (
        "Protects every primary cell by publishing the other cells in order of cost unless a "
        "Gaussian elimination shows that one would make a primary computable (Gauss method)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cost": COST_PARAM,
        "singletons": Param(
            Boolean(),
            help="a respondent's own single-contributor cells must not reveal another primary",
        ),
        "contributors": Param(
            None, _IDS, help="respondent number of each cell (cells of one respondent)"
        ),
        "forced": Param(None, _CELLS, help="cells that are always suppressed"),
        "hidden": Param(
            None, _CELLS, help="cells never published that need no protection themselves"
        ),
        "protected": Param(None, _CELLS, help="cells that are never suppressed"),
        "repair_limit": Param(
            Integer(minimum=0),
            help="tables with at most this many cells are audited and repaired (0: never)",
        ),
        "max_rounds": Param(
            Integer(minimum=1), help="rounds of audit and re-run with protecting cells"
        ),
        "arithmetic": Param(
            Options("exact", "modular", "float"),
            help="exact integer elimination (modulo a 61-bit prime once entries grow), modulo "
            "that prime from the start, or floating point",
        ),
        "secondary_zeros": Param(
            Boolean(),
            help="empty (zero) cells may be suppressed as secondaries, taken last "
            "(GaussSuppression's secondaryZeros); otherwise they are always published",
        ),
        "elimination_time_limit": Param(
            Real(minimum=0, min_open=True),
            None,
            help="seconds allowed for each run of the elimination; in its last 30 % the "
            "costly candidates, after it the others (unless computable), are suppressed unchecked",
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        singletons: bool = True,
        contributors: Any = None,
        forced: Any = None,
        hidden: Any = None,
        protected: Any = None,
        repair_limit: int = 2_000_000,
        max_rounds: int = 5,
        arithmetic: str = "exact",
        secondary_zeros: bool = False,
        elimination_time_limit: float | None = None,
    ) -> None:
        self.cost = cost
        self.singletons = singletons
        self.contributors = contributors
        self.forced = forced
        self.hidden = hidden
        self.protected = protected
        self.repair_limit = repair_limit
        self.max_rounds = max_rounds
        self.arithmetic = arithmetic
        self.secondary_zeros = secondary_zeros
        self.elimination_time_limit = elimination_time_limit

    def apply(
        self, table: Table, *, progress: Callable[[str, int, int], Any] | None = None
    ) -> SuppressionResult:
        """Protect the primaries of ``table`` by Gaussian elimination.

        ``progress(stage, done, total)``, if given, is called during the model, the
        elimination and the audit (a call argument: how far the work is, not how it is done).

        Returns
        -------
        SuppressionResult
            ``details`` holds the model size, pivots, the secondaries due to a reveal and to
            the singleton rules, the arithmetic used, the cells added by the LP repair and
            (``timings``) the seconds of each phase; ``protected`` is the verdict of the final
            LP audit (False above ``repair_limit``: not audited).

        Raises
        ------
        InfeasibleError
            A primary that no pattern can protect (computable from cells that are never
            suppressed, or too little room for its protection levels).
        """
        self.validate_params()
        start = time.perf_counter()
        w = cell_costs(table, self.cost)
        forced = _cells(table, self.forced, "forced")
        hidden = _cells(table, self.hidden, "hidden")
        frozen = _cells(table, self.protected, "protected")
        if np.any(frozen & (forced | hidden)):
            raise ParameterError(
                "GaussSuppression: a cell is both 'protected' (never suppressed) and 'forced' "
                "or 'hidden'; give each cell one role."
            )
        if np.any(frozen & table.primary):
            raise ParameterError(
                "GaussSuppression: a primary cell is listed in 'protected'; primaries are "
                "always suppressed."
            )
        kwargs: dict[str, Any] = {
            "singletons": self.singletons,
            "contributors": self.contributors,
            "hidden": hidden,
            "frozen": frozen,
            "arithmetic": self.arithmetic,
            "progress": progress,
            "secondary_zeros": self.secondary_zeros,
            "time_limit": self.elimination_time_limit,
        }
        out, details, unsafe_exact, unsafe_single = _gauss_pattern(
            table, w, forced=forced, **kwargs
        )
        if len(unsafe_exact):
            raise _unprotectable(table, unsafe_exact)
        if len(unsafe_single):
            warnings.warn(
                f"{len(unsafe_single)} primary cell(s) can be computed by a respondent who "
                "knows his own single-contributor cells, from cells that are never suppressed "
                "(frozen or empty cells); suppress fewer frozen cells to protect them.",
                SdcWarning,
                stacklevel=2,
            )
        details["singleton_unsafe"] = len(unsafe_single)
        verdict: bool | None = None
        repaired = 0
        rounds = 0
        t_audit = time.perf_counter()
        if self.repair_limit and table.n_cells <= self.repair_limit:
            extra = np.zeros(table.n_cells, dtype=bool)
            # the audit is the costly part (LPs over all suppressed cells): `known` is the
            # set of under-protected primaries of `out` when it is known without a full audit
            known: np.ndarray | None = None
            for rounds in range(1, self.max_rounds + 1):
                if progress is not None:
                    progress("audit", rounds - 1, self.max_rounds)
                if table.n_cells > _AUDIT_FIRST_UP_TO:
                    # the elimination's pattern of a table this large has primaries short of
                    # their levels (in every table measured), and its audit costs more than
                    # the completion (whose repair audits the result): complete it at once
                    out, added, verdict = _complete_by_subtables(out, w, self.max_rounds)
                    repaired += added
                    break
                bad = (
                    known if known is not None else lp_audit(out, intervals="check").under_protected
                )
                known = None
                if not len(bad):
                    verdict = True
                    break
                if table.n_cells >= _common.LOCAL_PROTECTION_FROM:
                    # a large table: the elimination's pattern completed sub-table by
                    # sub-table (more suppressions keep every rule of the elimination)
                    out, added, verdict = _complete_by_subtables(out, w, self.max_rounds)
                    repaired += added
                    break
                fresh = protecting_cells(out, w, bad)
                if not fresh.any():
                    known = bad
                    break
                # re-run the elimination with the cheapest protecting cells forced
                extra |= fresh
                before = out.suppressed | fresh
                out, details, _, _ = _gauss_pattern(table, w, forced=forced | extra, **kwargs)
                if not np.any(before & ~out.suppressed):
                    # more suppressions never narrow an interval: only the primaries short
                    # before can be short now
                    known = under_protected(out, bad)
            repaired += int((extra & out.secondary).sum())
            if verdict is None:
                out, added, verdict = repair(
                    out, w, max_rounds=self.max_rounds, method="gauss", bad=known
                )
                repaired += added
            if progress is not None:
                progress("audit", self.max_rounds, self.max_rounds)
        elif self.repair_limit:
            warnings.warn(
                f"The table has {table.n_cells} cells, more than repair_limit="
                f"{self.repair_limit}: no primary can be computed from the relations (also "
                "by a respondent from his own cells), but the pattern was not audited by LP "
                "for the protection levels and the a priori bounds (protected=False). Audit "
                "it (sdckit.tables.audit, or rank_audit for exact disclosure; a published "
                "export audits it first), or raise repair_limit.",
                SdcWarning,
                stacklevel=2,
            )
        details["timings"] = {**details["timings"], "audit": time.perf_counter() - t_audit}
        if details["stopped"]:
            warnings.warn(
                f"GaussSuppression: elimination_time_limit={self.elimination_time_limit} s "
                f"ran short after {details['budget_from']} of {details['candidates']} "
                f"candidates; {details['undecided']} of the others were suppressed without "
                "the check (too costly to decide in time). The pattern keeps every rule but "
                "suppresses more than a full run; raise elimination_time_limit for fewer "
                "suppressions.",
                SdcWarning,
                stacklevel=2,
            )
        details.update(repaired=repaired, audit_rounds=rounds)
        return make_result(
            out, table, "gauss", w, False, time.perf_counter() - start, verdict, **details
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries."""
        return cls(), contract_table()


def _complete_by_subtables(table: Table, w: np.ndarray, max_rounds: int) -> tuple[Table, int, bool]:
    """Interval protection of a large table's elimination pattern, sub-table by sub-table.

    The modular method's protection (each failing sub-table's cheapest completion, then the
    repair of the whole table, its protecting LPs tried on sub-tables first in tables of
    three or more dimensions) keeps every cell the elimination suppressed, so the pattern
    stays safe from exact disclosure and from the respondents' own cells.  Returns the table,
    the cells added and the verdict of the final audit.
    """
    from sdckit.tables.suppression.modular import ModularSuppression

    before = table.suppressed
    out = ModularSuppression(cost=w, singletons=False, repair_limit=0).apply(table).table
    # the whole table's protecting LPs take seconds each from three dimensions on
    out, _, verdict = repair(
        out, w, max_rounds=max_rounds, method="gauss", local=len(table.shape) >= 3
    )
    added = int((out.suppressed & ~before).sum())
    return out, added, verdict


def _unprotectable(table: Table, cells: np.ndarray) -> InfeasibleError:
    shown = "; ".join(table.cell_position(int(c)) for c in cells[:5])
    more = f"; and {len(cells) - 5} more" if len(cells) > 5 else ""
    return InfeasibleError(
        f"The gauss method cannot protect {len(cells)} primary cell(s), and no suppression "
        f"pattern can: {shown}{more}: each can be computed from cells that are never "
        "suppressed (empty cells, frozen cells or 'protected'). Freeze fewer cells, or mark "
        "fewer empty cells as primary. Table.cell_label(number) gives the codes of a cell."
    )


@function_twin(GaussSuppression, roles=False)
def suppress_gauss(table: Table, **params: Any) -> SuppressionResult:
    """Secondary suppression by Gaussian elimination (Langsrud's method).

    The function form of :class:`GaussSuppression`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    cost, singletons, contributors, forced, hidden, protected, repair_limit, max_rounds,
    arithmetic, secondary_zeros, elimination_time_limit
        The parameters of :class:`GaussSuppression`, by name (keyword arguments only).
        (Progress is a call argument of :meth:`GaussSuppression.apply`.)

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_gauss
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> suppress_gauss(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """
