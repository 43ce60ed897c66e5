"""The browser interface's "find the least-loss protection" (the ``auto`` step) over HTTP: its
form from the declaration, the step applied as a task, the page showing the choice and the
lattice's frontier, and the job file it writes back."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from fastapi.testclient import TestClient

from sdckit.lattice import LatticeAnonymization
from sdckit.ui._forms import fields_for, parse_fields
from sdckit.ui._security import csrf_token
from sdckit.ui._server import UIServer

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


def test_the_auto_form_comes_from_the_declaration() -> None:
    fields = {f.name: f for f in fields_for(LatticeAnonymization)}
    assert fields["suppression_limit"].widget == "number"
    assert fields["suppression_limit"].maximum == 1.0
    assert fields["loss"].widget == "text"  # a measure's name
    assert fields["hierarchies"].widget == "toml" and fields["models"].widget == "toml"
    form = {
        "p-hierarchies": '{ age = { kind = "bands", widths = [10, 20] }, zip = "h/zip.csv" }',
        "p-models": "{ k = 5 }",
        "p-loss": "height",
        "p-suppression_limit": "0.04",
        "p-algorithm": "",
    }
    assert parse_fields(list(fields.values()), form) == {
        "hierarchies": {"age": {"kind": "bands", "widths": [10, 20]}, "zip": "h/zip.csv"},
        "models": {"k": 5},
        "loss": "height",
        "suppression_limit": 0.04,
    }


def test_find_the_least_loss_protection_in_the_browser(server: UIServer, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    n = 400
    path = tmp_path / "people.csv"
    pl.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(str),
            "sex": rng.choice(["f", "m"], n),
            "zip": rng.choice(["1011", "1012", "1023", "2031"], n),
        }
    ).write_csv(path)
    c = logged_in(server)
    c.post("/open/path", data={"path": str(path)})
    wait(server)
    roles = {"role:age": "key", "role:sex": "key", "role:zip": "key"}
    assert c.post("/data/roles", data=roles).status_code == 303
    wait(server)
    page = c.get("/protect?method=auto").text
    assert "auto: find the least-loss protection" in page
    assert 'name="p-hierarchies"' in page and 'name="p-suppression_limit"' in page
    # an unknown measure is refused next to the form, in the job file's words
    bad = {"method": "auto", "p-hierarchies": '{ sex = { kind = "flat" } }',
           "p-models": "{ k = 3 }", "p-loss": "heigth"}  # fmt: skip
    r = c.post("/protect/apply", data=bad)
    assert r.status_code == 422 and "unknown loss measure" in r.text and "height" in r.text
    form = {
        "method": "auto",
        "p-hierarchies": '{ age = { kind = "bands", widths = [10, 20] }, sex = { kind = "flat" },'
        ' zip = { kind = "redact" } }',
        "p-models": "{ k = 5 }",
        "p-suppression_limit": "0.03",
    }
    assert c.post("/protect/apply", data=form).status_code == 303
    wait(server)
    ws = server.workspace
    step = ws.session.history[-1]
    search = step.result.details["search"]
    assert search.optimum is not None
    page = c.get("/protect").text
    assert 'id="search-1"' in page and "Chose " in page and "proven optimal" in page
    assert "Pareto frontier" in page and 'class="chosen"' in page
    out = ws.session.current.frame
    kept = out.filter(pl.col("age").is_not_null())
    assert kept.group_by(["age", "sex", "zip"]).len()["len"].min() >= 5
    assert out.height - kept.height <= 0.03 * n
    # the job file of the session names the step as a job file does
    document = tomllib.loads(ws.runner.to_toml())
    assert document["steps"][0]["method"] == "auto"
    assert document["steps"][0]["models"] == {"k": 5}
