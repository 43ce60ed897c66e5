"""LP audit of suppression patterns: worked example E2, tau-ARGUS 2x2, the sdcTable trap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.errors import SdcError
from sdckit.tables import (
    CellStatus,
    Hierarchy,
    MarkedCells,
    Table,
    _lp,
    apply_rules,
    audit,
    singleton_violations,
    suppress_modular,
)
from sdckit.tables.audit import _core as _audit_core
from sdckit.tables.audit import _rectangles
from sdckit.tables.examples import A4_PRIMARIES, a4_table, e2_table, with_margins

E2_PATTERN = [("B", "36210"), ("D", "36210"), ("B", "36300"), ("D", "36300")]


def test_e2_intervals_exactly() -> None:
    t = e2_table()
    cells = [t.cell(region=r, industry=c) for r, c in E2_PATTERN]
    res = audit(t.suppress(cells))
    got = [res.interval(c) for c in cells]
    assert got == [(0, 4871), (0, 4871), (1343, 6214), (489, 5360)]
    assert res.ok
    assert audit(t.suppress(cells), integer=True).interval(cells[2]) == (1343, 6214)


def test_e2_checked_against_p_percent_levels() -> None:
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    pattern = [t.cell(region=r, industry=c) for r, c in E2_PATTERN]
    ok = apply_rules(t, MarkedCells(cells=[d], upper=2000, lower=2000)).suppress(
        [c for c in pattern if c != d]
    )
    assert audit(ok).ok  # [0, 4871] reaches 2309 - 2000 and 2309 + 2000
    too_much = apply_rules(t, MarkedCells(cells=[d], upper=3000)).suppress(
        [c for c in pattern if c != d]
    )
    res = audit(too_much)
    assert not res.ok
    assert res.under_protected.tolist() == [d]
    frame = res.to_frame()
    assert frame.filter(frame["cell"] == d)["maximum"].item() == 4871


def test_tau_argus_two_by_two() -> None:
    t = Table.from_array(with_margins([[4, 3], [2, 1]]), {"r": ["1", "2"], "c": ["1", "2"]})
    res = audit(t.suppress([4, 5, 7, 8]))
    assert res.interval(4) == (3, 6)
    assert res.interval(8) == (0, 3)


def test_sdctable_trap_is_found() -> None:
    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    marked = apply_rules(t, MarkedCells(cells=cells))
    # every row and every column of the interior has at least two suppressions ...
    sup = marked.suppressed.reshape(t.shape)[1:, 1:]
    assert sup.sum(axis=0).min() >= 2 and sup.sum(axis=1).min() >= 2
    res = audit(marked)
    wb = t.cell(row="w", col="b")
    # ... yet (w, b) = 47 is recomputable exactly
    assert res.disclosed.tolist() == [wb]
    assert res.interval(wb) == pytest.approx((47, 47))
    assert res.under_protected.tolist() == [wb]
    assert res.summary().to_dict()["primaries disclosed exactly"] == 1


def test_unbounded_and_a_priori_bounds() -> None:
    t = Table.from_array(np.array([10.0, 3.0, 7.0]), {"x": ["a", "b"]})
    res = audit(t.suppress([0, 1]))  # the total and a part hidden: no upper bound
    assert res.interval(0) == (7, np.inf)
    assert res.interval(1) == (0, np.inf)
    ub = np.full(t.n_cells, np.inf)
    ub[0] = 12
    assert audit(t.with_status(upper_bounds=ub).suppress([0, 1])).interval(1) == (0, 5)


def test_singleton_violations() -> None:
    t = Table.from_array(
        with_margins([[5, 1, 4], [6, 2, 2]]),
        {"r": ["1", "2"], "c": ["a", "b", "c"]},
        n_contributors=with_margins([[3, 1, 3], [3, 1, 3]]),
    )
    marked = apply_rules(
        t, MarkedCells(cells=[t.cell(r="1", c="b"), t.cell(r="1", c="c")], upper=1)
    )
    assert len(singleton_violations(marked)) == 1
    assert len(singleton_violations(marked.suppress([t.cell(r="1", c="a")]))) == 0


def test_a_total_over_one_cell_is_not_a_singleton_violation() -> None:
    """Row 1 has one non-empty cell: its total is the same quantity, not another's value."""
    t = Table.from_array(
        with_margins([[0, 7, 0], [6, 2, 4]]),
        {"r": ["1", "2"], "c": ["a", "b", "c"]},
        n_contributors=with_margins([[0, 1, 0], [3, 1, 3]]),
    )
    total_1, cell_1b = t.cell(r="1", c="Total"), t.cell(r="1", c="b")
    marked = apply_rules(t, MarkedCells(cells=[total_1, cell_1b], upper=1))
    # row 1: (1, Total) = (1, a) + (1, b) + (1, c) with (1, a), (1, c) empty
    assert len(singleton_violations(marked)) == 0
    # column b: (Total, b) = (1, b) + (2, b) with (Total, b) published: when both are
    # single-contributor primaries, each of the two respondents computes the other's value
    two = apply_rules(t, MarkedCells(cells=[cell_1b, t.cell(r="2", c="b")], upper=1))
    assert len(singleton_violations(two)) == 1


