"""Marginal-preserving swapping: every clique margin of the model is kept."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError, VerificationError
from sdckit.masking._marginal_swap import MarginalPreservingSwap, marginal_swap, swap_sides
from sdckit.risk.graphical import DecomposableModel, decomposable_risk, random_chordal_graph

KEYS = ["a", "b", "c", "d"]


def _margins(frame: pl.DataFrame, clique: tuple[str, ...]) -> pl.DataFrame:
    return frame.group_by(list(clique)).len().sort(list(clique))


def _condition_holds(x: dict, y: dict, side: tuple[str, ...], cliques: tuple) -> bool:
    """methods.md M5.3: x_{C&T} = y_{C&T} or x_{C-T} = y_{C-T} for every clique C."""
    for clique in cliques:
        inside = [v for v in clique if v in side]
        outside = [v for v in clique if v not in side]
        if any(x[v] != y[v] for v in inside) and any(x[v] != y[v] for v in outside):
            return False
    return True


@given(
    st.integers(8, 60),
    st.integers(0, 10_000),
    st.lists(st.integers(2, 4), min_size=4, max_size=4),
)
def test_swapping_keeps_every_clique_margin(n: int, seed: int, cards: list[int]) -> None:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({k: rng.integers(0, d, n) for k, d in zip(KEYS, cards, strict=True)})
    graph = random_chordal_graph(4, seed, density=0.6)
    model = DecomposableModel(tuple(KEYS), frozenset(tuple(sorted(e)) for e in graph.edges))
    res = marginal_swap(
        df, keys=KEYS, model=model, threshold=0.0, population_size=50 * n, seed=seed
    )
    out = res.microdata.frame
    for clique in model.cliques:
        assert _margins(df, clique).equals(_margins(out, clique))
    details = res.details
    assert set(details["swapped"]) | set(details["not_swappable"]) <= set(details["risky"])
    touched = details["swapped"] + details["partners"]
    assert len(touched) == len(set(touched))
    rows = df.to_dicts()
    for i, j, side in zip(
        details["swapped"], details["partners"], details["swapped_variables"], strict=True
    ):
        assert _condition_holds(rows[i], rows[j], side, model.cliques)
        assert any(rows[i][v] != rows[j][v] for v in side)
        assert any(rows[i][v] != rows[j][v] for v in KEYS if v not in side)
        for v in KEYS:
            expected = rows[j][v] if v in side else rows[i][v]
            assert out.row(i, named=True)[v] == expected
    assert res.n_changed_records == 2 * len(details["swapped"])


def test_swap_sides_of_a_chain_and_a_disconnected_model() -> None:
    chain = DecomposableModel.from_cliques(KEYS, [("a", "b"), ("b", "c"), ("c", "d")])
    assert swap_sides(chain) == [
        ((1,), (0,)),
        ((2,), (3,)),
        ((1,), (2, 3)),
        ((2,), (0, 1)),
    ]
    split = DecomposableModel.from_cliques(KEYS, [("a", "b"), ("c", "d")])
    assert swap_sides(split) == [((), (0, 1)), ((), (2, 3))]
    assert swap_sides(DecomposableModel.saturated(KEYS)) == []


def test_closest_partner_by_user_distance() -> None:
    # record 0 is the risky one; records 1 and 2 agree with it on b and differ on a and c
    df = pl.DataFrame(
        {"a": [0, 1, 2, 3, 3], "b": [0, 0, 0, 1, 1], "c": [0, 1, 5, 2, 2], "w": [9.0] * 5}
    )
    md = Microdata(df, keys=["a", "b", "c"], weight="w")

    def far_from_c(record: pl.DataFrame, candidates: pl.DataFrame) -> np.ndarray:
        return np.abs(candidates["c"].to_numpy() - record["c"][0]).astype(float)

    model = [("a", "b"), ("b", "c")]
    res = marginal_swap(md, model=model, threshold=0.0, max_records=1, distance=far_from_c)
    assert res.details["risky"] == [0]
    assert res.details["partners"] == [1]
    inverted = marginal_swap(
        md, model=model, threshold=0.0, max_records=1, distance=lambda r, c: -far_from_c(r, c)
    )
    assert inverted.details["partners"] == [2]


def test_not_swappable_and_parameters() -> None:
    df = pl.DataFrame({"a": [0, 1, 2, 2], "b": [0, 1, 1, 1]})
    res = marginal_swap(df, keys=["a", "b"], model="saturated", threshold=0.0, population_size=40)
    assert res.details["swapped"] == []
    assert res.details["not_swappable"] == [0, 1]
    assert res.n_changed_records == 0
    with pytest.raises(ParameterError, match="distance"):
        marginal_swap(
            df, keys=["a", "b"], model="independence", distance="euclid", population_size=40
        )
    with pytest.raises(ParameterError, match="threshold"):
        marginal_swap(df, keys=["a", "b"], model="independence", threshold=2.0, population_size=40)
    with pytest.raises(ColumnError, match=r"'model' parameter .* 'z'"):
        marginal_swap(df, keys=["a", "b"], model=[["a", "z"]], population_size=40)
    with pytest.raises(ParameterError, match="'model' parameter"):
        marginal_swap(df, keys=["a", "b"], model="chain", population_size=40)
    # a custom distance function and an empty list of cliques (the independence model)
    res = marginal_swap(df, keys=["a", "b"], model=[], threshold=0.0, population_size=40,
                        distance=lambda r, c: np.zeros(c.height))  # fmt: skip
    assert (
        res.details["model"]
        == marginal_swap(
            df, keys=["a", "b"], model="independence", threshold=0.0, population_size=40
        ).details["model"]
    )


def test_verify_detects_a_changed_margin() -> None:
    method, md = MarginalPreservingSwap.contract_example()
    result = method.apply(md)
    method.verify(md, result)
    broken = md.frame.with_columns(pl.col("c").reverse())
    tampered = dataclasses.replace(result, microdata=md.with_frame(broken))
    with pytest.raises(VerificationError, match="MarginalPreservingSwap: the margin b x c"):
        method.verify(md, tampered)


def test_threshold_selects_the_riskiest_first() -> None:
    rng = np.random.default_rng(5)
    df = pl.DataFrame({k: rng.integers(0, 3, 80) for k in KEYS})
    model = [("a", "b"), ("b", "c"), ("c", "d")]
    all_risky = marginal_swap(
        df, keys=KEYS, model=model, threshold=0.0, population_size=800, seed=1
    )
    top = marginal_swap(
        df, keys=KEYS, model=model, threshold=0.0, max_records=3, population_size=800, seed=1
    )
    assert top.details["risky"] == all_risky.details["risky"][:3]
    risk = decomposable_risk(df, keys=KEYS, model=model, population_size=800).risk
    ordered = risk[all_risky.details["risky"]]
    assert np.all(np.diff(ordered) <= 0)
    assert len(ordered) == int(np.count_nonzero(risk > 0))


def test_pattern_shortcut_equals_a_user_hamming_distance() -> None:
    rng = np.random.default_rng(8)
    df = pl.DataFrame({k: rng.integers(0, 3, 120) for k in KEYS})
    model = [("a", "b"), ("b", "c"), ("b", "d")]

    def hamming(record: pl.DataFrame, candidates: pl.DataFrame) -> np.ndarray:
        return sum((candidates[k] != record[k][0]).to_numpy().astype(float) for k in KEYS)

    common = {"keys": KEYS, "model": model, "threshold": 0.0, "population_size": 1200, "seed": 4}
    default = marginal_swap(df, **common)
    user = marginal_swap(df, distance=hamming, **common)
    assert default.details == user.details
    assert len(default.details["swapped"]) > 5
    assert default.microdata.frame.equals(user.microdata.frame)
