"""The LP audit of a suppression pattern (the attacker problem, methods.md M11.2): the kernel.

:func:`sdckit.tables.audit` adds the integer-aware, union and insider audits to it and keeps
their verdicts in one :class:`AuditResult`.  This module needs no other part of the package
but the LP helpers; :class:`~sdckit.tables.Table` does not import it (``Table.write`` takes
the verdict of an audit instead of auditing).

For every suppressed cell the audit finds the feasibility interval ``[min, max]`` an intruder can
derive from the published cells, the additivity relations and the a priori bounds (non-negative
values by default; optionally integer values), and checks it against the protection levels the
sensitivity rules require.  It works on any pattern, also one made by another tool: mark the
suppressed cells with :meth:`Table.suppress` (and the primaries with levels by
:func:`~sdckit.tables.apply_rules` or :class:`~sdckit.tables.MarkedCells`).

The linear programs are solved in deviations from the true values (``z = a + d`` with
``M_S d = 0``), so that rounding in the published totals (weighted tables, values in the
millions) cannot make them inconsistent, and scaled by a power of two (see
:mod:`sdckit.tables._lp`); the integer audit works on the values themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

import sdckit.tables._lp as _lp
from sdckit._results import Summary
from sdckit._validation import check_choice, check_real
from sdckit._workers import available_cores
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables._status import STATUS_NAMES, CellStatus
from sdckit.tables.audit._grid import subtables
from sdckit.tables.audit._rectangles import rectangle_proofs

if TYPE_CHECKING:
    from sdckit.tables.audit._extra import IntegerAudit, UnionAudit
    from sdckit.tables.audit._insider import InsiderAudit
    from sdckit.tables.table import Table

__all__ = ["AuditResult", "lp_audit", "on_bounds", "singleton_violations"]


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Feasibility intervals of the suppressed cells and whether they are wide enough.

    Attributes
    ----------
    table : Table
        The audited table, with its verdict recorded (``table.protected`` equals :attr:`ok`), so
        that a pattern that passes can be written as a published table.
    cells : numpy.ndarray
        Cell numbers of the suppressed cells (primary and secondary).
    minimum, maximum : numpy.ndarray
        Feasibility interval of each suppressed cell.
    protected : numpy.ndarray
        True where the interval meets the required upper, lower and sliding levels and the cell
        is not disclosed exactly (checked for primaries; always True for secondaries that are
        not required to be protected).
    exact : numpy.ndarray
        True where the interval has (numerically) zero width: the cell is disclosed exactly.
    integer : bool
        Whether the intervals assume integer cell values.
    intervals : {"exact", "check", "rank"}
        How the intervals were computed: exactly, or as inner approximations that only decide
        the verdicts (``audit(..., intervals="check")``), or not at all: the rank test decided
        exact disclosure only (:func:`sdckit.tables.suppression.rank_audit`; no protection
        levels).
    single_cell_protected : numpy.ndarray or None
        The plain (outsider, single-cell) verdict per suppressed cell when further audits
        were combined into ``protected`` (None: ``protected`` is that verdict).
    integer_audit : IntegerAudit or None
        The integer-aware audit (``integer_aware=True``).
    union_audit : UnionAudit or None
        The audit of unions of suppressed cells (``unions``).
    insider_audit : InsiderAudit or None
        The insider audit (``insider``): each respondent or holding of the table using its
        own contributions (:mod:`sdckit.tables.audit._insider`).
    secondaries_decided : bool
        Whether ``exact`` was decided for the secondaries too (then
        :attr:`computable_secondaries` lists those an outsider computes exactly).
    audit : Audit or None
        The :class:`~sdckit.tables.audit.Audit` (method and parameters) that made this
        verdict; None for the kernel's own results.
    """

    table: Table
    cells: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    protected: np.ndarray
    exact: np.ndarray
    integer: bool = False
    intervals: str = "exact"
    single_cell_protected: np.ndarray | None = None
    integer_audit: IntegerAudit | None = None
    union_audit: UnionAudit | None = None
    insider_audit: InsiderAudit | None = None
    secondaries_decided: bool = False
    audit: Any = None

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters of the audit that made this verdict (empty when not known)."""
        return {} if self.audit is None else self.audit.get_params()

    @property
    def computable_secondaries(self) -> np.ndarray:
        """Suppressed secondaries an outsider computes exactly from the published cells
        (decided when ``secondaries_decided``; else empty).  Not a failure of the pattern
        (a secondary is no one's contribution), but worth knowing: it protects nothing."""
        if not self.secondaries_decided:
            return np.zeros(0, dtype=np.int64)
        secondary = self.table.status[self.cells] == CellStatus.SECONDARY
        return self.cells[self.exact & secondary]

    @property
    def ok(self) -> bool:
        """True when every suppressed cell meets its required protection."""
        return bool(self.protected.all())

    @property
    def under_protected(self) -> np.ndarray:
        """Cell numbers whose interval is too narrow (or exact)."""
        return self.cells[~self.protected]

    @property
    def disclosed(self) -> np.ndarray:
        """Cell numbers disclosed exactly (interval of zero width)."""
        return self.cells[self.exact]

    def interval(self, cell: int) -> tuple[float, float]:
        """The feasibility interval of one suppressed cell."""
        pos = np.flatnonzero(self.cells == cell)
        if not len(pos):
            raise KeyError("that cell is not suppressed")
        return float(self.minimum[pos[0]]), float(self.maximum[pos[0]])

    def to_frame(self) -> pl.DataFrame:
        """One row per suppressed cell: codes, status, value, interval, levels, verdict."""
        t = self.table
        base = t.to_frame().select(list(t.dimensions))[self.cells.tolist()]
        return base.with_columns(
            pl.Series("cell", self.cells),
            pl.Series("status", STATUS_NAMES[t.status[self.cells]]),
            pl.Series("value", t.values[self.cells]),
            pl.Series("minimum", self.minimum),
            pl.Series("maximum", self.maximum),
            pl.Series("upper_level", t.upper[self.cells]),
            pl.Series("lower_level", t.lower[self.cells]),
            pl.Series("sliding_level", t.sliding[self.cells]),
            pl.Series("exact", self.exact),
            pl.Series("protected", self.protected),
            *self._insider_columns(),
        )

    def _insider_columns(self) -> list[pl.Series]:
        """The insider audit's verdict per suppressed cell (none without that audit)."""
        if self.insider_audit is None:
            return []
        bad = np.isin(self.cells, self.insider_audit.under_protected)
        return [pl.Series("insider_protected", ~bad)]

    def summary(self) -> Summary:
        """Counts of audited, exactly disclosed and under-protected cells."""
        primary = self.table.status[self.cells] == CellStatus.PRIMARY
        rows = [
            ("suppressed cells", len(self.cells)),
            ("primary cells", int(primary.sum())),
            ("disclosed exactly", int(self.exact.sum())),
            ("primaries disclosed exactly", int((self.exact & primary).sum())),
            ("under-protected cells", int((~self.protected).sum())),
            ("integer", self.integer),
        ]
        title = "Audit of the suppression pattern"
        if self.intervals == "rank":
            # the rank test decides the primaries' exact disclosure, nothing else
            rows = [rows[0], rows[1], rows[3], ("under-protected cells", rows[4][1])]
            title = "Rank test of the suppression pattern (exact disclosure only, no LP)"
        if self.secondaries_decided:
            rows.append(("secondaries computable by an outsider", len(self.computable_secondaries)))
        if self.single_cell_protected is not None:
            rows.append(
                ("under-protected (single cells)", int((~self.single_cell_protected).sum()))
            )
        if self.integer_audit is not None:
            ia = self.integer_audit
            rows += [
                ("revealed by integrality", int(ia.revealed.sum())),
                ("intervals tightened by integrality", int(ia.tightened.sum())),
                ("under-protected (integer model)", int((~ia.protected).sum())),
            ]
        if self.union_audit is not None:
            ua = self.union_audit
            rows += [
                ("unions audited", len(ua.groups)),
                ("sensitive unions", int(ua.unsafe.sum())),
                ("under-protected unions", int((~ua.protected).sum())),
            ]
        if self.insider_audit is not None:
            rows += self.insider_audit.summary_rows()
        return Summary(title, rows)


def on_bounds(
    values: np.ndarray, lower_bounds: np.ndarray, upper_bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which ``values`` lie on one of their a priori bounds (to a relative 1e-9), and the
    sign of the moves that keep each within (+1 at its lower bound, -1 at its upper, 0 at
    both).  The rank tests take such cells as ones the bounds may pin (an LP would)."""
    tiny = 1e-9 * (1.0 + np.abs(values))
    at_lower = values <= lower_bounds + tiny
    at_upper = values >= upper_bounds - tiny
    return at_lower | at_upper, at_lower.astype(np.int8) - at_upper.astype(np.int8)


def lp_audit(
    table: Table,
    *,
    integer: bool = False,
    tolerance: float = 1e-6,
    check_secondary: bool = False,
    primaries_only: bool = False,
    intervals: str = "exact",
    among: np.ndarray | None = None,
) -> AuditResult:
    """The LP part of :func:`sdckit.tables.audit` (same parameters but the extra audits).

    ``among`` (cell numbers) restricts the LPs to those primaries, for a re-check after more
    suppressions (which never narrow an interval: only the primaries short before can still
    be); the other cells are then reported not protected and the verdict covers nothing.
    """
    tol = check_real(tolerance, "tolerance", minimum=0)
    check_choice(intervals, "intervals", ("exact", "check"))
    cells = np.flatnonzero(table.suppressed)
    if len(cells) == 0:
        empty = np.zeros(0)
        return AuditResult(
            table.with_verdict(True),
            cells,
            empty,
            empty,
            np.zeros(0, bool),
            np.zeros(0, bool),
            integer,
            intervals,
        )
    m = table.constraint_matrix
    cores = available_cores()
    a = table.values[cells]
    # a priori bounds that exclude the true value are widened to it (as the methods do)
    lb = np.minimum(table.lower_bounds[cells], a)
    ub = np.maximum(table.upper_bounds[cells], a)
    primary_cells = table.status[cells] == CellStatus.PRIMARY
    only_primaries = primaries_only or (intervals == "check" and not check_secondary)
    targets = np.flatnonzero(primary_cells) if only_primaries else None
    if among is not None:
        targets = np.flatnonzero(primary_cells & np.isin(cells, among))
    if integer:
        # integer values: the model in the values themselves (counts add up exactly)
        published = np.ones(table.n_cells, dtype=bool)
        published[cells] = False
        rhs = -(m[:, published] @ table.values[published])
        lo, hi = feasibility_intervals(
            m[:, cells], rhs, rhs, lb, ub, integer=True, targets=targets, threads=cores
        )
    else:
        # deviations d = z - a: M_S d = 0 holds exactly, whatever the rounding of the totals
        zeros = np.zeros(m.shape[0])
        requirement = None
        if intervals == "check":
            tiny = tol * (1.0 + np.abs(a)) * 2.0
            requirement = (
                np.where(primary_cells, -table.lower[cells], np.inf),
                np.where(primary_cells, table.upper[cells], -np.inf),
                np.where(primary_cells, np.maximum(table.sliding[cells], tiny), tiny),
                np.zeros(len(cells)),
            )
        proved = np.zeros(len(cells), dtype=bool)
        r_lo = r_hi = np.zeros(len(cells))
        if requirement is not None and len(table.shape) == 2:
            # a cycle of four suppressed inner cells is a move of the whole two-way table: the
            # requirements it meets need no LP (their intervals are then inner ones, as in
            # check mode anyway)
            r_lo, r_hi = rectangle_proofs(table, cells, lb - a, ub - a)
            want = np.ones(len(cells), dtype=bool)
            if targets is not None:
                want = np.zeros(len(cells), dtype=bool)
                want[targets] = True
            proved = (
                want
                & (r_lo <= requirement[0])
                & (r_hi >= requirement[1])
                & (r_hi - r_lo >= requirement[2])
            )
            targets = np.flatnonzero(want & ~proved)
        d_lo, d_hi = feasibility_intervals(
            m[:, cells],
            zeros,
            zeros,
            lb - a,
            ub - a,
            targets=targets,
            need=requirement,
            groups=_subtable_groups(table, cells) if requirement is not None else None,
            threads=cores,
        )
        d_lo[proved], d_hi[proved] = r_lo[proved], r_hi[proved]
        lo, hi = a + d_lo, a + d_hi
    eps = tol * (1.0 + np.abs(a))
    exact = (hi - lo) <= eps  # NaN (not computed) compares False
    need = (
        (hi >= a + table.upper[cells] - eps)
        & (lo <= a - table.lower[cells] + eps)
        & (hi - lo >= table.sliding[cells] - eps)
        & ~exact
    )
    protected = np.where(primary_cells, need, ~exact if check_secondary else True)
    ok = bool(protected.all())
    mode = "exact" if integer else intervals
    return AuditResult(table.with_verdict(ok), cells, lo, hi, protected, exact, integer, mode)


def _subtable_groups(table: Table, cells: np.ndarray) -> list[np.ndarray] | None:
    """Positions in ``cells`` (sorted cell numbers) of each sub-table's suppressed cells.

    The check of a large connected block of suppressed cells proves most requirements on one
    sub-table at a time first (:func:`sdckit.tables._lp.feasibility_intervals`).
    """
    if len(cells) < _lp.LOCAL_PROOFS_FROM:
        return None
    out = []
    for sub in subtables(table):
        flat = sub.ravel()
        pos = np.minimum(np.searchsorted(cells, flat), len(cells) - 1)
        pos = pos[cells[pos] == flat]
        if len(pos):
            out.append(pos)
    return out


def singleton_violations(table: Table) -> np.ndarray:
    """Relations where a single-contributor primary is protected by only one other cell.

    Returns the row numbers of :attr:`Table.constraint_matrix` with exactly two suppressed
    cells, both primary and at least one of them with one contributor: each of the two
    respondents could compute the other's value.  A relation whose published cells are all
    empty is not one: its two suppressed cells are the same quantity (a total over one
    non-empty cell and that cell), so knowing one tells nothing about anyone else.
    """
    m = table.constraint_matrix.tocoo()
    supp = table.suppressed[m.col]
    single = (table.n_contributors[m.col] == 1) & table.primary[m.col]
    n_supp = np.bincount(m.row[supp], minlength=m.shape[0])
    n_prim = np.bincount(m.row[table.primary[m.col]], minlength=m.shape[0])
    n_single = np.bincount(m.row[single], minlength=m.shape[0])
    published_nonempty = ~supp & (table.n_contributors[m.col] > 0)
    n_other = np.bincount(m.row[published_nonempty], minlength=m.shape[0])
    return np.flatnonzero((n_supp == 2) & (n_prim == 2) & (n_single >= 1) & (n_other > 0))
