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

It checks exact disclosure through the linear relations only: not protection levels, and
not the deductions that the bounds allow on top (a cell at its lower bound in every
solution).  The LP audit (:func:`sdckit.tables.audit`) decides both; the rank test is the
check for tables too large for it; :func:`rank_audit` gives its verdict as an
:class:`~sdckit.tables.AuditResult` (``intervals = "rank"`` in a table job's ``[audit]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sdckit.errors import ParameterError
from sdckit.tables._audit_core import AuditResult
from sdckit.tables.suppression.gauss import _build_model, _eliminate, _groups, _kernel
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
    """

    __slots__ = ("computable", "n_primary", "n_published", "respondent_computable")

    def __init__(
        self,
        computable: np.ndarray,
        respondent_computable: np.ndarray,
        n_primary: int,
        n_published: int,
    ) -> None:
        self.computable = computable
        self.respondent_computable = respondent_computable
        self.n_primary = n_primary
        self.n_published = n_published

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
        return out + " (exact disclosure through the relations only, not protection levels)."


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
        (stage ``"rank test"``; ``"rank test, respondents"`` for the second run).

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
    """
    primary = table.primary
    computable = _unsafe(table, None, progress=_stage(progress, "rank test"))
    respondent = np.zeros(0, dtype=np.int64)
    if respondents:
        # a second run: the kernel marks a primary by the first way it finds to compute it
        # (a respondent's, before the published cells alone give it)
        found = _unsafe(table, contributors, True, _stage(progress, "rank test, respondents"))
        respondent = np.setdiff1d(found, computable)
    published = ~table.suppressed & (table.status != CellStatus.EMPTY)
    return RankTest(
        computable=computable,
        respondent_computable=respondent,
        n_primary=int(primary.sum()),
        n_published=int(published.sum()),
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
    progress: Callable[[str, int, int], Any] | None = None,
) -> np.ndarray:
    """The primaries the kernel finds computable with every published cell published
    (taken in by the fewest moves changing them at the time, see ``gauss._eliminate``)."""
    K = _kernel()
    status = table.status
    primary = status == CellStatus.PRIMARY
    hidden = table.suppressed
    # rows: the inner cells an intruder does not know to be empty (a suppressed empty cell is
    # an unknown like any other)
    rows_mask = ~table.is_total & ((status != CellStatus.EMPTY) | hidden)
    published = ~hidden
    groups = _groups(table, rows_mask, respondents, contributors)
    attacker = groups >= 0
    live = primary | published | attacker
    model = _build_model(table, live, rows_mask, groups)
    has_rows = model.n_rows > 0
    first = np.flatnonzero(published & has_rows)
    # the published cells in the order of fewest rows (the least fill)
    first = first[np.argsort(model.n_rows[first], kind="stable")]
    flags = np.zeros(table.n_cells, dtype=np.uint8)
    flags[live & has_rows] = K.LIVE
    flags[primary & has_rows] |= K.PRIM
    flags[attacker] |= K.ATT
    kinds = np.ones(len(first), dtype=np.int8)
    res = _eliminate(model, first, kinds, flags, K.INTEGER, progress)
    found = np.union1d(np.flatnonzero(res.unsafe > 0), np.flatnonzero(primary & ~has_rows))
    return found.astype(np.int64)


def rank_audit(
    table: Table,
    *,
    tolerance: float = 1e-6,
    progress: Callable[[str, int, int], Any] | None = None,
) -> AuditResult:
    """The audit of a pattern by the rank test: exact disclosure of the primaries, no LP.

    For tables too large for the LP audit (:func:`sdckit.tables.audit`): only the
    primaries' ``exact`` and ``protected`` are decided (``minimum`` and ``maximum`` are the
    value where exact, else NaN; ``intervals`` is ``"rank"``).  It checks no protection
    levels and no deductions from the bounds, so it refuses primaries with levels: every
    verdict it returns is one it decided.

    Parameters
    ----------
    table : Table
        A suppressed table whose primaries have no protection levels (the rules with
        ``safety_range=0`` and ``minimum_level=0``, or ``MarkedCells(upper=0)``).
    tolerance : float, default 1e-6
        Relative tolerance below which a level counts as none.
    progress : callable, optional
        ``progress(stage, done, total)`` (see :func:`rank_test`).

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
    computable = rank_test(table, progress=progress).computable
    exact = np.isin(cells, computable)
    value = table.values[cells]
    lo = np.where(exact, value, np.nan)
    protected = ~(exact & primary_cells)
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
