"""``sdckit table`` with ``[suppression] method = "cta"``: the adjusted table is published."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_census
from sdckit.io import read_data, write_data
from sdckit.jobs import load_table_job, run_table_job

runner = CliRunner()


@pytest.fixture(scope="module")
def census_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cta") / "census.csv"
    write_data(generate_census(1500, seed=5), path)
    return path


def job_text(data: Path, extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        title = "Persons by region and occupation, adjusted"
        [input]
        file = "{data.as_posix()}"
        [table]
        dimensions = ["region", "occupation"]
        [[rules]]
        rule = "min_frequency"
        threshold = 3
        [suppression]
        method = "cta"
        totals = "grand"
        [output]
        table = "out/published.csv"
        table_full = "out/full.csv"
        """
    ) + textwrap.dedent(extra)


def test_cta_job_publishes_every_cell_moved_by_its_level(tmp_path: Path, census_csv: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(job_text(census_csv), encoding="utf-8")
    result = runner.invoke(app, ["table", str(job)])
    assert result.exit_code == 0, result.stderr
    assert "every primary moved by its level" in result.stdout
    published = read_data(tmp_path / "out" / "published.csv")
    full = read_data(tmp_path / "out" / "full.csv")
    assert not published["suppressed"].any() and published.height == full.height
    # every cell published: empty cells (no contributor, never moved) by their symbol
    empty = published["value"].is_null()
    assert (empty == (published["symbol"] == "-").fill_null(False)).all()
    assert (full.filter(empty)["original"] == 0).all()
    assert (published.filter(~empty)["value"] == full.filter(~empty)["published"]).all()
    # counts stay whole and non-negative, the grand total is kept
    assert (full["published"] == full["published"].round()).all()
    assert (full["published"] >= 0).all()
    grand = full.filter((pl.col("region") == "Total") & (pl.col("occupation") == "Total"))
    assert grand["published"].item() == grand["original"].item()
    # every primary (an interior count of 1 or 2) moved; the table still adds up
    prim = full.filter(pl.col("primary"))
    assert prim.height > 0 and (prim["direction"] != 0).all()
    assert (prim["published"] != prim["original"]).all()
    inner = full.filter(~pl.col("is_total"))
    by_region = inner.group_by("region").agg(pl.col("published").sum().alias("sum"))
    margins = full.filter((pl.col("occupation") == "Total") & (pl.col("region") != "Total"))
    joined = margins.join(by_region, on="region")
    assert (joined["published"] == joined["sum"]).all()


def test_cta_job_result_audits_the_levels(tmp_path: Path, census_csv: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(job_text(census_csv), encoding="utf-8")
    outcome = run_table_job(load_table_job(job), write=False)
    assert outcome.protected and outcome.audit.ok
    table = outcome.suppression.table
    move = np.abs(outcome.suppression.adjusted - table.values)[table.primary]
    need = np.where(
        outcome.suppression.direction[table.primary] > 0,
        np.maximum(table.upper, table.sliding)[table.primary],
        np.maximum(table.lower, table.sliding)[table.primary],
    )
    assert np.all(move >= np.ceil(need - 1e-9))
    assert outcome.table.protected is True and not outcome.table.suppressed.any()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [('[audit]\nintervals = "check"\n', "remove the [audit] section"), ("", "report_internal")],
)
def test_cta_job_refuses_what_it_cannot_do(
    tmp_path: Path, census_csv: Path, extra: str, needle: str
) -> None:
    text = job_text(census_csv, extra)
    if not extra:
        text = text.replace('table_full = "out/full.csv"', 'report_internal = "out/r.html"')
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["table", str(job)])
    assert result.exit_code == 2, result.stdout
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
