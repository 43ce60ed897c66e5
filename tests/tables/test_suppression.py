"""Secondary suppression: optimal (vs exhaustive search), hypercube, modular; all audited."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import InfeasibleError
from sdckit.tables import (
    Hierarchy,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
    singleton_violations,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.examples import A4_PRIMARIES, a4_table, e2_table, with_margins
from sdckit.tables.suppression._common import candidates

METHODS = [suppress_optimal, suppress_hypercube, suppress_modular]


def _protects(table: Table, cells: tuple[int, ...]) -> bool:
    t = table.suppress(list(cells)) if cells else table
    m = t.constraint_matrix.tocsr()
    # quick necessary condition: a relation through a primary needs another suppression
    counts = m.multiply(1).astype(bool).astype(int) @ t.suppressed.astype(int)
    through = m[:, t.primary].getnnz(axis=1) > 0
    if np.any(through & (counts < 2)):
        return False
    return audit(t, insider=False).ok  # the methods' verdict: the outsider's


def _exhaustive(table: Table, cost: np.ndarray) -> float:
    """Cheapest protecting set of candidates, by enumerating subsets by increasing size."""
    cand = np.flatnonzero(candidates(table)).tolist()
    best = np.inf
    for k in range(len(cand) + 1):
        if k and cost[cand].min() * k >= best:
            break
        for combo in itertools.combinations(cand, k):
            c = cost[list(combo)].sum()
            if c < best and _protects(table, combo):
                best = c
    return best


@st.composite
def small_tables(draw: st.DrawFn, max_side: int = 3) -> Table:
    rows = draw(st.integers(2, max_side))
    cols = draw(st.integers(2, max_side))
    inner = np.array(
        draw(st.lists(st.integers(1, 20), min_size=rows * cols, max_size=rows * cols))
    ).reshape(rows, cols)
    t = Table.from_array(
        with_margins(inner),
        {"r": [f"r{i}" for i in range(rows)], "c": [f"c{j}" for j in range(cols)]},
        kind="magnitude",
    )
    interior = np.flatnonzero(~t.is_total)
    n_prim = draw(st.integers(1, 2))
    prim = draw(
        st.lists(st.sampled_from(interior.tolist()), min_size=n_prim, max_size=n_prim, unique=True)
    )
    level = draw(st.integers(1, 4))
    return apply_rules(t, MarkedCells(cells=prim, upper=level, lower=0))


@settings(max_examples=8)
@given(small_tables(3))
def test_optimal_equals_exhaustive_unity(table: Table) -> None:
    res = suppress_optimal(table, cost="unity")
    assert res.optimal
    assert audit(res.table, insider=False).ok
    assert res.cost == pytest.approx(_exhaustive(table, np.ones(table.n_cells)))


@settings(max_examples=5)
@given(small_tables(2))
def test_optimal_equals_exhaustive_value(table: Table) -> None:
    res = suppress_optimal(table, cost="value")
    cost = np.abs(table.values) + 1e-3
    assert res.cost == pytest.approx(_exhaustive(table, cost))


def test_e2_optimal_p_percent_cheaper_than_shown() -> None:
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    top = np.zeros((t.n_cells, 2))
    top[d] = [1500, 700]  # remainder 109 < 10% of 1500: unsafe, level 41
    t = Table.from_array(
        t.values.reshape(t.shape),
        dict(zip(t.dimensions, t.hierarchies, strict=True)),
        top=top,
        kind="magnitude",
    )
    primaries = apply_rules(t, PPercent(p=10))
    assert primaries.primary.tolist().count(True) == 1 and primaries.upper[d] == 41
    res = suppress_optimal(primaries, cost="value")
    shown = sum(
        t.values[t.cell(region=r, industry=c)]
        for r, c in [("B", "36210"), ("B", "36300"), ("D", "36300")]
    )
    assert shown == 9265
    assert res.optimal and res.cost <= shown
    assert res.secondary_value == pytest.approx(8713)
    assert audit(res.table, insider=False).ok


@pytest.mark.parametrize("method", METHODS)
def test_methods_avoid_the_sdctable_trap(method) -> None:
    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    res = method(apply_rules(t, MarkedCells(cells=cells, upper=3)))
    check = audit(res.table, insider=False)
    assert check.ok
    assert t.cell(row="w", col="b") not in check.disclosed


def test_singleton_needs_a_third_suppression() -> None:
    # tau-ARGUS manual 2.10 (benchmarks A4, whose total of X1 reads 73: 52 + 24 = 76 adds up):
    # (A, X2) singleton, (A, X4) unsafe
    full = np.array([[227, 76, 33, 93, 25], [146, 52, 15, 62, 17], [81, 24, 18, 31, 8]])
    contributors = np.full(full.shape, 5)
    contributors[1, 2] = 1
    t = Table.from_array(
        full,
        {"row": ["A", "B"], "col": ["X1", "X2", "X3", "X4"]},
        n_contributors=contributors,
        kind="magnitude",
    )
    marked = apply_rules(
        t, MarkedCells(cells=[t.cell(row="A", col="X2"), t.cell(row="A", col="X4")], upper=2)
    )
    for method in METHODS:
        res = method(marked, cost="unity")
        assert len(singleton_violations(res.table)) == 0, method.__name__
        row_a = res.table.suppressed.reshape(t.shape)[1]  # the relation of row A
        assert row_a.sum() >= 3
        assert audit(res.table, insider=False).ok
    plain = suppress_optimal(marked, cost="unity", singletons=False)
    assert plain.cost < suppress_optimal(marked, cost="unity").cost


def test_cost_options_and_errors() -> None:
    t = a4_table()
    marked = apply_rules(t, MarkedCells(cells=[t.cell(row="x", col="c")], upper=2))
    user = np.ones(t.n_cells)
    user[t.cell(row="w", col="c")] = 100
    res = suppress_optimal(marked, cost=user)
    assert not res.table.suppressed[t.cell(row="w", col="c")]
    with pytest.raises(InfeasibleError):
        suppress_optimal(
            apply_rules(t, MarkedCells(cells=[t.cell(row="x", col="c")], upper=10**6, lower=0))
            .mark_protected(np.flatnonzero(t.values > 0)[:0])
            .with_status(upper_bounds=np.where(t.is_total, t.values, 100.0))
        )
    assert "secondary suppressions" in res.summary().to_dict()
    assert res.to_frame().height == t.n_cells


REGION = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2"], "S": ["s1", "s2", "s3"]})


@st.composite
def hierarchical_tables(draw: st.DrawFn) -> Table:
    three = draw(st.booleans())
    n = draw(st.integers(30, 120))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    data = {
        "region": rng.choice(["n1", "n2", "s1", "s2", "s3"], n),
        "sector": rng.choice(["a", "b", "c"], n),
        "v": rng.lognormal(2, 1.5, n),
    }
    dims: dict = {"region": REGION, "sector": None}
    if three:
        data["size"] = rng.choice(["small", "large"], n)
        dims["size"] = None
    t = Table.from_microdata(pl.DataFrame(data), dims, "v")
    return apply_rules(t, [PPercent(p=20), MinFrequency(threshold=3)])


@settings(max_examples=6)
@given(hierarchical_tables())
def test_every_pattern_passes_the_audit(table: Table) -> None:
    for method in (suppress_hypercube, suppress_modular):
        res = method(table)
        assert audit(res.table, insider=False).ok, method.__name__
        assert np.all(res.table.suppressed >= table.suppressed)
    if len(table.dimensions) == 2:
        res = suppress_optimal(table)
        assert res.optimal and audit(res.table, insider=False).ok


@settings(max_examples=4)
@given(hierarchical_tables())
def test_decomposition_alone_protects_subtables(table: Table) -> None:
    res = suppress_modular(table, repair_limit=0)
    assert res.details["subtables_failing"] == 0


def test_repair_fixes_a_pattern_from_another_tool() -> None:
    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    pattern = apply_rules(t, MarkedCells(cells=cells, upper=3))  # the trap: (w, b) recomputable
    assert not audit(pattern).ok
    res = repair_suppression(pattern, cost="unity")
    assert audit(res.table).ok
    assert res.details["repaired"] >= 1
    assert np.all(res.table.suppressed >= pattern.suppressed)
