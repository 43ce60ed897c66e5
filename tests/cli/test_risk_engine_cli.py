"""``sdckit risk FILE --engine ...``: the engines give the in-process figures and records."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.cli.risk import ENGINES

runner = CliRunner()
ROLES = ["--keys", "region,age,sex", "--weight", "w", "--household", "hh", "--sensitive", "job"]
RESULT_COLUMNS = [
    "fk", "Fk_hat", "risk", "household_risk", "l_distinct_job", "l_entropy_job",
    "l_recursive_job",
]  # fmt: skip


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def printed_rows(stdout: str) -> dict[str, str]:
    """The ``measure │ value`` rows of the printed summary."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if len(cells) == 2 and cells[0] != "measure":
            rows[cells[0]] = cells[1]
    return rows


def assert_one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 2, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 records: key codes with leading zeros, missing keys (NA and empty), weights."""
    rng = np.random.default_rng(11)
    lines = ["region,age,sex,w,hh,job"]
    for i in range(120):
        region = ["01", "1", "02", "NA", ""][int(rng.integers(0, 5)) if i % 7 == 0 else i % 3]
        age = str(int(rng.integers(1, 5)))
        sex = "" if i % 19 == 0 else str(int(rng.integers(1, 3)))
        w = round(float(rng.uniform(5, 60)), 2)
        job = ["a", "b", "c"][int(rng.integers(0, 3))]
        lines.append(f"{region},{age},{sex},{w},h{i // 3},{job}")
    path = tmp_path_factory.mktemp("engine") / "people.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def in_process(source: Path, out: Path, *extra: str) -> tuple[pl.DataFrame, dict[str, str]]:
    code, stdout, stderr = run("risk", source, *ROLES, "--out", out, *extra)
    assert code == 0, stderr
    return pl.read_parquet(out), printed_rows(stdout)


def assert_same_records(engine: pl.DataFrame, ref: pl.DataFrame) -> None:
    assert engine.height == ref.height
    np.testing.assert_array_equal(engine["fk"].to_numpy(), ref["fk"].to_numpy())
    for name in RESULT_COLUMNS[1:]:
        np.testing.assert_allclose(engine[name].to_numpy(), ref[name].to_numpy(), rtol=1e-12)


def assert_same_figures(engine: dict[str, str], ref: dict[str, str]) -> None:
    # every figure the engine prints is the in-process one, as printed; only the household
    # count and the largest household risk are not computed by the engines
    assert engine == {k: v for k, v in ref.items() if k in engine}
    assert set(ref) - set(engine) == {"households", "highest household risk"}


@pytest.mark.parametrize("missing", ["wildcard", "category"])
@pytest.mark.parametrize("engine", ["polars", "streaming"])
def test_polars_engines_equal_the_in_process_path(
    tmp_path: Path, people: Path, engine: str, missing: str
) -> None:
    ref, ref_rows = in_process(people, tmp_path / "ref.parquet", "--missing", missing)
    out = tmp_path / "engine.parquet"
    code, stdout, stderr = run(
        "risk", people, *ROLES, "--missing", missing, "--engine", engine, "--out", out
    )
    assert code == 0, stderr
    assert "Traceback" not in stdout + stderr and not stderr.strip()
    records = pl.read_parquet(out)
    # the role columns (as read: key codes as written), then the per-record result
    assert records.columns[:6] == ["region", "age", "sex", "w", "hh", "job"]
    assert sorted(records.columns[6:]) == sorted(RESULT_COLUMNS)
    assert "01" in records["region"].to_list() and records["region"].null_count() > 0
    assert_same_records(records, ref)
    assert_same_figures(printed_rows(stdout), ref_rows)
    assert ref_rows["sample uniques (fk = 1)"] != "0"
    squashed = "".join(stdout.split())  # rich wraps long lines, paths included
    assert f"engine:{engine}(askedfor)" in squashed and f"writtento{out}" in squashed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.parquet", "ref.parquet"]


def test_parquet_input_is_scanned_on_the_streaming_engine(tmp_path: Path, people: Path) -> None:
    from sdckit.io import read_data

    source = tmp_path / "people.parquet"
    frame = read_data(people, text_columns=["region", "age", "sex"])
    frame.with_columns(pl.lit(1).alias("unused")).write_parquet(source)
    ref, ref_rows = in_process(source, tmp_path / "ref.parquet")
    out = tmp_path / "engine.parquet"
    code, stdout, stderr = run("risk", source, *ROLES, "--engine", "streaming", "-o", out)
    assert code == 0, stderr
    records = pl.read_parquet(out)
    assert "unused" not in records.columns  # only the role columns are read
    assert_same_records(records, ref)
    assert_same_figures(printed_rows(stdout), ref_rows)


def test_without_out_only_the_summary_is_printed(tmp_path: Path, people: Path) -> None:
    _, ref_rows = in_process(people, tmp_path / "ref.parquet")
    code, stdout, stderr = run("risk", people, *ROLES, "--engine", "streaming")
    assert code == 0, stderr
    assert "written" not in stdout
    assert_same_figures(printed_rows(stdout), ref_rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.parquet"]


def test_dask_engine_equals_the_in_process_path(tmp_path: Path, people: Path) -> None:
    pytest.importorskip("dask.dataframe")
    ref, ref_rows = in_process(people, tmp_path / "ref.parquet")
    out = tmp_path / "dask.parquet"
    code, stdout, stderr = run("risk", people, *ROLES, "--engine", "dask", "--out", out)
    assert code == 0, stderr
    assert not stderr.strip(), stderr  # no deprecation notices of the libraries
    assert out.is_dir()  # a folder of part files
    parts = sorted(out.glob("*.parquet"), key=lambda p: int(p.stem.split(".")[-1]))
    records = pl.concat([pl.read_parquet(p) for p in parts], how="vertical_relaxed")
    assert_same_records(records, ref)
    assert_same_figures(printed_rows(stdout), ref_rows)
    assert "engine: dask" in stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder
    # a second run does not write into (or over) the folder of the first
    before = sorted(p.name for p in out.iterdir())
    code, stdout, stderr = run("risk", people, *ROLES, "--engine", "dask", "--out", out)
    assert_one_line_error(code, stdout, stderr, "'dask.parquet' exists", "remove it")
    assert sorted(p.name for p in out.iterdir()) == before


def test_options_the_engines_cannot_honour(tmp_path: Path, people: Path) -> None:
    out = tmp_path / "risk.parquet"
    assert_one_line_error(
        *run("risk", people, "-k", "region,age", "--suda2", "--engine", "polars", "-o", out),
        "--suda2",
        "drop --engine",
    )
    assert_one_line_error(
        *run("risk", people, "-k", "region,age", "--engine", "polars", "-o", tmp_path / "r.csv"),
        ".parquet",
        "drop --engine",
    )
    assert_one_line_error(
        *run("risk", people, "-k", "region,age", "--engine", "gpu", "-o", out), "'--engine'"
    )
    assert_one_line_error(
        *run("risk", people, "-k", "region,rgion", "--engine", "streaming", "-o", out),
        "'rgion'",
        "'region'",
    )
    assert_one_line_error(
        *run("risk", people, "-k", "region", "--engine", "polars", "-o", tmp_path / "no" / "r.pq"),
        "directory",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(("engine", "extra"), [("dask", "dask"), ("spark", "spark")])
def test_a_missing_optional_engine_names_the_extra(
    tmp_path: Path, people: Path, monkeypatch: pytest.MonkeyPatch, engine: str, extra: str
) -> None:
    for name in ("dask", "dask.dataframe", "pyspark", "pyspark.sql"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as when not installed
    code, stdout, stderr = run("risk", people, "-k", "region", "--engine", engine)
    assert_one_line_error(code, stdout, stderr, f"pip install 'sdckit[{extra}]'", "not installed")


def test_a_failed_write_leaves_the_previous_output(
    tmp_path: Path, people: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.engines._polars_stream import PolarsEngine
    from sdckit.errors import DataError

    out = tmp_path / "risk.parquet"
    out.write_bytes(b"previous")

    def broken(self: PolarsEngine, records: pl.LazyFrame, output: Path) -> None:
        output.write_bytes(b"half a file")
        raise DataError("The disk is full.")

    monkeypatch.setattr(PolarsEngine, "write", broken)
    code, stdout, stderr = run("risk", people, "-k", "region", "--engine", "streaming", "-o", out)
    assert_one_line_error(code, stdout, stderr, "disk is full")
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["risk.parquet"]


def test_engine_choices_and_help() -> None:
    from sdckit.engines import ENGINES as API_ENGINES

    assert API_ENGINES == ENGINES
    code, stdout, _ = run("risk", "--help")
    assert code == 0 and "--engine" in stdout and "streaming" in stdout
