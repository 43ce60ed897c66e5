"""Risk and tables with several workers: a Dask LocalCluster of two worker processes and Spark
``local[2]`` with five shuffle partitions, on a generated census file, against the in-process
results.

The other engine tests run Dask's workers as threads of the test process and Spark with as many
shuffle partitions as cores; here the partitions cross process boundaries (Dask pickles the
class table and every partial aggregate between processes) and the group-by is shuffled over
more partitions than there are cores.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from engine_helpers import assert_same_risk, assert_same_table, spark_session

from sdckit.datasets import DEMO_ROLES
from sdckit.engines import risk_on_engine, table_on_engine

ROLES = {
    "keys": DEMO_ROLES["keys"],
    "weight": "weight",
    "household": "household_id",
    "sensitive": ["health_condition"],
}
# Spark's household risk is a second group-by and join: tested in test_spark_engine.py, left out
# here to keep the test short (each Spark query costs seconds on a busy 2-core machine)
SPARK_ROLES = {k: v for k, v in ROLES.items() if k != "household"}
AGE = {
    "Total": ["young", "adult", "old"],
    "young": ["00-04", "05-09", "10-14", "15-19"],
    "adult": ["20-24", "25-29", "30-34", "35-39", "40-44", "45-49", "50-54", "55-59", "60-64"],
    "old": ["65-69", "70-74", "75-79", "80-84", "85+"],
}
TABLE = {
    "dimensions": {"region": None, "age_group": AGE, "sex": None},
    "value": "income",
    "weight": "weight",
}


def _census(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path)


# ---------------------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.dataframe", reason="the dev extra installs dask")
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="1GiB",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
    # leaving the block closed both: no worker process is left behind
    assert cluster.status.name == "closed"


def _workers_used(stream: list[dict]) -> set[str]:
    return {task["worker"] for task in stream if task.get("worker")}


def test_dask_risk_on_two_worker_processes(dask_client, census_parquet, tmp_path) -> None:
    import dask.dataframe as dd
    import distributed

    data = dd.read_parquet(str(census_parquet), split_row_groups=True)
    assert data.npartitions == 8
    out = tmp_path / "risk"
    with distributed.get_task_stream(dask_client) as ts:
        res = risk_on_engine(data, output=out, **ROLES)
    assert res.engine == "dask"
    # both worker processes ran tasks (the group-by, the join, the write)
    assert _workers_used(ts.data) == set(dask_client.scheduler_info()["workers"])
    parts = sorted(out.glob("*.parquet"))
    assert len(parts) == 8  # one part file per partition, written by the workers
    assert_same_risk(res, _census(census_parquet), pl.read_parquet(parts), **ROLES)


def test_dask_table_on_two_worker_processes(dask_client, census_parquet) -> None:
    import dask.dataframe as dd
    import distributed

    data = dd.read_parquet(str(census_parquet), split_row_groups=True)
    with distributed.get_task_stream(dask_client) as ts:
        res = table_on_engine(data, **TABLE)
    assert res.engine == "dask"
    assert len(_workers_used(ts.data)) == 2
    assert_same_table(res, _census(census_parquet), TABLE)


# --------------------------------------------------------------------------------------- Spark
@pytest.fixture(scope="module")
def spark():
    yield from spark_session(
        "sdckit-cluster-tests",
        # more shuffle partitions than cores, and input splits of one row group each
        **{
            "spark.sql.shuffle.partitions": "5",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.files.maxPartitionBytes": "48k",
            "spark.sql.files.openCostInBytes": "0",
        },
    )


def test_spark_risk_on_local_2(spark, census_parquet, tmp_path) -> None:
    data = spark.read.parquet(str(census_parquet))
    assert spark.sparkContext.defaultParallelism == 2
    assert data.rdd.getNumPartitions() > 2  # more input splits than cores
    out = tmp_path / "risk"
    res = risk_on_engine(data, output=out, **SPARK_ROLES)
    assert res.engine == "spark"
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) > 2
    assert_same_risk(res, _census(census_parquet), pl.read_parquet(parts), **SPARK_ROLES)


def test_spark_table_on_local_2(spark, census_parquet) -> None:
    data = spark.read.parquet(str(census_parquet))
    res = table_on_engine(data, **TABLE)
    assert res.engine == "spark"
    assert_same_table(res, _census(census_parquet), TABLE)
