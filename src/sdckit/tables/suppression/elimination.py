"""The Gaussian elimination of a table's model matrix (the engine of the Gauss method).

:mod:`.gauss` (the method), the rank test (exact disclosure of a pattern) and the joint
elimination of linked tables (``_gauss_linked``) all run this: the model matrix of a table
(:func:`build_model`, or :func:`model_from_entries` from its entries), the respondent groups
of the single-contributor cells (:func:`respondent_groups`), the order of the candidates
(:func:`candidate_order`), and :func:`eliminate`, which allocates the kernel's records of
arrays (``_gauss_state``) and runs the numba kernel (``_gauss_kernel``) over the order chunk
by chunk, with its time limits (:class:`Limits`).  See :mod:`.gauss` for the algorithm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import ParameterError
from sdckit.tables._contributors import single_unit
from sdckit.tables.table import Table

__all__ = [
    "BUDGET",
    "Elimination",
    "Limits",
    "Model",
    "build_model",
    "candidate_order",
    "eliminate",
    "fingerprint_weights",
    "kernel",
    "model_entries",
    "model_from_entries",
    "respondent_groups",
]


def kernel() -> Any:
    """The numba kernel module, imported on first use (numba adds a tenth of a second to
    ``import sdckit.tables``)."""
    import sdckit.tables.suppression._gauss_kernel as kernel_module

    return kernel_module


def _state() -> Any:
    """The records of the kernel's arrays (imported with the kernel)."""
    import sdckit.tables.suppression._gauss_state as state

    return state


TOL = 1e-9
#: The cells published first are taken by the fewest moves changing them at the time
#: (``False``: in the order given; the tests compare both), in chunks of at least
#: ``FEWEST_CHUNK`` and at most a ``1 / FEWEST_SHARE`` of those left.
FEWEST_FIRST = True
FEWEST_CHUNK = 256
FEWEST_SHARE = 64
#: In budget mode (the end of a time limit), a candidate whose update would merge more than
#: this many row entries is suppressed unchecked (a late candidate of the 1,000,000-cell
#: five-dimensional benchmark table merges about a million).
BUDGET = 1 << 15


def fingerprint_weights(m: int, prime: int) -> tuple[np.ndarray, np.ndarray]:
    """The two sets of random row weights of the fingerprints, residues in ``[1, prime)``.

    Seeded with a constant: the weights change no decision, only the work (a collision of
    two keys is checked exactly and then falls back to scanning the rows).  The tests
    replace this function by weights that collide on purpose.
    """
    rng = np.random.default_rng(0x5DC)
    w1 = rng.integers(1, prime, size=m, dtype=np.int64)
    w2 = rng.integers(1, prime, size=m, dtype=np.int64)
    return w1, w2


@dataclass(frozen=True)
class Limits:
    """When :func:`eliminate` goes to budget mode and when it stops deciding.

    From the time ``budget_at`` (of ``clock``), or from position ``stop_at``, a candidate
    whose update would merge more than ``budget`` row entries is suppressed unchecked; from
    ``deadline`` (or position ``cut_at``) the candidates left are decided without updates.
    ``None``: never.  The positions are test hooks.
    """

    budget_at: float | None = None
    deadline: float | None = None
    stop_at: int | None = None
    cut_at: int | None = None
    budget: int = BUDGET
    clock: Callable[[], float] = time.perf_counter


# --------------------------------------------------------------------------- the model
@dataclass
class Model:
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


