"""Tests of weight calibration: hand-computed raking, brute force, households, noise, rounding."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
import scipy.optimize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import (
    ColumnError,
    InfeasibleError,
    ParameterError,
    SdcWarning,
    VerificationError,
)
from sdckit.masking import LocalSuppression, WeightCalibration, calibrate_weights
from sdckit.masking.weights import _Margins, _rake
from sdckit.protection import Protected, get_method

quiet = pytest.mark.filterwarnings("ignore::sdckit.errors.SdcWarning")


def _totals(frame: pl.DataFrame, by: list[str], weight: str = "w") -> dict[tuple, float]:
    grouped = frame.group_by(by).agg(pl.col(weight).sum())
    return {tuple(row[:-1]): row[-1] for row in grouped.iter_rows()}


def _assert_margins_kept(
    before: pl.DataFrame, after: pl.DataFrame, margins: list[list[str]], rel: float = 1e-9
) -> None:
    for by in margins:
        a, b = _totals(before, by), _totals(after, by)
        assert a.keys() == b.keys()
        for key, value in a.items():
            assert b[key] == pytest.approx(value, rel=rel), (by, key)


def _random_file(seed: int, n: int = 80, *, missing: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "east", "west"], n).astype(object)
    age = rng.integers(1, 6, n).astype(float)
    if missing:
        region[rng.random(n) < 0.1] = None
        age[rng.random(n) < 0.1] = np.nan
    return pl.DataFrame(
        {
            "region": pl.Series(region.tolist(), dtype=pl.String),
            "sex": rng.integers(1, 3, n),
            "age": age,
            "income": rng.gamma(2.0, 500.0, n).round(0),
            "w": rng.uniform(5.0, 60.0, n).round(2),
        }
    ).with_columns(pl.col("age").fill_nan(None).cast(pl.Int64))


def _household_file(seed: int, n_households: int = 40) -> pl.DataFrame:
    """Persons in households (members not adjacent) with integrated household weights."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 6, n_households)
    hid = np.repeat(rng.permutation(n_households) * 5 + 11, size)
    n = int(size.sum())
    region = np.repeat(rng.choice(["a", "b", "c"], n_households), size)
    frame = pl.DataFrame(
        {
            "hid": hid,
            "region": region,
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(1, 5, n),
            "w": np.repeat(rng.uniform(10.0, 90.0, n_households).round(2), size),
        }
    )
    return frame[rng.permutation(n)]


# ------------------------------------------------------------------- hand-computed cases
def test_one_variable_gives_category_total_over_count() -> None:
    # categories N (3 records, total 60), S (2, total 12); the total (82) leaves 10 to the
    # two records whose region is missing
    df = pl.DataFrame(
        {
            "region": ["N", "S", "N", None, "S", "N", None],
            "w": [10.0, 5.0, 20.0, 4.0, 7.0, 30.0, 6.0],
        }
    )
    res = WeightCalibration(variables=["region"]).apply(df, weight="w")
    np.testing.assert_allclose(
        res.data["w"].to_numpy(), [20.0, 6.0, 20.0, 5.0, 6.0, 20.0, 5.0], rtol=1e-12
    )
    assert res.changed == {"w": 6}  # the first N record already weighed 20
    assert res.details["iterations"] >= 1
    assert res.details["largest_relative_error"] <= 1e-10
    assert not res.details["households"]
    assert res.microdata.weight == "w"


def test_two_variables_product_form() -> None:
    # row totals 4 and 7, column totals 3 and 8, total 11: w = row x column / 11
    df = pl.DataFrame({"sex": [1, 1, 2, 2], "age": [1, 2, 1, 2], "w": [1.0, 3.0, 2.0, 5.0]})
    out = calibrate_weights(df, weight="w", variables=["sex", "age"]).data["w"].to_numpy()
    np.testing.assert_allclose(out, [12 / 11, 32 / 11, 21 / 11, 56 / 11], rtol=1e-12)


