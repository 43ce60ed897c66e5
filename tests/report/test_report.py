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
MAX_RISK = 0.003  # a share of records: 0.3 % in the reports


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
    # (without the household closure, whose extra suppressions put k = 2 below the maximum)
    candidates = {
        f"suppression k={k}": LocalSuppression(k=k, block_households=False) for k in (2, 3, 5)
    }
    # the original file's global risk is 3 %: k = 3 and k = 5 are admissible, k = 3 is the best
    return ru_map(
        session.original, candidates, risk="global_risk", loss="share_changed", max_risk=MAX_RISK
    )


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
    row = "<th>share of key values changed or suppressed (%)</th>"
    assert f'{row}<td class="num">{100 * share:.1f}</td>' in text
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


# ---------------------------------------------------------------------------- review fixes
def section(text: str, ident: str) -> str:
    part = text[text.index(f'id="{ident}"') :]
    return part[: part.index("</section>")]


def figures_rows(text: str) -> dict[str, list[str]]:
    """The figures table of the internal report: label -> the cells of every state."""
    table = section(text, "risk")
    rows = re.findall(r"<tr><th>([^<]+)</th>((?:<td class=\"num\">[^<]*</td>)+)</tr>", table)
    return {html.unescape(label): re.findall(r">([^<]*)</td>", cells) for label, cells in rows}


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_one_unit_per_measure_in_tables_and_plots(session: Session, ru, reports) -> None:  # type: ignore[no-untyped-def]
    from sdckit.report._html import _figures

    text = reports["internal"].read_text(encoding="utf-8")
    rows = figures_rows(text)
    first, last = session.initial_figures, session.history[-1].figures
    # shares and risks in percent, labelled so, in every state
    share = rows["share of key values changed (%)"]
    assert number(share[-1]) == pytest.approx(100 * last["share_keys_changed"], rel=1e-3)
    risk = rows["global risk (%)"]
    assert number(risk[0]) == pytest.approx(first["global_risk_pct"], rel=1e-3)
    highest = rows["highest individual risk (%)"]
    assert number(highest[0]) == pytest.approx(100 * first["highest_risk"], rel=1e-3)
    assert "global household risk (%)" in rows and "household risk pct" not in rows
    # never the same measure as a fraction: no unlabelled share anywhere in the report
    for label in ("share of key values changed", "share of changed values", "global risk"):
        assert f">{label}<" not in text, label
    categorical = section(text, "utility")
    assert f'<th>share of key values changed (%)</th><td class="num">{share[-1]}</td>' in (
        categorical
    )
    assert "<th>share changed (%)</th>" in categorical and "<th>share_changed</th>" not in text
    # the R-U map: table and axes in the unit of the figures table, the original point at the
    # global risk (%) of the original file
    ru_table = section(text, "ru-map")
    assert "<th>global risk (%)</th>" in ru_table
    assert "<th>share of key values changed (%)</th>" in ru_table
    assert "maximum tolerable risk: global risk (%)</th><td>0.300</td>" in ru_table
    figures = {caption.split(" (")[0]: fig for fig, caption in _figures(session, ru)}
    ax = figures["R-U confidentiality map"].axes[0]
    assert ax.get_xlabel() == "disclosure risk: global risk (%)"
    assert ax.get_ylabel() == "information loss: share of key values changed (%)"
    star = next(c for c in ax.collections if c.get_label() == "original")
    assert star.get_offsets()[0][0] == pytest.approx(first["global_risk_pct"])
    # the risk distributions: the same percent, the global risk (%) of the table as a line
    for name, figures_of in (("original", first), ("protected", last)):
        fig = figures[f"Individual re-identification risk of the {name} file"]
        rax = fig.axes[0]
        assert rax.get_xlabel().startswith("individual re-identification risk (%")
        means = [ln.get_xdata()[0] for ln in rax.lines if "global risk" in str(ln.get_label())]
        assert means == [pytest.approx(figures_of["global_risk_pct"])]
        assert rax.get_xlim()[1] == pytest.approx(100 * max(first["highest_risk"],
                                                             last["highest_risk"]))  # fmt: skip


