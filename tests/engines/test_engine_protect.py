"""Protection steps on the engines (streaming, Dask, Spark) against the in-memory methods.

Each engine's output, read back in file order by the row index, must equal the in-memory
method's output record by record (and so as a multiset), with missing key values; the
released file is recounted k-anonymous on the engine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from engine_helpers import spark_session

from sdckit.engines import EngineError
from sdckit.engines._protect import k_violations_on_engine, run_steps
from sdckit.engines._rows import ROW, collect, read_with_row, write_parts
from sdckit.masking import AddNoise, Shuffling
from sdckit.masking.recoding import GlobalRecoding, TopBottomCoding
from sdckit.masking.suppression import LocalSuppression
from sdckit.microdata import Microdata

ROLES = {
    "keys": ["ka", "kb", "kc", "kd", "ag"],
    "numeric": ["w2", "age"],
    "weight": "w",
    "strata": "st",
}


def _data() -> pl.DataFrame:
    from engine_helpers import random_frame

    frame = random_frame(1500, seed=5).drop("hh", "disease")
    rng = np.random.default_rng(3)
    return frame.with_columns(
        pl.Series("w2", rng.gamma(2.0, 50.0, frame.height)),
        pl.Series("st", rng.integers(0, 2, frame.height)),
        pl.Series("age", rng.integers(0, 90, frame.height)),
        pl.Series("ag", rng.integers(0, 12, frame.height)),
    )


#: The methods compared (each alone and all three in a row).
METHODS = {
    "recode": [GlobalRecoding(mapping={"kd": [{1: 1, 2: 1, 3: 2}, {2: 9}], "kb": {"x": "xy"}})],
    "topbottom": [
        TopBottomCoding(columns="w2", upper=150.0, lower=20.0, replacement="threshold"),
        TopBottomCoding(
            columns=["w2", "age"], upper={"w2": 200.0, "age": 80}, replacement="mean", weighted=True
        ),
    ],
    "suppress": [LocalSuppression(k=3)],
    "suppress_strata": [LocalSuppression(k=2, by_strata=True, block_inference=False)],
    "job": [
        GlobalRecoding(mapping={"kd": {1: 1, 2: 1, 3: 2, 4: 2, 5: 2}}),
        TopBottomCoding(columns="w2", upper=150.0),
        LocalSuppression(k=3, importance=[5, 4, 3, 2, 1]),
    ],
}


def _in_memory(frame: pl.DataFrame, methods) -> pl.DataFrame:
    md = Microdata(frame, **ROLES)
    for m in methods:
        res = m.apply(md)
        if isinstance(m, LocalSuppression):  # the comparison is worth something
            assert res.details["suppressions"] > 20
        md = res.microdata
    return md.frame


def _assert_equal(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Per record (by the row index) and so as a multiset; floats to 1e-12 (tail means)."""
    got = got.sort(ROW).drop(ROW)
    assert got.columns == want.columns
    assert got.height == want.height
    for name in want.columns:
        a, b = got.get_column(name), want.get_column(name)
        if b.dtype.is_float():
            a, b = a.cast(pl.Float64).fill_nan(None), b.fill_nan(None)
            assert a.is_null().equals(b.is_null()), name
            np.testing.assert_allclose(
                a.drop_nulls().to_numpy(), b.drop_nulls().to_numpy(), rtol=1e-12, err_msg=name
            )
        else:
            assert a.cast(pl.String).equals(b.cast(pl.String), check_names=False), name
    rows = lambda f: sorted(map(str, f.select(pl.all().cast(pl.String)).rows()))  # noqa: E731
    floats = [c for c in want.columns if want.schema[c].is_float()]
    assert rows(got.drop(floats)) == rows(want.drop(floats))


def _run(frame, engine: str, methods) -> object:
    native = read_with_row(frame, engine)
    return run_steps(native, engine, methods, [None] * len(methods), ROLES)


@pytest.fixture(scope="module")
def data() -> pl.DataFrame:
    return _data()


# ------------------------------------------------------------------ streaming
@pytest.mark.parametrize("case", sorted(METHODS))
def test_streaming_equals_in_memory(case, data, tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    data.write_parquet(path, row_group_size=400)
    out = _run(path, "streaming", METHODS[case])
    _assert_equal(out.collect(engine="streaming"), _in_memory(data, METHODS[case]))


def test_row_index_and_atomic_parts(data, tmp_path: Path) -> None:
    lf = read_with_row(data.lazy(), "streaming")
    assert collect(lf, "streaming", ["ka"]).get_column(ROW).to_list() == list(range(data.height))
    target = tmp_path / "out"
    write_parts(lf, "streaming", target)
    write_parts(lf, "streaming", target)  # over an older output
    back = pl.read_parquet(target)
    assert back.equals(data)
    order = np.random.default_rng(1).permutation(data.height)
    with pytest.MonkeyPatch.context() as mp:  # several sorted parts
        mp.setattr("sdckit.engines._rows.PART_ROWS", 400)
        write_parts(lf, "streaming", target, order)
    assert len(list(target.iterdir())) == 4
    assert pl.read_parquet(target / "*.parquet").equals(data[order])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary left


def test_k_anonymous_by_recount(data) -> None:
    lf = read_with_row(data.lazy(), "streaming")
    assert k_violations_on_engine(lf, "streaming", ROLES["keys"], 3) > 0
    out = run_steps(lf, "streaming", [LocalSuppression(k=3)], [None], ROLES)
    assert k_violations_on_engine(out, "streaming", ROLES["keys"], 3) == 0


def test_unsupported_refused(data) -> None:
    lf = read_with_row(data.lazy(), "streaming")
    with pytest.raises(EngineError, match="in memory"):  # no engine version
        run_steps(lf, "streaming", [Shuffling(variables=["w2"], seed=1)], [1], ROLES)
    with pytest.raises(EngineError, match="moments of every record"):
        run_steps(lf, "streaming", [AddNoise(method="correlated", seed=1)], [1], ROLES)
    quantile = TopBottomCoding(columns="w2", upper=0.9, quantile=True)
    with pytest.raises(EngineError, match="quantile=True"):
        run_steps(lf, "streaming", [quantile], [None], ROLES)


# ------------------------------------------------------------------ Dask
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.parametrize("case", ["job", "suppress_strata", "topbottom"])
def test_dask_equals_in_memory(client, case, data, tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    path = tmp_path / "in"
    path.mkdir()
    data.head(700).write_parquet(path / "part-0.parquet")
    data.slice(700).write_parquet(path / "part-1.parquet")
    assert dd.read_parquet(str(path)).npartitions == 2
    out = _run(path, "dask", METHODS[case])
    _assert_equal(pl.from_pandas(out.compute()), _in_memory(data, METHODS[case]))
    if case == "job":
        assert k_violations_on_engine(out.drop(columns=[ROW]), "dask", ROLES["keys"], 3) == 0


# ------------------------------------------------------------------ Spark
@pytest.fixture(scope="module")
def spark():
    yield from spark_session("sdckit-protect-tests")


@pytest.mark.parametrize("case", ["job", "topbottom"])
def test_spark_equals_in_memory(spark, case, data) -> None:
    sdf = spark.createDataFrame(data.to_arrow())
    assert sdf.rdd.getNumPartitions() == 2
    out = _run(sdf, "spark", METHODS[case])
    _assert_equal(pl.from_arrow(out.toArrow()), _in_memory(data, METHODS[case]))
    if case == "job":
        assert k_violations_on_engine(out.drop(ROW), "spark", ROLES["keys"], 3) == 0
