"""Risk and tables on Spark (local[2]) against the in-process results."""

from __future__ import annotations

import os
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
    java_home,
)

from sdckit.engines import risk_on_engine, table_on_engine

if java_home() is None and not os.environ.get("CI"):  # pragma: no cover - CI installs Java
    pytest.skip("PySpark needs a Java runtime (.ci/run installs openjdk)", allow_module_level=True)

pyspark_sql = pytest.importorskip("pyspark.sql", reason="the dev extra installs pyspark")


@pytest.fixture(scope="module")
def spark():
    home = java_home()
    if home is not None:
        os.environ.setdefault("JAVA_HOME", home)
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("sdckit-engine-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark(session, frame: pl.DataFrame):
    return session.createDataFrame(frame.to_arrow())


def _collect(sdf) -> pl.DataFrame:
    return pl.from_arrow(sdf.toArrow())


@pytest.mark.parametrize("case", sorted(CASES))
def test_risk_equals_in_process(spark, case, testdata, random_data) -> None:
    frame = case_data(case, testdata, random_data)
    roles = CASES[case]
    res = risk_on_engine(_spark(spark, frame), **roles)
    assert res.engine == "spark"
    assert isinstance(res.records, pyspark_sql.DataFrame)  # lazy, on Spark
    assert_same_risk(res, frame, _collect(res.records), **roles)


def test_partitioned_parquet(spark, tmp_path: Path, random_data) -> None:
    roles = CASES["random"]
    out = tmp_path / "risk"
    res = risk_on_engine(_spark(spark, random_data), output=out, **roles)
    assert res.records is None and res.output == out
    assert list(out.glob("part-*.parquet"))
    assert_same_risk(res, random_data, pl.read_parquet(out / "part-*.parquet"), **roles)


def test_parquet_path_with_the_active_session(spark, tmp_path: Path, random_data) -> None:
    src = tmp_path / "in.parquet"
    random_data.write_parquet(src)
    res = risk_on_engine(src, keys=RANDOM_KEYS, weight="w", engine="spark")
    assert_same_risk(res, random_data, _collect(res.records), keys=RANDOM_KEYS, weight="w")


@pytest.mark.parametrize("case", sorted(TABLE_CASES))
def test_table_equals_from_microdata(spark, case, testdata, random_data) -> None:
    which, args = TABLE_CASES[case]
    frame = testdata if which == "testdata" else random_data
    res = table_on_engine(_spark(spark, frame), **args)
    assert res.engine == "spark"
    assert_same_table(res, frame, args)
