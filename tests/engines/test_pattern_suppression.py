"""Local suppression on the engines from the key patterns (not the records' key columns).

The greedy on a pattern table, with its moves replayed on rank ranges, gives the in-memory
kernel's codes record for record; the engine step built on it (streaming, Dask, Spark) gives
the in-memory :class:`LocalSuppression`'s file record for record, with strata, missing keys
(null and NaN), weights, households and importance, and reads far fewer records than the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from engine_helpers import spark_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdckit.engines._suppress_patterns as patterns
from sdckit.engines._protect import k_violations_on_engine
from sdckit.engines._rows import ROW, read_with_row
from sdckit.engines._steps import suppress_on_engine, with_columns
from sdckit.errors import DataError, InfeasibleError
from sdckit.masking.pattern_suppression import greedy_on_patterns
from sdckit.masking.suppression import LocalSuppression, _suppress_codes
from sdckit.microdata import Microdata

ROLES = {"keys": ["a", "b", "c", "d"], "household": "hh", "weight": "w", "strata": "st"}

#: The options compared (each must take the pattern path).
METHODS = {
    "default": LocalSuppression(k=3),
    "importance": LocalSuppression(k=4, importance=[4, 1, 3, 2]),
    "no_households": LocalSuppression(k=3, block_households=False),
    "no_inference": LocalSuppression(k=3, block_inference=False),
    "strata": LocalSuppression(k=3, by_strata=True),
    "all_keys_combined": LocalSuppression(k=3, combinations=4),
}


def _frame(n: int = 1200, seed: int = 4) -> pl.DataFrame:
    """Sparse keys (many unsafe patterns) of four types with nulls and NaN, -0.0 beside 0.0,
    households of about three, weights and three strata."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 4, n).astype(np.float64)
    c[c == 0] = -0.0
    c[rng.random(n) < 0.3] = 0.0
    frame = pl.DataFrame(
        {
            "a": rng.integers(0, 15, n),
            "b": rng.choice(np.array(list("pqrstuvwxy")), n),
            "c": c,
            "d": rng.integers(1, 5, n).astype(np.int16),
            "hh": rng.integers(0, n // 3, n),
            "w": rng.gamma(2.0, 40.0, n),
            "st": rng.choice(np.array(["n", "s", "e"]), n),
        }
    )
    miss = rng.random((n, 3))
    return frame.with_columns(
        pl.when(pl.lit(miss[:, 0] < 0.05)).then(None).otherwise(pl.col("a")).alias("a"),
        pl.when(pl.lit(miss[:, 1] < 0.04)).then(None).otherwise(pl.col("b")).alias("b"),
        pl.when(pl.lit(miss[:, 2] < 0.04)).then(float("nan")).otherwise(pl.col("c")).alias("c"),
    )


@pytest.fixture(scope="module")
def data() -> pl.DataFrame:
    return _frame()


def _in_memory(frame: pl.DataFrame, method: LocalSuppression, roles=ROLES) -> pl.DataFrame:
    res = method.apply(Microdata(frame, **roles))
    assert res.details["suppressions"] >= 15  # the comparison is worth something
    return res.microdata.frame


def _on_engine(native, engine: str, method: LocalSuppression, roles=ROLES):
    """The engine step, checked to take the pattern path."""
    assert patterns.pattern_path_reason(method, roles) is None
    assert patterns.suppress_by_patterns(native, engine, method, roles, with_columns) is not None
    return suppress_on_engine(native, engine, method, seed=None, roles=roles)


def _assert_same(got: pl.DataFrame, want: pl.DataFrame, nan_as_null: bool = False) -> None:
    """Record for record (by the row index), NaN and null as they are (``nan_as_null``: Dask's
    nullable pandas types read a NaN as a null, both missing)."""
    got = got.sort(ROW).drop(ROW).select(want.columns)
    got = got.with_columns(pl.col(c).cast(t) for c, t in want.schema.items())
    if nan_as_null:
        floats = [c for c, t in want.schema.items() if t.is_float()]
        got = got.with_columns(pl.col(floats).fill_nan(None))
        want = want.with_columns(pl.col(floats).fill_nan(None))
    assert got.equals(want, null_equal=True)


# ------------------------------------------------------------------ the greedy on patterns
def _expand(codes: np.ndarray, card: np.ndarray, k: int, prio: np.ndarray) -> np.ndarray:
    """Per-record codes from the pattern greedy (the rows found as an engine finds them)."""
    n = codes.shape[0]
    uniq, inv = np.unique(codes, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.bincount(inv)
    last = np.zeros(len(uniq), dtype=np.int64)
    np.maximum.at(last, inv, np.arange(n))
    g = greedy_on_patterns(uniq, counts, last, card, k, prio)
    by_pattern = np.lexsort((np.arange(n), inv))
    starts = np.concatenate(([0], np.cumsum(counts)))
    rows = by_pattern[starts[g.moved_pattern] + g.moved_rank]
    assert (np.bincount(g.moved_pattern, minlength=len(uniq)) == g.taken).all()
    out = codes.astype(np.int64)
    out[rows] = g.finish(rows)
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 300),
    m=st.integers(1, 4),
    k=st.integers(2, 5),
    missing=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_pattern_greedy_equals_record_greedy(seed, n, m, k, missing) -> None:
    rng = np.random.default_rng(seed)
    card = rng.integers(1, 7, m)
    codes = np.stack([rng.integers(0, c, n) for c in card], axis=1)
    codes[rng.random((n, m)) < missing] = -1
    prio = (rng.permutation(m) + 1).astype(np.int64)
    k = min(k, n)
    want = _suppress_codes(codes, card, k, prio, True)
    assert np.array_equal(_expand(codes, card, k, prio), want)


def test_pattern_greedy_hand_example() -> None:
    """(1,1) (1,1) (2,1) (2,1) (3,1), k = 2: the last record's first key goes; nothing else
    moves (it is the only record taken, the first and only one of its pattern)."""
    g = greedy_on_patterns(
        np.array([[0, 0], [1, 0], [2, 0]]), np.array([2, 2, 1]), np.array([1, 3, 4]),
        [3, 1], 2, np.array([2, 1]),
    )  # fmt: skip
    assert g.taken.tolist() == [0, 0, 1]
    assert g.moved_pattern.tolist() == [2] and g.moved_rank.tolist() == [0]
    assert g.finish(np.array([4])).tolist() == [[-1, 0]]


# ------------------------------------------------------------------ streaming
@pytest.mark.parametrize("case", sorted(METHODS))
def test_streaming_equals_in_memory(case, data, tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    data.write_parquet(path, row_group_size=300)
    lf = read_with_row(str(path), "streaming")
    out = _on_engine(lf, "streaming", METHODS[case])
    _assert_same(out.collect(engine="streaming"), _in_memory(data, METHODS[case]))
    assert k_violations_on_engine(out, "streaming", ROLES["keys"], METHODS[case].k) == 0


def test_reads_only_the_touched_records(data, monkeypatch) -> None:
    """The records read into memory are those of the patterns the greedy took records from
    and of the households with a suppression: on a census far fewer than the file."""
    from sdckit.datasets import generate_census

    census = generate_census(20_000, seed=2)
    roles = {"keys": ["region", "sex", "age_group", "marital_status"], "household": "household_id"}
    read: list[int] = []
    where = patterns._where

    def counted(*args, **kwargs):
        out = where(*args, **kwargs)
        read.append(out.height)
        return out

    monkeypatch.setattr(patterns, "_where", counted)
    method = LocalSuppression(k=3)
    out = _on_engine(read_with_row(census.lazy(), "streaming"), "streaming", method, roles)
    _assert_same(out.collect(), _in_memory(census, method, roles))
    # (_on_engine runs the pattern path twice: the check, then the step)
    assert len(read) == 4 and 0 < sum(read[:2]) < census.height // 10


@pytest.mark.parametrize("block_households", [True, False])
def test_household_level_key(data, block_households) -> None:
    """A key constant within households (a region): a value lost by one member is lost by all
    (the release rule), with and without household blocking."""
    frame = data.with_columns(
        hl=pl.when(pl.col("hh") % 11 == 0).then(None).otherwise(pl.col("hh") % 9)
    )
    roles = {"keys": ["a", "b", "hl", "d"], "household": "hh", "household_level": ["hl"]}
    method = LocalSuppression(k=3, block_households=block_households)
    lf = read_with_row(frame.lazy(), "streaming")
    out = _on_engine(lf, "streaming", method, roles)
    want = _in_memory(frame, method, roles)
    _assert_same(out.collect(), want)
    lost = want.filter(pl.col("hl").is_null()).get_column("hh").unique()
    assert want.filter(pl.col("hh").is_in(lost.implode())).get_column("hl").null_count() > 0
    # a household-level key that is not constant: refused as in memory, same message
    uneven = frame.with_columns(hl=pl.col("a") % 3)
    with pytest.raises(DataError) as memory:
        Microdata(uneven, **roles)
    lf = read_with_row(uneven.lazy(), "streaming")
    with pytest.raises(DataError, match=re.escape(str(memory.value))):
        suppress_on_engine(lf, "streaming", method, seed=None, roles=roles)


def test_other_options_keep_the_collecting_path(data) -> None:
    """missing="category", fixed keys and subsets of keys: named, and still equal."""
    assert "category" in patterns.pattern_path_reason(LocalSuppression(missing="category"), ROLES)
    assert "fixed" in patterns.pattern_path_reason(LocalSuppression(fixed=["d"]), ROLES)
    assert "combinations" in patterns.pattern_path_reason(LocalSuppression(combinations=2), ROLES)
    method = LocalSuppression(k=2, missing="category")
    lf = read_with_row(data.lazy(), "streaming")
    out = suppress_on_engine(lf, "streaming", method, seed=None, roles=ROLES)
    _assert_same(out.collect(), _in_memory(data, method))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(10, 250),
    k=st.integers(2, 4),
    by_strata=st.booleans(),
    households=st.booleans(),
)
def test_random_files_streaming(seed, n, k, by_strata, households) -> None:
    frame = _frame(n, seed % 10_000)
    roles = dict(ROLES) if households else {c: v for c, v in ROLES.items() if c != "household"}
    method = LocalSuppression(k=k, by_strata=by_strata)
    lf = read_with_row(frame.lazy(), "streaming")
    smallest = int(frame.get_column("st").value_counts().get_column("count").min())
    if by_strata and smallest < k:  # refused on both paths, with the same message
        with pytest.raises(InfeasibleError) as memory:
            method.apply(Microdata(frame, **roles))
        with pytest.raises(InfeasibleError, match=re.escape(str(memory.value))):
            suppress_on_engine(lf, "streaming", method, seed=None, roles=roles)
        return
    out = _on_engine(lf, "streaming", method, roles)
    want = method.apply(Microdata(frame, **roles)).microdata.frame
    _assert_same(out.collect(), want)


# ------------------------------------------------------------------ Dask and Spark
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.parametrize("case", ["default", "strata"])
def test_dask_equals_in_memory(client, case, data, tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    path = tmp_path / "in"
    path.mkdir()
    data.head(500).write_parquet(path / "part-0.parquet")
    data.slice(500).write_parquet(path / "part-1.parquet")
    assert dd.read_parquet(str(path)).npartitions == 2
    out = _on_engine(read_with_row(str(path), "dask"), "dask", METHODS[case])
    _assert_same(pl.from_pandas(out.compute()), _in_memory(data, METHODS[case]), True)


@pytest.fixture(scope="module")
def spark():
    yield from spark_session("sdckit-pattern-suppression-tests")


@pytest.mark.parametrize("case", ["default", "strata"])
def test_spark_equals_in_memory(spark, case, data) -> None:
    sdf = spark.createDataFrame(data.to_arrow())
    assert sdf.rdd.getNumPartitions() == 2
    out = _on_engine(read_with_row(sdf, "spark"), "spark", METHODS[case])
    _assert_same(pl.from_arrow(out.toArrow()), _in_memory(data, METHODS[case]))


def test_joining_the_decisions_keeps_the_file_order_on_the_streaming_engine() -> None:
    """A release with order = "original" writes the streaming frame as it comes: the join of
    the suppression's decisions must not reorder it (polars' streaming join does unless asked
    to keep the left order; this size shows it)."""
    import narwhals as nw

    from sdckit.engines._steps import with_columns

    n = 2_000_000
    rng = np.random.default_rng(1)
    lf = pl.LazyFrame({"__sdckit_row": np.arange(n), "x": rng.integers(0, 100, n)})
    decisions = pl.DataFrame({"__sdckit_row": np.arange(0, n, 7), "d": np.int8(1)})
    out = with_columns(lf, "streaming", [nw.col("x") + 1], decisions, on="__sdckit_row")
    rows = out.collect(engine="streaming").get_column("__sdckit_row")
    assert rows.is_sorted() and rows.len() == n
