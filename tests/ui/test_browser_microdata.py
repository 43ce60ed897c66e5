"""End to end in a real browser: the microdata workflow on the demo data.

Open the demo data, set the roles by hand, recode the age groups and suppress locally to
k = 3, undo and redo a step, build an R-U map, run the release check and export.  Then, outside
the UI: the exported file is 3-anonymous by an independent recount (a polars group-by of the
key combinations, a missing value matching any value), and ``sdckit protect`` on the exported
job file writes the same bytes.  The screenshots of docs/ui/ are taken on the way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from playwright.sync_api import expect
from typer.testing import CliRunner

from sdckit.cli.app import app

KEYS = ["region", "sex", "age_group", "marital_status", "education"]
HOUSEHOLD_LEVEL = ["region", "urban_rural", "household_size", "household_income"]
DROPPED = ["district", "area", "stratum", "age"]


def ten_year(group: str) -> str:
    """'35-39' -> '30-39'; '80-84' and '85+' -> '80+'."""
    low = int(group[:2])
    return "80+" if low >= 80 else f"{low - low % 10:02d}-{low - low % 10 + 9:02d}"


def wildcard_class_sizes(frame: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """For every record, the records that match it on every key, a missing value matching
    any value: a group-by of the key combinations, then a count over compatible combinations."""
    combos = frame.group_by(keys).len()
    codes = np.stack(
        [
            combos[k].cast(pl.String).rank("dense").fill_null(0).to_numpy().astype(np.int64)
            for k in keys
        ],
        axis=1,
    )  # 0 = missing
    counts = combos["len"].to_numpy()
    sizes = np.empty(len(combos), dtype=np.int64)
    for i in range(len(combos)):
        compatible = ((codes == codes[i]) | (codes == 0) | (codes[i] == 0)).all(axis=1)
        sizes[i] = counts[compatible].sum()
    return np.repeat(sizes, counts)


def history_rows(page: object) -> int:
    return page.locator("#history tbody tr:not(.undone)").count()  # type: ignore[attr-defined]


def test_microdata_workflow(page, ui_server, settle, shoot, tmp_path: Path) -> None:
    ws = ui_server.workspace
    shoot(page, "open")

    # 1. the demo data, by keyboard: Tab reaches the button (skip link and menu first), Enter
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "open-demo":
            break
    assert page.evaluate("() => document.activeElement.id") == "open-demo"
    page.keyboard.press("Enter")
    page.wait_for_selector("#roles-form")
    settle(page)

    # 2. the roles, by hand
    for column in KEYS:
        page.select_option(f"select[name='role:{column}']", "key")
    page.select_option("select[name='role:household_id']", "household")
    page.select_option("select[name='role:person_id']", "identifier")
    page.select_option("select[name='role:weight']", "weight")
    for column in HOUSEHOLD_LEVEL:
        page.check(f"input[name='hh:{column}']")
    for column in DROPPED:
        page.check(f"input[name='drop:{column}']")
    shoot(page, "roles")
    page.click("#save-roles")
    page.wait_for_selector("#risk-figures")
    settle(page)
    assert ws.session is not None and list(ws.session.original.keys) == KEYS
    violations_before = ws.session.risk.k_violations(3)
    assert violations_before > 0
    assert page.locator("#records-count").inner_text().startswith(f"{violations_before:,} of")
    page.click("#records-table thead a:text('fk')")  # sort by fk, then page through
    page.wait_for_selector("#records-table th[aria-sort] a:text('fk')")
    page.click("#next-page")
    expect(page.locator("#records-count")).to_contain_text("page 2 of")
    shoot(page, "risk")

    # 3. global recoding of the age groups (the levels editor, generated from the declaration)
    page.click("nav a[href='/protect']")
    page.wait_for_selector("#app[data-page='protect']")
    page.wait_for_selector("#method-form")
    page.select_option("#p-mapping-column", "age_group")  # reloads the levels of age_group
    page.wait_for_selector("input[aria-label='new code of 85+']")
    for level in ws.session.current.frame["age_group"].unique().sort().to_list():
        page.fill(f"input[aria-label='new code of {level}']", ten_year(level))
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(2)
    settle(page)
    assert len(ws.steps) == 1

    # 4. local suppression: an error first, next to its field, in the SdcError's words
    page.select_option("#method", "local_suppression")
    page.wait_for_selector("#method-form[data-method='local_suppression'] #p-k")
    page.fill("#p-k", "0")
    page.click("#apply-method")
    error = page.wait_for_selector("[data-param='k'] .error")
    assert "The 'k' parameter of LocalSuppression must be an integer >= 1; got 0." in (
        error.inner_text()
    )
    page.fill("#p-k", "3")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(3)
    settle(page)
    assert len(ws.steps) == 2 and ws.session.risk.k_violations(3) == 0

    # 5. undo and redo a step
    page.click("#undo")
    page.wait_for_selector("#history tr.undone")
    assert history_rows(page) == 2 and len(ws.steps) == 1
    assert ws.session.risk.k_violations(3) > 0
    page.click("#redo")
    expect(page.locator("#history tr.undone")).to_have_count(0)
    assert history_rows(page) == 3 and len(ws.steps) == 2
    assert ws.session.risk.k_violations(3) == 0

    # the survey weights show the region (they were drawn per stratum): calibrated to the
    # released variables, as the release check would otherwise ask
    page.select_option("#method", "weight_calibration")
    page.wait_for_selector("#method-form[data-method='weight_calibration'] #apply-method")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(4)
    settle(page)
    assert len(ws.steps) == 3
    shoot(page, "protect")

    # 6. an R-U map of local suppression for k = 2, 3
    page.click("nav a[href='/rumap']")
    page.wait_for_selector("#app[data-page='rumap']")
    page.wait_for_selector("#method-form")
    page.select_option("#method", "local_suppression")
    page.wait_for_selector("#p-k")
    page.fill("#grid", "k = 2, 3")
    page.click("#apply-method")
    page.wait_for_selector("#candidates li")
    page.click("#build-ru")
    page.wait_for_selector("#ru-plot")
    shoot(page, "rumap")

    # 7. release check and export (without the report's figures, to keep the test short)
    page.click("nav a[href='/export']")
    page.wait_for_selector("#app[data-page='export']")
    page.wait_for_selector("#settings-form")
    page.uncheck("#plots")
    page.click("#save-settings")
    page.wait_for_selector("#run-check")
    page.click("#run-check")
    page.wait_for_selector("#check-result")
    assert "may be released" in page.inner_text("#check-result")
    page.click("#export")
    page.wait_for_selector("#export-result")
    assert "Exported." in page.inner_text("#export-result")
    shoot(page, "release")
    assert page.errors == []

    files = ws.export.files
    assert set(files) == {"job", "report_internal", "data", "report_external"}
    exported = files["data"]
    response = page.request.get(f"{ui_server.base_url}/files/{exported.name}")
    assert response.ok and response.body() == exported.read_bytes()  # the download link

    # the exported file is 3-anonymous, recounted independently
    released = pl.read_csv(exported, infer_schema=False)
    assert released.height == 50_000
    assert not {*DROPPED, "person_id"} & set(released.columns)
    assert (
        released["age_group"]
        .drop_nulls()
        .is_in(["00-09", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "70-79", "80+"])
        .all()
    )
    sizes = wildcard_class_sizes(released, KEYS)
    assert sizes.min() >= 3

    # sdckit protect on the exported job gives the same bytes
    again = tmp_path / "again"
    result = CliRunner().invoke(app, ["protect", str(files["job"]), "--out-dir", str(again)])
    assert result.exit_code == 0, result.output
    assert (again / exported.name).read_bytes() == exported.read_bytes()