def test_saturated_interaction_gives_cell_total_over_count() -> None:
    df = _random_file(3, missing=True)
    res = WeightCalibration(variables=["region", "sex"], interactions=[("region", "sex")]).apply(
        df, weight="w"
    )
    expected = df.with_columns(
        (pl.col("w").sum().over(["region", "sex"]) / pl.len().over(["region", "sex"])).alias("e")
    )["e"].to_numpy()
    np.testing.assert_allclose(res.data["w"].to_numpy(), expected, rtol=1e-9)


def _brute_force(df: pl.DataFrame, variables: list[str]) -> np.ndarray:
    """Minimise the raking distance to uniform weights subject to the margins (SLSQP).

    With ``d = total / n`` and ``x = w / d`` the distance ``sum w log(w / d) - w + d`` is
    ``d sum (x log x - x + 1)``; the margins are ``A x = A w0 / d``.
    """
    n = df.height
    w0 = df["w"].to_numpy()
    d = w0.sum() / n
    labels = {v: df[v].cast(pl.String).fill_null("<missing>").to_numpy() for v in variables}
    # one level of every variable after the first is left out (SLSQP needs independent rows)
    levels = {v: sorted(set(labels[v]))[(i > 0) :] for i, v in enumerate(variables)}
    a = np.array([(labels[v] == level).astype(float) for v in variables for level in levels[v]])
    result = scipy.optimize.minimize(
        lambda x: float(np.sum(x * np.log(x) - x + 1)),
        np.ones(n),
        jac=np.log,
        method="SLSQP",
        bounds=[(1e-9, None)] * n,
        constraints=[{"type": "eq", "fun": lambda x: a @ x - a @ w0 / d, "jac": lambda x: a}],
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    assert result.success, result.message
    return result.x * d


@quiet
def test_two_variables_raking_matches_brute_force() -> None:
    df = _random_file(11, n=14, missing=True).select("region", "sex", "w")
    res = calibrate_weights(df, weight="w", variables=["region", "sex"])
    expected = _brute_force(df, ["region", "sex"])
    np.testing.assert_allclose(res.data["w"].to_numpy(), expected, rtol=1e-5)


@quiet
def test_three_variables_raking_matches_brute_force() -> None:
    df = _random_file(12, n=18, missing=True).select("region", "sex", "age", "w")
    res = calibrate_weights(df, weight="w", variables=["region", "sex", "age"])
    expected = _brute_force(df, ["region", "sex", "age"])
    np.testing.assert_allclose(res.data["w"].to_numpy(), expected, rtol=1e-5)


# ------------------------------------------------------------------------ the promises
@quiet
def test_margins_kept_after_local_suppression_missing_total_implied() -> None:
    df = _random_file(5, n=200, missing=False)
    md = Microdata(df, keys=["region", "sex", "age"], weight="w")
    suppressed = LocalSuppression(k=4).apply(md)
    assert suppressed.changed  # some values were suppressed
    method = WeightCalibration(interactions=[("region", "sex")])
    res = method.apply(suppressed)
    method.verify(suppressed.microdata, res)
    before = suppressed.microdata.frame
    _assert_margins_kept(
        before, res.microdata.frame, [["region"], ["sex"], ["age"], ["region", "sex"]]
    )
    missing = before["region"].is_null()
    assert res.microdata.frame.filter(missing)["w"].sum() == pytest.approx(
        before.filter(missing)["w"].sum(), rel=1e-10
    )


def test_same_released_values_same_weight_without_noise() -> None:
    df = _random_file(6, n=300)
    res = calibrate_weights(df, weight="w", variables=["region", "sex", "age"])
    spread = (
        res.microdata.frame.group_by(["region", "sex", "age"])
        .agg(pl.col("w").n_unique().alias("k"))["k"]
        .max()
    )
    assert spread == 1
    # and the weights do not depend on the original weights within a cell: shuffling the
    # original weights inside every cell changes nothing
    rng = np.random.default_rng(0)
    shuffled = df.with_columns(
        pl.col("w").shuffle(seed=int(rng.integers(1000))).over(["region", "sex", "age"])
    )
    again = calibrate_weights(shuffled, weight="w", variables=["region", "sex", "age"])
    np.testing.assert_allclose(again.data["w"].to_numpy(), res.data["w"].to_numpy(), rtol=1e-9)


def test_household_weights_stay_constant_and_keep_person_margins() -> None:
    df = _household_file(8)
    md = Microdata(df, keys=["region", "sex", "age"], weight="w", household="hid")
    method = WeightCalibration(interactions=[("sex", "age")])
    res = method.apply(md)
    method.verify(md, res)
    assert res.details["households"]
    assert res.details["units"] == df["hid"].n_unique()
    assert res.microdata.inconsistent_households("w") == 0
    _assert_margins_kept(df, res.microdata.frame, [["region"], ["sex"], ["age"], ["sex", "age"]])
    # households of the same composition get the same weight
    composition = (
        res.microdata.frame.group_by("hid")
        .agg(pl.col("w").first(), pl.struct("region", "sex", "age").sort().alias("members"))
        .group_by("members")
        .agg(pl.col("w").n_unique().alias("k"))
    )
    assert composition["k"].max() == 1


def test_person_weights_in_households_are_calibrated_per_person() -> None:
    df = _household_file(9)
    rng = np.random.default_rng(1)
    df = df.with_columns(w=pl.col("w") * rng.uniform(0.8, 1.2, df.height))  # not constant
    md = Microdata(df, keys=["region", "sex", "age"], weight="w", household="hid")
    method = WeightCalibration()
    res = method.apply(md)
    method.verify(md, res)
    assert not res.details["households"]
    assert res.details["units"] == df.height


def test_verify_refuses_weights_that_differ_within_households() -> None:
    df = _household_file(10)
    md = Microdata(df, keys=["region", "sex"], weight="w", household="hid")
    method = WeightCalibration()
    res = method.apply(md)
    w = res.microdata.frame["w"].to_numpy().copy()
    # move weight between two members of one household: margins may stay, households not
    members = np.flatnonzero(df["hid"].to_numpy() == df["hid"].value_counts().sort("count")[-1, 0])
    w[members[0]] += 1.0
    w[members[1]] -= 1.0
    tampered = Protected.from_frames(md, res.microdata.frame.with_columns(w=w), method)
    with pytest.raises(VerificationError, match="differ within a household"):
        method.verify(md, tampered)


def test_verify_refuses_broken_margins_and_non_positive_weights() -> None:
    df = _random_file(13)
    md = Microdata(df, keys=["region", "sex"], weight="w")
    method = WeightCalibration()
    res = method.apply(md)
    w = res.microdata.frame["w"].to_numpy()
    broken = Protected.from_frames(md, res.microdata.frame.with_columns(w=w * 1.01), method)
    with pytest.raises(VerificationError, match="not kept"):
        method.verify(md, broken)
    negative = w.copy()
    negative[0] = -1.0
    bad = Protected.from_frames(md, res.microdata.frame.with_columns(w=negative), method)
    with pytest.raises(VerificationError, match="positive"):
        method.verify(md, bad)
    other = res.microdata.frame.with_columns(income=pl.col("income") + 1)
    with pytest.raises(VerificationError, match="income"):
        method.verify(md, Protected.from_frames(md, other, method))


# ------------------------------------------------------------------------ noise and seed
def test_seed_gives_identical_bytes_and_other_seeds_differ() -> None:
    df = _random_file(14, n=120)
    a = calibrate_weights(df, weight="w", noise=0.05, seed=7, variables=["region", "sex"])
    b = calibrate_weights(df, weight="w", noise=0.05, seed=7, variables=["region", "sex"])
    c = calibrate_weights(df, weight="w", noise=0.05, seed=8, variables=["region", "sex"])
    assert a.data["w"].to_numpy().tobytes() == b.data["w"].to_numpy().tobytes()
    assert a.microdata.frame.equals(b.microdata.frame, null_equal=True)
    assert not np.array_equal(a.data["w"].to_numpy(), c.data["w"].to_numpy())


def test_noise_blurs_weights_within_cells_but_keeps_margins() -> None:
    df = _random_file(15, n=400)
    variables = ["region", "sex", "age"]
    method = WeightCalibration(variables=variables, noise=0.1, seed=3)
    md = Microdata(df, keys=variables, weight="w")
    res = method.apply(md)
    method.verify(md, res)
    out = res.microdata.frame
    within = out.group_by(variables).agg(
        pl.col("w").n_unique().alias("k"),
        pl.len().alias("n"),
        (pl.col("w").std() / pl.col("w").mean()).alias("cv"),
    )
    assert (within.filter(pl.col("n") > 1)["k"] > 1).all()
    assert 0.02 < within.filter(pl.col("n") >= 5)["cv"].median() < 0.3
    _assert_margins_kept(df, out, [[v] for v in variables])
    plain = WeightCalibration(variables=variables).apply(md).data["w"].to_numpy()
    assert not np.allclose(res.data["w"].to_numpy(), plain)


# ------------------------------------------------------------------------------ rounding
def test_rounding_to_a_step_moves_totals_by_at_most_half_a_step_per_record() -> None:
    df = _random_file(16, n=500)
    variables = ["region", "sex", "age"]
    md = Microdata(df, keys=variables, weight="w")
    method = WeightCalibration(rounding=5.0)
    res = method.apply(md)
    method.verify(md, res)
    w = res.data["w"].to_numpy()
    np.testing.assert_array_equal(w % 5.0, 0.0)
    assert (w >= 5.0).all()
    for v in variables:
        before, after = _totals(df, [v]), _totals(res.microdata.frame, [v])
        counts = dict(df.group_by(v).len().iter_rows())
        for key, value in before.items():
            assert abs(after[key] - value) <= 2.5 * counts[key[0]] + 1e-9
    assert res.details["largest_relative_error"] > res.details["calibration_error"]
    assert res.details["largest_relative_error"] < 0.05


def test_rounding_never_gives_a_zero_weight() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2, 2, 2], "w": [0.2, 0.2, 3.0, 3.0, 3.0, 3.0]})
    method = WeightCalibration(variables=["g"], rounding=1.0)
    md = Microdata(df, keys=["g"], weight="w")
    res = method.apply(md)
    method.verify(md, res)  # raising 0.2 to one step is what rounding explains
    assert res.data["w"].to_list() == [1.0, 1.0, 3.0, 3.0, 3.0, 3.0]


