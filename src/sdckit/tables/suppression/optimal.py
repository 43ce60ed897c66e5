"""Optimal secondary suppression: a MILP with attacker-LP (Benders) cuts (methods.md M11.3).

The method class; the solver (master MILP, attacker LPs, cut pool, time limit) is
:mod:`sdckit.tables.suppression._solver`, shared with the modular method.  On hierarchical
tables the modular method's pattern is the first incumbent (``warm_start``).

Zero-valued cells are candidates only when some primary cannot be protected without them (an
LP audit of the pattern that suppresses every non-zero candidate decides it); they then cost
more than all non-zero candidates together.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, ClassVar

import numpy as np

from sdckit.errors import InfeasibleError, SdcWarning
from sdckit.protection import Boolean, Integer, Param, Real
from sdckit.tables._method import TableMethod
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    candidates,
    capacities,
    cell_costs,
    contract_table,
    make_result,
    requirements,
    search_costs,
)
from sdckit.tables.suppression._diagnose import infeasible_error, unprotectable
from sdckit.tables.suppression._solver import (
    Hopeless,
    Outcome,
    Problem,
    SolverTrouble,
    solve_problem,
)
from sdckit.tables.suppression._subtables import subtables
from sdckit.tables.suppression.modular import ModularSuppression
from sdckit.tables.table import Table
from sdckit.twins import function_twin

__all__ = ["OptimalSuppression", "suppress_optimal"]


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

    A mixed-integer model of the suppression pattern with attacker-LP (Benders) cuts, solved
    by an LP phase and a MILP phase over a pool of cuts (see :mod:`this module
    <sdckit.tables.suppression.optimal>`); the pattern is proven optimal for its cost when the
    lower bound meets its cost.  On a hierarchical table the modular method's pattern starts the
    search (an incumbent), so that a time limit always returns a protected pattern at least as
    good as the modular one.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing each cell.
    singletons : bool, default True
        In a relation holding a one-contributor primary and exactly one other primary, require
        a third suppression (so that neither respondent can compute the other).
    max_iterations : int, default 500
        Limit on master/attacker rounds (LP and MILP).
    time_limit : float, optional
        Seconds allowed in all.  When it runs out, the best protected pattern found so far is
        returned, not proven optimal, with ``details["gap"]`` (its relative distance to the
        lower bound) and ``time_limited == "time_limit"``: a pattern cut short by the clock
        depends on the machine and its load; ``max_iterations`` bounds the work by a count
        (the same pattern on any machine).
    warm_start : bool, default True
        Start from the modular method's pattern on hierarchical tables.

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
            Real(minimum=0, min_open=True),
            None,
            help="seconds allowed in all; then the best protected pattern found is returned",
        ),
        "warm_start": Param(
            Boolean(), help="start from the modular method's pattern on hierarchical tables"
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        singletons: bool = True,
        max_iterations: int = 500,
        time_limit: float | None = None,
        warm_start: bool = True,
    ) -> None:
        self.cost = cost
        self.singletons = singletons
        self.max_iterations = max_iterations
        self.time_limit = time_limit
        self.warm_start = warm_start

    def apply(self, table: Table) -> SuppressionResult:
        """Protect the primaries of ``table`` with the cheapest pattern.

        Returns
        -------
        SuppressionResult
            ``optimal`` is True when the pattern is proven optimal (its cost meets the lower
            bound); ``protected`` is True (the attacker LPs are the audit).  ``details`` holds
            ``iterations``, ``cuts``, ``lower_bound`` and ``gap`` (0 when optimal), ``stopped``
            (None, "time_limit" or "max_iterations") and ``repaired`` (cells the path
            heuristic added to the last master pattern when the search stopped early).  A
            search stopped by a limit gives the best protected pattern found (with an
            SdcWarning).

        Raises
        ------
        InfeasibleError
            No pattern can protect some primary: the message names it (cell number and
            position), says why and which parameter to change.
        """
        self.validate_params()
        start = time.perf_counter()
        w = cell_costs(table, self.cost)
        prim, up, low, sl = requirements(table)
        cand_mask, w_search = _candidates(table, w)
        ub, lb = capacities(table)
        groups = []
        if self.singletons:
            groups = [cols[cand_mask[cols]] for cols in _singleton_rows(table, cand_mask)]
        problem = Problem(
            matrix=table.constraint_matrix.tocsr(),
            ub=ub,
            lb=lb,
            cost=w_search,
            fixed=table.suppressed.copy(),
            cand=cand_mask & ~table.suppressed,
            cells=prim,
            up=up,
            low=low,
            sl=sl,
            size=np.abs(table.values),
            zero=table.values == 0,
            groups=groups,
        )
        incumbent, warm_seconds = None, 0.0
        if self.warm_start and len(prim) and len(subtables(table)) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SdcWarning)
                heuristic = ModularSuppression(cost=self.cost, singletons=self.singletons).apply(
                    table
                )
            if heuristic.protected and np.all(
                heuristic.table.suppressed <= (cand_mask | table.suppressed)
            ):
                incumbent = heuristic.table.suppressed.copy()
            warm_seconds = time.perf_counter() - start
        remaining = None
        if self.time_limit is not None:
            remaining = max(float(self.time_limit) - (time.perf_counter() - start), 0.0)
        try:
            out = solve_problem(
                problem,
                time_limit=remaining,
                max_rounds=self.max_iterations,
                incumbent=incumbent,
            )
        except Hopeless:
            raise _infeasible(table, cand_mask) from None
        except SolverTrouble:
            if incumbent is None:
                raise _infeasible(table, cand_mask) from None
            out = Outcome(incumbent, float(w_search[incumbent & problem.cand].sum()), 0.0,
                          False, 0, 0, "numerical trouble")  # fmt: skip
        if out.stopped is not None:
            warnings.warn(
                f"The optimal method stopped ({out.stopped.replace('_', ' ')}) after "
                f"{out.rounds} rounds before proving its pattern optimal; the best protected "
                f"pattern found is returned (gap {100 * out.gap:.2f} % to the lower bound). "
                "Raise 'max_iterations' or 'time_limit' for a proven optimal pattern.",
                SdcWarning,
                stacklevel=2,
            )
        result = table.suppress(out.pattern & ~table.suppressed)
        # the lower bound in the cost of the result (unknown when zero cells carry a penalty)
        lower = None
        if np.array_equal(w_search, w):
            lower = out.lower + float(w[table.secondary].sum())
        return make_result(
            result,
            table,
            self,
            w,
            out.optimal,
            time.perf_counter() - start,
            True,
            time_limited="time_limit" if out.clock_cut else None,
            iterations=out.rounds,
            cuts=out.cuts,
            lp_solves=out.lp_solves,
            lower_bound=lower,
            gap=out.gap,
            stopped=out.stopped,
            warm_start_seconds=round(warm_seconds, 3),
            repaired=out.completed,
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries, unit costs."""
        return cls(cost="unity"), contract_table()


@function_twin(OptimalSuppression, roles=False)
def suppress_optimal(table: Table, **params: Any) -> SuppressionResult:
    """Cheapest pattern of secondary suppressions protecting every primary (M11.3).

    The function form of :class:`OptimalSuppression`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    cost, singletons, max_iterations, time_limit, warm_start
        The parameters of :class:`OptimalSuppression`, by name (keyword arguments only).

    Returns
    -------
    SuppressionResult
        ``optimal`` is True when the pattern is proven optimal.

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
