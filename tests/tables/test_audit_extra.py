"""Disclosure beyond single cells: integer-aware audit (UserSupport#194), unions (#160)."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit import SdcError
from sdckit.tables import (
    AuditResult,
    Dominance,
    IntegerAudit,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    UnionAudit,
    apply_rules,
    audit,
)


def _ones_table() -> Table:
    """UserSupport#194, example 3: 15 = 10 + 3 + x + y with the two ones primary."""
    t = Table.from_array(np.array([15, 10, 3, 1, 1]), {"x": ["a", "b", "c", "d"]})
    return apply_rules(t, MinFrequency(threshold=3))


def test_two_suppressed_ones_are_revealed_by_integrality() -> None:
    t = _ones_table()
    assert t.primary.tolist() == [False, False, False, True, True]
    plain = audit(t)
    assert plain.ok  # each LP interval is [0, 2]: levels 1 up and down are met
    assert plain.interval(3) == (0.0, 2.0)
    res = audit(t, integer_aware=True)
    assert isinstance(res, AuditResult)
    assert not res.ok and res.table.protected is False
    ia = res.integer_audit
    assert isinstance(ia, IntegerAudit)
    # a suppressed count is non-empty: both are at least 1, and they sum to 2
    assert ia.lower_bound.tolist() == [1.0, 1.0]
    assert ia.minimum.tolist() == [1.0, 1.0] and ia.maximum.tolist() == [1.0, 1.0]
    assert ia.revealed.tolist() == [True, True]
    assert res.under_protected.tolist() == [3, 4]
    assert res.single_cell_protected.tolist() == [True, True]
    summary = res.summary().to_dict()
    assert summary["revealed by integrality"] == 2
    assert summary["under-protected (single cells)"] == 0


def test_integer_bounds_tighten_below_the_lower_level() -> None:
    # 20 = 10 + x + y + z, the parts 2, 4, 4 suppressed; x must be able to go down by 1.5
    t = Table.from_array(np.array([20, 10, 2, 4, 4]), {"x": ["a", "b", "c", "d"]})
    t = apply_rules(t, MarkedCells(cells=[2], upper=1, lower=1.5)).suppress([3, 4])
    plain = audit(t)
    assert plain.ok and plain.interval(2) == (0.0, 10.0)
    res = audit(t, integer_aware=True)
    ia = res.integer_audit
    pos = list(ia.cells).index(2)
    assert (ia.minimum[pos], ia.maximum[pos]) == (1.0, 8.0)  # not 0: the cell is non-empty
    assert ia.tightened[pos] and not ia.revealed[pos]
    assert res.under_protected.tolist() == [2]
    # a lower level the integer interval reaches passes
    ok = apply_rules(
        Table.from_array(np.array([20, 10, 2, 4, 4]), {"x": ["a", "b", "c", "d"]}),
        MarkedCells(cells=[2], upper=1, lower=1),
    ).suppress([3, 4])
    assert audit(ok, integer_aware=True).ok


