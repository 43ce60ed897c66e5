"""Minimal unsafe combinations: hand examples, agreement with SUDA2 and with brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ColumnError, ParameterError
from sdckit.risk._frequencies import frequencies
from sdckit.risk.suda import suda2
from sdckit.risk.unsafe import minimal_unsafe_combinations

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def brute_force_unsafe(values: np.ndarray, k: int) -> list[set[frozenset]]:
    """Minimal sets with wildcard frequency below k, by definition (all proper subsets checked)."""
    n, m = values.shape

    def freq(i: int, cols: tuple[int, ...]) -> int:
        sub = values[:, cols]
        own = values[i, cols]
        match = (sub == own) | (sub < 0) | (own < 0)
        return int(np.all(match, axis=1).sum())

    out: list[set[frozenset]] = [set() for _ in range(n)]
    for i in range(n):
        for s in range(1, m + 1):
            for cols in itertools.combinations(range(m), s):
                if freq(i, cols) >= k:
                    continue
                proper = (sub for r in range(1, s) for sub in itertools.combinations(cols, r))
                if all(freq(i, sub) >= k for sub in proper):
                    out[i].add(frozenset(cols))
    return out


@st.composite
def small_keys(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(4, 16))
    m = draw(st.integers(1, 4))
    cells = draw(st.lists(st.integers(-1, 2), min_size=n * m, max_size=n * m))
    values = np.array(cells, dtype=np.int64).reshape(n, m)
    values[0, :] = np.maximum(values[0, :], 0)
    return values


def _frame(values: np.ndarray) -> tuple[pl.DataFrame, list[str]]:
    keys = [f"v{j}" for j in range(values.shape[1])]
    frame = pl.DataFrame(
        {key: [None if x < 0 else int(x) for x in values[:, j]] for j, key in enumerate(keys)},
        schema=dict.fromkeys(keys, pl.Int64),
    )
    return frame, keys


def _as_sets(res, keys: list[str]) -> list[set[frozenset]]:
    index = {name: j for j, name in enumerate(keys)}
    return [
        {frozenset(index[v] for v in combo) for combo in res.combinations_of(i)}
        for i in range(res.n_records)
    ]


def test_hand_example() -> None:
    df = pl.DataFrame(
        {
            "sex": ["m", "m", "f", "f", "m", "f"],
            "region": ["a", "b", "a", "b", "a", "a"],
            "age": [1, 1, 1, 1, 2, 2],
        }
    )
    res = minimal_unsafe_combinations(df, keys=["sex", "region", "age"])
    assert res.combinations_of(1) == [("sex", "region")]
    assert res.combinations_of(3) == [("sex", "region")]
    assert res.combinations_of(4) == [("sex", "age")]
    assert res.combinations_of(0) == [("sex", "region", "age")]
    assert res.risky_records.tolist() == [0, 1, 2, 3, 4, 5]
    k3 = minimal_unsafe_combinations(df, keys=["sex", "region", "age"], k=3)
    # region=b and age=2 occur twice; sex and every other single value at least 3 times
    assert k3.combinations_of(1) == [("region",), ("sex", "age")]
    assert k3.combinations_of(4) == [("age",), ("sex", "region")]
    assert k3.combinations_of(0) == [("sex", "region"), ("sex", "age"), ("region", "age")]
    assert k3.combination_counts == {
        ("sex", "region"): 4,
        ("sex", "age"): 4,
        ("region",): 2,
        ("age",): 2,
        ("region", "age"): 2,
    }
    assert k3.variable_counts == {"sex": 6, "region": 6, "age": 6}
    assert k3.summary().to_dict()["combinations of size 2"] == 10


def test_k2_equals_suda_msus(shared_data: Path) -> None:
    data = pl.read_csv(shared_data / "testdata.csv", null_values="NA")
    unsafe = minimal_unsafe_combinations(data, keys=TESTDATA_KEYS)
    msus = suda2(data, keys=TESTDATA_KEYS)
    assert len(unsafe.record) == msus.n_msus == 235
    np.testing.assert_array_equal(unsafe.record, msus.msu_records)
    np.testing.assert_array_equal(unsafe.mask, msus.msu_masks)
    assert len(unsafe.risky_records) == 157


@pytest.mark.parametrize("k", [3, 5])
def test_testdata_k_anonymity_violators(shared_data: Path, k: int) -> None:
    data = pl.read_csv(shared_data / "testdata.csv", null_values="NA")
    res = minimal_unsafe_combinations(data, keys=TESTDATA_KEYS, k=k)
    fk = frequencies(data, keys=TESTDATA_KEYS).fk
    # README: 281 / 458 records violate 3- / 5-anonymity; each has a minimal unsafe set
    np.testing.assert_array_equal(res.below_k, fk < k)
    assert int(res.below_k.sum()) == {3: 281, 5: 458}[k]
    assert len(res.risky_records) == int(res.below_k.sum())
    values = data.select(TESTDATA_KEYS).to_numpy()
    for i in res.risky_records[:40]:
        for combo in res.combinations_of(int(i)):
            cols = [TESTDATA_KEYS.index(c) for c in combo]
            assert np.all(values[:, cols] == values[i, cols], axis=1).sum() < k
            for j in cols:
                sub = [c for c in cols if c != j]
                assert np.all(values[:, sub] == values[i, sub], axis=1).sum() >= k


@given(small_keys(), st.integers(2, 4))
def test_equals_brute_force_with_wildcards(values: np.ndarray, k: int) -> None:
    frame, keys = _frame(values)
    res = minimal_unsafe_combinations(frame, keys=keys, k=k)
    assert _as_sets(res, keys) == brute_force_unsafe(values, k)
    fk = frequencies(frame, keys=keys).fk
    np.testing.assert_array_equal(res.below_k, fk < k)
    # below k on all keys <=> some minimal unsafe combination (n >= k, so never the empty set)
    np.testing.assert_array_equal(res.risky_records, np.flatnonzero(res.below_k))


@given(small_keys())
def test_k2_equals_suda_msus_with_wildcards(values: np.ndarray) -> None:
    # both treat a missing value as matching any value: k = 2 gives suda2's wildcard MSUs
    frame, keys = _frame(values)
    unsafe = minimal_unsafe_combinations(frame, keys=keys)
    msus = suda2(frame, keys=keys, missing="wildcard")
    np.testing.assert_array_equal(unsafe.record, msus.msu_records)
    np.testing.assert_array_equal(unsafe.mask, msus.msu_masks)
    fk = frequencies(frame, keys=keys).fk
    assert msus.sample_uniques == int(np.sum(fk == 1)) == int(unsafe.below_k.sum())
    assert msus.pair_records == int(np.sum(fk == 2))


@given(small_keys(), st.integers(1, 4))
def test_max_size_keeps_the_small_sets(values: np.ndarray, max_size: int) -> None:
    frame, keys = _frame(values)
    max_size = min(max_size, len(keys))
    full = _as_sets(minimal_unsafe_combinations(frame, keys=keys), keys)
    capped = _as_sets(minimal_unsafe_combinations(frame, keys=keys, max_size=max_size), keys)
    assert capped == [{a for a in sets if len(a) <= max_size} for sets in full]


@given(small_keys(), st.integers(2, 3), st.randoms(use_true_random=False))
def test_row_order_invariance(values: np.ndarray, k: int, rnd) -> None:
    perm = list(range(values.shape[0]))
    rnd.shuffle(perm)
    frame, keys = _frame(values)
    sets = _as_sets(minimal_unsafe_combinations(frame, keys=keys, k=k), keys)
    shuffled = _as_sets(minimal_unsafe_combinations(frame[perm], keys=keys, k=k), keys)
    assert shuffled == [sets[i] for i in perm]


def test_to_frame_and_summary() -> None:
    df = pd.DataFrame(
        {
            "sex": ["m", "m", "f", "f", "m"],
            "region": ["a", "b", "a", "b", "a"],
            "age": [1, 1, 1, 1, 2],
        },
        index=[10, 11, 12, 13, 14],
    )
    res = minimal_unsafe_combinations(df, keys=["sex", "region", "age"])
    out = res.to_frame()
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["record", "combination", "size"]
    assert out[out["record"] == 4]["combination"].tolist() == ["age"]
    assert out[out["record"] == 1]["combination"].tolist() == ["sex+region"]
    assert out["size"].tolist() == [len(c.split("+")) for c in out["combination"]]
    assert res.combinations[1] == [("sex", "region")]
    summary = res.summary().to_dict()
    assert summary["records with an unsafe combination"] == len(res.risky_records)
    assert summary["records with frequency < 2 on all keys"] == int(res.below_k.sum())
    assert "Minimal unsafe combinations" in str(res.summary())
    capped = minimal_unsafe_combinations(df, keys=["sex", "region", "age"], max_size=1)
    assert any("raise max_size" in note for note in capped.summary().notes)


def test_no_risky_records() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2], "b": [3, 3, 4, 4]})
    res = minimal_unsafe_combinations(df, keys=["a", "b"])
    assert len(res.record) == 0 and res.combinations == {}
    assert res.to_frame().height == 0
    assert res.summary().to_dict()["records with an unsafe combination"] == 0


def test_bad_input() -> None:
    df = pl.DataFrame({"a": [1, 2, 2], "b": [1, 1, 2]})
    with pytest.raises(ColumnError, match="keys"):
        minimal_unsafe_combinations(df)
    with pytest.raises(ParameterError, match="'k'"):
        minimal_unsafe_combinations(df, keys=["a", "b"], k=1)
    with pytest.raises(ParameterError, match="'k'"):
        minimal_unsafe_combinations(df, keys=["a", "b"], k=4)
    with pytest.raises(ParameterError, match="max_size"):
        minimal_unsafe_combinations(df, keys=["a", "b"], max_size=3)
    with pytest.raises(ParameterError, match="record"):
        minimal_unsafe_combinations(df, keys=["a", "b"]).combinations_of(-1)
