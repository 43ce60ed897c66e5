"""``sdckit protect`` of a Parquet job on the streaming engine: the same released file as the
in-memory runner (columns, new household ids, record order), k-anonymous by a recount."""

from __future__ import annotations

import textwrap
from pathlib import Path

import polars as pl
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
"""


def test_protect_on_streaming_equals_in_memory(tmp_path: Path) -> None:
    generate_census(3000, seed=5).write_parquet(tmp_path / "census.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(textwrap.dedent(JOB.format(engine="streaming")))
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "engine 'streaming'" in result.stdout
    assert "(recounted on the engine): 0" in result.stdout
    got = pl.read_parquet(tmp_path / "out.parquet")
    runner = Runner.from_job(load_job(job_file, writes=False, output_folder=True))
    runner.apply_job_steps()
    released = runner.release()
    want = released.frame if released.order is None else released.frame[released.order]
    assert got.columns == want.columns
    assert got.equals(want)  # record for record, in the released order


def test_protect_refuses_a_step_without_engine_version(tmp_path: Path) -> None:
    generate_census(500, seed=5).write_parquet(tmp_path / "census.parquet")
    text = textwrap.dedent(JOB.format(engine="streaming")).replace(
        'method = "top_bottom_coding"\ncolumns = ["income"]\nupper = 60000.0',
        'method = "pram"\nvariables = ["marital_status"]',
    )
    job_file = tmp_path / "job.toml"
    job_file.write_text(text)
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 2
    assert "no engine version" in result.stderr
    assert not (tmp_path / "out.parquet").exists()
