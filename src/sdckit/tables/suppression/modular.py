"""Secondary suppression for large hierarchical tables, by decomposition (HiTaS-like, M11.5).

The table is split into its non-hierarchical sub-tables (one total or sub-total per dimension
with its children), processed top-down.  In each sub-table the suppressed cells (primaries with
their levels; cells suppressed elsewhere, which must not be disclosed exactly) are audited by
LP on the sub-table's own relations; every cell that fails gets the cheapest protection the
attacker LP allows (the cells through which it can move by its level, found by a min-cost LP on
the sub-table).  Suppressions propagate to the sub-tables that share the cell, and the passes
repeat until every sub-table passes its audit.  Tables up to ``repair_limit`` cells are then
audited as a whole and repaired; a primary that no pattern can protect raises an
InfeasibleError.  Zero-valued cells carry a cost penalty (used only where needed).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any, ClassVar

import numpy as np

from sdckit._workers import AllCores, n_workers
from sdckit.protection import Boolean, Integer, Param, Real
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables._method import TableMethod
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    candidates,
    capacities,
    cell_costs,
    contract_table,
    fix_singletons,
    make_result,
    protect_with_lp,
    repair_within_limit,
    requirements,
    search_costs,
    warn_time_limited,
)
from sdckit.tables.suppression._solver import (
    Hopeless,
    Problem,
    SolverTrouble,
    _Separator,
    solve_problem,
)
from sdckit.tables.suppression._subtables import (
    local_relations,
    rectangle_moves,
    shared_upward,
    subtables,
    waves,
)
from sdckit.tables.table import Table
from sdckit.twins import function_twin

__all__ = ["ModularSuppression", "suppress_modular"]


def _local_failures(
    table: Table, cells: np.ndarray, supp: np.ndarray, need: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Audit one sub-table: its suppressed positions and which of them pass.

    ``need`` holds the local (upper, lower, sliding) levels of the sub-table's cells.  In a
    two-way sub-table a position whose levels a cycle of four suppressed cells already meets
    passes without an LP (:func:`rectangle_moves`); the others are decided by LP.
    """
    flat = cells.ravel()
    r = local_relations(cells.shape)
    pos = np.flatnonzero(supp)
    a = table.values[flat[pos]]
    up, low, sl = need[0][pos], need[1][pos], need[2][pos]
    # in deviations from the true values (consistent whatever the rounding of the totals)
    room_lo = np.minimum(table.lower_bounds[flat[pos]] - a, 0.0)
    room_hi = np.maximum(table.upper_bounds[flat[pos]] - a, 0.0)
    tol = 1e-7 * (1.0 + np.abs(a))

    def meets(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return (hi >= up - tol) & (lo <= -low + tol) & (hi - lo >= sl - tol)

    lo = hi = np.zeros(len(pos))
    if cells.ndim == 2:
        lo, hi = rectangle_moves(cells.shape, pos, room_lo, room_hi)
    ok = meets(lo, hi)
    if ok.all():
        return pos, ok
    zeros = np.zeros(r.shape[0])
    open_ = np.flatnonzero(~ok)
    lp_lo, lp_hi = feasibility_intervals(
        r[:, pos],
        zeros,
        zeros,
        room_lo,
        room_hi,
        targets=open_,
        need=(-low, up, sl, np.zeros(len(pos))),
    )
    lo, hi = lo.copy(), hi.copy()
    lo[open_], hi[open_] = lp_lo[open_], lp_hi[open_]
    return pos, meets(lo, hi)


def _protect(
    table: Table,
    cells: np.ndarray,
    supp: np.ndarray,
    usable: np.ndarray,
    cost: np.ndarray,
    need: np.ndarray,
    bad: np.ndarray,
    *,
    exact: bool,
    limits: dict[str, Any],
    want_moves: bool,
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """New local pattern protecting the failing positions ``bad`` of one sub-table.

    The joined cheapest paths (one min-cost LP per failing cell and direction) give a pattern
    that, with ``exact``, starts the exact solver of the sub-table (the optimal method's MILP
    with attacker cuts on the sub-table's relations), which returns the cheapest protecting
    pattern (or the best found within the ``limits`` of :func:`solve_problem`).
    """
    flat = cells.ravel()
    r = local_relations(cells.shape)
    targets: list[tuple[int, float]] = []
    for q in bad.tolist():
        want_up = max(need[0, q], need[2, q] - need[1, q])
        if want_up > 0:
            targets.append((int(q), float(want_up)))
        if need[1, q] > 0:
            targets.append((int(q), -float(need[1, q])))
    moves = np.zeros(len(flat))
    if not exact:
        heuristic = protect_with_lp(
            table, r, flat, supp, usable, _spread(cost, flat, table.n_cells), targets, moves
        )
        return heuristic, moves, {"subtable_heuristic": 1}
    info: dict[str, int] = {}
    ub, lb = capacities(table)
    problem = Problem(
        matrix=r,
        ub=ub[flat],
        lb=lb[flat],
        cost=cost,
        fixed=supp.copy(),
        cand=usable & ~supp,
        cells=bad.astype(np.int64),
        up=need[0, bad],
        low=need[1, bad],
        sl=need[2, bad],
        size=np.abs(table.values[flat]),
        zero=table.values[flat] == 0,
        shape=cells.shape,
    )
    try:
        out = solve_problem(problem, improve=False, **limits)
    except (Hopeless, SolverTrouble):
        heuristic = protect_with_lp(
            table, r, flat, supp, usable, _spread(cost, flat, table.n_cells), targets, moves
        )
        return heuristic, moves, {"subtable_heuristic": 1}
    info["subtable_milp"] = 1
    info["subtable_proven"] = int(out.optimal)
    info["subtables_cut_by_clock"] = int(out.clock_cut)
    if want_moves:
        moves = np.zeros(len(flat))
        _Separator(problem).run(out.pattern.astype(float), fractional=False, moves=moves)
    return out.pattern, moves, info


def _spread(local: np.ndarray, flat: np.ndarray, n: int) -> np.ndarray:
    full = np.zeros(n)
    full[flat] = local
    return full


class ModularSuppression(TableMethod):
    """Secondary suppression for large hierarchical tables by sub-table decomposition.

    The table is split into its non-hierarchical sub-tables, processed top-down: each one is
    audited by LP and, where cells fail, protected by its cheapest pattern (a small MILP with
    attacker cuts on the sub-table); suppressions propagate to the sub-tables sharing the cell
    (HiTaS-like, M11.5).  Cells that a sub-table shares with one above it (its marginals below
    the grand total) cost ``marginal_penalty`` times more.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing a cell.
    max_passes : int, default 10
        Passes over all sub-tables.
    singletons : bool, default True
        Add a third suppression where a one-contributor primary is protected by one other
        primary only.
    repair_limit : int, default 250000
        Tables with at most this many cells get a full LP audit and repair afterwards.
    marginal_penalty : float, default 10
        Cost factor for suppressing a sub-table's marginal cells (keeps suppressions low in the
        hierarchy).
    propagate : bool, default False
        A cell that moves by ``d`` to protect a primary in one sub-table must be able to move
        by ``d`` in every other sub-table that holds it; off, the other sub-tables only keep it
        from exact disclosure.
    exact : bool, default True
        Protect each failing sub-table with its cheapest pattern: the optimal method's MILP
        with attacker cuts on the sub-table's own relations, started from the joined cheapest
        paths (one min-cost LP per cell and direction), which alone are used when off.
    subtable_max_rounds : int, default 22
        Master/attacker rounds allowed for the exact protection of one sub-table (all but the
        last two at most in its LP phase, the rest for its MILP), then its best pattern.  A
        count, so the pattern is the same on every machine and under any load.
    subtable_max_nodes : int, default 20
        Branch-and-bound nodes allowed to each master MILP of a sub-table (a count too).
    subtable_time_limit : float, optional
        Seconds allowed for the exact protection of one sub-table: a safety net, off by
        default.  A sub-table it cut short makes the pattern depend on the machine and its
        load: the result says so (``time_limited``, ``details["subtables_cut_by_clock"]``)
        and a warning names this parameter.
    n_jobs : int, default -1
        Threads working on sub-tables that share no cell at the same time (-1: one per
        core).  The pattern does not depend on it (unless ``subtable_time_limit`` cuts a
        sub-table short).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, ModularSuppression, apply_rules
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> ModularSuppression().apply(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """

    name: ClassVar[str] = "modular suppression"
    alias: ClassVar[str] = "modular"
    kind: ClassVar[str] = "suppression"
    description: ClassVar[str] = (
        "Protects every primary cell by auditing and protecting the sub-tables of a "
        "hierarchical table one at a time (modular method)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cost": COST_PARAM,
        "max_passes": Param(Integer(minimum=1), help="passes over all sub-tables"),
        "singletons": Param(
            Boolean(),
            help="a relation with a one-contributor primary and one other primary needs a third",
        ),
        "repair_limit": Param(
            Integer(minimum=0),
            help="tables with at most this many cells are audited and repaired (0: never)",
        ),
        "marginal_penalty": Param(
            Real(minimum=0), help="cost factor for suppressing a sub-table's marginal cells"
        ),
        "propagate": Param(
            Boolean(), help="a cell's move in one sub-table must be possible in all others"
        ),
        "exact": Param(
            Boolean(), help="protect each sub-table with its cheapest pattern (a small MILP)"
        ),
        "subtable_max_rounds": Param(
            Integer(minimum=1),
            help="master/attacker rounds allowed for the exact protection of one sub-table",
        ),
        "subtable_max_nodes": Param(
            Integer(minimum=1),
            help="branch-and-bound nodes allowed to each master MILP of a sub-table",
        ),
        "subtable_time_limit": Param(
            Real(minimum=0, min_open=True),
            None,
            help="seconds allowed for one sub-table, a safety net (off: the pattern is the "
            "same on any machine; a run it cuts short says so)",
        ),
        "n_jobs": Param(
            Integer(minimum=1),
            AllCores(),
            help="threads working on separate sub-tables (-1: one per core); the pattern "
            "does not depend on it",
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        max_passes: int = 10,
        singletons: bool = True,
        repair_limit: int = 250_000,
        marginal_penalty: float = 10.0,
        propagate: bool = False,
        exact: bool = True,
        subtable_max_rounds: int = 22,
        subtable_max_nodes: int = 20,
        subtable_time_limit: float | None = None,
        n_jobs: int = -1,
    ) -> None:
        self.cost = cost
        self.max_passes = max_passes
        self.singletons = singletons
        self.repair_limit = repair_limit
        self.marginal_penalty = marginal_penalty
        self.propagate = propagate
        self.exact = exact
        self.subtable_max_rounds = subtable_max_rounds
        self.subtable_max_nodes = subtable_max_nodes
        self.subtable_time_limit = subtable_time_limit
        self.n_jobs = n_jobs

    def apply(self, table: Table) -> SuppressionResult:
        """Protect the primaries of ``table`` sub-table by sub-table.

        Returns
        -------
        SuppressionResult
            ``details`` holds ``subtables``, ``subtable_audits`` (LP audits of sub-tables run)
            and ``subtables_failing`` (sub-tables whose own LP audit fails for the final
            pattern; 0 when every sub-table is protected; up to ``repair_limit`` cells a
            sub-table protected by its exact MILP and unchanged since is not audited again,
            the audit of the whole table follows); ``protected`` is the verdict of the final
            audit (False above ``repair_limit``: not audited).

        Raises
        ------
        InfeasibleError
            A primary that no pattern can protect (named by cell number and position).
        """
        self.validate_params()
        start = time.perf_counter()
        max_passes = self.max_passes
        marginal_penalty = self.marginal_penalty
        w = cell_costs(table, self.cost)
        w_search = search_costs(table, w)
        prim, up, low, sl = requirements(table)
        need = np.zeros((3, table.n_cells))
        need[0, prim], need[1, prim], need[2, prim] = up, low, sl
        _, lbcap = capacities(table)
        need[1] = np.minimum(need[1], lbcap)
        tiny = 1e-3 * (1.0 + np.abs(table.values))
        usable = candidates(table)
        supp = table.suppressed.copy()
        subs = subtables(table)
        limits = {
            "max_rounds": self.subtable_max_rounds,
            "max_lp_rounds": max(1, self.subtable_max_rounds - 2),
            "max_nodes": self.subtable_max_nodes,
            "time_limit": self.subtable_time_limit,
        }
        audits = 0
        failing = 0
        passes = 0
        stats: dict[str, int] = {}
        primary = table.primary
        passed: dict[int, tuple[int, float]] = {}
        # a sub-table the exact MILP just protected meets the levels of the cells that failed
        # (and, more suppressions never narrowing an interval, those that passed) as long as
        # nothing in it changes; its re-audit is skipped when the whole table is audited (and
        # repaired) afterwards anyway (the re-audit would only add that its own new
        # secondaries are not disclosed exactly, which the full audit covers through the
        # primaries)
        audited_whole = 0 < table.n_cells <= self.repair_limit
        solved: dict[int, tuple[int, float]] = {}

        def signature(flat: np.ndarray) -> tuple[int, float]:
            return int(supp[flat].sum()), float(need[:, flat].sum())

        def local_levels(flat: np.ndarray, local_supp: np.ndarray) -> np.ndarray:
            # cells suppressed elsewhere must at least not be disclosed exactly here
            local_need = need[:, flat].copy()
            secondary = local_supp & ~primary[flat]
            room = np.maximum(local_need[2], tiny[flat])
            local_need[2] = np.where(secondary, room, local_need[2])
            return local_need

        def step(s_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]] | None:
            """Audit one sub-table and protect it where it fails (reads its own cells only)."""
            cells = subs[s_id]
            flat = cells.ravel()
            local_supp = supp[flat]
            local_need = local_levels(flat, local_supp)
            pos, ok = _local_failures(table, cells, local_supp, local_need)
            if ok.all():
                return None
            extra = np.where(shared_upward(table, cells).ravel(), marginal_penalty, 1.0)
            new_local, moves, info = _protect(
                table,
                cells,
                local_supp,
                usable[flat],
                w_search[flat] * extra,
                local_need,
                pos[~ok],
                exact=self.exact,
                limits=limits,
                want_moves=self.propagate,
            )
            return local_supp, new_local, moves, info

        def final_check(s_id: int) -> bool:
            flat = subs[s_id].ravel()
            local_supp = supp[flat]
            levels = local_levels(flat, local_supp)
            _, ok = _local_failures(table, subs[s_id], local_supp, levels)
            return bool(ok.all())

        # sub-tables that share no cell are worked on at the same time (HiGHS releases the
        # GIL); the waves keep every sub-table after the earlier ones it shares cells with, so
        # the result is that of working through them one by one, whatever n_jobs is
        schedule = waves(subs, table.n_cells)
        workers = n_workers(self.n_jobs, max(len(w) for w in schedule) if schedule else 1)
        with ThreadPoolExecutor(workers) if workers > 1 else nullcontext() as pool:

            def run(fn: Any, ids: list[int]) -> list[Any]:
                """``fn`` of each sub-table, in the order of ``ids``."""
                if pool is None or len(ids) < 2:
                    return [fn(i) for i in ids]
                # the sub-tables with the most suppressed cells (the longest MILPs) first, so
                # that no thread is left with a long one at the end of the wave
                size = {i: int(supp[subs[i].ravel()].sum()) for i in ids}
                futures = {i: pool.submit(fn, i) for i in sorted(ids, key=lambda i: -size[i])}
                return [futures[i].result() for i in ids]

            for _ in range(max_passes):
                passes += 1
                changed = False
                failing = 0
                for wave in schedule:
                    todo = []
                    for s_id in wave:
                        flat = subs[s_id].ravel()
                        if not supp[flat].any():
                            continue
                        sign = signature(flat)
                        if passed.get(s_id) == sign or solved.get(s_id) == sign:
                            continue  # unchanged since it last passed its audit or was solved
                        todo.append((s_id, sign))
                    results = run(step, [s_id for s_id, _ in todo])
                    audits += len(todo)
                    for (s_id, sign), result in zip(todo, results, strict=True):
                        if result is None:
                            passed[s_id] = sign
                            continue
                        failing += 1
                        local_supp, new_local, moves, info = result
                        flat = subs[s_id].ravel()
                        for key, value in info.items():
                            stats[key] = stats.get(key, 0) + value
                        if self.propagate:
                            # the cells that move must be able to move as far in their other
                            # sub-tables
                            grow = flat[moves > 0]
                            size = moves[moves > 0]
                            need[0, grow] = np.maximum(need[0, grow], size)
                            need[1, grow] = np.minimum(np.maximum(need[1, grow], size), lbcap[grow])
                        fresh = flat[new_local & ~local_supp]
                        if len(fresh):
                            supp[fresh] = True
                            changed = True
                        if audited_whole and info.get("subtable_milp") and not self.propagate:
                            solved[s_id] = signature(flat)
                if not changed:
                    break
            # final check: every sub-table with suppressions passes its own audit as the
            # pattern stands
            final = []
            for s_id, cells in enumerate(subs):
                flat = cells.ravel()
                if not supp[flat].any():
                    continue
                sign = signature(flat)
                if passed.get(s_id) == sign or solved.get(s_id) == sign:
                    continue
                final.append(s_id)
            verdicts = run(final_check, final)
            audits += len(final)
            failing = sum(not ok for ok in verdicts)
        out = table.suppress(supp & ~table.suppressed)
        if self.singletons:
            out = fix_singletons(out, w)
        out, repaired, verdict = repair_within_limit(out, table, w, self.repair_limit, "modular")
        cut = stats.get("subtables_cut_by_clock", 0)
        if cut:
            warn_time_limited("subtable_time_limit", f"{cut} sub-table(s)")
        return make_result(
            out,
            table,
            self,
            w,
            False,
            time.perf_counter() - start,
            verdict,
            passes=passes,
            subtables=len(subs),
            subtable_audits=audits,
            subtables_failing=failing,
            repaired=repaired,
            time_limited="subtable_time_limit" if cut else None,
            **stats,
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries."""
        return cls(), contract_table()


@function_twin(ModularSuppression, roles=False)
def suppress_modular(table: Table, **params: Any) -> SuppressionResult:
    """Secondary suppression for large hierarchical tables by sub-table decomposition.

    The function form of :class:`ModularSuppression`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    cost, max_passes, singletons, repair_limit, marginal_penalty, propagate, exact,
    subtable_max_rounds, subtable_max_nodes, subtable_time_limit, n_jobs
        The parameters of :class:`ModularSuppression`, by name (keyword arguments only).

    Returns
    -------
    SuppressionResult
        ``details`` holds ``subtables``, ``subtable_audits`` (LP audits of sub-tables run) and
        ``subtables_failing`` (sub-tables whose own LP audit fails for the final pattern; 0 when
        every sub-table is protected; see :meth:`ModularSuppression.apply`).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_modular
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> suppress_modular(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """
