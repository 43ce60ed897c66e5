"""Optimal secondary suppression: a MILP with attacker-LP (Benders) cuts (methods.md M11.3).

Binary ``y_i`` says cell ``i`` is suppressed; primaries are fixed at 1.  The master problem
minimises ``sum w_i y_i`` subject to the capacity cuts found so far; the attacker LP of every
primary at the master's solution either confirms the protection or, through its dual, gives a
violated cut ``sum_i (alpha_i ub_i + beta_i lb_i) y_i >= level``.  When no cut is violated the
master's solution is optimal for the full model (and protects every primary: the attacker LPs
are the audit).

Zero-valued cells are candidates only when some primary cannot be protected without them (an
LP audit of the pattern that suppresses every non-zero candidate decides it); they then cost
more than all non-zero candidates together.  The attacker LPs are scaled by a power of two and
the cuts normalised, so that tables with values in the millions are decided exactly.  A loop
stopped by ``max_iterations`` (or stalled by numerical trouble) gives a pattern completed by the
LP repair heuristic: protected, not optimal.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, ClassVar

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from sdckit.errors import InfeasibleError, SdcWarning
from sdckit.protection import Boolean, Integer, Param, Real
from sdckit.tables._lp import lp_scale, new_highs
from sdckit.tables._method import TableMethod
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    candidates,
    capacities,
    cell_costs,
    contract_table,
    make_result,
    repair,
    requirements,
    search_costs,
)
from sdckit.tables.suppression._diagnose import infeasible_error, unprotectable
from sdckit.tables.table import Table

__all__ = ["OptimalSuppression", "suppress_optimal"]

_ST = highspy.HighsModelStatus


def _cut(r: np.ndarray, ub: np.ndarray, lb: np.ndarray) -> np.ndarray:
    r = np.where(np.abs(r) < 1e-9, 0.0, r)
    with np.errstate(invalid="ignore"):
        c = np.where(r > 0, r * ub, 0.0) + np.where(r < 0, -r * lb, 0.0)
    return np.nan_to_num(c, nan=0.0, posinf=np.inf)


class _Cuts:
    """Cuts ``coef @ y_C >= rhs`` over the candidate cells, with fixed cells folded in."""

    def __init__(self, fixed: np.ndarray, cand: np.ndarray) -> None:
        self.fixed = fixed
        self.cand = cand
        self.rows: list[np.ndarray] = []
        self.rhs: list[float] = []

    def add(self, coef_all: np.ndarray, level: float) -> bool:
        const = float(coef_all[self.fixed].sum())
        need = level - const
        if need <= 1e-9 * (1.0 + abs(level)):
            return False
        coef = np.minimum(coef_all[self.cand], need) / need  # normalised: coef @ y >= 1
        self.rows.append(coef)
        self.rhs.append(1.0)
        return True

    def hopeless(self) -> bool:
        """True when some cut cannot be met even with every candidate suppressed."""
        return any(row.sum() < 1.0 - 1e-9 for row in self.rows)


def _attacker(
    table: Table,
    matrix: sp.csr_matrix,
    supp: np.ndarray,
    prim: np.ndarray,
    up: np.ndarray,
    low: np.ndarray,
    sl: np.ndarray,
) -> list[tuple[np.ndarray, float]]:
    """Violated cuts (coefficients over all cells, level) at the pattern ``supp``."""
    ub_all, lb_all = capacities(table)
    cells = np.flatnonzero(supp)
    sub = matrix[:, cells]
    rows = np.unique(sub.nonzero()[0])
    sub = sub[rows]
    m_rows = matrix[rows]
    zeros = np.zeros(len(rows))
    scale = lp_scale(lb_all[cells], ub_all[cells])
    h = new_highs(sub, zeros, zeros, -lb_all[cells] / scale, ub_all[cells] / scale)
    where = np.full(table.n_cells, -1)
    where[cells] = np.arange(len(cells))
    out: list[tuple[np.ndarray, float]] = []
    for k, p in enumerate(prim):
        j = int(where[p])
        info = []
        for sign in (1.0, -1.0):
            h.changeColCost(j, sign)
            h.changeObjectiveSense(highspy.ObjSense.kMaximize)
            h.run()
            status = h.getModelStatus()
            if status != _ST.kOptimal:
                h.changeColCost(j, 0.0)
                info.append((np.inf, None))
                continue
            value = float(h.getInfo().objective_function_value) * scale
            gamma = np.asarray(h.getSolution().row_dual)
            h.changeColCost(j, 0.0)
            best = None
            for g in (gamma, -gamma):
                r = -(m_rows.T @ g)
                r[p] += sign
                coef = _cut(r, ub_all, lb_all)
                dual_value = coef[supp].sum()
                if best is None or abs(dual_value - value) < abs(best[1] - value):
                    best = (coef, dual_value)
            info.append((value, best[0] if best else None))
        (v_up, c_up), (v_down, c_down) = info
        tol = 1e-7 * (1.0 + abs(table.values[p])) + 1e-6 * scale
        if v_up < up[k] - tol and c_up is not None:
            out.append((c_up, float(up[k])))
        if v_down < low[k] - tol and c_down is not None:
            out.append((c_down, float(low[k])))
        if v_up + v_down < sl[k] - tol and c_up is not None and c_down is not None:
            out.append((c_up + c_down, float(sl[k])))
    return out


def _singleton_rows(table: Table, cand: np.ndarray) -> list[np.ndarray]:
    """Relations with a one-contributor primary and exactly one other primary: need a third."""
    m = table.constraint_matrix.tocsr()
    prim = table.primary
    single = prim & (table.n_contributors == 1)
    out = []
    for r in range(m.shape[0]):
        cols = m.indices[m.indptr[r] : m.indptr[r + 1]]
        pair = single[cols].any() and prim[cols].sum() == 2
        if pair and table.suppressed[cols].sum() == 2 and cand[cols].any():
            out.append(cols)
    return out


def _candidates(table: Table, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate cells and the costs to minimise: zero-valued cells only where needed."""
    nonzero = candidates(table, zeros=False)
    every = candidates(table)
    if not table.primary.any() or not (every & ~nonzero).any():
        return nonzero, w
    if not len(unprotectable(table, nonzero)):
        return nonzero, w
    impossible = unprotectable(table, every)
    if len(impossible):
        raise infeasible_error(table, impossible, every, "optimal")
    return every, search_costs(table, w)


