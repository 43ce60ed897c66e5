"""The UI over plain HTTP: who may talk to it, the job file it writes, forms, tasks, cancel."""

from __future__ import annotations

import logging
import threading
import time
import tomllib
from pathlib import Path

import polars as pl
import pytest
from fastapi.testclient import TestClient

from sdckit.jobs.toml_writer import dumps, same_document
from sdckit.masking import GlobalRecoding, LocalSuppression, Pram
from sdckit.ui._app import create_app
from sdckit.ui._forms import fields_for, parse_fields
from sdckit.ui._security import COOKIE, csrf_token
from sdckit.ui._server import UIServer
from sdckit.ui._tasks import Cancelled, TaskManager, run_in_process
from sdckit.ui._workspace import Workspace

BASE = "http://127.0.0.1"


@pytest.fixture
def server(tmp_path: Path) -> UIServer:
    return UIServer(tmp_path / "out", seed=5)


def client(server: UIServer, **kwargs: object) -> TestClient:
    return TestClient(server.app, base_url=BASE, follow_redirects=False, **kwargs)


def logged_in(server: UIServer) -> TestClient:
    """A client with the session cookie that sends the session's CSRF token, as the pages'
    forms do (``test_changes_need_the_pages_csrf_token`` covers a client without it)."""
    c = client(server, headers={"X-SDCKIT-CSRF": csrf_token(server.token)})
    c.get(f"/?token={server.token}")
    return c


def wait(server: UIServer) -> None:
    task = server.workspace.tasks.current
    assert task is not None
    server.workspace.tasks.wait(task, 120)
    assert task.state == "done", task.error


# ------------------------------------------------------------------ security
@pytest.mark.parametrize(
    "path", ["/", "/open", "/risk", "/static/app.js", "/api/risk", "/job.toml"]
)
def test_requests_without_the_token_are_refused(server: UIServer, path: str) -> None:
    c = client(server)
    assert c.get(path).status_code == 403
    assert c.get(path, params={"token": "wrong"}).status_code == 403
    assert c.get(path, cookies={COOKIE: "wrong"}).status_code == 403
    assert c.post("/open/demo").status_code == 403


def test_the_token_in_the_url_becomes_a_cookie(server: UIServer) -> None:
    c = client(server)
    first = c.get(f"/open?token={server.token}&x=1")
    assert first.status_code == 303 and first.headers["location"] == "/open?x=1"
    assert "httponly" in first.headers["set-cookie"].lower()
    assert "samesite=strict" in first.headers["set-cookie"].lower()
    assert c.get("/open").status_code == 200
    header = client(server).get("/open", headers={"X-SDCKIT-Token": server.token})
    assert header.status_code == 200
    page = c.get("/open")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "192.168.1.2:8765",
                                  "localhost.evil.example:80"])  # fmt: skip
def test_other_hosts_are_refused_even_with_the_token(server: UIServer, host: str) -> None:
    c = client(server)
    r = c.get(f"/open?token={server.token}", headers={"Host": host})
    assert r.status_code == 403
    for ok in ("localhost:8765", "127.0.0.1", "[::1]:8765"):
        assert c.get(f"/open?token={server.token}", headers={"Host": ok}).status_code == 303


