"""The traps a person met in the browser, on a household survey the project had never seen.

A generated household survey (:func:`sdckit.datasets.generate_household_survey`) written to CSV:
its ``age`` is a key, which a job reads from a CSV file as text.  In a real browser: banding
``age`` by typed breaks works without declaring it a number first, and the exported job lists it
in ``[input] numeric_keys`` (so ``sdckit protect`` reads the file the same way); a word typed
into a number box is refused beside the box, never replaced by the default; the history shows
each step's parameters; focus stays where the person was working; a column whose name holds a
double quote keeps its role.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from playwright.sync_api import expect

from sdckit.datasets import generate_household_survey
from sdckit.jobs import load_job, run_job

QUOTED = 'remark "free text"'
KEYS = ["region", "sex", "age", "marital_status", "education"]


@pytest.fixture
def survey_csv(tmp_path: Path) -> Path:
    """751 persons of 300 households; ``remark`` renamed to a name with double quotes."""
    frame = generate_household_survey(300, seed=7).rename({"remark": QUOTED})
    path = tmp_path / "survey.csv"
    frame.write_csv(path)
    return path


def open_and_assign(page: Any, path: Path, settle: Any) -> str:
    """Open ``path`` by its path and give the survey its roles by hand; return the name of
    the column with double quotes (polars reads such a quoted CSV header with its quotes
    doubled: still a name with double quotes)."""
    page.set_default_timeout(90_000)
    page.fill("#path", str(path))
    page.click("form[action^='/open/path'] button[type=submit]")
    page.wait_for_selector("#roles-form")
    settle(page)
    for column in KEYS:
        page.select_option(f"select[aria-label='role of {column}']", "key")
    page.select_option("select[aria-label='role of hh_id']", "household")
    page.select_option("select[aria-label='role of person_id']", "identifier")
    page.select_option("select[aria-label='role of weight']", "weight")
    page.select_option("select[aria-label='role of income']", "numeric")
    last_row = "#roles-form tbody tr:last-child th"
    quoted = page.evaluate(f"() => document.querySelector('{last_row}').textContent")
    assert '"' in quoted and quoted.startswith("remark")
    page.get_by_label(f"role of {quoted}", exact=True).select_option("sensitive")
    for column in ("date_of_birth", "age_decimal", "district"):
        page.check(f"input[aria-label='drop {column}']")
    page.click("#save-roles")
    page.wait_for_selector("#risk-figures")
    settle(page)
    return quoted


def test_numeric_key_banded_by_typed_breaks(page, ui_server, settle, survey_csv, tmp_path) -> None:
    ws = ui_server.workspace
    quoted = open_and_assign(page, survey_csv, settle)
    # a column name with a double quote keeps its role (a browser sends it as %22)
    assert ws.roles["sensitive"] == [quoted]
    assert ws.session is not None and ws.session.current.frame.schema["age"] == pl.String

    # interval recoding of the key age (read as text) by typed breaks
    page.click("nav a[href='/protect']")
    page.wait_for_selector("#method-form")
    page.select_option("#method", "interval_recoding")
    page.wait_for_selector("#p-breaks")
    page.check("input[name='p-columns'][value='age']")
    page.fill("#p-breaks", "0, 15, 30, 45, 65, inf")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(2)
    settle(page)
    assert ws.numeric_keys == ["age"] and len(ws.steps) == 1
    ages = ws.session.current.frame["age"]
    assert ages.n_unique() == 5, ages.unique().to_list()
    # the history says the parameters, in words
    params = page.inner_text("#history tbody tr:nth-child(2) .params")
    assert params == "columns = age; breaks = 0, 15, 30, 45, 65, ∞"
    # focus came back to the button the person pressed, not to the top of the page
    assert page.evaluate("() => document.activeElement.id") == "apply-method"

    # a word in a number box: refused beside the box, the word kept, nothing applied
    page.select_option("#method", "local_suppression")
    page.wait_for_selector("#p-k")
    page.fill("#p-k", "three")
    page.click("#apply-method")
    error = page.wait_for_selector("[data-param='k'] .error")
    assert "takes a number written in digits" in error.inner_text()
    assert page.input_value("#p-k") == "three"
    assert len(ws.steps) == 1
    assert page.evaluate("() => document.activeElement.closest('[data-param]')?.dataset.param") == (
        "k"
    )
    page.fill("#p-k", "3")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(3)
    settle(page)
    assert page.inner_text("#history tbody tr:nth-child(3) .params") == "k = 3"
    assert page.errors == []

    # the exported job reads age as a number: sdckit's job runner gives the same file
    job = tmp_path / "survey_job.toml"
    job.write_text(ws.job_text(), encoding="utf-8")
    assert 'numeric_keys = ["age"]' in job.read_text(encoding="utf-8")
    result = run_job(load_job(job), write=False)
    assert result.session.current.frame.equals(ws.session.current.frame)


def test_a_failed_step_keeps_its_form_and_says_why_beside_it(
    page, ui_server, settle, survey_csv
) -> None:
    ws = ui_server.workspace
    open_and_assign(page, survey_csv, settle)
    page.click("nav a[href='/protect']")
    page.wait_for_selector("#method-form")
    page.select_option("#method", "interval_recoding")
    page.wait_for_selector("#p-breaks")
    page.check("input[name='p-columns'][value='age']")
    page.fill("#p-breaks", "20, 40, 60")  # ages below 20 and above 60 fall outside
    page.click("#apply-method")
    error = page.wait_for_selector("#form-error, #method-form .error[role=alert]")
    settle(page)
    assert "outside the breaks" in error.inner_text()
    assert page.input_value("#p-breaks") == "20, 40, 60"
    assert page.is_checked("input[name='p-columns'][value='age']")
    assert page.locator("#task-outcome").count() == 0  # not a banner at the top
    assert ws.steps == [] and ws.numeric_keys == []  # age read as text again, as before
    # in view: the message is inside the viewport
    box = error.bounding_box()
    assert box is not None and 0 <= box["y"] < 800


def test_levels_cut_at_breaks_and_the_release_says_what_changed(
    page, ui_server, settle, survey_csv
) -> None:
    ws = ui_server.workspace
    open_and_assign(page, survey_csv, settle)
    page.click("nav a[href='/protect']")
    page.wait_for_selector("#method-form")
    page.select_option("#p-mapping-column", "age")  # reloads the levels of age
    page.wait_for_selector("input[aria-label='new code of 95']")
    labels = page.eval_on_selector_all(
        "input[aria-label^='new code of']", "els => els.map(e => e.getAttribute('aria-label'))"
    )
    ages = [int(label.rsplit(" ", 1)[1]) for label in labels]
    assert ages == sorted(ages) and ages[:3] == [0, 1, 2]  # numbers in numeric order
    page.fill("#p-mapping-breaks", "0, 15, 30, 45, 65, inf")
    page.click("#apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(2)
    settle(page)
    assert sorted(ws.session.current.frame["age"].unique().to_list()) == [
        "0-14", "15-29", "30-44", "45-64", "65+",
    ]  # fmt: skip
    assert ws.numeric_keys == []  # global recoding works on the codes as written
    # the comparison chart of age (96 categories before) stays within a bounded frame
    frame = page.wait_for_selector("#variable-plot-frame")
    box = frame.bounding_box()
    assert box is not None and box["height"] <= 600
    assert page.evaluate("() => document.getElementById('variable-plot').naturalHeight") > 600

    # the weight dropped on the Roles page: the release page says what it changed
    page.click("nav a[href='/data']")
    page.wait_for_selector("#roles-form")
    page.check("input[aria-label='drop weight']")
    page.uncheck("input[aria-label='drop date_of_birth']")  # released: it identifies records
    page.click("#save-roles")
    page.wait_for_selector("#risk-figures")
    settle(page)
    assert "weight" in ws.drop and len(ws.steps) == 1
    page.click("nav a[href='/export']")
    page.wait_for_selector("#run-check")
    page.click("#run-check")
    page.wait_for_selector("#check-result")
    settle(page)
    rows = page.locator("#risk-compare tbody tr")
    assert rows.first.locator("th").inner_text() == "global risk (% of records)"
    steps_risk, released_risk = (rows.first.locator("td").nth(i).inner_text() for i in (0, 1))
    assert steps_risk not in ("", "–") and released_risk not in ("", "–")
    assert "e" not in steps_risk + released_risk
    why = page.inner_text("#risk-why")
    assert "The sampling weight 'weight' is not released" in why
    # one unit for risk, said in the labels
    assert "global risk (% of records)" in page.inner_text("#check-figures")
    # the findings' fixes in the words of the controls, not job-file syntax
    row = page.locator("#findings tbody tr", has_text="date_of_birth").first
    assert "tick “drop” for 'date_of_birth' on the Roles page" in row.locator(".fix").inner_text()
    main = page.inner_text("main")
    assert "[output]" not in main and "[roles]" not in main
    assert "may not be released" in page.inner_text("#check-result")

    # the R-U map: a word as the maximum risk is refused beside the box; the risk in percent
    page.click("nav a[href='/rumap']")
    page.wait_for_selector("#ru-max")
    assert "% of records" in page.inner_text("label[for='ru-max']")
    page.fill("#ru-max", "high")
    page.click("form[action^='/rumap/settings'] button[type=submit]")
    error = page.wait_for_selector("#ru-max-error")
    assert "takes a number" in error.inner_text() and page.input_value("#ru-max") == "high"
    assert ws.ru_settings["max_risk"] is None
    page.fill("#ru-max", "0.5")
    page.click("form[action^='/rumap/settings'] button[type=submit]")
    expect(page.locator("#ru-max-error")).to_have_count(0)
    assert ws.ru_settings["max_risk"] == 0.005  # half a percent of the records, as a share
    assert page.input_value("#ru-max") == "0.5"
    assert page.errors == []


def test_an_older_response_never_replaces_a_newer_page(page, ui_server, settle, survey_csv) -> None:
    """A chooser's page that arrives after the step applied from the form it was replacing
    (a slow response) is dropped: the history keeps the new step and the task is followed to
    its end (an older page over the task's section stopped the polling for good)."""
    ws = ui_server.workspace
    open_and_assign(page, survey_csv, settle)
    page.click("nav a[href='/protect']")
    page.select_option("#method", "local_suppression")
    page.wait_for_selector("#method-form[data-method='local_suppression'] #p-k")
    page.fill("#p-k", "2")
    settle(page)
    rows = page.locator("#history tbody tr").count()
    # the page of the method chosen next is rendered now and delivered 1.5 s late
    page.evaluate(
        """() => { const plain = window.fetch;
        window.fetch = async (url, options) => { const response = await plain(url, options);
          if (String(url).includes('method=pram')) {
            await new Promise((done) => setTimeout(done, 1500)); }
          return response; }; }"""
    )
    page.select_option("#method", "pram")
    page.click("#method-form[data-method='local_suppression'] #apply-method")
    expect(page.locator("#history tbody tr")).to_have_count(rows + 1)
    page.wait_for_timeout(2500)  # the late page has arrived by now
    settle(page)
    expect(page.locator("#history tbody tr")).to_have_count(rows + 1)
    assert len(ws.steps) == 1 and ws.steps[0]["method"] == "local_suppression"

    # undo and redo keep the focus where the person was working: the button pressed, or (it
    # is disabled now: nothing left to undo or redo) the history it acts on, never the top
    def focused() -> str:
        return page.evaluate("() => document.activeElement.id")

    page.click("#undo")
    expect(page.locator("#history tr.undone")).to_have_count(1)
    settle(page)
    assert len(ws.steps) == 0 and focused() == "h-history"
    page.click("#redo")
    expect(page.locator("#history tr.undone")).to_have_count(0)
    settle(page)
    assert len(ws.steps) == 1 and focused() == "h-history"
    box = page.evaluate(
        "() => { const r = document.getElementById('h-history').getBoundingClientRect();"
        " return [r.top, r.bottom, window.innerHeight]; }"
    )
    assert box[1] > 0 and box[0] < box[2]  # the history's heading is in view
    assert page.errors == []
