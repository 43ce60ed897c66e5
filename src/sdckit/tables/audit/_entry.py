"""The one entry point of the audit: :class:`Audit` and its function twin :func:`audit`.

For every suppressed cell the audit finds the feasibility interval ``[min, max]`` an intruder can
derive from the published cells, the additivity relations and the a priori bounds (non-negative
values by default; optionally integer values), and checks it against the protection levels the
sensitivity rules require.  It works on any pattern, also one made by another tool: mark the
suppressed cells with :meth:`Table.suppress` (and the primaries with levels by
:func:`~sdckit.tables.apply_rules` or :class:`~sdckit.tables.MarkedCells`).

Three methods: ``"lp"`` (the LP audit, methods.md M11.2, with the integer-aware, union and
insider audits on top), ``"rank"`` (the rank test: exact disclosure only, no LP; for tables
too large for the LP) and ``"atoms"`` (for :class:`~sdckit.tables.LinkedTables` built from
records: the joint LP audit over the records' code combinations).  Table jobs read the
parameters from :attr:`Audit.parameters` (``[audit]``), so the job, the browser interface
and Python take the same ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sdckit._constraints import Boolean, Instance, ListOf, Options, Param, Real
from sdckit.errors import ParameterError
from sdckit.protection import Parameterised
from sdckit.tables.audit._core import AuditResult, lp_audit
from sdckit.tables.audit._insider import insider_audit
from sdckit.tables.rules import SensitivityRule
from sdckit.tables.table import CellStatus
from sdckit.twins import function_twin

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["Audit", "audit"]

_RULE = Instance((SensitivityRule,), "a sensitivity rule")

#: The audits this module does not import: ``"rank"`` (:func:`~sdckit.tables.audit.rank_audit`)
#: runs the Gauss method's elimination kernel, and the suppression methods import this module
#: (their results audit themselves), so the package registers it here when it is imported.
RUNNERS: dict[str, Any] = {}


class Audit(Parameterised):
    """The audit of a suppression pattern: the declared parameters and :meth:`apply`.

    See :func:`audit` (its function twin) for the parameters.

    Examples
    --------
    >>> from sdckit.tables.audit import Audit
    >>> list(Audit.parameters)[:3]
    ['method', 'insider', 'intervals']
    """

    name: ClassVar[str] = "audit"
    description: ClassVar[str] = (
        "Checks that every suppressed primary cell stays within its protection levels for an "
        "outsider and for each respondent using its own contributions."
    )
    family: ClassVar[str | None] = None
    parameters: ClassVar[dict[str, Param]] = {
        "method": Param(
            Options("lp", "rank", "atoms"),
            help="LP intervals, the rank test (exact disclosure only) or the LP over the "
            "records' code combinations (linked tables)",
        ),
        "insider": Param(
            Boolean(),
            None,
            help="each respondent (or holding) also attacks with its own contributions "
            "(default: on for magnitude tables)",
        ),
        "intervals": Param(
            Options("exact", "check", "rank"),
            help='compute every interval, or only decide each requirement ("rank": the '
            'former spelling of method = "rank")',
        ),
        "integer": Param(Boolean(), help="cells take integer values (small tables only)"),
        "integer_aware": Param(
            Boolean(), help="non-negative integer cells: zeros and ones that can be deduced"
        ),
        "unions": Param(
            Boolean(),
            _RULE,
            ListOf(_RULE, min_length=1),
            help="also protect the sums of suppressed cells of a relation (by the table's "
            "own rules)",
        ),
        "secondaries": Param(
            Boolean(), help="also find the secondaries an outsider computes exactly (reported)"
        ),
        "check_secondary": Param(Boolean(), help="secondaries must not be disclosed exactly"),
        "primaries_only": Param(Boolean(), help="compute the intervals of the primaries only"),
        "tolerance": Param(Real(minimum=0.0), help="relative tolerance of the checks"),
    }

    def __init__(
        self,
        *,
        method: str = "lp",
        insider: bool | None = None,
        intervals: str = "exact",
        integer: bool = False,
        integer_aware: bool = False,
        unions: bool | Any = False,
        secondaries: bool = True,
        check_secondary: bool = False,
        primaries_only: bool = False,
        tolerance: float = 1e-6,
    ) -> None:
        self.method = method
        self.insider = insider
        self.intervals = intervals
        self.integer = integer
        self.integer_aware = integer_aware
        self.unions = unions
        self.secondaries = secondaries
        self.check_secondary = check_secondary
        self.primaries_only = primaries_only
        self.tolerance = tolerance

    @property
    def effective_method(self) -> str:
        """The method run: ``intervals = "rank"`` is the former spelling of ``"rank"``."""
        return "rank" if self.intervals == "rank" else self.method

    def insider_for(self, table: Any) -> bool:
        """Whether the insider audit runs on ``table`` (``insider=None``: magnitudes)."""
        if self.insider is None:
            return getattr(table, "kind", "") == "magnitude"
        return bool(self.insider)

    def check(self, where: str = "audit:") -> None:
        """Check the parameters and their combination (before any long work); ``where``
        starts the messages (``"[audit]"`` in a job)."""
        self.validate_params(where=None if where == "audit:" else where)
        if self.effective_method == "rank":
            others = [
                k for k in ("integer", "integer_aware", "check_secondary", "primaries_only")
                if getattr(self, k)
            ]  # fmt: skip
            if self.unions is not False:
                others.append("unions")
            if self.method == "atoms":
                others.append("method")
            if others:
                spelling = 'intervals = "rank"' if self.intervals == "rank" else 'method = "rank"'
                raise ParameterError(
                    f"{where} {spelling} decides exact disclosure of the primaries only; "
                    f'remove {", ".join(others)} (or audit by LP: method = "lp", '
                    'intervals = "check").'
                )

    def spelling(self) -> str:
        """How the method was asked for (``method = "rank"``, or the former ``intervals =
        "rank"``), for messages."""
        if self.intervals == "rank":
            return 'intervals = "rank"'
        return f'method = "{self.method}"'

    def apply(self, table: Any, *, progress: Any = None) -> Any:
        """Audit ``table`` (a :class:`~sdckit.tables.Table`; for ``method="atoms"`` a
        :class:`~sdckit.tables.LinkedTables` built from records)."""
        self.check()
        method = self.effective_method
        if method == "atoms":
            return self._atoms(table)
        if method == "rank":
            result = RUNNERS["rank"](
                table,
                tolerance=self.tolerance,
                progress=progress,
                respondents=self.insider_for(table),
            )
            return replace(result, audit=self)
        return self._lp(table)

    def _lp(self, table: Table) -> AuditResult:
        from sdckit.tables.audit._extra import extend_audit

        intervals = "check" if self.intervals == "check" else "exact"
        # the secondaries an outsider computes (reported): not asked with integer values or
        # with the primaries only
        decide_secondaries = self.secondaries and not self.integer and not self.primaries_only
        result = lp_audit(
            table,
            integer=self.integer,
            tolerance=self.tolerance,
            check_secondary=self.check_secondary or decide_secondaries,
            primaries_only=self.primaries_only,
            intervals=intervals,
        )
        if decide_secondaries and not self.check_secondary:
            # the secondaries computed exactly are reported, not failed: they protect nothing
            # but disclose no contribution of their own
            primary = table.status[result.cells] == CellStatus.PRIMARY
            protected = np.where(primary, result.protected, True)
            result = replace(
                result, protected=protected, table=table.with_verdict(bool(protected.all()))
            )
        result = replace(result, secondaries_decided=decide_secondaries, audit=self)
        if self.integer_aware or self.unions is not False:
            result = extend_audit(
                result,
                table,
                integer_aware=self.integer_aware,
                unions=self.unions,
                tolerance=self.tolerance,
            )
        if self.insider_for(table):
            found = insider_audit(table, tolerance=self.tolerance, intervals=intervals)
            single = (
                result.protected if result.single_cell_protected is None
                else result.single_cell_protected
            )  # fmt: skip
            protected = result.protected & ~np.isin(result.cells, found.under_protected)
            result = replace(
                result,
                protected=protected,
                single_cell_protected=single,
                insider_audit=found,
                table=result.table.with_verdict(bool(protected.all())),
            )
        return result

    def _atoms(self, linked: Any) -> Any:
        # linked tables (not imported: they import the audit's kernel)
        if not hasattr(linked, "joint_model"):
            raise ParameterError(
                'The audit over the records\' code combinations (method = "atoms") audits '
                "linked tables built from records (LinkedTables.from_microdata); audit one "
                'table by LP (method = "lp").'
            )
        intervals = "check" if self.intervals == "check" else "exact"
        return linked.audit(
            tolerance=self.tolerance,
            check_secondary=self.check_secondary,
            intervals=intervals,
            model="atoms",
        )

    @classmethod
    def contract_example(cls) -> tuple[Audit, Table]:
        """A small instance and table (a 2 x 2 table with one suppressed cycle of four)."""
        from sdckit.tables.table import Table

        t = Table.from_array(
            np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
        )
        return cls(), t.suppress([4, 5, 7, 8])


@function_twin(Audit, roles=False)
def audit(table: Any) -> Any:
    """Audit a suppression pattern: the interval of every suppressed cell and the verdict.

    Parameters
    ----------
    table : Table or LinkedTables
        A table whose suppressed cells (status primary or secondary) are hidden; every other
        cell is published.  ``table.lower_bounds`` / ``upper_bounds`` are the a priori bounds.
        (``method="atoms"``: linked tables built from records.)
    method : {"lp", "rank", "atoms"}, default "lp"
        "lp": feasibility intervals by linear programming, checked against the protection
        levels.  "rank": the rank test (:func:`rank_audit`): exact disclosure of the
        primaries only, no LP, for tables too large for the LP; refuses primaries with
        levels.  "atoms": the joint LP audit of linked tables over the records' code
        combinations (:meth:`LinkedTables.audit <sdckit.tables.LinkedTables.audit>`).
    insider : bool or None, default None (on for magnitude tables)
        Also audit each respondent's (or holding's) view: it knows its own contributions
        (``table.contributions``; without them, each single-contributor cell is known to its
        respondent), see :mod:`sdckit.tables.audit._insider`.  With ``method="rank"`` this
        is rule R1 (:func:`rank_test` with ``respondents=True``).  The result then has
        ``insider_audit``, and a primary some unit brings below its levels fails.
    intervals : {"exact", "check"}
        "exact" computes every interval; "check" only decides each requirement (exactly),
        from as few LPs as possible: the intervals of cells whose requirement is already
        proven by the feasible points of earlier LPs are inner approximations (much faster
        on large tables; the verdicts ``protected`` and ``exact`` are the same).  A connected
        block of more than 5,000 suppressed cells is first checked sub-table by sub-table.
    integer : bool, default False
        Cells take integer values (a mixed-integer model per bound; small tables only).
    integer_aware : bool, default False
        Also audit with integer cell values and, in count tables, suppressed cells known to
        be at least 1 (:mod:`sdckit.tables.audit._extra`).  The result then has
        ``integer_audit``.
    unions : bool or sensitivity rules, default False
        Also audit the sums of the suppressed parts of each relation (and their pairs) as
        cells of their own: with True by the table's own rules (:attr:`Table.rules
        <sdckit.tables.Table.rules>`; if unknown, p% with p = 10 or a minimum frequency of
        3), or by the rules given.  The result then has ``union_audit``.
    secondaries : bool, default True
        Also decide which suppressed secondaries an outsider computes exactly (listed in
        ``computable_secondaries``; not a failure).
    check_secondary : bool, default False
        Require secondaries not to be disclosed exactly (a failure).
    primaries_only : bool, default False
        Compute the intervals of the primaries only (faster; secondaries get NaN, and are
        not decided).
    tolerance : float
        Relative tolerance of the checks (``tolerance * (1 + |value|)``).
    progress : callable, optional
        ``progress(stage, done, total)`` (the rank test reports its stages).

    Returns
    -------
    AuditResult
        With :attr:`~AuditResult.audit` the :class:`Audit` that made it (``LinkedAudit``
        for ``method="atoms"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, audit
    >>> t = Table.from_array(np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = audit(t.suppress([4, 5, 7, 8]))
    >>> res.interval(4)
    (3.0, 6.0)
    >>> res.parameters["method"]
    'lp'
    """
