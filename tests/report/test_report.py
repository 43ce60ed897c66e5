"""The HTML report: content of the internal and external versions, and rendering in Chromium."""

from __future__ import annotations

import base64
import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sdckit.datasets import DEMO_ROLES, generate_census
from sdckit.errors import DataError, ParameterError
from sdckit.masking._pram import Pram
from sdckit.masking.noise import AddNoise
from sdckit.masking.suppression import LocalSuppression
from sdckit.report import describe_step, render_report, write_report
from sdckit.risk import frequencies
from sdckit.session import Session
from sdckit.utility import ru_map

PRAM_SEED = 987_654_321
NOISE_SEED = 123_457
NOISE_LEVEL = 37.5


@pytest.fixture(scope="module")
def session() -> Session:
    frame = generate_census(1500, seed=11)
    roles = dict(DEMO_ROLES, numeric=["income", "expenditure", "savings"])
    s = Session(frame, **roles)
    s.apply(Pram(variables=["marital_status"], min_diagonal=0.7, seed=PRAM_SEED))
    s.apply(AddNoise(noise=NOISE_LEVEL, variables=["income"], seed=NOISE_SEED))
    s.apply(LocalSuppression(k=3))
    return s


@pytest.fixture(scope="module")
def ru(session: Session):  # type: ignore[no-untyped-def]
    candidates = {f"suppression k={k}": LocalSuppression(k=k) for k in (2, 3, 5)}
    return ru_map(session.original, candidates, risk="global_risk", loss="share_changed")


@pytest.fixture(scope="module")
def reports(session: Session, ru, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("reports")
    internal = write_report(
        session, out / "internal.html", ru_map=ru, target=("k-anonymity with k = 3", True)
    )
    external = write_report(session, out / "external.html", kind="external", title="Census 2026")
    return {"internal": internal, "external": external}


def images(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', text)]


def test_internal_report_has_every_figure_parameter_and_plot(
    session: Session, reports: dict[str, Path]
) -> None:
    text = reports["internal"].read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    # self-contained: no external resource of any kind
    assert not re.search(r'(src|href)="(?!data:)', text)
    assert "<link" not in text
    # the history with every parameter, including the seeds and the noise level
    needles = [f"seed={PRAM_SEED}", f"seed={NOISE_SEED}", f"noise={NOISE_LEVEL}"]
    needles += ["min_diagonal=0.7", "k=3", "PRAM", "additive noise", "local suppression"]
    for needle in needles:
        assert html.escape(needle) in text, needle
    # the risk figures of every state, as the session computed them
    last = session.history[-1].figures
    assert f'<td class="num">{session.initial_figures["sample_uniques"]:,}</td>' in text
    assert f'<td class="num">{last["key_values_suppressed"]:,}</td>' in text
    assert "Risk target: k-anonymity with k = 3" in text and ">met<" in text
    k = int(frequencies(session.current).fk.min())
    assert k >= 3
    assert f"k = {k}" in text
    # utility summaries, the R-U map table and every plot as a decodable PNG
    assert "Information loss: continuous variables" in text
    assert "Information loss: categorical variables" in text
    assert "R-U confidentiality map" in text and "suppression k=5" in text
    pngs = images(text)
    # 2 risk distributions, 3 bar charts, box plots, 1 histogram, correlations, PCA, R-U map
    assert len(pngs) == text.count("<img") == 10
    for png in pngs:
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert width > 100 and height > 100


def test_external_report_publishes_no_confidential_detail(
    session: Session, reports: dict[str, Path]
) -> None:
    text = reports["external"].read_text(encoding="utf-8")
    assert "<title>Census 2026</title>" in text
    for secret in (str(PRAM_SEED), str(NOISE_SEED), str(NOISE_LEVEL), "seed", "min_diagonal",
                   "noise=", "k=3", "<img", "data:image"):  # fmt: skip
        assert secret not in text, secret
    # the methods in general terms, in order, and the k level reached
    assert text.index("(post-randomisation, PRAM)") < text.index("Adds random noise to")
    assert text.index("Adds random noise") < text.index("(local suppression)")
    k = int(frequencies(session.current).fk.min())
    assert f"k = {k}" in text
    share = session.history[-1].figures["share_keys_changed"]
    assert f"{100 * share:.1f} %" in text
    # no small count (number of suppressions, uniques) and no record value
    final = session.history[-1].figures
    original = session.initial_figures
    for count in (final["key_values_suppressed"], original["sample_uniques"],
                  original["k3_violations"]):  # fmt: skip
        assert f">{count:,}<" not in text and f">{count}<" not in text
    frame = session.original.frame
    for col in ("region", "country_of_birth", "marital_status"):
        for value in frame.get_column(col).unique().to_list():
            if value and len(value) >= 6:
                assert value not in text, (col, value)
    assert "Traceback" not in text


def test_render_report_checks_its_arguments(session: Session, tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="'kind'"):
        render_report(session, kind="public")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="Session"):
        render_report(session.original)
    with pytest.raises(ParameterError, match="'title'"):
        render_report(session, kind="external", title=" ")
    # atomic: a failed write leaves an existing file untouched and no temporary file
    target = tmp_path / "report.html"
    target.write_text("old")
    with pytest.raises(ParameterError):
        write_report(session, target, kind="nope")  # type: ignore[arg-type]
    assert target.read_text() == "old"
    with pytest.raises(DataError, match="does not exist"):
        write_report(session, tmp_path / "missing" / "r.html", kind="external")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_report_of_a_session_without_steps(tmp_path: Path) -> None:
    frame = generate_census(300, seed=3)
    s = Session(frame, keys=["region", "sex"])
    text = write_report(s, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "No protection method was applied." in text
    assert len(images(text)) == 1  # the risk distribution of the original file
    external = render_report(s, kind="external")
    k = int(np.min(frequencies(s.original).fk))
    assert f"k = {k}" in external or "not k-anonymous (k = 1)" in external


def test_describe_step_is_general() -> None:
    from sdckit.masking import AddNoise, Microaggregation

    assert describe_step("additive noise", ["income"]) == AddNoise.describe(["income"])
    assert "income" in AddNoise.describe(["income"])
    assert describe_step("Microaggregation", ["a", "b"]) == Microaggregation.describe(["a", "b"])
    assert "a, b" in describe_step("Microaggregation", ["a", "b"])
    assert describe_step("made-up method", ["x"]) == "The method 'made-up method' was applied to x."


# ---------------------------------------------------------------------------- real browser
def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def render_in_chromium(browser: str, page: Path, profile: Path) -> str:
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
         "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_reports_render_in_headless_chromium(reports: dict[str, Path], tmp_path: Path) -> None:
    browser = find_chromium()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI: apt-get install -y chromium")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    for kind, page in reports.items():
        dom = render_in_chromium(browser, page, tmp_path / f"profile-{kind}")
        body = re.search(r"<body([^>]*)>", dom)
        assert body is not None, dom[:500]
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
        expected = page.read_text(encoding="utf-8").count("<img")
        assert attrs.get("data-render-status") == "complete", attrs
        assert int(attrs["data-images-total"]) == expected
        assert int(attrs["data-images-loaded"]) == expected
        assert ("<h1>" in dom) and ("How the data were protected" in dom) == (kind == "external")
        if kind == "internal":
            assert expected == 10
