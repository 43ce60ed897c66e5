"""The audit of a suppression pattern: one entry point, :func:`audit` (and :class:`Audit`).

* :func:`audit` / :class:`Audit`: ``method="lp"`` (feasibility intervals by linear
  programming, with the integer-aware, union and insider audits), ``"rank"`` (the rank test:
  exact disclosure only, no LP) or ``"atoms"`` (linked tables over the records' code
  combinations); one frozen verdict, :class:`AuditResult`, that keeps the parameters that made
  it and that :meth:`Table.write <sdckit.tables.Table.write>` takes.
* The parts, for the methods that verify their own patterns: :func:`lp_audit` (the LP kernel),
  :func:`insider_audit` (each respondent or holding with its own contributions),
  :func:`rank_test` / :func:`rank_audit`, :func:`singleton_violations`.

Modules: ``_core`` (LP kernel and the verdict), ``_extra`` (integer-aware and union audits),
``_insider``, ``_rank`` (the rank test, on the Gauss method's elimination kernel), ``_atoms``
(the joint audit of linked tables over the atoms), ``_rectangles`` (cycles of four in two-way
tables, a numba kernel) and ``_grid`` (the non-hierarchical sub-tables the large blocks are
proved on).

The package itself is callable, as the function it replaces was: ``sdckit.tables.audit(table,
...)`` (and ``from sdckit.tables import audit; audit(table)``) is :func:`audit`.
"""

import sys
import types
from typing import Any

from sdckit.tables.audit._core import AuditResult, lp_audit, on_bounds, singleton_violations
from sdckit.tables.audit._entry import RUNNERS as _RUNNERS
from sdckit.tables.audit._entry import Audit, audit
from sdckit.tables.audit._extra import IntegerAudit, UnionAudit
from sdckit.tables.audit._insider import InsiderAudit, insider_audit
from sdckit.tables.audit._rank import RankTest, check_rank_levels, rank_audit, rank_test

_RUNNERS["rank"] = rank_audit  # see _entry.RUNNERS: registered, not imported, by _entry

__all__ = [
    "Audit",
    "AuditResult",
    "InsiderAudit",
    "IntegerAudit",
    "RankTest",
    "UnionAudit",
    "audit",
    "check_rank_levels",
    "insider_audit",
    "lp_audit",
    "on_bounds",
    "rank_audit",
    "rank_test",
    "singleton_violations",
]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`audit` (``sdckit.tables.audit`` was that function)."""

    def __call__(self, table: Any, **kwargs: Any) -> Any:
        return audit(table, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
# help() and inspect.signature() of the callable package show the function's parameters
__signature__ = audit.__signature__  # type: ignore[attr-defined]
