"""The insider audit: each respondent (or holding) of the table attacks with its own data.

The outsider audit (:func:`~sdckit.tables.audit.lp_audit`) gives every suppressed cell the
interval an intruder derives from the published cells.  A respondent knows more: its own
contributions.  A cell it is the only contributor of is known to it exactly (the standard
R1 attack of tau-ARGUS and GaussSuppression: two single-enterprise cells in one row give
each other away when the third suppressed cell of the row is computable from the published
cells), and a cell it contributes to is at least its contribution (in a table of
non-negative cells, whose contributions are non-negative).

**The model.**  For each unit ``u`` (a respondent or a holding of ``table.contributions``;
without them, the one record behind each single-contributor inner cell) the LP of the
outsider audit is solved with ``u``'s knowledge added: the suppressed cells ``u`` is the
only contributor of are fixed at their values, every other suppressed cell ``u`` contributes
``c_u`` to is bounded below by ``c_u`` (when its a priori lower bound is not negative).
Only the blocks of suppressed cells (connected by the relations) that hold such a cell can
change, so only their primaries are decided, and only for units that contribute to a
suppressed primary or are the only contributor of a suppressed cell (the others know
nothing of a suppressed cell beyond the outsider).

**Few LPs.**  The outsider's model is solved once for the lowest and the highest value of
each primary, keeping the solutions: points of the outsider's feasible set.  A unit's
feasible set is the outsider's with some bounds tightened, so a point that keeps the unit's
cells at their values and its contributions below its cells is one of the unit's points too,
and a point shrunk towards the true table (``t x``, ``0 < t <= 1``; the true table is
feasible and the set convex) until it does is one as well.  A requirement these points
prove for a unit needs no LP of that unit; only the (unit, primary) pairs they leave open
are decided by the unit's own LPs (check mode, one model per unit over the blocks it
touches).

**The level that applies.**  ``u`` is interested in ``X - c_u``, the cell less its own
contribution; its interval is the cell's interval shifted by ``c_u``, so a level stated as a
distance from the true value is met by one exactly when it is met by the other.  The
protection levels of the rules are already insider levels of the cell itself (capped, as
:func:`~sdckit.tables.apply_rules` caps a lower level at the a priori lower bound, at the
unit's own lower bound: its contribution, below which it knows the cell cannot lie; a lower
level reaching further would ask the others' sum to go below 0): the p% rule's
upper level ``p/100 x_1 - (X - x_1 - x_2)`` is the distance the upper bound of ``X`` must
lie above ``X`` so that the second-largest contributor, subtracting its own ``x_2``, cannot
estimate ``x_1`` to within ``p`` percent; the dominance rule's the distance that keeps the
coalition of the other contributors from doing so.  Any other contributor ``x_k`` (``k > 2``)
needs less (``X - x_1 - x_k >= X - x_1 - x_2``), and the largest one, who learns the others'
sum, needs at most as much as its sum is sensitive.  So the audit checks the interval each
unit obtains against the cell's own levels (upper, lower and sliding, and no exact
disclosure): the same test as the outsider's with a narrower interval, conservative for every
unit but the worst placed, for which it is exact.  A primary of which ``u`` is the only
contributor is ``u``'s own value and is not checked against ``u``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import highspy
import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit._workers import available_cores
from sdckit.tables._lp import components, feasibility_intervals, lp_scale, new_highs, solve
from sdckit.tables._status import CellStatus

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["InsiderAudit", "insider_audit", "insider_knowledge"]


@dataclass(frozen=True, eq=False)
class InsiderAudit:
    """What each unit (respondent, holding or single record) learns of the primaries.

    One entry per (unit, primary) pair found below the primary's levels.

    Attributes
    ----------
    level : {"record", "respondent", "holding"}
        What a unit is (``"record"``: without contributions, the record behind each
        single-contributor cell).
    unit : numpy.ndarray
        The unit of each failing pair (codes of ``table.contributions``; ``"record"``: the
        cell number of its single-contributor inner cell).
    cell : numpy.ndarray
        The primary of each failing pair.
    minimum, maximum : numpy.ndarray
        The primary's interval for that unit (in check mode possibly an inner one: the
        verdict is exact, the bounds may be narrower than the LP's).
    exact : numpy.ndarray
        True where the unit computes the primary exactly.
    n_units : int
        Units that attacked (they contribute to a suppressed primary or are the only
        contributor of a suppressed cell).
    n_pairs : int
        The (unit, primary) pairs decided.
    """

    level: str
    unit: np.ndarray
    cell: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    exact: np.ndarray
    n_units: int
    n_pairs: int

    @property
    def ok(self) -> bool:
        """True when no unit brings a primary below its levels."""
        return not len(self.cell)

    @property
    def under_protected(self) -> np.ndarray:
        """The primaries some unit brings below their levels (cell numbers, increasing)."""
        return np.unique(self.cell)

    @property
    def disclosed(self) -> np.ndarray:
        """The primaries some unit computes exactly (cell numbers, increasing)."""
        return np.unique(self.cell[self.exact])

    def to_frame(self) -> pl.DataFrame:
        """One row per failing (unit, primary) pair."""
        return pl.DataFrame(
            {
                "unit": self.unit,
                "cell": self.cell,
                "minimum": self.minimum,
                "maximum": self.maximum,
                "exact": self.exact,
            },
            schema={
                "unit": pl.Int64,
                "cell": pl.Int64,
                "minimum": pl.Float64,
                "maximum": pl.Float64,
                "exact": pl.Boolean,
            },
        )

    def summary_rows(self) -> list[tuple[str, Any]]:
        """The rows the audit's summary shows."""
        return [
            (f"insider audit: units ({self.level}s) attacking", self.n_units),
            ("insider audit: primaries below their levels", len(self.under_protected)),
            ("insider audit: primaries computed exactly", len(self.disclosed)),
        ]


