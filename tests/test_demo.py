"""``python -m sdckit.demo`` (make demo): the risk figures, the protection job and its reports."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from sdckit import Microdata
from sdckit.datasets import DEMO_ROLES, load_demo
from sdckit.demo import run_demo
from sdckit.io import read_data
from sdckit.risk import frequencies, household_risk


def test_demo_figures_match_the_api(tmp_path: Path) -> None:
    buffer = io.StringIO()
    figures = run_demo(Console(file=buffer, width=120), out_dir=tmp_path / "out")
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
    # the protection job: target met (recomputed from the written file), R-U map, reports
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "demo_protected.parquet", "demo_report_external.html", "demo_report_internal.html",
    ]  # fmt: skip
    protected = read_data(out / "demo_protected.parquet")
    assert protected.height == 50_000
    fk = frequencies(protected, keys=DEMO_ROLES["keys"]).fk
    assert fk.min() >= 3 and figures["protected_min_fk"] == fk.min()
    assert figures["target_met"] is True
    assert figures["ru_candidates"] == 9
    internal = (out / "demo_report_internal.html").read_text(encoding="utf-8")
    section = internal[internal.index('id="ru-map"') :]
    section = section[: section.index("</section>")]
    methods = re.findall(r"<tr><td>[^<]+</td><td class=\"num\">([^<]+)</td>", section)
    # the reference points (the original, the current state the candidates are applied to)
    references = {"none", "steps applied"}
    assert sorted(set(methods) - references) == [
        "global recoding", "local suppression", "risk-based local suppression",
    ]  # fmt: skip
    assert all(methods.count(m) == 3 for m in set(methods) - references)
    assert internal.count("data:image/png;base64,") >= 8
    external = (out / "demo_report_external.html").read_text(encoding="utf-8")
    assert "k = 3" in external or f"k = {int(fk.min())}" in external
    assert "seed" not in external and "<img" not in external
    assert "demo_report_internal.html" in text and "demo_report_external.html" in text
    # the release plan: no direct identifier, no column that gives a suppressed value back
    original = load_demo()
    for gone in ("person_id", "district", "area", "stratum", "age"):
        assert gone not in protected.columns
    assert protected["household_id"].n_unique() == original["household_id"].n_unique()
    assert "Release check of the file as written: 0 records below 3-anonymity, 0 protected" in text
    assert 'id="release"' in internal and "It may be released." in internal
    assert "checked independently" in external
    _assert_nothing_read_back(original, protected)


def _assert_nothing_read_back(original, protected) -> None:
    """An attacker's recount, written here: no released column gives a suppressed key back."""
    from importlib import resources

    import polars as pl

    from sdckit.jobs import load_job
    from sdckit.jobs.run import release_seed
    from sdckit.release import released_order

    with resources.as_file(resources.files("sdckit").joinpath("demo_job.toml")) as path:
        job = load_job(path)
    order = released_order(job.release_plan, job.microdata, release_seed(job))
    aligned = original[order]  # record i of the written file is record order[i]
    assert aligned["income"].sort().equals(original["income"].sort())
    keys = DEMO_ROLES["keys"]
    for t in keys:
        hidden = protected[t].is_null() & aligned[t].is_not_null()
        if not hidden.any():
            continue
        for c in protected.columns:
            if c == t or protected[c].n_unique() > 1000:
                continue
            # the attacker's rule: every released record with this value of c that shows t
            # shows the same value (at least ten of them), and it is the hidden one
            seen = (
                pl.DataFrame({"c": protected[c], "t": protected[t]})
                .drop_nulls()
                .group_by("c")
                .agg(pl.col("t").n_unique().alias("u"), pl.col("t").first(), pl.len().alias("n"))
                .filter((pl.col("u") == 1) & (pl.col("n") >= 10))
            )
            probe = pl.DataFrame({"c": protected[c], "truth": aligned[t]}).filter(hidden)
            back = probe.join(seen, on="c").filter(pl.col("t") == pl.col("truth")).height
            assert back == 0, (c, t, back)
        # the household: another member shows the hidden value of a household-wide variable
        constant = original.group_by("household_id").agg(pl.col(t).n_unique()).get_column(t).max()
        if constant != 1:
            continue
        members = (
            pl.DataFrame({"h": protected["household_id"], "t": protected[t]})
            .drop_nulls()
            .group_by("h")
            .agg(pl.col("t").first())
        )
        probe = pl.DataFrame({"h": protected["household_id"], "truth": aligned[t]}).filter(hidden)
        assert probe.join(members, on="h").filter(pl.col("t") == pl.col("truth")).height == 0


def test_python_m_sdckit_demo_exits_cleanly(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sdckit.demo", "--risk-only"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "sample uniques" in proc.stdout
    assert "expected re-identifications" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # --risk-only writes nothing


def test_make_demo_runs_the_whole_demo_as_a_user_does(tmp_path: Path) -> None:
    """``make demo`` is ``python -m sdckit.demo``: run as a script (module-level code after
    ``main()`` is not defined yet then), the protection job included."""
    proc = subprocess.run(
        [sys.executable, "-m", "sdckit.demo", "--out", "out"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "R-U map: 9 candidates" in proc.stdout  # 3 methods x 3 values, not the references
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "demo_protected.parquet", "demo_report_external.html", "demo_report_internal.html",
    ]  # fmt: skip
