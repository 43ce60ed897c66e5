"""Risk and tables on Dask (a dask.distributed LocalCluster) against the in-process results."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from engine_helpers import (
    CASES,
    RANDOM_KEYS,
    TABLE_CASES,
    assert_same_risk,
    assert_same_table,
    case_data,
)

from sdckit.engines import risk_on_engine, table_on_engine
from sdckit.errors import ParameterError

dd = pytest.importorskip("dask.dataframe", reason="the dev extra installs dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _dask(frame: pl.DataFrame, npartitions: int = 3):
    """``frame`` on Dask; integer columns with missing values stay integers (pandas' Int64)."""
    pdf = frame.to_pandas()
    for name, dtype in frame.schema.items():
        if dtype.is_integer() and frame.get_column(name).null_count():
            pdf[name] = pdf[name].astype("Int64")
    return dd.from_pandas(pdf, npartitions=npartitions)


@pytest.mark.parametrize("case", sorted(CASES))
def test_risk_equals_in_process(client, case, testdata, random_data) -> None:
    frame = case_data(case, testdata, random_data)
    roles = CASES[case]
    res = risk_on_engine(_dask(frame), **roles)
    assert res.engine == "dask"
    assert isinstance(res.records, dd.DataFrame)  # lazy, on the cluster
    out = res.records.compute()
    assert list(out.index) == list(range(frame.height))  # rows and index kept
    assert_same_risk(res, frame, pl.from_pandas(out), **roles)


def test_partitioned_parquet(client, tmp_path: Path, random_data) -> None:
    roles = CASES["random"]
    out = tmp_path / "risk"
    res = risk_on_engine(_dask(random_data, 4), output=out, **roles)
    assert res.records is None
    assert len(list(out.glob("*.parquet"))) == 4
    assert_same_risk(res, random_data, pl.read_parquet(out / "*.parquet"), **roles)


def test_parquet_path_on_dask(client, tmp_path: Path, random_data) -> None:
    src = tmp_path / "in.parquet"
    random_data.write_parquet(src)
    res = risk_on_engine(src, keys=RANDOM_KEYS, weight="w", engine="dask")
    assert res.engine == "dask"
    assert_same_risk(
        res, random_data, pl.from_pandas(res.records.compute()), keys=RANDOM_KEYS, weight="w"
    )


def test_dask_frame_runs_only_on_dask(client, random_data) -> None:
    with pytest.raises(ParameterError, match="engine='dask'"):
        risk_on_engine(_dask(random_data), keys=RANDOM_KEYS, engine="streaming")


@pytest.mark.parametrize("case", sorted(TABLE_CASES))
def test_table_equals_from_microdata(client, case, testdata, random_data) -> None:
    which, args = TABLE_CASES[case]
    frame = testdata if which == "testdata" else random_data
    res = table_on_engine(_dask(frame), **args)
    assert res.engine == "dask"
    assert_same_table(res, frame, args)
