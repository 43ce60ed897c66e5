"""PRAM and additive noise on the engines: per record, the in-memory output for the same seed.

Every engine (polars in memory, the streaming engine in slices, Dask and Spark with one and
several partitions) gets the random file with missing values of every type; the output must
equal the in-memory method's, record by record (by ``__sdckit_row``), to the bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from engine_helpers import random_frame, spark_session
from hypothesis import given
from hypothesis import strategies as st

from sdckit._exact_sums import partial_moments
from sdckit._keyed_random import normals, uniforms
from sdckit.engines import EngineError
from sdckit.engines._random import noise_on_engine, pram_on_engine
from sdckit.errors import ColumnError, DataError
from sdckit.masking import AddNoise, Pram
from sdckit.masking.keyed import ROW, pram_plan

ROLES = {"keys": ["ka", "kb", "kc", "kd"], "numeric": ["x", "y", "t"], "strata": "s"}

METHODS = {
    "pram_strata": Pram(variables=["ka", "kb", "kc", "kd"], seed=4),
    "pram_controls": Pram(
        variables=["ka", "kb"],
        seed=5,
        by_strata=False,
        min_diagonal=0.5,
        forbidden=[{"ka": 1.0, "kb": "x"}],
        must_exist=[["kb", "kd"]],
        max_redraws=3,
    ),
    "pram_fixed": Pram(variables=["kd"], seed=6, diagonal="fixed", invariant=False),
    "noise": AddNoise(seed=9, variables=["x", "y"]),
    "noise_strata_edit": AddNoise(seed=10, noise=30, by_strata=True, balance=[("t", ["x", "y"])]),
}


@pytest.fixture(scope="module")
def data() -> pl.DataFrame:
    frame = random_frame(1500, seed=3).rename({"rid": ROW})
    x = (pl.col("w") * 3.0 + pl.col("kd").cast(pl.Float64)).alias("x")
    y = pl.when(pl.col(ROW) % 13 == 0).then(None).otherwise(pl.col("w") * 2.0).alias("y")
    frame = frame.with_columns(x, y, s=(pl.col(ROW) * 7 % 11) % 3)
    return frame.with_columns(t=pl.col("x") + pl.col("y"))


def _run(method, frame, engine, seed=None, roles=ROLES):
    step = pram_on_engine if isinstance(method, Pram) else noise_on_engine
    return step(frame, engine, method, seed=seed, roles=roles)


def _same(out: pl.DataFrame, ref: pl.DataFrame) -> None:
    """Equal record by record; NaN and null are one missing value off polars (pandas and
    Spark's Arrow do not keep them apart)."""
    out = out.sort(ROW)
    assert out.height == ref.height
    for c in ref.columns:
        a, b = out.get_column(c).cast(ref.schema[c]), ref.get_column(c)
        if b.dtype.is_float():
            a, b = a.fill_nan(None), b.fill_nan(None)
        assert a.equals(b, null_equal=True), c


def _reference(name: str, data: pl.DataFrame) -> pl.DataFrame:
    return METHODS[name].apply(data, **ROLES).data


# ------------------------------------------------------------------------------ polars
@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("chunk", [None, 97])
def test_polars_and_streaming_equal_in_memory(data, name, chunk) -> None:
    ref = _reference(name, data)
    _same(_run(METHODS[name], data, "polars"), ref)
    with pl.Config(streaming_chunk_size=chunk):  # 97 records a slice: 16 slices
        out = _run(METHODS[name], data.lazy(), "streaming").collect(engine="streaming")
    _same(out, ref)
    assert not out.sort(ROW).equals(data)  # something was protected


@pytest.mark.parametrize("name", sorted(METHODS))
def test_different_seeds_differ_and_the_caller_seed_wins(data, name) -> None:
    a = _run(METHODS[name], data, "polars")
    b = _run(METHODS[name], data, "polars", seed=12345)
    assert not a.equals(b)
    method = METHODS[name]
    ref = type(method)(**{**method.get_params(), "seed": 12345}).apply(data, **ROLES).data
    _same(b, ref)


def test_steps_that_need_every_record_are_refused(data) -> None:
    with pytest.raises(EngineError, match="additive"):
        _run(AddNoise(method="correlated", seed=1), data, "polars")
    house = {**ROLES, "household": "hh", "household_level": ["kd"]}
    with pytest.raises(EngineError, match="household-level"):
        _run(Pram(variables=["kd"], seed=1), data, "polars", roles=house)
    with pytest.raises(ColumnError, match="__sdckit_row"):
        _run(METHODS["noise"], data.drop(ROW), "polars")
    with pytest.raises(DataError, match="balance edit"):
        _run(METHODS["noise_strata_edit"], data.with_columns(t=pl.col("t") + 1), "polars")
    with pytest.raises(EngineError, match="Unknown engine"):
        _run(METHODS["noise"], data, "ray")


# ------------------------------------------------------------------------------ keyed draws
@given(cuts=st.lists(st.integers(1, 1499), max_size=6, unique=True), key=st.integers(0, 2**64 - 1))
def test_the_draws_of_a_row_never_depend_on_the_cut(cuts, key) -> None:
    rows = np.arange(1500, dtype=np.int64)
    bounds = [0, *sorted(cuts), 1500]
    for draw in (uniforms, normals):
        whole = draw(key, 3, rows)
        pieces = np.concatenate([draw(key, 3, rows[a:b]) for a, b in itertools.pairwise(bounds)])
        np.testing.assert_array_equal(pieces, whole)
    assert (uniforms(key, 0, rows) != uniforms(key, 1, rows)).all()
    assert ((whole > -9) & (whole < 9)).all()


@given(cuts=st.lists(st.integers(1, 1499), max_size=5, unique=True))
def test_a_plan_applied_to_any_cut_gives_the_in_memory_output(data, cuts) -> None:
    method = METHODS["pram_controls"]
    counts = {c: data.group_by([c]).agg(pl.len().alias("__n")) for c in method.variables}
    present = {("kb", "kd"): data.select("kb", "kd").unique()}
    plan = pram_plan(method, counts, strata=None, present=present)
    bounds = [0, *sorted(cuts), data.height]
    pieces = pl.concat([plan.apply(data[a:b]) for a, b in itertools.pairwise(bounds)])
    _same(pieces, _reference("pram_controls", data))


@given(cuts=st.lists(st.integers(1, 999), max_size=5, unique=True))
def test_exact_moments_do_not_depend_on_the_cut(cuts) -> None:
    rng = np.random.default_rng(1)
    x = rng.lognormal(5, 2, size=(1000, 2)) * rng.choice([-1, 1], size=(1000, 2))
    x[::17, 1] = np.nan
    group = rng.integers(0, 3, 1000)
    whole = partial_moments(x, group, 3)
    bounds = [0, *sorted(cuts), 1000]
    parts = [partial_moments(x[a:b], group[a:b], 3) for a, b in itertools.pairwise(bounds)]
    total = parts[0]
    for p in parts[1:]:
        total = total.add(p)
    np.testing.assert_array_equal(total.sd(), whole.sd())
    want = [np.nanstd(x[group == g], axis=0, ddof=1) for g in range(3)]
    np.testing.assert_allclose(whole.sd(), want, rtol=1e-12)


# ------------------------------------------------------------------------------ Dask
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("npartitions", [1, 4])
def test_dask_equals_in_memory(client, data, name, npartitions) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(data.to_pandas(), npartitions=npartitions)
    out = _run(METHODS[name], frame, "dask").compute()
    _same(pl.from_pandas(out), _reference(name, data))


# ------------------------------------------------------------------------------ Spark
@pytest.fixture(scope="module")
def spark():
    yield from spark_session("sdckit-random-steps")


@pytest.mark.parametrize(
    ("name", "partitions"), [(name, 3) for name in sorted(METHODS)] + [("pram_strata", 1)]
)
def test_spark_equals_in_memory(spark, data, name, partitions) -> None:
    frame = spark.createDataFrame(data.to_arrow()).repartition(partitions)
    out = pl.from_arrow(_run(METHODS[name], frame, "spark").toArrow())
    _same(out, _reference(name, data))


def test_pram_and_noise_with_one_seed_draw_from_different_keys() -> None:
    from sdckit.masking._keyed_draws import base_sequence, noise_key, pram_keys

    for seed in (0, 5, 123):
        assert pram_keys(seed, 1)[1] != noise_key(base_sequence(seed))
        assert pram_keys(seed, 1)[1] != noise_key(seed)


def test_an_infinite_value_is_refused_not_left_without_noise(data) -> None:
    """Its standard deviation is undefined: the whole variable would get no noise."""
    bad = data.with_columns(x=pl.when(pl.col(ROW) == 3).then(np.inf).otherwise(pl.col("x")))
    for engine in ("polars", "streaming"):
        frame = bad if engine == "polars" else bad.lazy()
        with pytest.raises(DataError, match="'x' has infinite values"):
            _run(METHODS["noise"], frame, engine)
    from sdckit import Microdata

    with pytest.raises(DataError, match="'x' has infinite values"):
        METHODS["noise"].apply(Microdata(bad.drop(ROW), numeric=["x", "y"]))
