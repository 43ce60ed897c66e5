"""The table traps in a real browser, on a generated household survey written to CSV.

A dimension with missing codes: the page says so beside its own control ("Records with a
missing code in a dimension"), in the control's words and not job-file syntax, and keeps what
was chosen; choosing "a category of its own" builds the table with a ``(missing)`` level, and the
exported table job carries ``missing = "category"``.  Magnitudes are shown without scientific
notation, and the published CSV holds them at the input's precision (two decimals here).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import polars as pl
import pytest
from playwright.sync_api import expect

from sdckit.datasets import generate_household_survey


@pytest.fixture
def survey_csv(tmp_path: Path) -> Path:
    """751 persons; every 9th has no employment code, every 13th no income (item
    nonresponse); incomes in cents (two decimals)."""
    frame = generate_household_survey(300, seed=7).with_row_index("i")
    frame = frame.with_columns(
        pl.when(pl.col("i") % 9 == 0)
        .then(None)
        .otherwise(pl.col("employment"))
        .alias("employment"),
        pl.when(pl.col("i") % 13 == 5)
        .then(None)
        .otherwise((pl.col("income") * 1000 + 0.01 * (pl.col("i") % 100)).round(2))
        .alias("income"),
    ).drop("i")
    path = tmp_path / "survey.csv"
    frame.write_csv(path)
    return path


def test_missing_codes_chosen_on_the_page(page, ui_server, settle, survey_csv) -> None:
    ws = ui_server.workspace
    page.set_default_timeout(90_000)
    page.fill("#path", str(survey_csv))
    page.click("form[action^='/open/path'] button[type=submit]")
    page.wait_for_selector("#roles-form")
    settle(page)
    page.click("nav a[href='/tables']")
    page.wait_for_selector("#build-form")
    page.check("input[name='dimensions'][value='region']")
    page.check("input[name='dimensions'][value='employment']")
    page.select_option("#value", "income")
    page.click("#build-table")

    # refused beside the control, in its words; what was chosen is kept
    error = page.wait_for_selector("#missing-error")
    text = error.inner_text()
    assert "Records with a missing code in a dimension" in text
    assert "missing =" not in text  # no job-file syntax where the page has the control
    assert page.is_checked("input[name='dimensions'][value='employment']")
    assert page.input_value("#value") == "income"
    assert page.evaluate("() => document.activeElement.id") == "missing-error"

    page.select_option("#missing", "category")
    page.click("#build-table")
    # the records without an income: refused beside their own control, in its words
    error = page.wait_for_selector("#missing_value-error")
    text = error.inner_text()
    assert "Records without a value" in text and "missing_value" not in text
    assert page.input_value("#missing") == "category"
    page.select_option("#missing_value", "drop")
    page.click("#build-table")
    page.wait_for_selector("#table-grid")
    settle(page)
    assert ws.tables.spec["missing"] == "category"
    assert ws.tables.spec["missing_value"] == "drop"
    dropped = sum(1 for i in range(751) if i % 13 == 5)
    assert ws.tables.table.records_dropped == dropped
    assert page.input_value("#missing") == "category"
    grid = page.inner_text("#table-grid")
    assert "(missing)" in grid
    assert not re.search(r"\de[+-]\d", grid)  # no scientific notation
    assert re.search(r"\d{1,3}(,\d{3}){2,}", grid)  # thousands separators

    # a rule, the suppression with its audit, the export
    page.fill("#p-threshold", "3")
    page.click("#add-rule")
    expect(page.locator("#rules li")).to_have_count(1)
    page.click("#run-suppression")
    page.wait_for_selector("#audit-result")
    settle(page)
    page.click("#export-table")
    page.wait_for_selector("#table-export-result")
    assert page.errors == []
    files = ws.tables.export.files
    job = tomllib.loads(files["job"].read_text(encoding="utf-8"))
    assert job["table"]["missing"] == "category" and job["table"]["missing_value"] == "drop"
    published = pl.read_csv(files["published"], infer_schema=False)
    values = published["value"].drop_nulls().to_list()
    assert values and all(re.fullmatch(r"-?\d+(\.\d{1,2})?", v) for v in values), values[:5]
