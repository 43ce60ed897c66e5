"""Disclosure beyond single cells: the integer-aware audit and the audit of unions of cells.

Used by :func:`sdckit.tables.audit` with ``integer_aware=True`` and ``unions=True`` (or rules).

**Integer-aware audit** (sdcTools UserSupport#194).  Counts are non-negative integers, and a
suppressed cell of a count table is known to be non-empty (empty cells are never suppressed, so
an intruder who sees a suppressed count knows it is at least 1).  The linear relaxation the
plain audit solves can then be too generous: a cell whose LP interval is ``[0, 1.5]`` can only be
0 or 1; two suppressed ones in a row ``15 = 10 + 3 + x + y`` are both 1 although each LP interval
is ``[0, 2]``.  The integer-aware audit computes the integer feasibility interval of every
suppressed cell (mixed-integer programs, lower bound 1 for suppressed non-empty counts) and flags
the cells it reveals (a single feasible value) or whose bounds tighten below the protection
levels.  The integer model needs integer cell values (a count table, or magnitudes in integer
units); it solves two small MILPs per suppressed cell, so it is for tables of moderate size.

**Unions of suppressed cells** (UserSupport#160).  The sum of several suppressed cells can be
known much more tightly than each of them: in a relation whose total is published, the sum of
its suppressed parts is published exactly.  A union of disjoint cells (parts of one relation) is
a cell of its own for an intruder: it pools the contributions of its members.  The audit forms,
for every relation, the union of its suppressed parts (and every pair of them), applies the
sensitivity rules to the pooled contributions (the largest contributions of the union are the
largest of its members'), and checks the LP interval of the union's sum against the levels the
rules require of the union.  A union that fails marks its primary members as under-protected.
With ``unions=True`` the rules are the table's own (those :func:`~sdckit.tables.apply_rules`
marked its primaries with, kept in :attr:`Table.rules <sdckit.tables.Table.rules>`): a union
is a cell of its own for the intruder, so it is judged as any cell of the table is (on the
table of sdcTools UserSupport#307, two suppressed counts of 5 and 3 under a threshold of 11
are a union of 8, which fails).  A table whose rules are not known (primaries marked by
hand, or by another tool) falls back to the p% rule with p = 10 for magnitudes with largest
contributions and the minimum-frequency rule with threshold 3 for counts; give rules
(``unions=[PPercent(p=15)]``) to use others.  Rules that mark given cells
(:class:`~sdckit.tables.MarkedCells`, :class:`~sdckit.tables.ZeroCells`) say nothing about a
union and are left out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

import highspy
import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit.errors import DataError, ParameterError
from sdckit.tables._lp import feasibility_intervals, lp_scale, new_highs
from sdckit.tables.table import CellStatus, Table

__all__ = [
    "IntegerAudit",
    "UnionAudit",
    "extend_audit",
    "integer_audit",
    "union_audit",
]

#: Unions larger than this are not split into pairs (the number of pairs grows quadratically).
MAX_PAIRS_PER_RELATION = 45


@dataclass(frozen=True, eq=False)
class IntegerAudit:
    """Integer feasibility intervals of the suppressed cells (``audit(..., integer_aware=True)``).

    Attributes
    ----------
    cells : numpy.ndarray
        Cell numbers of the suppressed cells (the order of the audit's ``cells``).
    minimum, maximum : numpy.ndarray
        Integer feasibility interval of each cell.
    lower_bound : numpy.ndarray
        The a priori lower bound the integer model used (1 for suppressed non-empty counts).
    revealed : numpy.ndarray
        True where the integer interval holds a single value while the LP interval does not.
    tightened : numpy.ndarray
        True where the integer interval is narrower than the LP interval.
    protected : numpy.ndarray
        The integer verdict: the requirement of a primary met by the integer interval (and it
        is not a single value); True for secondaries.
    """

    cells: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    lower_bound: np.ndarray
    revealed: np.ndarray
    tightened: np.ndarray
    protected: np.ndarray

    @property
    def under_protected(self) -> np.ndarray:
        """Cell numbers the integer model finds under-protected."""
        return self.cells[~self.protected]


@dataclass(frozen=True, eq=False)
class UnionAudit:
    """Unions of suppressed cells and whether their sums are protected.

    Attributes
    ----------
    groups : tuple of numpy.ndarray
        The cell numbers of each union (parts of one relation, at least one primary).
    relations : numpy.ndarray
        The row of :attr:`Table.constraint_matrix` each union comes from.
    value : numpy.ndarray
        The true sum of each union.
    minimum, maximum : numpy.ndarray
        Feasibility interval of each union's sum.
    unsafe : numpy.ndarray
        True where the rules find the union (its pooled contributions) sensitive.
    upper, lower, sliding : numpy.ndarray
        Protection levels the rules require of each union.
    protected : numpy.ndarray
        True where the union is safe, or its interval meets its levels and is not a point.
    """

    groups: tuple[np.ndarray, ...]
    relations: np.ndarray
    value: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    unsafe: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    sliding: np.ndarray
    protected: np.ndarray

    @property
    def under_protected(self) -> tuple[np.ndarray, ...]:
        """The unions whose sum is known too precisely."""
        return tuple(g for g, ok in zip(self.groups, self.protected, strict=True) if not ok)

    def to_frame(self) -> pl.DataFrame:
        """One row per union: its cells, sum, interval, levels and verdict."""
        return pl.DataFrame(
            {
                "cells": [g.tolist() for g in self.groups],
                "relation": self.relations,
                "value": self.value,
                "minimum": self.minimum,
                "maximum": self.maximum,
                "unsafe": self.unsafe,
                "upper_level": self.upper,
                "lower_level": self.lower,
                "protected": self.protected,
            }
        )


# ---------------------------------------------------------------------- integer-aware audit
def _integer_values(table: Table) -> None:
    vals = table.values
    if not np.all(np.isfinite(vals)) or not np.all(vals == np.round(vals)):
        raise ParameterError(
            "The integer-aware audit (integer_aware=True) needs integer cell values (a count "
            "table, or magnitudes in whole units); this table has fractional values. Audit it "
            "without integer_aware, or round the values to whole units first."
        )


def integer_audit(
    table: Table, cells: np.ndarray, lp_min: np.ndarray, lp_max: np.ndarray, tolerance: float
) -> IntegerAudit:
    """The integer feasibility interval of every suppressed cell ``cells`` (see module doc)."""
    _integer_values(table)
    m = table.constraint_matrix
    a = table.values[cells]
    published = np.ones(table.n_cells, dtype=bool)
    published[cells] = False
    rhs = -(m[:, published] @ table.values[published])
    lb = np.minimum(table.lower_bounds[cells], a)
    ub = np.maximum(table.upper_bounds[cells], a)
    if table.kind == "count" and not table.weighted:
        # a suppressed count is never an empty cell: an intruder knows it is at least 1
        nonempty = table.n_contributors[cells] != 0
        lb = np.where(nonempty & (a >= 1), np.maximum(lb, 1.0), lb)
    lb = np.ceil(lb - tolerance)
    ub = np.floor(ub + tolerance)
    lo, hi = feasibility_intervals(m[:, cells], rhs, rhs, lb, ub, integer=True)
    eps = tolerance * (1.0 + np.abs(a))
    width = hi - lo
    lp_width = lp_max - lp_min
    revealed = (width <= eps) & ~(lp_width <= eps)
    tightened = (lo > lp_min + eps) | (hi < lp_max - eps)
    primary = table.status[cells] == CellStatus.PRIMARY
    need = (
        (hi >= a + table.upper[cells] - eps)
        & (lo <= a - table.lower[cells] + eps)
        & (width >= table.sliding[cells] - eps)
        & (width > eps)
    )
    protected = np.where(primary, need, True)
    return IntegerAudit(cells, lo, hi, lb, revealed, tightened, protected)


# ---------------------------------------------------------------------- unions of cells
def _default_rules(table: Table) -> list[Any]:
    from sdckit.tables.rules import MinFrequency, PPercent

    if table.top.shape[1] >= 2 and table.kind == "magnitude":
        return [PPercent(p=10.0)]
    return [MinFrequency(threshold=3)]


def _rules(table: Table, unions: Any) -> list[Any]:
    from sdckit.tables.rules import MarkedCells, SensitivityRule, ZeroCells

    if unions is True:
        own = [r for r in table.rules if not isinstance(r, MarkedCells | ZeroCells)]
        return own or _default_rules(table)
    rules = [unions] if isinstance(unions, SensitivityRule) else list(unions)
    if not rules or not all(isinstance(r, SensitivityRule) for r in rules):
        raise ParameterError(
            "The 'unions' parameter of audit must be True, False, or sensitivity rules "
            "(PPercent, Dominance, MinFrequency, ...) to apply to the unions."
        )
    return rules


def _groups(table: Table) -> tuple[list[np.ndarray], list[int]]:
    """Unions to check: per relation, its suppressed parts (if two or more) and their pairs."""
    m = table.constraint_matrix.tocsr()
    supp = table.suppressed
    prim = table.primary
    seen: set[tuple[int, ...]] = set()
    groups: list[np.ndarray] = []
    rels: list[int] = []
    for r in range(m.shape[0]):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        cols, vals = m.indices[lo:hi], m.data[lo:hi]
        parts = np.sort(cols[(vals < 0) & supp[cols]])
        if len(parts) < 2 or not prim[parts].any():
            continue
        candidates = [tuple(parts.tolist())]
        if len(parts) > 2 and len(parts) * (len(parts) - 1) // 2 <= MAX_PAIRS_PER_RELATION:
            candidates += list(itertools.combinations(parts.tolist(), 2))
        for g in candidates:
            if g in seen or not prim[list(g)].any():
                continue
            seen.add(g)
            groups.append(np.asarray(g, dtype=np.int64))
            rels.append(r)
    return groups, rels


def _pooled_table(table: Table, groups: list[np.ndarray]) -> Table:
    """A flat table with one leaf per union (pooled contributions) under a grand total."""
    k = len(groups)
    width = table.top.shape[1]
    values = np.array([table.values[g].sum() for g in groups])
    known = bool(np.all(table.n_contributors >= 0))
    contrib = np.array([table.n_contributors[g].sum() for g in groups]) if known else None
    top = np.zeros((k, width))
    for n, g in enumerate(groups):
        pooled = np.sort(table.top[g].ravel())[::-1][:width]
        top[n, : len(pooled)] = pooled
    codes = [f"u{n}" for n in range(k)]
    all_values = np.r_[values.sum(), values]
    all_top = np.vstack([np.sort(top.ravel())[::-1][:width][None, :], top]) if width else None
    all_contrib = None if contrib is None else np.r_[contrib.sum(), contrib]
    kind = table.kind
    return Table.from_array(
        all_values,
        {"union": codes},
        n_contributors=all_contrib,
        top=all_top,
        kind=kind,
        tolerance=1e-6,
    )


def _sum_intervals(table: Table, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """LP minimum and maximum of the sum of each union (in deviations from the true values)."""
    cells = np.flatnonzero(table.suppressed)
    where = np.full(table.n_cells, -1)
    where[cells] = np.arange(len(cells))
    m = table.constraint_matrix[:, cells]
    rows = np.unique(m.nonzero()[0])
    m = sp.csr_matrix(m[rows])
    a = table.values[cells]
    lb = np.minimum(table.lower_bounds[cells], a) - a
    ub = np.maximum(table.upper_bounds[cells], a) - a
    s = lp_scale(lb, ub, a)
    zeros = np.zeros(m.shape[0])
    h = new_highs(m, zeros, zeros, lb / s, ub / s)
    n = len(cells)
    lo = np.zeros(len(groups))
    hi = np.zeros(len(groups))
    every = np.arange(n, dtype=np.int32)
    for k, g in enumerate(groups):
        cost = np.zeros(n)
        cost[where[g]] = 1.0
        h.changeColsCost(n, every, cost)
        out = []
        for sense in (highspy.ObjSense.kMinimize, highspy.ObjSense.kMaximize):
            h.changeObjectiveSense(sense)
            h.run()
            status = h.getModelStatus()
            if status == highspy.HighsModelStatus.kOptimal:
                out.append(float(h.getInfo().objective_function_value) * s)
            elif status in (
                highspy.HighsModelStatus.kUnbounded,
                highspy.HighsModelStatus.kUnboundedOrInfeasible,
            ):
                out.append(-np.inf if sense == highspy.ObjSense.kMinimize else np.inf)
            else:
                raise DataError(
                    "The linear programming solver (HiGHS) found no table that fits the "
                    "published cells while auditing the unions of suppressed cells; check the "
                    "table's totals and bounds."
                )
        total = float(table.values[g].sum())
        lo[k], hi[k] = total + out[0], total + out[1]
    return lo, hi


def union_audit(table: Table, unions: Any, tolerance: float) -> UnionAudit:
    """Audit the unions of suppressed parts of each relation (see the module doc)."""
    from sdckit.tables.rules import apply_rules

    rules = _rules(table, unions)
    groups, rels = _groups(table)
    empty = np.zeros(0)
    if not groups:
        no = np.zeros(0, dtype=bool)
        return UnionAudit((), np.zeros(0, np.int64), empty, empty, empty, no, empty, empty,
                          empty, no)  # fmt: skip
    pooled = apply_rules(_pooled_table(table, groups), rules)
    unsafe = pooled.primary[1:]
    upper, lower, sliding = pooled.upper[1:], pooled.lower[1:], pooled.sliding[1:]
    lo, hi = _sum_intervals(table, groups)
    value = np.array([table.values[g].sum() for g in groups])
    eps = tolerance * (1.0 + np.abs(value))
    exact = (hi - lo) <= eps
    meets = (
        (hi >= value + upper - eps)
        & (lo <= value - lower + eps)
        & (hi - lo >= sliding - eps)
        & ~exact
    )
    protected = ~unsafe | meets
    return UnionAudit(
        tuple(groups),
        np.asarray(rels, dtype=np.int64),
        value,
        lo,
        hi,
        unsafe,
        upper,
        lower,
        sliding,
        protected,
    )


# ---------------------------------------------------------------------- combining
def extend_audit(
    result: Any,
    table: Table,
    *,
    integer_aware: bool,
    unions: bool | Any,
    tolerance: float,
) -> Any:
    """Add the integer-aware and union audits to an audit result (called by ``audit``)."""
    if not isinstance(integer_aware, bool | np.bool_):
        raise ParameterError("The 'integer_aware' parameter of audit must be True or False.")
    if unions is False or unions is None:
        unions = False
    if not integer_aware and unions is False:
        return result
    cells = result.cells
    single = result.protected.copy()
    protected = single.copy()
    ia = ua = None
    if len(cells) and integer_aware:
        lp_min = np.where(np.isnan(result.minimum), -np.inf, result.minimum)
        lp_max = np.where(np.isnan(result.maximum), np.inf, result.maximum)
        ia = integer_audit(table, cells, lp_min, lp_max, tolerance)
        protected &= ia.protected
    if len(cells) and unions is not False:
        ua = union_audit(table, unions, tolerance)
        bad = np.zeros(table.n_cells, dtype=bool)
        for g in ua.under_protected:
            bad[g] = True
        primary = table.status[cells] == CellStatus.PRIMARY
        protected &= ~(bad[cells] & primary)
    ok = bool(protected.all())
    return replace(
        result,
        table=result.table.with_verdict(ok),
        protected=protected,
        single_cell_protected=single,
        integer_audit=ia,
        union_audit=ua,
    )
