"""Frequencies fk / Fk_hat and k-anonymity: sdcMicro reference values and properties."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.risk import frequencies

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# benchmarks.md A2 (sdcMicro tests): 8 records, keys A and C, weights w.
SMALL = {
    "A": [2, 3, 2, 2, 3, 3, 1, 2],
    "B": [3, 3, 3, 3, 4, 3, 1, 3],
    "C": [1, 3, 1, 2, 1, 1, 1, 1],
    "w": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0],
}


def test_sdcmicro_small_example() -> None:
    res = frequencies(pl.DataFrame(SMALL), keys=["A", "C"], weight="w")
    assert res.fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    assert res.Fk_hat.tolist() == [108, 45.5, 108, 17, 100, 100, 123.5, 108]
    assert (res.n1, res.n2) == (3, 2)


def test_sdcmicro_missing_values_as_wildcards() -> None:
    data = dict(SMALL)
    data["C"] = [1, 3, None, 2, 1, 1, None, 1]
    res = frequencies(pl.DataFrame(data), keys=["A", "C"], weight="w")
    assert res.fk.tolist() == [3, 1, 4, 2, 2, 2, 1, 3]
    assert res.Fk_hat.tolist() == [108, 45.5, 125, 56, 100, 100, 123.5, 108]


def test_missing_as_category() -> None:
    data = dict(SMALL)
    data["C"] = [1, 3, None, 2, 1, 1, None, 1]
    res = frequencies(pl.DataFrame(data), keys=["A", "C"], weight="w", missing="category")
    assert res.fk.tolist() == [2, 1, 1, 1, 2, 2, 1, 2]
    assert res.Fk_hat.tolist() == [69, 45.5, 39, 17, 100, 100, 123.5, 69]


def test_alpha_weights_incomplete_matches() -> None:
    # row 3 = (2, NA): complete keys (2, 1) x2 and (2, 2) count fully for it; the complete
    # keys get alpha times the incomplete one.
    data = dict(SMALL)
    data["C"] = [1, 3, None, 2, 1, 1, None, 1]
    res = frequencies(pl.DataFrame(data), keys=["A", "C"], weight="w", alpha=0.5)
    assert res.fk.tolist() == [2.5, 1, 4, 1.5, 2, 2, 1, 2.5]
    assert res.Fk_hat.tolist() == pytest.approx([88.5, 45.5, 125, 36.5, 100, 100, 123.5, 88.5])
    res0 = frequencies(pl.DataFrame(data), keys=["A", "C"], alpha=0.0)
    assert res0.fk.tolist() == [2, 1, 4, 1, 2, 2, 1, 2]


def test_two_incomplete_patterns_match_each_other() -> None:
    df = pl.DataFrame({"a": [1, None, 1, 2], "b": [None, 5, 5, 5]})
    res = frequencies(df, keys=["a", "b"])
    # (1, NA) matches (NA, 5) [alpha] and (1, 5); (NA, 5) matches all three others.
    assert res.fk.tolist() == [3, 4, 3, 2]


def test_single_key_wildcard_rule() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, None, None]})
    res = frequencies(df, keys=["a"], alpha=1.0)
    assert res.fk.tolist() == [4, 4, 3, 5, 5]
    res = frequencies(df, keys=["a"], alpha=0.0)
    assert res.fk.tolist() == [2, 2, 1, 5, 5]


def test_testdata_against_sdcmicro(shared_data) -> None:
    df = pl.read_csv(shared_data / "testdata.csv")
    ref = pl.read_csv(shared_data / "reference" / "testdata_risk_sdcmicro.csv")
    res = frequencies(df, keys=TESTDATA_KEYS, weight="sampling_weight")
    np.testing.assert_allclose(res.fk, ref["fk"].to_numpy(), rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.Fk_hat, ref["Fk"].to_numpy(), rtol=0, atol=1e-8)
    assert res.n_classes == 412
    assert res.sample_uniques == 157
    assert [res.violations(k).records for k in (2, 3, 5)] == [157, 281, 458]


def test_francdat_against_sdcmicro(shared_data) -> None:
    df = pl.read_csv(shared_data / "francdat.csv")
    ref = pl.read_csv(shared_data / "reference" / "francdat_risk_sdcmicro.csv")
    res = frequencies(df, keys=["Key1", "Key2", "Key3", "Key4"], weight="w")
    assert res.fk.tolist() == [2, 2, 2, 1, 1, 1, 1, 2]
    np.testing.assert_allclose(res.Fk_hat, ref["Fk"].to_numpy(), atol=1e-8)


def test_violations_counts_classes() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3, 3, 3, 4]})
    v = frequencies(df, keys=["a"]).violations(3)
    assert (v.records, v.classes) == (4, 3)


@pytest.mark.parametrize("backend", ["pandas", "polars", "pyarrow"])
def test_backends_give_same_values_and_keep_index(backend: str) -> None:
    pdf = pd.DataFrame(SMALL, index=[f"id{i}" for i in range(8)])
    data = {"pandas": pdf, "polars": pl.DataFrame(SMALL), "pyarrow": pa.table(SMALL)}[backend]
    res = frequencies(data, keys=["A", "C"], weight="w")
    assert res.fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    out = res.to_frame()
    names = out.column_names if backend == "pyarrow" else list(out.columns)
    assert names == ["fk", "Fk_hat"]
    if backend == "pandas":
        assert list(out.index) == list(pdf.index)
    assert type(out).__module__.split(".")[0] == backend


def test_string_and_categorical_keys() -> None:
    df = pd.DataFrame({"sex": ["m", "f", "m", "f"], "reg": pd.Categorical(["x", "y", "x", "x"])})
    assert frequencies(df, keys=["sex", "reg"]).fk.tolist() == [2, 1, 2, 1]


keys_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 3)),
        st.one_of(st.none(), st.integers(0, 2)),
        st.integers(0, 2),
    ),
    min_size=2,
    max_size=40,
)


def _brute_force(rows: list[tuple], alpha: float) -> np.ndarray:
    out = []
    for i, a in enumerate(rows):
        total = 0.0
        for j, b in enumerate(rows):
            if any(x is not None and y is not None and x != y for x, y in zip(a, b, strict=True)):
                continue
            ma = tuple(x is None for x in a)
            mb = tuple(y is None for y in b)
            if i == j or ma == mb or (not any(mb) and any(ma)):
                total += 1.0
            else:
                total += alpha
        out.append(total)
    return np.array(out)


@given(rows=keys_strategy, alpha=st.sampled_from([0.0, 0.5, 1.0]))
def test_wildcard_equals_brute_force(rows: list[tuple], alpha: float) -> None:
    df = pl.DataFrame(rows, schema=["a", "b", "c"], orient="row")
    if df["a"].null_count() == len(df) or df["b"].null_count() == len(df):
        return
    res = frequencies(df, keys=["a", "b", "c"], alpha=alpha)
    np.testing.assert_allclose(res.fk, _brute_force(rows, alpha))


@given(rows=keys_strategy, k=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_violators_and_row_order_invariance(rows: list[tuple], k: int, seed: int) -> None:
    df = pd.DataFrame(rows, columns=["a", "b", "c"]).astype("Int64")
    if df["a"].isna().all() or df["b"].isna().all():
        return
    res = frequencies(df, keys=["a", "b", "c"])
    assert np.array_equal(res.violates(k), res.fk < k)
    assert res.violations(k).records == int((res.fk < k).sum())
    perm = np.random.default_rng(seed).permutation(len(df))
    shuffled = df.iloc[perm].copy()
    shuffled.index = pd.Index(np.arange(len(df))[perm] * 7 + 3)
    res2 = frequencies(shuffled, keys=["a", "b", "c"])
    np.testing.assert_array_equal(res2.fk, res.fk[perm])
    out = res2.to_frame()
    assert list(out.index) == list(shuffled.index)


def test_single_non_missing_value_key() -> None:
    df = pl.DataFrame({"a": [None, 1, None, None], "b": [1, 1, 2, 2]})
    res = frequencies(df, keys=["a", "b"])
    assert res.fk.tolist() == [2, 2, 2, 2]


def test_input_not_modified() -> None:
    pdf = pd.DataFrame(SMALL)
    before = pdf.copy()
    frequencies(pdf, keys=["A", "C"], weight="w").to_frame()
    pd.testing.assert_frame_equal(pdf, before)
    assert isinstance(Microdata(pdf, keys=["A"]).frame, pl.DataFrame)


# ------------------------------------------------------------------ the shared key encoding


def _reference_codes(values: list) -> tuple[list[int], list]:
    """Codes by definition: the rank among the sorted distinct non-missing values, -1 missing."""

    def missing(v: object) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    levels = sorted({v for v in values if not missing(v)})
    rank = {v: i for i, v in enumerate(levels)}
    return [-1 if missing(v) else rank[v] for v in values], levels


@given(
    st.one_of(
        st.lists(st.one_of(st.none(), st.integers(-5, 40)), min_size=1, max_size=60),
        st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), min_size=1, max_size=60),
        st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "Z", "007", "7"]))),
        st.lists(st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -2.25, float("nan")]))),
        st.lists(st.one_of(st.none(), st.booleans()), min_size=1),
    )
)
def test_every_key_type_is_encoded_by_rank(values: list) -> None:
    from sdckit._codes import encode_column

    series = pl.Series("x", values, strict=False)
    codes, levels = encode_column(series)
    expected, expected_levels = _reference_codes(values)
    assert codes.dtype == np.int32 and codes.flags.writeable
    assert codes.tolist() == expected
    assert levels.to_list() == expected_levels


@pytest.mark.parametrize("dtype", [pl.Int8, pl.UInt8, pl.Int16, pl.UInt16, pl.Int32, pl.Int64])
def test_integer_codes_at_the_ends_of_the_type(dtype: pl.DataType) -> None:
    from sdckit._codes import encode_column

    info = np.iinfo(pl.Series([], dtype=dtype).to_numpy().dtype)
    values = [int(info.max), None, int(info.min), int(info.max), int(info.min) + 1]
    codes, levels = encode_column(pl.Series("x", values, dtype=dtype))
    assert codes.tolist() == [2, -1, 0, 2, 1]
    assert levels.dtype == dtype
    assert levels.to_list() == [int(info.min), int(info.min) + 1, int(info.max)]


def test_factorisations_agree_on_first_appearance_ids() -> None:
    """numpy (short vectors), polars (long ones) and numba (once loaded) give the same ids."""
    from sdckit._codes import _factorize_numba, _factorize_numpy, _factorize_polars

    rng = np.random.default_rng(5)
    for n, spread in ((1, 10), (50, 7), (40_000, 10**12), (200_000, 30_000)):
        values = rng.integers(0, spread, size=n).astype(np.int64)
        ids, n_ids = _factorize_numpy(values)
        first = np.unique(values, return_index=True)[1]
        assert n_ids == len(first)
        # ids number the distinct values in order of first appearance
        np.testing.assert_array_equal(ids[np.sort(first)], np.arange(n_ids))
        np.testing.assert_array_equal(values[np.sort(first)][ids], values)
        for other in (_factorize_polars, _factorize_numba):
            ids2, n2 = other(values)
            assert n2 == n_ids and ids2.dtype == np.int64
            np.testing.assert_array_equal(ids2, ids)


@pytest.mark.parametrize("missing", ["wildcard", "category"])
@pytest.mark.parametrize("weighted", [False, True])
def test_class_level_figures_are_the_records_figures(missing: str, weighted: bool) -> None:
    rng = np.random.default_rng(11)
    n = 3000
    df = pl.DataFrame(
        {
            "a": rng.integers(0, 4, n),
            "b": pl.Series(rng.choice(["x", "y", "z", None], n), dtype=pl.String),
            "c": rng.integers(0, 9, n),
            "w": rng.uniform(0.5, 30.0, n),
        }
    )
    res = frequencies(df, keys=["a", "b", "c"], weight="w" if weighted else None, missing=missing)
    np.testing.assert_array_equal(res.class_fk[res.group], res.fk)
    np.testing.assert_array_equal(res.class_Fk_hat[res.group], res.Fk_hat)
    assert len(res.class_fk) == res.n_classes
    if missing == "category":
        # the counts by definition: records with equal keys (missing as a value)
        text = np.array([f"{a}|{b}|{c}" for a, b, c in df.select("a", "b", "c").rows()])
        _, inverse, counts = np.unique(text, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(res.fk, counts[inverse])
        if weighted:
            sums = np.bincount(inverse, weights=df["w"].to_numpy())
            np.testing.assert_array_equal(res.Fk_hat, sums[inverse])  # bit for bit


def test_frequency_measures_do_not_load_the_model_based_ones() -> None:
    """``sdckit risk`` without ``--suda2`` needs no scipy, numba or pyarrow (their imports and
    the loading of compiled kernels cost about a second each)."""
    code = (
        "import sys\n"
        "import polars as pl\n"
        "from sdckit.risk import assess_risk\n"
        "df = pl.DataFrame({'a': [1, 1, 2, None] * 20000, 'b': ['x', 'y', 'y', 'y'] * 20000,"
        " 'w': [2.0] * 80000})\n"
        "for missing in ('wildcard', 'category'):\n"
        "    res = assess_risk(df, keys=['a', 'b'], weight='w', missing=missing)\n"
        "    res.record_columns(); res.rows()\n"
        "print(','.join(m for m in ('scipy', 'numba', 'pyarrow', 'pandas', 'sdckit.masking')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
