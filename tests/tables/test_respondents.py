"""Respondents and holdings: records summed per enterprise, enterprises per enterprise group.

The file RECORDS has employee (or local-unit) records of six enterprises in two regions; the
enterprises e1 and e2 belong to holding h1, e5 and e6 to holding h2, the others are
independent (no holding id).  Contributions by hand (region: enterprise = sum of its records):

* N: e1 = 30 + 20 = 50, e2 = 30, e3 = 10 + 10 = 20; total 100.  Holdings: h1 = 80, e3 = 20.
* S: e1 = 15, e4 = 40, e5 = 6 + 4 = 10, e6 = 5; total 70.  Holdings: h1 = 15, e4 = 40,
  h2 = 15.
* Total: e1 = 65, e4 = 40, e2 = 30, e3 = 20, e5 = 10, e6 = 5; 170.  Holdings: h1 = 95,
  e4 = 40, e3 = 20, h2 = 15.

So N has 5 records, 3 enterprises and 2 holdings (the cell of the brief: two enterprises of one
holding in a cell of three); S has 5 records, 4 enterprises and 3 holdings.  tau-ARGUS counts a
holding as one contributor in its holding-level rules and adds the contributions of its
enterprises (its holding-level FREQ, NK and P rules, 2nd FREQ and 3rd/4th NK and P rules of a
<SAFETYRULE>); its individual-level rules count the enterprises.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import DataError, ParameterError
from sdckit.tables import (
    Dominance,
    GaussSuppression,
    MinFrequency,
    PPercent,
    Table,
    evaluate_rules,
)
from sdckit.tables._contributors import single_unit
from sdckit.tables.suppression.elimination import respondent_groups as _groups

RECORDS = pl.DataFrame(
    {
        "region": ["N", "N", "N", "N", "N", "S", "S", "S", "S", "S"],
        "ent": ["e1", "e1", "e2", "e3", "e3", "e1", "e4", "e5", "e5", "e6"],
        "hold": ["h1", "h1", "h1", None, None, "h1", None, "h2", "h2", "h2"],
        "x": [30.0, 20.0, 30.0, 10.0, 10.0, 15.0, 40.0, 6.0, 4.0, 5.0],
    }
)


def _cells(t: Table) -> tuple[int, int, int]:
    return t.cell(region="Total"), t.cell(region="N"), t.cell(region="S")


def test_records_are_summed_per_respondent_before_counting_and_ranking() -> None:
    records = Table.from_microdata(RECORDS, ["region"], "x")
    t = Table.from_microdata(RECORDS, ["region"], "x", respondent="ent")
    tot, n, s = _cells(t)
    assert t.values[[tot, n, s]].tolist() == [170, 100, 70]
    assert records.n_contributors[[tot, n, s]].tolist() == [10, 5, 5]
    assert t.n_contributors[[tot, n, s]].tolist() == [6, 3, 4]
    # e1 has local units in N and S: it contributes its sum (65) to the total
    assert t.top[tot].tolist() == [65, 40, 30]
    assert t.top[n].tolist() == [50, 30, 20]
    assert t.top[s].tolist() == [40, 15, 10]
    assert records.top[n].tolist() == [30, 30, 20]
    assert t.respondent_contributors is None  # no holding: one level
    c = t.contributions
    assert c is not None and c.level == "respondent" and c.n_units == 6
    assert c.respondent_of_holding is None
    # every (unit, cell) once, summing to the cell values
    assert len(np.unique(c.unit * t.n_cells + c.cell)) == len(c.unit)
    np.testing.assert_allclose(np.bincount(c.cell, weights=c.value, minlength=3), t.values)


def test_holdings_sum_their_respondents_and_keep_the_respondent_level() -> None:
    t = Table.from_microdata(RECORDS, ["region"], "x", respondent="ent", holding="hold")
    tot, n, s = _cells(t)
    assert t.n_contributors[[tot, n, s]].tolist() == [4, 2, 3]
    assert t.top[tot].tolist() == [95, 40, 20]
    assert t.top[n].tolist() == [80, 20, 0]
    assert t.top[s].tolist() == [40, 15, 15]
    assert t.respondent_contributors is not None and t.respondent_top is not None
    assert t.respondent_contributors[[tot, n, s]].tolist() == [6, 3, 4]
    assert t.respondent_top[n].tolist() == [50, 30, 20]
    c = t.contributions
    assert c is not None and c.level == "holding" and c.n_units == 4
    # e1, e2 share a holding, e5, e6 another; e3 and e4 are holdings of their own
    of = c.respondent_of_holding
    assert of is not None and len(of) == 6
    ents = sorted(RECORDS["ent"].unique().to_list())
    h = dict(zip(ents, of.tolist(), strict=True))
    assert h["e1"] == h["e2"] and h["e5"] == h["e6"]
    assert len({h["e1"], h["e3"], h["e4"], h["e5"]}) == 4


def test_holding_without_respondent_groups_records() -> None:
    """tau-ARGUS's own setting: each record is an enterprise, the holding groups records."""
    pre = RECORDS.group_by(["region", "ent", "hold"], maintain_order=True).agg(pl.col("x").sum())
    t = Table.from_microdata(pre, ["region"], "x", holding="hold")
    both = Table.from_microdata(RECORDS, ["region"], "x", respondent="ent", holding="hold")
    np.testing.assert_array_equal(t.n_contributors, both.n_contributors)
    np.testing.assert_array_equal(t.top, both.top)
    # the individual level is the records' (here: one per enterprise and region)
    assert t.respondent_contributors is not None
    assert t.respondent_contributors.tolist() == [7, 3, 4]
    assert t.contributions is not None and t.contributions.respondent_of_holding is None


