"""Audit a suppression pattern and repair it (for any pattern, also one made by another tool).

The repair suppresses more cells until the outsider audit and, with ``insider``, the insider
audit (:func:`sdckit.tables.audit.insider_audit`: each respondent or holding with its own
contributions) pass.  For a primary that a unit brings below its levels, the protecting
cells are found on that unit's model: the min-cost LP of the outsider repair, with the cells
the unit is the only contributor of unable to move and every cell it contributes to unable
to fall below its contribution, so that the move it finds is one the unit cannot rule out.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from sdckit._validation import check_int
from sdckit.errors import ParameterError
from sdckit.tables.audit._core import lp_audit
from sdckit.tables.audit._insider import InsiderAudit, insider_audit, insider_knowledge
from sdckit.tables.suppression._common import (
    SuppressionResult,
    candidates,
    capacities,
    cell_costs,
    make_result,
    protect_paths,
    repair,
    requirements,
    search_costs,
)
from sdckit.tables.table import Table

__all__ = ["insider_repair", "repair_for_insiders", "repair_suppression"]


def repair_suppression(
    table: Table, *, cost: str | Any = "value", max_rounds: int = 5, insider: bool | None = None
) -> SuppressionResult:
    """Audit ``table`` by LP and protect every under-protected primary with extra suppressions.

    Each under-protected primary gets the cheapest cells through which it can move by its
    protection levels in the whole table (a min-cost LP over all relations); the audit is
    repeated until it passes (at most ``max_rounds`` times).  Zero-valued cells are used only
    where no non-zero cell protects.  With ``insider`` the same is done for each respondent
    (or holding) that brings a primary below its levels with its own contributions (module
    doc), until the insider audit passes too.

    Parameters
    ----------
    table : Table
        A table with primaries (and levels) and any suppression pattern.
    cost : str or array, default "value"
        Cost of suppressing each cell ("unity", "contributors", "value" or an array).
    max_rounds : int, default 5
        Rounds of audit and repair (each of the outsider's and of the insiders').
    insider : bool or None, default None (on for magnitude tables)
        Also repair what the insider audit finds.

    Returns
    -------
    SuppressionResult
        ``protected`` is the verdict of the final audits; ``details["repaired"]`` the cells
        added, ``details["repaired_for_insiders"]`` those added for the insider audit.

    Raises
    ------
    InfeasibleError
        A primary that no pattern can protect (named by cell number and position).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, repair_suppression
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = repair_suppression(apply_rules(t, MarkedCells(cells=[4], upper=1)), cost="unity")
    >>> res.n_secondary, res.details["repaired"]
    (3, 3)
    """
    start = time.perf_counter()
    rounds = check_int(max_rounds, "max_rounds", minimum=1)
    if insider is not None and not isinstance(insider, bool | np.bool_):
        raise ParameterError(
            "The 'insider' parameter of repair_suppression must be True, False or None."
        )
    w = cell_costs(table, cost)
    out, added, verdict = repair(table, w, max_rounds=rounds)
    for_insiders = 0
    if verdict and (insider if insider is not None else table.kind == "magnitude"):
        out, for_insiders, verdict = insider_repair(out, w, max_rounds=rounds)
    return make_result(
        out,
        table,
        "repair",
        w,
        False,
        time.perf_counter() - start,
        verdict,
        repaired=added + for_insiders,
        repaired_for_insiders=for_insiders,
    )


def insider_repair(
    table: Table, cost: np.ndarray, *, max_rounds: int = 5, found: InsiderAudit | None = None
) -> tuple[Table, int, bool]:
    """Suppress more cells until the insider audit (and the outsider's) passes.

    Returns the table, the cells added and the verdict of the last audits.  ``found``: the
    insider audit of ``table`` when already known.
    """
    added = 0
    found = insider_audit(table, intervals="check") if found is None else found
    for _ in range(max_rounds):
        if found.ok:
            return table, added, True
        fresh = insider_protecting_cells(table, cost, found)
        if not fresh.any():
            break
        added += int(fresh.sum())
        table = table.suppress(fresh)
        # more suppressions never narrow an interval, for an outsider as for an insider
        found = insider_audit(table, intervals="check")
    ok = found.ok and lp_audit(table, intervals="check").ok
    return table, added, ok


def insider_protecting_cells(table: Table, cost: np.ndarray, found: InsiderAudit) -> np.ndarray:
    """The cheapest cells (not yet suppressed) through which each primary that a unit brings
    below its levels can move by them, on that unit's model (module doc)."""
    _, unit, cell, value, sole = insider_knowledge(table)
    search = search_costs(table, cost)
    allowed = candidates(table)
    zero = table.values == 0
    ub_all, lb_all = capacities(table)
    prim, up, low, sl = requirements(table)
    nonneg = table.lower_bounds >= 0
    every = np.arange(table.n_cells)
    suppressed = table.suppressed.copy()
    m = table.constraint_matrix
    for u in np.unique(found.unit).tolist():
        mine = unit == u
        ub, lb = ub_all.copy(), lb_all.copy()
        own = cell[mine & sole]
        ub[own] = lb[own] = 0.0  # the unit knows these cells exactly
        part = mine & ~sole & nonneg[cell]
        # a cell the unit contributes to is at least its contribution
        lb[cell[part]] = np.minimum(
            lb[cell[part]], np.maximum(table.values[cell[part]] - value[part], 0.0)
        )
        keep = np.isin(prim, found.cell[found.unit == u])
        targets = _unit_targets(prim[keep], up[keep], low[keep], sl[keep], ub, lb)
        suppressed = protect_paths(
            m, ub, lb, search, suppressed, allowed & ~np.isin(every, own), zero, targets
        )
    return suppressed & ~table.suppressed


def repair_for_insiders(
    result: SuppressionResult, *, cost: str | Any = "value", max_rounds: int = 5
) -> SuppressionResult:
    """A method's result with more secondaries until the insider audit passes (the method's
    pattern, its figures updated; ``details["repaired_for_insiders"]`` the cells added).

    What a table job runs when the method's pattern passes the outsider audit but not the
    insider one.
    """
    start = time.perf_counter()
    w = cell_costs(result.table, cost)
    out, added, verdict = insider_repair(result.table, w, max_rounds=max_rounds)
    if not added:
        return result
    fresh = out.secondary & ~result.table.suppressed
    return replace(
        result,
        table=out.with_verdict(verdict),
        n_secondary=int(out.secondary.sum()),
        secondary_value=float(out.values[out.secondary].sum()),
        cost=result.cost + float(w[fresh].sum()),
        optimal=False,
        seconds=result.seconds + time.perf_counter() - start,
        details={**result.details, "repaired_for_insiders": added},
        protected=verdict,
    )


def _unit_targets(
    prim: np.ndarray,
    up: np.ndarray,
    low: np.ndarray,
    sl: np.ndarray,
    ub: np.ndarray,
    lb: np.ndarray,
) -> list[tuple[int, float]]:
    """The moves each primary needs in a unit's model: up by its upper (or sliding) level
    and down by its lower level, within the unit's room (``ub`` up, ``lb`` down: a lower
    level is capped at the unit's own lower bound, as the insider audit caps it)."""
    out: list[tuple[int, float]] = []
    for k, cell in enumerate(prim.tolist()):
        down = min(low[k], lb[cell])
        need_up = min(max(up[k], sl[k] - down), ub[cell])
        if need_up > 0:
            out.append((cell, float(need_up)))
        if down > 0:
            out.append((cell, -float(down)))
    return out
