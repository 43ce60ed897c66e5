"""SUDA2: reference agreement with sdcMicro, hand examples, brute-force properties."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError
from sdckit.risk.suda import _candidate_counts, _Rows, suda2

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
FRANCDAT_KEYS = ["Key1", "Key2", "Key3", "Key4"]


def _read(shared_data: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(shared_data / name, null_values="NA")


# ------------------------------------------------------------------ brute force


def brute_force_msus(values: np.ndarray, max_size: int | None = None) -> list[set[frozenset]]:
    """MSUs by definition: unique on A (missing compared as a value, never part of A) and not
    unique on any proper subset of A (all of them checked)."""
    n, m = values.shape
    max_size = m if max_size is None else max_size
    unique: dict[tuple[int, ...], np.ndarray] = {}
    for s in range(1, max_size + 1):
        for cols in itertools.combinations(range(m), s):
            _, inverse, counts = np.unique(
                values[:, cols], axis=0, return_inverse=True, return_counts=True
            )
            usable = np.all(values[:, cols] >= 0, axis=1)
            unique[cols] = (counts[inverse.ravel()] == 1) & usable
    out: list[set[frozenset]] = [set() for _ in range(n)]
    for cols, flag in unique.items():
        proper = [sub for r in range(1, len(cols)) for sub in itertools.combinations(cols, r)]
        minimal = flag.copy()
        for sub in proper:
            minimal &= ~unique[sub]
        for i in np.flatnonzero(minimal):
            out[i].add(frozenset(cols))
    return out


def _result_msus(res, keys: list[str]) -> list[set[frozenset]]:
    index = {name: j for j, name in enumerate(keys)}
    return [
        {frozenset(index[v] for v in combo) for combo in res.msus(i)} for i in range(res.n_records)
    ]


@st.composite
def small_keys(draw: st.DrawFn, allow_missing: bool = True) -> np.ndarray:
    n = draw(st.integers(2, 18))
    m = draw(st.integers(1, 4))
    low = -1 if allow_missing else 0
    cells = draw(st.lists(st.integers(low, 2), min_size=n * m, max_size=n * m))
    values = np.array(cells, dtype=np.int64).reshape(n, m)
    values[0, :] = np.maximum(values[0, :], 0)  # no all-missing key
    return values


def _frame(values: np.ndarray) -> tuple[pl.DataFrame, list[str]]:
    keys = [f"v{j}" for j in range(values.shape[1])]
    frame = pl.DataFrame(
        {key: [None if x < 0 else int(x) for x in values[:, j]] for j, key in enumerate(keys)},
        schema=dict.fromkeys(keys, pl.Int64),
    )
    return frame, keys


# ------------------------------------------------------------------ sdcMicro reference


@pytest.mark.parametrize(
    ("name", "keys"), [("testdata", TESTDATA_KEYS), ("francdat", FRANCDAT_KEYS)]
)
@pytest.mark.parametrize(("suffix", "original"), [("", True), ("_ihsn", False)])
def test_matches_sdcmicro(
    shared_data: Path, name: str, keys: list[str], suffix: str, original: bool
) -> None:
    data = _read(shared_data, f"{name}.csv")
    ref = pl.read_csv(shared_data / "reference" / f"{name}_suda2{suffix}_sdcmicro.csv")
    res = suda2(data, keys=keys, original_scores=original)
    np.testing.assert_allclose(res.score, ref["score"].to_numpy(), rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.dis_score, ref["disScore"].to_numpy(), rtol=0, atol=1e-8)


def test_testdata_counts(shared_data: Path) -> None:
    res = suda2(_read(shared_data, "testdata.csv"), keys=TESTDATA_KEYS)
    # 157 sample uniques (data README); every one of them has an MSU
    assert res.sample_uniques == 157
    assert int(np.count_nonzero(res.score)) == 157
    assert res.msu_counts_by_size.tolist() == [1, 11, 94, 86, 35, 7, 1]
    assert res.n_msus == 235
    assert res.contributions.sum() >= 100  # every MSU credits all of its variables


def test_francdat_by_hand(shared_data: Path) -> None:
    res = suda2(_read(shared_data, "francdat.csv"), keys=FRANCDAT_KEYS)
    assert res.score.tolist() == [0, 0, 0, 8, 6, 4, 8, 0]
    assert res.msus(3) == [("Key1",), ("Key2", "Key4")]
    assert res.msus(4) == [("Key4",)]
    assert res.msus(5) == [("Key1", "Key4"), ("Key2", "Key4")]
    assert res.msus(0) == []
    assert res.msu_count.tolist() == [0, 0, 0, 2, 1, 2, 2, 0]
    assert res.msu_counts_by_size.tolist() == [3, 4, 0, 0]
    # record 3: Key1 carries 6 of 8, Key2 and Key4 2 of 8 each
    np.testing.assert_allclose(res.record_contributions[3], [6 / 8, 2 / 8, 0, 2 / 8])
    np.testing.assert_allclose(res.record_contributions[5], [2 / 4, 2 / 4, 0, 1.0])
    # file level: raw credits Key1 6+2+6=14, Key2 2+2+2=6, Key3 0, Key4 2+6+2+2+2=14; total 26
    np.testing.assert_allclose(res.contributions, [1400 / 26, 600 / 26, 0, 1400 / 26])
    levels = res.level_contributions()
    key1 = levels.filter(pl.col("variable") == "Key1")
    assert key1["level"].to_list() == ["1", "3", "4", "6"]
    np.testing.assert_allclose(key1["contribution"].to_numpy(), [0, 600 / 14, 200 / 14, 600 / 14])
    assert levels.filter(pl.col("variable") == "Key3")["contribution"].is_nan().all()
    # DIS-SUDA by the formula of methods.md M3.3: U = 4 uniques, P = 4 records in pairs
    assert (res.sample_uniques, res.pair_records) == (4, 4)
    u, p, frac, q = 4, 4, 0.01, 1 + (8 - 4) / 20
    dis = u * frac / (u * frac + p * (1 - frac))
    scores = np.array([8.0, 6.0, 4.0, 8.0])
    adjust = np.sum(scores**-q)
    expected = 1 / (1 + (u / dis - u) / (scores**q * adjust))
    np.testing.assert_allclose(res.dis_score[[3, 4, 5, 6]], expected, rtol=1e-6)


def test_methods_example() -> None:
    df = pl.DataFrame(
        {
            "age": ["20s"] * 7 + ["60s"],
            "gender": ["m", "m", "m", "m", "f", "f", "f", "m"],
            "income": ["50k+", "50k+"] + ["50k-"] * 6,
            "education": ["hs", "hs", "hs", "hs", "univ", "hs", "middle", "univ"],
        }
    )
    res = suda2(df, keys=["age", "gender", "income", "education"])
    assert res.score.tolist() == [0, 0, 0, 0, 4, 2, 6, 8]
    assert res.msus(4) == [("age", "education"), ("gender", "education")]
    assert res.msus(7) == [("age",), ("gender", "education")]
    ihsn = suda2(df, keys=["age", "gender", "income", "education"], original_scores=False)
    # IHSN weights for M = 4: size 1 -> (2^3-1) 1! 3! / 4! = 7/4, size 2 -> 3 * 2 * 2 / 24
    w1, w2 = 7 * 6 / 24, 3 * 2 * 2 / 24
    np.testing.assert_allclose(ihsn.score, [0, 0, 0, 0, 2 * w2, w2, w1, w1 + w2])


def test_missing_values_are_never_part_of_msus() -> None:
    df = pl.DataFrame({"a": [1, 1, None, 2], "b": [1, 2, 2, 2], "c": [1, 1, 1, 1]})
    res = suda2(df, keys=["a", "b", "c"])
    # record 2 (None, 2, 1) is unique on all keys, but only b is usable and b=2 occurs 3 times
    assert res.msus(2) == []
    assert res.score[2] == 0
    # record 3 (2, 2, 1): a=2 is unique; missing does not match 2
    assert res.msus(3) == [("a",)]
    assert res.msus(0) == [("b",)]
    assert res.msus(1) == [("a", "b")]


def test_duplicates_score_zero_and_pairs_counted() -> None:
    df = pl.DataFrame({"a": [1, 1, 1, 2, 2, 3], "b": [1, 1, 1, 1, 1, 2], "c": [0, 0, 0, 0, 0, 1]})
    res = suda2(df, keys=["a", "b", "c"])
    assert res.score[:5].tolist() == [0, 0, 0, 0, 0]
    assert res.sample_uniques == 1
    assert res.pair_records == 2
    assert res.msus(5) == [("a",), ("b",), ("c",)]
    assert res.score[5] == 3 * math.factorial(2)
    # a lone score: DIS = 1 / (1 + P(1-f)/f / (s^Q * s^-Q)) = 1 / (1 + 2 * 99)
    assert res.dis_score[5] == pytest.approx(1 / (1 + 2 * 0.99 / 0.01), rel=1e-6)


# ------------------------------------------------------------------ properties


@given(small_keys())
def test_msus_equal_brute_force(values: np.ndarray) -> None:
    frame, keys = _frame(values)
    res = suda2(frame, keys=keys)
    assert _result_msus(res, keys) == brute_force_msus(values)
    m = len(keys)
    expected = [sum(math.factorial(m - len(a)) for a in sets) for sets in brute_force_msus(values)]
    np.testing.assert_allclose(res.score, expected)


@given(small_keys(), st.integers(1, 4))
def test_max_size_truncates(values: np.ndarray, max_size: int) -> None:
    frame, keys = _frame(values)
    max_size = min(max_size, len(keys))
    res = suda2(frame, keys=keys, max_size=max_size)
    assert _result_msus(res, keys) == brute_force_msus(values, max_size)
    assert len(res.msu_counts_by_size) == max_size


@given(small_keys(), st.randoms(use_true_random=False))
def test_row_order_invariance(values: np.ndarray, rnd) -> None:
    perm = list(range(values.shape[0]))
    rnd.shuffle(perm)
    frame, keys = _frame(values)
    res = suda2(frame, keys=keys)
    shuffled = suda2(frame[perm], keys=keys)
    np.testing.assert_allclose(shuffled.score, res.score[perm])
    np.testing.assert_allclose(shuffled.dis_score, res.dis_score[perm], rtol=1e-12)
    np.testing.assert_allclose(shuffled.record_contributions, res.record_contributions[perm])


@given(small_keys())
def test_non_uniques_score_zero(values: np.ndarray) -> None:
    frame, keys = _frame(values)
    res = suda2(frame, keys=keys)
    counts = frame.group_by(keys).len()
    fk = frame.join(counts, on=keys, how="left", nulls_equal=True)["len"].to_numpy()
    assert np.all(res.score[fk > 1] == 0)
    assert np.all(res.dis_score[res.score == 0] == 0)
    assert np.all((res.dis_score >= 0) & (res.dis_score <= 1))
    assert res.sample_uniques == int(np.count_nonzero(fk == 1))
    # shares of a record's score: each MSU credits its variables, so they sum to the mean size
    scored = res.score > 0
    assert np.all(res.record_contributions[scored].sum(axis=1) >= 1 - 1e-12)


@given(small_keys(allow_missing=False), st.floats(0.001, 0.5), st.floats(1.5, 3.0))
def test_dis_grows_with_the_sampling_fraction(values: np.ndarray, low: float, ratio: float) -> None:
    frame, keys = _frame(values)
    small = suda2(frame, keys=keys, dis_fraction=low)
    large = suda2(frame, keys=keys, dis_fraction=min(1.0, low * ratio))
    np.testing.assert_array_equal(small.score, large.score)
    scored = small.score > 0
    assert np.all(large.dis_score[scored] >= small.dis_score[scored] - 1e-12)
    if small.pair_records == 0:  # no pairs: every match is certain
        np.testing.assert_allclose(small.dis_score[scored], 1.0)


def test_hash_kernel_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 5000, size=3000)
    multiplicity = rng.integers(1, 3, size=3000)
    candidates = rng.choice(3000, size=400, replace=False)
    got = _candidate_counts(keys, multiplicity, candidates)
    expected = [int(multiplicity[keys == keys[c]].sum()) for c in candidates]
    assert got.tolist() == expected


@pytest.mark.parametrize("n_cols", [3, 12])
def test_subset_counts_all_paths(n_cols: int) -> None:
    # 3 columns of 200 levels: hash kernel; 12 columns of 60 levels: mixed-radix overflow path
    rng = np.random.default_rng(2)
    levels = 200 if n_cols == 3 else 60
    codes = rng.integers(-1, levels, size=(500, n_cols)).astype(np.int32)
    codes[:250] = codes[250:]  # pairs
    multiplicity = np.ones(500, dtype=np.int64)
    rows = _Rows(codes, multiplicity, threshold=2, wildcard=False)
    columns = tuple(range(n_cols))
    report = np.arange(0, 500, 7)
    got = rows.counts(columns, None, report)
    expected = [int(np.all(codes == codes[r], axis=1).sum()) for r in report]
    assert got.tolist() == expected
    # the fused kernel: candidates counted among themselves and the other rows
    others = np.setdiff1d(np.arange(500), report)
    fused = rows.counts_open(columns, others, report, np.arange(len(report)))
    assert fused.tolist() == expected
    small = _Rows(codes[:, :1], multiplicity, threshold=2, wildcard=False)  # direct addressing
    fused = small.counts_open((0,), others, report, np.arange(len(report)))
    assert fused.tolist() == [int((codes[:, 0] == codes[r, 0]).sum()) for r in report]


def test_larger_random_data_msus_are_unique_and_minimal() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    df = pl.DataFrame({f"k{j}": rng.zipf(1.6 + 0.2 * j, size=n) % (40 + 60 * j) for j in range(4)})
    keys = list(df.columns)
    res = suda2(df, keys=keys)
    values = df.to_numpy()
    for i in np.flatnonzero(res.msu_count)[:60]:
        for combo in res.msus(int(i)):
            cols = [keys.index(c) for c in combo]
            assert np.all(values[:, cols] == values[i, cols], axis=1).sum() == 1
            for j in cols:
                sub = [c for c in cols if c != j]
                assert np.all(values[:, sub] == values[i, sub], axis=1).sum() > 1


def test_thirteen_keys_with_max_size_equal_brute_force() -> None:
    rng = np.random.default_rng(4)
    values = rng.integers(0, 3, size=(60, 13))
    values[rng.random(values.shape) < 0.05] = -1
    values[0] = np.maximum(values[0], 0)
    frame, keys = _frame(values)
    res = suda2(frame, keys=keys, max_size=3)
    brute = brute_force_msus(values, 3)
    assert _result_msus(res, keys) == brute
    assert res.n_msus > 50
    weights = [math.factorial(13 - s) for s in (1, 2, 3)]
    expected = [sum(weights[len(a) - 1] for a in sets) for sets in brute]
    np.testing.assert_allclose(res.score, expected)


# ------------------------------------------------------------------ results and bad input


def test_to_frame_keeps_pandas_index(shared_data: Path) -> None:
    pdf = _read(shared_data, "francdat.csv").to_pandas()
    pdf.index = pd.Index([f"r{i}" for i in range(len(pdf))], name="id")
    before = pdf.copy()
    res = suda2(pdf, keys=FRANCDAT_KEYS)
    pd.testing.assert_frame_equal(pdf, before)
    out = res.to_frame()
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(pdf.index)
    assert list(out.columns) == [
        "suda_score",
        "dis_suda_score",
        "msu_count",
        *(f"contribution_{k}" for k in FRANCDAT_KEYS),
    ]
    assert out["suda_score"].tolist() == [0, 0, 0, 8, 6, 4, 8, 0]
    summary = res.summary().to_dict()
    assert summary["minimal sample uniques"] == 7
    assert summary["MSUs of size 2"] == 4
    assert "SUDA2" in str(res.summary())


def test_microdata_input(shared_data: Path) -> None:
    md = Microdata(_read(shared_data, "francdat.csv"), keys=FRANCDAT_KEYS, weight="w")
    assert suda2(md).score.tolist() == [0, 0, 0, 8, 6, 4, 8, 0]


def test_no_msus_at_all() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2], "b": [3, 3, 4, 4]})
    res = suda2(df, keys=["a", "b"])
    assert res.n_msus == 0
    assert np.all(res.score == 0) and np.all(res.dis_score == 0)
    assert np.all(np.isnan(res.contributions))
    assert res.summary().to_dict()["records with an MSU"] == 0


def test_bad_input() -> None:
    df = pl.DataFrame({"a": [1, 2, 2], "b": [1, 1, 2]})
    with pytest.raises(ColumnError, match="keys"):
        suda2(df)
    with pytest.raises(ColumnError, match="'zz'"):
        suda2(df, keys=["a", "zz"])
    with pytest.raises(ParameterError, match="max_size"):
        suda2(df, keys=["a", "b"], max_size=3)
    with pytest.raises(ParameterError, match="max_size"):
        suda2(df, keys=["a", "b"], max_size=0)
    with pytest.raises(ParameterError, match="dis_fraction"):
        suda2(df, keys=["a", "b"], dis_fraction=0.0)
    with pytest.raises(ParameterError, match="dis_fraction"):
        suda2(df, keys=["a", "b"], dis_fraction=1.5)
    with pytest.raises(ParameterError, match="original_scores"):
        suda2(df, keys=["a", "b"], original_scores="yes")  # type: ignore[arg-type]
    res = suda2(df, keys=["a", "b"])
    with pytest.raises(ParameterError, match="record"):
        res.msus(3)