def test_rules_flag_at_the_level_they_ask_for() -> None:
    """The hand-computed flags of the module doc, rule by rule and level by level."""
    t = Table.from_microdata(RECORDS, ["region"], "x", respondent="ent", holding="hold")
    tot, n, s = _cells(t)
    rules = [
        MinFrequency(threshold=3, level="respondent"),  # N 3, S 4 enterprises: safe
        MinFrequency(threshold=3),  # the table's level (holdings): N has 2 holdings
        Dominance(n=1, k=75, level="respondent"),  # N: 50 of 100, safe
        Dominance(n=1, k=75, level="holding"),  # N: h1 = 80 of 100 > 75
        PPercent(p=10, level="respondent"),  # N: 100 - 50 - 30 = 20 >= 5, safe
        PPercent(p=10, level="holding"),  # N: 100 - 80 - 20 = 0 < 8; S: 70-40-15 = 15 >= 4
    ]
    out = evaluate_rules(t, rules)
    flags = [f[[tot, n, s]].tolist() for f in out.flags.values()]
    assert flags == [
        [False, False, False],
        [False, True, False],
        [False, False, False],
        [False, True, False],
        [False, False, False],
        [False, True, False],
    ]
    assert PPercent(p=10, level="holding").evaluate(t).upper[n] == pytest.approx(8.0)
    assert Dominance(n=1, k=75, level="holding").evaluate(t).upper[n] == pytest.approx(
        80 / 0.75 - 100
    )
    # records as contributors: N has 5 records, the rules see a safe cell
    records = Table.from_microdata(RECORDS, ["region"], "x")
    assert not MinFrequency(threshold=3).evaluate(records).unsafe[n]
    assert not Dominance(n=1, k=75).evaluate(records).unsafe[n]


def test_a_rule_at_the_holding_level_needs_a_holding_column() -> None:
    t = Table.from_microdata(RECORDS, ["region"], "x", respondent="ent")
    with pytest.raises(DataError, match=r"holding level.*holding=\.\.\."):
        Dominance(n=1, k=75, level="holding").evaluate(t)
    with pytest.raises(ParameterError, match="'level' parameter of MinFrequency"):
        MinFrequency(level="enterprise").evaluate(t)
    # "respondent" on a table without holdings reads its own contributors
    same = MinFrequency(threshold=4, level="respondent").evaluate(t).unsafe
    np.testing.assert_array_equal(same, MinFrequency(threshold=4).evaluate(t).unsafe)


def test_weighted_respondent_contributes_the_sum_of_its_expanded_records() -> None:
    df = pl.DataFrame(
        {
            "r": ["a", "a", "a", "b"],
            "ent": [1, 1, 2, 3],
            "x": [10.0, 5.0, 8.0, 1.0],
            "w": [2.0, 3.0, 1.0, 4.0],
        }
    )
    t = Table.from_microdata(df, ["r"], "x", weight="w", respondent="ent")
    a = t.cell(r="a")
    # enterprise 1: 2 * 10 + 3 * 5 = 35; enterprise 2: 8; counts unweighted (enterprises)
    assert t.values[a] == 43 and t.top[a].tolist() == [35, 8, 0]
    assert t.n_contributors.tolist() == [3, 2, 1]


