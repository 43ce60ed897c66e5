"""The rank test of a suppression pattern: which primaries the published cells give exactly.

An intruder who reads a table with suppressed cells knows every published cell and that each
cell is the sum of the inner cells under it.  A suppressed cell whose column of the model
matrix (its inner cells) is a linear combination of the published cells' columns has one
value in every table with those published cells: it is disclosed exactly, whatever the
bounds.  The test runs the elimination kernel of :class:`~sdckit.tables.GaussSuppression`
in exact integer arithmetic with every published cell published first and no cell left to
decide, so it scales as the elimination does (no LP).  With ``respondents=True`` it also
finds the primaries one respondent computes from the published cells and his own
single-contributor cells (GaussSuppression's rule R1).

*The a priori bounds.*  When every suppressed cell lies strictly inside its bounds (a
non-negative table whose suppressed cells are all above zero), the true table can move a
little along every move the relations allow, so a primary is disclosed exactly (a point
interval of the LP audit) exactly when the relations give it: the rank test's verdict is the
LP's.  A suppressed cell *on* a bound (a zero in a non-negative table) can be pinned there
by the bounds (two zeros under a published zero total, say), and then give others away.
The test is kept sound for them: suppressed non-primary cells on a bound are taken as known
to the intruder (a stronger intruder than the LP's); each primary on a bound is decided by
the moves left after that elimination (a small LP over its sign constraints: a primary at
its lower bound is free when some move raises it and lowers no other primary on a bound);
a primary found pinned is then known too and the test is run again.  So a primary it calls
safe is not disclosed exactly in the LP audit either; it may call unsafe a primary the LP
audit would pass (only where suppressed cells lie on their bounds).

It checks no protection levels: :func:`rank_audit` refuses primaries with levels.  The LP
audit (:func:`sdckit.tables.audit`) decides those; the rank test is the check for tables too
large for it; :func:`rank_audit` gives its verdict as an :class:`~sdckit.tables.AuditResult`
(``intervals = "rank"`` in a table job's ``[audit]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sdckit.errors import ParameterError
from sdckit.tables.audit._core import AuditResult, on_bounds
from sdckit.tables.table import CellStatus, Table

__all__ = ["RankTest", "check_rank_levels", "rank_audit", "rank_test"]


class RankTest:
    """What the rank test found (:func:`rank_test`).

    Attributes
    ----------
    computable : numpy.ndarray
        Primary cells the published cells give exactly (cell numbers, increasing).
    respondent_computable : numpy.ndarray
        Primary cells a respondent computes from the published cells and his own
        single-contributor cells (empty unless ``respondents=True``).
    n_primary, n_published : int
        The primaries tested and the published cells used.
    n_on_bounds : int
        Suppressed cells on one of their a priori bounds (module doc: the non-primary ones
        were taken as known, the primaries decided by their moves).
    """

    __slots__ = (
        "computable",
        "n_on_bounds",
        "n_primary",
        "n_published",
        "respondent_computable",
    )

    def __init__(
        self,
        computable: np.ndarray,
        respondent_computable: np.ndarray,
        n_primary: int,
        n_published: int,
        n_on_bounds: int = 0,
    ) -> None:
        self.computable = computable
        self.respondent_computable = respondent_computable
        self.n_primary = n_primary
        self.n_published = n_published
        self.n_on_bounds = n_on_bounds

    @property
    def ok(self) -> bool:
        """True when no primary is computable (by an outsider or by one respondent)."""
        return not len(self.computable) and not len(self.respondent_computable)

    def summary(self) -> str:
        """One line: primaries tested and how many are computable."""
        out = (
            f"Rank test: {self.n_primary} primary cell(s) against {self.n_published} published "
            f"cell(s): {len(self.computable)} computable exactly"
        )
        if len(self.respondent_computable):
            out += f", {len(self.respondent_computable)} by a respondent from his own cells"
        if self.n_on_bounds:
            out += (
                f"; {self.n_on_bounds} suppressed cell(s) on their a priori bounds, decided "
                "conservatively"
            )
        return out + " (exact disclosure only, not protection levels)."


def rank_test(
    table: Table,
    *,
    respondents: bool = False,
    contributors: Any = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> RankTest:
    """Which primaries of a suppressed ``table`` the published cells give exactly.

    Parameters
    ----------
    table : Table
        A table whose suppressed cells (primary or secondary status) are hidden.
    respondents : bool, default False
        Also test rule R1: a respondent who knows his own single-contributor cells (one
        respondent per cell, or ``contributors``) computes no other primary.
    contributors : array, optional
        Respondent number of each cell (as for :class:`~sdckit.tables.GaussSuppression`).
    progress : callable, optional
        ``progress(stage, done, total)``, called as the published cells are taken in
        (stage ``"rank test"``; ``"rank test, pinned cells known"`` when a primary on a
        bound is pinned; ``"rank test, respondents"`` for the respondents' run).

    Returns
    -------
    RankTest

    Examples
    --------
    A 2 x 2 table with margins and one suppressed inner cell: its row total gives it.

    >>> import numpy as np
    >>> from sdckit.tables import CellStatus, Table
    >>> from sdckit.tables.suppression import rank_test
    >>> t = Table.from_array(np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> rank_test(t.suppress([4], CellStatus.PRIMARY)).computable.tolist()
    [4]
    >>> rank_test(t.suppress([4, 5, 7, 8], CellStatus.PRIMARY)).computable.tolist()
    []

    Two zeros under a published zero total are pinned by the bounds (cells are at least 0),
    and with them the primary beside one of them (module doc):

    >>> z = Table.from_array(np.array([[9, 9, 0], [5, 5, 0], [4, 4, 0]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> found = rank_test(z.suppress([4, 5, 7, 8], CellStatus.PRIMARY))
    >>> found.computable.tolist(), found.n_on_bounds
    ([4, 5, 7, 8], 2)
    """
    primary = table.primary
    on_bound, sign = on_bounds(table.values, table.lower_bounds, table.upper_bounds)
    on_bound &= table.suppressed
    # the intruder is taken to know the others on a bound (module doc); a primary on both
    # bounds is known a priori
    fixed = on_bound & (sign == 0)
    known = on_bound & (~primary | fixed)
    free = np.flatnonzero(on_bound & primary & ~fixed)
    computable, pinned = _unsafe(
        table, None, known=known, free=free, sign=sign, progress=_stage(progress, "rank test")
    )
    pinned = np.union1d(pinned, np.flatnonzero(fixed & primary)).astype(np.int64)
    if len(pinned):
        # a pinned primary is known: run again with it known
        known[pinned] = True
        again, _ = _unsafe(
            table, None, known=known, progress=_stage(progress, "rank test, pinned cells known")
        )
        computable = np.union1d(again, pinned)
    respondent = np.zeros(0, dtype=np.int64)
    if respondents:
        # a second run: the kernel marks a primary by the first way it finds to compute it
        # (a respondent's, before the published cells alone give it)
        found, _ = _unsafe(
            table, contributors, True, known, progress=_stage(progress, "rank test, respondents")
        )
        respondent = np.setdiff1d(found, computable)
    published = ~table.suppressed & (table.status != CellStatus.EMPTY)
    return RankTest(
        computable=computable,
        respondent_computable=respondent,
        n_primary=int(primary.sum()),
        n_published=int(published.sum()),
        n_on_bounds=int(on_bound.sum()),
    )


def _stage(
    progress: Callable[[str, int, int], Any] | None, stage: str
) -> Callable[[str, int, int], Any] | None:
    """``progress`` with the kernel's stage name replaced by ``stage``."""
    if progress is None:
        return None
    return lambda _kernel_stage, done, total: progress(stage, done, total)


def _unsafe(
    table: Table,
    contributors: Any,
    respondents: bool = False,
    known: np.ndarray | None = None,
    free: np.ndarray | None = None,
    sign: np.ndarray | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The primaries the kernel finds computable with every published cell (and every
    ``known`` one) published, taken in by the fewest moves changing them at the time (see
    ``elimination.eliminate``); and of the ``free`` primaries (on a bound), those the bounds pin.
    """
    # the elimination kernel of the Gauss method, imported on use: the suppression package
    # imports the audit, so the audit reaches into it only when it runs
    from sdckit.tables.suppression.elimination import (
        build_model,
        eliminate,
        kernel,
        respondent_groups,
    )

    K = kernel()
    status = table.status
    primary = status == CellStatus.PRIMARY
    hidden = table.suppressed
    # rows: the inner cells an intruder does not know to be empty (a suppressed empty cell is
    # an unknown like any other)
    rows_mask = ~table.is_total & ((status != CellStatus.EMPTY) | hidden)
    published = ~hidden if known is None else ~hidden | known
    groups = respondent_groups(table, rows_mask, respondents, contributors)
    attacker = groups >= 0
    live = primary | published | attacker
    model = build_model(table, live, rows_mask, groups)
    has_rows = model.n_rows > 0
    first = np.flatnonzero(published & has_rows)  # the kernel orders them (fewest first)
    flags = np.zeros(table.n_cells, dtype=np.uint8)
    flags[live & has_rows] = K.LIVE
    flags[primary & has_rows] |= K.PRIM
    flags[attacker] |= K.ATT
    kinds = np.ones(len(first), dtype=np.int8)
    free = np.zeros(0, dtype=np.int64) if free is None else free
    res = eliminate(
        model, first, kinds, flags, K.INTEGER, progress, extract=free if len(free) else None
    )
    found = np.union1d(np.flatnonzero(res.unsafe > 0), np.flatnonzero(primary & ~has_rows))
    open_ = free[~np.isin(free, found)]
    pinned = np.zeros(0, dtype=np.int64)
    if len(open_):
        if res.extracted is None or sign is None or res.mode != K.INTEGER:
            # residues modulo P carry no signs: count them pinned
            pinned = open_
        else:
            rows, j, vals = res.extracted
            at = np.searchsorted(free, open_)
            pinned = open_[~_free_by_moves(rows, j, vals, sign[free], at)]
    return found.astype(np.int64), pinned.astype(np.int64)


def _free_by_moves(
    rows: np.ndarray, j: np.ndarray, vals: np.ndarray, sign: np.ndarray, targets: np.ndarray
) -> np.ndarray:
    """For each of the ``targets`` (positions among the cells on a bound), whether some
    combination of the moves left changes it in the direction its ``sign`` allows while every
    other cell on a bound moves only in its own (a small LP; HiGHS).

    ``rows``, ``j``, ``vals``: the moves' entries in the columns of the cells on a bound.  A
    solution is checked again before it counts; anything unproved counts as pinned.
    """
    from scipy.optimize import linprog

    k = len(sign)
    _, row = np.unique(rows, return_inverse=True)
    r = int(row.max()) + 1 if len(row) else 0
    out = np.zeros(len(targets), dtype=bool)
    if not r:
        return out
    # the moves are exact integer vectors: any real combination of them is a move
    moves = np.zeros((r, k))
    moves[row, j] = vals.astype(np.float64)
    scaled = moves * sign[None, :]  # column c: the moves of cell c in its allowed direction
    for at, target in enumerate(targets):
        # a combination y of the moves: scaled.T @ y >= 0 everywhere, >= 1 at the target
        lower = np.zeros(k)
        lower[target] = 1.0
        res = linprog(
            np.zeros(r),
            A_ub=-scaled.T,
            b_ub=-lower,
            bounds=[(None, None)] * r,
            method="highs",
        )
        if res.status != 0:
            continue
        w = scaled.T @ res.x
        tol = 1e-7 * max(1.0, float(np.abs(w).max()))
        out[at] = bool(np.all(w >= -tol) and w[target] >= 0.5)
    return out


def rank_audit(
    table: Table,
    *,
    tolerance: float = 1e-6,
    progress: Callable[[str, int, int], Any] | None = None,
    respondents: bool = False,
) -> AuditResult:
    """The audit of a pattern by the rank test: exact disclosure of the primaries, no LP.

    For tables too large for the LP audit (:func:`sdckit.tables.audit`): only the
    primaries' ``exact`` and ``protected`` are decided (``minimum`` and ``maximum`` are the
    value where exact, else NaN; ``intervals`` is ``"rank"``).  A primary it passes is not
    disclosed exactly by the LP audit either, the a priori bounds included (module doc:
    with suppressed cells on their bounds it decides conservatively).  It checks no
    protection levels, so it refuses primaries with levels: every verdict it returns is one
    it decided.

    Parameters
    ----------
    table : Table
        A suppressed table whose primaries have no protection levels (the rules with
        ``safety_range=0`` and ``minimum_level=0``, or ``MarkedCells(upper=0)``).
    tolerance : float, default 1e-6
        Relative tolerance below which a level counts as none.
    progress : callable, optional
        ``progress(stage, done, total)`` (see :func:`rank_test`).
    respondents : bool, default False
        Also fail the primaries a respondent computes from the published cells and his own
        single-contributor cells (rule R1, :func:`rank_test`; the insider audit of
        ``audit(method="rank", insider=True)``); the respondent of a cell is its unit in
        ``table.contributions`` when the table has them.

    Returns
    -------
    AuditResult

    Raises
    ------
    ParameterError
        A primary has protection levels.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import MarkedCells, Table, apply_rules
    >>> from sdckit.tables.suppression import rank_audit
    >>> t = Table.from_array(np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> marked = apply_rules(t, MarkedCells(cells=[4, 8], upper=0))
    >>> rank_audit(marked.suppress([5, 7])).ok
    True
    >>> rank_audit(marked.suppress([5])).under_protected.tolist()
    [4, 8]
    """
    check_rank_levels(table, tolerance=tolerance)
    cells = np.flatnonzero(table.suppressed)
    primary_cells = table.status[cells] == CellStatus.PRIMARY
    found = rank_test(
        table,
        progress=progress,
        respondents=respondents,
        contributors=_respondent_of_cells(table) if respondents else None,
    )
    computable = found.computable
    exact = np.isin(cells, computable)
    value = table.values[cells]
    lo = np.where(exact, value, np.nan)
    protected = ~(exact & primary_cells)
    if respondents:
        protected &= ~np.isin(cells, found.respondent_computable)
    ok = bool(protected.all())
    verdict = table.with_verdict(ok)
    return AuditResult(verdict, cells, lo, lo.copy(), protected, exact, False, "rank")


def check_rank_levels(
    table: Table, *, tolerance: float = 1e-6, where: str = "audit(intervals='rank')"
) -> None:
    """Raise a ParameterError when a primary has protection levels (the rank test decides
    exact disclosure only)."""
    prim = table.primary
    tiny = tolerance * (1.0 + np.abs(table.values))
    levels = prim & ((table.upper > tiny) | (table.lower > tiny) | (table.sliding > tiny))
    if np.any(levels):
        raise ParameterError(
            f"{where} checks exact disclosure only, but {int(levels.sum())} primary cell(s) "
            "have protection levels (upper, lower or sliding). Audit by LP (intervals = "
            "'check'), or give the rules no levels (MinFrequency(safety_range=0, "
            "minimum_level=0), ...) to ask for exact disclosure only."
        )


def _respondent_of_cells(table: Table) -> np.ndarray | None:
    """The unit of each single-unit cell of ``table.contributions`` (a code of its own
    elsewhere); None without contributions (each single-contributor cell is then its own
    respondent)."""
    contributions = table.contributions
    if contributions is None:
        return None
    per_cell = np.bincount(contributions.cell, minlength=table.n_cells)
    out = np.full(table.n_cells, -1, dtype=np.int64)
    sole = per_cell[contributions.cell] == 1
    out[contributions.cell[sole]] = contributions.unit[sole]
    # a cell of several units is no one respondent's: a code of its own
    return np.where(out >= 0, out, contributions.n_units + np.arange(table.n_cells))
