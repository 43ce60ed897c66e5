"""``sdckit risk FILE`` without ``--engine``: the engine chosen by the file and the free memory,
printed with the reason; the streaming path gives the in-process figures and records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app

runner = CliRunner()
ROLES = ["--keys", "region,age,sex", "--weight", "w"]


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def squashed(text: str) -> str:
    return "".join(text.split())  # rich wraps the caption


def printed_rows(stdout: str) -> dict[str, str]:
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if len(cells) == 2 and cells[0] != "measure":
            rows[cells[0]] = cells[1]
    return rows


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 records in Parquet: three integer keys (one with missing values) and a weight."""
    rng = np.random.default_rng(5)
    n = 400
    region = pl.Series(rng.integers(1, 6, n).astype(np.int32)).scatter(np.arange(0, n, 37), None)
    frame = pl.DataFrame(
        {
            "region": region,
            "age": rng.integers(1, 40, n).astype(np.int32),
            "sex": rng.integers(1, 3, n).astype(np.int32),
            "w": rng.uniform(5, 60, n),
            "other": np.arange(n),
        }
    )
    path = tmp_path_factory.mktemp("auto") / "people.parquet"
    frame.write_parquet(path)
    return path


@pytest.fixture
def free(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The free memory the choice sees (bytes), patched; the environment bound unset."""
    from sdckit.engines import _choice

    value = [18 * 10**9]
    monkeypatch.delenv("SDCKIT_STREAMING_BYTES", raising=False)
    monkeypatch.setattr(_choice, "free_memory", lambda: value[0])
    return value


def test_a_small_file_runs_in_process_and_says_why(
    tmp_path: Path, people: Path, free: list[int]
) -> None:
    out = tmp_path / "r.parquet"
    code, stdout, stderr = run("risk", people, *ROLES, "--out", out)
    assert code == 0, stderr
    # 400 records x (3 Int32 keys + a Float64 weight) = 8,000 bytes
    assert (
        "engine:inmemory(the4columnsusedtakeabout8000bytes,within25%ofthe18.0GBfree)"
        in squashed(stdout)
    )
    assert pl.read_parquet(out).columns == ["fk", "Fk_hat", "risk"]  # the in-process output


def test_a_large_file_streams_with_the_in_process_figures(
    tmp_path: Path, people: Path, free: list[int]
) -> None:
    ref_out = tmp_path / "ref.parquet"
    code, ref_stdout, stderr = run("risk", people, *ROLES, "--out", ref_out)
    assert code == 0, stderr
    free[0] = 31_999  # 8,000 bytes are more than a quarter of it
    out = tmp_path / "auto.parquet"
    code, stdout, stderr = run("risk", people, *ROLES, "--out", out)
    assert code == 0, stderr
    assert (
        "engine:streaming(the4columnsusedtakeabout8000bytes,morethan25%ofthe31999bytesfree)"
        in squashed(stdout)
    )
    ref, got = pl.read_parquet(ref_out), pl.read_parquet(out)
    assert got.columns[:4] == ["region", "age", "sex", "w"]  # the engine's output: roles first
    np.testing.assert_array_equal(got["fk"].to_numpy(), ref["fk"].to_numpy())
    np.testing.assert_allclose(got["risk"].to_numpy(), ref["risk"].to_numpy(), rtol=1e-12)
    rows, ref_rows = printed_rows(stdout), printed_rows(ref_stdout)
    assert rows["sample uniques (fk = 1)"] == ref_rows["sample uniques (fk = 1)"] != "0"
    assert rows["expected re-identifications"] == ref_rows["expected re-identifications"]
    # --engine auto is the same choice
    code, stdout, _ = run("risk", people, *ROLES, "--engine", "auto")
    assert code == 0 and "engine:streaming(the4columns" in squashed(stdout)


def test_in_memory_only_options_stay_in_memory_and_say_so(
    tmp_path: Path, people: Path, free: list[int]
) -> None:
    free[0] = 1_000  # the file would stream
    code, stdout, stderr = run("risk", people, *ROLES, "--suda2")
    assert code == 0, stderr
    assert (
        "engine:inmemory(--suda2needstherecordsinmemory;the4columnsusedtakeabout8000bytes,"
        "morethan25%ofthe1000bytesfree)" in squashed(stdout)
    )
    assert "records with a SUDA score > 0" in printed_rows(stdout)
    out = tmp_path / "r.csv"
    code, stdout, stderr = run("risk", people, *ROLES, "--out", out)
    assert code == 0, stderr
    assert "engine:inmemory(the--outfile'r.csv'isnotParquet:itiswritteninmemory;" in squashed(
        stdout
    )
    assert pl.read_csv(out).height == 400


def test_a_csv_file_is_read_in_memory(tmp_path: Path, people: Path, free: list[int]) -> None:
    free[0] = 1_000
    csv = tmp_path / "people.csv"
    pl.read_parquet(people).write_csv(csv)
    code, stdout, stderr = run("risk", csv, *ROLES)
    assert code == 0, stderr
    assert "engine:inmemory(thefileisnotParquet:itisreadinmemory)" in squashed(stdout)


def test_forced_engines_are_kept(tmp_path: Path, people: Path, free: list[int]) -> None:
    free[0] = 1_000
    code, stdout, stderr = run("risk", people, *ROLES, "--engine", "polars")
    assert code == 0, stderr
    assert "engine:polars(askedfor)" in squashed(stdout)
