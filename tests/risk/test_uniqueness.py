"""Whole-file population-uniqueness models: closed forms, fits and seeded simulations."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.risk.uniqueness import (
    ewens,
    pitman,
    pitman_probability,
    poisson_gamma,
    poisson_gamma_probability,
    population_uniqueness,
)


def _chinese_restaurant(n: int, theta: float, alpha: float, seed: int) -> np.ndarray:
    """Class labels of n draws from Pitman's two-parameter Chinese restaurant process."""
    rnd = random.Random(seed)
    labels: list[int] = []
    sizes: list[int] = []
    for m in range(n):
        k = len(sizes)
        if rnd.random() * (m + theta) < theta + k * alpha:
            sizes.append(1)
            labels.append(k)
            continue
        while True:  # class j with probability proportional to sizes[j] - alpha
            j = labels[rnd.randrange(m)]
            if rnd.random() * sizes[j] < sizes[j] - alpha:
                break
        sizes[j] += 1
        labels.append(j)
    return np.asarray(labels, dtype=np.int64)


def test_closed_forms_match_reference_values() -> None:
    # benchmarks.md A2: formula values of the verification script
    K, N, n, a = 2000, 200_000, 10_000, 0.05
    assert poisson_gamma_probability(a, 1 / (K * a), n, N) == pytest.approx(0.04347, abs=5e-6)
    assert pitman_probability(20, 0.0, 200, 1000) == pytest.approx(0.21492, abs=5e-6)
    assert pitman_probability(20, 0.0, 200, 1000) == pytest.approx(219 / 1019, rel=1e-12)
    assert pitman_probability(20, 0.3, 200, 1000) == pytest.approx(0.3410, abs=5e-5)
    assert pitman_probability(5, 0.6, 200, 1000) == pytest.approx(0.52889, abs=5e-6)
    assert pitman_probability(float("inf"), 0.0, 5, 10) == 1.0


def test_pitman_formula_against_seeded_simulation() -> None:
    theta, alpha, n, N = 5.0, 0.6, 200, 1000
    stay, total = 0, 0
    for rep in range(300):
        labels = _chinese_restaurant(N, theta, alpha, rep)
        sample_counts = np.bincount(labels[:n])
        pop_counts = np.bincount(labels, minlength=len(sample_counts))
        uniques = sample_counts == 1
        total += int(uniques.sum())
        stay += int((pop_counts[: len(sample_counts)][uniques] == 1).sum())
    assert stay / total == pytest.approx(pitman_probability(theta, alpha, n, N), abs=0.02)


def test_poisson_gamma_moments_by_hand() -> None:
    df = pl.DataFrame({"a": [1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8]})
    res = poisson_gamma(df, keys="a", population_size=120, n_cells=20)
    # counts 4,2,1*6; sum f^2 = 26; s2 = 26/20 - 0.6^2 = 0.94; beta = (20*0.94-12)/144
    beta = (20 * 0.94 - 12) / 144
    assert res.parameters["beta"] == pytest.approx(beta)
    assert res.parameters["alpha"] == pytest.approx(1 / (20 * beta))
    prob = ((1 + 12 * beta) / (1 + 120 * beta)) ** (1 / (20 * beta) + 1)
    assert res.prob_population_unique == pytest.approx(prob)
    assert res.expected_population_uniques == pytest.approx(6 * prob)
    frame = res.to_frame()
    assert frame.columns == ["fk", "sample_unique", "prob_population_unique"]
    assert frame["prob_population_unique"].to_list()[:6] == [0.0] * 6
    assert "Poisson-Gamma" in str(res.summary()) or "poisson_gamma" in str(res.summary())


def test_poisson_gamma_underdispersion_gives_nan() -> None:
    df = pl.DataFrame({"a": [1, 2, 3, 4, 5, 6]})
    res = poisson_gamma(df, keys="a", population_size=60, n_cells=6)
    assert np.isnan(res.prob_population_unique)
    assert res.note


