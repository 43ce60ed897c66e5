"""The audit of a suppression pattern: LP feasibility intervals (methods.md M11.2), optionally
with integer values and unions of cells (:mod:`sdckit.tables._audit_extra`).

For every suppressed cell the audit finds the feasibility interval ``[min, max]`` an intruder can
derive from the published cells, the additivity relations and the a priori bounds (non-negative
values by default; optionally integer values), and checks it against the protection levels the
sensitivity rules require.  It works on any pattern, also one made by another tool: mark the
suppressed cells with :meth:`Table.suppress` (and the primaries with levels by
:func:`~sdckit.tables.apply_rules` or :class:`~sdckit.tables.MarkedCells`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sdckit._validation import check_real
from sdckit.tables._audit_core import AuditResult, lp_audit, singleton_violations

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["AuditResult", "audit", "singleton_violations"]


def audit(
    table: Table,
    *,
    integer: bool = False,
    tolerance: float = 1e-6,
    check_secondary: bool = False,
    primaries_only: bool = False,
    intervals: str = "exact",
    integer_aware: bool = False,
    unions: bool | Any = False,
) -> AuditResult:
    """Feasibility interval of every suppressed cell, by linear programming.

    Parameters
    ----------
    table : Table
        A table whose suppressed cells (status primary or secondary) are hidden; every other
        cell is published.  ``table.lower_bounds`` / ``upper_bounds`` are the a priori bounds.
    integer : bool, default False
        Cells take integer values (a mixed-integer model per bound; small tables only).
    tolerance : float
        Relative tolerance of the checks (``tolerance * (1 + |value|)``).
    check_secondary : bool, default False
        Also require secondaries not to be disclosed exactly.
    primaries_only : bool, default False
        Compute the intervals of the primaries only (faster; secondaries get NaN).
    intervals : {"exact", "check"}
        "exact" computes every interval; "check" only decides each requirement (exactly), from
        as few LPs as possible: cells whose requirement is already proven by the feasible points
        of earlier LPs get an inner approximation of their interval (much faster on large
        tables; the verdicts ``protected`` and ``exact`` are the same).  A connected block of
        more than 5,000 suppressed cells is first checked sub-table by sub-table: a model with
        one sub-table's suppressed cells free, every relation through them and every other
        suppressed cell at its value; each of its solutions is a feasible table, so what it
        proves holds for the whole table, and only the requirements it leaves open go to the
        model of the whole block.
    integer_aware : bool, default False
        Also audit with integer cell values and, in count tables, suppressed cells known to
        be at least 1 (zeros and ones an intruder can deduce; see
        :mod:`sdckit.tables._audit_extra`).  The result then has ``integer_audit``.
    unions : bool or sensitivity rules, default False
        Also audit the sums of the suppressed parts of each relation (and their pairs) as cells
        of their own, with the given rules (True: the p% rule with p = 10, or the minimum
        frequency rule with threshold 3 for counts).  The result then has ``union_audit``.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, audit
    >>> t = Table.from_array(np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = audit(t.suppress([4, 5, 7, 8]))
    >>> res.interval(4)
    (3.0, 6.0)
    """
    result = lp_audit(
        table,
        integer=integer,
        tolerance=tolerance,
        check_secondary=check_secondary,
        primaries_only=primaries_only,
        intervals=intervals,
    )
    if integer_aware or unions is not False:
        from sdckit.tables._audit_extra import extend_audit

        tol = check_real(tolerance, "tolerance", minimum=0)
        return extend_audit(
            result, table, integer_aware=integer_aware, unions=unions, tolerance=tol
        )
    return result
