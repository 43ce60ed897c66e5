"""The optimal method: valid cuts, the cut pool, the time limit, the proven-optimal flag."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_demo
from sdckit.errors import SdcWarning
from sdckit.tables import (
    Hierarchy,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.examples import with_margins
from sdckit.tables.suppression import _solver as opt
from sdckit.tables.suppression._common import capacities, cell_costs, requirements


def _problem(table: Table, cost: str = "value") -> opt.Problem:
    w = cell_costs(table, cost)
    prim, up, low, sl = requirements(table)
    ub, lb = capacities(table)
    return opt.Problem(
        matrix=table.constraint_matrix.tocsr(),
        ub=ub,
        lb=lb,
        cost=w,
        fixed=table.suppressed.copy(),
        cand=(table.status == 0) & ~table.suppressed,
        cells=prim,
        up=up,
        low=low,
        sl=sl,
        size=np.abs(table.values),
        zero=table.values == 0,
    )


@st.composite
def tiny_tables(draw: st.DrawFn) -> Table:
    inner = np.array(draw(st.lists(st.integers(1, 15), min_size=6, max_size=6))).reshape(2, 3)
    t = Table.from_array(with_margins(inner), {"r": ["a", "b"], "c": ["x", "y", "z"]})
    interior = np.flatnonzero(~t.is_total).tolist()
    prim = draw(st.lists(st.sampled_from(interior), min_size=1, max_size=2, unique=True))
    up = draw(st.integers(1, 5))
    low = draw(st.integers(0, 5))
    return apply_rules(t, MarkedCells(cells=prim, upper=up, lower=low))


@settings(max_examples=15, deadline=None)
@given(tiny_tables(), st.integers(0, 2**31 - 1))
def test_every_cut_holds_for_every_protected_pattern(table: Table, seed: int) -> None:
    p = _problem(table)
    sep = opt._Separator(p)
    cand = np.flatnonzero(p.cand)
    protected = []
    for k in range(len(cand) + 1):
        for combo in itertools.combinations(cand.tolist(), k):
            t = table.suppress(list(combo)) if combo else table
            if audit(t, intervals="check", insider=False).ok:
                y = np.zeros(len(cand))
                y[np.isin(cand, combo)] = 1.0
                protected.append(y)
    rng = np.random.default_rng(seed)
    cuts = opt._initial_cuts(p, sep)
    for _ in range(4):  # cuts at fractional and at integer points
        y = p.fixed.astype(float)
        y[cand] = rng.random(len(cand))
        cuts += sep.run(y, fractional=True)[0]
        y[cand] = np.round(y[cand])
        cuts += sep.run(y, fractional=False)[0]
    for cols, vals in cuts:
        for y in protected:
            assert vals @ y[cols] >= 1.0 - 1e-7


def _issue_case() -> Table:
    t = Table.from_array(
        with_margins(np.array([[44, 21, 23], [33, 11, 22], [11, 10, 1]])),
        {"r": ["a", "b", "c"], "c": ["x", "y", "z"]},
    )
    return apply_rules(t, MarkedCells(cells=[t.cell(r="b", c="y")], upper=5, lower=5))


def test_a_start_pattern_does_not_hide_the_optimum() -> None:
    # HiGHS 1.16 reported the start vector with the optimum's objective after a presolved MIP
    t = _issue_case()
    p = _problem(t)
    start = t.suppressed.copy()
    for r, c in [("b", "x"), ("b", "z"), ("c", "x"), ("c", "y"), ("c", "z")]:
        start[t.cell(r=r, c=c)] = True
    assert audit(t.suppress(start & ~t.suppressed), insider=False).ok
    out = opt.solve_problem(p, incumbent=start)
    assert out.optimal and out.cost == pytest.approx(54.003)
    assert out.pattern.sum() == 4


def test_the_optimum_carries_its_proof() -> None:
    res = suppress_optimal(_issue_case())
    assert res.optimal and res.details["gap"] == 0.0
    assert res.details["lower_bound"] == pytest.approx(res.cost)
    assert res.details["stopped"] is None


@pytest.fixture(scope="module")
def survey_4d() -> Table:
    df = load_demo().head(400)
    t = Table.from_microdata(
        df, ["region", "sex", "urban_rural", "marital_status"], "income", weight="weight"
    )
    return apply_rules(t, [MinFrequency(threshold=3), PPercent(p=10)])


def test_the_time_limit_gives_a_protected_pattern_and_its_gap(survey_4d: Table) -> None:
    # before: no overall limit, and nothing came back when a master MILP was stopped
    with pytest.warns(SdcWarning, match="time limit"):
        res = suppress_optimal(survey_4d, time_limit=0.3)
    assert res.protected and audit(res.table, insider=False).ok
    assert not res.optimal and res.details["stopped"] == "time_limit"
    assert 0.0 < res.details["gap"] <= 1.0
    assert res.seconds < 30


REGION = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2", "n3"], "S": ["s1", "s2"]})
SECTOR = Hierarchy.from_dict({"T": ["A", "B"], "A": ["a1", "a2"], "B": ["b1", "b2", "b3"]})


def _hierarchical(seed: int, n: int = 160) -> Table:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame(
        {
            "region": rng.choice(["n1", "n2", "n3", "s1", "s2"], n),
            "sector": rng.choice(["a1", "a2", "b1", "b2", "b3"], n),
            "v": np.round(rng.lognormal(3, 1.2, n)) + 1,
        }
    )
    t = Table.from_microdata(df, {"region": REGION, "sector": SECTOR}, "v")
    return apply_rules(t, [MinFrequency(threshold=3), PPercent(p=15)])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_hierarchical_table_starts_from_the_modular_pattern(seed: int) -> None:
    t = _hierarchical(seed)
    mod = suppress_modular(t)
    best = suppress_optimal(t)
    assert best.optimal and audit(best.table, insider=False).ok
    assert best.cost <= mod.cost + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        quick = suppress_optimal(t, time_limit=1e-3)
    # never worse than the modular pattern it started from, always protected
    assert quick.protected and audit(quick.table, insider=False).ok
    assert quick.cost <= mod.cost + 1e-9
    cold = suppress_optimal(t, warm_start=False)
    assert cold.cost == pytest.approx(best.cost)


def test_slack_cuts_leave_the_master_and_stay_in_the_pool() -> None:
    master = opt._Master(np.ones(3), [])
    cuts = [
        (np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0])),
        (np.array([2], dtype=np.int32), np.array([1.0])),
    ]
    master.add(cuts)
    master.k = 0  # let it prune a model of any size
    y = np.array([1.0, 1.0, 1.0])  # the first cut is slack (activity 2)
    for _ in range(10):
        master.prune(y)
    assert len(master.pool) == 2 and master.in_model == [1]
    assert master.h.getNumRow() == 1
    back, ids = master.pool_violated(np.array([0.0, 0.0, 1.0]))
    assert ids == [0] and np.array_equal(back[0][0], cuts[0][0])


def test_the_attacker_skips_lps_that_earlier_solutions_decide() -> None:
    t = _hierarchical(2)
    p = _problem(t)
    sep = opt._Separator(p)
    widest = (p.fixed | p.cand).astype(float)
    _, failing = sep.run(widest, fractional=False)
    assert not failing.any()
    # two LPs per primary at most; the feasible points of earlier LPs decide many others
    assert sep.lp_solves < 2 * len(p.cells)
