"""``python -m sdckit.demo`` (make demo) runs and prints the key figures."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

from sdckit import Microdata
from sdckit.datasets import DEMO_ROLES, load_demo
from sdckit.demo import run_demo
from sdckit.risk import household_risk


def test_demo_figures_match_the_api() -> None:
    buffer = io.StringIO()
    figures = run_demo(Console(file=buffer, width=120))
    text = buffer.getvalue()
    md = Microdata(load_demo(), **DEMO_ROLES)
    hh = household_risk(md)
    freq = hh.individual.frequencies
    assert figures["records"] == 50_000
    assert figures["sample_uniques"] == freq.sample_uniques
    assert figures["violations_k3"] == freq.violations(3).records
    assert figures["expected_reidentifications"] == pytest.approx(
        hh.individual.expected_reidentifications
    )
    assert figures["household_expected_reidentifications"] == pytest.approx(
        hh.expected_reidentifications
    )
    # SUDA2 finds an MSU for every sample unique and for no other record
    assert figures["suda_records_at_risk"] == freq.sample_uniques
    assert 0 < figures["l_distinct_below_2"] < 50_000
    for needle in (
        "50,000",
        f"{freq.sample_uniques:,}",
        f"{freq.violations(5).records:,}",
        "expected re-identifications",
        "SUDA2",
        "l-diversity of health_condition",
    ):
        assert needle in text, needle


def test_python_m_sdckit_demo_exits_cleanly() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sdckit.demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "sample uniques" in proc.stdout
    assert "expected re-identifications" in proc.stdout
    assert "Traceback" not in proc.stderr
