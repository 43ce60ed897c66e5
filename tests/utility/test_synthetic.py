"""Propensity-score MSE (pMSE) of synthetic files."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit import Microdata
from sdckit.datasets import load_demo
from sdckit.errors import ColumnError
from sdckit.masking import synthesize
from sdckit.utility import PropensityMSEResult, propensity_mse

KEYS = ["region", "sex", "age_group", "marital_status", "education"]


@pytest.fixture(scope="module")
def demo() -> pl.DataFrame:
    return load_demo().head(3000).select([*KEYS, "income", "hours_worked", "weight"])


def test_pmse_of_a_synthetic_file(demo) -> None:
    md = Microdata(demo, keys=KEYS, numeric=["income", "hours_worked"])
    syn = synthesize(md, seed=2).data
    util = propensity_mse(demo, syn, [*KEYS, "income"])
    assert isinstance(util, PropensityMSEResult)
    assert 0 <= util.pmse < 0.25 * 0.25  # far from a perfectly separable file
    shuffled = demo.with_columns(pl.Series("income", np.random.default_rng(0).permutation(
        demo["income"].to_numpy())))  # fmt: skip
    bad = propensity_mse(demo, shuffled.with_columns(pl.col("income") * 3), [*KEYS, "income"])
    assert util.pmse < bad.pmse
    assert bad.pmse_ratio > util.pmse_ratio


def test_null_expectation_and_result() -> None:
    o = pl.DataFrame({"a": [1, 2, 1, 2, 1, 2], "b": ["x", "x", "y", "y", "x", "y"]})
    s = o.head(3)
    res = propensity_mse(Microdata(o), s, ["a", "b"])
    # k = 4 indicator columns + intercept, c = 3 / 9
    c = 3 / 9
    assert res.pmse_null == pytest.approx(4 * (1 - c) ** 2 * c / 9)
    assert res.pmse_ratio == pytest.approx(res.pmse / res.pmse_null)
    assert (res.n_original, res.n_synthetic, res.variables) == (6, 3, ("a", "b"))
    text = str(res.summary())
    assert "pMSE ratio" in text and "synthetic records" in text
    with pytest.raises(AttributeError):
        res.pmse = 0.0  # type: ignore[misc]
    with pytest.raises(ColumnError, match="'c'"):
        propensity_mse(o, s, ["a", "c"])
    with pytest.raises(ColumnError):
        propensity_mse(o, s, [])
