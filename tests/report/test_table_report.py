"""The HTML report of a table protection: internal (full detail) and external (publishable)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError, VerificationError
from sdckit.report import write_table_report
from sdckit.report._table import render_table_report
from sdckit.tables import MarkedCells, Table, apply_rules, audit, suppress_modular, suppress_optimal
from sdckit.tables.examples import A4_PRIMARIES, a4_table, e2_table


@pytest.fixture(scope="module")
def e2_result():
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    return suppress_optimal(apply_rules(t, MarkedCells(cells=[d], upper=500)), cost="unity")


def _cells(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<td class="cell ?([a-z ]*)">([^<]*)</td>', html)


def test_external_report_shows_one_symbol_and_no_primary(e2_result) -> None:
    html = render_table_report(e2_result, kind="external")
    t = e2_result.table
    cells = _cells(html)
    assert len(cells) == t.n_cells
    marked = [text for css, text in cells if css == "suppressed"]
    assert marked == ["x"] * int(t.suppressed.sum())
    for word in ("primary", "secondary", "sliding", "upper level", "minimum", "maximum"):
        assert word not in html.lower(), word
    # no suppressed value appears anywhere (the published values do; a suppressed value equal
    # to a published one is shown as that one)
    published = set(t.values[~t.suppressed].tolist())
    hidden = [v for v in t.values[t.suppressed].tolist() if v not in published]
    assert hidden
    for v in hidden:
        assert f">{int(v):,}<" not in html and f">{int(v)}<" not in html
    assert "none of them can be derived" in html


def test_internal_report_has_the_pattern_the_audit_and_the_loss(e2_result) -> None:
    html = render_table_report(e2_result, kind="internal")
    t = e2_result.table
    css = [c for c, _ in _cells(html)]
    assert css.count("primary") == 1 and css.count("secondary") == int(t.secondary.sum())
    check = audit(t)
    rows = re.findall(r"<tr>(<td>.*?)</tr>", html.split('<table class="audit">')[1])
    assert len(rows) == len(check.cells)
    d = t.cell(region="D", industry="36210")
    lo, hi = check.interval(d)
    assert f'<td class="num">{int(lo):,}</td><td class="num">{int(hi):,}</td>' in html
    assert "every primary is protected" in html
    assert "value of secondary suppressions" in html and "Internal report" in html


def test_external_report_is_refused_for_an_unprotected_pattern(tmp_path) -> None:
    t = a4_table()
    trap = apply_rules(t, MarkedCells(cells=[t.cell(row=r, col=c) for r, c in A4_PRIMARIES]))
    with pytest.raises(VerificationError):
        write_table_report(trap, tmp_path / "ext.html", kind="external")
    assert not (tmp_path / "ext.html").exists()
    out = write_table_report(trap, tmp_path / "int.html", kind="internal")
    assert "under-protected" in out.read_text(encoding="utf-8")


def test_report_written_atomically_with_its_directory(tmp_path, e2_result) -> None:
    out = write_table_report(e2_result, tmp_path / "a" / "b" / "r.html", kind="external")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert not list(out.parent.glob(".*tmp"))
    with pytest.raises(ParameterError, match=r"\.html"):
        write_table_report(e2_result, tmp_path / "r.txt")
    with pytest.raises(ParameterError, match="kind"):
        render_table_report(e2_result, kind="public")


def test_codes_are_escaped_and_larger_tables_get_slices() -> None:
    rng = np.random.default_rng(1)
    df = pl.DataFrame(
        {
            "a": rng.choice(["<b>bold</b>", "x & y"], 200),
            "b": rng.choice(["p", "q", "r"], 200),
            "c": rng.choice(["u", "v"], 200),
            "v": rng.lognormal(3, 1, 200),
        }
    )
    t = Table.from_microdata(df, ["a", "b", "c"], "v")
    t = apply_rules(t, MarkedCells(cells=[t.cell(a="x & y", b="p", c="u")], upper=1))
    html = render_table_report(suppress_modular(t), kind="internal")
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert html.count('<table class="pattern">') == 3  # c = Total, u, v


def test_a_rank_test_audit_is_reported_as_it_is(monkeypatch) -> None:
    from sdckit.tables.suppression import rank_audit

    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    marked = apply_rules(t, MarkedCells(cells=[4], upper=0))
    safe = marked.suppress([5, 7, 8])  # the cycle of four: (a, x) primary, three secondaries
    checked = rank_audit(safe)

    def no_lp(*args, **kwargs):
        raise AssertionError("the report ran an LP audit")

    monkeypatch.setattr("sdckit.tables.audit", no_lp)
    html = render_table_report(safe, kind="internal", audit=checked)
    assert "Audited by the rank test" in html and "no primary can be computed exactly" in html
    rows = re.findall(r"<tr><td>([ab])</td><td>([xy])</td><td[^>]*>(\w+)</td>(.*?)</tr>", html)
    verdicts = {(r, c): re.findall(r">([^<]*)</td>", rest)[-2:] for r, c, _, rest in rows}
    assert verdicts[("a", "x")] == ["no", "yes"]  # the primary: decided
    assert verdicts[("a", "y")] == verdicts[("b", "y")] == ["n/a", "n/a"]  # not decided
    external = render_table_report(safe, kind="external", audit=checked)
    assert "rank test of the published cells" in external and "primary" not in external.lower()
    # a pattern the rank test refuses: no external report
    bad = marked.suppress([5])
    with pytest.raises(VerificationError):
        render_table_report(bad, kind="external", audit=rank_audit(bad))
    assert "1 primary cell(s) can be computed exactly" in render_table_report(
        bad, kind="internal", audit=rank_audit(bad)
    )


def test_a_check_mode_audit_of_a_large_pattern_is_reported_as_it_is(monkeypatch) -> None:
    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    safe = apply_rules(t, MarkedCells(cells=[4], upper=1)).suppress([5, 7, 8])
    checked = audit(safe, intervals="check")
    # small: the report computes the exact intervals itself
    html = render_table_report(safe, kind="internal", audit=checked)
    assert "inner\napproximations" not in html
    exact = audit(safe)
    assert exact.interval(4) == (3.0, 6.0)
    # above the limit: the check-mode audit as it is, its intervals marked approximate
    monkeypatch.setattr("sdckit.report._table.EXACT_FOR_REPORT_UP_TO", 3)

    def no_lp(*args, **kwargs):
        raise AssertionError("the report ran an LP audit")

    monkeypatch.setattr("sdckit.tables.audit", no_lp)
    html = render_table_report(safe, kind="internal", audit=checked)
    assert "the intervals shown are inner\napproximations" in html
    assert "every primary is protected" in html
