"""The solver of optimal secondary suppression: a MILP with attacker-LP (Benders) cuts (M11.3).

Binary ``y_i`` says cell ``i`` is suppressed; primaries are fixed at 1.  The master problem
minimises ``sum w_i y_i`` subject to the capacity cuts found so far; the attacker LP of every
primary at the master's solution either confirms the protection or, through its dual, gives a
violated cut ``sum_i (alpha_i ub_i + beta_i lb_i) y_i >= level`` (any dual vector gives a valid
cut; its coefficients are capped at the level, which keeps it valid for binary ``y``).

The solver (:func:`solve_problem`, also used sub-table by sub-table by the modular method):

* **LP phase**: the master's LP relaxation is re-solved (warm-started) while the attacker LPs
  at its fractional solution give violated cuts; this builds most of the cut pool cheaply and a
  lower bound.
* **MILP phase**: the master MILP (started from the best protected pattern known) is solved;
  every integer solution is checked by the attacker LPs; a violated one adds its cuts and is
  completed by the LP path heuristic into a protected pattern (an incumbent).  The loop ends
  when a master optimum is protected (proven optimal) or the incumbent's cost meets the lower
  bound.
* **Cut pool**: cuts are normalised (``coef @ y >= 1``); the master holds the cuts that were
  violated, cuts slack for several rounds are dropped from it and kept in the pool, and the
  pool is searched for violated cuts before any attacker LP is solved.
* **Attacker LPs, batched**: the suppressed cells split into independent blocks; each block is
  one HiGHS model re-solved with a changed objective for every primary and direction (warm
  starts), and each LP solution is a feasible deviation that may already prove the protection of
  other primaries of the block, whose LPs are then skipped.
* **Limits**: the work is bounded by counts, which make the pattern the same on every machine
  and under any load (HiGHS runs single-threaded and is deterministic when no clock stops it):
  ``max_rounds`` master/attacker rounds in all, ``max_lp_rounds`` of them in the LP phase,
  ``max_nodes`` branch-and-bound nodes per master MILP.  ``time_limit`` (seconds) is a safety
  net only: a search it cut short depends on the machine's speed and load, and says so
  (``Outcome.clock_cut``).  When a limit stops the search, the best protected pattern found is
  returned with its gap to the lower bound (never an unprotected pattern: without any
  incumbent, the last master pattern is completed by the path heuristic).

Zero-valued cells are candidates only when some primary cannot be protected without them (an
LP audit of the pattern that suppresses every non-zero candidate decides it); they then cost
more than all non-zero candidates together.  The attacker LPs are scaled by a power of two and
the cuts normalised, so that tables with values in the millions are decided exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp

from sdckit.tables._lp import components, lp_scale, new_highs, solve
from sdckit.tables.suppression._common import (
    protect_paths,
)
from sdckit.tables.suppression._subtables import rectangle_moves

__all__ = ["Hopeless", "Outcome", "Problem", "SolverTrouble", "solve_problem"]

_ST = highspy.HighsModelStatus
_MAX = highspy.ObjSense.kMaximize
_GAP = 1e-6  # relative gap at which a pattern counts as optimal
_SMALL = 3000  # problems up to this many cells keep one attacker model for every pattern
_NO_LIMIT = 2**31 - 1  # HiGHS's "no limit" for integer options
#: Statuses of a MILP stopped by a limit (clock, nodes), possibly with a solution.
_LIMITS = (_ST.kTimeLimit, _ST.kSolutionLimit, _ST.kIterationLimit)


# ---------------------------------------------------------------------------- the problem
@dataclass
class Problem:
    """A cell suppression problem over ``n`` cells, in deviations from the true values.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
        Relations ``matrix @ d = 0`` among the cells.
    ub, lb : numpy.ndarray
        Room of each cell upward and downward (``inf`` allowed).
    cost : numpy.ndarray
        Cost of suppressing each cell.
    fixed : numpy.ndarray
        Cells suppressed already (primaries, and suppressions made elsewhere).
    cand : numpy.ndarray
        Cells that may be suppressed (not ``fixed``).
    cells, up, low, sl : numpy.ndarray
        The cells with requirements (all ``fixed``) and their upper, lower and sliding levels.
    size : numpy.ndarray
        ``|value|`` of each cell (the tolerances are relative to it).
    zero : numpy.ndarray
        Zero-valued cells (used by the path heuristic only where nothing else works).
    groups : list of numpy.ndarray
        Sets of cells of which at least one must be suppressed (singleton relations).
    shape : tuple of int, optional
        The shape of the flat sub-table when ``matrix`` is its :func:`local_relations`; in a
        two-way sub-table the attacker LP of a requirement that a cycle of four suppressed
        cells already meets (:func:`rectangle_moves`) is not solved.
    """

    matrix: sp.csr_matrix
    ub: np.ndarray
    lb: np.ndarray
    cost: np.ndarray
    fixed: np.ndarray
    cand: np.ndarray
    cells: np.ndarray
    up: np.ndarray
    low: np.ndarray
    sl: np.ndarray
    size: np.ndarray
    zero: np.ndarray
    groups: list[np.ndarray] = field(default_factory=list)
    shape: tuple[int, ...] | None = None

    @property
    def n(self) -> int:
        return int(self.matrix.shape[1])


@dataclass
class Outcome:
    """What :func:`solve_problem` found: a protected pattern, its cost and the lower bound."""

    pattern: np.ndarray
    cost: float
    lower: float
    optimal: bool
    rounds: int
    cuts: int
    stopped: str | None
    completed: int = 0
    lp_solves: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    #: True when the wall clock (``time_limit``) stopped the search or a master solve: the
    #: pattern may then differ from run to run
    clock_cut: bool = False

    @property
    def gap(self) -> float:
        """Relative gap between the pattern's cost and the lower bound (0: optimal)."""
        if self.optimal or self.cost <= 0:
            return 0.0
        return max(0.0, (self.cost - self.lower) / self.cost)


