"""Continuous information loss: worked example E1 and properties."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ColumnError, DataError
from sdckit.utility import continuous_loss

X = pl.DataFrame({"sex": ["F", "M", "F"], "reg": [92, 75, 75], "age": [36, 41, 52],
                  "hours": [17, 35, 5]})  # fmt: skip
Y = pl.DataFrame({"sex": ["F", "F", "M"], "reg": [92, 75, 75], "age": [34, 48, 58],
                  "hours": [23, 35, 2]})  # fmt: skip


def test_worked_example_e1() -> None:
    res = continuous_loss(X, Y, numeric=["age", "hours"])
    # squared differences 4 + 49 + 36 + 36 + 0 + 9 = 134 (E1 prints 132 / 6 = 22, a slip)
    assert res.mse == pytest.approx(134 / 6)
    assert res.mae == pytest.approx(24 / 6)
    exact = (Fraction(2, 36) + Fraction(7, 41) + Fraction(6, 52) + Fraction(6, 17)
             + Fraction(0, 35) + Fraction(3, 5)) / 6  # fmt: skip
    assert exact == Fraction(263936, 1223235)
    assert res.mean_variation == pytest.approx(float(exact), rel=1e-12)
    s_age, s_hours = np.std([36, 41, 52], ddof=1), np.std([17, 35, 5], ddof=1)
    il1s = (np.array([2, 7, 6]) / s_age).sum() + (np.array([6, 0, 3]) / s_hours).sum()
    assert res.il1s_sum == pytest.approx(il1s / np.sqrt(2))
    assert res.il1s == pytest.approx(il1s / np.sqrt(2) / 6)


def test_identical_files_have_no_loss() -> None:
    res = continuous_loss(X, X, numeric=["age", "hours"])
    assert res.mse == 0 and res.sse_sst == 0 and res.eigen == pytest.approx(0, abs=1e-12)
    np.testing.assert_allclose(res.per_variable["variance_ratio"], 1.0)
    np.testing.assert_allclose(res.pca_angles_degrees, 0.0, atol=1e-5)


def test_sse_sst_of_group_means() -> None:
    x = pl.DataFrame({"a": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    y = pl.DataFrame({"a": [2.0, 2.0, 2.0, 11.0, 11.0, 11.0]})
    res = continuous_loss(x, y, numeric=["a"])
    sst = np.sum((x["a"].to_numpy() - 6.5) ** 2)
    assert res.sse_sst == pytest.approx(100 * 4 / sst)
    assert res.per_variable["variance_ratio"][0] == pytest.approx(
        np.var([2, 2, 2, 11, 11, 11]) / np.var([1, 2, 3, 10, 11, 12])
    )


def test_weighted_means() -> None:
    x = pl.DataFrame({"a": [1.0, 3.0, 5.0], "w": [1.0, 1.0, 2.0]})
    y = pl.DataFrame({"a": [2.0, 3.0, 5.0], "w": [1.0, 1.0, 2.0]})
    res = continuous_loss(x, y, numeric=["a"], weight="w")
    assert res.per_variable["bias"][0] == pytest.approx(0.25)


def test_missing_values_skipped() -> None:
    y = Y.with_columns(pl.Series("age", [34.0, None, 58.0]))
    res = continuous_loss(X, y, numeric=["age", "hours"])
    assert res.n_compared == 5 and res.n_missing == 1
    assert res.mae == pytest.approx((2 + 6 + 6 + 0 + 3) / 5)


def test_errors() -> None:
    with pytest.raises(ColumnError, match="not numeric"):
        continuous_loss(X, Y, numeric=["sex"])
    with pytest.raises(DataError, match="records"):
        continuous_loss(X, Y.head(2), numeric=["age"])
    with pytest.raises(ColumnError, match="No numeric variables"):
        continuous_loss(X, Y)


@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 2.0))
def test_properties(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(30, 3)) * [1, 10, 100]
    y = x + rng.normal(size=x.shape) * scale
    fx = pl.DataFrame(x, schema=["a", "b", "c"])
    fy = pl.DataFrame(y, schema=["a", "b", "c"])
    res = continuous_loss(fx, fy, numeric=["a", "b", "c"])
    assert res.mse >= 0 and res.mae >= 0 and res.mae**2 <= res.mse + 1e-12
    # rescaling both files does not change the scale-free measures
    res2 = continuous_loss(fx * 3.0, fy * 3.0, numeric=["a", "b", "c"])
    assert res2.sse_sst == pytest.approx(res.sse_sst)
    assert res2.il1s == pytest.approx(res.il1s)
    assert res2.mean_variation == pytest.approx(res.mean_variation)


def test_constant_variable_has_no_size_corrected_loss() -> None:
    x = pl.DataFrame({"a": [1.0, 1.0, 1.0, 1.0], "b": [1.0, 2.0, 3.0, 4.0]})
    y = pl.DataFrame({"a": [1.0, 2.0, 1.0, 1.0], "b": [1.0, 2.0, 3.0, 5.0]})
    res = continuous_loss(x, y, numeric=["a", "b"])
    assert np.isfinite(res.il1s)
    assert np.isnan(res.per_variable["il1s"][0])
    assert np.isnan(res.per_variable["variance_ratio"][0])
