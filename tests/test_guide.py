"""Every Python block of docs/guide.md runs, in order, and gives the figures the text states."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guide.md"


def _blocks() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    """Run all blocks in one namespace inside a temporary directory."""
    workdir = tmp_path_factory.mktemp("guide")
    namespace: dict[str, Any] = {"__name__": "guide"}
    out = io.StringIO()
    previous = Path.cwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out):
            for number, block in enumerate(_blocks(), start=1):
                exec(compile(block, f"docs/guide.md, block {number}", "exec"), namespace)
    finally:
        os.chdir(previous)
    return namespace, out.getvalue(), workdir


def test_guide_has_the_sections_and_blocks() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert len(_blocks()) >= 15
    for heading in ("Data and column roles", "Measuring risk", "Protecting", "R-U map", "Session"):
        assert heading in text
    assert "job-files.md" in text


def test_data_and_roles(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, printed, _ = guide
    assert ns["md"].n_records == 2000
    assert printed.count("[2, 1, 2, 1]") == 3  # fk for pandas, polars and pyarrow alike
    assert "'regoin'" in printed and "region" in printed  # the error names column and fix
    assert "pandas" in printed and "polars" in printed and "pyarrow" in printed


def test_risk_figures(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, printed, _ = guide
    freq = ns["freq"]
    assert (freq.n_classes, freq.sample_uniques, ns["k3"].records) == (652, 286, 526)
    assert ns["ind"].expected_reidentifications == pytest.approx(16.49, abs=0.005)
    assert ns["hh"].expected_reidentifications == pytest.approx(51.84, abs=0.005)
    assert ns["best"].formula() == "[region][sex][age_group,marital_status]"
    assert sorted(ns["models"]) == ["ewens", "pitman", "poisson_gamma", "poisson_gamma_ml"]
    assert "expected re-identifications" in printed


def test_protection_reaches_k(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, printed, _ = guide
    frequencies = ns["frequencies"]
    assert "below 3 after recoding: 313" in printed
    assert "below 3 after suppression: 0" in printed
    assert int(frequencies(ns["suppressed"].microdata).fk.min()) >= 3
    assert ns["recoded"].changed == {"age_group": 2000}
    assert set(ns["aggregated"].changed) == {"income"}
    assert set(ns["noisy"].changed) == {"expenditure"}
    assert ns["protected"].height == 2000
    assert ns["suppressed"].n_changed_records == 217
    assert ns["suppressed"].changed["age_group"] == 150
    # a misspelt keyword of a function twin names the parameter it meant
    assert "pram() has no parameter 'min_diag'. Did you mean 'min_diagonal'?" in printed


def test_utility_and_ru_map(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, _, _ = guide
    points = ns["points"]
    pareto = dict(zip(points["candidate"], points["pareto"], strict=True))
    risk = dict(zip(points["candidate"], points["risk"], strict=True))
    assert not pareto["PRAM 0.8"]
    assert risk["PRAM 0.8"] >= risk["original"]
    assert risk["suppression k=2"] > risk["suppression k=3"] > risk["suppression k=5"]
    assert 0.0 <= ns["key_loss"].share_changed <= 1.0


def test_session_and_reports(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, _, workdir = guide
    session = ns["session"]
    assert ns["undone"].method == "local suppression"
    assert len(session.history) == 3
    figures = session.to_frame()
    assert figures["expected_reidentifications"][0] == pytest.approx(16.49, abs=0.005)
    assert figures["expected_reidentifications"][-1] == pytest.approx(2.93, abs=0.005)
    # regions suppressed for whole households, and keys that would give a value back
    assert figures["key_values_suppressed"][-1] == 217
    assert ns["released"].check.ok
    assert int(ns["frequencies"](session.current).fk.min()) >= 3
    for name in ("report_internal.html", "report_external.html", "protected.parquet"):
        assert (workdir / name).stat().st_size > 0
    assert not (REPO / "report_internal.html").exists()


def test_household_survey(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, printed, _ = guide
    assert ns["useful"].check.ok
    assert "True ['weight', 'hh_id', 'household_size', 'hh_income']" in printed
    points = {r["candidate"]: r for r in ns["ru_releases"].points.iter_rows(named=True)}
    assert points["keeps them"]["loss"] == pytest.approx(0.12, abs=0.005)
    assert points["drops them"]["loss"] == pytest.approx(0.32, abs=0.005)
    assert points["keeps them"]["risk"] < points["original"]["risk"]


def test_tables(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, _, _ = guide
    table = ns["table"]
    assert (table.n_cells, int(table.primary.sum())) == (63, 3)
    assert ns["suppression_result"].n_secondary == 3
    assert ns["check"].ok
    assert bool(np.all(ns["rounded"].rounded % 5 == 0))


def test_business_tables_count_enterprises_and_holdings(
    guide: tuple[dict[str, Any], str, Path],
) -> None:
    ns, printed, _ = guide
    assert "primary: 3 by records, 12 by enterprises and holdings" in printed
    # the modular pattern: one primary below its level for a holding, none after the repair
    assert "insider audit: 1 primaries below level; after repair: True" in printed
    assert ns["business"].n_cells == 130
    assert int((ns["business"].primary & ~ns["by_records"].primary).sum()) == 9


def test_command_line(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, _, workdir = guide
    for run in ("risk_run", "protect_run", "table_run"):
        assert ns[run] == 0
    assert (workdir / "census_protected.csv").exists()
    assert (workdir / "income_published.csv").exists()


def test_hierarchy_and_own_combinations(guide: tuple[dict[str, Any], str, Path]) -> None:
    ns, _, _ = guide
    assert ns["age_hierarchy"].height == 2
    assert ns["age_hierarchy"].loss(1).tolist() == pytest.approx([1 / 17] * 18)
    assert ns["before_own"].records_below.tolist() == [76, 0]
    assert ns["after_own"].records_below.tolist() == [0, 0]
    assert ns["own_suppressed"].details["suppressions"] == 43