def test_nothing_suppressed() -> None:
    res = audit(e2_table())
    assert res.ok and len(res.cells) == 0
    assert res.table.status[0] == CellStatus.SAFE


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_check_mode_gives_the_same_verdicts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    inner = rng.integers(1, 30, size=(5, 4))
    t = Table.from_array(with_margins(inner), {"r": list("abcde"), "c": list("wxyz")})
    interior = np.flatnonzero(~t.is_total)
    prim = rng.choice(interior, 4, replace=False)
    others = rng.choice(np.setdiff1d(interior, prim), 5, replace=False)
    marked = apply_rules(t, MarkedCells(cells=prim, upper=3, lower=2)).suppress(others)
    _same_verdicts(marked, audit(marked), audit(marked, intervals="check"))


def _same_verdicts(table: Table, exact, check) -> None:
    """The check's verdicts are the exact audit's; its intervals inner approximations."""
    assert np.array_equal(exact.protected, check.protected)
    primary = table.primary[exact.cells]
    assert np.array_equal(exact.exact[primary], check.exact[primary])
    assert np.all(check.minimum[primary] >= exact.minimum[primary] - 1e-9)
    assert np.all(check.maximum[primary] <= exact.maximum[primary] + 1e-9)


# ------------------------------------------------------- large blocks: proofs on sub-tables
@st.composite
def patterns(draw: st.DrawFn) -> Table:
    """Hierarchical 2-D / 3-D tables protected by the modular method, then some secondaries
    published again (so that some primaries pass and some fail)."""
    n_dims = draw(st.sampled_from([2, 2, 3]))
    hier = {}
    for d in range(n_dims):
        groups = draw(st.integers(1, 3))
        tree = {"T": [f"g{d}{g}" for g in range(groups)]}
        for g in range(groups):
            tree[f"g{d}{g}"] = [f"g{d}{g}c{c}" for c in range(draw(st.integers(1, 4)))]
        hier[f"v{d}"] = Hierarchy.from_dict(tree)
    shape = tuple(h.size for h in hier.values())
    values = np.zeros(shape)
    for combo in itertools.product(*[h.leaves.tolist() for h in hier.values()]):
        values[combo] = draw(st.integers(0, 30))
    for d, h in enumerate(hier.values()):
        for p in sorted(h.internal.tolist(), key=lambda p: -h.depth[p]):
            moved = np.moveaxis(values, d, 0)
            moved[p] = sum(moved[c] for c in h.children[p])
    t = Table.from_array(values, hier)
    cells = np.flatnonzero(t.values > 0).tolist() or [0]
    prim = draw(st.lists(st.sampled_from(cells), min_size=1, max_size=6, unique=True))
    level = draw(st.integers(1, 8))
    marked = apply_rules(t, MarkedCells(cells=prim, upper=level, lower=level // 2))
    try:
        protected = suppress_modular(marked, singletons=False).table
    except SdcError:  # a primary no pattern protects: audit the primaries alone
        return marked
    secondary = np.flatnonzero(protected.status == CellStatus.SECONDARY).tolist()
    drop = draw(st.lists(st.sampled_from(secondary), max_size=2, unique=True)) if secondary else []
    kept = sorted(set(secondary) - set(drop))
    return marked.suppress(kept)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns())
def test_sub_table_proofs_give_the_exact_verdicts(table: Table) -> None:
    """The check of a large block (proofs on sub-tables first) decides as the exact audit."""
    exact = audit(table)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_lp, "LOCAL_PROOFS_FROM", 1)  # every block takes the sub-table proofs
        mp.setattr(_lp, "_COVER_FROM", 2)
        check = audit(table, intervals="check")
    _same_verdicts(table, exact, check)