def test_a_change_from_another_site_is_refused(server: UIServer) -> None:
    c = logged_in(server)
    r = c.post("/open/demo", headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    assert server.workspace.tasks.current is None


def test_uploads_over_the_limit_are_refused(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    app = create_app(ws, token="t", max_upload_bytes=1000)
    c = TestClient(app, base_url=BASE, follow_redirects=False)
    files = {"file": ("big.csv", b"a,b\n" + b"1,2\n" * 1000, "text/csv")}
    r = c.post("/open/upload?token=t", files=files)
    assert r.status_code == 413
    assert "upload limit" in r.text
    assert not (tmp_path / "input").exists()


def test_upload_opens_the_file(server: UIServer) -> None:
    c = logged_in(server)
    data = b"region,sex,age\nA,1,30\nA,2,41\nB,1,NA\n"
    r = c.post("/open/upload", files={"file": ("../../sm all.csv", data, "text/csv")})
    assert r.status_code == 303
    wait(server)
    ws = server.workspace
    assert ws.source.path == (ws.out_dir / "input" / "sm_all.csv")
    assert ws.raw.shape == (3, 3) and ws.raw["age"].null_count() == 1


def test_no_data_value_is_logged(server: UIServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    c = logged_in(server)
    c.post("/open/demo")
    wait(server)
    c.post("/data/demo-roles")
    wait(server)
    assert (
        c.get("/risk", params={"col": "region", "val": "Islands", "mode": "all"}).status_code == 200
    )
    r = c.post("/protect/apply", data={"method": "local_suppression", "p-k": "3"})
    assert r.status_code == 303
    wait(server)
    ours = [r for r in caplog.records if r.name.startswith(("sdckit", "uvicorn"))]
    text = "\n".join(r.getMessage() for r in ours)
    assert "task" in text  # what the UI did is logged
    for value in ("Islands", "Capital", "female", "never married", "Poland", server.token):
        assert value not in text


def test_server_in_a_thread_answers_over_http(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    caplog.set_level(logging.DEBUG)
    with UIServer(tmp_path / "out") as s:
        secret = {"X-SDCKIT-Token": s.token}
        httpx.get(f"{s.base_url}/risk", params={"col": "region", "val": "Islands"}, headers=secret)
        assert httpx.get(f"{s.base_url}/open").status_code == 403
        assert (
            httpx.get(f"{s.base_url}/open", headers={"X-SDCKIT-Token": s.token}).status_code == 200
        )
        r = httpx.get(s.base_url.replace("127.0.0.1", "localhost") + "/open",
                      headers={"X-SDCKIT-Token": s.token, "Host": "attacker.example"})  # fmt: skip
        assert r.status_code == 403
    served = [r.getMessage() for r in caplog.records if r.name.startswith("uvicorn")]
    assert not any("Islands" in m or "/risk" in m for m in served)  # no access log


# ------------------------------------------------------------------ session, forms, job file
def test_errors_are_shown_next_to_their_field_in_the_sdcerror_words(server: UIServer) -> None:
    c = logged_in(server)
    c.post("/open/demo")
    wait(server)
    c.post("/data/demo-roles")
    wait(server)
    r = c.post("/protect/apply", data={"method": "pram", "p-min_diagonal": "1.5"})
    assert r.status_code == 422
    field = r.text[r.text.index('data-param="min_diagonal"') :]
    field = field[: field.index('<div class="field')] if '<div class="field' in field else field
    assert ("step 1 (pram): The &#39;min_diagonal&#39; parameter of Pram must be a finite number "
            "&gt;= 0 and &lt;= 1; got 1.5.") in field  # fmt: skip
    r = c.post("/data/roles", data={"role:region": "weight", "role:sex": "weight"})
    assert r.status_code == 422 and "Only one column can be the sampling weight" in r.text


def test_forms_come_from_the_declarations() -> None:
    fields = {f.name: f for f in fields_for(LocalSuppression)}
    assert fields["k"].widget == "number" and fields["k"].minimum == 1 and fields["k"].step == "1"
    assert fields["importance"].widget == "per_column" and fields["importance"].role == "keys"
    assert fields["missing"].widget == "select"
    assert fields["missing"].choices == ["wildcard", "category"]
    assert fields["block_inference"].widget == "checkbox"
    assert {f.name: f.widget for f in fields_for(Pram)}["variables"] == "columns"
    assert {f.name: f.widget for f in fields_for(GlobalRecoding)}["mapping"] == "levels"
    form = {"p-k": "5", "p-importance.sex": "2", "p-importance.region": "", "p-missing": "",
            "p-block_inference.present": "1"}  # fmt: skip
    params = parse_fields(list(fields.values()), form)
    assert params == {"k": 5, "importance": {"sex": 2}, "block_inference": False}


def test_the_toml_writer_reads_back_exactly() -> None:
    document = {
        "title": 'A "quoted" title\twith a tab',
        "seed": 3,
        "input": {"file": "C:\\data\\x.csv", "na_values": ["NA", ""]},
        "roles": {"keys": ["a b", "c"], "linked": {"d": "a b"}},
        "steps": [
            {"method": "global_recoding", "mapping": {"a b": {"1": "x", "é": "ü"}}},
            {
                "method": "microaggregation",
                "k": 3,
                "params": {"method": "univariate"},
                "x": 1e-300,
                "y": float("inf"),
                "z": -0.0,
                "w": True,
            },
        ],
    }
    text = dumps(document)
    assert same_document(document, text)
    assert tomllib.loads(text)["steps"][1]["params"] == {"method": "univariate"}


def test_the_job_file_reproduces_the_session(server: UIServer, tmp_path: Path) -> None:
    from sdckit.jobs import load_job, run_job

    c = logged_in(server)
    path = tmp_path / "codes.csv"
    frame = pl.DataFrame({
        "region": ["007", "7", "007", "7", "08", "08"] * 30,
        "sex": ["1", "2"] * 90, "age": [str(20 + i % 7) for i in range(180)],
        "income": [float(i) for i in range(180)],
    })  # fmt: skip
    frame.write_csv(path)
    c.post("/open/path", data={"path": str(path)})
    wait(server)
    form = {"role:region": "key", "role:sex": "key", "role:age": "key", "role:income": "numeric"}
    assert c.post("/data/roles", data=form).status_code == 303
    wait(server)
    ws = server.workspace
    assert ws.session.original.frame["region"].dtype == pl.String  # codes kept: 007 and 7
    import sdckit.jobs.sections as _jobs

    as_a_job_reads_it = _jobs.read_input(ws.source.input_spec(), ws.roles)
    assert ws.session.original.frame.equals(as_a_job_reads_it)
    c.post("/protect/apply", data={"method": "pram", "p-variables": "sex"})
    wait(server)
    c.post("/protect/apply", data={"method": "local_suppression", "p-k": "3"})
    wait(server)
    c.post("/export/settings", data={"title": "T", "seed": "5", "t-k": "3", "format": ".parquet",
                                     "household_id": "new", "order": "shuffled"})  # fmt: skip
    r = c.post("/export/run", data={"verify": "1"})
    assert r.status_code == 303
    wait(server)
    record = ws.export
    # the export no longer runs the job again to compare (the runner's round-trip property
    # test, tests/test_runner.py, holds for every job); this test runs it once, below
    assert record.refusal is None
    spec = tomllib.loads(record.files["job"].read_text(encoding="utf-8"))
    assert spec["steps"][0]["seed"] == 5 and spec["input"]["file"] == str(path.resolve())
    job = load_job(record.files["job"], output_dir=tmp_path / "again")
    run_job(job)
    assert (tmp_path / "again" / record.files["data"].name).read_bytes() == (
        record.files["data"].read_bytes()
    )


def test_undo_redo_and_back(server: UIServer) -> None:
    c = logged_in(server)
    c.post("/open/demo")
    wait(server)
    c.post("/data/demo-roles")
    wait(server)
    ws = server.workspace
    for k in ("2", "3"):
        c.post("/protect/apply", data={"method": "local_suppression", "p-k": k})
        wait(server)
    risk_after_2 = ws.session.history[1].risk
    c.post("/protect/back", data={"step": "0"})
    assert ws.steps == [] and len(ws.redo_stack) == 2
    c.post("/protect/redo")
    c.post("/protect/redo")
    assert len(ws.steps) == 2 and ws.session.risk is risk_after_2  # not computed again
    r = c.post("/protect/redo")
    assert r.status_code == 303 and "There is no undone step to redo." in c.get("/protect").text


# ------------------------------------------------------------------ tasks and cancel
def test_cancel_stops_a_thread_task_at_its_next_checkpoint() -> None:
    manager = TaskManager()
    steps: list[int] = []

    def work(task: object) -> None:
        for i in range(1000):
            task.progress("counting", i, 1000)  # type: ignore[attr-defined]
            steps.append(i)
            time.sleep(0.01)

    task = manager.start("count", work, "/")
    time.sleep(0.1)
    task.cancel()
    manager.wait(task, 5)
    assert task.state == "cancelled" and len(steps) < 100
    done = len(steps)
    time.sleep(0.1)
    assert len(steps) == done  # it really stopped


def test_cancel_kills_a_child_process_at_once(server: UIServer) -> None:
    import multiprocessing

    ws = server.workspace
    seen: dict[str, object] = {}

    def work(task: object) -> None:
        run_in_process("sdckit.ui._work:pause", (60.0,), task.progress,  # type: ignore[attr-defined]
                       task.cancel_event)  # type: ignore[attr-defined]  # fmt: skip

    task = ws.tasks.start("A long wait", work, "/open")
    deadline = time.monotonic() + 30
    while task.stage != "pausing" and time.monotonic() < deadline:
        time.sleep(0.02)
    children = multiprocessing.active_children()
    seen["pids"] = [p.pid for p in children]
    assert task.running and children
    c = logged_in(server)
    start = time.monotonic()
    r = c.post(f"/tasks/{task.id}/cancel")
    assert r.status_code == 303
    assert task.state == "cancelled" and time.monotonic() - start < 5
    import psutil

    for pid in seen["pids"]:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # type: ignore[arg-type]
            except psutil.NoSuchProcess:
                alive = False
            if not alive:
                break
            time.sleep(0.05)
        assert not alive
    assert c.get(f"/tasks/{task.id}").json()["state"] == "cancelled"


def test_one_task_at_a_time(server: UIServer) -> None:
    ws = server.workspace
    gate = threading.Event()
    ws.tasks.start("blocking", lambda t: gate.wait(5), "/open")
    c = logged_in(server)
    r = c.post("/open/demo")
    assert r.status_code == 409 and "Wait for &#39;blocking&#39; to finish" in r.text
    gate.set()


def test_cancelled_exception_is_the_progress_callbacks() -> None:
    manager = TaskManager()
    task = manager.start("x", lambda t: time.sleep(0.05), "/")
    task.cancel()
    with pytest.raises(Cancelled):
        task.progress("a", 0, 1)
    manager.wait(task)


# ------------------------------------------------------------------ changes and uploads
def test_changes_need_the_pages_csrf_token(server: UIServer) -> None:
    c = client(server)
    c.get(f"/?token={server.token}")  # the cookie only
    assert c.post("/open/demo").status_code == 403
    assert c.post("/open/demo?_csrf=wrong").status_code == 403
    assert server.workspace.tasks.current is None
    # every POST form of a page carries the session's token, and it is accepted
    page = c.get("/open").text
    csrf = csrf_token(server.token)
    assert page.count('method="post"') == page.count(f"_csrf={csrf}") >= 3
    assert server.token not in page and csrf != server.token
    assert c.post(f"/open/demo?_csrf={csrf}").status_code == 303
    wait(server)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9999", "http://localhost", "null",
                                    "https://127.0.0.1", "http://evil.example"])  # fmt: skip
def test_a_change_from_another_origin_is_refused(server: UIServer, origin: str) -> None:
    c = logged_in(server)
    assert c.post("/open/demo", headers={"Origin": origin}).status_code == 403
    referer = origin if origin != "null" else "about:blank"
    assert c.post("/open/demo", headers={"Referer": referer + "/page"}).status_code == 403
    assert server.workspace.tasks.current is None
    assert c.post("/open/demo", headers={"Origin": BASE}).status_code == 303
    wait(server)


def test_a_chunked_upload_over_the_limit_gets_413_and_a_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = Workspace(tmp_path)
    app = create_app(ws, token="t", max_upload_bytes=1000)
    c = TestClient(app, base_url=BASE, follow_redirects=False)
    boundary = "xyz"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n').encode()  # fmt: skip

    def body():  # type: ignore[no-untyped-def]  # no length: sent in chunks
        yield head
        for _ in range(100):
            yield b"1,2\n" * 100
        yield f"\r\n--{boundary}--\r\n".encode()

    with caplog.at_level("INFO", logger="sdckit.ui"):
        content_type = f"multipart/form-data; boundary={boundary}"
        r = c.post("/open/upload?token=t", content=body(), headers={"Content-Type": content_type})
    assert r.status_code == 413
    assert r.headers["content-type"].startswith("text/html")
    assert "1000" not in r.text or "MB" in r.text
    assert "--max-upload-mb" in r.text and 'id="app"' in r.text
    assert "Traceback" not in caplog.text
    assert not any((tmp_path / "input").glob("*.csv")) if (tmp_path / "input").exists() else True


def test_an_error_inside_the_interface_is_a_page_not_a_traceback(
    server: UIServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = logged_in(server)

    import sdckit.ui._pages_md as pages

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(pages, "_start_open", broken)
    with caplog.at_level("INFO", logger="sdckit.ui"):
        r = c.post("/open/demo")
    assert r.status_code == 500 and "secret detail" not in r.text
    assert "Reload the page" in r.text
    assert "Traceback" not in caplog.text and "RuntimeError" in caplog.text


def test_an_upload_with_an_earlier_name_keeps_the_earlier_file(server: UIServer) -> None:
    c = logged_in(server)
    first = b"a,b\n1,2\n3,4\n"
    second = b"a,b\n5,6\n7,8\n"
    for content in (first, second):
        r = c.post("/open/upload", files={"file": ("data.csv", content, "text/csv")})
        assert r.status_code == 303
        wait(server)
    folder = server.workspace.out_dir / "input"
    assert (folder / "data.csv").read_bytes() == first
    assert (folder / "data-2.csv").read_bytes() == second
