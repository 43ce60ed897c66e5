"""In a real browser: "find the least-loss protection" on a small file, the page showing the
transformation chosen, what else was close and the lattice's frontier; the protected file
recounted outside the UI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from playwright.sync_api import expect

KEYS = ["age", "sex", "zip"]


def test_find_the_least_loss_protection(page, ui_server, settle, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 500
    path = tmp_path / "people.csv"
    pl.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["f", "m"], n),
            "zip": rng.choice(["1011", "1012", "1023", "2031"], n),
        }
    ).write_csv(path)
    page.fill("#path", str(path))
    page.click("form[action^='/open/path'] button[type=submit]")
    page.wait_for_selector("#roles-form")
    settle(page)
    for column in KEYS:
        page.select_option(f"select[aria-label='role of {column}']", "key")
    page.click("#save-roles")
    page.wait_for_selector("#risk-figures")
    settle(page)
    page.click("nav a[href='/protect']")
    page.wait_for_selector("#method-form")
    page.select_option("#method", "auto")
    page.wait_for_selector("#p-hierarchies")
    expect(page.locator("#method option[value='auto']")).to_have_text(
        "auto: find the least-loss protection"
    )
    page.fill(
        "#p-hierarchies",
        '{ age = { kind = "bands", widths = [10, 20] }, sex = { kind = "flat" }, '
        'zip = { kind = "redact" } }',
    )
    page.fill("#p-models", "{ k = 5 }")
    page.fill("#p-suppression_limit", "0.03")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(2)
    settle(page)
    expect(page.locator("#search-1 p.chosen")).to_contain_text("proven optimal")
    assert page.locator("#search-1 table.frontier tbody tr").count() >= 2
    expect(page.locator("#search-1 table.frontier tr.chosen")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
    out = ui_server.workspace.session.current.frame
    kept = out.filter(pl.col("sex").is_not_null())
    assert kept.group_by(KEYS).len()["len"].min() >= 5
    assert out.height - kept.height <= 0.03 * n
