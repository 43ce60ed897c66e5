"""SUDA2: reference agreement with sdcMicro, hand examples, brute-force properties.

Missing values: sdcMicro's C++ (src/Suda2.h, ``Suda2()``) builds no item for a missing value and
compares raw values (its R wrapper recodes NA to -999 first), so a record's missing variables are
never part of its MSUs and a missing value matches no observed value; duplicates and the pairs of
DIS-SUDA are found on the raw values (missing equals missing).  ``missing="sdcmicro"`` reproduces
this, ``"category"`` makes missing an ordinary level, ``"wildcard"`` lets it match any value.
"""

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
from sdckit.risk.suda import MISSING_MODES, _candidate_counts, _Rows, suda2

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
FRANCDAT_KEYS = ["Key1", "Key2", "Key3", "Key4"]


def _read(shared_data: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(shared_data / name, null_values="NA")


# ------------------------------------------------------------------ brute force


def brute_frequencies(values: np.ndarray, cols: tuple[int, ...], missing: str) -> np.ndarray:
    """Each record's frequency on ``cols`` by pairwise comparison (missing = negative code):
    missing equals only missing, or, with "wildcard", matches anything."""
    n = values.shape[0]
    match = np.ones((n, n), dtype=bool)
    for c in cols:
        col = values[:, c]
        same = col[:, None] == col[None, :]
        if missing == "wildcard":
            same |= (col[:, None] < 0) | (col[None, :] < 0)
        match &= same
    return match.sum(axis=1)


def brute_force_msus(
    values: np.ndarray, max_size: int | None = None, missing: str = "sdcmicro"
) -> list[set[frozenset]]:
    """MSUs by definition: A is an MSU of record i if i's frequency on A is 1 and on every proper
    subset of A more than 1 (all of them checked).  "sdcmicro": missing compared as a value, and
    never part of A; "category": missing is a value like any other; "wildcard": missing matches
    anything."""
    n, m = values.shape
    max_size = m if max_size is None else max_size
    unique: dict[tuple[int, ...], np.ndarray] = {}
    for s in range(1, max_size + 1):
        for cols in itertools.combinations(range(m), s):
            unique[cols] = brute_frequencies(values, cols, missing) == 1
            if missing == "sdcmicro":
                unique[cols] &= np.all(values[:, cols] >= 0, axis=1)
    out: list[set[frozenset]] = [set() for _ in range(n)]
    for cols, flag in unique.items():
        proper = [sub for r in range(1, len(cols)) for sub in itertools.combinations(cols, r)]
        minimal = flag.copy()
        for sub in proper:
            minimal &= ~unique[sub]
        for i in np.flatnonzero(minimal):
            out[i].add(frozenset(cols))
    return out


def brute_force_scores(
    values: np.ndarray, missing: str, original: bool = True, dis_fraction: float = 0.01
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """SUDA and DIS-SUDA scores, sample uniques U and pair records P from the brute-force MSUs.

    Weights and DIS-SUDA as in methods.md M3.3; sdcMicro computes the DIS constants (Dis, the
    odds U/Dis - U and Q) in single precision, so they are rounded to float32 step by step.
    """
    n, m = values.shape
    if original:
        weight = {s: float(math.factorial(m - s)) for s in range(1, m + 1)}
    else:
        weight = {
            s: (2.0 ** (m - s) - 1) * math.factorial(s) * math.factorial(m - s) / math.factorial(m)
            for s in range(1, m + 1)
        }
    msus = brute_force_msus(values, missing=missing)
    score = np.array([sum(weight[len(a)] for a in sets) for sets in msus])
    fk = brute_frequencies(values, tuple(range(m)), missing)
    u, p = int(np.sum(fk == 1)), int(np.sum(fk == 2))
    dis = np.zeros(n)
    scored = score > 0
    if scored.any():  # then u > 0: a record with an MSU is unique on all keys
        f32 = np.float32
        dis_const = f32(u) * f32(dis_fraction)
        dis_const = dis_const / (dis_const + f32(p) * (f32(1) - f32(dis_fraction)))
        odds = float(f32(u) / dis_const - f32(u))
        q = float(f32(1) + (f32(8) - f32(m)) / f32(20))
        adjust = np.sum(score[scored] ** -q)
        dis[scored] = 1 / (1 + odds / (score[scored] ** q * adjust))
    return score, dis, u, p


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


# Nine records, four keys, missing values (None) in b and d.  Hand enumeration:
#   value counts  a: 1 x5, 2 x4   b: 1 x3, 2 x4, NA x2   c: 1 x5, 2 x4   d: 1 x3, 2 x3, NA x3
#   r0 = r1 and r5 = r6 (missing equals missing) are pairs; r2, r3, r4, r7, r8 are unique.
# "sdcmicro" (missing never in an MSU, matches no observed value):
#   r2 (1,NA,1,2): on its observed a, c, d r3 (1,2,1,2) agrees -> no MSU
#   r3: {b,c} = (2,1) and {b,d} = (2,2) unique; all singles and {a,b},{a,c},{a,d},{c,d} shared
#   r4 (2,NA,1,2): {a,c} = (2,1), {a,d} = (2,2) unique (r5, r6 have d missing)
#   r7 (2,1,2,1): {a,b}, {a,d}, {b,c}, {c,d} unique; {a,c} (r5,r6,r7) and {b,d} (r0,r1,r7) not
#   r8 (1,2,2,NA): {a,c} = (1,2) unique; {a,b} shared with r3, {b,c} with r5, r6
# "category" adds the MSUs with a missing level: r2 {a,b} = (1,NA), r4 {a,b} = (2,NA),
#   r8 {a,d} = (1,NA) (b = NA occurs twice, d = NA three times, so no 1-MSU)
# "wildcard" (NA matches anything): b = 2 now matches r2, r4 and d = 1 or 2 matches r5, r6, r8:
#   r2/r3 agree wherever both are observed (frequency 2), as do r0/r1 and r5/r6; r4 keeps
#   {a,c} = (2,1); r8 keeps {a,c} = (1,2); r7 has {b,c} (b 1 or NA, c 2: r7 only) and
#   {a,b,d} (a 2, b 1/NA, d 1/NA: r7 only; {a,b} also r4, {a,d} and {b,d} three records).
MISSING_EXAMPLE = {
    "a": [1, 1, 1, 1, 2, 2, 2, 2, 1],
    "b": [1, 1, None, 2, None, 2, 2, 1, 2],
    "c": [1, 1, 1, 1, 1, 2, 2, 2, 2],
    "d": [1, 1, 2, 2, 2, None, None, 1, None],
}
MISSING_EXAMPLE_MSUS = {
    "sdcmicro": {
        3: [("b", "c"), ("b", "d")],
        4: [("a", "c"), ("a", "d")],
        7: [("a", "b"), ("b", "c"), ("a", "d"), ("c", "d")],
        8: [("a", "c")],
    },
    "category": {
        2: [("a", "b")],
        3: [("b", "c"), ("b", "d")],
        4: [("a", "b"), ("a", "c"), ("a", "d")],
        7: [("a", "b"), ("b", "c"), ("a", "d"), ("c", "d")],
        8: [("a", "c"), ("a", "d")],
    },
    "wildcard": {4: [("a", "c")], 7: [("b", "c"), ("a", "b", "d")], 8: [("a", "c")]},
}


@pytest.mark.parametrize(
    ("missing", "scores", "uniques", "pairs"),
    [
        # M = 4: an MSU of size s weighs (4 - s)! = 6, 2, 1, 1
        ("sdcmicro", [0, 0, 0, 4, 4, 0, 0, 8, 2], 5, 4),
        ("category", [0, 0, 2, 4, 6, 0, 0, 8, 4], 5, 4),
        ("wildcard", [0, 0, 0, 0, 2, 0, 0, 2 + 1, 2], 3, 6),
    ],
)
def test_missing_values_by_hand(missing: str, scores: list, uniques: int, pairs: int) -> None:
    df = pl.DataFrame(MISSING_EXAMPLE, schema=dict.fromkeys("abcd", pl.Int64))
    res = suda2(df, keys=list("abcd"), missing=missing)
    assert res.missing == missing
    assert res.score.tolist() == scores
    expected_msus = MISSING_EXAMPLE_MSUS[missing]
    assert [res.msus(i) for i in range(9)] == [expected_msus.get(i, []) for i in range(9)]
    assert (res.sample_uniques, res.pair_records) == (uniques, pairs)
    # DIS-SUDA by the formula (methods.md M3.3): U cancels, the odds are P (1 - f) / f
    score = np.array(scores, dtype=float)
    scored = score > 0
    q = 1 + (8 - 4) / 20
    odds = pairs * 0.99 / 0.01
    expected = np.zeros(9)
    expected[scored] = 1 / (1 + odds / (score[scored] ** q * np.sum(score[scored] ** -q)))
    np.testing.assert_allclose(res.dis_score, expected, rtol=1e-6, atol=0)
    assert f"({missing!r})" in str(res.summary())


def test_missing_values_sdcmicro_dis_by_hand() -> None:
    # the "sdcmicro" DIS-SUDA scores of the example: P = 4, odds 396, Q = 1.2
    df = pl.DataFrame(MISSING_EXAMPLE, schema=dict.fromkeys("abcd", pl.Int64))
    res = suda2(df, keys=list("abcd"))
    adjust = 2 * 4**-1.2 + 8**-1.2 + 2**-1.2
    for i, s in [(3, 4), (4, 4), (7, 8), (8, 2)]:
        assert res.dis_score[i] == pytest.approx(1 / (1 + 396 / (s**1.2 * adjust)), rel=1e-6)
    # and, as printed by sdcMicro's C++ on the same data (NA coded -999)
    np.testing.assert_allclose(
        res.dis_score[[3, 4, 7, 8]], [0.01181005, 0.01181005, 0.02672291, 0.00517514], atol=5e-9
    )


def test_missing_category_level_contributions() -> None:
    df = pl.DataFrame(MISSING_EXAMPLE, schema=dict.fromkeys("abcd", pl.Int64))
    res = suda2(df, keys=list("abcd"), missing="category")
    levels = res.level_contributions()
    b = levels.filter(pl.col("variable") == "b")
    # b is credited 2 (r2, NA) + 4 (r3, b = 2) + 2 (r4, NA) + 4 (r7, b = 1) = 12
    assert b["level"].to_list() == ["1", "2", None]
    np.testing.assert_allclose(b["contribution"].to_numpy(), [400 / 12, 400 / 12, 400 / 12])
    assert levels.filter(pl.col("variable") == "a")["level"].to_list() == ["1", "2"]
    # the other treatments never credit a missing value and list no row for it
    for missing in ("sdcmicro", "wildcard"):
        other = suda2(df, keys=list("abcd"), missing=missing).level_contributions()
        assert other["level"].null_count() == 0


def test_missing_values_in_testdata_match_sdcmicro_cpp(shared_data: Path) -> None:
    """Two of six testdata keys with missing values (199 roof, 148 relat).

    The expected figures come from sdcMicro 5.8.1's own SUDA2 code (src/Suda2.h, unmodified,
    compiled outside R with a minimal stand-in for Rcpp, NA passed as -999 as the R wrapper
    does; for "category" the missing values were passed as the ordinary code 0).  The scores
    are integers (original weights), so the fingerprints are exact.
    """
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat"]
    df = _read(shared_data, "testdata.csv").select(keys)
    i = np.arange(df.height)
    df = df.with_columns(
        pl.when(pl.Series(i % 23 == 5)).then(None).otherwise(pl.col("roof")).alias("roof"),
        pl.when(pl.Series(i * 37 % 31 == 2)).then(None).otherwise(pl.col("relat")).alias("relat"),
    )
    assert df.null_count().row(0) == (0, 199, 0, 0, 0, 148)
    expected = {
        # sum, records scored, sum of position * score, sum of squares, DIS sum, DIS max
        "sdcmicro": (817, 92, 2263380, 24067, 2.035581061, 0.2843966111),
        "category": (1098, 142, 2984354, 27600, 4.970748931, 0.4320741861),
    }
    for missing, (total, scored, position, squares, dis_sum, dis_max) in expected.items():
        res = suda2(df, keys=keys, missing=missing)
        s = res.score
        assert (s.sum(), np.count_nonzero(s), (i * s).sum(), (s**2).sum()) == (
            total,
            scored,
            position,
            squares,
        )
        assert res.dis_score.sum() == pytest.approx(dis_sum, abs=1e-8)
        assert res.dis_score.max() == pytest.approx(dis_max, abs=1e-9)
        assert (res.sample_uniques, res.pair_records) == (142, 120)


def test_missing_modes_agree_without_missing_values(shared_data: Path) -> None:
    data = _read(shared_data, "testdata.csv")
    ref = pl.read_csv(shared_data / "reference" / "testdata_suda2_sdcmicro.csv")
    for missing in MISSING_MODES:
        res = suda2(data, keys=TESTDATA_KEYS, missing=missing)
        np.testing.assert_allclose(res.score, ref["score"].to_numpy(), rtol=0, atol=1e-8)
        np.testing.assert_allclose(res.dis_score, ref["disScore"].to_numpy(), rtol=0, atol=1e-8)
        assert res.n_msus == 235


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


@pytest.mark.parametrize("missing", MISSING_MODES)
@given(values=small_keys(), original=st.booleans())
def test_msus_equal_brute_force(values: np.ndarray, original: bool, missing: str) -> None:
    frame, keys = _frame(values)
    res = suda2(frame, keys=keys, missing=missing, original_scores=original)
    assert _result_msus(res, keys) == brute_force_msus(values, missing=missing)
    score, dis, uniques, pairs = brute_force_scores(values, missing, original)
    np.testing.assert_allclose(res.score, score, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.dis_score, dis, rtol=1e-12, atol=1e-12)
    assert (res.sample_uniques, res.pair_records) == (uniques, pairs)


@pytest.mark.parametrize("missing", MISSING_MODES)
@given(values=small_keys(), max_size=st.integers(1, 4))
def test_max_size_truncates(values: np.ndarray, max_size: int, missing: str) -> None:
    frame, keys = _frame(values)
    max_size = min(max_size, len(keys))
    res = suda2(frame, keys=keys, max_size=max_size, missing=missing)
    assert _result_msus(res, keys) == brute_force_msus(values, max_size, missing)
    assert len(res.msu_counts_by_size) == max_size


@given(small_keys())
def test_missing_modes_nest(values: np.ndarray) -> None:
    # "category" only adds MSUs with a missing value to "sdcmicro"'s; without missing values
    # the treatments agree
    frame, keys = _frame(values)
    plain = _result_msus(suda2(frame, keys=keys), keys)
    category = _result_msus(suda2(frame, keys=keys, missing="category"), keys)
    for i, (a, b) in enumerate(zip(plain, category, strict=True)):
        missing_vars = {j for j in range(len(keys)) if values[i, j] < 0}
        assert a == {s for s in b if not s & missing_vars}
    if not (values < 0).any():
        wildcard = _result_msus(suda2(frame, keys=keys, missing="wildcard"), keys)
        assert plain == category == wildcard


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
    with pytest.raises(ParameterError, match=r"'missing'.*'sdcmicro'"):
        suda2(df, keys=["a", "b"], missing="ignore")  # type: ignore[arg-type]
    res = suda2(df, keys=["a", "b"])
    with pytest.raises(ParameterError, match="record"):
        res.msus(3)


@pytest.mark.parametrize("missing", MISSING_MODES)
def test_scores_do_not_depend_on_how_the_keys_are_stored(shared_data: Path, missing: str) -> None:
    """Integer codes, their text and categoricals of the text give the same scores and MSUs
    (the encoding ranks the levels of every type alike)."""
    df = _read(shared_data, "testdata.csv").select(TESTDATA_KEYS)
    as_text = df.with_columns(pl.col(c).cast(pl.String) for c in TESTDATA_KEYS)
    as_cat = as_text.with_columns(pl.col(c).cast(pl.Categorical) for c in TESTDATA_KEYS)
    ref = suda2(df, keys=TESTDATA_KEYS, missing=missing)
    for other in (as_text, as_cat):
        res = suda2(other, keys=TESTDATA_KEYS, missing=missing)
        np.testing.assert_array_equal(res.score, ref.score)
        np.testing.assert_array_equal(res.dis_score, ref.dis_score)
        np.testing.assert_array_equal(res.msu_records, ref.msu_records)
        np.testing.assert_array_equal(res.msu_masks, ref.msu_masks)
        np.testing.assert_array_equal(res.scored_contributions, ref.scored_contributions)
