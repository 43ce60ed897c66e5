"""Audit a suppression pattern and repair it (for any pattern, also one made by another tool)."""

from __future__ import annotations

import time
from typing import Any

from sdckit._validation import check_int
from sdckit.tables.suppression._common import SuppressionResult, cell_costs, make_result, repair
from sdckit.tables.table import Table

__all__ = ["repair_suppression"]


def repair_suppression(
    table: Table, *, cost: str | Any = "value", max_rounds: int = 5
) -> SuppressionResult:
    """Audit ``table`` by LP and protect every under-protected primary with extra suppressions.

    Each under-protected primary gets the cheapest cells through which it can move by its
    protection levels in the whole table (a min-cost LP over all relations); the audit is
    repeated until it passes (at most ``max_rounds`` times).  Zero-valued cells are used only
    where no non-zero cell protects.

    Returns
    -------
    SuppressionResult
        ``protected`` is the verdict of the final audit.

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
    w = cell_costs(table, cost)
    out, added, verdict = repair(table, w, max_rounds=rounds)
    return make_result(
        out, table, "repair", w, False, time.perf_counter() - start, verdict, repaired=added
    )
