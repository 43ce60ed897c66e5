"""The web application: FastAPI, pages rendered on the server, a little JavaScript of our own.

:func:`create_app` builds the application around one :class:`~sdckit.ui._workspace.Workspace`
(one user per process).  Pages are Jinja2 templates; every form and link works without
JavaScript (a POST answers with a redirect to the page that shows the result), and
``static/app.js`` only makes it smoother: it sends forms and follows links with ``fetch`` and
swaps the page in place, polls the progress of the running task, and submits choosers when
they change.  Every asset is served by the application itself (no CDN).

Nothing about the data is logged: uvicorn's access log is off (URLs can carry category codes
in a filter), and the application logs only what it does ("task Applying local suppression:
done in 1.2 s").
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from fastapi.staticfiles import StaticFiles

from sdckit import __version__
from sdckit.ui._render import redirect, render
from sdckit.ui._security import COOKIE, SecurityMiddleware, csrf_token
from sdckit.ui._tasks import Busy
from sdckit.ui._workspace import Workspace

__all__ = ["create_app"]

log = logging.getLogger("sdckit.ui")
HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------ plots
class PlotCache:
    """PNG images of figures, by name and state version (matplotlib under one lock)."""

    def __init__(self, size: int = 32) -> None:
        self._items: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, key: tuple[str, int], draw: Callable[[], Any]) -> bytes:
        """The PNG of ``draw()`` (a Figure), drawn once per key."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            fig = draw()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=72)
            png = buffer.getvalue()
            self._items[key] = png
            while len(self._items) > self._size:
                self._items.popitem(last=False)
            return png


# ------------------------------------------------------------------ application
def create_app(workspace: Workspace, *, token: str, max_upload_bytes: int = 2 * 2**30) -> FastAPI:
    """The FastAPI application of the UI around ``workspace``.

    Parameters
    ----------
    workspace : Workspace
    token : str
        The access token every request must carry (see :mod:`sdckit.ui._security`).
    max_upload_bytes : int, default 2 GiB
        Largest request body (uploaded file) accepted.
    """
    import sdckit.ui._pages_md as _pages_md
    import sdckit.ui._pages_release as _pages_release
    import sdckit.ui._pages_tables as _pages_tables

    app = FastAPI(
        title="sdckit", docs_url=None, redoc_url=None, openapi_url=None, version=__version__
    )
    app.state.ws = workspace
    app.state.plots = PlotCache()
    app.state.token = token
    app.state.csrf = csrf_token(token)

    @app.middleware("http")
    async def token_cookie(request: Request, call_next: Any) -> Response:
        request.state.arrived = time.monotonic()  # (a task that ends after it: see render)
        state = request.scope.get("state", {})
        if state.get("token_in_query") and request.method == "GET":
            query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            url = request.url.path + (f"?{urlencode(query)}" if query else "")
            response: Response = RedirectResponse(url, status_code=303)
        else:
            response = await call_next(request)
        if state.get("token_in_query"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "frame-ancestors 'none'"
        )
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy) -> Response:
        return render(request, "busy.html.j2", status=409, message=str(exc))

    app.add_middleware(SecurityMiddleware, token=token, max_upload_bytes=max_upload_bytes)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/", include_in_schema=False)
    def home(request: Request) -> Response:
        ws: Workspace = request.app.state.ws
        return redirect("/data" if ws.has_data else "/open")

    @app.get("/tasks/{task_id}")
    def task_state(request: Request, task_id: str) -> Response:
        task = request.app.state.ws.tasks.get(task_id)
        if task is None:
            return JSONResponse({"error": "no such task"}, status_code=404)
        return JSONResponse(task.as_json())

    @app.post("/tasks/{task_id}/cancel")
    def task_cancel(request: Request, task_id: str) -> Response:
        task = request.app.state.ws.tasks.get(task_id)
        if task is None:
            return JSONResponse({"error": "no such task"}, status_code=404)
        task.cancel()
        request.app.state.ws.tasks.wait(task, timeout=10.0)
        return redirect(task.next_url)

    @app.get("/files/{name}")
    def download(request: Request, name: str) -> Response:
        ws: Workspace = request.app.state.ws
        known = {p.name: p for p in [*ws.export.files.values(), *ws.tables.export.files.values()]}
        path = known.get(name)
        if path is None or not path.is_file():
            return PlainTextResponse("No such export.", status_code=404)
        return FileResponse(path, filename=path.name)

    app.include_router(_pages_md.router)
    app.include_router(_pages_release.router)
    app.include_router(_pages_tables.router)
    return app