def test_sub_table_proofs_find_a_pattern_short_only_in_the_whole_table() -> None:
    """Protected in its sub-table but not in the whole table: the whole block decides."""
    region = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2"], "S": ["s1", "s2"]})
    sector = Hierarchy.from_dict({"T": ["A", "B"], "A": ["a1", "a2"], "B": ["b1", "b2"]})
    values = np.zeros((7, 7))
    leaves_r, leaves_c = region.leaves.tolist(), sector.leaves.tolist()
    rng = np.random.default_rng(5)
    for i in leaves_r:
        for j in leaves_c:
            values[i, j] = rng.integers(5, 40)
    for d, h in enumerate((region, sector)):
        for p in sorted(h.internal.tolist(), key=lambda p: -h.depth[p]):
            moved = np.moveaxis(values, d, 0)
            moved[p] = sum(moved[c] for c in h.children[p])
    t = Table.from_array(values, {"region": region, "sector": sector})
    grid = np.arange(t.n_cells).reshape(t.shape)
    # a rectangle of sub-totals in the top sub-table: (N, A), (N, B), (S, A), (S, B)
    rn, rs = region.codes.index("N"), region.codes.index("S")
    ca, cb = sector.codes.index("A"), sector.codes.index("B")
    corners = [grid[rn, ca], grid[rn, cb], grid[rs, ca], grid[rs, cb]]
    marked = apply_rules(t, MarkedCells(cells=[corners[0]], upper=2, lower=2))
    marked = marked.suppress(corners[1:])
    exact = audit(marked)
    # each sub-total is the sum of cells that are published: nothing can move
    assert not exact.ok
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_lp, "LOCAL_PROOFS_FROM", 1)
        check = audit(marked, intervals="check", secondaries=False)
    assert not check.ok
    assert np.array_equal(exact.protected, check.protected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns())
def test_rectangle_proofs_give_the_exact_verdicts(table: Table) -> None:
    """Cycles of four suppressed inner cells prove requirements of a two-way table without an
    LP: the check's verdicts stay the exact audit's, with and without them."""
    exact = audit(table)
    check = audit(table, intervals="check")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_rectangles, "MAX_POSITIONS", 0)
        lp_only = audit(table, intervals="check")
    _same_verdicts(table, exact, check)
    _same_verdicts(table, exact, lp_only)


def test_rectangle_proofs_spare_the_lps() -> None:
    """A primary in a rectangle of suppressed inner cells of a hierarchical two-way table is
    proved without an LP; a rectangle of sub-totals proves nothing (moving a sub-total moves
    the cells under it)."""
    region = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2"], "S": ["s1", "s2"]})
    sector = Hierarchy.from_dict({"T": ["A", "B"], "A": ["a1", "a2"], "B": ["b1", "b2"]})
    values = np.zeros((7, 7))
    rng = np.random.default_rng(3)
    for i in region.leaves.tolist():
        for j in sector.leaves.tolist():
            values[i, j] = rng.integers(5, 40)
    for d, h in enumerate((region, sector)):
        for p in sorted(h.internal.tolist(), key=lambda p: -h.depth[p]):
            moved = np.moveaxis(values, d, 0)
            moved[p] = sum(moved[c] for c in h.children[p])
    t = Table.from_array(values, {"region": region, "sector": sector})
    grid = np.arange(t.n_cells).reshape(t.shape)
    r, c = region.codes.index, sector.codes.index
    corners = [grid[r("n1"), c("a1")], grid[r("n1"), c("a2")], grid[r("n2"), c("a1")],
               grid[r("n2"), c("a2")]]  # fmt: skip
    marked = apply_rules(t, MarkedCells(cells=[corners[0]], upper=2, lower=2)).suppress(corners[1:])
    decided: list[int] = []
    lp = _audit_core.feasibility_intervals

    def counting(*args, targets=None, **kwargs):
        decided.append(0 if targets is None else len(targets))
        return lp(*args, targets=targets, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_audit_core, "feasibility_intervals", counting)
        check = audit(marked, intervals="check", secondaries=False)
    assert check.ok and decided == [0]  # proved by the rectangle, no LP asked for
    assert check.ok == audit(marked).ok
    # the same rectangle one level up (sub-totals) is no move of the table: decided by LP
    corners = [grid[r("N"), c("A")], grid[r("N"), c("B")], grid[r("S"), c("A")],
               grid[r("S"), c("B")]]  # fmt: skip
    marked = apply_rules(t, MarkedCells(cells=[corners[0]], upper=2, lower=2)).suppress(corners[1:])
    decided.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_audit_core, "feasibility_intervals", counting)
        check = audit(marked, intervals="check", secondaries=False)
    assert decided == [1] and not check.ok and not audit(marked).ok
