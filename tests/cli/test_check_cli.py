"""``sdckit check ORIGINAL RELEASED --job JOB``: the release check of written files.

Every column of the released file is read (columns the original does not have too); the
records are lined up with the original from the seed the file was written with, or the check
refuses with one line; the original is read as the job reads its input.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_census
from sdckit.io import read_data, write_data

runner = CliRunner()

JOB = """
seed = 7
[input]
file = "census.csv"
[roles]
keys = ["region", "sex", "age_group", "marital_status"]
numeric = ["income"]
weight = "weight"
household = "household_id"
household_level = ["region", "urban_rural", "household_size", "household_income"]
identifiers = ["person_id"]
[[steps]]
method = "local_suppression"
k = 3
importance = [1, 4, 3, 2]
[[steps]]
method = "weight_calibration"
[target]
k = 3
[output]
data = "out/released.csv"
drop = ["district", "area", "stratum", "age", "economic_activity", "relationship", "occupation"]
"""


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_data(generate_census(1500, seed=4), tmp_path / "census.csv")
    path = tmp_path / "job.toml"
    path.write_text(JOB, encoding="utf-8")
    return path


def _released(job: Path, *extra: str) -> Path:
    code, _, stderr = run("protect", job, *extra)
    assert code == 0, stderr
    return job.parent / "out" / "released.csv"


def _order(job: Path, seed: int | None = None):  # type: ignore[no-untyped-def]
    from sdckit.jobs import load_job
    from sdckit.jobs.run import release_seed
    from sdckit.release import released_order

    spec = load_job(job, seed=seed)
    return released_order(spec.release_plan, spec.microdata, release_seed(spec))


def test_a_released_file_passes_its_check_and_a_tampered_one_fails(job: Path) -> None:
    released = _released(job)
    original = job.parent / "census.csv"
    code, stdout, stderr = run("check", original, released, "--job", job)
    assert code == 0, stdout + stderr
    assert "may be released" in stdout and "Intruder model" in stdout
    # put the person id and the district back (in the released order): the check refuses
    frame = read_data(released)
    source = read_data(original)[_order(job)]
    tampered = frame.with_columns(source["person_id"], source["district"])
    bad = job.parent / "tampered.csv"
    write_data(tampered, bad)
    code, stdout, _ = run("check", original, bad, "--job", job)
    assert code == 1
    assert "'district' gives back" in stdout and "person_id" in stdout
    # the records of the released file are those of the original, in another order
    assert not frame["income"].equals(read_data(original)["income"])
    assert frame["income"].sort().equals(read_data(original)["income"].sort())


def test_columns_in_another_order_give_the_same_verdict(job: Path) -> None:
    released = _released(job)
    frame = read_data(released)
    shuffled = job.parent / "columns.csv"
    write_data(frame.select(list(reversed(frame.columns))), shuffled)
    code, stdout, _ = run("check", job.parent / "census.csv", shuffled, "--job", job)
    assert code == 0 and "may be released" in stdout


def test_a_column_the_original_does_not_have_is_read(job: Path) -> None:
    released = _released(job)
    frame = read_data(released)
    source = read_data(job.parent / "census.csv")[_order(job)]
    copied = frame.with_columns(source["region"].alias("home_region"))
    assert frame["region"].null_count() > 0  # the job suppressed regions
    path = job.parent / "copied.csv"
    write_data(copied, path)
    code, stdout, stderr = run("check", job.parent / "census.csv", path, "--job", job)
    assert code == 1
    assert "'home_region' gives back" in stdout
    assert "original does not have (read as well): home_region" in stdout
    assert "Traceback" not in stdout + stderr


def test_fewer_records_or_a_missing_file_exit_2(job: Path) -> None:
    released = _released(job)
    short = job.parent / "short.csv"
    write_data(read_data(released).head(10), short)
    code, _, stderr = run("check", job.parent / "census.csv", short, "--job", job)
    assert code == 2 and "10 records" in stderr and "whole" in stderr
    assert len(stderr.strip().splitlines()) == 1
    code, stdout, stderr = run("check", job.parent / "none.csv", short, "--job", job)
    assert code == 2 and "Traceback" not in stdout + stderr


def test_a_file_written_with_another_seed_is_refused_not_misaligned(job: Path) -> None:
    released = _released(job, "--seed", "99")
    original = job.parent / "census.csv"
    # the job's own seed (7) draws another order: the records do not line up
    code, _, stderr = run("check", original, released, "--job", job)
    assert code == 2 and "do not line up" in stderr and "--seed" in stderr
    assert len(stderr.strip().splitlines()) == 1
    code, stdout, stderr = run("check", original, released, "--job", job, "--seed", "99")
    assert code == 0, stdout + stderr


def test_the_job_reads_its_input_options(job: Path) -> None:
    # [input] rows: the original is read as the job read it (the first 800 records)
    text = job.read_text(encoding="utf-8").replace('file = "census.csv"',
                                                   'file = "census.csv"\nrows = 800')  # fmt: skip
    job.write_text(text, encoding="utf-8")
    released = _released(job)
    assert read_data(released).height == 800
    code, stdout, stderr = run("check", job.parent / "census.csv", released, "--job", job)
    assert code == 0, stdout + stderr


def test_a_job_without_a_target_is_checked_against_the_default(job: Path) -> None:
    text = job.read_text(encoding="utf-8").replace("[target]\nk = 3\n", "")
    job.write_text(text, encoding="utf-8")
    code, stdout, stderr = run("protect", job)
    assert code == 0, stderr
    assert (
        "The job gives no [target]: the default target (3-anonymity, global risk <= 1 %" in stdout
    )
    # every bound with the released file's value; the k the count refers to is named
    assert "k-anonymity: smallest class 3 (target 3), 0 records below it" in stdout
    assert "global risk (%):" in stdout and "household risk (%):" in stdout
    assert "0 records below 3-anonymity" in stdout
    released = job.parent / "out" / "released.csv"
    code, stdout, _ = run("check", job.parent / "census.csv", released, "--job", job)
    assert code == 0
    assert "the default (3-anonymity" in stdout and "records violating 3-anonymity" in stdout


def test_numbers_in_messages_are_counts_not_values(job: Path) -> None:
    released = _released(job)
    frame = read_data(released)
    # a person number the original does not have: found, named, never printed
    marker = pl.Series("marker", 987_654_321 + pl.int_range(frame.height, eager=True) * 7)
    path = job.parent / "marker.csv"
    write_data(frame.with_columns(marker), path)
    code, stdout, stderr = run("check", job.parent / "census.csv", path, "--job", job)
    assert code == 1 and "'marker'" in stdout and "identifies records" in stdout
    assert "9876543" not in stdout + stderr
