"""The cell key method: record keys, ptable by maximum entropy, consistent perturbation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.tables import cell_key_counts, count_ptable, record_keys


@pytest.fixture(scope="module")
def ptable():
    return count_ptable(D=3, V=1.5, js=1, pstay=0.5)


def test_ptable_rows(ptable) -> None:
    f = ptable.frame
    assert f.filter(pl.col("i") == 0).select("j", "p").rows() == [(0, 1.0)]
    assert ptable.max_i == 3 + 1 + 1
    stats = f.group_by("i").agg(
        pl.col("p").sum().alias("total"),
        (pl.col("p") * pl.col("v")).sum().alias("mean"),
        (pl.col("p") * pl.col("v") ** 2).sum().alias("var"),
        pl.col("p_int_ub").max().alias("last"),
    )
    assert stats["total"].to_numpy() == pytest.approx(1.0)
    assert np.abs(stats["mean"].to_numpy()).max() < 1e-6
    assert stats["var"].max() <= 1.5 + 1e-6
    assert stats["last"].to_numpy() == pytest.approx(1.0)
    assert f.filter(pl.col("j") == 1).height == 0  # js = 1: a published 1 never occurs
    big = f.filter(pl.col("i") == ptable.max_i).sort("v")
    p = big["p"].to_numpy()
    v = big["v"].to_numpy()
    assert big["v"].to_list() == [-3, -2, -1, 0, 1, 2, 3]
    assert np.all(np.diff(p[v <= 0]) >= -1e-9) and np.all(np.diff(p[v >= 0]) <= 1e-9)
    assert p[v == 0][0] >= 0.5 - 1e-6
    assert p == pytest.approx(p[::-1], abs=1e-5)  # symmetric for large counts
    assert ptable.summary().to_dict()["largest variance"] <= 1.5 + 1e-6


def test_record_keys_reproducible() -> None:
    df = pl.DataFrame({"id": np.arange(1000), "g": np.arange(1000) % 3})
    k = record_keys(df, columns="id", seed=5)
    assert np.array_equal(k, record_keys(df, columns="id", seed=5))
    assert not np.array_equal(k, record_keys(df, columns="id", seed=6))
    assert np.all((k >= 0) & (k < 1))
    assert np.allclose(np.round(k * 1e8), k * 1e8, rtol=0, atol=1e-6)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1)
    again = record_keys(shuffled, columns="id", seed=5)
    assert np.array_equal(np.sort(again), np.sort(k))
    assert abs(k.mean() - 0.5) < 0.05
    strings = record_keys(df.with_columns(pl.col("id").cast(pl.String)), columns="id")
    assert len(np.unique(strings)) == 1000


def test_same_cell_same_perturbation_across_tables(ptable) -> None:
    rng = np.random.default_rng(0)
    df = pl.DataFrame(
        {
            "id": np.arange(600),
            "g": rng.choice(["a", "b", "c"], 600),
            "h": rng.choice(["x", "y", "z", "w"], 600),
        }
    )
    two = cell_key_counts(df, ["g", "h"], ptable, key_columns="id", seed=9).to_frame()
    one = cell_key_counts(df, ["g"], ptable, key_columns="id", seed=9).to_frame()
    margin = two.filter(pl.col("h") == "Total").select("g", "cell_key", "perturbed")
    assert margin.sort("g").rows() == one.select("g", "cell_key", "perturbed").sort("g").rows()


def test_perturbed_counts(ptable) -> None:
    rng = np.random.default_rng(1)
    n = 3000
    df = pl.DataFrame(
        {
            "id": np.arange(n),
            "g": rng.integers(0, 60, n),
            "h": rng.integers(0, 40, n),
            "w": rng.uniform(1, 3, n),
        }
    )
    res = cell_key_counts(df, ["g", "h"], ptable, key_columns="id")
    orig = res.table.n_contributors
    pert = res.perturbed
    assert np.all(pert[orig == 0] == 0)
    assert not np.any(pert == 1)  # js = 1
    assert np.all(np.abs(pert - orig) <= 3)
    assert abs(res.deviation.mean()) < 0.1  # zero-mean noise over ~2,500 cells
    assert res.summary().to_dict()["cells changed"] > 0
    weighted = cell_key_counts(df, ["g", "h"], ptable, key_columns="id", weight="w")
    cell = int(np.flatnonzero(orig > 5)[0])
    mean_w = weighted.table.weights[cell] / orig[cell]
    assert weighted.perturbed[cell] == pytest.approx((orig[cell] + res.deviation[cell]) * mean_w)
    keyed = df.with_columns(pl.Series("rk", record_keys(df, columns="id")))
    same = cell_key_counts(keyed, ["g", "h"], ptable, record_key="rk")
    assert np.array_equal(same.perturbed, res.perturbed)
    with pytest.raises(ParameterError):
        cell_key_counts(df, ["g"], ptable, record_key="w")
