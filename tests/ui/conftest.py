"""Fixtures of the UI tests: the server in a background thread, Debian's Chromium by Playwright.

The browser is the system's Chromium (``/usr/bin/chromium``, installed by ``.ci/run``), driven by
the ``playwright`` package with ``executable_path``: Playwright's own browser download is never
used (the machine has no network for it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the UI tests need the 'ui' extra (pip install -e '.[dev]')")

from sdckit.ui._server import UIServer

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "ui"
CHROMIUM = os.environ.get("SDCKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SEED = 20260101


@pytest.fixture
def ui_server(tmp_path: Path) -> Iterator[UIServer]:
    """A UI server on a free port of 127.0.0.1, exports into a temporary folder."""
    server = UIServer(tmp_path / "out", seed=SEED).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Headless Debian Chromium (never a Playwright browser download)."""
    path = shutil.which(CHROMIUM) or (CHROMIUM if Path(CHROMIUM).is_file() else None)
    if path is None:
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM} (apt-get install chromium); the browser "
            "tests need it."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


#: How long a page or an assertion waits (milliseconds): long enough for a first compilation.
TIMEOUT_MS = 240_000


@pytest.fixture
def page(browser: object, ui_server: UIServer) -> Iterator[object]:
    """A fresh 1280x800 page logged in with the server's token (console errors collected)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    # on a fresh machine the first run of a method compiles its numba kernels (no cache yet),
    # which can take a minute on a loaded 2-core machine: the waits allow for it
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    pg = context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))  # type: ignore[attr-defined]
    pg.goto(ui_server.url)
    try:
        yield pg
    finally:
        context.close()


def _settle(page: object) -> None:
    """Wait until no task runs and every image of the page has loaded."""
    import time

    page.wait_for_selector("#task", state="detached")  # type: ignore[attr-defined]
    page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    end = time.monotonic() + 30
    script = "() => Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    while not page.evaluate(script) and time.monotonic() < end:  # type: ignore[attr-defined]
        time.sleep(0.05)


def _screenshot(page: object, name: str, at: str | None = None) -> None:
    """Write ``docs/ui/<name>.png`` (the viewport, 1280x800), from the top of the page or of
    the element ``at``, when ``SDCKIT_SCREENSHOTS`` is set (``make screenshots``); a plain
    test run waits for the page the same way and writes no tracked file."""
    _settle(page)
    if not os.environ.get("SDCKIT_SCREENSHOTS"):
        return
    page.evaluate(  # type: ignore[attr-defined]
        "(at) => { const el = at && document.querySelector(at);"
        " window.scrollTo(0, el ? el.getBoundingClientRect().top + window.scrollY - 8 : 0); }",
        at,
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))  # type: ignore[attr-defined]


@pytest.fixture
def settle() -> object:
    """``settle(page)``: wait until no task runs and the images have loaded."""
    return _settle


@pytest.fixture
def shoot() -> object:
    """``shoot(page, name)``: write the screenshot ``docs/ui/<name>.png``."""
    return _screenshot