def test_a_frequency_table_counts_respondents() -> None:
    t = Table.from_microdata(RECORDS, ["region"], respondent="ent", holding="hold")
    tot, n, s = _cells(t)
    assert t.values[[tot, n, s]].tolist() == [10, 5, 5]  # records (employees)
    assert t.n_contributors[[tot, n, s]].tolist() == [4, 2, 3]  # holdings
    assert t.top[n].tolist() == [3, 2, 0]  # h1 has 3 records in N, e3 two


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        ({"ent": ["e1", None] + ["e2"] * 8}, DataError, r"respondent column 'ent' has missing"),
        (
            {"hold": ["h1", "h9"] + ["h1"] * 8},
            DataError,
            r"holding column 'hold' is not constant within the respondents of .*'ent'",
        ),
    ],
)
def test_bad_ids_are_errors_naming_the_columns(
    change: dict[str, list], error: type, pattern: str
) -> None:
    df = RECORDS.with_columns(**{k: pl.Series(v) for k, v in change.items()})
    with pytest.raises(error, match=pattern) as info:
        Table.from_microdata(df, ["region"], "x", respondent="ent", holding="hold")
    assert "e1" not in str(info.value) and "h9" not in str(info.value)


def test_bad_columns_are_parameter_errors() -> None:
    with pytest.raises(Exception, match="'firm'"):
        Table.from_microdata(RECORDS, ["region"], "x", respondent="firm")
    with pytest.raises(ParameterError, match="respondent column 'region' is also a dimension"):
        Table.from_microdata(RECORDS, ["region"], "x", respondent="region")
    with pytest.raises(ParameterError, match="the same"):
        Table.from_microdata(RECORDS, ["region"], "x", respondent="ent", holding="ent")


def test_the_callers_frame_is_not_changed() -> None:
    before = RECORDS.clone()
    Table.from_microdata(RECORDS, ["region"], "x", respondent="ent", holding="hold")
    assert RECORDS.equals(before)


def test_gauss_groups_the_cells_of_one_respondent() -> None:
    """The single-contributor cells of one unit are one attacker for the Gauss method."""
    df = pl.DataFrame(
        {
            "r": ["a", "a", "b", "c", "c", "c"],
            "ent": [1, 1, 1, 2, 3, 4],
            "x": [5.0, 5.0, 7.0, 1.0, 2.0, 3.0],
        }
    )
    t = Table.from_microdata(df, ["r"], "x", respondent="ent")
    units = single_unit(t.contributions, t.n_cells)
    assert units is not None
    a, b, c = t.cell(r="a"), t.cell(r="b"), t.cell(r="c")
    assert units[a] == units[b] >= 0 and units[c] == -1
    assert t.n_contributors[[a, b, c]].tolist() == [1, 1, 3]
    marked = evaluate_rules(t, [MinFrequency(threshold=3)]).table
    inner = ~t.is_total
    # the Gauss method's respondent groups: a and b are one attacker (enterprise 1); without
    # contributions each single-contributor cell would be its own
    groups = _groups(marked, inner, True, None)
    assert groups[a] == groups[b] >= 0 and groups[c] == -1
    alone = _groups(replace(marked, contributions=None), inner, True, None)
    assert alone[a] != alone[b]
    # the default is the explicit ids: the same pattern
    by_default = GaussSuppression().apply(marked).table
    explicit = GaussSuppression(contributors=units).apply(marked).table
    np.testing.assert_array_equal(by_default.status, explicit.status)


# ------------------------------------------------------------------ invariants
_records = st.lists(
    st.tuples(
        st.integers(0, 5),  # respondent
        st.sampled_from(["a", "b", "c"]),  # code
        st.integers(0, 50),  # value
    ),
    min_size=1,
    max_size=25,
)


