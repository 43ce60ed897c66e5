"""Who may talk to the UI: the token, the Host header, the origin of a change, the upload size.

The server binds to the loopback address only.  Every request must carry the random token the
server printed when it started (``?token=...`` in the first URL, as Jupyter does; the page then
keeps it in an HttpOnly, SameSite=Strict cookie, and the JSON API may send it as the
``X-SDCKIT-Token`` header), else it gets 403.  A request whose ``Host`` header is not
``localhost``, ``127.0.0.1`` or ``[::1]`` gets 403 too (DNS rebinding: a page of another site
whose name resolves to 127.0.0.1 cannot read the UI).

A state-changing request (anything but GET, HEAD, OPTIONS) gets 403 unless

* its ``Origin`` (or, without one, its ``Referer``) is the UI's own origin, port included:
  every port of 127.0.0.1 is the *same site* for the browser, so a page served on another
  port would otherwise send the SameSite=Strict cookie with a form it submits; ``null`` (a
  sandboxed frame, a file) is refused;
* when it is authenticated by the cookie, it carries the session's CSRF token (``_csrf`` in the
  URL, which every POST form of a page has: :func:`sdckit.ui._render.with_csrf`; or the
  ``X-SDCKIT-CSRF`` header), which a page of another origin cannot read.

A request body larger than the upload limit gets 413 (before it is read when its length is
declared; as soon as it goes over when it is sent in chunks), with a page that says the limit
and the way out.  No request answers with a traceback: an error inside the application gets a
plain 500 page and one line in the log.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["COOKIE", "CSRF_HEADER", "HEADER", "SecurityMiddleware", "csrf_token", "new_token"]

COOKIE = "sdckit_ui_token"
HEADER = "x-sdckit-token"
CSRF_HEADER = "x-sdckit-csrf"
CSRF_FIELD = "_csrf"
log = logging.getLogger("sdckit.ui")
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A new random access token (``secrets.token_urlsafe``)."""
    return secrets.token_urlsafe(32)


def csrf_token(token: str) -> str:
    """The CSRF token of a session: derived from its access token (not the token itself)."""
    return hmac.new(token.encode(), b"sdckit-ui-csrf", hashlib.sha256).hexdigest()[:32]


_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sdckit</title>
<link rel="stylesheet" href="/static/app.css"></head><body><div id="app" data-page="error">
<main><h1>{title}</h1><p class="error" role="alert">{text}</p>
<p><a href="/open">Back to the start page</a></p></main></div></body></html>"""


def _host_of(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v
    return None


class SecurityMiddleware:
    """ASGI middleware enforcing the rules of the module docstring.

    Parameters
    ----------
    app : ASGI application
    token : str
    max_upload_bytes : int
        Largest request body accepted.
    """

    def __init__(self, app: ASGIApp, *, token: str, max_upload_bytes: int) -> None:
        self.app = app
        self.token = token
        self.csrf = csrf_token(token)
        self.max_upload_bytes = int(max_upload_bytes)

    async def _refuse(self, send: Send, status: int, text: str, *, page: bool = False) -> None:
        """Answer ``status`` with ``text``: plain text, or (``page``) an HTML page the
        browser shows, with JavaScript in place of the form it sent."""
        if page:
            title = "The file is too large" if status == 413 else "Something went wrong"
            body = _PAGE.format(title=title, text=html.escape(text)).encode("utf-8")
            kind = b"text/html; charset=utf-8"
        else:
            body, kind = text.encode("utf-8"), b"text/plain; charset=utf-8"
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    def _token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if _host_of(headers.get("host", "")) not in _LOCAL_HOSTS:
            await self._refuse(send, 403, "Forbidden: the UI answers only on localhost.")
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        from_query = query.get("token", [None])[0]
        given = from_query or headers.get(HEADER) or _cookie(headers.get("cookie", ""), COOKIE)
        if not self._token_ok(given):
            await self._refuse(
                send, 403, "Forbidden: open the address with the token that 'sdckit ui' printed."
            )
            return
        if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            by_cookie = from_query is None and headers.get(HEADER) is None
            problem = self._change_refused(headers, query, from_cookie=by_cookie)
            if problem is not None:
                await self._refuse(send, 403, problem)
                return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_upload_bytes:
            await self._refuse(send, 413, self._too_large(), page=True)
            return
        scope.setdefault("state", {})["token_in_query"] = from_query is not None
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, self._limited(receive), tracked)
        except Exception as exc:  # no traceback for any request: one line in the log
            if _holds(exc, BodyTooLarge):
                log.info("refused an upload over the limit (%d bytes)", self.max_upload_bytes)
                if not started:
                    await self._refuse(send, 413, self._too_large(), page=True)
                return
            log.error("request failed: %s", type(_leaf(exc)).__name__)
            if not started:
                await self._refuse(
                    send, 500, "The request failed inside the interface; nothing was changed "
                    "by it.  Reload the page; if it happens again, the log names the error.",
                    page=True,
                )  # fmt: skip

    def _change_refused(
        self, headers: dict[str, str], query: dict[str, list[str]], *, from_cookie: bool
    ) -> str | None:
        """Why a state-changing request is refused (None: it is not)."""
        own = "http://" + headers.get("host", "").strip().lower()
        origin = headers.get("origin")
        if origin is not None:
            if origin.strip().lower() != own:
                return "Forbidden: a change from another page than this interface's own."
        else:
            referer = headers.get("referer")
            if referer is not None:
                parts = urlsplit(referer)
                if f"{parts.scheme}://{parts.netloc}".lower() != own:
                    return "Forbidden: a change from another page than this interface's own."
        if from_cookie:
            given = query.get(CSRF_FIELD, [None])[0] or headers.get(CSRF_HEADER)
            if given is None or not hmac.compare_digest(given.encode(), self.csrf.encode()):
                return "Forbidden: the form is not from this session's pages; reload the page."
        return None

    def _too_large(self) -> str:
        mb = self.max_upload_bytes / 2**20
        return (
            f"The file is larger than the upload limit ({mb:g} MB): give its path on the Open "
            "page instead, or start the interface with a larger limit (sdckit ui "
            "--max-upload-mb ...)."
        )

    def _limited(self, receive: Receive) -> Receive:
        seen = 0
        limit = self.max_upload_bytes

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(self._too_large())
            return message

        return wrapped


def _holds(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is a ``kind``, or an exception group (of task groups) holding one."""
    if isinstance(exc, kind):
        return True
    inner = getattr(exc, "exceptions", None)
    return bool(inner) and any(_holds(e, kind) for e in inner)


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups."""
    inner = getattr(exc, "exceptions", None)
    return _leaf(inner[0]) if inner else exc


class BodyTooLarge(Exception):
    """A streamed request body went over the upload limit."""
