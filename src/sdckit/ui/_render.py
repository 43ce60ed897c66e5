"""What every page needs: the templates, number formatting, rendering, redirects, tasks.

The pages of :mod:`sdckit.ui._pages_md` and :mod:`sdckit.ui._pages_tables` and the application
of :mod:`sdckit.ui._app` share these; the templates are under ``templates/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from sdckit import __version__
from sdckit.errors import SdcError
from sdckit.ui._release_view import compare_risk
from sdckit.ui._tasks import Task
from sdckit.ui._words import (
    candidate_text,
    controls_words,
    finding_fix,
    fmt_number,
    params_text,
    risk_label,
)
from sdckit.ui._workspace import PRIMARY_ROLES, Workspace

__all__ = [
    "ENV",
    "fmt_number",
    "form_dict",
    "redirect",
    "render",
    "sdc_message",
    "start_task",
    "with_csrf",
]

NAV = (
    ("open", "/open", "1. Open"),
    ("data", "/data", "2. Roles"),
    ("risk", "/risk", "3. Risk"),
    ("protect", "/protect", "4. Protect"),
    ("rumap", "/rumap", "5. R-U map"),
    ("export", "/export", "6. Release"),
    ("tables", "/tables", "Tables"),
)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sdckit.ui", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt_number
    env.filters["params"] = params_text
    env.filters["words"] = controls_words
    env.filters["fix"] = finding_fix
    env.filters["candidate"] = candidate_text
    env.filters["risk_label"] = risk_label
    env.globals["urlencode"] = urlencode
    env.globals["version"] = __version__
    env.globals["role_labels"] = PRIMARY_ROLES
    env.globals["compare_risk"] = compare_risk
    return env


ENV = _environment()


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page: the template with the workspace, the running task and the navigation."""
    ws: Workspace = request.app.state.ws
    task = ws.tasks.current
    # a task that ended while this request was handled is shown as running: the route may
    # have chosen a waiting page ("Assessing the risk...") before it ended, and without the
    # task's section nothing would ever poll and load the page of its result; the poller
    # sees it ended at once and loads that page (its outcome is said there).  (``finished``
    # is set last, after the state: a task without it has not quite ended.)
    arrived = getattr(request.state, "arrived", float("inf"))
    running = task is not None and (task.finished is None or task.finished >= arrived)
    finished_note = None
    if task is not None and not running and not getattr(task, "shown", False):
        if task.state in ("failed", "cancelled"):
            finished_note = task
        task.shown = True  # type: ignore[attr-defined]
    notice, ws.notice = ws.notice, None
    html = ENV.get_template(template).render(
        request=request,
        notice=notice,
        ws=ws,
        task=task if running else None,
        finished=finished_note,
        nav=NAV,
        page=context.pop("page", ""),
        **context,
    )
    return HTMLResponse(with_csrf(html, request.app.state.csrf), status_code=status)


_POST_FORM = re.compile(r"<form\b[^>]*>", re.IGNORECASE)
_ACTION = re.compile(r'\baction="([^"]*)"')


def with_csrf(html: str, csrf: str) -> str:
    """Every POST form of ``html`` with the page's CSRF token in its action
    (``?_csrf=...``), which :class:`~sdckit.ui._security.SecurityMiddleware` asks of every
    change made with the session cookie (a page of another site cannot read it)."""

    def tag(match: re.Match[str]) -> str:
        text = match.group(0)
        if not re.search(r'method="post"', text, re.IGNORECASE):
            return text

        def action(m: re.Match[str]) -> str:
            url = m.group(1)
            sep = "&amp;" if "?" in url else "?"
            return f'action="{url}{sep}_csrf={csrf}"'

        return _ACTION.sub(action, text, count=1)

    return _POST_FORM.sub(tag, html)


def redirect(url: str) -> RedirectResponse:
    """The answer to a POST: see the result on ``url``."""
    return RedirectResponse(url, status_code=303)


async def form_dict(request: Request) -> dict[str, Any]:
    """The submitted form: one string per name, a list where a name repeats."""
    form = await request.form()
    out: dict[str, Any] = {}
    for name in form:
        values = form.getlist(name)
        out[name] = values if len(values) > 1 else values[0]
    return out


def start_task(
    request: Request,
    label: str,
    fn: Callable[[Task], Any],
    next_url: str,
) -> Task:
    """Start ``fn(task)`` as the background task (raises Busy if one runs)."""
    ws: Workspace = request.app.state.ws
    return ws.tasks.start(label, fn, next_url)


def sdc_message(exc: SdcError) -> str:
    """An SdcError's own words, on one line."""
    return " ".join(str(exc).split())