def test_risk_histograms_share_range_bins_and_log_scales(session: Session) -> None:
    from sdckit.report._html import _figures

    before, after = (fig for fig, caption in _figures(session, None)[:2])
    a, b = before.axes[0], after.axes[0]
    assert a.get_xlim() == b.get_xlim() and a.get_ylim() == b.get_ylim()

    def edges(ax) -> list[float]:  # type: ignore[no-untyped-def]
        return sorted({round(p.get_x(), 12) for p in ax.patches})

    assert edges(a) == edges(b) and len(edges(a)) == 40
    # the risks span decades: log risk axis and log counts, said on the axes
    assert a.get_xscale() == b.get_xscale() == "log"
    assert a.get_yscale() == b.get_yscale() == "log"
    assert a.get_xlabel().endswith("log scale)") and a.get_ylabel() == "records (log scale)"
    assert a.get_title() != b.get_title()


def test_pram_transition_matrices_only_in_the_internal_report(session: Session, reports) -> None:  # type: ignore[no-untyped-def]
    internal = reports["internal"].read_text(encoding="utf-8")
    external = reports["external"].read_text(encoding="utf-8")
    step = session.history[0]
    details = step.result.details
    levels = details["levels"]["marital_status"]
    matrices = details["transition"]["marital_status"]
    assert len(matrices) > 1  # one per stratum
    part = section(internal, "transition-matrices")
    tables = re.findall(r'<table class="matrix"[^>]*>(.*?)</table>', part, flags=re.S)
    assert len(tables) == len(matrices)
    strata = set(session.original.frame.get_column("stratum").unique().to_list())
    for table, matrix in zip(tables, matrices, strict=True):
        caption = re.search(r"<caption>stratum ([^<]+)</caption>", table)
        assert caption is not None and caption.group(1) in strata
        header = re.findall(r'<th class="col">([^<]+)</th>', table)
        assert header == levels  # released categories as columns
        rows = re.findall(r'<tr><th class="row">([^<]+)</th>(.*?)</tr>', table)
        assert [label for label, _ in rows] == levels  # original categories as rows
        for (_, cells), expected in zip(rows, matrix, strict=True):
            values = re.findall(r'<td class="num[^"]*">([^<]+)</td>', cells)
            assert values == [f"{v:.3f}" for v in expected]
    # the matrix is confidential: nothing of it in the external report
    assert 'id="transition-matrices"' not in external and "transition" not in external.lower()
    assert not re.search(r">0\.\d{3}<", external)
    for stratum in strata:
        assert stratum not in external


def test_best_candidate_is_marked_in_table_and_plot(session: Session, ru, reports) -> None:  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from sdckit import plots

    assert ru.best == "suppression k=3"  # k=2 has less loss but more than the maximum risk
    text = reports["internal"].read_text(encoding="utf-8")
    part = section(text, "ru-map")
    best_rows = re.findall(r'<tbody class="best"[^>]*><tr><td>([^<]+)</td>', part)
    assert best_rows == ["suppression k=3"]
    assert re.search(r"tbody\.best td \{ font-weight: (700|bold)", text)
    fig = plots.ru_map_plot(ru)
    ax = fig.axes[0]
    point = ru.points.filter(ru.points["candidate"] == ru.best)
    marks = [c for c in ax.collections if c.get_gid() == "ru-best"]
    assert len(marks) == 1 and "recommended: suppression k=3" in marks[0].get_label()
    assert marks[0].get_offsets()[0].tolist() == pytest.approx(
        [100 * point["risk"][0], 100 * point["loss"][0]]
    )
    labels = {t.get_gid(): t for t in ax.texts}
    assert labels["ru-label:suppression k=3"].get_fontweight() == "bold"
    assert labels["ru-label:suppression k=2"].get_fontweight() == "normal"
    limit = [ln for ln in ax.lines if ln.get_gid() == "ru-max-risk"]
    assert len(limit) == 1 and limit[0].get_xdata()[0] == pytest.approx(100 * MAX_RISK)
    assert "0.3 %" in limit[0].get_label()
    # every label inside the axes and none over another
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    inside = ax.get_window_extent(renderer)
    assert all(inside.contains(b.x0, b.y0) and inside.contains(b.x1, b.y1) for b in boxes)
    assert not any(b.overlaps(c) for i, b in enumerate(boxes) for c in boxes[i + 1 :])
    # without a maximum risk: no line, the least loss circled (not "recommended")
    free = ru_map(session.original, {"k=2": LocalSuppression(k=2)}, risk="global_risk",
                  loss="share_changed")  # fmt: skip
    ax = plots.ru_map_plot(free).axes[0]
    assert not [ln for ln in ax.lines if ln.get_gid() == "ru-max-risk"]
    assert [c.get_label() for c in ax.collections if c.get_gid() == "ru-best"] == [
        "least loss: k=2"
    ]


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
