"""Log-linear model risk: closed form and IPF against a Poisson GLM, tau1 and tau2."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.risk.loglinear import loglinear_risk


def _data(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = np.where(rng.random(n) < 0.5, (a + b) % 4, rng.integers(0, 4, n))
    return pl.DataFrame({"a": a, "b": b, "c": c})


def _glm_fitted(df: pl.DataFrame, formula_terms: list[tuple[str, ...]]) -> np.ndarray:
    """Poisson GLM over the full grid (statsmodels), evaluated at each record's cell."""
    levels = [sorted(df[c].unique().to_list()) for c in df.columns]
    grid = pd.DataFrame(list(itertools.product(*levels)), columns=df.columns)
    counts = df.to_pandas().value_counts().rename("count").reset_index()
    grid = grid.merge(counts, how="left", on=list(df.columns)).fillna({"count": 0})
    parts = [np.ones((len(grid), 1))]
    for term in formula_terms:
        dummies = pd.get_dummies(
            grid[list(term)].astype(str).agg("_".join, axis=1), drop_first=True
        )
        parts.append(dummies.to_numpy(dtype=float))
    X = np.hstack(parts)
    fit = sm.GLM(grid["count"].to_numpy(), X, family=sm.families.Poisson()).fit(tol=1e-12)
    grid["mu"] = fit.fittedvalues
    merged = df.to_pandas().merge(grid, how="left", on=list(df.columns))
    return merged["mu"].to_numpy()


def test_main_effects_by_hand() -> None:
    df = pl.DataFrame({"a": [0, 0, 0, 1, 1, 2], "b": [0, 1, 1, 0, 1, 0]})
    res = loglinear_risk(df, keys=["a", "b"], population_size=60)
    mu = np.array([1.5, 1.5, 1.5, 1.0, 1.0, 0.5])
    np.testing.assert_allclose(res.fitted, mu)
    unique = np.array([True, False, False, True, True, True])
    v = 0.9 * mu / 0.1
    np.testing.assert_allclose(res.prob_population_unique, np.where(unique, np.exp(-v), 0))
    assert res.tau1 == pytest.approx(np.exp(-v[unique]).sum())
    assert res.tau2 == pytest.approx(((1 - np.exp(-v)) / v)[unique].sum())
    assert np.isnan(res.expected_inverse_frequency[1])
    assert res.method == "closed form"
    assert res.formula() == "[a][b]"


@pytest.mark.filterwarnings("ignore:The design matrix is rank-deficient")
@pytest.mark.parametrize(
    ("model", "glm_terms", "method"),
    [
        ("main_effects", [("a",), ("b",), ("c",)], "closed form"),
        ([["a", "b"], ["b", "c"]], [("a",), ("b",), ("c",), ("a", "b"), ("b", "c")], "closed form"),
        (
            "two_way",
            [("a",), ("b",), ("c",), ("a", "b"), ("a", "c"), ("b", "c")],
            "ipf",
        ),
    ],
)
def test_fit_equals_poisson_glm(model: object, glm_terms: list, method: str) -> None:
    df = _data(400, 1)
    res = loglinear_risk(df, keys=["a", "b", "c"], model=model, population_size=8000)
    assert res.method == method
    np.testing.assert_allclose(res.fitted, _glm_fitted(df, glm_terms), rtol=1e-6)


def test_weights_give_cell_sampling_fractions() -> None:
    df = pl.DataFrame(
        {"a": [0, 0, 1, 1, 2], "b": [0, 0, 1, 0, 1], "w": [10.0, 30.0, 5.0, 20.0, 40.0]}
    )
    res = loglinear_risk(df, keys=["a", "b"], weight="w")
    assert res.population_size == 105
    np.testing.assert_allclose(res.sampling_fraction, [2 / 40, 2 / 40, 1 / 5, 1 / 20, 1 / 40])
    lam = res.fitted / res.sampling_fraction
    expected = np.where(res.fk == 1, np.exp(-(1 - res.sampling_fraction) * lam), 0)
    np.testing.assert_allclose(res.prob_population_unique, expected)


def test_large_non_decomposable_model_is_refused_and_frame() -> None:
    df = _data(200, 2)
    with pytest.raises(InfeasibleError, match="max_cells"):
        loglinear_risk(df, keys=["a", "b", "c"], model="two_way", population_size=900, max_cells=10)
    with pytest.raises(ParameterError, match="model"):
        loglinear_risk(df, keys=["a", "b", "c"], model="three_way", population_size=900)
    with pytest.raises(ParameterError, match="not a key"):
        loglinear_risk(df, keys=["a", "b", "c"], model=[["a", "z"]], population_size=900)
    pdf = df.to_pandas()
    pdf.index = pd.RangeIndex(100, 300)
    res = loglinear_risk(pdf, keys=["a", "b", "c"], model=[["a", "b"]], population_size=900)
    assert res.terms == (("a", "b"), ("c",))
    frame = res.to_frame()
    assert frame.index.equals(pdf.index)
    assert "tau1" in str(res.summary())


def test_saturated_model_gives_observed_counts() -> None:
    df = _data(300, 3)
    res = loglinear_risk(df, keys=["a", "b", "c"], model=[["a", "b", "c"]], population_size=3000)
    np.testing.assert_allclose(res.fitted, res.fk)
