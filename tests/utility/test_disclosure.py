"""Disclosure measures of synthetic data (synthpop 1.9's disclosure / multi.disclosure).

The tiny example (one key ``k``, target ``t``):

original (9): (a,x) (a,x) (b,x) (b,y) (c,y) (d,x) (d,x) (d,x) (f,x)
synthetic (6): (a,x) (b,y) (b,y) (c,x) (e,x) (d,x)

so d_q = a2 b2 c1 d3 f1, s_q = a1 b2 c1 d1 e1, and every figure below is counted by hand.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.utility import SyntheticDisclosureResult, synthetic_disclosure

ORIG = pl.DataFrame(
    {"k": list("aabbcdddf"), "t": list("xxxyyxxxx")},
)
SYN = pl.DataFrame({"k": list("abbced"), "t": list("xyyxxx")})


def _measures(res: SyntheticDisclosureResult, row: int = 0) -> dict[str, float]:
    return res.measures.row(row, named=True)


def test_every_measure_by_hand() -> None:
    m = _measures(synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t"))
    expected = {
        "UiO": 2 / 9,  # c, f
        "UiS": 4 / 6,  # a, c, d, e
        "UiOiS": 1 / 9,  # c (f is not in the synthetic file)
        "repU": 1 / 9,  # c
        "Dorig": 7 / 9,  # a2 c1 d3 f1
        "Dsyn": 6 / 6,
        "iS": 8 / 9,  # all but f
        "DiS": 8 / 9,
        "DiSCO": 6 / 9,  # (a,x)2 (b,y)1 (d,x)3
        "DiSDiO": 5 / 9,  # (a,x)2 (d,x)3
        "baseCAPd": (7 / 9) ** 2 + (2 / 9) ** 2,
        "CAPd": (4 / 2 + 1 / 2 + 1 / 2 + 1 + 9 / 3 + 1) / 9,
        "CAPs": (1 + 4 / 2 + 1 + 1 + 1) / 6,
        "DCAP": (2 + 1 + 3) / 9,
        "TCAP": 6 / 8,  # DiSCO over the original records whose keys are in the synthetic file
        # the vignette's: over the 5 synthetic records whose keys are in the original, and DiS
        "DCAPalt": 6 / 5,
        "TCAPalt": 6 / 5,
        "TCAP_DiS": 6 / 8,
    }
    for name, value in expected.items():
        assert m[name] == pytest.approx(100 * value), name
    assert m["max_denom"] == 3
    assert m["mean_denom"] == pytest.approx(2.0)


def test_not_target_level_excludes_it_from_every_table() -> None:
    res = synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", not_target_levels={"t": "x"})
    m = _measures(res)
    # left: original (b,y) (c,y); synthetic (b,y)(b,y); tables derived before the exclusion
    expected = {
        "UiO": 2 / 9, "UiS": 0, "UiOiS": 2 / 9, "repU": 0, "Dorig": 1 / 9, "Dsyn": 2 / 6,
        "iS": 2 / 9, "DiS": 2 / 9, "DiSCO": 1 / 9, "DiSDiO": 0,
        "baseCAPd": (7 / 9) ** 2 + (2 / 9) ** 2,  # from the target before the exclusions
        "CAPd": 2 / 9, "CAPs": 2 / 6, "DCAP": 1 / 9, "TCAP": 1.0,
        "DCAPalt": 1 / 2, "TCAPalt": 1 / 2, "TCAP_DiS": 1 / 2,  # over (b,y)(b,y), and DiS 2
    }  # fmt: skip
    for name, value in expected.items():
        assert m[name] == pytest.approx(100 * value), name
    ex = res.exclusions.filter(pl.col("table") == "original").row(0, named=True)
    assert (ex["excluded_target"], ex["remaining"]) == (7, 2)
    ex = res.exclusions.filter(pl.col("table") == "DiSCO").row(0, named=True)
    assert (ex["excluded_target"], ex["remaining"]) == (5, 1)


def test_over_denom_lim() -> None:
    res = synthetic_disclosure(
        ORIG, SYN, keys=["k"], targets="t", denom_lim=2, exclude_over_denom_lim=True
    )
    m = _measures(res)
    assert m["UiO"] == pytest.approx(100 * 2 / 9)  # d (3 records) is dropped, not unique
    assert m["Dorig"] == pytest.approx(100 * 4 / 9)  # (d,x)3 dropped
    assert m["DiSCO"] == pytest.approx(100 * 3 / 9)
    ex = res.exclusions.filter(pl.col("table") == "original").row(0, named=True)
    assert (ex["over_denom_lim"], ex["remaining"]) == (3, 6)


def test_checks_1way_and_2way() -> None:
    res = synthetic_disclosure(
        ORIG, SYN, keys=["k"], targets="t", thresh_1way=(1, 50), thresh_2way=(2, 60)
    )
    one = res.checks_1way.row(0, named=True)
    assert one["level"] == "x"
    assert (one["all"], one["total_disclosive"], one["n_level_disclosive"]) == (9, 6, 5)
    assert one["pct_level_all"] == pytest.approx(700 / 9)
    assert one["pct_level_disclosive"] == pytest.approx(500 / 6)
    two = res.checks_2way.row(0, named=True)  # the DiSCO cell (d,x) of 3 records
    assert (two["key"], two["key_level"], two["target_level"]) == ("k", "d", "x")
    assert (two["n_pairs"], two["key_target_total"], two["key_total"]) == (3, 3, 3)
    assert res.averages().row(0, named=True)["pairs_2way"] == 1
    default = synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t")
    assert default.checks_1way.height == 0 and default.checks_2way.height == 0


def test_exclude_key_target_pair() -> None:
    res = synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", exclude={"t": [("k", "d", "x")]})
    m = _measures(res)
    assert m["DiSCO"] == pytest.approx(100 * 3 / 9)
    assert m["Dorig"] == pytest.approx(100 * 4 / 9)
    ex = res.exclusions.filter(pl.col("table") == "original").row(0, named=True)
    assert ex["set_to_exclude"] == 3


def test_missing_values_are_a_level_and_can_be_excluded() -> None:
    o = pl.DataFrame({"k": [None, None, "a", "a"], "t": ["x", "y", "x", "x"]})
    s = pl.DataFrame({"k": [None, "a"], "t": ["x", "x"]})
    m = _measures(synthetic_disclosure(o, s, keys="k", targets="t"))
    assert (m["UiO"], m["Dorig"], m["DiSCO"]) == (0.0, 50.0, 75.0)
    res = synthetic_disclosure(o, s, keys="k", targets="t", use_keys_na=False)
    assert _measures(res)["DiSCO"] == 50.0
    ex = res.exclusions.filter(pl.col("table") == "original").row(0, named=True)
    assert ex["missing_keys"] == 2
    # a missing target: excluded only when asked (and when the original has one)
    o2 = o.with_columns(pl.Series("t", ["x", None, "x", "x"]))
    assert _measures(synthetic_disclosure(o2, s, keys="k", targets="t"))["DiSCO"] == 75.0
    res = synthetic_disclosure(o2, s, keys="k", targets="t", use_targets_na=False)
    assert _measures(res)["DiSCO"] == 75.0  # the missing target was not disclosed anyway
    assert _measures(res)["Dorig"] == 50.0  # (missing key, x) is no longer alone: mixed before
    ex = res.exclusions.filter(pl.col("table") == "original").row(0, named=True)
    assert ex["missing_target"] == 1


def test_identical_synthetic_file() -> None:
    rng = np.random.default_rng(3)
    o = pl.DataFrame({"a": rng.integers(0, 4, 300), "b": rng.integers(0, 6, 300),
                      "t": rng.integers(0, 3, 300)})  # fmt: skip
    m = _measures(synthetic_disclosure(o, o, keys=["a", "b"], targets="t"))
    assert m["repU"] == m["UiO"] == m["UiOiS"] == m["UiS"]
    assert m["DiSCO"] == m["Dorig"] == m["DiSDiO"] == m["Dsyn"] == m["TCAP"]
    assert m["DCAP"] == pytest.approx(m["CAPd"]) and m["CAPs"] == pytest.approx(m["CAPd"])
    assert m["iS"] == 100.0


def test_no_common_key() -> None:
    o = pl.DataFrame({"k": [1, 2, 2, 3], "t": [1, 1, 1, 2]})
    s = pl.DataFrame({"k": [7, 8, 8], "t": [1, 1, 2]})
    m = _measures(synthetic_disclosure(o, s, keys="k", targets="t"))
    for name in ("UiOiS", "repU", "iS", "DiS", "DiSCO", "DiSDiO", "DCAP"):
        assert m[name] == 0.0, name
    assert np.isnan(m["TCAP"]) and np.isnan(m["mean_denom"])
    assert m["UiO"] == 50.0 and m["Dorig"] == 100.0


def test_several_copies_and_targets() -> None:
    o = ORIG.with_columns(u=pl.Series(list("pqpqpqpqp")))
    s1 = SYN.with_columns(u=pl.Series(list("pqpqpq")))
    s2 = o.head(5)
    res = synthetic_disclosure(o, [s1, s2], keys=["k"])
    assert res.targets == ("t", "u") and res.copies == 2
    assert res.measures.height == 4
    for target in res.targets:
        one = synthetic_disclosure(o, s1, keys=["k"], targets=target).measures
        two = synthetic_disclosure(o, s2, keys=["k"], targets=target).measures
        both = res.measures.filter(pl.col("target") == target)
        assert both.drop("copy").row(0) == one.drop("copy").row(0)
        assert both.drop("copy").row(1) == two.drop("copy").row(0)
        mean = (one["DiSCO"][0] + two["DiSCO"][0]) / 2
        assert res.mean("DiSCO", target) == pytest.approx(mean)
    table = res.averages()
    assert table["DiSCO"].is_sorted()  # ordered by the synthetic measure, as synthpop
    assert set(table.columns) >= {"target", "UiO", "repU", "Dorig", "DiSCO", "check_1way"}
    assert "repU" in str(res.summary()) and "averages over 2" in str(res.summary()).lower()


def test_numeric_variables_value_by_value_and_grouped() -> None:
    rng = np.random.default_rng(5)
    age = rng.integers(18, 90, 400)
    inc = np.round(rng.gamma(2.0, 1000.0, 400), 0)
    inc[:30] = -8  # a special code
    o = pl.DataFrame({"age": age, "sex": rng.integers(1, 3, 400), "income": inc})
    s = o.sample(fraction=1.0, seed=1).with_columns(pl.col("age") + rng.integers(-1, 2, 400))
    by_value = synthetic_disclosure(o, s, keys=["age", "sex"], targets="income")
    as_text = synthetic_disclosure(
        o.with_columns(pl.col("age").cast(pl.String)),
        s.with_columns(pl.col("age").cast(pl.String)),
        keys=["age", "sex"],
        targets="income",
    )
    assert by_value.measures.equals(as_text.measures)  # numbers are levels by default
    grouped = synthetic_disclosure(
        o, s, keys=["age", "sex"], targets="income", ngroups_targets=5,
        missing_codes={"income": [-8]},
    )  # fmt: skip
    # the same as cutting by hand at the quantiles of both files' values (without -8)
    both = np.r_[inc[inc != -8], s["income"].to_numpy()[s["income"].to_numpy() != -8]]
    br = np.unique(np.quantile(both, np.linspace(0, 1, 6)))

    def cut(x: np.ndarray) -> list[str]:
        j = np.clip(np.searchsorted(br, x, side="right") - 1, 0, len(br) - 2)
        return ["special" if v == -8 else f"g{g}" for v, g in zip(x, j, strict=True)]

    o2 = o.with_columns(pl.Series("income", cut(inc)))
    s2 = s.with_columns(pl.Series("income", cut(s["income"].to_numpy())))
    manual = synthetic_disclosure(o2, s2, keys=["age", "sex"], targets="income")
    assert grouped.measures.drop("target").equals(manual.measures.drop("target"))
    # a coarser target: a key combination single-valued by value stays so by group
    assert by_value.mean("Dorig") <= grouped.mean("Dorig") <= 100


def test_clear_errors() -> None:
    with pytest.raises(ParameterError, match="both a key and a target"):
        synthetic_disclosure(ORIG, SYN, keys=["k"], targets=["k"])
    with pytest.raises(ColumnError, match="'zz'"):
        synthetic_disclosure(ORIG, SYN, keys=["zz"], targets="t")
    with pytest.raises(ColumnError, match="key"):
        synthetic_disclosure(ORIG, SYN, keys=[], targets="t")
    with pytest.raises(ParameterError, match="not numeric"):
        synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", ngroups_targets={"t": 3})
    # one number applies to the numeric variables only, as in synthpop
    plain = synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t")
    grouped = synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", ngroups_targets=3)
    assert plain.measures.equals(grouped.measures)
    with pytest.raises(ParameterError, match="ngroups_keys"):
        synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", ngroups_keys=1)
    with pytest.raises(ParameterError, match="not_target_levels"):
        synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", not_target_levels={"t": "zz"})
    with pytest.raises(ParameterError, match="denom_lim"):
        synthetic_disclosure(ORIG, SYN, keys=["k"], targets="t", denom_lim=0)
    two = pl.DataFrame({"k": [1, 1], "t": [1.0, 1.0]})
    with pytest.raises(ParameterError, match="missing_codes"):
        synthetic_disclosure(
            pl.DataFrame({"k": [1, 2], "t": [1.0, 2.0]}), two,
            keys="k", targets="t", ngroups_targets=2, missing_codes={"t": [-8]},
        )  # fmt: skip
    with pytest.raises(DataError, match="infinite"):
        synthetic_disclosure(
            pl.DataFrame({"k": [1, 2], "t": [1.0, np.inf]}), two,
            keys="k", targets="t", ngroups_targets=2,
        )  # fmt: skip
    with pytest.raises(DataError, match="different types"):
        synthetic_disclosure(
            ORIG.with_columns(pl.lit([1]).alias("k")), SYN, keys="k", targets="t"
        )  # a list column cannot be stacked with text
    with pytest.raises(DataError, match="no records"):  # (Microdata's own check)
        synthetic_disclosure(ORIG.head(0), SYN, keys="k", targets="t")


def test_integer_and_float_copies_compare_by_value() -> None:
    o = pl.DataFrame({"k": [1, 1, 2, 3], "t": [1, 2, 1, 1]})
    s = pl.DataFrame({"k": [1.0, 2.0, 3.0], "t": [1.0, 1.0, 2.0]})
    as_int = s.with_columns(pl.all().cast(pl.Int64))
    a = synthetic_disclosure(o, s, keys="k", targets="t").measures
    assert a.equals(synthetic_disclosure(o, as_int, keys="k", targets="t").measures)


def test_inputs_are_not_changed() -> None:
    o, s = ORIG.clone(), SYN.clone()
    synthetic_disclosure(o, s, keys="k", targets="t", not_target_levels={"t": "x"})
    assert o.equals(ORIG) and s.equals(SYN)


# --------------------------------------------------------------------------- reference check
def _reference(orig: list[tuple], syn: list[tuple]) -> dict[str, float]:
    """The definitions of the synthpop vignette (Appendix 1), counted record by record."""
    d, s = Counter(orig), Counter(syn)
    dq = Counter(q for q, _ in orig)
    sq = Counter(q for q, _ in syn)
    nd, ns = len(orig), len(syn)
    single_s = {q for q in sq if sum(1 for (q2, _t) in s if q2 == q) == 1}
    disco = sum(n for (q, t), n in d.items() if s[(q, t)] and s[(q, t)] == sq[q])
    return {
        "UiO": 100 * sum(1 for q in dq if dq[q] == 1) / nd,
        "UiS": 100 * sum(1 for q in sq if sq[q] == 1) / ns,
        "UiOiS": 100 * sum(1 for q in dq if dq[q] == 1 and sq[q] > 0) / nd,
        "repU": 100 * sum(1 for q in dq if dq[q] == 1 and sq[q] == 1) / nd,
        "Dorig": 100 * sum(n for (q, _t), n in d.items() if n == dq[q]) / nd,
        "Dsyn": 100 * sum(n for (q, _t), n in s.items() if n == sq[q]) / ns,
        "iS": 100 * sum(n for (q, _t), n in d.items() if sq[q] > 0) / nd,
        "DiS": 100 * sum(n for (q, _t), n in d.items() if q in single_s) / nd,
        "DiSCO": 100 * disco / nd,
        "DiSDiO": 100
        * sum(n for (q, t), n in d.items() if s[(q, t)] == sq[q] > 0 and n == dq[q])
        / nd,
        "CAPd": 100 * sum(n * n / dq[q] for (q, _t), n in d.items()) / nd,
        "DCAP": 100 * sum(n * s[(q, t)] / sq[q] for (q, t), n in d.items() if sq[q]) / nd,
    }


values = st.one_of(st.none(), st.integers(0, 2))
numbers = st.one_of(st.none(), st.sampled_from([0.5, 1.0, 2.25]))
records = st.lists(st.tuples(values, numbers, values), min_size=2, max_size=25)


@given(records, records)
def test_matches_the_definitions(orig: list[tuple], syn: list[tuple]) -> None:
    """Random small files with missing values and a numeric key: the same as by definition."""

    def frame(rows: list[tuple]) -> pl.DataFrame:
        a, b, t = zip(*rows, strict=True)
        return pl.DataFrame({"a": list(a), "b": list(b), "t": list(t)},
                            schema={"a": pl.Int64, "b": pl.Float64, "t": pl.Int64})  # fmt: skip

    m = _measures(synthetic_disclosure(frame(orig), frame(syn), keys=["a", "b"], targets="t"))
    ref = _reference([((a, b), t) for a, b, t in orig], [((a, b), t) for a, b, t in syn])
    for name, value in ref.items():
        assert m[name] == pytest.approx(value), name
    assert m["repU"] <= m["UiOiS"] <= m["UiO"]
    assert m["DiSDiO"] <= m["DiSCO"] <= m["DiS"] <= m["iS"] <= 100
    assert m["DiSDiO"] <= m["Dorig"]
    # the order of the records does not matter
    perm = synthetic_disclosure(frame(orig[::-1]), frame(syn[::-1]), keys=["a", "b"], targets="t")
    assert perm.measures.equals(synthetic_disclosure(frame(orig), frame(syn), keys=["a", "b"],
                                                     targets="t").measures)  # fmt: skip


reals = st.one_of(st.none(), st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 1)))
numeric_records = st.lists(st.tuples(reals, values), min_size=3, max_size=30)


@given(numeric_records, numeric_records)
def test_grouped_numeric_key_matches_the_definitions(orig: list[tuple], syn: list[tuple]) -> None:
    """A numeric key in 3 quantile groups (missing values kept) is the key cut by hand."""
    o = pl.DataFrame(orig, schema={"x": pl.Float64, "t": pl.Int64}, orient="row")
    s = pl.DataFrame(syn, schema={"x": pl.Float64, "t": pl.Int64}, orient="row")
    observed = np.array([v for v, _ in orig + syn if v is not None])
    distinct = np.unique(observed)
    if len(distinct) < 2:  # one value or none: synthpop (and sdckit) refuse to group it
        with pytest.raises(DataError, match=r"single value|no values"):
            synthetic_disclosure(o, s, keys="x", targets="t", ngroups_keys=3)
        return
    res = synthetic_disclosure(o, s, keys="x", targets="t", ngroups_keys=3)
    if len(distinct) <= 3:  # classInt: every value a class of its own
        br = np.r_[distinct[0] - 1, distinct[:-1] + np.diff(distinct) / 2, distinct[-1] + 1]
    else:
        br = np.unique(np.quantile(observed, np.linspace(0, 1, 4)))
        if len(br) - 1 < 3:  # synthpop's fallback to equal widths
            br = np.unique(np.linspace(observed.min(), observed.max(), 4))

    def group(v: float | None) -> int | None:
        if v is None:
            return None
        return int(min(max(np.searchsorted(br, v, side="right") - 1, 0), len(br) - 2))

    ref = _reference([(group(v), t) for v, t in orig], [(group(v), t) for v, t in syn])
    m = _measures(res)
    for name, value in ref.items():
        assert m[name] == pytest.approx(value), name
    by_value = _measures(synthetic_disclosure(o, s, keys="x", targets="t"))
    assert m["UiO"] <= by_value["UiO"] and m["Dorig"] <= by_value["Dorig"]  # coarser keys