def _infeasible(table: Table, allowed: np.ndarray) -> InfeasibleError:
    impossible = unprotectable(table, allowed)
    if len(impossible):
        return infeasible_error(table, impossible, allowed, "optimal")
    return InfeasibleError(
        "The optimal method ran into numerical trouble (its cuts contradict the audit of the "
        "widest pattern); use the modular or hypercube method for this table."
    )


class OptimalSuppression(TableMethod):
    """Cheapest pattern of secondary suppressions protecting every primary (M11.3).

    A mixed-integer model of the suppression pattern with attacker-LP (Benders) cuts; the
    pattern is proven optimal for its cost when the loop ends with no violated cut.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing each cell.
    singletons : bool, default True
        In a relation holding a one-contributor primary and exactly one other primary, require
        a third suppression (so that neither respondent can compute the other).
    max_iterations : int, default 500
        Limit on master/attacker rounds.
    time_limit : float, optional
        Seconds allowed for each master MILP; a master stopped by it gives its best pattern,
        which still protects every primary once the loop ends, but is not proven optimal.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, OptimalSuppression, apply_rules
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> method = OptimalSuppression(cost="unity")
    >>> res = method.apply(apply_rules(t, MarkedCells(cells=[4], upper=1)))
    >>> res.n_secondary, res.optimal
    (3, True)
    """

    name: ClassVar[str] = "optimal suppression"
    alias: ClassVar[str] = "optimal"
    kind: ClassVar[str] = "suppression"
    description: ClassVar[str] = (
        "Finds the cheapest set of secondary suppressions that protects every primary cell, "
        "with a mixed-integer model (optimal suppression)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cost": COST_PARAM,
        "singletons": Param(
            Boolean(),
            help="a relation with a one-contributor primary and one other primary needs a third",
        ),
        "max_iterations": Param(Integer(minimum=1), help="limit on master/attacker rounds"),
        "time_limit": Param(
            Real(minimum=0, min_open=True), None, help="seconds allowed for each master MILP"
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        singletons: bool = True,
        max_iterations: int = 500,
        time_limit: float | None = None,
    ) -> None:
        self.cost = cost
        self.singletons = singletons
        self.max_iterations = max_iterations
        self.time_limit = time_limit

    def apply(self, table: Table) -> SuppressionResult:
        """Protect the primaries of ``table`` with the cheapest pattern.

        Returns
        -------
        SuppressionResult
            ``optimal`` is True when the loop ended with no violated cut; ``protected`` is
            True (the attacker LPs are the audit).  A loop stopped by ``max_iterations`` gives
            a repaired, non-optimal pattern (with an SdcWarning).

        Raises
        ------
        InfeasibleError
            No pattern can protect some primary: the message names it (cell number and
            position), says why and which parameter to change.
        """
        self.validate_params()
        start = time.perf_counter()
        max_iterations = self.max_iterations
        time_limit = self.time_limit
        w = cell_costs(table, self.cost)
        prim, up, low, sl = requirements(table)
        cand_mask, w_search = _candidates(table, w)
        cand = np.flatnonzero(cand_mask)
        fixed = table.suppressed.copy()
        ub_all, lb_all = capacities(table)
        matrix = table.constraint_matrix.tocsr()
        cuts = _Cuts(fixed, cand)
        # initial cuts: each relation through a primary needs room in its other cells
        mt = matrix.T.tocsr()
        for k, p in enumerate(prim):
            for r in mt.indices[mt.indptr[p] : mt.indptr[p + 1]]:
                row = matrix.getrow(r).toarray().ravel()
                for sign, level in ((1.0, up[k]), (-1.0, low[k])):
                    if level <= 0:
                        continue
                    rr = -row * (sign / row[p])
                    rr[p] += sign
                    cuts.add(_cut(rr, ub_all, lb_all), float(level))
        single_rows = _singleton_rows(table, cand_mask) if self.singletons else []
        pos = np.full(table.n_cells, -1)
        pos[cand] = np.arange(len(cand))
        iterations = 0
        optimal = False
        master_proven = True
        stopped = None
        y = np.zeros(len(cand))
        previous = None
        options: dict[str, Any] = {"mip_rel_gap": 0.0}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        while True:
            if iterations >= max_iterations:
                stopped = "max_iterations"
                break
            iterations += 1
            if cuts.hopeless():
                raise _infeasible(table, cand_mask)
            constraints = []
            if cuts.rows:
                constraints.append(
                    LinearConstraint(np.vstack(cuts.rows), np.array(cuts.rhs), np.inf)
                )
            for cols in single_rows:
                a = np.zeros(len(cand))
                inside = pos[cols][pos[cols] >= 0]
                a[inside] = 1.0
                constraints.append(LinearConstraint(a, 1.0, np.inf))
            if len(cand) == 0:
                y = np.zeros(0)
            else:
                res = milp(
                    w_search[cand],
                    constraints=constraints,
                    bounds=Bounds(0, 1),
                    integrality=np.ones(len(cand)),
                    options=options,
                )
                if res.x is None and res.status != 2:
                    raise InfeasibleError(
                        "The optimal method stopped at its time limit before finding any "
                        "pattern; raise 'time_limit' or use the modular method for large tables."
                    )
                if res.x is None:
                    raise _infeasible(table, cand_mask)
                y = np.round(res.x)
                master_proven = master_proven and res.status == 0
            supp = fixed.copy()
            supp[cand[y > 0.5]] = True
            violated = _attacker(table, matrix, supp, prim, up, low, sl)
            if not violated:
                optimal = master_proven  # False when a master stopped at its time limit
                break
            added = sum(cuts.add(c, level) for c, level in violated)
            if not added:
                raise _infeasible(table, cand_mask)
            if previous is not None and np.array_equal(previous, y):
                stopped = "stalled"  # the same pattern again: numerical trouble in the cuts
                break
            previous = y.copy()
        out = table.suppress(cand[y > 0.5])
        verdict: bool | None = True
        repaired = 0
        if stopped is not None:
            warnings.warn(
                f"The optimal method stopped ({stopped.replace('_', ' ')}) after {iterations} "
                "rounds before every primary was protected; the repair heuristic completed the "
                "pattern, which is protected but not optimal. Raise 'max_iterations' (or set "
                "a 'time_limit' per master) for an optimal pattern.",
                SdcWarning,
                stacklevel=2,
            )
            out, repaired, verdict = repair(out, w, method="optimal")
        return make_result(
            out,
            table,
            "optimal",
            w,
            optimal,
            time.perf_counter() - start,
            verdict,
            iterations=iterations,
            cuts=len(cuts.rows),
            repaired=repaired,
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries, unit costs."""
        return cls(cost="unity"), contract_table()


def suppress_optimal(
    table: Table,
    *,
    cost: str | Any = "value",
    singletons: bool = True,
    max_iterations: int = 500,
    time_limit: float | None = None,
) -> SuppressionResult:
    """Cheapest pattern of secondary suppressions protecting every primary (M11.3).

    The function form of :class:`OptimalSuppression`.

    Parameters
    ----------
    table : Table
        A table with primaries and protection levels (see :func:`~sdckit.tables.apply_rules`).
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing each cell.
    singletons : bool, default True
        In a relation holding a one-contributor primary and exactly one other primary, require
        a third suppression (so that neither respondent can compute the other).
    max_iterations : int
        Limit on master/attacker rounds.
    time_limit : float, optional
        Seconds allowed for each master MILP; a master stopped by it gives its best pattern,
        which still protects every primary once the loop ends, but is not proven optimal.

    Returns
    -------
    SuppressionResult
        ``optimal`` is True when the loop ended with no violated cut.

    Raises
    ------
    InfeasibleError
        No pattern can protect the primaries (levels larger than the table allows).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_optimal
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = suppress_optimal(apply_rules(t, MarkedCells(cells=[4], upper=1)), cost="unity")
    >>> res.n_secondary, res.optimal
    (3, True)
    """
    return OptimalSuppression(
        cost=cost, singletons=singletons, max_iterations=max_iterations, time_limit=time_limit
    ).apply(table)
