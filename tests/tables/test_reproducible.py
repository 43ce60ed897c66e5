"""Reproducible patterns: the same table, rules and method give the same pattern under any load.

Every method's work is bounded by counts (rounds, nodes, passes), never by the clock unless a
wall-clock limit is set, and a run such a limit cut short says so (``time_limited``).  Each
method runs twice, the second time beside a CPU-bound process, and the patterns are compared.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl
import pytest

from sdckit.datasets import generate_census
from sdckit.errors import SdcWarning
from sdckit.tables import (
    Dominance,
    GaussSuppression,
    HypercubeSuppression,
    MinFrequency,
    ModularSuppression,
    OptimalSuppression,
    Table,
    apply_rules,
)


@contextmanager
def cpu_load() -> Iterator[None]:
    """A CPU-bound process running beside the block (stopped by its own id afterwards)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def _census_table(n: int, seed: int, dims: list[str]) -> Table:
    df = generate_census(n, seed=seed).with_columns(
        (pl.col("age") // 20).cast(pl.Utf8).alias("age20")
    )
    table = Table.from_microdata(df, dims, "income")
    return apply_rules(table, [MinFrequency(threshold=3), Dominance(n=1, k=80)])


@pytest.fixture(scope="module")
def table() -> Table:
    """region x age group x sex of 2,000 persons: 162 cells, 13 primaries."""
    t = _census_table(2000, 7, ["region", "age20", "sex"])
    assert (t.n_cells, int(t.primary.sum())) == (162, 13)
    return t


METHODS = {
    "hypercube": HypercubeSuppression,
    "modular": ModularSuppression,
    "optimal": OptimalSuppression,
    "gauss": GaussSuppression,
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_method_gives_one_pattern_under_any_load(table: Table, name: str) -> None:
    method = METHODS[name]()
    quiet = method.apply(table)
    with cpu_load():
        loaded = method.apply(table)
    assert quiet.protected and loaded.protected
    assert quiet.time_limited is None and loaded.time_limited is None
    assert quiet.table.secondary.sum() > 0
    np.testing.assert_array_equal(quiet.table.status, loaded.table.status)


def test_modular_count_limits_give_one_pattern_when_they_bind(table: Table) -> None:
    # one LP round, one MILP round of one node: the limits stop the search (not proven
    # optimal), and the pattern still is the same under load and protected
    method = ModularSuppression(subtable_max_rounds=2, subtable_max_nodes=1)
    quiet = method.apply(table)
    with cpu_load():
        loaded = method.apply(table)
    assert quiet.details["subtable_milp"] >= 1
    assert quiet.protected and quiet.time_limited is None
    np.testing.assert_array_equal(quiet.table.status, loaded.table.status)


def test_a_run_the_clock_cut_short_says_so(table: Table) -> None:
    method = ModularSuppression(subtable_time_limit=1e-9)
    with pytest.warns(SdcWarning, match="'subtable_time_limit'"):
        result = method.apply(table)
    assert result.time_limited == "subtable_time_limit"
    assert result.details["subtables_cut_by_clock"] >= 1
    assert result.protected  # cut short, still a protected pattern
    rows = dict(result.summary().rows)
    assert rows["cut short by (wall clock)"] == "subtable_time_limit"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SdcWarning)
        untimed = ModularSuppression().apply(table)
    assert untimed.time_limited is None
    assert dict(untimed.summary().rows)["cut short by (wall clock)"] == "nothing"


def test_optimal_time_limit_cut_says_so(table: Table) -> None:
    with pytest.warns(SdcWarning, match="time limit"):
        result = OptimalSuppression(time_limit=1e-9, warm_start=False).apply(table)
    assert result.time_limited == "time_limit"
    assert result.protected


def _job_file(tmp_path, **suppression: object) -> object:
    data = tmp_path / "census.csv"
    if not data.exists():
        generate_census(2000, seed=7).with_columns(
            (pl.col("age") // 20).cast(pl.Utf8).alias("age20")
        ).write_csv(data)
    params = "".join(f"{k} = {v}\n" for k, v in suppression.items())
    job = tmp_path / "job.toml"
    job.write_text(
        f'title = "Income by region, age and sex"\n[input]\nfile = "{data.as_posix()}"\n'
        '[table]\ndimensions = ["region", "age20", "sex"]\nvalue = "income"\n'
        '[[rules]]\nrule = "min_frequency"\nthreshold = 3\n'
        '[[rules]]\nrule = "dominance"\nn = 1\nk = 80.0\n'
        f'[suppression]\nmethod = "modular"\n{params}'
        '[output]\ntable = "out/published.csv"\nreport_internal = "out/internal.html"\n',
        encoding="utf-8",
    )
    return job


@pytest.mark.slow
def test_a_table_job_run_ten_times_publishes_one_table(tmp_path) -> None:
    from sdckit.jobs import load_table_job, run_table_job

    job = load_table_job(_job_file(tmp_path))
    published = set()
    for run in range(10):
        if run % 2:  # five of the ten runs beside a CPU-bound process
            with cpu_load():
                outcome = run_table_job(job)
        else:
            outcome = run_table_job(job)
        assert outcome.audit.ok
        published.add((tmp_path / "out" / "published.csv").read_bytes())
    assert len(published) == 1
    assert b",x\n" in published.pop()  # suppressed cells, with their symbol


def test_the_cli_and_the_report_name_a_wall_clock_limit_that_cut_a_run_short(tmp_path) -> None:
    from typer.testing import CliRunner

    from sdckit.cli.app import app

    job = _job_file(tmp_path, subtable_time_limit=1e-9)
    result = CliRunner().invoke(app, ["table", str(job)])
    assert result.exit_code == 0, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "cut short by a wall-clock limit" in text and "subtable_time_limit" in text
    report = (tmp_path / "out" / "internal.html").read_text(encoding="utf-8")
    assert "cut short by a wall-clock limit" in report and "subtable_time_limit" in report
