"""Table jobs with ``[table] respondent`` and ``holding``: the job builds the table the Python
call builds, rules take ``level``, and the keys are refused where they cannot apply."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_business_register
from sdckit.errors import ParameterError
from sdckit.jobs.tables import load_table_job, run_table_job
from sdckit.tables import Table

JOB = """
[input]
file = "register.csv"

[table]
dimensions = ["section", "size_class"]
value = "turnover"
respondent = "enterprise_id"
holding = "holding_id"

[[rules]]
rule = "min_frequency"
threshold = 3

[[rules]]
rule = "dominance"
n = 1
k = 80
level = "respondent"

[suppression]
method = "modular"

[output]
table = "published.csv"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    generate_business_register(600, seed=4).write_csv(tmp_path / "register.csv")
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    return tmp_path


def test_a_job_counts_holdings_and_rules_read_their_level(folder: Path) -> None:
    job = load_table_job(folder / "job.toml")
    frame = pl.read_csv(folder / "register.csv")
    want = Table.from_microdata(
        frame,
        ["section", "size_class"],
        "turnover",
        respondent="enterprise_id",
        holding="holding_id",
    )
    np.testing.assert_array_equal(job.table.n_contributors, want.n_contributors)
    np.testing.assert_allclose(job.table.top, want.top)
    assert job.table.contributions.level == "holding"
    assert [getattr(r, "level", None) for r in job.rules] == [None, "respondent"]
    result = run_table_job(job)
    assert result.protected
    assert (folder / "published.csv").is_file()


def test_sdckit_table_runs_the_job(folder: Path) -> None:
    run = CliRunner().invoke(app, ["table", str(folder / "job.toml")])
    assert run.exit_code == 0, run.output
    published = pl.read_csv(folder / "published.csv")
    assert published["suppressed"].sum() > 0


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ('respondent = "enterprise_id"', None),
        ('respondent = "firm"', "'firm'"),
        ("respondent = 3", "'respondent' must be a column name"),
    ],
)
def test_bad_respondent_keys_are_errors(folder: Path, change: str, pattern: str | None) -> None:
    text = JOB.replace('respondent = "enterprise_id"', change)
    (folder / "job.toml").write_text(text, encoding="utf-8")
    if pattern is None:
        load_table_job(folder / "job.toml")
        return
    with pytest.raises(Exception, match=pattern):
        load_table_job(folder / "job.toml")


def test_a_cells_input_refuses_respondent_ids(folder: Path) -> None:
    cells = pl.DataFrame({"section": ["Total", "C"], "turnover": [5.0, 5.0]})
    cells.write_csv(folder / "cells.csv")
    text = JOB.replace('file = "register.csv"', 'file = "cells.csv"\nkind = "cells"')
    text = text.replace('dimensions = ["section", "size_class"]', 'dimensions = ["section"]')
    (folder / "job.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ParameterError, match="'respondent' is for microdata inputs"):
        load_table_job(folder / "job.toml")


def test_the_job_a_runner_writes_keeps_the_ids_and_the_rule_levels(folder: Path) -> None:
    from sdckit.jobs.table_runner import TableRunner

    spec = {
        "dimensions": ["section"],
        "value": "turnover",
        "respondent": "enterprise_id",
        "holding": "holding_id",
    }
    run = TableRunner.from_input({"file": "register.csv"}, spec, base=folder)
    run.set_rules([{"rule": "p_percent", "p": 10, "level": "holding"}])
    (folder / "again.toml").write_text(run.to_toml({"table": "again.csv"}), encoding="utf-8")
    again = load_table_job(folder / "again.toml")
    np.testing.assert_array_equal(again.table.n_contributors, run.table.n_contributors)
    assert [r.level for r in again.rules] == ["holding"]
    assert again.table.contributions.level == "holding"
