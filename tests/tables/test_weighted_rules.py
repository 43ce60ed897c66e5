"""Sensitivity rules on weighted tables: expanded contributions w_i x_i, respondent counts.

Semantics (sdckit.tables.rules): the cell total is the weighted total, the largest
contributions are the largest expanded contributions w_i x_i, and the minimum-frequency rule
counts respondents.  Before, the rules compared the unweighted largest contributions with the
weighted total and flagged (almost) nothing.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_demo
from sdckit.tables import Dominance, MinFrequency, PPercent, PQRule, Table, apply_rules

# cell A: one dominant respondent (1000) and two small ones (10, 10);
# cell B: four similar respondents (100, 90, 80, 70)
RECORDS = pl.DataFrame(
    {
        "cell": ["A", "A", "A", "B", "B", "B", "B"],
        "x": [1000.0, 10.0, 10.0, 100.0, 90.0, 80.0, 70.0],
        "w": [20.0, 20.0, 20.0, 10.0, 10.0, 10.0, 10.0],
    }
)


def _tables() -> tuple[Table, Table]:
    plain = Table.from_microdata(RECORDS, ["cell"], "x")
    weighted = Table.from_microdata(RECORDS, ["cell"], "x", weight="w")
    return plain, weighted


def test_weighted_table_holds_expanded_contributions_and_respondent_counts() -> None:
    plain, weighted = _tables()
    a, b = plain.cell(cell="A"), plain.cell(cell="B")
    assert weighted.weighted and not plain.weighted
    assert weighted.values[a] == 20 * 1020 and weighted.values[b] == 10 * 340
    assert weighted.top[a].tolist() == [20000, 200, 200]
    assert weighted.top[b].tolist() == [1000, 900, 800]
    assert weighted.n_contributors.tolist() == plain.n_contributors.tolist() == [7, 3, 4]
    assert weighted.weights.tolist() == [100, 60, 40]


def test_one_dominant_respondent_is_primary_with_and_without_weights() -> None:
    plain, weighted = _tables()
    a, b = plain.cell(cell="A"), plain.cell(cell="B")
    # (1, 85)-dominance, by hand.  Unweighted: 1000 > 0.85 * 1020 = 867, level 1000/0.85 - 1020.
    # Weighted: 20000 > 0.85 * 20400 = 17340, level 20000/0.85 - 20400.  (Before: 1000 was
    # compared with 17340 and the cell passed.)  B: 100 <= 0.85 * 340, 1000 <= 0.85 * 3400.
    dom_p = Dominance(n=1, k=85).evaluate(plain)
    dom_w = Dominance(n=1, k=85).evaluate(weighted)
    assert dom_p.unsafe[[a, b]].tolist() == [True, False]
    assert dom_w.unsafe[[a, b]].tolist() == [True, False]
    assert dom_p.upper[a] == pytest.approx(1000 / 0.85 - 1020)
    assert dom_w.upper[a] == pytest.approx(20000 / 0.85 - 20400)
    # p% rule (p = 10): unweighted remainder 1020 - 1000 - 10 = 10 < 100, level 90;
    # weighted remainder 20400 - 20000 - 200 = 200 < 2000, level 1800.
    pp_p = PPercent(p=10).evaluate(plain)
    pp_w = PPercent(p=10).evaluate(weighted)
    assert pp_p.unsafe[[a, b]].tolist() == [True, False]
    assert pp_w.unsafe[[a, b]].tolist() == [True, False]
    assert pp_p.upper[a] == pytest.approx(90) and pp_w.upper[a] == pytest.approx(1800)
    # pq rule with p/q = 0.2: weighted remainder 200 < 4000, level 3800
    assert PQRule(p=20, q=100).evaluate(weighted).upper[a] == pytest.approx(3800)


def test_minimum_frequency_counts_respondents_not_weights() -> None:
    _, weighted = _tables()
    out = MinFrequency(threshold=4, minimum_level=0).evaluate(weighted)
    # A has 3 respondents (weighted count 60), B has 4 (weighted 40)
    assert out.unsafe.tolist() == [False, True, False]
    assert out.upper[1] == pytest.approx(0.1 * 20 * 1020)


def test_single_weighted_respondent_is_dominant() -> None:
    # one respondent of weight 50: tau-ARGUS's 50 virtual contributors would pass the cell;
    # its expanded contribution is the whole cell, as without weights
    df = pl.DataFrame({"c": ["A", "B", "B"], "x": [500.0, 40.0, 45.0], "w": [50.0, 1.0, 1.0]})
    t = Table.from_microdata(df, ["c"], "x", weight="w")
    unsafe = Dominance(n=1, k=85).evaluate(t).unsafe
    assert unsafe[t.cell(c="A")] and not unsafe[t.cell(c="B")]


@st.composite
def weighted_records(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(3, 25))
    cells = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    x = draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n))
    return pl.DataFrame({"cell": cells, "x": [float(v) for v in x]})


@settings(max_examples=40, deadline=None)
@given(weighted_records(), st.sampled_from([1.0, 2.0, 37.5, 1000.0]))
def test_equal_weights_flag_the_cells_of_the_unweighted_table(df: pl.DataFrame, c: float) -> None:
    plain = Table.from_microdata(df, ["cell"], "x")
    weighted = Table.from_microdata(df.with_columns(w=pl.lit(c)), ["cell"], "x", weight="w")
    for rule in (Dominance(n=1, k=85), Dominance(n=2, k=70), PPercent(p=10), PQRule(p=20, q=80)):
        a, b = rule.evaluate(plain), rule.evaluate(weighted)
        assert np.array_equal(a.unsafe, b.unsafe), rule
        # the levels are in the units of the weighted table
        assert np.allclose(b.upper, c * a.upper, rtol=1e-9, atol=1e-6)


def test_weighted_survey_table_keeps_its_primaries() -> None:
    # income by region and economic status, the demo survey: 2 dominated cells unweighted,
    # and before the fix 0 weighted
    df = load_demo().head(2000)
    rules = [Dominance(n=1, k=85), PPercent(p=10)]
    plain = apply_rules(Table.from_microdata(df, ["region", "economic_activity"], "income"), rules)
    weighted = apply_rules(
        Table.from_microdata(df, ["region", "economic_activity"], "income", weight="weight"), rules
    )
    assert plain.primary.sum() == 2
    assert weighted.primary.sum() >= 1
    # a cell of one respondent with a positive value is dominated whatever its weight
    single = (weighted.n_contributors == 1) & (weighted.values > 0)
    assert np.all(weighted.primary[single])
