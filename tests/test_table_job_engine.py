"""Table jobs with ``[input] engine = "..."``: the cells aggregated on an engine give the same
table, the same primaries and the same protected pattern as the in-memory build."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit import SdcError
from sdckit.datasets import generate_census
from sdckit.jobs import load_table_job, run_table_job
from sdckit.tables import audit


@pytest.fixture(scope="module")
def census_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = generate_census(1500, seed=5)
    frame = frame.with_columns(pl.col("region", "occupation").cast(pl.String))
    path = tmp_path_factory.mktemp("engine_jobs") / "census.parquet"
    frame.write_parquet(path)
    return path


def _job(tmp_path: Path, data: Path, engine: str | None, extra: str = "") -> Path:
    line = f'engine = "{engine}"' if engine else ""
    text = textwrap.dedent(
        f"""
        [input]
        file = "{data.as_posix()}"
        {line}
        {extra}
        [table]
        dimensions = ["region", "occupation"]
        value = "income"
        weight = "weight"
        [[rules]]
        rule = "min_frequency"
        threshold = 3
        [suppression]
        method = "modular"
        [output]
        table_full = "full.csv"
        """
    )
    path = tmp_path / f"job_{engine}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ["polars", "streaming"])
def test_a_table_job_on_an_engine_equals_the_in_memory_job(
    tmp_path: Path, census_parquet: Path, engine: str
) -> None:
    plain = load_table_job(_job(tmp_path, census_parquet, None))
    on_engine = load_table_job(_job(tmp_path, census_parquet, engine))
    a, b = plain.table, on_engine.table
    assert a.dimensions == b.dimensions and a.shape == b.shape
    assert [h.codes for h in a.hierarchies] == [h.codes for h in b.hierarchies]
    np.testing.assert_allclose(b.values, a.values, rtol=1e-12)
    np.testing.assert_array_equal(b.n_contributors, a.n_contributors)
    np.testing.assert_allclose(b.top, a.top, rtol=1e-12)
    ra = run_table_job(plain, write=False)
    rb = run_table_job(on_engine, write=False)
    np.testing.assert_array_equal(rb.table.status, ra.table.status)
    assert int(rb.table.primary.sum()) > 0
    assert rb.protected and audit(rb.table, insider=False).ok


def test_engine_needs_parquet_and_a_known_name(tmp_path: Path, census_parquet: Path) -> None:
    csv = tmp_path / "census.csv"
    pl.read_parquet(census_parquet).write_csv(csv)
    with pytest.raises(SdcError, match=r"\[input\] 'engine' needs a Parquet file"):
        load_table_job(_job(tmp_path, csv, "streaming"))
    with pytest.raises(SdcError, match=r"\[input\] 'engine' must be one of"):
        load_table_job(_job(tmp_path, census_parquet, "duckdb"))
    with pytest.raises(SdcError, match=r"'na_values' is for text files"):
        load_table_job(_job(tmp_path, census_parquet, "polars", 'na_values = ["NA"]'))


def test_a_gauss_job_reports_the_elimination_as_it_goes(
    tmp_path: Path, census_parquet: Path
) -> None:
    """``sdckit table`` shows a bar for the Gaussian elimination (the long part on a large
    table): the job passes its progress callback to the method's apply as a call argument,
    never as a parameter of the method."""
    path = _job(tmp_path, census_parquet, None)
    path.write_text(
        path.read_text(encoding="utf-8").replace('"modular"', '"gauss"'), encoding="utf-8"
    )
    job = load_table_job(path)
    seen: list[tuple[str, int, int]] = []
    res = run_table_job(job, write=False, progress=lambda *a: seen.append(a))
    stages = {s for s, _, _ in seen}
    assert {"Secondary suppression: model", "Secondary suppression: elimination"} <= stages
    last = [(d, t) for s, d, t in seen if s == "Secondary suppression: elimination"][-1]
    assert last[0] == last[1] > 0
    assert "progress" not in job.suppression.get_params()
    assert res.protected and audit(res.table, insider=False).ok
    quiet = run_table_job(job, write=False)
    np.testing.assert_array_equal(quiet.table.status, res.table.status)


@pytest.mark.parametrize("line", [None, "auto"])
def test_without_engine_a_large_file_streams_and_builds_the_in_memory_table(
    tmp_path: Path, census_parquet: Path, monkeypatch: pytest.MonkeyPatch, line: str | None
) -> None:
    """``[input] engine`` absent or "auto": the file and the free memory decide; a file too
    large for a quarter of the free memory (patched) is aggregated on the streaming engine
    into the table the in-memory build gives, and the job says where and why."""
    from typer.testing import CliRunner

    from sdckit.cli.app import app
    from sdckit.engines import _choice

    monkeypatch.delenv("SDCKIT_STREAMING_BYTES", raising=False)
    monkeypatch.setattr(_choice, "free_memory", lambda: 10**12)
    plain = load_table_job(_job(tmp_path, census_parquet, line))
    assert plain.engine is not None and plain.engine.startswith("in memory (the 4 columns used")
    assert plain.engine.endswith("within 25 % of the 1000.0 GB free)")
    monkeypatch.setattr(_choice, "free_memory", lambda: 1000)
    streamed = load_table_job(_job(tmp_path, census_parquet, line))
    assert streamed.engine is not None and streamed.engine.startswith("streaming (the 4 columns")
    assert streamed.engine.endswith("more than 25 % of the 1000 bytes free)")
    a, b = plain.table, streamed.table
    assert [h.codes for h in a.hierarchies] == [h.codes for h in b.hierarchies]
    np.testing.assert_allclose(b.values, a.values, rtol=1e-12)
    np.testing.assert_array_equal(b.n_contributors, a.n_contributors)
    np.testing.assert_allclose(b.top, a.top, rtol=1e-12)
    assert int(a.n_contributors.max()) == 1500  # the grand total: every record
    # the command prints it
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["table", str(_job(tmp_path, census_parquet, line))])
    assert result.exit_code in (0, 1), result.stderr
    assert "engine:streaming(the4columnsused" in "".join(result.stdout.split())


def test_options_of_the_in_memory_build_keep_it_in_memory(
    tmp_path: Path, census_parquet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.engines import _choice

    monkeypatch.setattr(_choice, "free_memory", lambda: 1000)
    csv = tmp_path / "census.csv"
    pl.read_parquet(census_parquet).write_csv(csv)
    job = load_table_job(_job(tmp_path, csv, None))
    assert job.engine == "in memory (the file is not Parquet: it is read in memory)"
    path = _job(tmp_path, census_parquet, None)
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            'weight = "weight"', 'weight = "weight"\nmissing_value = "drop"'
        ),
        encoding="utf-8",
    )
    job = load_table_job(path)
    assert job.engine == "in memory ([table] 'missing_value' = \"drop\" is built in memory)"
