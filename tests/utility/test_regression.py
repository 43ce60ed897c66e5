"""Regression comparison and confidence-interval overlap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.utility import ci_overlap, regression_comparison


def test_ci_overlap_values() -> None:
    assert ci_overlap([0], [2], [0], [2])[0] == 1.0
    assert ci_overlap([0], [2], [1], [3])[0] == pytest.approx(0.5)
    assert ci_overlap([0], [1], [2], [4])[0] == pytest.approx(0.5 * (-1 / 1 + -1 / 2))
    # one interval inside the other
    assert ci_overlap([0], [4], [1], [2])[0] == pytest.approx(0.5 * (1 / 4 + 1))


def test_linear_and_logistic() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    y = 1 + 2 * x + rng.normal(size=200)
    z = (y + rng.normal(size=200) > 1).astype(int)
    orig = pl.DataFrame({"x": x, "y": y, "z": z})
    prot = orig.with_columns(pl.col("x") + rng.normal(scale=0.3, size=200))
    res = regression_comparison(orig, prot, "y ~ x")
    assert res.coefficients["term"].to_list() == ["Intercept", "x"]
    assert res.coefficients["estimate_original"][1] == pytest.approx(2, abs=0.2)
    assert res.mean_overlap < 1
    assert regression_comparison(orig, orig, "z ~ x", family="logistic").mean_overlap == 1.0


def test_bad_formula() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(ParameterError, match="formula"):
        regression_comparison(df, df, "y x")
    with pytest.raises(ParameterError, match="could not be fitted"):
        regression_comparison(df, df, "y ~ nope")


def test_linear_intervals_use_t_quantiles() -> None:
    import statsmodels.formula.api as smf

    x = pl.DataFrame({"y": [1.0, 2.1, 2.9, 4.2, 5.1], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    res = regression_comparison(x, x, "y ~ x")
    ols = smf.ols("y ~ x", data=x.to_pandas()).fit().conf_int()
    assert res.coefficients["lower_original"][1] == pytest.approx(ols.loc["x", 0])
    assert res.coefficients["upper_original"][1] == pytest.approx(ols.loc["x", 1])
