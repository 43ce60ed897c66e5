"""End to end in a real browser: the tables workflow on the demo data.

Build a magnitude table of income by region (with a two-level hierarchy) and occupation,
mark the primary cells by a minimum frequency and a dominance rule, run the secondary
suppression (a task in a child process, with its progress bar), see the audit, and export.
Then, outside the UI, the exported published table is audited again by linear programming
(sdckit.tables.audit on a table built afresh, with the cells the file leaves empty suppressed),
and ``sdckit table`` on the exported job writes the same published table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from playwright.sync_api import expect
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import load_demo
from sdckit.tables import CellStatus, Dominance, MinFrequency, Table, apply_rules, audit

HIERARCHY = {
    "Total": ["A", "B"],
    "A": ["Capital", "North", "South", "East"],
    "B": ["West", "Central", "Coast", "Islands"],
}


def test_tables_workflow(page, ui_server, settle, shoot, tmp_path: Path) -> None:
    ws = ui_server.workspace
    page.click("#open-demo")
    page.wait_for_selector("#roles-form")
    settle(page)
    page.click("nav a[href='/tables']")
    page.wait_for_selector("#build-form")

    # 1. the table: region (hierarchy) by occupation, sum of income
    page.check("input[name='dimensions'][value='region']")
    page.check("input[name='dimensions'][value='occupation']")
    page.click("summary:text('hierarchy of region')")
    page.fill("textarea[name='h:region']", "Total: A, B\nA: Capital, North, South, East\n"
              "B: West, Central, Coast, Islands")  # fmt: skip
    page.select_option("#value", "income")
    page.click("#build-table")
    page.wait_for_selector("#table-grid")

    # 2. rules: an error next to its field first, then minimum frequency and dominance
    page.fill("#p-threshold", "0")
    page.click("#add-rule")
    error = page.wait_for_selector("[data-param='threshold'] .error")
    assert "The 'threshold' parameter of MinFrequency must be an integer >= 1; got 0." in (
        error.inner_text()
    )
    page.fill("#p-threshold", "20")
    page.click("#add-rule")
    expect(page.locator("#rules li")).to_have_count(1)
    page.select_option("#rule", "dominance")
    page.wait_for_selector("#p-n")
    page.fill("#p-n", "1")
    page.fill("#p-k", "60")
    page.click("#add-rule")
    expect(page.locator("#rules li")).to_have_count(2)
    primaries = int(ws.tables.marked.primary.sum())
    assert primaries > 0
    expect(page.locator("td.cell-primary")).to_have_count(primaries)
    shoot(page, "tables_primary", at="#table-view")

    # 3. secondary suppression (modular) with the audit, in a child process
    page.select_option("#method", "modular")
    page.wait_for_selector("#p-marginal_penalty")
    page.click("#run-suppression")
    page.wait_for_selector("#audit-result")
    settle(page)
    assert "may be published" in page.inner_text("#audit-result")
    secondaries = int(ws.tables.result.table.secondary.sum())
    assert secondaries > 0
    expect(page.locator("td.cell-secondary")).to_have_count(secondaries)

    # 4. export
    page.click("#export-table")
    page.wait_for_selector("#table-export-result")
    assert "Exported." in page.inner_text("#table-export-result")
    shoot(page, "tables", at="#table-view")
    assert page.errors == []
    files = ws.tables.export.files
    assert set(files) == {"job", "internal", "published"}

    # the published pattern, audited afresh by linear programming
    published = pl.read_csv(files["published"], infer_schema=False)
    table = Table.from_microdata(load_demo(), {"region": HIERARCHY, "occupation": None}, "income")
    marked = apply_rules(table, [MinFrequency(threshold=20), Dominance(n=1, k=60.0)])
    hidden = np.zeros(marked.n_cells, dtype=bool)
    for region, occupation, flag in published.select(
        "region", "occupation", "suppressed"
    ).iter_rows():
        if flag == "true":
            hidden[marked.cell(region=region, occupation=occupation)] = True
    assert published.height == marked.n_cells
    assert hidden[marked.primary].all()  # every primary cell is suppressed
    assert published.filter(pl.col("suppressed") == "true")["value"].null_count() == int(
        hidden.sum()
    )
    status = marked.status.copy()
    status[hidden & ~marked.primary] = CellStatus.SECONDARY
    checked = audit(marked.with_status(status=status), insider=False)
    assert checked.ok
    assert len(checked.cells) == int(hidden.sum())

    # sdckit table on the exported job writes the same published table
    job = files["job"]
    again = tmp_path / "again"
    again.mkdir()
    text = job.read_text(encoding="utf-8").replace(
        f'table = "{files["published"].name}"', f'table = "{(again / "p.csv").as_posix()}"'
    ).replace(f'table_full = "{files["internal"].name}"',
              f'table_full = "{(again / "i.csv").as_posix()}"')  # fmt: skip
    (again / "job.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["table", str(again / "job.toml")])
    assert result.exit_code == 0, result.output
    assert (again / "p.csv").read_bytes() == files["published"].read_bytes()
    assert (again / "i.csv").read_bytes() == files["internal"].read_bytes()
