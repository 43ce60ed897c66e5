"""``sdckit protect`` with ``method = "auto"``: ARX's adult data and the demo census, end to end
through the runner, the release check and the written file."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app

ARX = Path(__file__).parents[1] / "data" / "arx"
ADULT_KEYS = ["age", "sex", "race", "marital-status"]


def _protect(job: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["protect", str(job)])
    return result.exit_code, " ".join(result.stdout.split())


def _recount(out: Path, keys: list[str]) -> tuple[int, int]:
    """Records suppressed (every key missing) and the smallest class of the others."""
    frame = pl.read_csv(out, infer_schema=False)
    missing = pl.all_horizontal([pl.col(k).is_null() for k in keys])
    some = pl.any_horizontal([pl.col(k).is_null() for k in keys])
    assert frame.filter(some & ~missing).height == 0  # no record half suppressed
    kept = frame.filter(~missing)
    return frame.height - kept.height, int(kept.group_by(keys).len()["len"].min())


@pytest.mark.skipif(not (ARX / "adult.csv").is_file(), reason="ARX's adult data not present")
def test_auto_on_adult_chooses_the_optimum_and_the_file_passes_the_release_check(
    tmp_path: Path,
) -> None:
    pl.read_csv(ARX / "adult.csv", separator=";", infer_schema=False).write_csv(
        tmp_path / "adult.csv"
    )
    hierarchies = "\n".join(f'{k} = "{ARX / f"adult_hierarchy_{k}.csv"}"' for k in ADULT_KEYS)
    job = tmp_path / "job.toml"
    job.write_text(
        textwrap.dedent(
            """
            seed = 1
            [input]
            file = "adult.csv"
            [roles]
            keys = ["age", "sex", "race", "marital-status"]
            [[steps]]
            method = "auto"
            loss = "height"
            suppression_limit = 0.04
            algorithm = "exhaustive"   # the reference: ties in loss go to the first node
            [steps.hierarchies]
            """
        )
        + hierarchies
        + textwrap.dedent(
            """
            [target]
            k = 5
            [output]
            data = "out.csv"
            report_internal = "report.html"
            keep = ["age", "sex", "race", "marital-status"]
            """
        ),
        encoding="utf-8",
    )
    code, out = _protect(job)
    assert code == 0, out
    # height 1: marital status one level up; of the nodes of height 1 it comes first in order
    chosen = "Chose age=0, sex=0, race=0, marital-status=1 (loss 1 by Height) for 5-anonymity"
    assert chosen in out
    assert "786 records suppressed" in out and "proven optimal" in out
    assert "Next best meeting the target: age=0, sex=0, race=1, marital-status=0" in out
    assert "0 records below 5-anonymity" in out and "NOT releasable" not in out
    suppressed, smallest = _recount(tmp_path / "out.csv", ADULT_KEYS)
    assert suppressed == 786 <= math.floor(0.04 * 30162)
    assert smallest >= 5
    written = pl.read_csv(tmp_path / "out.csv", infer_schema=False)["marital-status"]
    level1 = {r.split(";")[1] for r in (ARX / "adult_hierarchy_marital-status.csv").read_text()
              .splitlines() if r}  # fmt: skip
    assert set(written.drop_nulls().unique()) <= level1
    assert "Automatic protection (step 1)" in (tmp_path / "report.html").read_text()


def test_auto_on_the_demo_census(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        textwrap.dedent(
            """
            seed = 7
            [input]
            dataset = "demo"
            [roles]
            keys = ["sex", "age", "region", "marital_status"]
            numeric = ["income"]
            weight = "weight"
            [[steps]]
            method = "auto"
            suppression_limit = 0.02
            algorithm = "exhaustive"
            [steps.hierarchies]
            age = {kind = "bands", widths = [5, 10, 20]}
            region = {kind = "flat"}
            marital_status = {kind = "flat"}
            [target]
            k = 5
            [output]
            data = "out.csv"
            keep = ["sex", "age", "region", "marital_status", "income"]
            """
        ),
        encoding="utf-8",
    )
    code, out = _protect(job)
    assert code == 0, out
    assert "Chose sex=0, age=0, region=0, marital_status=1 (loss 1 by Height)" in out
    assert "496 records suppressed" in out
    suppressed, smallest = _recount(tmp_path / "out.csv", ["sex", "age", "region",
                                                            "marital_status"])  # fmt: skip
    assert suppressed == 496 and smallest >= 5
