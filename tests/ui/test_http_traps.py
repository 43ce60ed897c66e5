"""Traps over plain HTTP (no browser): numbers typed as words on the release settings, the
magnitude's own error on the tables page, multipart names of columns with double quotes."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest
from fastapi.testclient import TestClient

from sdckit.ui._security import csrf_token
from sdckit.ui._server import UIServer
from sdckit.ui._tasks import Task

BASE = "http://127.0.0.1"


@pytest.fixture
def server(tmp_path: Path) -> UIServer:
    return UIServer(tmp_path / "out", seed=5)


def logged_in(server: UIServer) -> TestClient:
    c = TestClient(server.app, base_url=BASE, follow_redirects=False,
                   headers={"X-SDCKIT-CSRF": csrf_token(server.token)})  # fmt: skip
    c.get(f"/?token={server.token}")
    return c


def wait(server: UIServer) -> None:
    task = server.workspace.tasks.current
    assert task is not None
    server.workspace.tasks.wait(task, 120)
    assert task.state == "done", task.error


def open_file(
    server: UIServer, c: TestClient, frame: pl.DataFrame, tmp_path: Path, suffix: str = ".csv"
) -> None:
    path = tmp_path / f"data{suffix}"
    frame.write_csv(path) if suffix == ".csv" else frame.write_parquet(path)
    assert c.post("/open/path", data={"path": str(path)}).status_code == 303
    wait(server)


FRAME = pl.DataFrame({
    "region": ["A", "B"] * 10, "sex": ["m", "f", "f", "m"] * 5,
    'say "hi"': ["x"] * 20, "income": [float(i) if i % 7 else None for i in range(20)],
})  # fmt: skip


def test_a_word_as_the_target_k_is_refused_and_kept(server, tmp_path) -> None:
    c = logged_in(server)
    open_file(server, c, FRAME, tmp_path)
    assert c.post("/data/roles", data={"role:region": "key", "role:sex": "key"}).status_code == 303
    wait(server)
    form = {"title": "t", "seed": "5", "t-k": "three", "format": ".csv"}
    r = c.post("/export/settings", data=form)
    assert r.status_code == 422
    field = r.text[r.text.index('id="t-k"') - 200 :][:900]
    assert 'value="three"' in field and 'aria-invalid="true"' in field
    assert server.workspace.target == {"k": 3}  # unchanged, not emptied


def test_a_multipart_form_keeps_a_column_name_with_a_double_quote(server, tmp_path) -> None:
    c = logged_in(server)
    # Parquet: polars reads a quoted CSV header with its quotes doubled
    open_file(server, c, FRAME, tmp_path, ".parquet")
    assert 'say "hi"' in server.workspace.column_names
    # what Chromium sends for the input name role:say "hi" in a multipart form
    files = {"role:region": (None, "key"), "role:say %22hi%22": (None, "sensitive")}
    assert c.post("/data/roles", files=files).status_code == 303
    wait(server)
    assert server.workspace.roles["sensitive"] == ['say "hi"']


def test_the_magnitude_error_is_beside_its_control(server, tmp_path) -> None:
    """Records without a value: said beside the control that leaves them out, in its words;
    choosing it builds the table."""
    c = logged_in(server)
    open_file(server, c, FRAME, tmp_path)
    r = c.post("/tables/build", data={"dimensions": "region", "value": "income"})
    assert r.status_code == 422
    part = r.text[r.text.index('id="missing_value"') :]
    part = part[: part.index("</div>")]
    assert "The value column &#39;income&#39; has missing" in part
    assert "under “Records without a value”" in part and "missing_value =" not in part
    r = c.post(
        "/tables/build",
        data={"dimensions": "region", "value": "income", "missing_value": "drop"},
    )
    assert r.status_code == 303
    assert server.workspace.tables.table.records_dropped == FRAME["income"].null_count() > 0


def test_a_word_in_the_records_filter_is_said_beside_it(server, tmp_path) -> None:
    c = logged_in(server)
    open_file(server, c, FRAME, tmp_path)
    assert c.post("/data/roles", data={"role:region": "key", "role:sex": "key"}).status_code == 303
    wait(server)
    r = c.get("/risk", params={"mode": "k", "k": "three", "threshold": "high"})
    assert r.status_code == 200
    assert 'id="k-error"' in r.text and "the records shown use k = 3" in r.text
    assert 'id="threshold-error"' in r.text and 'value="three"' in r.text
    r = c.get("/risk", params={"mode": "k", "k": "4", "threshold": "0.1"})
    assert 'id="k-error"' not in r.text and 'id="threshold-error"' not in r.text


class _EndsWhenLookedAt(Task):
    """A task that ends the moment a route asks whether it runs: the race of a fast task
    (the route chose the waiting page, the task ended before the page was rendered)."""

    @property
    def running(self) -> bool:
        if self.state == "running":
            self.state, self.finished = "done", time.monotonic()
            return True
        return False


def test_a_task_that_ends_while_its_waiting_page_renders_is_still_polled(server) -> None:
    """The waiting page of a task that ended during the request keeps the task's section,
    so that the browser polls it once and loads the result: without it, "Assessing the
    risk..." stayed for good (seen in CI under load)."""
    c = logged_in(server)
    ws = server.workspace
    task = _EndsWhenLookedAt(label="Assessing the disclosure risk", next_url="/risk")
    ws.tasks.current = task
    r = c.get("/risk")
    assert r.status_code == 200 and "Assessing the risk" in r.text
    assert f'data-task-url="/tasks/{task.id}"' in r.text
    # a later request (after the end) shows no task any more, and the poller goes on
    r2 = c.get("/data")
    assert "data-task-url" not in r2.text
