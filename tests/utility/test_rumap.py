"""R-U map: Pareto front, admissibility, seeds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.masking._pram import Pram
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.utility.rumap import pareto_front, ru_map


def test_pareto_front() -> None:
    risk = np.array([1.0, 0.5, 0.6, 0.2, 0.2])
    loss = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    assert pareto_front(risk, loss).tolist() == [True, True, False, True, False]


def test_ru_map_rank_swapping_grid() -> None:
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"x": rng.normal(size=300), "y": rng.normal(size=300)})
    grid = {f"p={p}": RankSwapping(p=p) for p in (1, 5, 25)}
    res = ru_map(df, grid, risk="record_linkage", loss="sse_sst", seeds=(1, 2),
                 max_risk=0.6, numeric=["x", "y"])  # fmt: skip
    pts = res.points
    assert pts["candidate"].to_list() == ["original", "p=1", "p=5", "p=25"]
    assert pts["risk"][0] == 1.0 and pts["loss"][0] == 0.0
    assert (pts["replicates"][1:] == 2).all()
    risks = pts["risk"].to_numpy()[1:]
    losses = pts["loss"].to_numpy()[1:]
    assert risks[0] > risks[1] > risks[2]  # a wider window lowers the linkage risk
    assert losses[0] < losses[1] < losses[2]  # and costs more information
    assert res.best == "p=5" or res.best == "p=25"
    assert "recommended" in str(res.summary())


def test_ru_map_categorical() -> None:
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"a": rng.integers(0, 5, 300), "b": rng.integers(0, 4, 300)})
    grid = [(f"pram {d}", Pram(min_diagonal=d)) for d in (0.95, 0.6)]
    res = ru_map(df, grid, risk="sample_uniques", loss="share_changed", keys=["a", "b"])
    assert res.points["loss"][1] < res.points["loss"][2]


def test_errors() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="Unknown risk measure"):
        ru_map(df, {"a": RankSwapping()}, risk="nope", numeric=["x"])
    with pytest.raises(ParameterError, match="at least one"):
        ru_map(df, {}, numeric=["x"])
