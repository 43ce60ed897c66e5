"""``sdckit protect`` of a Parquet job on the streaming engine: the same released file as the
in-memory runner (columns, new household ids, record order), k-anonymous by a recount."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import polars as pl
import pytest
from engine_helpers import released_in_memory
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_census
from sdckit.jobs import load_job
from sdckit.jobs.runner import Runner

JOB = """
seed = 11
[input]
file = "census.parquet"
engine = "{engine}"
[roles]
keys = ["region", "sex", "age_group", "marital_status", "education"]
numeric = ["income"]
weight = "weight"
household = "household_id"
identifiers = ["person_id"]
[[steps]]
method = "global_recoding"
[steps.mapping.age_group]
"00-04" = "00-09"
"05-09" = "00-09"
[[steps]]
method = "top_bottom_coding"
columns = ["income"]
upper = 60000.0
[[steps]]
method = "local_suppression"
k = 3
[target]
k = 3
[output]
data = "out.parquet"
keep = ["household_id", "region", "sex", "age_group", "marital_status", "education", "income",
        "weight"]
"""


def test_protect_on_streaming_equals_in_memory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("sdckit.engines._rows.PART_ROWS", 1000)  # three sorted parts
    generate_census(3000, seed=5).write_parquet(tmp_path / "census.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(textwrap.dedent(JOB.format(engine="streaming")))
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "engine 'streaming'" in result.stdout
    assert "(recounted on the engine): 0" in result.stdout
    assert len(list((tmp_path / "out.parquet").iterdir())) == 3
    got = pl.read_parquet(tmp_path / "out.parquet" / "*.parquet")
    _, _, want = released_in_memory(job_file)
    assert got.columns == want.columns
    assert got.equals(want)  # record for record, in the released order
    # the staged protected records (read by the check and the write) are gone
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_protect_refuses_a_step_without_engine_version(tmp_path: Path) -> None:
    generate_census(500, seed=5).write_parquet(tmp_path / "census.parquet")
    text = textwrap.dedent(JOB.format(engine="streaming")).replace(
        'method = "top_bottom_coding"\ncolumns = ["income"]\nupper = 60000.0',
        'method = "shuffling"\nvariables = ["income"]',
    )
    job_file = tmp_path / "job.toml"
    job_file.write_text(text)
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 2
    assert "no engine version" in result.stderr
    assert not (tmp_path / "out.parquet").exists()


def _reference(job_file: Path, data: Path | None = None) -> pl.DataFrame:
    job = load_job(job_file, writes=False, output_folder=True, input_file=data)
    runner = Runner.from_job(job)
    runner.apply_job_steps()
    released = runner.release()
    return released.frame if released.order is None else released.frame[released.order]


def test_job_on_dask_equals_in_memory(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from sdckit.jobs.engine_job import plan_engine_job, run_engine_job

    data = generate_census(2000, seed=5)
    folder = tmp_path / "census.parquet"
    folder.mkdir()
    data.head(900).write_parquet(folder / "part-0.parquet")
    data.slice(900).write_parquet(folder / "part-1.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(textwrap.dedent(JOB.format(engine="dask")))
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster):
        chosen, _, job = plan_engine_job(job_file)
        result = run_engine_job(job, chosen)
    cluster.close()
    assert (chosen, result.k_violations, result.records) == ("dask", 0, 2000)
    got = pl.read_parquet(tmp_path / "out.parquet")
    data.write_parquet(tmp_path / "whole.parquet")
    want = _reference(job_file, tmp_path / "whole.parquet")
    assert got.columns == want.columns
    got = got.with_columns(pl.col(c).cast(want.schema[c]) for c in want.columns)
    assert got.equals(want)  # record for record, in the released order


def test_job_on_spark_equals_in_memory(tmp_path: Path) -> None:
    from engine_helpers import java_home

    if java_home() is None:
        pytest.skip("PySpark needs a Java runtime")
    sql = pytest.importorskip("pyspark.sql")
    from sdckit.jobs.engine_job import plan_engine_job, run_engine_job

    os.environ.setdefault("JAVA_HOME", str(java_home()))
    generate_census(2000, seed=5).write_parquet(tmp_path / "census.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(textwrap.dedent(JOB.format(engine="spark")))
    session = (
        sql.SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    try:
        chosen, _, job = plan_engine_job(job_file)
        result = run_engine_job(job, chosen)
    finally:
        session.stop()
    assert (chosen, result.k_violations, result.records) == ("spark", 0, 2000)
    got = pl.read_parquet(tmp_path / "out.parquet")
    want = _reference(job_file)
    assert sorted(got.columns) == sorted(want.columns)
    got = got.select(want.columns).with_columns(
        pl.col(c).cast(want.schema[c]) for c in want.columns
    )
    # Spark writes one part file per partition of the sorted frame: read in name order
    assert got.equals(want)


def test_auto_runs_a_small_parquet_job_in_memory(tmp_path: Path) -> None:
    from sdckit.jobs.engine_job import plan_engine_job

    generate_census(500, seed=5).write_parquet(tmp_path / "census.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(textwrap.dedent(JOB.format(engine="auto")))
    chosen, reason, job = plan_engine_job(job_file)
    assert (chosen, job) == (None, None)
    assert "memory" in reason
    with pytest.MonkeyPatch.context() as mp:  # a threshold below the file: streaming
        mp.setenv("SDCKIT_STREAMING_BYTES", "1000")
        chosen, reason, job = plan_engine_job(job_file)
    assert chosen == "streaming" and "auto" in reason and job is not None
    text = textwrap.dedent(JOB.format(engine="auto")).replace(
        'method = "top_bottom_coding"\ncolumns = ["income"]\nupper = 60000.0',
        'method = "shuffling"\nvariables = ["income"]',
    )
    job_file.write_text(text)
    with pytest.MonkeyPatch.context() as mp:  # a step without engine version: in memory
        mp.setenv("SDCKIT_STREAMING_BYTES", "1000")
        chosen, reason, _ = plan_engine_job(job_file)
    assert chosen is None and "no engine version" in reason


def test_a_file_below_k_is_not_released(tmp_path: Path) -> None:
    generate_census(1000, seed=5).write_parquet(tmp_path / "census.parquet")
    older = tmp_path / "out.parquet"
    older.mkdir()
    (older / "part-0.parquet").write_bytes(b"an older release")
    text = textwrap.dedent(JOB.format(engine="streaming"))
    text = text.replace('[[steps]]\nmethod = "local_suppression"\nk = 3\n', "")
    job_file = tmp_path / "job.toml"
    job_file.write_text(text)
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 1
    assert "it was not written" in result.stderr
    assert not older.exists()  # no older release left behind as if it were this one
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_release_check_on_the_engine_refuses_what_memory_refuses(tmp_path: Path) -> None:
    """Released with every column (district gives region back, age gives age_group back):
    the in-memory check refuses it, and so does the check on the engine, from its aggregates
    and its sample; nothing is written, an older release is removed, the internal report
    says why and the external one is not written."""
    generate_census(3000, seed=5).write_parquet(tmp_path / "census.parquet")
    text = textwrap.dedent(JOB.format(engine="streaming")).replace(
        'keep = ["household_id", "region", "sex", "age_group", "marital_status", "education", '
        '"income",\n        "weight"]',
        'report_internal = "internal.html"\nreport_external = "external.html"',
    )
    assert "keep" not in text
    job_file = tmp_path / "job.toml"
    job_file.write_text(text)
    (tmp_path / "out.parquet").mkdir()
    (tmp_path / "out.parquet" / "old.parquet").write_bytes(b"an older release")
    (tmp_path / "external.html").write_text("an older report")
    runner = Runner.from_job(load_job(job_file, writes=False, output_folder=True))
    runner.apply_job_steps()
    assert runner.release().refusal() is not None  # memory refuses it
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "the release check refused the released file" in result.stderr
    assert not (tmp_path / "out.parquet").exists()
    assert not (tmp_path / "external.html").exists()
    internal = (tmp_path / "internal.html").read_text(encoding="utf-8")
    assert "district" in internal and "region" in internal
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_census_job_with_pram_on_streaming_equals_in_memory(tmp_path: Path) -> None:
    """The issue's census job (recoding, PRAM of one key, local suppression to k = 3)
    through ``sdckit protect`` on the streaming engine: the in-memory runner's released file,
    record for record, PRAM's keyed draws included."""
    generate_census(3000, seed=6).write_parquet(tmp_path / "census.parquet")
    text = textwrap.dedent(JOB.format(engine="streaming")).replace(
        '[[steps]]\nmethod = "local_suppression"',
        '[[steps]]\nmethod = "pram"\nvariables = ["marital_status"]\n\n'
        '[[steps]]\nmethod = "local_suppression"',
    )
    assert text.count("[[steps]]") == 4
    job_file = tmp_path / "job.toml"
    job_file.write_text(text)
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Step 3: PRAM" in result.stdout
    got = pl.read_parquet(tmp_path / "out.parquet" / "*.parquet")
    runner, released, want = released_in_memory(job_file)
    assert released.refusal() is None
    assert got.equals(want)
    changed = runner.current.frame["marital_status"] != runner.original.frame["marital_status"]
    assert 0 < int(changed.sum()) < 3000  # PRAM changed some categories