def insider_knowledge(table: Table) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What each unit knows of the cells: ``(level, unit, cell, value, sole)``, one entry per
    (unit, cell) it contributes to (``sole``: it is the cell's only contributor).

    From ``table.contributions`` when the table has them; else one unit per inner cell with
    one contributor (its record), contributing that cell's value to it and to every total
    above it (sole where the total has one contributor too).
    """
    contributions = table.contributions
    if contributions is not None:
        per_cell = np.bincount(contributions.cell, minlength=table.n_cells)
        sole = per_cell[contributions.cell] == 1
        return (
            contributions.level,
            np.asarray(contributions.unit, dtype=np.int64),
            np.asarray(contributions.cell, dtype=np.int64),
            np.asarray(contributions.value, dtype=np.float64),
            sole,
        )
    single = np.flatnonzero(~np.asarray(table.is_total, dtype=bool) & (table.n_contributors == 1))
    grid = np.arange(table.n_cells).reshape(table.shape)
    units, cells = [], []
    for leaf in single.tolist():
        chains = [
            _ancestors(h.parent, int(n))
            for h, n in zip(table.hierarchies, table.node_index[leaf], strict=True)
        ]
        above = grid[np.ix_(*chains)].ravel()
        units.append(np.full(len(above), leaf, dtype=np.int64))
        cells.append(above)
    if not units:
        empty = np.zeros(0, dtype=np.int64)
        return "record", empty, empty, np.zeros(0), np.zeros(0, dtype=bool)
    unit = np.concatenate(units)
    cell = np.concatenate(cells)
    return "record", unit, cell, table.values[unit], table.n_contributors[cell] == 1


def _ancestors(parent: np.ndarray, node: int) -> list[int]:
    """``node`` and every node above it in a hierarchy (``parent[root] = -1``)."""
    out = [node]
    while parent[out[-1]] >= 0:
        out.append(int(parent[out[-1]]))
    return out


def insider_audit(
    table: Table, *, tolerance: float = 1e-6, intervals: str = "check"
) -> InsiderAudit:
    """The insider audit of the suppression pattern of ``table`` (see the module doc).

    Parameters
    ----------
    table : Table
        A table with suppressed cells and primaries with their levels.
    tolerance : float, default 1e-6
        Relative tolerance of the checks.
    intervals : {"check", "exact"}
        Both decide each requirement from as few LPs as possible (the verdicts are the
        same); "check" may report inner bounds for the failing pairs, "exact" gives each
        failing pair its exact interval (the passing pairs are not reported).

    Returns
    -------
    InsiderAudit

    Examples
    --------
    Two single-contributor primaries (cells 5 and 6) in row r1, the third suppressed cell
    of that row (7) the only one of its column, so the published cells give it, and a cycle
    through row r2 (9, 10): an outsider learns only their sum, each respondent the other's
    value.

    >>> import numpy as np
    >>> from sdckit.tables import MarkedCells, Table, apply_rules
    >>> t = Table.from_array(
    ...     np.array([[157, 47, 59, 51], [32, 5, 7, 20], [95, 30, 40, 25], [30, 12, 12, 6]]),
    ...     {"r": ["r1", "r2", "r3"], "c": ["c1", "c2", "c3"]},
    ...     n_contributors=np.array([[34, 10, 12, 12], [7, 1, 1, 5], [19, 6, 8, 5],
    ...                              [8, 3, 3, 2]]), kind="magnitude")
    >>> t = apply_rules(t, MarkedCells(cells=[5, 6], upper=2, lower=2)).suppress([7, 9, 10])
    >>> found = insider_audit(t)
    >>> found.under_protected.tolist(), found.exact.all()
    ([5, 6], np.True_)
    """
    level, unit, cell, value, sole = insider_knowledge(table)
    suppressed = np.flatnonzero(table.suppressed)
    primary = table.primary
    empty = np.zeros(0)
    none = InsiderAudit(level, np.zeros(0, np.int64), np.zeros(0, np.int64), empty, empty,
                        np.zeros(0, bool), 0, 0)  # fmt: skip
    if not len(suppressed) or not len(unit) or not primary.any():
        return none
    # only what the units know of suppressed cells matters
    pos_of = np.full(table.n_cells, -1, dtype=np.int64)
    pos_of[suppressed] = np.arange(len(suppressed))
    keep = pos_of[cell] >= 0
    unit, cell, value, sole = unit[keep], cell[keep], value[keep], sole[keep]
    attacks = sole | primary[cell]
    attackers = np.unique(unit[attacks])
    if not len(attackers):
        return none
    m = table.constraint_matrix[:, suppressed].tocsr()
    m = m[np.flatnonzero(np.diff(m.indptr))]
    _, block = components(m)
    a = table.values[suppressed]
    lb0 = np.minimum(table.lower_bounds[suppressed], a) - a
    ub0 = np.maximum(table.upper_bounds[suppressed], a) - a
    nonneg = table.lower_bounds[suppressed] >= 0
    is_primary = table.status[suppressed] == CellStatus.PRIMARY
    up, low, sl = (x[suppressed] for x in (table.upper, table.lower, table.sliding))
    tiny = tolerance * (1.0 + np.abs(a)) * 2.0
    need = (
        np.where(is_primary, -low, np.inf),
        np.where(is_primary, up, -np.inf),
        np.where(is_primary, np.maximum(sl, tiny), tiny),
        np.zeros(len(suppressed)),
    )
    csc = m.tocsc()
    targets_all = np.flatnonzero(is_primary)
    pool = _outsider_points(csc, block, lb0, ub0, targets_all)
    order = np.argsort(unit, kind="stable")
    unit, cell, value, sole = unit[order], cell[order], value[order], sole[order]
    starts = np.searchsorted(unit, attackers)
    ends = np.searchsorted(unit, attackers, side="right")
    threads = available_cores()
    found: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    n_pairs = 0
    for u, s, e in zip(attackers.tolist(), starts.tolist(), ends.tolist(), strict=True):
        pos = pos_of[cell[s:e]]
        own = pos[sole[s:e]]
        cols = np.flatnonzero(np.isin(block, np.unique(block[pos])))
        targets = cols[is_primary[cols] & ~np.isin(cols, own)]
        if not len(targets):
            continue
        lb, ub = lb0.copy(), ub0.copy()
        lb[own] = ub[own] = 0.0  # known exactly: its deviation is 0
        part = pos[~sole[s:e] & nonneg[pos]]
        lb[part] = np.maximum(lb[part], value[s:e][~sole[s:e] & nonneg[pos]] - a[part])
        # the lower level capped at the unit's own a priori bound (see the module doc)
        low_u = np.minimum(low, -lb)
        need_u = (np.where(is_primary, -low_u, np.inf), *need[1:])
        n_pairs += len(targets)
        t_lo, t_hi = np.zeros(len(targets)), np.zeros(len(targets))
        open_ = np.ones(len(targets), dtype=bool)
        if pool is not None:
            p_lo, p_hi = _pooled_bounds(pool, own, part, lb[part], targets)
            small = tiny[targets]
            proven = (
                (p_hi >= up[targets] - small / 2)
                & (p_lo <= -low_u[targets] + small / 2)
                & (p_hi - p_lo >= np.maximum(sl[targets], small))
            )
            t_lo, t_hi = p_lo, p_hi
            open_ = ~proven
        if open_.any():
            lo, hi = _intervals(csc, cols, lb, ub, targets[open_], need_u, "check", threads)
            t_lo[open_], t_hi[open_] = lo, hi
        bad = ~_meets(t_lo, t_hi, targets, up, low_u, sl, a, tolerance)
        if bad.any() and intervals == "exact":
            # the verdicts are exact in check mode; only the failing pairs' bounds are
            # reported, so only they get their own LPs (one unit's every interval would
            # cost two LPs per primary of its blocks)
            lo, hi = _intervals(csc, cols, lb, ub, targets[bad], need_u, "exact", threads)
            t_lo[bad], t_hi[bad] = lo, hi
            bad[bad] = ~_meets(lo, hi, targets[bad], up, low_u, sl, a, tolerance)
        exact = (t_hi - t_lo) <= tolerance * (1.0 + np.abs(a[targets]))
        if bad.any():
            found.append((u, targets[bad], a[targets[bad]] + np.c_[t_lo, t_hi][bad].T, exact[bad]))
    if not found:
        return InsiderAudit(level, np.zeros(0, np.int64), np.zeros(0, np.int64), empty, empty,
                            np.zeros(0, bool), len(attackers), n_pairs)  # fmt: skip
    units = np.concatenate([np.full(len(f[1]), f[0], dtype=np.int64) for f in found])
    cells = suppressed[np.concatenate([f[1] for f in found])]
    lo_hi = np.concatenate([f[2] for f in found], axis=1)
    exact = np.concatenate([f[3] for f in found])
    return InsiderAudit(level, units, cells, lo_hi[0], lo_hi[1], exact, len(attackers), n_pairs)


def _meets(
    lo: np.ndarray,
    hi: np.ndarray,
    targets: np.ndarray,
    up: np.ndarray,
    low: np.ndarray,
    sl: np.ndarray,
    a: np.ndarray,
    tolerance: float,
) -> np.ndarray:
    """Whether each target's deviation interval ``[lo, hi]`` meets its levels and is no
    exact disclosure."""
    eps = tolerance * (1.0 + np.abs(a[targets]))
    return (
        (hi >= up[targets] - eps)
        & (lo <= -low[targets] + eps)
        & (hi - lo >= sl[targets] - eps)
        & ((hi - lo) > eps)
    )


def _intervals(
    csc: sp.csc_matrix,
    cols: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    targets: np.ndarray,
    need: tuple[np.ndarray, ...],
    intervals: str,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The deviation intervals of the ``targets`` on the model of the columns ``cols`` (the
    blocks the unit knows something of) with the unit's bounds."""
    sub = csc[:, cols]
    rows = np.flatnonzero(np.bincount(sub.nonzero()[0], minlength=sub.shape[0]))
    sub = sub[rows].tocsr()
    at = np.searchsorted(cols, targets)
    zeros = np.zeros(len(rows))
    requirement = None if intervals == "exact" else tuple(x[cols] for x in need)
    lo, hi = feasibility_intervals(
        sub, zeros, zeros, lb[cols], ub[cols], targets=at, need=requirement, threads=threads
    )
    return lo[at], hi[at]


#: Largest pool of outsider points (points x suppressed cells) kept for the proofs.
MAX_POOL = 20_000_000


def _outsider_points(
    csc: sp.csc_matrix,
    block: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    targets: np.ndarray,
) -> np.ndarray | None:
    """Points of the outsider's feasible set (deviations, one row each): the lowest and the
    highest value of each target, one model per block (None when too many to keep)."""
    k = csc.shape[1]
    if 2 * len(targets) * k > MAX_POOL or not len(targets):
        return None
    points = []
    for b in np.unique(block[targets]).tolist():
        cols = np.flatnonzero(block == b)
        sub = csc[:, cols]
        rows = np.flatnonzero(np.bincount(sub.nonzero()[0], minlength=sub.shape[0]))
        sub = sub[rows].tocsr()
        scale = lp_scale(lb[cols], ub[cols])
        zeros = np.zeros(len(rows))
        h = new_highs(sub, zeros, zeros, lb[cols] / scale, ub[cols] / scale)
        every = np.arange(len(cols), dtype=np.int32)
        for j in np.searchsorted(cols, targets[block[targets] == b]).tolist():
            cost = np.zeros(len(cols))
            cost[j] = 1.0
            h.changeColsCost(len(cols), every, cost)
            for sense in (highspy.ObjSense.kMinimize, highspy.ObjSense.kMaximize):
                h.changeObjectiveSense(sense)
                if solve(h) != highspy.HighsModelStatus.kOptimal:
                    continue  # unbounded: no point to keep (the unit's LP decides)
                point = np.zeros(k)
                point[cols] = np.asarray(h.getSolution().col_value) * scale
                points.append(point)
    return np.vstack(points) if points else None


def _pooled_bounds(
    pool: np.ndarray, own: np.ndarray, part: np.ndarray, floor: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest deviation of each target over the outsider points that are a
    unit's points too, each shrunk towards 0 until it is (module doc): its ``own`` cells at
    deviation 0 (up to rounding), its ``part`` cells at least ``floor``."""
    tol = 1e-9 * (1.0 + np.abs(pool).max(initial=0.0))
    usable = np.all(np.abs(pool[:, own]) <= tol, axis=1) if len(own) else np.ones(len(pool), bool)
    shrink = np.ones(len(pool))
    if len(part):
        x = pool[:, part]
        below = x < floor[None, :] - tol
        ratio = np.where(below, floor[None, :] / np.where(below, x, -1.0), 1.0)
        shrink = np.clip(ratio.min(axis=1), 0.0, 1.0)
    shrink = np.where(usable, shrink, 0.0)
    values = pool[:, targets] * shrink[:, None]
    return values.min(axis=0, initial=0.0), values.max(axis=0, initial=0.0)