def build_model(
    table: Table,
    live: np.ndarray,
    rows_mask: np.ndarray,
    groups: np.ndarray,
    weight: np.ndarray | None = None,
) -> Model:
    """Rows: the cells of ``rows_mask`` (inner, non-empty); columns: the ``live`` cells.

    With ``weight`` (one per cell), ``tie`` is ``X' X weight`` over every cell of the table:
    for each cell, the weight of all cells sharing an inner cell with it (counted per inner
    cell), the order of equal candidates (see :func:`candidate_order`).
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
) -> Model:
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
    return Model(
        m, n, row_cell.astype(np.int64), row_ptr, acc.astype(np.int32), col_ptr,
        col_row.astype(np.int32), n_rows, rgrp.astype(np.int64), gsize, own, cgrp, gptr, gcells,
        tie,
    )  # fmt: skip


@dataclass
class Elimination:
    """What :func:`eliminate` found."""

    decision: np.ndarray  # per position of the order
    unsafe: np.ndarray  # per cell: 1 computable, 2 computable by one respondent
    counters: np.ndarray
    mode: int  # the arithmetic at the end (K.FLOAT, K.INTEGER, K.MODULAR)
    modular_from: int  # the position from which it went on modulo P (-1: never)
    budget_from: int  # candidates decided before the budget mode (-1: never in it)
    #: (row, j, value) of the moves left in the columns ``extract[j]`` (see eliminate)
    extracted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def eliminate(
    model: Model,
    order: np.ndarray,
    kinds: np.ndarray,
    flags: np.ndarray,
    mode: int,
    progress: Callable[[str, int, int], Any] | None,
    *,
    limits: Limits | None = None,
    weights: Callable[[int, int], tuple[np.ndarray, np.ndarray]] | None = fingerprint_weights,
    extract: np.ndarray | None = None,
) -> Elimination:
    """Run the kernel over ``order`` chunk by chunk.

    With ``limits`` (:class:`Limits`), from its ``budget_at`` or ``stop_at`` the elimination
    goes on in budget mode, once every cell to publish first (``kinds`` 1, never suppressed)
    is decided: a candidate whose update would merge more than ``budget`` row entries is
    suppressed unchecked (``K.STOPPED``), the cheaper ones are decided as before.  From
    ``deadline`` (or position ``cut_at``) the candidates left are decided without updates:
    published when their column is zero (already computable from the published cells, so
    publishing them tells nothing new), suppressed (``K.STOPPED``) otherwise.  Suppressing a
    candidate is always safe, and every published cell passed the checks, so the pattern
    keeps every rule.

    The cells to publish first (``kinds`` 1, at the start of ``order``) are taken in the
    order of the fewest moves that change them *now*: that part of ``order`` is sorted again
    before every chunk (kept small there) by the current counts.  A cell changed by one move
    is published by dropping that move, with no update, and the fill-in of the others stays
    low.  The span of the moves once they are all published, and so every decision, does not
    depend on their order (on the 1,075,932-cell five-dimensional table of
    ``bench/bench_gauss.py``, the rank test of a pattern took 150 s in this order and 370 s in
    the order of the rows at the start).  ``order`` is permuted in place there, so
    ``decision`` refers to the order as it ends.

    ``weights`` gives the fingerprints' row weights (see :func:`fingerprint_weights`; rule
    R1 for one-cell respondents by fingerprints in the integer arithmetics); ``None`` scans
    the rows instead.  ``extract`` (cell numbers) asks for the entries of the moves left at
    the end in those cells' columns (``extracted``: exact integers unless ``mode`` went
    modular).

    Examples
    --------
    A total ``t`` (cell 0) of two inner cells ``a`` (1, primary) and ``b`` (2): publishing
    ``t`` reveals nothing, publishing ``b`` too would give ``a = t - b``, so ``b`` is a
    secondary suppression:

    >>> import numpy as np
    >>> K = kernel()
    >>> model = model_from_entries(
    ...     2, 3, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 2]), np.zeros(2, dtype=np.int64),
    ...     np.ones(3, dtype=bool), np.full(2, -1, dtype=np.int64))
    >>> flags = np.array([K.LIVE, K.LIVE | K.PRIM, K.LIVE], dtype=np.uint8)
    >>> res = eliminate(model, np.array([0, 2]), np.zeros(2, dtype=np.int8), flags, K.INTEGER,
    ...                 None)
    >>> res.decision.tolist() == [K.PUBLISHED, K.SECONDARY]
    True
    """
    K = kernel()
    limits = Limits() if limits is None else limits
    vdt = np.float64 if mode == K.FLOAT else np.int64
    lv = _live_matrix(model, flags, vdt)
    resp = _respondents(model)
    work = _work_space(model, vdt)
    buf = _buffers(int(lv.rl.max(initial=0)) * 2 + 16, vdt)
    ctr = lv.ctr
    hashed = weights is not None and mode != K.FLOAT and ctr[K.C_NATT] > 0
    fpr = _fingerprints(model, lv.flags, resp, weights if hashed else None)
    decision = np.zeros(len(order), dtype=np.int8)
    unsafe = np.zeros(model.n, dtype=np.int8)
    total = len(order)
    n_first = int(np.count_nonzero(kinds))
    pos = 0
    chunk = 256
    budget_pos = cut_from = -1  # positions where the budget mode and the cut began
    budget = 0
    stop_at, cut_at = limits.stop_at, limits.cut_at
    if progress is not None:
        progress("elimination", 0, total)
    while pos < total:
        now = limits.clock() if limits.budget_at is not None else 0.0
        due = (limits.budget_at is not None and now >= limits.budget_at) or (
            stop_at is not None and pos >= stop_at
        )
        if budget_pos < 0 and pos >= n_first and due:
            budget_pos, budget = pos, limits.budget
        if budget_pos >= 0 and (
            (limits.deadline is not None and now >= limits.deadline)
            or (cut_at is not None and pos >= cut_at)
        ):
            cut_from = pos
            break
        first_left = n_first - pos
        if FEWEST_FIRST and first_left > 1:
            by_count = pos + np.argsort(lv.cnt[order[pos:n_first]], kind="stable")
            order[pos:n_first] = order[by_count]
            chunk = min(chunk, max(FEWEST_CHUNK, first_left // FEWEST_SHARE))
        hi = min(total, pos + chunk)
        # the test hooks' positions end a chunk
        if budget_pos < 0 and stop_at is not None and pos < max(stop_at, n_first):
            hi = min(hi, max(stop_at, n_first))
        if budget_pos >= 0 and cut_at is not None:
            hi = min(hi, max(cut_at, pos + 1))
        started = time.perf_counter()
        lv, buf = K.run_chunk(
            order, kinds, pos, hi, decision, unsafe, lv, resp, work, buf, fpr,
            (mode, TOL, budget, hashed),
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
        computable = lv.cnt[order[cut_from:]] == 0
        decision[cut_from:] = np.where(computable, K.IN_SPAN, K.STOPPED)
        if progress is not None:
            progress("elimination", total, total)
    budget_from = budget_pos - n_first if budget_pos >= 0 else -1
    extracted = None
    if extract is not None:
        extracted = K.column_entries(lv, np.asarray(extract, dtype=np.int32))
    return Elimination(
        decision, unsafe, ctr, mode, int(ctr[K.C_MOD_FROM]) - 1, budget_from, extracted
    )


# --------------------------------------------------------------------------- the records
def _live_matrix(model: Model, flags: np.ndarray, vdt: type) -> Any:
    """The live matrix at the start: the rows of the model matrix (entries 1), room to grow."""
    K = kernel()
    m, n = model.m, model.n
    nnz = len(model.row_col)
    rl = np.diff(model.row_ptr).astype(np.int64)
    pc = np.zeros(max(3 * nnz, 1 << 16), dtype=np.int32)
    pc[:nnz] = model.row_col
    pv = np.zeros(pc.shape[0], dtype=vdt)
    pv[:nnz] = 1
    log = max(nnz, 1 << 16)
    cnt = model.n_rows.copy()
    flags = flags.copy()
    ctr = np.zeros(K.N_COUNTERS, dtype=np.int64)
    ctr[K.C_PTOP] = nnz
    ctr[K.C_NATT] = int(np.sum((flags & K.ATT) > 0))
    ctr[K.C_NMULTI] = int(np.sum(model.gsize >= 2))
    return _state().LiveMatrix(
        rs=model.row_ptr[:-1].copy(),
        rl=rl,
        rcap=rl.copy(),
        ralive=np.ones(m, dtype=np.uint8),
        pc=pc,
        pv=pv,
        cs=model.col_ptr[:-1].copy(),
        cl=model.n_rows.copy(),
        lp=model.col_row.copy(),
        chead=np.full(n, -1, dtype=np.int64),
        lg_row=np.zeros(log, dtype=np.int32),
        lg_next=np.zeros(log, dtype=np.int64),
        cnt=cnt,
        flags=flags,
        hist_p=np.bincount(cnt[(flags & K.PRIM) > 0], minlength=m + 2).astype(np.int64),
        hist_a=np.bincount(cnt[(flags & K.ATT) > 0], minlength=m + 2).astype(np.int64),
        ctr=ctr,
    )


def _respondents(model: Model) -> Any:
    return _state().Respondents(model.own, model.cgrp, model.gsize, model.gptr, model.gcells)


def _zeros(names: str, size: int, dtype: Any = np.int64) -> dict[str, np.ndarray]:
    """One array of ``size`` zeros for each of the (space-separated) ``names``."""
    return {name: np.zeros(size, dtype=dtype) for name in names.split()}


def _work_space(model: Model, vdt: type) -> Any:
    m, n = model.m, model.n
    return _state().WorkSpace(
        **_zeros("stamp stamp2 jr wr u_rs u_rl u_rcap u_off", m),
        **_zeros("jv wv fa fb fg", m, vdt),
        **_zeros("cstamp share u_cols u_cnt u_head", n),
        **_zeros("gseen gseen2", len(model.gsize)),
        tmp=np.zeros(2 * int(model.gsize.max(initial=1)) + 4, dtype=np.int64),
        rmap=np.zeros((m, 2), dtype=np.int64),
    )


def _buffers(width: int, vdt: type) -> Any:
    undo = max(4 * width, 1 << 16)
    return _state().Buffers(
        **_zeros("prv_c cur_c s_c", width, np.int32),
        **_zeros("prv_v cur_v s_v", width, vdt),
        fills=np.zeros(width, dtype=np.int64),
        ub_c=np.zeros(undo, dtype=np.int32),
        ub_v=np.zeros(undo, dtype=vdt),
    )


def _fingerprints(
    model: Model,
    flags: np.ndarray,
    resp: Any,
    weights: Callable[[int, int], tuple[np.ndarray, np.ndarray]] | None,
) -> Any:
    """The fingerprints of the primaries and one-cell respondents' cells (rule R1 by
    hashing), computed from ``weights``; without, arrays of one entry (not used)."""
    import sdckit.tables.suppression._gauss_modular as fp

    n_fp = model.n if weights is not None else 1
    m_fp = model.m if weights is not None else 1
    w1, w2 = (weights or fingerprint_weights)(m_fp, fp.P)
    tracked = int(np.sum((flags & (fp.PRIM | fp.ATT)) > 0)) if weights is not None else 0
    size = fp.table_size(tracked)

    fpr = _state().Fingerprints(
        w1=w1,
        w2=w2,
        **_zeros("h1 h2 keyof ccol nh1 nh2 nkey members", n_fp),
        **_zeros("tkey tcol", size),
        **_zeros("nw1 nw2", m_fp),
        **_zeros("out_a out_b", 1 << 16),
        tstat=np.zeros(2, dtype=np.int64),
    )
    if weights is not None:
        fp.init(model.col_ptr, model.col_row, flags, resp, fpr)
    return fpr


# --------------------------------------------------------------------------- the order
def respondent_groups(
    table: Table, rows_mask: np.ndarray, singletons: bool, contributors: Any
) -> np.ndarray:
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


def candidate_order(search: np.ndarray, model: Model, cells: np.ndarray) -> np.ndarray:
    """``cells`` by decreasing cost, then by decreasing ``tie`` (the weight of the cells they
    share inner cells with: of two equal cells the one in the larger margins is published),
    then by decreasing number of inner cells, then by number.

    The tie order is GaussSuppression's (``CandidatesDefault``: ``X' X (freq + 1)``); on
    SSBtools' z1 table it gives that package's published pattern (3 secondaries where the
    order by cell number gave 5).
    """
    keys = (cells, -model.n_rows[cells], -model.tie[cells], -search[cells])
    return cells[np.lexsort(keys)]