def test_integer_aware_audit_passes_a_safe_pattern() -> None:
    t = Table.from_array(
        np.array([[20, 8, 12], [10, 3, 7], [10, 5, 5]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    t = apply_rules(t, MarkedCells(cells=[t.cell(r="a", c="x")], upper=1))
    t = t.suppress([t.cell(r=r, c=c) for r in ("a", "b") for c in ("x", "y")][1:])
    res = audit(t, integer_aware=True)
    assert res.ok
    assert res.integer_audit.minimum.min() >= 1


def test_integer_aware_needs_integer_values() -> None:
    t = Table.from_array(np.array([3.5, 1.5, 2.0]), {"x": ["a", "b"]})
    t = apply_rules(t, MarkedCells(cells=[1], upper=0.1)).suppress([2])
    with pytest.raises(SdcError, match="integer cell values"):
        audit(t, integer_aware=True)


def _dominated_union() -> Table:
    """Row r1 = 40 + 30 + 30; the two 30s are primaries (p% rule) dominated by one respondent
    each, and in a hypercube with row r2, so each alone moves over [0, 55]; their sum is the row
    total less a published cell: exactly 60, and the union of the two is itself dominated."""
    vals = np.array([[180, 60, 55, 65], [100, 40, 30, 30], [80, 20, 25, 35]], float)
    top = np.zeros((3, 4, 2))
    top[1] = [[29.5, 29], [20, 10], [29, 0.5], [29.5, 0.3]]
    top[2] = [[12, 11], [10, 5], [10, 8], [12, 11]]
    top[0] = [[29.5, 29], [20, 10], [29, 10], [29.5, 12]]
    t = Table.from_array(
        vals, {"r": ["r1", "r2"], "c": ["c1", "c2", "c3"]}, top=top, kind="magnitude"
    )
    t = apply_rules(t, PPercent(p=10))
    return t.suppress([t.cell(r="r2", c="c2"), t.cell(r="r2", c="c3")])


def test_union_of_two_protected_cells_is_disclosed() -> None:
    t = _dominated_union()
    a, b = t.cell(r="r1", c="c2"), t.cell(r="r1", c="c3")
    assert np.flatnonzero(t.primary).tolist() == [a, b]
    plain = audit(t)
    assert plain.ok
    assert plain.interval(a) == (0.0, 55.0) and plain.interval(b) == (5.0, 60.0)
    res = audit(t, unions=True)
    assert not res.ok
    ua = res.union_audit
    assert isinstance(ua, UnionAudit)
    bad = ua.under_protected
    assert [g.tolist() for g in bad] == [[a, b]]
    k = [g.tolist() for g in ua.groups].index([a, b])
    assert (ua.minimum[k], ua.maximum[k]) == (60.0, 60.0)  # published exactly
    # the pooled union: x1 = 29.5, x2 = 29, T = 60: 10% of 29.5 - (60 - 58.5) = 1.45
    assert ua.unsafe[k] and ua.upper[k] == pytest.approx(1.45)
    assert sorted(res.under_protected.tolist()) == [a, b]
    # the column unions (r1 + r2 in c2 and in c3) are safe: their sums may be known
    assert ua.protected.sum() == len(ua.groups) - 1
    frame = ua.to_frame()
    assert frame.height == len(ua.groups) and frame["protected"].sum() == len(ua.groups) - 1
    assert res.summary().to_dict()["under-protected unions"] == 1


def test_union_rules_can_be_chosen() -> None:
    t = _dominated_union()
    # under a lax rule the union is safe, so its exact sum is no disclosure
    assert audit(t, unions=[PPercent(p=1)]).ok
    assert not audit(t, unions=Dominance(n=1, k=45)).ok  # 29.5 / 60 > 45 %
    with pytest.raises(SdcError, match="'unions'"):
        audit(t, unions=["p_percent"])


def test_union_of_counts_uses_the_minimum_frequency() -> None:
    # two suppressed ones in a row: their sum (2) is published exactly and is below 3
    t = _ones_table()
    res = audit(t, unions=True)
    assert not res.ok
    assert [g.tolist() for g in res.union_audit.under_protected] == [[3, 4]]
    both = audit(t, integer_aware=True, unions=True)
    assert both.integer_audit is not None and both.union_audit is not None


def test_extras_on_a_table_without_suppressions() -> None:
    t = Table.from_array(np.array([15, 10, 5]), {"x": ["a", "b"]})
    res = audit(t, integer_aware=True, unions=True)
    assert res.ok and len(res.cells) == 0


def test_fractional_lp_bound_rounds_down() -> None:
    """A suppressed cell whose LP interval is [0, 1.5] is 0 or 1 with integer values."""
    t = Table.from_array(np.array([9, 5, 3, 1]), {"x": ["a", "b", "c"]}, kind="magnitude")
    ub = np.full(t.n_cells, np.inf)
    ub[3] = 1.5  # a priori knowledge: at most 1.5
    t = t.with_status(upper_bounds=ub)
    t = apply_rules(t, MarkedCells(cells=[3], upper=0.5, lower=1)).suppress([2])
    plain = audit(t)
    assert plain.interval(3) == (0.0, 1.5) and plain.ok
    res = audit(t, integer_aware=True)
    ia = res.integer_audit
    pos = list(ia.cells).index(3)
    # a magnitude table: zero is possible (no lower bound of 1), the upper bound rounds down
    assert (ia.lower_bound[pos], ia.minimum[pos], ia.maximum[pos]) == (0.0, 0.0, 1.0)
    assert ia.tightened[pos] and not ia.revealed[pos]
    assert res.under_protected.tolist() == [3]  # 1 + 0.5 cannot be reached by an integer
