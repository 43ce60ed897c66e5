"""``sdckit check ORIGINAL RELEASED --job JOB``: the release check of written files."""

from __future__ import annotations

from pathlib import Path

import polars as pl
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
[target]
k = 3
[output]
data = "out/released.csv"
drop = ["district", "area", "stratum", "age"]
"""


def _setup(tmp_path: Path) -> Path:
    write_data(generate_census(1500, seed=4), tmp_path / "census.csv")
    job = tmp_path / "job.toml"
    job.write_text(JOB, encoding="utf-8")
    return job


def test_a_released_file_passes_its_check_and_a_tampered_one_fails(tmp_path: Path) -> None:
    job = _setup(tmp_path)
    result = runner.invoke(app, ["protect", str(job)])
    assert result.exit_code == 0, result.stderr
    released = tmp_path / "out" / "released.csv"
    original = tmp_path / "census.csv"
    ok = runner.invoke(app, ["check", str(original), str(released), "--job", str(job)])
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert "may be released" in ok.stdout
    # put the person id and the district back (in the released order): the check refuses
    from sdckit.jobs import load_job
    from sdckit.jobs.run import release_seed
    from sdckit.microdata import Microdata
    from sdckit.release import released_order

    spec = load_job(job)
    md = Microdata(read_data(original), **spec.microdata.roles())
    order = released_order(spec.release_plan, md, release_seed(spec))
    frame = read_data(released)
    source = read_data(original)[order]
    tampered = frame.with_columns(source["person_id"], source["district"])
    bad = tmp_path / "tampered.csv"
    write_data(tampered, bad)
    res = runner.invoke(app, ["check", str(original), str(bad), "--job", str(job)])
    assert res.exit_code == 1
    assert "'district' gives back" in res.stdout and "person_id" in res.stdout
    # the records of the released file are those of the original, in another order
    assert not frame["income"].equals(read_data(original)["income"])
    assert frame["income"].sort().equals(read_data(original)["income"].sort())


def test_bad_input_exits_2(tmp_path: Path) -> None:
    job = _setup(tmp_path)
    short = tmp_path / "short.csv"
    write_data(pl.read_csv(tmp_path / "census.csv").head(10), short)
    res = runner.invoke(app, ["check", str(tmp_path / "census.csv"), str(short), "--job", str(job)])
    assert res.exit_code == 2 and "number of records" in res.stderr
    res = runner.invoke(app, ["check", str(tmp_path / "none.csv"), str(short), "--job", str(job)])
    assert res.exit_code == 2 and "Traceback" not in res.stdout + res.stderr
