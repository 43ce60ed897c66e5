"""End-to-end tests of ``sdckit table JOB.toml``: rules, secondary suppression, audit, outputs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_census
from sdckit.io import read_data, write_data

runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def census_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "census.csv"
    write_data(generate_census(1500, seed=5), path)
    return path


def job_text(data: Path) -> str:
    return textwrap.dedent(
        f"""
        title = "Persons by region and occupation"
        [input]
        file = "{data.as_posix()}"
        [table]
        dimensions = ["region", "occupation"]
        [[rules]]
        rule = "min_frequency"
        threshold = 3
        [suppression]
        method = "optimal"
        [audit]
        [output]
        table = "out/published.csv"
        table_full = "out/full.csv"
        """
    )


def assert_one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 2, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_table_job_suppresses_small_cells_and_passes_the_audit(
    tmp_path: Path, census_csv: Path
) -> None:
    job = tmp_path / "job.toml"
    job.write_text(job_text(census_csv), encoding="utf-8")
    code, stdout, stderr = run("table", job)
    assert code == 0, stderr
    assert "every suppressed cell protected" in stdout
    full = read_data(tmp_path / "out" / "full.csv")
    published = read_data(tmp_path / "out" / "published.csv")
    # the interior cells, recomputed from the microdata
    counts = read_data(census_csv).group_by("region", "occupation").len()
    interior = full.filter(~pl.col("is_total")).join(
        counts, on=["region", "occupation"], how="left"
    )
    assert (interior["value"] == interior["len"].fill_null(0)).all()
    small = interior.filter((pl.col("len") > 0) & (pl.col("len") < 3))
    assert small.height > 0
    assert (small["status"] == "primary").all()
    # every primary and secondary cell is missing in the published table, no other cell
    hidden = full["status"].is_in(["primary", "secondary"])
    assert full.filter(pl.col("status") == "secondary").height > 0
    assert published.height == full.height
    assert published["value"].is_null().to_list() == hidden.to_list()


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (('rule = "min_frequency"', 'rule = "min_freq"'), ("rule 1", "'min_freq'")),
        (("threshold = 3", 'threshold = "3"'), ("rule 1", "'threshold'", "int")),
        (("threshold = 3", "treshold = 3"), ("unknown parameter 'treshold'", "'threshold'")),
        (('"occupation"]', '"ocupation"]'), ("'ocupation'", "'occupation'")),
        (('method = "optimal"', 'method = "best"'), ("[suppression]", "'best'")),
        (('method = "optimal"', 'method = "optimal"\nmax_passes = 3'), ("'max_passes'",)),
        (("[audit]", "[audit]\nintegers = true"), ("[audit]", "'integers'")),
        (('table = "out/published.csv"', 'table = "out/published.xlsx"'), (".csv or .parquet",)),
    ],
)
def test_bad_table_jobs_exit_2_before_any_work(
    tmp_path: Path, census_csv: Path, change: tuple[str, str], needles: tuple[str, ...]
) -> None:
    text = job_text(census_csv)
    assert change[0] in text
    job = tmp_path / "job.toml"
    job.write_text(text.replace(*change), encoding="utf-8")
    assert_one_line_error(*run("table", job), *needles)
    assert not (tmp_path / "out").exists()


def test_missing_files(tmp_path: Path) -> None:
    assert_one_line_error(*run("table", tmp_path / "none.toml"), "does not exist")
    job = tmp_path / "job.toml"
    job.write_text(job_text(tmp_path / "nothing.csv"), encoding="utf-8")
    assert_one_line_error(*run("table", job), "nothing.csv", "does not exist")
