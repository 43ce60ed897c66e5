"""The browser interface against another local page, in Debian's Chromium.

Every port of 127.0.0.1 is the *same site* for a browser, so a page served on another local
port that submits a form to the interface gets the SameSite=Strict session cookie sent with
it.  The interface must refuse it: its Origin is not the interface's own (port included) and
it cannot carry the session's CSRF token.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl


def _attacker(page_html: str) -> tuple[ThreadingHTTPServer, str]:
    """A page of its own on another port of 127.0.0.1."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page_html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def test_a_form_posted_from_another_port_is_refused(
    page, ui_server, settle, tmp_path: Path
) -> None:
    victim = tmp_path / "planted.csv"
    pl.DataFrame({"a": [1, 2, 3]}).write_csv(victim)
    base = ui_server.url.split("?")[0].rstrip("/")
    assert "127.0.0.1" in base
    html = f"""<!doctype html><html><body>
<form id="f" method="post" action="{base}/open/path">
<input name="path" value="{victim}"></form>
<script>document.getElementById("f").submit();</script></body></html>"""
    server, url = _attacker(html)
    try:
        with page.expect_navigation(url=lambda u: u.startswith(base)):
            page.goto(url)
        page.wait_for_load_state("load")
        text = page.inner_text("body")
    finally:
        server.shutdown()
    assert "Forbidden" in text
    ws = ui_server.workspace
    assert ws.tasks.current is None and not ws.has_data
    # the interface's own page still works with the same cookie (its forms carry the token)
    page.goto(base + "/open")
    page.click("#open-demo")
    page.wait_for_selector("#app[data-page='data']")
    settle(page)
    assert ws.has_data


def test_an_upload_over_the_limit_shows_the_limit_and_the_way_out(browser, tmp_path: Path) -> None:
    from sdckit.ui._server import UIServer

    server = UIServer(tmp_path / "out", max_upload_mb=0.01).start()  # about 10 kB
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url)
        big = tmp_path / "big.csv"
        pl.DataFrame({"a": range(20_000)}).write_csv(big)
        page.set_input_files("#file", str(big))
        page.click("text=Upload and open")
        page.wait_for_selector("#app[data-page='error']")
        text = page.inner_text("#app")
        assert "larger than the upload limit" in text and "--max-upload-mb" in text
        assert "Method Not Allowed" not in page.content()
        assert errors == []
        assert not server.workspace.has_data
        assert not any((server.workspace.out_dir / "input").glob("*.csv"))
    finally:
        context.close()
        server.stop()
