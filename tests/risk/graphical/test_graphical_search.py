"""Model search over decomposable models: local moves, restarts, exhaustive check."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from sdckit.microdata import Microdata
from sdckit.risk.graphical import (
    DecomposableModel,
    chordal_graphs,
    fit_decomposable,
    search_decomposable,
)
from sdckit.risk.graphical.model import _fit, margin_table

KEYS = ["v0", "v1", "v2", "v3", "v4"]


def _data(n: int, seed: int) -> pl.DataFrame:
    """Five variables from the decomposable model [v0,v1,v2][v2,v3][v1,v4]."""
    rng = np.random.default_rng(seed)
    v0 = rng.integers(0, 3, n)
    v1 = (v0 + (rng.random(n) < 0.3)) % 3
    v2 = np.where(rng.random(n) < 0.5, (v0 * v1) % 4, rng.integers(0, 4, n))
    v3 = np.where(rng.random(n) < 0.4, v2 % 2, rng.integers(0, 2, n))
    v4 = np.where(rng.random(n) < 0.3, v1, rng.integers(0, 3, n))
    return pl.DataFrame(dict(zip(KEYS, [v0, v1, v2, v3, v4], strict=True)))


@pytest.fixture(scope="module")
def exhaustive() -> tuple[pl.DataFrame, dict[frozenset[tuple[int, int]], float]]:
    df = _data(3000, 5)
    table = margin_table(Microdata(df, keys=KEYS))
    aic = {e: _fit(table, DecomposableModel(tuple(KEYS), e), "full").aic for e in chordal_graphs(5)}
    assert len(aic) == 822
    return df, aic


def test_search_finds_the_exhaustive_optimum(exhaustive: tuple) -> None:
    df, aic = exhaustive
    best_edges = min(aic, key=aic.__getitem__)
    res = search_decomposable(df, keys=KEYS, restarts=8, seed=1)
    assert res.best.aic == pytest.approx(aic[best_edges], rel=1e-12)
    assert res.best.model.edges == best_edges
    # the best few models are listed in order with their AIC
    values = [f.aic for f in res.models]
    assert values == sorted(values)
    assert len({f.model.edges for f in res.models}) == len(res.models) == 5
    for fit in res.models:
        assert fit.aic == pytest.approx(aic[fit.model.edges], rel=1e-12)
    # the exhaustive optimum is a fixed point of the local search
    again = search_decomposable(df, keys=KEYS, start=DecomposableModel(tuple(KEYS), best_edges))
    assert again.n_moves == 0
    assert again.best.model.edges == best_edges


def test_every_local_optimum_has_no_better_chordal_neighbour(exhaustive: tuple) -> None:
    df, aic = exhaustive
    res = search_decomposable(df, keys=KEYS, restarts=5, seed=3)
    for fit in res.local_optima:
        edges = fit.model.edges
        for pair in itertools.combinations(range(5), 2):
            neighbour = edges ^ {pair}
            if neighbour in aic:
                assert aic[neighbour] >= aic[edges] - 1e-9


def test_bic_and_max_moves_and_reproducibility(exhaustive: tuple) -> None:
    df, _ = exhaustive
    res = search_decomposable(df, keys=KEYS, criterion="bic")
    assert res.best.bic <= fit_decomposable(df, keys=KEYS).bic
    one = search_decomposable(df, keys=KEYS, max_moves=1)
    assert one.n_moves == 1
    a = search_decomposable(df, keys=KEYS, restarts=3, seed=9)
    b = search_decomposable(df, keys=KEYS, restarts=3, seed=9)
    assert a.to_frame().equals(b.to_frame())
    assert "best model" in str(a.summary())


def test_parallel_restarts_give_the_same_result(exhaustive: tuple) -> None:
    df, _ = exhaustive
    serial = search_decomposable(df, keys=KEYS, restarts=3, seed=4)
    parallel = search_decomposable(df, keys=KEYS, restarts=3, seed=4, n_jobs=2)
    assert serial.to_frame().equals(parallel.to_frame())
    assert [f.model.edges for f in serial.local_optima] == [
        f.model.edges for f in parallel.local_optima
    ]
