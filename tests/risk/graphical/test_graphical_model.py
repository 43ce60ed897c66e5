"""Closed-form fit of decomposable models, parameter counts, per-record risk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.risk.graphical import DecomposableModel, decomposable_risk, fit_decomposable

NAMES = ["A", "B", "C", "D"]
CARDS = (3, 2, 4, 3)


def _data(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 2
    c = (2 * b + rng.integers(0, 3, n)) % 4
    d = np.where(rng.random(n) < 0.6, c % 3, rng.integers(0, 3, n))
    return pl.DataFrame({"A": a, "B": b, "C": c, "D": d})


def _ipf(table: np.ndarray, margins: list[tuple[int, ...]], sweeps: int = 500) -> np.ndarray:
    """Plain iterative proportional fitting of a hierarchical model over the full table."""
    fitted = np.full(table.shape, table.sum() / table.size)
    axes = set(range(table.ndim))
    for _ in range(sweeps):
        for margin in margins:
            other = tuple(sorted(axes - set(margin)))
            target = table.sum(axis=other, keepdims=True)
            current = fitted.sum(axis=other, keepdims=True)
            fitted = fitted * np.divide(
                target, current, out=np.zeros_like(target), where=current > 0
            )
    return fitted


def _full_table(df: pl.DataFrame) -> np.ndarray:
    table = np.zeros(CARDS)
    np.add.at(table, tuple(df[c].to_numpy() for c in NAMES), 1.0)
    return table


@pytest.mark.parametrize(
    "cliques",
    [
        [("A", "B"), ("B", "C"), ("C", "D")],
        [("A",), ("B",), ("C",), ("D",)],
        [("A", "B", "C"), ("B", "C", "D")],
        [("A", "B"), ("B", "C"), ("B", "D")],
    ],
)
def test_closed_form_equals_ipf(cliques: list[tuple[str, ...]]) -> None:
    df = _data(300, 1)
    res = decomposable_risk(df, keys=NAMES, model=cliques, population_size=3000)
    table = _full_table(df)
    index = [tuple(NAMES.index(v) for v in c) for c in cliques]
    fitted = _ipf(table, index)
    cells = tuple(df[c].to_numpy() for c in NAMES)
    np.testing.assert_allclose(res.probability * 300, fitted[cells], rtol=1e-9, atol=1e-12)
    # maximised log-likelihood sum n log(m/n) equals the closed form
    mask = table > 0
    loglik = float(np.sum(table[mask] * np.log(fitted[mask] / 300)))
    assert res.fit.loglik == pytest.approx(loglik, rel=1e-9)


def test_parameter_counts_saturated_independence_chain() -> None:
    df = _data(2000, 2)  # every level of the 3x2x4x3 table is observed
    assert tuple(df[c].n_unique() for c in NAMES) == CARDS
    chain = fit_decomposable(df, keys=NAMES, model=[("A", "B"), ("B", "C"), ("C", "D")])
    assert chain.n_parameters == 19  # methods.md M5.2
    sat = fit_decomposable(df, keys=NAMES, model="saturated")
    assert sat.n_parameters == 3 * 2 * 4 * 3 - 1
    assert sat.deviance == pytest.approx(0.0, abs=1e-8)
    ind = fit_decomposable(df, keys=NAMES, model="independence")
    assert ind.n_parameters == 2 + 1 + 3 + 2
    assert ind.aic == pytest.approx(-2 * ind.loglik + 2 * 8)
    assert ind.bic == pytest.approx(-2 * ind.loglik + np.log(2000) * 8)
    # two-variable independence: (d1 - 1) + (d2 - 1)
    two = fit_decomposable(df, keys=["A", "C"], model="independence")
    assert two.n_parameters == 2 + 3


def test_observed_parameter_count_only_counts_non_empty_cells() -> None:
    df = pl.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "c": [0, 0, 1, 1]})
    sat_full = fit_decomposable(df, keys=["a", "b", "c"], model="saturated")
    sat_obs = fit_decomposable(df, keys=["a", "b", "c"], model="saturated", parameters="observed")
    assert sat_full.n_parameters == 7
    assert sat_obs.n_parameters == 3  # 4 observed cells - 1


def test_risk_formula_ranking_and_frame() -> None:
    df = _data(400, 3).with_columns(pl.Series("E", np.arange(400) % 7))
    keys = [*NAMES, "E"]
    model = DecomposableModel.from_cliques(keys, [("A", "B"), ("B", "C"), ("C", "D"), ("E",)])
    res = decomposable_risk(df, keys=keys, model=model, population_size=40_000)
    unique = res.fk == 1
    assert res.sample_uniques == int(unique.sum()) > 0
    expected = np.where(unique, (1 - res.probability) ** (40_000 - 400), 0.0)
    np.testing.assert_allclose(res.risk, expected, rtol=1e-10)
    np.testing.assert_allclose(
        res.risk_poisson, np.where(unique, np.exp(-39_600 * res.probability), 0.0)
    )
    assert res.expected_population_uniques == pytest.approx(expected.sum())
    ranking = res.ranking()
    assert ranking.height == res.sample_uniques
    assert np.all(np.diff(ranking["probability"].to_numpy()) >= 0)
    assert np.all(np.diff(ranking["risk"].to_numpy()) <= 1e-15)
    assert res.ranking(top=3).height == 3
    # probabilities of the distinct cells sum to at most one
    cells = df.select(keys).with_columns(pl.Series("p", res.probability)).unique(subset=keys)
    assert cells["p"].sum() <= 1 + 1e-12
    pdf = df.to_pandas()
    pdf.index = pd.Index([f"r{i}" for i in range(400)])
    frame = decomposable_risk(pdf, keys=keys, model=model, population_size=40_000).to_frame()
    assert list(frame.columns) == ["fk", "probability", "risk", "risk_poisson"]
    assert frame.index.equals(pdf.index)
    assert "expected population uniques" in str(res.summary())


def test_missing_values_are_a_level_and_census_case() -> None:
    df = pl.DataFrame({"a": [0, 0, None, 1], "b": [1, 1, 0, 0]})
    res = decomposable_risk(df, keys=["a", "b"], model="saturated", population_size=4)
    np.testing.assert_allclose(res.probability, [0.5, 0.5, 0.25, 0.25])
    np.testing.assert_allclose(res.risk, [0, 0, 1, 1])  # the file is the population


def test_bad_models_are_refused() -> None:
    df = _data(50, 4)
    with pytest.raises(ParameterError, match="not chordal"):
        fit_decomposable(df, keys=NAMES, model=[("A", "B"), ("B", "C"), ("C", "D"), ("A", "D")])
    with pytest.raises(ParameterError, match="not a key"):
        fit_decomposable(df, keys=NAMES, model=[("A", "X")])
    with pytest.raises(ParameterError, match="model"):
        fit_decomposable(df, keys=NAMES, model="complete")
    with pytest.raises(ParameterError, match="parameters"):
        fit_decomposable(df, keys=NAMES, parameters="some")  # type: ignore[arg-type]