@pytest.mark.parametrize("method", ["moments", "ml"])
def test_poisson_gamma_recovers_simulated_parameters(method: str) -> None:
    rng = np.random.default_rng(3)
    K, N, n, a = 2000, 200_000, 10_000, 0.05
    beta = 1 / (K * a)
    pi = rng.gamma(a, beta, size=K)
    F = rng.poisson(N * pi)
    cells = np.repeat(np.arange(K), F)
    sample = rng.choice(cells, size=n, replace=False)
    pop_counts = np.bincount(cells, minlength=K)
    s_counts = np.bincount(sample, minlength=K)
    truth = int(np.sum((s_counts == 1) & (pop_counts == 1)))
    df = pl.DataFrame({"cell": sample})
    res = poisson_gamma(df, keys="cell", population_size=int(F.sum()), n_cells=K, method=method)
    assert res.parameters["alpha"] == pytest.approx(a, rel=0.3)
    assert res.sample_uniques == int(np.sum(s_counts == 1))
    expected = res.sample_uniques * poisson_gamma_probability(a, beta, n, int(F.sum()))
    assert res.expected_population_uniques == pytest.approx(expected, rel=0.5)
    assert abs(res.expected_population_uniques - truth) < 4


def test_ewens_theta_solves_the_likelihood_equation() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3, 4, 4, 5, 6]})
    res = ewens(df, keys="a", population_size=80)
    theta = res.parameters["theta"]
    assert sum(theta / (theta + i) for i in range(8)) == pytest.approx(6, abs=1e-8)
    assert res.prob_population_unique == pytest.approx((8 + theta - 1) / (80 + theta - 1))
    assert res.sample_uniques == 4


def test_ewens_and_pitman_boundaries() -> None:
    all_unique = pl.DataFrame({"a": [1, 2, 3, 4]})
    assert ewens(all_unique, keys="a", population_size=10).prob_population_unique == 1.0
    assert pitman(all_unique, keys="a", population_size=10).note
    one_class = pl.DataFrame({"a": [1, 1, 1, 1]})
    res = ewens(one_class, keys="a", population_size=10)
    assert res.parameters["theta"] == 0.0
    assert res.expected_population_uniques == 0.0


def test_pitman_recovers_simulated_parameters() -> None:
    labels = _chinese_restaurant(4000, 20.0, 0.3, 11)
    res = pitman(pd.DataFrame({"k": labels}), keys="k", population_size=40_000)
    assert res.parameters["alpha"] == pytest.approx(0.3, abs=0.1)
    assert 8 < res.parameters["theta"] < 45
    # Pitman nests Ewens: its likelihood is at least as high, so alpha >= 0 is estimated
    ew = ewens(pd.DataFrame({"k": labels}), keys="k", population_size=40_000)
    assert res.prob_population_unique > ew.prob_population_unique


def test_population_size_from_weights_and_errors() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3], "w": [10.0, 10.0, 15.0, 5.0]})
    assert ewens(df, keys="a", weight="w").population_size == 40
    with pytest.raises(ParameterError, match="population_size"):
        ewens(df, keys="a")
    with pytest.raises(ParameterError, match="population_size"):
        pitman(df, keys="a", population_size=3)
    with pytest.raises(ParameterError, match="n_cells"):
        poisson_gamma(df, keys="a", population_size=40, n_cells=2)
    with pytest.raises(ParameterError, match="method"):
        poisson_gamma(df, keys="a", population_size=40, method="em")  # type: ignore[arg-type]
    both = population_uniqueness(df, keys="a", weight="w")
    assert set(both) == {"poisson_gamma", "poisson_gamma_ml", "ewens", "pitman"}


def test_poisson_gamma_formula_against_seeded_simulation() -> None:
    # benchmarks.md A2: Monte-Carlo 0.04357 vs formula 0.04347 (Bernoulli sampling)
    rng = np.random.default_rng(2026)
    K, N, n, a, reps = 2000, 200_000, 10_000, 0.05, 500
    beta = 1 / (K * a)
    pi = rng.gamma(a, beta, size=(reps, K))
    F = rng.poisson(N * pi)
    f = rng.binomial(F, n / N)
    unique = f == 1
    estimate = np.count_nonzero(unique & (F == 1)) / np.count_nonzero(unique)
    assert estimate == pytest.approx(poisson_gamma_probability(a, beta, n, N), abs=0.004)
