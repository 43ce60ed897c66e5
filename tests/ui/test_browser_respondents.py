"""Respondents and holdings in the table form, in a real browser, on a business register.

The register (sdckit.datasets.generate_business_register) has one row per local unit: the
table form's "Respondent (enterprise) id" and "Holding (enterprise group) id" make the rules
count enterprises and holdings, the table built is the one ``Table.from_microdata`` builds with
the same columns, and the job's ``[table]`` carries them.  A holding id that differs between
the records of one enterprise is refused beside the holding control.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.datasets import generate_business_register
from sdckit.tables import Table


@pytest.fixture
def register_csv(tmp_path: Path) -> Path:
    path = tmp_path / "register.csv"
    generate_business_register(400, seed=3).write_csv(path)
    return path


def _build(page, path: Path, settle) -> None:
    page.set_default_timeout(90_000)
    page.fill("#path", str(path))
    page.click("form[action^='/open/path'] button[type=submit]")
    page.wait_for_selector("#roles-form")
    settle(page)
    page.click("nav a[href='/tables']")
    page.wait_for_selector("#build-form")
    page.check("input[name='dimensions'][value='region']")
    page.check("input[name='dimensions'][value='size_class']")
    page.select_option("#value", "turnover")
    page.select_option("#respondent", "enterprise_id")
    page.select_option("#holding", "holding_id")
    page.click("#build-table")


def test_the_form_builds_a_table_of_enterprises_and_holdings(
    page, ui_server, settle, register_csv
) -> None:
    ws = ui_server.workspace
    _build(page, register_csv, settle)
    page.wait_for_selector("#table-grid")
    built = ws.tables.table
    frame = pl.read_csv(register_csv, schema_overrides={"region": pl.String})
    want = Table.from_microdata(
        frame,
        ["region", "size_class"],
        "turnover",
        respondent="enterprise_id",
        holding="holding_id",
    )
    np.testing.assert_array_equal(built.n_contributors, want.n_contributors)
    np.testing.assert_allclose(built.top, want.top)
    assert built.contributions is not None and built.contributions.level == "holding"
    # fewer holdings than local units in the grand total
    assert built.n_contributors[0] < frame.height
    # the [table] of the job the page exports
    assert ws.tables.spec["respondent"] == "enterprise_id"
    assert ws.tables.spec["holding"] == "holding_id"


def test_a_holding_that_changes_within_an_enterprise_is_refused_beside_its_control(
    page, ui_server, settle, register_csv, tmp_path: Path
) -> None:
    frame = pl.read_csv(register_csv)
    # the second local unit of a multi-unit enterprise gets another holding id
    bad = frame.with_columns(
        holding_id=pl.when((pl.col("local_unit_id") % 100) == 2)
        .then(pl.lit(999_999))
        .otherwise(pl.col("holding_id"))
    )
    path = tmp_path / "bad.csv"
    bad.write_csv(path)
    _build(page, path, settle)
    error = page.wait_for_selector("#holding-error")
    assert "is not constant within the respondents" in error.inner_text()
    assert page.locator("#holding").input_value() == "holding_id"
