"""Individual, global and household risk: closed forms, sdcMicro references, properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

from sdckit.errors import ParameterError, SdcWarning
from sdckit.risk import household_risk, individual_risk
from sdckit.risk.individual import benedetti_franconi_risk, risk_threshold

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
SMALL = {
    "A": [2, 3, 2, 2, 3, 3, 1, 2],
    "C": [1, 3, 1, 2, 1, 1, 1, 1],
    "w": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0],
}


def _integral_risk(f: float, F: float) -> float:
    p = f / F
    q = 1 - p
    value, _ = integrate.quad(lambda t: t ** (f - 1) * (1 - q * t) ** (-f), 0, 1)
    return p**f * value


def test_sdcmicro_small_example_approx_and_exact() -> None:
    df = pl.DataFrame(SMALL)
    approx = individual_risk(df, keys=["A", "C"], weight="w")
    expected = [0.01369863, 0.08579129, 0.01369863, 0.17707583,
                0.01877883, 0.01877883, 0.03931625, 0.01369863]  # fmt: skip
    np.testing.assert_allclose(approx.risk, expected, atol=5e-9)
    exact = individual_risk(df, keys=["A", "C"], weight="w", method="exact")
    np.testing.assert_allclose(exact.risk[[0, 2, 7]], 0.01355297, atol=5e-9)
    np.testing.assert_allclose(exact.risk[[1, 3, 4, 5, 6]], approx.risk[[1, 3, 4, 5, 6]])


def test_closed_forms_equal_integral() -> None:
    for f, F in [(1, 17.0), (2, 100.0), (3, 108.0), (3, 150.0), (5, 40.0), (12, 13.0), (4, 4000)]:
        r = benedetti_franconi_risk(np.array([f], float), np.array([F]), "exact")[0]
        assert r == pytest.approx(_integral_risk(f, F), rel=1e-9)
    # methods.md M2.1: f = 3, p = 0.02 exact 0.009821; approx f=3, p=0.4 gives 0.16667
    r = benedetti_franconi_risk(np.array([3.0]), np.array([150.0]), "exact")[0]
    assert r == pytest.approx(0.009821, abs=5e-7)
    r = benedetti_franconi_risk(np.array([3.0, 3.0]), np.array([7.5, 7.5]), "approx")
    assert r[0] == pytest.approx(0.16667, abs=5e-6)
    r = benedetti_franconi_risk(np.array([3.0]), np.array([7.5]), "exact")[0]
    assert r == pytest.approx(0.16038, abs=5e-6)


def test_unweighted_risk_is_one_over_fk() -> None:
    res = individual_risk(pl.DataFrame(SMALL), keys=["A", "C"])
    np.testing.assert_allclose(res.risk, 1 / res.fk)
    assert res.expected_reidentifications == pytest.approx(5.0)


def test_p_equal_one_gives_one_over_f() -> None:
    r = benedetti_franconi_risk(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(r, [1.0, 0.5, 0.25])


@pytest.mark.parametrize(
    ("fk", "Fk", "argument", "values"),
    [
        ([0.0, 2.0], [10.0, 20.0], "'fk'", ["0.0", "10.0"]),
        ([3.0, 2.0], [2.5, 20.0], "'Fk'", ["2.5", "3.0"]),
        ([1.0, 1.0], [-5.0, 0.0], "'Fk'", ["-5", "0.0"]),
        ([1.0, np.nan], [3.0, 4.0], "'fk'", ["nan", "3.0"]),
        ([1.0, 2.0], [3.0, np.inf], "'Fk'", ["3.0", "2.0"]),
        ([1.0, 2.0], [3.0], "'fk' and 'Fk'", ["3.0"]),
    ],
)
def test_benedetti_franconi_rejects_impossible_frequencies(fk, Fk, argument, values) -> None:
    with pytest.raises(ParameterError, match=argument) as info:
        benedetti_franconi_risk(np.array(fk), np.array(Fk))
    message = str(info.value)
    assert not any(v in message for v in values), message  # no value of the arguments


def test_weights_below_one_are_capped_as_before() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "w": [0.5, 0.4, 3.0, 2.0, 0.7]})
    with pytest.warns(SdcWarning, match="capped at 1/fk"):
        res = individual_risk(df, keys=["a"], weight="w")
    # classes 1 and 3 have a weight sum below their count: 1/fk; class 2 the usual risk
    two = benedetti_franconi_risk(np.array([2.0]), np.array([5.0]))[0]
    assert res.risk.tolist() == [0.5, 0.5, two, two, 1.0]
    assert res.Fk_hat.tolist() == pytest.approx([0.9, 0.9, 5.0, 5.0, 0.7])


@pytest.mark.parametrize(
    ("name", "keys", "weight", "er"),
    [
        ("testdata", TESTDATA_KEYS, "sampling_weight", 10.77829892),
        ("francdat", ["Key1", "Key2", "Key3", "Key4"], "w", 0.96652605),
    ],
)
def test_against_sdcmicro_reference(shared_data, name, keys, weight, er) -> None:
    df = pl.read_csv(shared_data / f"{name}.csv")
    ref = pl.read_csv(shared_data / "reference" / f"{name}_risk_sdcmicro.csv")
    res = individual_risk(df, keys=keys, weight=weight)
    np.testing.assert_allclose(res.fk, ref["fk"].to_numpy(), atol=1e-8, rtol=0)
    np.testing.assert_allclose(res.Fk_hat, ref["Fk"].to_numpy(), atol=1e-8, rtol=0)
    np.testing.assert_allclose(res.risk, ref["risk"].to_numpy(), atol=1e-8, rtol=0)
    assert res.expected_reidentifications == pytest.approx(er, abs=1e-8)
    assert res.global_risk == pytest.approx(er / df.height, abs=1e-9)
    if name == "testdata":
        assert res.global_risk_pct == pytest.approx(0.2353340, abs=1e-7)


def test_summary_and_frame() -> None:
    res = individual_risk(pd.DataFrame(SMALL, index=list("abcdefgh")), keys=["A", "C"], weight="w")
    out = res.to_frame()
    assert list(out.columns) == ["fk", "Fk_hat", "risk"]
    assert list(out.index) == list("abcdefgh")
    text = str(res.summary())
    assert "expected re-identifications" in text and "sample uniques" in text


def test_risk_threshold_pseudo_code() -> None:
    r = np.array([0.5, 0.5, 0.1, 0.1])
    # target 0.2 -> ER target 0.8; level 0.1 has m=2 above, s=0.2: 0.2 + 0.2 < 0.8
    assert risk_threshold(r, 0.2) == 0.1
    assert risk_threshold(r, 0.9) == 0.5  # already safe: the largest risk
    assert np.isnan(risk_threshold(r, 0.01))
    with pytest.raises(ParameterError, match="target"):
        risk_threshold(r, 1.5)


def _loop_threshold(risk: np.ndarray, target: float) -> float:
    r = sorted(risk, reverse=True)
    er_target = target * len(r)
    s = sum(r)
    if s < er_target:
        return r[0]
    cur, m = r[0], 0
    for value in r:
        if value != cur:
            if s + value * m < er_target:
                return value
            cur = value
        m += 1  # noqa: SIM113
        s -= value
    return float("nan")


@given(
    risk=st.lists(st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.5, 1.0]), min_size=1, max_size=30),
    target=st.floats(0.0, 1.0),
)
def test_threshold_equals_reference_loop(risk: list[float], target: float) -> None:
    got = risk_threshold(np.array(risk), target)
    want = _loop_threshold(np.array(risk), target)
    assert (np.isnan(got) and np.isnan(want)) or got == want


@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.floats(1.0, 500.0)),
        min_size=2,
        max_size=50,
    ),
    method=st.sampled_from(["approx", "exact"]),
)
def test_risk_in_unit_interval_and_below_one_over_fk(rows, method) -> None:
    df = pl.DataFrame(rows, schema=["a", "b", "w"], orient="row")
    res = individual_risk(df, keys=["a", "b"], weight="w", method=method)
    assert np.all(res.risk > 0) and np.all(res.risk <= 1 + 1e-12)
    assert np.all(res.risk <= 1 / res.fk + 1e-12)


def test_household_risk_product_formula() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "h": ["x", "x", "y", "z", "z"]})
    res = household_risk(df, keys=["a"], household="h")
    r = np.array([0.5, 0.5, 0.5, 0.5, 1.0])
    expected = [1 - 0.25, 1 - 0.25, 0.5, 1.0, 1.0]
    np.testing.assert_allclose(res.individual.risk, r)
    np.testing.assert_allclose(res.household_risk, expected)
    assert res.n_households == 3
    assert res.expected_reidentifications == pytest.approx(sum(expected))
    assert list(res.to_frame().columns) == ["risk", "household_risk"]


def test_household_risk_testdata(shared_data) -> None:
    df = pl.read_csv(shared_data / "testdata.csv")
    res = household_risk(df, keys=TESTDATA_KEYS, weight="sampling_weight", household="ori_hid")
    assert res.n_households == 1000
    # every household risk is at least each member's individual risk and at most their sum
    ind = res.individual.risk
    sums = pl.DataFrame({"h": df["ori_hid"], "r": ind}).select(pl.col("r").sum().over("h"))
    assert np.all(res.household_risk >= ind - 1e-12)
    assert np.all(res.household_risk <= sums.to_series().to_numpy() + 1e-12)


def test_exact_risk_is_a_number_where_scipy_2f1_fails() -> None:
    """scipy's hyp2f1(1, 1, 123, 0.99) is NaN; the integral form gives the model's value."""
    from scipy import special

    assert np.isnan(special.hyp2f1(1.0, 1.0, 123.0, 0.99))
    fk = np.array([122.0, 3.0, 10.0])
    Fk = np.array([12200.0, 108.0, 1000.0])
    r = benedetti_franconi_risk(fk, Fk, "exact")
    assert np.all(np.isfinite(r))
    # the integral form equals the 2F1 form where scipy works (to 1e-13)
    assert r[1] == pytest.approx(0.013552968371742415, rel=1e-13)
    assert r[2] == pytest.approx(0.0011097261707917053, rel=1e-13)
    # E[1/F | f] lies between p / f (all F = f / p) and the approximation p / (f - q)
    p, f = 0.01, 122.0
    assert p / f < r[0] < p / (f - (1 - p))
    assert r[0] == pytest.approx(8.263774220402564e-05, rel=1e-10)