def _frame(rows: list[tuple[int, str, int]]) -> pl.DataFrame:
    # two fixed respondents of their own: a table needs two records, pre-summed too
    rows = [*rows, (6, "a", 3), (7, "b", 4)]
    return pl.DataFrame(rows, schema=["ent", "r", "x"], orient="row").with_columns(
        pl.col("x").cast(pl.Float64)
    )


@settings(max_examples=30, deadline=None)
@given(_records)
def test_table_equals_the_table_of_records_presummed_per_respondent_and_cell(
    rows: list[tuple[int, str, int]],
) -> None:
    df = _frame(rows)
    pre = df.group_by(["ent", "r"]).agg(pl.col("x").sum())
    dims = {"r": ["a", "b", "c"]}
    t = Table.from_microdata(df, dims, "x", respondent="ent")
    u = Table.from_microdata(pre, dims, "x", respondent="ent")
    np.testing.assert_allclose(t.values, u.values)
    np.testing.assert_array_equal(t.n_contributors, u.n_contributors)
    np.testing.assert_allclose(t.top, u.top)
    # a respondent in one category only: pre-summed per respondent, records are respondents
    one = df.with_columns(r=pl.col("ent").map_elements(lambda e: "abc"[e % 3], pl.String))
    per = one.group_by(["ent", "r"]).agg(pl.col("x").sum())
    v = Table.from_microdata(one, dims, "x", respondent="ent")
    w = Table.from_microdata(per, dims, "x")
    np.testing.assert_array_equal(v.n_contributors, w.n_contributors)
    np.testing.assert_allclose(v.top, w.top)
    np.testing.assert_allclose(v.values, w.values)


@settings(max_examples=30, deadline=None)
@given(_records, st.lists(st.integers(0, 2), min_size=6, max_size=6))
def test_holding_level_equals_respondents_renamed_to_their_holding(
    rows: list[tuple[int, str, int]], group: list[int]
) -> None:
    df = _frame(rows)
    group = [*group, 3, 4]
    df = df.with_columns(hold=pl.col("ent").map_elements(lambda e: group[e], pl.Int64))
    dims = {"r": ["a", "b", "c"]}
    t = Table.from_microdata(df, dims, "x", respondent="ent", holding="hold")
    u = Table.from_microdata(df, dims, "x", respondent="hold")
    np.testing.assert_array_equal(t.n_contributors, u.n_contributors)
    np.testing.assert_allclose(t.top, u.top)
    r = Table.from_microdata(df, dims, "x", respondent="ent")
    np.testing.assert_array_equal(t.respondent_contributors, r.n_contributors)
    np.testing.assert_allclose(t.respondent_top, r.top)
    assert np.all(t.n_contributors <= r.n_contributors)


def test_linked_tables_from_microdata_count_the_same_units() -> None:
    """Two tables of one register built with respondents and holdings: each equals the
    table built alone, the iterative scheme protects them (its joint audit passes) and the
    joint elimination, whose singleton rules read records, refuses them."""
    from sdckit.datasets import BUSINESS_HIERARCHIES, generate_business_register
    from sdckit.tables import (
        LinkedTables,
        MinFrequency,
        ModularSuppression,
        PPercent,
        Table,
        apply_rules,
        audit,
    )

    register = generate_business_register(150, seed=4)
    act = BUSINESS_HIERARCHIES["activity"]
    ids = {"respondent": "enterprise_id", "holding": "holding_id"}
    linked = LinkedTables.from_microdata(
        register, [["activity", "size_class"], ["activity", "area"]], "turnover",
        hierarchies={"activity": act}, **ids,
    )  # fmt: skip
    alone = Table.from_microdata(register, {"activity": act, "size_class": None}, "turnover", **ids)
    first = linked.tables[0]
    assert first.contributions is not None and first.contributions.level == "holding"
    assert np.array_equal(first.n_contributors, alone.n_contributors)
    assert np.array_equal(first.top, alone.top)
    rules = [MinFrequency(threshold=3), PPercent(p=15)]
    marked = linked.apply_rules(rules)
    assert marked.tables[0].primary.sum() == apply_rules(alone, rules).primary.sum() > 0
    done = marked.protect(ModularSuppression())
    assert done.protected and done.linked.consistent
    for table in done.linked.tables:
        assert audit(table, intervals="check", insider=False).ok
    with pytest.raises(ParameterError, match="joint_elimination does not take tables"):
        marked.protect(ModularSuppression(), joint_elimination=True)
