"""Table jobs with a ``[cellkey]`` section: the cell key method for magnitudes from a job file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.errors import ParameterError
from sdckit.jobs import load_table_job
from sdckit.jobs.cellkey import CellKeyJob, is_cellkey_job_file, load_cellkey_job, run_cellkey_job
from sdckit.tables import Dominance, cell_key_magnitudes, ptable_magnitudes

FIRMS = pl.DataFrame(
    {
        "id": list(range(1, 9)),
        "activity": ["A", "A", "A", "B", "B", "B", "B", "C"],
        "region": ["N", "N", "S", "N", "S", "S", "N", "S"],
        "turnover": [9000.0, 300.0, 120.0, 800.0, 750.0, 600.0, 20.0, 50.0],
    }
)

JOB = """
title = "Turnover, cell key"
[input]
file = "firms.csv"
[table]
dimensions = ["activity", "region"]
value = "turnover"
[[rules]]
rule = "dominance"
n = 1
k = 85
[cellkey]
fp = 1000
p_small = 0.2
p_large = 0.05
q = 2
mu_c = 1.0
key_columns = ["id"]
seed = 42
{extra}
[cellkey.ptable]
D = 3
V = 1.0
[output]
table = "published.csv"
table_full = "internal.csv"
{outputs}
"""


def _job(tmp_path: Path, extra: str = "", outputs: str = "") -> Path:
    FIRMS.write_csv(tmp_path / "firms.csv")
    path = tmp_path / "job.toml"
    path.write_text(textwrap.dedent(JOB.format(extra=extra, outputs=outputs)), encoding="utf-8")
    return path


def test_a_cellkey_job_publishes_what_the_function_gives(tmp_path: Path) -> None:
    path = _job(tmp_path)
    assert is_cellkey_job_file(path)
    with pytest.raises(ParameterError, match="load_cellkey_job"):
        load_table_job(path)  # the suppression jobs' loader points to the right one
    job = load_cellkey_job(path)
    assert isinstance(job, CellKeyJob)
    out = run_cellkey_job(job)
    expected = cell_key_magnitudes(
        FIRMS,
        ["activity", "region"],
        "turnover",
        fp=1000,
        p_small=0.2,
        p_large=0.05,
        q=2,
        mu_c=1.0,
        key_columns=["id"],
        seed=42,
        ptable=ptable_magnitudes(D=3, V=1.0),
        sensitive=[Dominance(n=1, k=85)],
    )
    published = pl.read_csv(tmp_path / "published.csv", schema_overrides={"region": pl.String})
    assert published.columns == ["activity", "region", "turnover"]
    assert np.allclose(published["turnover"].to_numpy(), expected.perturbed)
    internal = pl.read_csv(tmp_path / "internal.csv")
    assert np.allclose(internal["original"].to_numpy(), expected.table.values)
    assert [p.name for p in out.written] == ["published.csv", "internal.csv"]
    # the empty cell (C, N) stays 0; the dominated cells got the extra noise
    assert published.filter((pl.col("activity") == "C") & (pl.col("region") == "N"))[
        "turnover"
    ].to_list() == [0.0]
    assert int(out.table.primary.sum()) == int(expected.table.primary.sum()) > 0


def test_the_command_line_runs_a_cellkey_job(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["table", str(_job(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "cells changed" in result.output and "Wrote" in result.output
    assert (tmp_path / "published.csv").is_file()
    other = tmp_path / "other"
    other.mkdir()
    both = CliRunner().invoke(app, ["table", str(_job(other)), str(tmp_path / "job.toml")])
    assert both.exit_code != 0 and "runs on its own" in both.output


@pytest.mark.parametrize(
    ("extra", "outputs", "message"),
    [
        ("bogus = 1", "", "no parameter 'bogus'"),
        ("top_k = 9", "", "'top_k' parameter of CellKeyMagnitudes"),
        ("epsilon = [1.0, 0.5]", "", "'epsilon'"),
        ('record_key = "id"', "", "not both"),
        ("use_zero_keys = 1", "", "'use_zero_keys'"),
        ("", 'report_internal = "r.html"', "reports of a perturbed table"),
    ],
)
def test_bad_cellkey_jobs_are_refused_before_any_work(
    tmp_path: Path, extra: str, outputs: str, message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        load_cellkey_job(_job(tmp_path, extra, outputs))
    assert not (tmp_path / "published.csv").exists()


def test_a_cellkey_job_needs_fp_records_and_a_ptable_with_d_and_v(tmp_path: Path) -> None:
    path = _job(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("fp = 1000\n", ""), encoding="utf-8")
    with pytest.raises(ParameterError, match=r"needs the parameter.*'fp'"):
        load_cellkey_job(path)
    path.write_text(text.replace("D = 3\n", ""), encoding="utf-8")
    with pytest.raises(ParameterError, match="needs 'D'"):
        load_cellkey_job(path)
    path.write_text(text.replace('file = "firms.csv"', 'file = "firms.csv"\nkind = "cells"'))
    with pytest.raises(ParameterError, match="needs the records"):
        load_cellkey_job(path)


def test_the_documented_cellkey_job_is_valid(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "job-files.md"
    text = docs.read_text(encoding="utf-8")
    section = text.index("### The cell key method for magnitudes")
    start = text.index("```toml\n", section) + len("```toml\n")
    FIRMS.write_csv(tmp_path / "firms.csv")
    path = tmp_path / "documented.toml"
    path.write_text(text[start : text.index("```", start)], encoding="utf-8")
    job = load_cellkey_job(path)
    assert job.method.get_params()["epsilon"] == [1.0, 0.5, 0.2]
    assert job.method.ptable.rows.tolist() == [0.0, 1.0, 5.0, 10.0]
    assert job.options == {"key_columns": ["id"], "seed": 42} and len(job.rules) == 1
