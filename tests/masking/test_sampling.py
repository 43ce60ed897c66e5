"""Tests of sub-sampling (simple random and stratified) and its weight adjustment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError
from sdckit.masking.sampling import SubSample, subsample
from sdckit.protection import Protected


def _strata_frame(sizes: list[int], seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    return pl.DataFrame(
        {
            "region": np.repeat(np.arange(len(sizes)), sizes)[rng.permutation(n)],
            "x": np.arange(n),
            "w": rng.uniform(1.0, 30.0, size=n).round(2),
        }
    )


def test_srs_size_order_and_weights_without_weight_role() -> None:
    df = pd.DataFrame({"x": np.arange(20) * 1.5}, index=[f"id{i}" for i in range(20)])
    res = subsample(df, fraction=0.25, seed=4)
    out = res.data
    assert len(out) == 5
    pos = df.index.get_indexer(out.index)
    assert (np.diff(pos) > 0).all()
    np.testing.assert_array_equal(out["x"].to_numpy(), df["x"].to_numpy()[pos])
    np.testing.assert_array_equal(out["weight"].to_numpy(), np.full(5, 4.0))
    assert res.microdata.weight == "weight"
    assert res.details["roles_changed"]
    np.testing.assert_array_equal(np.flatnonzero(res.details["kept"]), pos)


def test_stratified_allocation_hand_computed() -> None:
    # strata of 10, 5 and 1 records at fraction 0.3: 3, round(1.5) = 2 and at least 1 record
    df = _strata_frame([10, 5, 1])
    res = subsample(df.drop("w"), fraction=0.3, method="stratified", strata="region", seed=3)
    table = res.details["strata"]
    assert table["records"].to_list() == [10, 5, 1]
    assert table["kept"].to_list() == [3, 2, 1]
    out = res.microdata.frame
    weights = dict(zip(out["region"].to_list(), out["weight"].to_list(), strict=True))
    assert weights == pytest.approx({0: 10 / 3, 1: 2.5, 2: 1.0})
    assert out["weight"].sum() == pytest.approx(16.0)


def test_calibrated_and_design_weights_of_a_weighted_file() -> None:
    df = _strata_frame([30, 12])
    md = Microdata(df, numeric=["x"], weight="w", strata="region")
    for weighting in ("calibrate", "design"):
        method = SubSample(fraction=0.5, method="stratified", weighting=weighting, seed=1)
        res = method.apply(md)
        method.verify(md, res)
        assert res.microdata.weight == "w" and not res.details["roles_changed"]
        kept = res.details["positions"]
        w, new_w = df["w"].to_numpy()[kept], res.microdata.frame["w"].to_numpy()
        region = df["region"].to_numpy()[kept]
        if weighting == "design":
            np.testing.assert_allclose(new_w, w * 2.0)
        else:
            for h in (0, 1):
                total = df.filter(pl.col("region") == h)["w"].sum()
                assert new_w[region == h].sum() == pytest.approx(total, rel=1e-12)
                ratio = new_w[region == h] / w[region == h]
                np.testing.assert_allclose(ratio, ratio[0])


def test_fraction_one_keeps_everything_unchanged() -> None:
    df = _strata_frame([4, 6])
    res = subsample(df, fraction=1.0, weight="w", seed=0)
    assert res.microdata.frame.equals(df)


def test_srs_inclusion_probability_is_the_fraction() -> None:
    df = pl.DataFrame({"x": np.arange(20)})
    rng = np.random.default_rng(0)
    counts = np.zeros(20)
    for _ in range(300):
        counts += subsample(df, fraction=0.3, seed=rng).details["kept"]
    # each record is kept with probability 6/20; 300 draws give sd ~ 0.026
    np.testing.assert_allclose(counts / 300, 0.3, atol=0.1)


@given(
    sizes=st.lists(st.integers(1, 15), min_size=1, max_size=6),
    fraction=st.floats(0.05, 1.0),
    method=st.sampled_from(["srs", "stratified"]),
    weighting=st.sampled_from(["calibrate", "design"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_sample_size_order_and_weight_totals(
    sizes: list[int], fraction: float, method: str, weighting: str, seed: int
) -> None:
    assume(sum(sizes) >= 2)  # a file needs two records
    df = _strata_frame(sizes, seed=seed % 100)
    md = Microdata(df, numeric=["x"], weight="w", strata="region")
    n_h = np.array(sizes)
    if method == "srs":
        expected = int(np.floor(fraction * n_h.sum() + 0.5))
    else:
        expected = int(np.clip(np.floor(fraction * n_h + 0.5), 1, n_h).sum())
    sampler = SubSample(fraction=fraction, method=method, weighting=weighting, seed=seed)  # type: ignore[arg-type]
    if expected < 2:
        with pytest.raises(ParameterError, match="fraction"):
            sampler.apply(md)
        return
    res = sampler.apply(md)
    sampler.verify(md, res)
    assert res.microdata.n_records == expected
    pos = res.details["positions"]
    assert (np.diff(pos) > 0).all()
    assert res.microdata.frame["x"].to_list() == pos.tolist()  # x is the row number
    if weighting == "calibrate":
        assert res.microdata.frame["w"].sum() == pytest.approx(df["w"].sum(), rel=1e-9)
    again = sampler.apply(md).microdata.frame
    assert again.equals(res.microdata.frame)


def test_different_seeds_give_different_samples() -> None:
    df = pl.DataFrame({"x": np.arange(100)})
    a = subsample(df, fraction=0.5, seed=1).details["positions"]
    b = subsample(df, fraction=0.5, seed=2).details["positions"]
    assert not np.array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fraction": 0.0}, ParameterError, "fraction"),
        ({"fraction": 1.5}, ParameterError, "fraction"),
        ({"fraction": -0.1}, ParameterError, "fraction"),
        ({"fraction": "half"}, ParameterError, "fraction"),
        ({"fraction": 0.01}, ParameterError, "at least two records"),
        ({"fraction": 0.5, "method": "cluster"}, ParameterError, "method"),
        ({"fraction": 0.5, "weighting": "raking"}, ParameterError, "weighting"),
        ({"fraction": 0.5, "method": "stratified"}, ColumnError, "strata"),
        ({"fraction": 0.5, "weight_name": "x"}, ColumnError, "weight_name"),
        ({"fraction": 0.5, "seed": 1.5}, ParameterError, "seed"),
    ],
)
def test_bad_input(kwargs: dict, error: type[Exception], match: str) -> None:
    df = pl.DataFrame({"x": np.arange(30)})
    with pytest.raises(error, match=match):
        SubSample(**kwargs).apply(df)


def test_verify_detects_broken_promises() -> None:
    df = _strata_frame([12, 8])
    md = Microdata(df, numeric=["x"], weight="w", strata="region")
    method = SubSample(fraction=0.5, method="stratified", seed=5)
    res = method.apply(md)
    method.verify(md, res)
    frame = res.microdata.frame
    for bad in (frame.with_columns(w=pl.col("w") * 1.01), frame.with_columns(x=pl.col("x") + 1)):
        fake = Protected.from_frames(md, bad, method, details=res.details)
        with pytest.raises(AssertionError):
            method.verify(md, fake)