class SolverTrouble(Exception):
    """An attacker LP gave no answer even after a cold re-solve."""


class Hopeless(Exception):
    """Some requirement cannot be met by any pattern (a cut no pattern satisfies)."""


# ---------------------------------------------------------------------------- attacker LPs
class _Separator:
    """The attacker LPs of every requirement at a pattern, and the cuts of those that fail."""

    def __init__(self, p: Problem) -> None:
        self.p = p
        self.csc = p.matrix.tocsc()
        self.csr = p.matrix.tocsr()
        self.tol = 1e-7 * (1.0 + p.size[p.cells])
        self.col = np.full(p.n, -1, dtype=np.int64)
        self.col[np.flatnonzero(p.cand)] = np.arange(int(p.cand.sum()))
        self.lp_solves = 0
        self.all_rows = np.arange(p.matrix.shape[0])
        self.model: highspy.Highs | None = None
        self.scale = 1.0

    def run(
        self, y: np.ndarray, fractional: bool, moves: np.ndarray | None = None
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """Cuts violated at ``y`` (over all cells; fixed = 1) and the failing requirements.

        ``moves`` (if given) receives per cell the largest absolute deviation of the LP
        solutions that reach a requirement.
        """
        p = self.p
        act = np.flatnonzero(y > 1e-9)
        failing = np.zeros(len(p.cells), dtype=bool)
        cuts: list[tuple[np.ndarray, np.ndarray]] = []
        open_ = np.arange(len(p.cells))
        if not fractional and moves is None:
            open_ = open_[~self._by_rectangles(y)]
        if not len(open_):
            return cuts, failing
        if p.n <= _SMALL:
            # one model of every cell, re-bounded for each pattern (warm-started)
            self._block(np.arange(p.n), open_, y, fractional, cuts, failing, moves,
                        persistent=True)  # fmt: skip
            return cuts, failing
        sub = self.csc[:, act]
        _, labels = components(sub)
        where = np.full(p.n, -1, dtype=np.int64)
        where[act] = np.arange(len(act))
        t_comp = labels[where[p.cells[open_]]]
        order = np.argsort(labels, kind="stable")
        bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=int(labels.max()) + 1))]
        for comp in np.unique(t_comp):
            local = order[bounds[comp] : bounds[comp + 1]]
            ks = open_[t_comp == comp]
            self._block(act[local], ks, y, fractional, cuts, failing, moves)
        return cuts, failing

    def _by_rectangles(self, y: np.ndarray) -> np.ndarray:
        """Requirements that a cycle of four suppressed cells meets at the pattern ``y``.

        In a two-way sub-table (``Problem.shape``) such a cycle is a feasible point of the
        attacker LP (:func:`rectangle_moves`), so the LP's optimum reaches at least as far and
        the requirement passes without it; elsewhere none is proved this way.
        """
        p = self.p
        proved = np.zeros(len(p.cells), dtype=bool)
        if p.shape is None or len(p.shape) != 2:
            return proved
        pos = np.flatnonzero(y > 0.5)
        lo, hi = rectangle_moves(p.shape, pos, -p.lb[pos], p.ub[pos])
        at = np.searchsorted(pos, p.cells)
        lo, hi, tol = lo[at], hi[at], self.tol
        return (hi >= p.up - tol) & (-lo >= p.low - tol) & (hi - lo >= p.sl - tol)

    def _block(
        self,
        cols: np.ndarray,
        ks: np.ndarray,
        y: np.ndarray,
        fractional: bool,
        cuts: list[tuple[np.ndarray, np.ndarray]],
        failing: np.ndarray,
        moves: np.ndarray | None,
        persistent: bool = False,
    ) -> None:
        p = self.p
        levels = np.r_[p.up[ks], p.low[ks], p.sl[ks]]
        top = float(levels.max(initial=0.0))
        on = y[cols] > 1e-9
        if fractional:
            hi = np.minimum(p.ub[cols], top) * y[cols]
            lo = -np.minimum(p.lb[cols], top) * y[cols]
        else:
            hi = np.where(on, p.ub[cols], 0.0)
            lo = np.where(on, -p.lb[cols], 0.0)
        if persistent:
            rows = self.all_rows
            if self.model is None:
                self.scale = lp_scale(levels)
                zeros = np.zeros(len(rows))
                self.model = new_highs(self.csr, zeros, zeros, lo / self.scale, hi / self.scale)
                self.model.changeObjectiveSense(_MAX)
            else:
                idx = np.arange(p.n, dtype=np.int32)
                self.model.changeColsBounds(p.n, idx, lo / self.scale, hi / self.scale)
            self._targets(self.model, self.scale, cols, rows, ks, hi, lo, y, cuts, failing, moves)
            return
        sub = self.csc[:, cols]
        rows = np.unique(sub.indices)
        if not len(rows):
            # cells in no relation with another suppressed cell: free within their room
            for k in ks:
                j = int(np.searchsorted(cols, p.cells[k]))
                self._verdict(k, hi[j], -lo[j], None, None, cuts, failing, rows, y)
            return
        s = lp_scale(levels)
        a = sub[rows].tocsr()
        zeros = np.zeros(len(rows))
        h = new_highs(a, zeros, zeros, lo / s, hi / s)
        h.changeObjectiveSense(_MAX)
        self._targets(h, s, cols, rows, ks, hi, lo, y, cuts, failing, moves)

    def _targets(
        self,
        h: highspy.Highs,
        s: float,
        cols: np.ndarray,
        rows: np.ndarray,
        ks: np.ndarray,
        hi: np.ndarray,
        lo: np.ndarray,
        y: np.ndarray,
        cuts: list[tuple[np.ndarray, np.ndarray]],
        failing: np.ndarray,
        moves: np.ndarray | None,
    ) -> None:
        """Decide the requirements ``ks`` on the model ``h`` of the cells ``cols``."""
        p = self.p
        seen_hi = np.zeros(len(cols))
        seen_lo = np.zeros(len(cols))
        pos = {int(c): i for i, c in enumerate(cols)}
        for k in ks:
            j = pos[int(p.cells[k])]
            tol = self.tol[k]
            up, low, sl = p.up[k], p.low[k], p.sl[k]
            res: dict[float, tuple[float, np.ndarray | None]] = {}
            for _ in range(2):
                width_short = seen_hi[j] - seen_lo[j] < sl - tol
                if 1.0 not in res and (seen_hi[j] < up - tol or width_short):
                    v, x, g = self._solve(h, j, 1.0, s)
                    res[1.0] = (v, g)
                    self._seen(x, v, j, 1.0, seen_hi, seen_lo, cols, moves)
                width_short = seen_hi[j] - seen_lo[j] < sl - tol
                if -1.0 not in res and (-seen_lo[j] < low - tol or width_short):
                    v, x, g = self._solve(h, j, -1.0, s)
                    res[-1.0] = (v, g)
                    self._seen(x, v, j, -1.0, seen_hi, seen_lo, cols, moves)
            if not res:
                continue
            v_up, g_up = res.get(1.0, (seen_hi[j], None))
            v_dn, g_dn = res.get(-1.0, (-seen_lo[j], None))
            self._verdict(k, v_up, v_dn, g_up, g_dn, cuts, failing, rows, y, (cols, hi, lo))

    def _solve(
        self, h: highspy.Highs, j: int, sign: float, s: float
    ) -> tuple[float, np.ndarray | None, np.ndarray | None]:
        h.changeColCost(j, sign)
        status = solve(h)
        self.lp_solves += 1
        out: tuple[float, np.ndarray | None, np.ndarray | None] = (np.inf, None, None)
        if status == _ST.kOptimal:
            v = float(h.getInfo().objective_function_value) * s
            sol = h.getSolution()
            out = (v, np.asarray(sol.col_value) * s, np.asarray(sol.row_dual))
        h.changeColCost(j, 0.0)  # (after reading the solution: a change resets it)
        if status not in (_ST.kOptimal, _ST.kUnbounded, _ST.kUnboundedOrInfeasible):
            raise SolverTrouble(h.modelStatusToString(status))
        return out

    @staticmethod
    def _seen(
        x: np.ndarray | None,
        v: float,
        j: int,
        sign: float,
        seen_hi: np.ndarray,
        seen_lo: np.ndarray,
        cols: np.ndarray,
        moves: np.ndarray | None,
    ) -> None:
        if x is not None:
            np.maximum(seen_hi, x, out=seen_hi)
            np.minimum(seen_lo, x, out=seen_lo)
            if moves is not None:
                np.maximum.at(moves, cols, np.abs(x))
        if sign > 0:
            seen_hi[j] = v
        else:
            seen_lo[j] = -v

    def _verdict(
        self,
        k: int,
        v_up: float,
        v_dn: float,
        g_up: np.ndarray | None,
        g_dn: np.ndarray | None,
        cuts: list[tuple[np.ndarray, np.ndarray]],
        failing: np.ndarray,
        rows: np.ndarray,
        y: np.ndarray,
        lp: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        p = self.p
        tol = self.tol[k]
        q = int(p.cells[k])
        short_up = v_up < p.up[k] - tol
        short_dn = v_dn < p.low[k] - tol
        short_sl = v_up + v_dn < p.sl[k] - tol
        if not (short_up or short_dn or short_sl):
            return
        failing[k] = True
        c_up = self._coef(rows, g_up, 1.0, q, lp) if (short_up or short_sl) else None
        c_dn = self._coef(rows, g_dn, -1.0, q, lp) if (short_dn or short_sl) else None
        for short, coef, level in (
            (short_up, c_up, p.up[k]),
            (short_dn, c_dn, p.low[k]),
            (short_sl, None if c_up is None or c_dn is None else c_up + c_dn, p.sl[k]),
        ):
            if short and coef is not None:
                cut = self.normalise(coef, float(level), tol)
                if cut is not None and self.violation(cut, y) > 1e-6:
                    cuts.append(cut)

    def _coef(
        self,
        rows: np.ndarray,
        g: np.ndarray | None,
        sign: float,
        q: int,
        lp: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    ) -> np.ndarray | None:
        """Cut coefficients over all cells from the row duals ``g`` (either sign; any is valid)."""
        p = self.p
        if g is None:
            if len(rows):
                return None
            g = np.zeros(0)
        best = None
        mr = None
        if len(rows):
            mr = self.csr if rows is self.all_rows else self.csr[rows]
        for gg in (g, -g) if len(g) else (g,):
            r = np.zeros(p.n)
            if mr is not None:
                r = -(mr.T @ gg)
            r[q] += sign
            r[np.abs(r) < 1e-9] = 0.0
            bound = 0.0
            if lp is not None:
                cols, hi, lo = lp
                rc = r[cols]
                with np.errstate(invalid="ignore"):
                    bound = float(np.nansum(np.maximum(rc * hi, rc * lo)))
            if best is None or bound < best[0]:
                best = (bound, r)
        if best is None:  # the loop above runs at least once
            raise SolverTrouble
        r = best[1]
        with np.errstate(invalid="ignore"):
            coef = np.where(r > 0, r * p.ub, 0.0) + np.where(r < 0, -r * p.lb, 0.0)
        return np.nan_to_num(coef, nan=0.0, posinf=np.inf)

    def normalise(
        self, coef: np.ndarray, level: float, tol: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The cut ``coef @ y >= level`` over the candidates, as ``(columns, values) >= 1``."""
        p = self.p
        need = level - float(coef[p.fixed].sum())
        if need <= tol:
            return None
        on = p.cand & (coef > 1e-12 * need)
        cells = np.flatnonzero(on)
        vals = np.minimum(coef[cells], need) / need
        return self.col[cells].astype(np.int32), vals

    def violation(self, cut: tuple[np.ndarray, np.ndarray], y: np.ndarray) -> float:
        cols, vals = cut
        cand = np.flatnonzero(self.p.cand)
        return 1.0 - float(vals @ y[cand[cols]])


# ---------------------------------------------------------------------------- the master
class _Master:
    """The master problem over the candidates, with a pool of cuts (``coef @ y >= 1``)."""

    def __init__(self, cost: np.ndarray, groups: list[np.ndarray]) -> None:
        self.k = len(cost)
        self.h = new_highs(
            sp.csr_matrix((0, self.k)), np.zeros(0), np.zeros(0), np.zeros(self.k),
            np.ones(self.k), cost,
        )  # fmt: skip
        self.h.setOptionValue("mip_rel_gap", _GAP)
        self.h.setOptionValue("mip_abs_gap", 1e-9)
        self.h.setOptionValue("mip_improving_solution_save", True)
        # symmetry detection, feasibility jump and restarts cost more than they bring on
        # these covering problems; small masters also skip presolve and primal heuristics
        self.h.setOptionValue("mip_detect_symmetry", False)
        self.h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
        self.h.setOptionValue("mip_allow_restart", False)
        self.presolve = "off" if self.k <= 2000 else "choose"
        if self.k <= 500:
            # small masters (the sub-tables of the modular method): no primal heuristics and
            # no strong branching to make the pseudo-costs reliable (a quarter less of the
            # MILP time on the 9,301-cell benchmark table's 74 sub-table MILPs, same optima)
            self.h.setOptionValue("mip_heuristic_effort", 0.0)
            self.h.setOptionValue("mip_pscost_minreliable", 0)
            for heuristic in ("root_reduced_cost", "zi_round", "shifting", "rens", "rins"):
                self.h.setOptionValue(f"mip_heuristic_run_{heuristic}", False)
        self.cost = np.asarray(cost, dtype=float)
        self.pool: list[tuple[np.ndarray, np.ndarray]] = []
        self.in_model: list[int] = []  # pool index of each model row after the groups
        self.age: list[int] = []
        self.n_groups = 0
        for cols in groups:
            if len(cols):
                self._add_rows([(cols.astype(np.int32), np.ones(len(cols)))])
                self.n_groups += 1
        self.integer = False

    def _add_rows(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> None:
        starts = np.cumsum([0] + [len(c) for c, _ in rows[:-1]]).astype(np.int32)
        idx = np.concatenate([c for c, _ in rows]).astype(np.int32)
        val = np.concatenate([v for _, v in rows]).astype(float)
        n = len(rows)
        self.h.addRows(n, np.ones(n), np.full(n, np.inf), len(idx), starts, idx, val)

    def add(self, cuts: list[tuple[np.ndarray, np.ndarray]], in_pool: list[int] | None = None):
        """Add cuts to the model (new ones also to the pool)."""
        if not cuts:
            return
        ids = in_pool
        if ids is None:
            ids = list(range(len(self.pool), len(self.pool) + len(cuts)))
            self.pool.extend(cuts)
        self._add_rows(cuts)
        self.in_model.extend(ids)
        self.age.extend([0] * len(cuts))

    def pool_violated(
        self, y_c: np.ndarray
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[int]]:
        """Pool cuts outside the model that ``y_c`` violates."""
        inside = set(self.in_model)
        out, ids = [], []
        for i, (cols, vals) in enumerate(self.pool):
            if i not in inside and float(vals @ y_c[cols]) < 1.0 - 1e-6:
                out.append((cols, vals))
                ids.append(i)
        return out, ids

    def prune(self, y_c: np.ndarray, max_age: int = 8) -> None:
        """Drop from the model the cuts slack for ``max_age`` rounds (they stay in the pool)."""
        if len(self.in_model) <= 2 * self.k:
            return
        drop = []
        for r, i in enumerate(self.in_model):
            cols, vals = self.pool[i]
            if float(vals @ y_c[cols]) > 1.0 + 1e-6:
                self.age[r] += 1
                if self.age[r] > max_age:
                    drop.append(r)
            else:
                self.age[r] = 0
        if drop:
            self.h.deleteRows(len(drop), (np.asarray(drop) + self.n_groups).astype(np.int32))
            keep = np.ones(len(self.in_model), dtype=bool)
            keep[drop] = False
            self.in_model = [i for i, kp in zip(self.in_model, keep, strict=True) if kp]
            self.age = [a for a, kp in zip(self.age, keep, strict=True) if kp]

    def set_integer(self, integer: bool) -> None:
        if integer == self.integer:
            return
        kind = highspy.HighsVarType.kInteger if integer else highspy.HighsVarType.kContinuous
        self.h.changeColsIntegrality(
            self.k, np.arange(self.k, dtype=np.int32), np.array([kind] * self.k)
        )
        self.integer = integer

    def solve(
        self,
        time_limit: float | None = None,
        start: np.ndarray | None = None,
        max_nodes: int | None = None,
    ) -> tuple[Any, np.ndarray | None, float, float, list[np.ndarray]]:
        """Status, solution, objective, lower bound and the other integer solutions found.

        ``max_nodes`` bounds the branch-and-bound nodes of a MILP solve (a deterministic
        limit, status ``kSolutionLimit``); ``time_limit`` stops it by the clock.
        """
        h = self.h
        h.setOptionValue("time_limit", np.inf if time_limit is None else max(time_limit, 0.01))
        h.setOptionValue("mip_max_nodes", _NO_LIMIT if max_nodes is None else int(max_nodes))
        if not self.integer:
            status = solve(h)
            ok = status == _ST.kOptimal
            x = np.asarray(h.getSolution().col_value) if ok else None
            obj = float(h.getInfo().objective_function_value) if ok else np.inf
            return status, x, obj, obj if ok else 0.0, []
        status, x, obj = self._run_mip(start, presolve=self.presolve)
        if x is not None and abs(float(self.cost @ x) - obj) > 1e-7 * (1.0 + abs(obj)):
            # HiGHS 1.16 may report the start vector with the optimum's objective after a
            # presolved MIP: solve again without presolve
            status, x, obj = self._run_mip(start, presolve="off")
        info = h.getInfo()
        bound = obj if status == _ST.kOptimal else float(info.mip_dual_bound)
        found = [np.asarray(sol.col_value) for sol in h.getSavedMipSolutions()]
        found = [f for f in found if len(f) == self.k]
        return status, x, obj, bound, found

    def _run_mip(
        self, start: np.ndarray | None, presolve: str
    ) -> tuple[Any, np.ndarray | None, float]:
        h = self.h
        # without clearing, HiGHS may report a stale solution vector after earlier LP solves
        h.clearSolver()
        h.setOptionValue("presolve", presolve)
        if start is not None:
            sol = highspy.HighsSolution()
            sol.col_value = start.astype(float).tolist()
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        status = h.getModelStatus()
        if status not in (_ST.kOptimal, _ST.kInfeasible, *_LIMITS):
            h.clearSolver()  # no answer (status Unknown, ...): once more from scratch
            h.run()
            status = h.getModelStatus()
        h.setOptionValue("presolve", "choose")
        info = h.getInfo()
        has_x = status == _ST.kOptimal or info.primal_solution_status == 2
        x = np.asarray(h.getSolution().col_value) if has_x else None
        obj = float(info.objective_function_value) if has_x else np.inf
        return status, x, obj


# ---------------------------------------------------------------------------- the solver
def _initial_cuts(p: Problem, sep: _Separator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each relation through a cell with a requirement needs room in its other cells."""
    out: list[tuple[np.ndarray, np.ndarray]] = []
    if not len(p.cells):
        return out
    through = sep.csc[:, p.cells]  # the relations through each requirement's cell
    rel = through.indices
    owner = np.repeat(np.arange(len(p.cells)), np.diff(through.indptr))  # of each relation
    if not len(rel):
        return out
    step = max(1, 4_000_000 // max(p.n, 1))  # dense rows of at most 4 million entries
    for first in range(0, len(rel), step):
        _cuts_of_pairs(p, sep, rel[first : first + step], owner[first : first + step], out)
    return out


def _cuts_of_pairs(
    p: Problem,
    sep: _Separator,
    rel: np.ndarray,
    owner: np.ndarray,
    out: list[tuple[np.ndarray, np.ndarray]],
) -> None:
    """The initial cuts of the relations ``rel`` through the requirements ``owner``."""
    rows = sep.csr[rel].toarray()  # one dense row per (requirement, relation) pair
    q = p.cells[owner]
    pair = np.arange(len(rel))
    rr = -rows / rows[pair, q][:, None]
    rr[pair, q] += 1.0
    rr[np.abs(rr) < 1e-12] = 0.0
    with np.errstate(invalid="ignore"):
        c_up = np.where(rr > 0, rr * p.ub, 0.0) + np.where(rr < 0, -rr * p.lb, 0.0)
        c_dn = np.where(rr < 0, -rr * p.ub, 0.0) + np.where(rr > 0, rr * p.lb, 0.0)
    c_up = np.nan_to_num(c_up, nan=0.0, posinf=np.inf)
    c_dn = np.nan_to_num(c_dn, nan=0.0, posinf=np.inf)
    both = c_up + c_dn
    for i, k in enumerate(owner.tolist()):
        for coef, level in ((c_up[i], p.up[k]), (c_dn[i], p.low[k]), (both[i], p.sl[k])):
            if level > 0:
                cut = sep.normalise(coef, float(level), float(sep.tol[k]))
                if cut is not None:
                    out.append(cut)


def _path_targets(p: Problem, ks: np.ndarray) -> list[tuple[int, float]]:
    out: list[tuple[int, float]] = []
    for k in ks.tolist():
        q = int(p.cells[k])
        down = float(min(p.low[k], p.lb[q]))
        need_up = min(max(float(p.up[k]), float(p.sl[k]) - down), float(p.ub[q]))
        if need_up > 0:
            out.append((q, need_up))
        if down > 0:
            out.append((q, -down))
    return out


def complete(p: Problem, pattern: np.ndarray, sep: _Separator | None = None) -> np.ndarray | None:
    """``pattern`` with cells added by the LP path heuristic until it is protected (or None)."""
    sep = sep or _Separator(p)
    pattern = pattern | p.fixed
    for _ in range(6):
        _, failing = sep.run(pattern.astype(float), fractional=False)
        if not failing.any():
            return _cover_groups(p, pattern)
        new = protect_paths(
            p.matrix, p.ub, p.lb, p.cost, pattern, p.cand, p.zero,
            _path_targets(p, np.flatnonzero(failing)),
        )  # fmt: skip
        if not (new & ~pattern).any():
            return None
        pattern = new
    return None


def _cover_groups(p: Problem, pattern: np.ndarray) -> np.ndarray:
    pattern = pattern.copy()
    for cells in p.groups:
        if len(cells) and not pattern[cells].any():
            pattern[cells[np.argmin(p.cost[cells])]] = True
    return pattern


def solve_problem(
    p: Problem,
    *,
    time_limit: float | None = None,
    max_rounds: int = 500,
    max_lp_rounds: int | None = None,
    max_nodes: int | None = None,
    incumbent: np.ndarray | None = None,
    improve: bool = True,
) -> Outcome:
    """The cheapest protected pattern of ``p`` (see the module text), within the limits.

    ``max_rounds`` bounds the master/attacker rounds, ``max_lp_rounds`` those of the LP phase
    (None: ``max_rounds``), ``max_nodes`` the branch-and-bound nodes of each master MILP (None:
    no limit): counts, so the result is the same on any machine.  ``time_limit`` (seconds) is
    a safety net; a search it cut short has ``clock_cut`` set.
    ``incumbent`` is a protected pattern known beforehand (a MIP start and the fallback);
    ``improve`` completes every unprotected master pattern into a protected one (new
    incumbents, for a limit) rather than only the last one.
    Raises :class:`SolverTrouble` when an attacker LP has no answer, and :class:`Hopeless` when
    some requirement cannot be met at all (a cut no pattern satisfies).
    """
    start = time.perf_counter()
    deadline = np.inf if time_limit is None else start + float(time_limit)
    sep = _Separator(p)
    cand = np.flatnonzero(p.cand)
    k = len(cand)
    norm = float(p.cost[cand].max(initial=0.0)) or 1.0
    c = p.cost[cand] / norm
    groups = [sep.col[g[p.cand[g]]] for g in p.groups if not p.fixed[g].any()]
    master = _Master(c, groups)
    master.add(_initial_cuts(p, sep))

    def full(y_c: np.ndarray) -> np.ndarray:
        y = p.fixed.astype(float)
        y[cand] = y_c
        return y

    def cost_of(pattern: np.ndarray) -> float:
        return float(p.cost[pattern & p.cand].sum())

    best = None if incumbent is None else (incumbent | p.fixed)
    best_cost = np.inf if best is None else cost_of(best)
    lower = 0.0
    rounds = 0
    stopped: str | None = None
    optimal = False
    last: np.ndarray | None = None
    history: list[float] = []
    stats = {"lp_rounds": 0, "mip_rounds": 0}
    clock_cut = False
    lp_rounds = max_rounds if max_lp_rounds is None else min(max_lp_rounds, max_rounds)

    # ---- LP phase (ends by counts, never by the clock but for the safety net: a phase cut
    # by the clock would hand the MILP a machine-dependent cut pool)
    while k:
        if rounds >= max_rounds:
            stopped = "max_iterations"
            break
        if rounds >= lp_rounds:
            break
        if time.perf_counter() >= deadline:
            stopped, clock_cut = "time_limit", True
            break
        rounds += 1
        stats["lp_rounds"] += 1
        status, x, _, bound, _ = master.solve(time_limit=deadline - time.perf_counter())
        if status == _ST.kInfeasible:
            raise Hopeless
        if x is None:
            clock_cut = clock_cut or status == _ST.kTimeLimit
            break
        lower = max(lower, bound * norm)
        last = x
        if best is not None and best_cost - lower <= _GAP * max(best_cost, 1e-12):
            optimal = True
            break
        pool_cuts, ids = master.pool_violated(x)
        if pool_cuts:
            master.add(pool_cuts, ids)
            continue
        integral = bool(np.all(np.minimum(x, 1 - x) < 1e-7))
        cuts, failing = sep.run(full(x), fractional=not integral)
        if not cuts:
            if integral and not failing.any():
                pattern = p.fixed | (full(x) > 0.5)
                pattern = _cover_groups(p, pattern)
                if cost_of(pattern) < best_cost:
                    best, best_cost = pattern, cost_of(pattern)
                optimal = cost_of(pattern) <= lower * (1 + _GAP) + 1e-12
            break
        master.add(cuts)
        master.prune(x)
        history.append(lower)
        if len(history) > 6 and history[-1] - history[-6] <= 1e-4 * max(history[-1], 1e-12):
            break  # tailing off: branch
    # ---- MILP phase
    master.set_integer(True)
    while k and not optimal and stopped is None:
        if rounds >= max_rounds:
            stopped = "max_iterations"
            break
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            stopped, clock_cut = "time_limit", True
            break
        rounds += 1
        stats["mip_rounds"] += 1
        mip_start = None if best is None else best[cand].astype(float)
        status, x, _, bound, found = master.solve(
            time_limit=remaining, start=mip_start, max_nodes=max_nodes
        )
        if status == _ST.kInfeasible:
            raise Hopeless
        if status == _ST.kTimeLimit:
            clock_cut = True
        lower = max(lower, bound * norm)
        if x is None:
            stopped = "time_limit" if status == _ST.kTimeLimit else "max_nodes"
            break
        x = np.round(x)
        last = x
        new_cuts: list[tuple[np.ndarray, np.ndarray]] = []
        solutions = [x] + [np.round(f) for f in found if not np.array_equal(np.round(f), x)]
        protected_x = False
        for i, sol in enumerate(solutions[:5]):
            pool_cuts, ids = master.pool_violated(sol)
            if pool_cuts:
                master.add(pool_cuts, ids)
                continue
            cuts, failing = sep.run(full(sol), fractional=False)
            if not failing.any():
                pattern = _cover_groups(p, p.fixed | (full(sol) > 0.5))
                if cost_of(pattern) < best_cost:
                    best, best_cost = pattern, cost_of(pattern)
                if i == 0:
                    protected_x = True
            new_cuts.extend(cuts)
        if protected_x and status == _ST.kOptimal:
            optimal = True
            break
        master.add(new_cuts)
        if not protected_x and improve:
            fixed_up = complete(p, p.fixed | (full(x) > 0.5), sep)
            if fixed_up is not None and cost_of(fixed_up) < best_cost:
                best, best_cost = fixed_up, cost_of(fixed_up)
        if best is not None and best_cost - lower <= _GAP * max(best_cost, 1e-12):
            optimal = True
            break
        if status == _ST.kTimeLimit or (status != _ST.kOptimal and time.perf_counter() >= deadline):
            stopped, clock_cut = "time_limit", True
            break
        if status != _ST.kOptimal and not new_cuts:
            # the node limit stopped the master and its solutions give no new cut: solving
            # it again would find the same
            stopped = "max_nodes"
            break
        if not new_cuts and not protected_x:
            # the master optimum is unprotected yet gives no cut: numerical trouble
            stopped = "stalled"
            break
    if k == 0:
        pattern = p.fixed.copy()
        _, failing = sep.run(pattern.astype(float), fractional=False)
        if failing.any():
            raise Hopeless
        best, best_cost, optimal = pattern, 0.0, True
    completed = 0
    if best is None or stopped is not None:
        base = p.fixed | (full(last) > 0.5) if last is not None else p.fixed.copy()
        fixed_up = complete(p, base, sep)
        if fixed_up is not None:
            completed = int((fixed_up & ~base).sum())
            if cost_of(fixed_up) < best_cost:
                best, best_cost = fixed_up, cost_of(fixed_up)
    if best is None:
        raise SolverTrouble("no protected pattern found")
    if best_cost - lower <= _GAP * max(best_cost, 1e-12):
        optimal = True
    return Outcome(
        pattern=best,
        cost=best_cost,
        lower=min(lower, best_cost),
        optimal=optimal,
        rounds=rounds,
        cuts=len(master.pool),
        stopped=None if optimal else stopped,
        completed=completed,
        lp_solves=sep.lp_solves,
        stats=stats,
        clock_cut=clock_cut and not optimal,
    )


# ---------------------------------------------------------------------------- the method