# ------------------------------------------------------------------------------ bad input
def test_bad_input_errors_name_the_fix_and_no_data_value() -> None:
    df = _random_file(17)
    with pytest.raises(ColumnError, match="needs a sampling weight"):
        WeightCalibration(variables=["region"]).apply(df)
    with pytest.raises(ColumnError, match="variables to calibrate on"):
        WeightCalibration().apply(df, weight="w")
    with pytest.raises(ParameterError, match="weight or household column"):
        WeightCalibration(variables=["region", "w"]).apply(df, weight="w")
    with pytest.raises(ParameterError, match="among 'variables'"):
        WeightCalibration(variables=["region"], interactions=[("region", "sex")]).apply(
            df, weight="w"
        )
    with pytest.raises(ParameterError, match="'noise'"):
        WeightCalibration(variables=["region"], noise=2.0).apply(df, weight="w")
    with pytest.raises(InfeasibleError, match="did not converge") as info:
        WeightCalibration(variables=["region", "sex", "age"], max_iterations=1).apply(
            df, weight="w"
        )
    message = str(info.value)
    assert "raise max_iterations" in message
    assert not any(value in message for value in ("north", "south", "east", "west"))


def test_a_positive_target_without_records_is_infeasible() -> None:
    df = pl.DataFrame({"region": ["a", "a", "b", "b"], "w": [1.0, 2.0, 3.0, 4.0]})
    margins = _Margins(df, ["region"], [])
    design = margins.design(np.arange(4), 4)
    targets = margins.totals(df["w"].to_numpy())
    design = design.tolil()
    design[2:, 2] = 0  # category b (after the total and a) has no record left, a target of 7
    with pytest.raises(InfeasibleError, match=r"'region'.*no record"):
        _rake(design.tocsr(), np.ones(4), targets, margins, tolerance=1e-10, max_iterations=20)


def test_single_record_categories_are_warned_about() -> None:
    df = pl.DataFrame({"g": [1, 1, 1, 2], "w": [1.0, 2.0, 3.0, 4.0]})
    with pytest.warns(SdcWarning, match="single record") as record:
        res = calibrate_weights(df, weight="w", variables=["g"])
    assert "4" not in str(record[0].message).replace("1 calibrated", "")
    assert res.details["single_unit_categories"] == 1
    assert res.data["w"].to_list()[-1] == pytest.approx(4.0)  # its weight comes back


def test_function_twin_on_pandas_keeps_index() -> None:
    df = _random_file(18).to_pandas()
    df.index = pd.Index([f"r{i}" for i in range(len(df))], name="rid")
    out = calibrate_weights(df, weight="w", keys=["region", "sex"]).data
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(df.index)
    assert out["w"].sum() == pytest.approx(df["w"].sum(), rel=1e-10)


def test_job_files_can_name_the_method(tmp_path: Path) -> None:
    from sdckit.jobs import load_job, run_job

    assert get_method("weight_calibration") is WeightCalibration
    job = """
title = "weights"
seed = 4
[input]
dataset = "demo"
rows = 3000
[roles]
keys = ["region", "sex", "age_group"]
weight = "weight"
household = "household_id"
household_level = ["region"]
[[steps]]
method = "local_suppression"
k = 3
[[steps]]
method = "weight_calibration"
variables = ["region", "urban_rural", "sex", "age_group"]
interactions = [["region", "sex"]]
noise = 0.05
[output]
data = "out/puf.parquet"
"""
    path = tmp_path / "job.toml"
    path.write_text(job, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        result = run_job(load_job(path, output_dir=tmp_path / "out"), write=False)
    step = result.session.history[-1]
    assert step.result.details["households"]
    assert step.result.details["largest_relative_error"] <= 1e-10
    assert step.result.changed == {"weight": 3000}


# --------------------------------------------------------------------------- properties
@st.composite
def _files(draw: st.DrawFn) -> tuple[pl.DataFrame, bool]:
    seed = draw(st.integers(0, 10_000))
    n_households = draw(st.integers(2, 25))
    constant = draw(st.booleans())
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 4, n_households)
    n = int(size.sum())
    a = rng.integers(0, draw(st.integers(1, 4)), n).astype(float)
    b = rng.choice(["x", "y", "z"], n).astype(object)
    a[rng.random(n) < 0.15] = np.nan
    b[rng.random(n) < 0.15] = None
    w = rng.uniform(1.0, 50.0, n_households if constant else n).round(2)
    frame = pl.DataFrame(
        {
            "hid": np.repeat(np.arange(n_households), size),
            "a": a,
            "b": pl.Series(b.tolist(), dtype=pl.String),
            "w": np.repeat(w, size) if constant else w,
        }
    ).with_columns(pl.col("a").fill_nan(None))
    if n < 2:
        frame = pl.concat([frame, frame.with_columns(hid=pl.lit(n_households, pl.Int64))])
    return frame, constant


@quiet
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _files(),
    st.booleans(),
    st.sampled_from([0.0, 0.1]),
    st.sampled_from([None, 0.5]),
)
def test_margins_positive_households_property(
    data: tuple[pl.DataFrame, bool], interact: bool, noise: float, rounding: float | None
) -> None:
    frame, constant = data
    md = Microdata(frame, keys=["a", "b"], weight="w", household="hid")
    method = WeightCalibration(
        interactions=[("a", "b")] if interact else None, noise=noise, rounding=rounding, seed=1
    )
    res = method.apply(md)
    method.verify(md, res)  # margins (within rounding), positivity, households
    w = res.data["w"].to_numpy()
    assert np.all(np.isfinite(w)) and np.all(w > 0)
    constant = md.inconsistent_households("w") == 0  # (also when every household has one member)
    assert res.details["households"] == constant
    if constant:
        assert res.microdata.inconsistent_households("w") == 0
    if rounding is None:
        margins = [["a"], ["b"]] + ([["a", "b"]] if interact else [])
        _assert_margins_kept(frame, res.microdata.frame, margins, rel=1e-8)
    if noise == 0 and rounding is None and not constant:
        spread = res.microdata.frame.group_by(["a", "b"]).agg(pl.col("w").n_unique())["w"]
        assert spread.max() == 1
