"""Secondary suppression by Gaussian elimination (Langsrud's method, as in GaussSuppression).

The table is its model matrix ``X``: one row per non-empty inner cell, one column per cell,
``X[i, c] = 1`` when inner cell ``i`` lies under cell ``c`` (the published value of ``c`` is
``X[:, c] @ inner_values``).  A cell is computable from a set ``P`` of published cells exactly
when its column lies in the span of the columns of ``P``.

Algorithm (our implementation of the published method; the R code was read, not translated):

1. Cells that are never suppressed (frozen cells, empty cells above a primary) are published
   first, then the candidates (safe cells) in decreasing order of their cost of suppression
   (ties: the cell whose inner cells lie in the larger margins first, by ``X' X (|cost| + 1)``
   as GaussSuppression's default candidate order; then cells over more inner cells), so that
   expensive cells are published and cheap ones suppressed.  A candidate is published unless
   publishing it would make a primary computable (or break a singleton rule below); then it
   becomes a secondary suppression.
   Because the published span only grows and each addition was checked against every primary,
   no primary is computable from the final pattern.
2. The published span is kept as a Gaussian elimination: the live matrix is the Schur
   complement of the published columns (rows that are not yet eliminated, columns of the
   undecided candidates, of the primaries and of the respondents' single-contributor cells).
   Publishing ``c`` pivots on one row of ``c``'s current column (exact: a row with the
   smallest entry, a unit where there is one, and among those the row whose columns the
   other rows share most, the least fill-in; floating point: the largest entry); a primary
   ``b`` becomes computable exactly when its current column is proportional to ``c``'s,
   which is checked before the update.  The pivot choice does not change any decision (the
   span does not depend on it), only the work and the fill-in.
3. Arithmetic is exact: the model matrix has small integer entries, every row operation is
   ``a * row_j - b * row_p`` followed by division by the gcd of the row, so the entries stay
   integers.  When one reaches 2**31 (in tables of four or more dimensions the entries grow),
   the elimination goes on modulo the Mersenne prime ``P = 2**61 - 1`` from where it is: the
   integer state is exact, so its residues are the state of the same elimination modulo P,
   and every later operation is exact modulo P (no restart, no rounding).  A decision modulo
   P differs from the rational one only when P divides every one of the largest non-zero
   minors of the columns involved (a rank drops modulo P), integers that would have to be
   multiples of a 61-bit prime.  ``details["arithmetic"]`` says which arithmetic ended the
   elimination and ``details["modular_from"]`` at which candidate it went modular;
   ``arithmetic="modular"`` works modulo P from the start and ``"float"`` in floating point
   with a relative tolerance of 1e-9 (the two may be compared, as the tests do).

Singletons and one respondent's cells (the singleton problem).  An inner cell with a single
contributor is known to that respondent.  The rules enforced, for every primary ``b``:

* R0: ``b`` is not computable from the published cells;
* R1: ``b`` is not computable from the published cells together with the cells of any single
  respondent (``b`` itself excepted when it is that respondent's own cells); without
  ``contributors`` each single-contributor inner cell is its own respondent, with
  ``contributors`` the cells of one respondent are one attacker;
* R2: for a respondent with several single-contributor cells, no combination of his primary
  cells is computable from the published cells, or by another respondent from his own
  cells (rank tests of the two respondents' current columns).

R1 and R2 are checked exactly on the live matrix: ``b`` is computable with respondent ``g``'s
knowledge exactly when ``b``'s current column lies in the span of the current columns of
``g``'s cells (for one cell: is proportional to it).  While any respondent's cell is
undecided the update is tentative: it is done, the changed columns are checked (for a
respondent with several cells, against all of his cells, changed or not) and undone when a
rule fails.  For a respondent with one cell, R1 is found through column fingerprints (two
random linear functionals of every primary's and respondent's column modulo P, updated from
the pivot row alone; equal keys mark proportional columns, and one pair per key is checked
exactly on the rows, see ``_gauss_modular``), so the check costs the length of the pivot row
instead of its square.  This is at least as strong as GaussSuppression's defaults (``anySum`` for
frequency tables, ``numttHTT`` for magnitude tables): a respondent's own cells combined with
the published cells never reveal another primary, whatever the order of the elimination.
The tentative updates and the rank tests cost time on tables with many single-contributor
cells; ``details["undone"]`` counts the updates undone.

The linear-algebra guarantee ignores bounds and protection levels.  Tables up to
``repair_limit`` cells are then audited by LP (methods.md M11.2) with their protection levels;
failing primaries get their cheapest protecting cells (the attacker LP) and the elimination is
re-run with those cells forced, until the audit passes (or the LP repair adds the rest); a
primary that no pattern can protect raises an InfeasibleError.  The audit's LPs are the
costly part: a re-run whose pattern holds the audited one and the protecting cells is audited
only for the primaries short before (more suppressions never narrow an interval), and the
repair starts from the last audit's verdicts when they are those of the pattern.  On tables of
2,000 cells or more the pattern is instead completed sub-table by sub-table (the modular
method's protection of each failing sub-table, keeping every cell the elimination suppressed,
then the repair of the whole table), because one protecting LP over a whole large table takes
seconds; in tables of three or more dimensions the repair's protecting LPs are tried on one
sub-table's model first.  Above 200,000 cells the elimination's pattern is not audited before
the completion (its audit cost three times the completion and repair on a 1,000,000-cell
table, and it had primaries short of their levels, as in every large table measured); the
repair after the completion audits the result.

The elimination's time grows with its fill-in: seconds on two- and three-way tables of a
million cells, hours on a five-dimensional one of that size (the moves become long
combinations of inner cells).  ``elimination_time_limit`` bounds it: in its last 30 %, a
candidate whose update would merge more than ``_BUDGET`` row entries is suppressed
unchecked and the cheaper ones are decided as before; when it is over, every candidate left
is suppressed unless its column is already zero.  A suppressed
candidate never makes anything computable, so the rules hold for the pattern as before.

``forced`` cells are always suppressed, ``hidden`` cells are never published (suppressed in
the result, counted in ``details["hidden"]``) but need no protection, ``protected`` cells are
never suppressed (published first; status PROTECTED in the result).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import polars as pl

import sdckit.tables.suppression._common as _common
from sdckit.errors import InfeasibleError, ParameterError, SdcWarning
from sdckit.protection import Boolean, Instance, Integer, Options, Param, Real
from sdckit.tables._method import TableMethod
from sdckit.tables.audit._core import lp_audit
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    cell_costs,
    contract_table,
    make_result,
    protecting_cells,
    repair,
    search_costs,
    under_protected,
)
from sdckit.tables.suppression.elimination import (
    BUDGET,
    Limits,
    build_model,
    eliminate,
    fingerprint_weights,
    kernel,
    respondent_groups,
)
from sdckit.tables.suppression.elimination import candidate_order as _order
from sdckit.tables.suppression.elimination import model_from_entries as model_from_entries
from sdckit.tables.table import CellStatus, Table
from sdckit.twins import function_twin

__all__ = ["GaussSuppression", "suppress_gauss"]


_CELLS = Instance(
    (np.ndarray, pl.Series, list, tuple), "cell numbers or a boolean mask, one entry per cell"
)
_IDS = Instance((np.ndarray, pl.Series, list, tuple), "one respondent number per cell (integers)")
#: Above this many cells the elimination's pattern goes to the completion sub-table by
#: sub-table without an audit of its own (on the 1,000,000-cell benchmark table that audit
#: took 178 s, the completion and its repair about a minute).
_AUDIT_FIRST_UP_TO = 200_000
#: Rule R1 for one-cell respondents by column fingerprints (exact and modular arithmetic);
#: ``False`` scans the rows instead, as in floating point (the tests compare both paths).
_FINGERPRINTS = True
#: The row weights of the fingerprints (the tests replace them by weights that collide).
_fingerprint_weights = fingerprint_weights
#: The clock of ``elimination_time_limit`` (the tests replace it).
_CLOCK = time.perf_counter
#: In the last part of the time limit, a candidate whose update would merge more than this
#: many row entries is suppressed unchecked (see ``elimination.BUDGET``).
_BUDGET = BUDGET
#: That last part: this fraction of the limit (on that table 0.3 gave 117,191 secondaries
#: worth 40.4 M and ended at 526 s of 600; 0.1 gave 153,724 worth 44.1 M).
_BUDGET_SHARE = 0.3
#: Test hooks: the positions of the order at which the elimination goes to the budget mode
#: and at which it stops deciding, as the time limit does (``None``: by the clock only).
_STOP_AT: int | None = None
_CUT_AT: int | None = None


# --------------------------------------------------------------------------- the method
def _cells(table: Table, cells: Any, name: str) -> np.ndarray:
    if cells is None:
        return np.zeros(table.n_cells, dtype=bool)
    if isinstance(cells, pl.Series):
        cells = cells.to_numpy()
    return table._cells_mask(cells, name)


def _gauss_pattern(
    table: Table,
    w: np.ndarray,
    *,
    singletons: bool,
    contributors: Any,
    forced: np.ndarray,
    hidden: np.ndarray,
    frozen: np.ndarray,
    arithmetic: str,
    progress: Callable[[str, int, int], Any] | None,
    secondary_zeros: bool = False,
    time_limit: float | None = None,
) -> tuple[Table, dict[str, Any], np.ndarray, np.ndarray]:
    """One run of the elimination; returns the table, figures, and the unsafe primaries."""
    K = kernel()
    t0 = time.perf_counter()
    status = table.status
    primary = status == CellStatus.PRIMARY
    empty = status == CellStatus.EMPTY
    inner = ~table.is_total
    # with secondary_zeros the empty cells are candidates (last: their cost is 0), and the
    # empty inner cells rows of the model (unknowns once a zero is suppressed)
    zero_candidate = empty & ~forced & ~hidden & ~frozen & secondary_zeros
    rows_mask = inner & (~empty | zero_candidate)
    candidate = ((status == CellStatus.SAFE) | zero_candidate) & ~forced & ~hidden & ~frozen
    publish_first = (frozen | (status == CellStatus.PROTECTED) | empty) & ~primary & ~candidate
    groups = respondent_groups(table, rows_mask, singletons, contributors)
    attacker = groups >= 0
    live = primary | candidate | publish_first | attacker
    if progress is not None:
        progress("model", 0, 1)
    model = build_model(table, live, rows_mask, groups, np.abs(w) + 1.0)
    if progress is not None:
        progress("model", 1, 1)
    t1 = time.perf_counter()
    search = search_costs(table, w)
    has_rows = model.n_rows > 0
    first = np.flatnonzero(publish_first & has_rows)
    cand = np.flatnonzero(candidate & has_rows)
    order = np.r_[_order(search, model, first), _order(search, model, cand)]
    kinds = np.r_[np.ones(len(first), dtype=np.int8), np.zeros(len(cand), dtype=np.int8)]
    flags = np.zeros(table.n_cells, dtype=np.uint8)
    flags[live & has_rows] = K.LIVE
    flags[primary & has_rows] |= K.PRIM
    flags[attacker] |= K.ATT
    modes = {"exact": K.INTEGER, "modular": K.MODULAR, "float": K.FLOAT}
    budget_at = deadline = None
    if time_limit is not None:
        deadline = _CLOCK() + time_limit
        budget_at = deadline - _BUDGET_SHARE * time_limit
    limits = Limits(budget_at, deadline, _STOP_AT, _CUT_AT, _BUDGET, _CLOCK)
    weights = _fingerprint_weights if _FINGERPRINTS else None
    res = eliminate(
        model, order, kinds, flags, modes[arithmetic], progress, limits=limits, weights=weights
    )
    t2 = time.perf_counter()
    dec = res.decision
    secondary = np.zeros(table.n_cells, dtype=bool)
    secondary[order[(dec == K.SECONDARY) | (dec == K.SECONDARY_SINGLE) | (dec == K.STOPPED)]] = True
    secondary |= (forced | hidden) & ~primary & ~empty & (status != CellStatus.PROTECTED)
    zeros_suppressed = int(np.sum(secondary & empty))
    new_status = status.copy()
    new_status[secondary & (status != CellStatus.SECONDARY)] = CellStatus.SECONDARY
    new_status[frozen & ~primary] = CellStatus.PROTECTED
    out = table.with_status(status=new_status)
    exposed = np.flatnonzero(primary & ~has_rows)
    unsafe_exact = np.union1d(np.flatnonzero(res.unsafe == 1), exposed)
    unsafe_single = np.flatnonzero(res.unsafe == 2)
    ctr = res.counters
    details = {
        "rows": model.m,
        "model_nonzeros": len(model.row_col),
        "candidates": len(cand),
        "updates": int(ctr[K.C_STEPS]),
        "undone": int(ctr[K.C_UNDO]),
        "secondary_reveal": int(np.sum(dec == K.SECONDARY)),
        "secondary_singleton": int(np.sum(dec == K.SECONDARY_SINGLE)),
        "hidden": int(hidden.sum()),
        "secondary_zeros": zeros_suppressed,
        "arithmetic": {K.INTEGER: "exact", K.MODULAR: "modular", K.FLOAT: "float"}[res.mode],
        "modular_from": res.modular_from,
        "stopped": None if res.budget_from < 0 else "elimination_time_limit",
        "budget_from": len(cand) if res.budget_from < 0 else res.budget_from,
        "undecided": int(np.sum(dec == K.STOPPED)),
        "work": int(ctr[K.C_WORK]),
        "fingerprint_pairs": int(ctr[K.C_FP_PAIRS]),
        "fingerprint_scans": int(ctr[K.C_FP_SCANS]),
        "timings": {"model": t1 - t0, "elimination": t2 - t1},
    }
    if ctr[K.C_BROKEN]:
        details["singleton_rules_broken_by_frozen"] = int(ctr[K.C_BROKEN])
    return out, details, unsafe_exact, unsafe_single


class GaussSuppression(TableMethod):
    """Secondary suppression by Gaussian elimination (Langsrud's method, GaussSuppression).

    The candidates (safe cells) are taken by decreasing cost; each is published unless that
    would make a primary computable from the published cells (exact Gaussian elimination of
    the table's model matrix), or computable by one respondent who knows his own
    single-contributor cells; then it is suppressed.  Tables up to ``repair_limit`` cells are
    audited by LP with their protection levels and repaired (from 2,000 cells on, completed
    sub-table by sub-table as in the modular method).  See :mod:`.gauss` for the algorithm
    and the singleton rules.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing a cell; candidates are published in decreasing order of cost
        (equal costs: the cell in the larger margins first, GaussSuppression's default
        order).
    singletons : bool, default True
        Protect against respondents who know their own single-contributor cells (rules R1,
        R2 of :mod:`.gauss`).
    contributors : array, optional
        One respondent number per cell; single-contributor inner cells with the same number
        belong to one respondent (default: the unit of each such cell when the table was
        built with respondent or holding ids, ``Table.contributions``; else each is its own).
    forced, hidden, protected : array, optional
        Cells (numbers or a boolean mask) always suppressed; never published but needing no
        protection (suppressed in the result); never suppressed.
    repair_limit : int, default 2000000
        Tables with at most this many cells are audited by LP and repaired (0: never).  The
        elimination guarantees only that no primary is computable exactly; on large tables
        its pattern has primaries short of their levels, so the default covers them (a
        1,000,000-cell two-way table: 7 s of elimination, about a minute in all).
    max_rounds : int, default 5
        Rounds of audit, cheapest protecting cells and re-run of the elimination.
    arithmetic : {"exact", "modular", "float"}, default "exact"
        Integer elimination, going on modulo the prime ``2**61 - 1`` when an entry reaches
        ``2**31`` (see :mod:`.gauss`); modulo that prime from the start; or floating point.
    secondary_zeros : bool, default False
        Empty (zero) cells may be suppressed as secondaries; they are the last candidates
        (cost 0), as with GaussSuppression's ``secondaryZeros = TRUE``.  By default an empty
        cell is always published.  ``details["secondary_zeros"]`` counts those suppressed.
    elimination_time_limit : float, optional
        Seconds allowed for each run of the elimination (the audit and repair after it are
        not limited).  In the last 30 % of it, a candidate whose update would merge more
        than 32,768 row entries is suppressed unchecked and the cheaper ones are decided as
        before; when it is over, every candidate left is suppressed unless already
        computable from the published cells.  Suppressing a candidate is always safe, so the
        pattern keeps every rule, at the cost of more suppressions.  ``details["stopped"]``
        is then ``"elimination_time_limit"``, ``details["budget_from"]`` counts the
        candidates decided before that part and ``details["undecided"]`` those
        suppressed unchecked; a warning says so.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, GaussSuppression, MarkedCells, apply_rules
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = GaussSuppression().apply(apply_rules(t, MarkedCells(cells=[4], upper=1)))
    >>> res.n_secondary, res.protected
    (3, True)
    """

    name: ClassVar[str] = "Gaussian elimination suppression"
    alias: ClassVar[str] = "gauss"
    kind: ClassVar[str] = "suppression"
    description: ClassVar[str] = (
        "Protects every primary cell by publishing the other cells in order of cost unless a "
        "Gaussian elimination shows that one would make a primary computable (Gauss method)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cost": COST_PARAM,
        "singletons": Param(
            Boolean(),
            help="a respondent's own single-contributor cells must not reveal another primary",
        ),
        "contributors": Param(
            None, _IDS, help="respondent number of each cell (cells of one respondent)"
        ),
        "forced": Param(None, _CELLS, help="cells that are always suppressed"),
        "hidden": Param(
            None, _CELLS, help="cells never published that need no protection themselves"
        ),
        "protected": Param(None, _CELLS, help="cells that are never suppressed"),
        "repair_limit": Param(
            Integer(minimum=0),
            help="tables with at most this many cells are audited and repaired (0: never)",
        ),
        "max_rounds": Param(
            Integer(minimum=1), help="rounds of audit and re-run with protecting cells"
        ),
        "arithmetic": Param(
            Options("exact", "modular", "float"),
            help="exact integer elimination (modulo a 61-bit prime once entries grow), modulo "
            "that prime from the start, or floating point",
        ),
        "secondary_zeros": Param(
            Boolean(),
            help="empty (zero) cells may be suppressed as secondaries, taken last "
            "(GaussSuppression's secondaryZeros); otherwise they are always published",
        ),
        "elimination_time_limit": Param(
            Real(minimum=0, min_open=True),
            None,
            help="seconds allowed for each run of the elimination; in its last 30 % the "
            "costly candidates, after it the others (unless computable), are suppressed unchecked",
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        singletons: bool = True,
        contributors: Any = None,
        forced: Any = None,
        hidden: Any = None,
        protected: Any = None,
        repair_limit: int = 2_000_000,
        max_rounds: int = 5,
        arithmetic: str = "exact",
        secondary_zeros: bool = False,
        elimination_time_limit: float | None = None,
    ) -> None:
        self.cost = cost
        self.singletons = singletons
        self.contributors = contributors
        self.forced = forced
        self.hidden = hidden
        self.protected = protected
        self.repair_limit = repair_limit
        self.max_rounds = max_rounds
        self.arithmetic = arithmetic
        self.secondary_zeros = secondary_zeros
        self.elimination_time_limit = elimination_time_limit

    def apply(
        self, table: Table, *, progress: Callable[[str, int, int], Any] | None = None
    ) -> SuppressionResult:
        """Protect the primaries of ``table`` by Gaussian elimination.

        ``progress(stage, done, total)``, if given, is called during the model, the
        elimination and the audit (a call argument: how far the work is, not how it is done).

        Returns
        -------
        SuppressionResult
            ``details`` holds the model size, pivots, the secondaries due to a reveal and to
            the singleton rules, the arithmetic used, the cells added by the LP repair and
            (``timings``) the seconds of each phase; ``protected`` is the verdict of the final
            LP audit (False above ``repair_limit``: not audited).

        Raises
        ------
        InfeasibleError
            A primary that no pattern can protect (computable from cells that are never
            suppressed, or too little room for its protection levels).
        """
        self.validate_params()
        start = time.perf_counter()
        w = cell_costs(table, self.cost)
        forced = _cells(table, self.forced, "forced")
        hidden = _cells(table, self.hidden, "hidden")
        frozen = _cells(table, self.protected, "protected")
        if np.any(frozen & (forced | hidden)):
            raise ParameterError(
                "GaussSuppression: a cell is both 'protected' (never suppressed) and 'forced' "
                "or 'hidden'; give each cell one role."
            )
        if np.any(frozen & table.primary):
            raise ParameterError(
                "GaussSuppression: a primary cell is listed in 'protected'; primaries are "
                "always suppressed."
            )
        kwargs: dict[str, Any] = {
            "singletons": self.singletons,
            "contributors": self.contributors,
            "hidden": hidden,
            "frozen": frozen,
            "arithmetic": self.arithmetic,
            "progress": progress,
            "secondary_zeros": self.secondary_zeros,
            "time_limit": self.elimination_time_limit,
        }
        out, details, unsafe_exact, unsafe_single = _gauss_pattern(
            table, w, forced=forced, **kwargs
        )
        if len(unsafe_exact):
            raise _unprotectable(table, unsafe_exact)
        if len(unsafe_single):
            warnings.warn(
                f"{len(unsafe_single)} primary cell(s) can be computed by a respondent who "
                "knows his own single-contributor cells, from cells that are never suppressed "
                "(frozen or empty cells); suppress fewer frozen cells to protect them.",
                SdcWarning,
                stacklevel=2,
            )
        details["singleton_unsafe"] = len(unsafe_single)
        verdict: bool | None = None
        repaired = 0
        rounds = 0
        t_audit = time.perf_counter()
        if self.repair_limit and table.n_cells <= self.repair_limit:
            extra = np.zeros(table.n_cells, dtype=bool)
            # the audit is the costly part (LPs over all suppressed cells): `known` is the
            # set of under-protected primaries of `out` when it is known without a full audit
            known: np.ndarray | None = None
            for rounds in range(1, self.max_rounds + 1):
                if progress is not None:
                    progress("audit", rounds - 1, self.max_rounds)
                if table.n_cells > _AUDIT_FIRST_UP_TO:
                    # the elimination's pattern of a table this large has primaries short of
                    # their levels (in every table measured), and its audit costs more than
                    # the completion (whose repair audits the result): complete it at once
                    out, added, verdict = _complete_by_subtables(out, w, self.max_rounds)
                    repaired += added
                    break
                bad = (
                    known if known is not None else lp_audit(out, intervals="check").under_protected
                )
                known = None
                if not len(bad):
                    verdict = True
                    break
                if table.n_cells >= _common.LOCAL_PROTECTION_FROM:
                    # a large table: the elimination's pattern completed sub-table by
                    # sub-table (more suppressions keep every rule of the elimination)
                    out, added, verdict = _complete_by_subtables(out, w, self.max_rounds)
                    repaired += added
                    break
                fresh = protecting_cells(out, w, bad)
                if not fresh.any():
                    known = bad
                    break
                # re-run the elimination with the cheapest protecting cells forced
                extra |= fresh
                before = out.suppressed | fresh
                out, details, _, _ = _gauss_pattern(table, w, forced=forced | extra, **kwargs)
                if not np.any(before & ~out.suppressed):
                    # more suppressions never narrow an interval: only the primaries short
                    # before can be short now
                    known = under_protected(out, bad)
            repaired += int((extra & out.secondary).sum())
            if verdict is None:
                out, added, verdict = repair(
                    out, w, max_rounds=self.max_rounds, method="gauss", bad=known
                )
                repaired += added
            if progress is not None:
                progress("audit", self.max_rounds, self.max_rounds)
        elif self.repair_limit:
            warnings.warn(
                f"The table has {table.n_cells} cells, more than repair_limit="
                f"{self.repair_limit}: no primary can be computed from the relations (also "
                "by a respondent from his own cells), but the pattern was not audited by LP "
                "for the protection levels and the a priori bounds (protected=False). Audit "
                "it (sdckit.tables.audit, or rank_audit for exact disclosure; a published "
                "export audits it first), or raise repair_limit.",
                SdcWarning,
                stacklevel=2,
            )
        details["timings"] = {**details["timings"], "audit": time.perf_counter() - t_audit}
        if details["stopped"]:
            warnings.warn(
                f"GaussSuppression: elimination_time_limit={self.elimination_time_limit} s "
                f"ran short after {details['budget_from']} of {details['candidates']} "
                f"candidates; {details['undecided']} of the others were suppressed without "
                "the check (too costly to decide in time). The pattern keeps every rule but "
                "suppresses more than a full run; raise elimination_time_limit for fewer "
                "suppressions.",
                SdcWarning,
                stacklevel=2,
            )
        details.update(repaired=repaired, audit_rounds=rounds)
        return make_result(
            out, table, self, w, False, time.perf_counter() - start, verdict,
            time_limited="elimination_time_limit" if details["stopped"] else None, **details,
        )  # fmt: skip

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries."""
        return cls(), contract_table()


def _complete_by_subtables(table: Table, w: np.ndarray, max_rounds: int) -> tuple[Table, int, bool]:
    """Interval protection of a large table's elimination pattern, sub-table by sub-table.

    The modular method's protection (each failing sub-table's cheapest completion, then the
    repair of the whole table, its protecting LPs tried on sub-tables first in tables of
    three or more dimensions) keeps every cell the elimination suppressed, so the pattern
    stays safe from exact disclosure and from the respondents' own cells.  Returns the table,
    the cells added and the verdict of the final audit.
    """
    from sdckit.tables.suppression.modular import ModularSuppression

    before = table.suppressed
    out = ModularSuppression(cost=w, singletons=False, repair_limit=0).apply(table).table
    # the whole table's protecting LPs take seconds each from three dimensions on
    out, _, verdict = repair(
        out, w, max_rounds=max_rounds, method="gauss", local=len(table.shape) >= 3
    )
    added = int((out.suppressed & ~before).sum())
    return out, added, verdict


def _unprotectable(table: Table, cells: np.ndarray) -> InfeasibleError:
    shown = "; ".join(table.cell_position(int(c)) for c in cells[:5])
    more = f"; and {len(cells) - 5} more" if len(cells) > 5 else ""
    return InfeasibleError(
        f"The gauss method cannot protect {len(cells)} primary cell(s), and no suppression "
        f"pattern can: {shown}{more}: each can be computed from cells that are never "
        "suppressed (empty cells, frozen cells or 'protected'). Freeze fewer cells, or mark "
        "fewer empty cells as primary. Table.cell_label(number) gives the codes of a cell."
    )


@function_twin(GaussSuppression, roles=False)
def suppress_gauss(table: Table, **params: Any) -> SuppressionResult:
    """Secondary suppression by Gaussian elimination (Langsrud's method).

    The function form of :class:`GaussSuppression`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    cost, singletons, contributors, forced, hidden, protected, repair_limit, max_rounds,
    arithmetic, secondary_zeros, elimination_time_limit
        The parameters of :class:`GaussSuppression`, by name (keyword arguments only).
        (Progress is a call argument of :meth:`GaussSuppression.apply`.)

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_gauss
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> suppress_gauss(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """
