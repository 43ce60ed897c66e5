"""Controlled tabular adjustment: hand-computed cases, the audit, properties over random tables.

Every adjustment is checked after the fact by :func:`audit_adjustment` (each primary at least
its level away, every relation holding, every cell within its bounds, fixed cells unchanged),
and its optimality against an independent enumeration of the primaries' directions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.tables import (
    AdjustmentResult,
    CellStatus,
    ControlledAdjustment,
    Hierarchy,
    MarkedCells,
    Table,
    adjust_controlled,
    apply_rules,
    audit_adjustment,
)
from sdckit.tables.examples import with_margins


def _marked(
    values: object, hier: dict[str, object], cells: list[dict[str, str]], **levels: float
) -> Table:
    t = Table.from_array(values, hier)
    return apply_rules(t, MarkedCells(cells=cells, **levels))


def _two_by_two(**levels: float) -> Table:
    return _marked(
        with_margins(np.array([[6, 4], [4, 6]])),
        {"row": ["a", "b"], "col": ["x", "y"]},
        [{"row": "a", "col": "x"}],
        **levels,
    )


# ----------------------------------------------------------------------------- hand cases
def test_one_dimension_fixed_total_moves_the_other_cell() -> None:
    t = _marked([7, 4, 3], {"x": ["a", "b"]}, [{"x": "a"}], upper=2, lower=3)
    res = adjust_controlled(t, weights="unity", totals="fixed", direction="optimal")
    # up by 2 (cheaper than down by 3), b takes -2 so that the fixed total stays 7
    assert res.adjusted.tolist() == [7.0, 6.0, 1.0]
    assert res.direction.tolist() == [0, 1, 0]
    assert res.distance == 4.0 and res.optimal and res.stopped is None


def test_two_by_two_with_fixed_margins_moves_the_whole_square() -> None:
    res = adjust_controlled(
        _two_by_two(upper=2, lower=3), weights="unity", totals="fixed", direction="optimal"
    )
    inner = res.adjusted.reshape(3, 3)[1:, 1:]
    assert inner.tolist() == [[8.0, 2.0], [2.0, 8.0]]
    assert res.adjusted.reshape(3, 3)[0].tolist() == [20.0, 10.0, 10.0]
    assert res.distance == 8.0


def test_inverse_weights_move_the_totals_instead() -> None:
    # via the totals: 2/6 + 2/10 + 2/10 + 2/20 = 0.833; inside the table: 2/6+2/4+2/4+2/6 = 1.667
    res = adjust_controlled(_two_by_two(upper=2, lower=3), direction="optimal")
    grid = res.adjusted.reshape(3, 3)
    assert grid.tolist() == [[22.0, 12.0, 10.0], [12.0, 8.0, 4.0], [10.0, 4.0, 6.0]]
    assert res.distance == pytest.approx(2 / 6 + 2 / 10 + 2 / 10 + 2 / 20)


def test_grand_total_fixed_but_margins_free() -> None:
    t = _marked(
        with_margins(np.array([[6, 4], [3, 7]])),
        {"row": ["a", "b"], "col": ["x", "y"]},
        [{"row": "a", "col": "x"}],
        upper=2,
        lower=3,
    )
    res = adjust_controlled(t, totals="grand", direction="optimal")
    # the grand total stays 20; through row a and the column totals: 2/6 + 2/4 + 2/9 + 2/11
    # = 1.237, cheaper than through column x and the row totals: 2/6 + 2/3 + 2/10 + 2/10 = 1.4
    grid = res.adjusted.reshape(3, 3)
    assert grid.tolist() == [[20.0, 11.0, 9.0], [10.0, 8.0, 2.0], [10.0, 3.0, 7.0]]
    assert res.distance == pytest.approx(2 / 6 + 2 / 4 + 2 / 9 + 2 / 11)


def _levels_set(table: Table, cell: int, upper: float, lower: float, **bounds: object) -> Table:
    """``table`` with ``cell`` primary at the given levels, as given (the rules would cap a
    lower level at the cell's value)."""
    n = table.n_cells
    status = np.where(np.arange(n) == cell, CellStatus.PRIMARY, table.status)
    up, low = np.zeros(n), np.zeros(n)
    up[cell], low[cell] = upper, lower
    return table.with_status(status=status, upper=up, lower=low, **bounds)


def test_a_bound_closes_a_direction() -> None:
    # down by 3 would make the cell negative: it goes up by its (larger) upper level
    t = _levels_set(Table.from_array([7, 1, 6], {"x": ["a", "b"]}), 1, upper=5, lower=3)
    res = adjust_controlled(t, weights="unity", direction="optimal")
    assert res.direction[1] == 1
    assert res.adjusted.tolist() == [12.0, 6.0, 6.0]


# The CTA example of the tau-ARGUS 4.1 manual, section 2.13 (benchmarks.md A4): margins kept,
# (M2,P3) = 40 with levels 5; the manual's two optimal tables, one per direction.
TAU_INNER = np.array([[20, 24, 28], [38, 38, 40], [40, 39, 42]])
TAU_DOWN = [[15, 24, 33], [43, 38, 35], [40, 39, 42]]
TAU_UP = [[25, 24, 23], [33, 38, 45], [40, 39, 42]]


def _tau_table(upper: float, lower: float) -> Table:
    t = Table.from_array(
        with_margins(TAU_INNER), {"m": ["M1", "M2", "M3"], "p": ["P1", "P2", "P3"]}
    )
    return _levels_set(t, t.cell(m="M2", p="P3"), upper=upper, lower=lower)


@pytest.mark.parametrize(
    ("upper", "lower", "expected"),
    [(5, 5, None), (5, 40, TAU_UP), (1000, 5, TAU_DOWN)],
)
def test_tau_argus_manual_example(upper: float, lower: float, expected: object) -> None:
    # tau-ARGUS weighs a change by the cell's value (its default cost: the response)
    res = adjust_controlled(
        _tau_table(upper, lower), weights="value", totals="fixed", direction="optimal"
    )
    inner = res.adjusted.reshape(4, 4)[1:, 1:].tolist()
    assert inner in ([TAU_DOWN, TAU_UP] if expected is None else [expected])
    assert res.adjusted.reshape(4, 4)[0].tolist() == [309, 98, 101, 110]
    assert res.distance == 5 * (20 + 28 + 38 + 40)  # both directions cost the same
    assert res.audit().ok


def test_sliding_level_counts_both_ways() -> None:
    t = _marked([7, 4, 3], {"x": ["a", "b"]}, [{"x": "a"}], sliding=2)
    res = adjust_controlled(t, weights="unity", totals="fixed", direction="optimal")
    assert abs(res.adjusted[1] - 4.0) == 2.0 and res.audit().ok


def test_integer_moves_round_the_levels_up() -> None:
    t = _marked([7, 4, 3], {"x": ["a", "b"]}, [{"x": "a"}], upper=2.5, lower=9)
    assert t.kind == "count"
    res = adjust_controlled(t, weights="unity", totals="fixed", direction="optimal")
    assert res.integer
    assert res.adjusted.tolist() == [7.0, 7.0, 0.0]  # a move of 3 >= 2.5
    free = adjust_controlled(t, weights="unity", totals="fixed", integer=False, direction="optimal")
    assert free.adjusted.tolist() == [7.0, 6.5, 0.5]


def test_max_change_bounds_the_other_cells() -> None:
    t = _marked([30, 10, 10, 10], {"x": ["a", "b", "c"]}, [{"x": "a"}], upper=4, lower=4)
    res = adjust_controlled(t, weights="unity", totals="fixed", max_change=0.2, direction="optimal")
    others = np.abs(res.adjusted - t.values)[2:]
    assert others.max() <= 2.0 + 1e-9 and others.sum() == pytest.approx(4.0)
    with pytest.raises(InfeasibleError, match="max_change"):
        adjust_controlled(t, totals="fixed", max_change=0.1, direction="optimal")


def test_empty_and_protected_cells_do_not_move() -> None:
    values = with_margins(np.array([[5, 0, 7], [3, 4, 2]]))
    counts = with_margins(np.array([[2, 0, 3], [2, 2, 2]]))
    t = Table.from_array(values, {"r": ["a", "b"], "c": ["x", "y", "z"]}, n_contributors=counts)
    t = apply_rules(t, MarkedCells(cells=[{"r": "a", "c": "x"}], upper=2))
    empty, corner = t.cell(r="a", c="y"), t.cell(r="b", c="z")
    assert t.status[empty] == CellStatus.EMPTY
    # with fixed totals and (a,y) empty, the only cycle through (a,x) runs through (b,z)
    res = adjust_controlled(t, weights="unity", totals="fixed", direction="optimal")
    assert res.adjusted[empty] == 0.0 and abs(res.adjusted[corner] - 2.0) == 2.0
    assert res.audit().ok
    frozen = t.mark_protected([corner])
    frozen = apply_rules(frozen, MarkedCells(cells=[{"r": "a", "c": "x"}], upper=2))
    with pytest.raises(InfeasibleError, match="No adjustment"):
        adjust_controlled(frozen, weights="unity", totals="fixed", direction="optimal")
    free = adjust_controlled(frozen, weights="unity", direction="optimal")
    assert free.adjusted[corner] == 2.0 and free.adjusted[empty] == 0.0 and free.audit().ok
    moved = free.adjusted.copy()
    moved[corner] += 1.0  # the audit sees a frozen cell that moved
    assert audit_adjustment(frozen, moved).fixed_moved == 1


def test_a_primary_that_cannot_move_is_named_by_position() -> None:
    t = _marked([4, 4], {"x": Hierarchy.from_dict({"T": ["a"]})}, [{"x": "a"}], upper=1)
    with pytest.raises(InfeasibleError, match="No adjustment"):
        adjust_controlled(t, totals="fixed", direction="optimal")
    closed = _levels_set(t, 1, 1, 1, upper_bounds=t.values, lower_bounds=t.values)
    with pytest.raises(InfeasibleError, match="either direction") as info:
        adjust_controlled(closed, direction="optimal")
    assert "cell at" in str(info.value) and "4" not in str(info.value)  # no value in it


def test_bad_weights_are_refused_with_the_parameter_named() -> None:
    with pytest.raises(ParameterError, match="'weights'"):
        adjust_controlled(_two_by_two(upper=2), weights=[1.0, 2.0], direction="optimal")
    with pytest.raises(ParameterError, match="'weights'"):
        adjust_controlled(_two_by_two(upper=2), weights=np.full(9, -1.0), direction="optimal")


def test_result_frame_summary_and_published_table(tmp_path: object) -> None:
    t = _two_by_two(upper=2, lower=3)
    before = t.values.copy()
    res = adjust_controlled(t, weights="unity", totals="fixed", direction="optimal")
    assert np.array_equal(t.values, before)  # the input is untouched
    assert isinstance(res, AdjustmentResult) and isinstance(res.protection, ControlledAdjustment)
    assert res.method == "cta" and res.protection.get_params()["totals"] == "fixed"
    frame = res.to_frame()
    assert frame["difference"].abs().sum() == 8.0
    assert frame.filter(frame["primary"])["direction"].to_list() == [1]
    s = res.summary().to_dict()
    assert s["primaries moved up"] == 1 and s["weighted distance"] == 8.0
    pub = res.adjusted_table
    assert pub.protected is True and not pub.suppressed.any()
    path = pub.write(tmp_path / "cta.csv")  # type: ignore[operator]
    text = path.read_text()
    assert "8.0" in text and ",," not in text


# ----------------------------------------------------------------------------- the audit
def test_audit_catches_every_kind_of_fault() -> None:
    t = _two_by_two(upper=2, lower=3)
    good = adjust_controlled(t, weights="unity", totals="fixed").adjusted
    assert audit_adjustment(t, good).ok
    short = good.copy().reshape(3, 3)
    short[1:, 1:] = [[7, 3], [3, 7]]  # additive, but the primary moved by 1 < 2
    a = audit_adjustment(t, short.ravel())
    assert not a.ok and a.under_protected.tolist() == [4] and a.shortfall[4] == 1.0
    broken = good.copy()
    broken[5] += 1  # (a,y) no longer adds up
    a = audit_adjustment(t, broken)
    assert not a.additive and a.additivity == 1.0
    negative = with_margins(np.array([[9, -1], [1, 11]])).ravel()  # additive, below 0
    a = audit_adjustment(t, negative)
    assert a.additive and a.outside_bounds == 1 and not a.ok
    unmoved = audit_adjustment(t, t.values)
    assert unmoved.under_protected.tolist() == [4] and unmoved.shortfall[4] == 2.0
    assert unmoved.to_frame()["shortfall"].to_list() == [2.0]


def test_audit_refuses_a_wrong_size() -> None:
    with pytest.raises(ParameterError, match="'adjusted'"):
        audit_adjustment(_two_by_two(upper=2), [1.0, 2.0])


# ----------------------------------------------------------------------------- random tables
@st.composite
def marked_tables(draw: st.DrawFn) -> Table:
    """2-D or 3-D tables, flat or two-level dimensions, 1 to 3 primaries with levels."""
    n_dims = draw(st.sampled_from([2, 2, 3]))
    hier = {}
    for d in range(n_dims):
        if draw(st.booleans()):
            groups = draw(st.integers(2, 3))
            tree = {"T": [f"g{d}{g}" for g in range(groups)]}
            for g in range(groups):
                tree[f"g{d}{g}"] = [f"g{d}{g}c{c}" for c in range(draw(st.integers(1, 2)))]
            hier[f"v{d}"] = Hierarchy.from_dict(tree)
        else:
            hier[f"v{d}"] = Hierarchy.flat([f"c{d}{c}" for c in range(draw(st.integers(2, 3)))])
    shape = tuple(h.size for h in hier.values())
    values = np.zeros(shape)
    for combo in itertools.product(*[h.leaves.tolist() for h in hier.values()]):
        values[combo] = draw(st.integers(1, 60))
    for d, h in enumerate(hier.values()):
        for p in sorted(h.internal.tolist(), key=lambda p: -h.depth[p]):
            moved = np.moveaxis(values, d, 0)
            moved[p] = sum(moved[c] for c in h.children[p])
    t = Table.from_array(values, hier, kind="magnitude")
    prim = draw(st.lists(st.integers(0, t.n_cells - 1), min_size=1, max_size=3, unique=True))
    up = draw(st.integers(1, 8))
    low = draw(st.integers(1, 8))
    return apply_rules(t, MarkedCells(cells=prim, upper=up, lower=low))


def _least_distance(table: Table, weights: np.ndarray) -> float:
    """The least weighted distance, found independently: one LP per choice of directions
    (scipy's linprog over the deviations ``z = a - x`` split in two parts)."""
    n = table.n_cells
    m = table.constraint_matrix
    eq = sp.hstack([m, -m]).tocsr()
    prim = np.flatnonzero(table.primary)
    up, low = table.upper, table.lower
    best = np.inf
    for dirs in itertools.product((1, -1), repeat=prim.size):
        lo = np.zeros(2 * n)
        hi = np.r_[np.full(n, np.inf), table.values - table.lower_bounds]
        for p, d in zip(prim, dirs, strict=True):
            if d > 0:
                lo[p], hi[n + p] = up[p], 0.0
            else:
                lo[n + p], hi[p] = low[p], 0.0
        if np.any(lo > hi):
            continue
        res = linprog(
            np.r_[weights, weights], A_eq=eq, b_eq=np.zeros(m.shape[0]),
            bounds=list(zip(lo, hi, strict=True)), method="highs",
        )  # fmt: skip
        if res.status == 0:
            best = min(best, float(res.fun))
    return best


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(marked_tables())
def test_every_adjustment_passes_its_audit(table: Table) -> None:
    before = table.values.copy()
    res = adjust_controlled(table, weights="unity", gap=0.0, direction="optimal")
    audit = res.audit()
    assert audit.ok, audit.summary()
    assert audit.additivity <= 1e-9 * max(1.0, float(np.abs(table.values).max()))
    assert np.array_equal(table.values, before)
    assert np.all(res.adjusted >= 0)
    assert np.count_nonzero(res.direction) == table.primary.sum()
    moved = res.adjusted - table.values
    assert np.all(np.sign(moved[table.primary]) == res.direction[table.primary])
    assert res.distance == pytest.approx(float(np.abs(moved).sum()))
    # the audit sees a primary put back at its true value (and the relations it breaks)
    first = int(np.flatnonzero(table.primary)[0])
    back = res.adjusted.copy()
    back[first] = table.values[first]
    assert first in audit_adjustment(table, back).under_protected.tolist()


@SETTINGS
@given(marked_tables())
def test_the_exact_model_finds_the_least_distance(table: Table) -> None:
    w = np.ones(table.n_cells)
    res = adjust_controlled(table, weights=w, gap=0.0, direction="optimal")
    assert res.optimal
    assert res.distance == pytest.approx(_least_distance(table, w), rel=1e-6, abs=1e-6)


@SETTINGS
@given(marked_tables(), st.sampled_from(["fixed", "grand"]))
def test_relaxed_directions_and_fixed_totals_stay_protected(table: Table, totals: str) -> None:
    try:
        exact = adjust_controlled(table, totals=totals, gap=0.0, direction="optimal")
    except InfeasibleError:  # e.g. a primary total with every total around it fixed
        return
    fast = adjust_controlled(table, totals=totals, direction="relaxed")
    for res in (exact, fast):
        assert res.audit().ok
        fixed = table.is_total & ~table.primary
        if totals == "grand":
            fixed = np.zeros(table.n_cells, dtype=bool)
            fixed[0] = not table.primary[0]
        assert np.allclose(res.adjusted[fixed], table.values[fixed], atol=1e-7)
    assert fast.distance >= exact.distance * (1 - 1e-6) - 1e-9


def test_reruns_give_the_same_table() -> None:
    t = _two_by_two(upper=2, lower=2)
    a = adjust_controlled(t, node_limit=50, direction="optimal")
    b = ControlledAdjustment(node_limit=50, direction="optimal").apply(t)
    assert np.array_equal(a.adjusted, b.adjusted) and np.array_equal(a.direction, b.direction)


def test_a_node_limit_that_cuts_the_search_says_so() -> None:
    rng = np.random.default_rng(19)  # a 5 x 6 table whose search needs about ten nodes
    inner = rng.integers(1, 50, size=(5, 6))
    t = Table.from_array(
        with_margins(inner), {"r": list("abcde"), "c": list("uvwxyz")}, kind="magnitude"
    )
    cells = rng.choice(np.flatnonzero(~t.is_total), 8, replace=False).tolist()
    t = apply_rules(t, MarkedCells(cells=cells, upper=7, lower=5))
    cut = adjust_controlled(t, weights="unity", gap=0.0, node_limit=1, direction="optimal")
    full = adjust_controlled(t, weights="unity", gap=0.0, direction="optimal")
    assert full.optimal and full.stopped is None and full.details["nodes"] > 1
    assert cut.stopped == "node_limit" and not cut.optimal
    assert cut.audit().ok  # still protected and additive, only maybe farther
    assert cut.distance >= full.distance - 1e-9
    # a cut search is never farther than the dive of direction="relaxed"
    fast = adjust_controlled(t, weights="unity", gap=0.0, direction="relaxed")
    assert cut.distance <= fast.distance + 1e-9
    assert "dive_closer" in cut.details
    assert any("node_limit" in note for note in cut.summary().notes)
    again = adjust_controlled(t, weights="unity", gap=0.0, node_limit=1, direction="optimal")
    assert np.array_equal(again.adjusted, cut.adjusted)  # a count, not the clock


def test_relaxed_directions_on_a_table_the_relaxation_cannot_guide() -> None:
    # eight primaries with equal levels: the relaxation puts every y at 1/2; the dive still
    # finds an adjustment, no better than the exact one
    rng = np.random.default_rng(19)
    inner = rng.integers(1, 50, size=(5, 6))
    t = Table.from_array(
        with_margins(inner), {"r": list("abcde"), "c": list("uvwxyz")}, kind="magnitude"
    )
    cells = rng.choice(np.flatnonzero(~t.is_total), 8, replace=False).tolist()
    t = apply_rules(t, MarkedCells(cells=cells, upper=6, lower=6))
    fast = adjust_controlled(t, direction="relaxed")
    exact = adjust_controlled(t, gap=0.0, direction="optimal")
    assert fast.audit().ok and not fast.details["fallback"] and not fast.optimal
    assert fast.distance >= exact.distance - 1e-9
    assert np.count_nonzero(fast.direction) == 8


def test_the_audit_holds_fixed_totals_to_their_true_values() -> None:
    """An adjustment that moves a total it promised to keep fails the audit of a fixed-
    totals adjustment (and passes where the totals are free)."""
    t = _two_by_two(upper=2, lower=3)
    free = adjust_controlled(t, weights="unity", totals="free", direction="optimal")
    moved_totals = bool(np.any(np.abs(free.adjusted - t.values)[t.is_total] > 0))
    assert moved_totals and free.audit().ok  # 'free' moves a total, as it may
    assert not audit_adjustment(t, free.adjusted, totals="fixed").ok
    assert audit_adjustment(t, free.adjusted, totals="fixed").fixed_moved >= 1
    fixed = adjust_controlled(t, weights="unity", totals="fixed")
    assert fixed.audit().ok and audit_adjustment(t, fixed.adjusted, totals="fixed").ok
    with pytest.raises(ParameterError, match="'totals'"):
        audit_adjustment(t, fixed.adjusted, totals="some")


def test_non_integer_moves_are_published_without_solver_noise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The solver's last-bit noise (here added to its solution) is not published."""
    import sdckit.tables.cta as cta_module

    real = cta_module.solve

    def noisy(*args, **kwargs):
        res = real(*args, **kwargs)
        if res.x is not None:
            res.x = res.x.copy()
            res.x[:3] += 3e-12  # z+ of the three cells (z- and the directions follow)
        return res

    monkeypatch.setattr(cta_module, "solve", noisy)
    t = _marked([7.5, 4.25, 3.25], {"x": ["a", "b"]}, [{"x": "a"}], upper=1.3, lower=1.3)
    res = adjust_controlled(t, weights="unity", integer=False, direction="optimal")
    assert res.audit().ok
    moves = sorted((res.adjusted - t.values).tolist())
    assert moves == pytest.approx([-1.3, 0.0, 1.3], abs=1e-12)
    # the published values: as short as the moves, no trailing noise of the solver
    assert sorted(res.adjusted.tolist()) == sorted([7.5, 4.25 + 1.3, 3.25 - 1.3]) or sorted(
        res.adjusted.tolist()
    ) == sorted([7.5, 4.25 - 1.3, 3.25 + 1.3])
