"""Synthetic data: no replicated uniques, regression utility, save and reuse, contract."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit import Microdata
from sdckit.datasets import load_demo
from sdckit.errors import ColumnError, DataError, ParameterError, VerificationError
from sdckit.masking.synthetic import Synthesis, Synthesizer, synthesize
from sdckit.protection import Protected
from sdckit.risk import replicated_uniques
from sdckit.utility import regression_comparison

KEYS = ["region", "sex", "age_group", "marital_status", "education"]


@pytest.fixture(scope="module")
def demo() -> pl.DataFrame:
    return load_demo().head(3000).select([*KEYS, "income", "hours_worked", "weight"])


def test_no_replicated_uniques_on_demo(demo) -> None:
    md = Microdata(demo, keys=KEYS, numeric=["income", "hours_worked"], weight="weight")
    method = Synthesis(seed=4)
    res = method.apply(md)
    method.verify(md, res)
    assert replicated_uniques(md, res.microdata, KEYS).n_replicated == 0
    # with replicated uniques allowed some usually appear: the check is not vacuous
    allowed = Synthesis(seed=4, allow_replicated_uniques=True).apply(md)
    assert replicated_uniques(md, allowed.microdata, KEYS).n_replicated > 0
    with pytest.raises(VerificationError, match="sample unique"):
        method.verify(md, Protected.from_frames(md, allowed.microdata.frame, method))


def test_regression_utility(demo) -> None:
    md = Microdata(demo, keys=KEYS, numeric=["income", "hours_worked"])
    syn = synthesize(md, seed=2).data
    reg = regression_comparison(demo, syn, "hours_worked ~ C(sex) + C(education)")
    assert reg.mean_overlap > 0


def test_partly_synthetic_keeps_other_variables(demo) -> None:
    md = Microdata(demo, keys=KEYS, numeric=["income"])
    res = Synthesis(synthesize=["income"], seed=1).apply(md)
    out = res.data
    for c in KEYS:
        assert out[c].equals(demo[c])
    assert not out["income"].equals(demo["income"])
    assert set(res.changed) == {"income"}


def test_copies_save_and_reuse(tmp_path, demo) -> None:
    small = demo.head(800)
    syn = Synthesizer(seed=5, min_samples_leaf=10).fit(small, keys=KEYS, numeric=["income"])
    a, b = syn.generate(copies=2)
    assert a.height == b.height == 800
    assert not a.equals(b)
    path = syn.save(tmp_path / "synth.pkl")
    again = Synthesizer.load(path)
    assert again.generate(copies=1, seed=9)[0].equals(syn.generate(copies=1, seed=9)[0])
    assert syn.generate(n=100)[0].height == 100


def test_parametric_method(demo) -> None:
    small = demo.head(1000)
    out = synthesize(small, keys=["sex", "region"], numeric=["income"], method="parametric",
                     seed=3).data  # fmt: skip
    assert out.height == 1000
    assert abs(out["income"].mean() / small["income"].mean() - 1) < 0.2


def test_errors(demo) -> None:
    with pytest.raises(ParameterError, match="not fitted"):
        Synthesizer().generate()
    with pytest.raises(ParameterError, match="visit_sequence"):
        Synthesizer(synthesize=["sex"], visit_sequence=["region"]).fit(demo, keys=KEYS)
    md = Microdata(demo.head(200), keys=KEYS)
    with pytest.raises(ParameterError, match="'min_samples_leaf' parameter of Synthesis"):
        Synthesis(min_samples_leaf=0).apply(md)
    with pytest.raises(ParameterError, match="'method' parameter of Synthesis"):
        Synthesis(method="gan").apply(md)
    with pytest.raises(ColumnError, match="'visit_sequence' parameter of Synthesis"):
        Synthesis(synthesize=["sex"], visit_sequence=["sexx"]).apply(md)
    syn = Synthesizer(synthesize=["sex"], method="parametric", seed=1).fit(md)
    syn.method = "cart"  # changed after fitting: fit again first
    with pytest.raises(ParameterError, match="fit"):
        syn.generate()


def test_predictor_levels_are_those_of_the_fit() -> None:
    region = ["b"] * 195 + ["c"] * 200 + ["a"] * 5
    y = [100.0] * 195 + [200.0] * 200 + [0.0] * 5
    df = pl.DataFrame({"region": region, "y": y})
    syn = Synthesizer(synthesize=["y"], seed=1).fit(df, keys=["region"])
    out = syn.generate(n=300, seed=3)[0]
    means = dict(out.group_by("region").agg(pl.col("y").mean()).iter_rows())
    assert means["b"] == pytest.approx(100.0)
    assert means["c"] == pytest.approx(200.0)


@pytest.mark.parametrize("method", ["cart", "parametric"])
def test_missing_values_of_a_numeric_predictor(method: str) -> None:
    # the predictor's missingness carries information: y is 1000 where hours is missing
    rng = np.random.default_rng(4)
    n = 600
    hours = rng.uniform(0, 60, n)
    missing = rng.random(n) < 0.3
    y = np.where(missing, 1000.0, 10 * hours) + rng.normal(0, 5, n)
    df = pl.DataFrame(
        {"hours": np.where(missing, np.nan, hours), "y": y, "sex": rng.integers(1, 3, n)}
    )
    df = df.with_columns(pl.col("hours").fill_nan(None))
    md = Microdata(df, keys=["sex"], numeric=["hours", "y"])
    synth = Synthesis(synthesize=["y"], method=method, seed=2)
    result = synth.apply(md)
    synth.verify(md, result)
    out = result.data
    assert out["hours"].equals(df["hours"])  # the predictor is kept as it was
    assert out.filter(pl.col("hours").is_null())["y"].mean() == pytest.approx(1000.0, rel=0.02)
    observed = df.filter(pl.col("hours").is_not_null())["y"].mean()
    assert out.filter(pl.col("hours").is_not_null())["y"].mean() == pytest.approx(
        observed, rel=0.05
    )
    assert synth.apply(md).data.equals(out)
    # every value missing, and an infinite value
    empty = df.with_columns(hours=pl.lit(None, dtype=pl.Float64))
    Synthesis(synthesize=["y"], method=method, seed=2).apply(Microdata(empty, numeric=["y"]))
    infinite = df.with_columns(hours=pl.col("hours").fill_null(float("inf")))
    with pytest.raises(DataError, match="'hours' has infinite values"):
        Synthesis(synthesize=["y"], method=method, seed=2).apply(
            Microdata(infinite, numeric=["hours", "y"])
        )
