"""Published symbols: ``x`` for every suppressed cell, ``-`` for an empty cell, 0 for a zero."""

from __future__ import annotations

import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.report import write_table_report
from sdckit.tables import (
    EMPTY_SYMBOL,
    SUPPRESSED_SYMBOL,
    MarkedCells,
    Table,
    apply_rules,
    suppress_optimal,
)


def _records() -> pl.DataFrame:
    # region x size: (A, big) has no record (an empty cell); (B, small) has two records
    # whose values are 0 (a true zero); every other inner cell has records with values
    rows = [
        ("A", "small", 5.0), ("A", "small", 7.0), ("A", "mid", 4.0), ("A", "mid", 6.0),
        ("B", "small", 0.0), ("B", "small", 0.0), ("B", "mid", 8.0), ("B", "mid", 3.0),
        ("B", "big", 9.0), ("B", "big", 2.0), ("C", "small", 6.0), ("C", "small", 1.0),
        ("C", "mid", 5.0), ("C", "mid", 5.0), ("C", "big", 7.0), ("C", "big", 4.0),
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=["region", "size", "turnover"], orient="row")


def _protected() -> Table:
    t = Table.from_microdata(_records(), ["region", "size"], "turnover")
    primary = t.cell(region="C", size="mid")
    res = suppress_optimal(apply_rules(t, MarkedCells(cells=[primary], upper=2)), cost="unity")
    assert res.protected and res.table.secondary.sum() >= 3
    return res.table


def _rows(frame: pl.DataFrame) -> dict[tuple[str, str], tuple[float | None, str | None]]:
    return {
        (r, s): (v, sym)
        for r, s, v, sym in frame.select("region", "size", "value", "symbol").iter_rows()
    }


def test_written_cells_carry_one_symbol_per_kind(tmp_path) -> None:
    table = _protected()
    path = table.write(tmp_path / "pub.csv")
    rows = _rows(pl.read_csv(path, schema_overrides={"symbol": pl.Utf8}))
    # the empty cell: no value, its own symbol; the true zero: 0, no symbol
    assert rows[("A", "big")] == (None, EMPTY_SYMBOL) == (None, "-")
    assert rows[("B", "small")] == (0.0, None)
    # every suppressed cell, the primary and the secondaries, has the same symbol and no value
    hidden = {
        (r, s)
        for r, s, h in table.to_published_frame().select("region", "size", "suppressed").iter_rows()
        if h
    }
    assert ("C", "mid") in hidden and len(hidden) == int(table.suppressed.sum()) >= 4
    for key in hidden:
        assert rows[key] == (None, SUPPRESSED_SYMBOL) == (None, "x")
    # the other cells are published as they are
    assert rows[("Total", "Total")] == (72.0, None)
    assert {k for k, (_, sym) in rows.items() if sym is None} == set(rows) - hidden - {("A", "big")}
    text = path.read_text(encoding="utf-8")
    assert "primary" not in text and "secondary" not in text


def test_empty_cells_as_zeros_or_left_out(tmp_path) -> None:
    table = _protected()
    as_zero = _rows(pl.read_csv(table.write(tmp_path / "z.csv", empty="zero")))
    assert as_zero[("A", "big")] == (0.0, None)
    omitted = table.to_published_frame(empty="omit")
    assert ("A", "big") not in _rows(omitted)
    assert omitted.height == table.n_cells - 1
    with pytest.raises(ParameterError, match="'empty'"):
        table.to_published_frame(empty="blank")
    with pytest.raises(ParameterError, match="'empty'"):
        table.write(tmp_path / "bad.csv", empty="blank")
    assert not (tmp_path / "bad.csv").exists()


def test_suppressed_empty_cell_is_x_and_unknown_contributors_keep_zeros() -> None:
    table = _protected()
    empty = table.cell(region="A", size="big")
    hidden = table.suppress([empty])
    assert _rows(hidden.to_published_frame())[("A", "big")] == (None, "x")
    # a table given by its cells, without contributor counts, cannot tell empty from zero
    given = Table.from_frame(
        table.to_frame().select("region", "size", "value"),
        ["region", "size"],
        "value",
    )
    rows = _rows(given.to_published_frame())
    assert rows[("A", "big")] == (0.0, None) and rows[("B", "small")] == (0.0, None)


def test_external_report_explains_and_uses_the_symbols(tmp_path) -> None:
    table = _protected()
    html = write_table_report(table, tmp_path / "ext.html", kind="external").read_text("utf-8")
    assert 'id="symbols"' in html
    legend = html.split('id="symbols"')[1].split("</p>")[0]
    assert "suppressed cell" in legend and "empty cell" in legend and "true zero" in legend
    cells = html.split('class="pattern"')[1]
    assert cells.count('cell suppressed">x<') == int(table.suppressed.sum())
    assert cells.count('cell empty">-<') == 1
    internal = write_table_report(table, tmp_path / "int.html").read_text("utf-8")
    assert 'id="symbols"' not in internal


@pytest.mark.parametrize(("empty", "want"), [("symbol", (None, "-")), ("zero", (0.0, None))])
def test_a_job_publishes_empty_cells_as_its_output_says(tmp_path, empty, want) -> None:
    from sdckit.jobs import TableRunner, load_table_job, run_table_job

    _records().write_csv(tmp_path / "firms.csv")
    job = tmp_path / "job.toml"
    job.write_text(
        '[input]\nfile = "firms.csv"\n[table]\ndimensions = ["region", "size"]\n'
        'value = "turnover"\n[[rules]]\nrule = "min_frequency"\nthreshold = 2\n'
        f'[output]\ntable = "pub.csv"\nempty = "{empty}"\n'
    )
    run_table_job(load_table_job(job))
    rows = _rows(pl.read_csv(tmp_path / "pub.csv", schema_overrides={"symbol": pl.Utf8}))
    assert rows[("A", "big")] == want
    assert rows[("B", "small")] == (0.0, None)
    # the runner keeps the option and writes it back into the job it saves
    runner = TableRunner.from_job(load_table_job(job))
    assert runner.outputs.empty == empty
    assert ('empty = "zero"' in runner.to_toml()) == (empty == "zero")


def test_a_job_refuses_an_unknown_empty_option(tmp_path) -> None:
    from sdckit.jobs import load_table_job

    _records().write_csv(tmp_path / "firms.csv")
    job = tmp_path / "job.toml"
    job.write_text(
        '[input]\nfile = "firms.csv"\n[table]\ndimensions = ["region", "size"]\n'
        'value = "turnover"\n[[rules]]\nrule = "min_frequency"\nthreshold = 2\n'
        '[output]\ntable = "pub.csv"\nempty = "blank"\n'
    )
    with pytest.raises(ParameterError, match=r"\[output\] empty must be one of"):
        load_table_job(job)
