"""Who may talk to the UI: the token, the Host header, the Origin of a change, the upload size.

The server binds to the loopback address only.  Every request must carry the random token the
server printed when it started (``?token=...`` in the first URL, as Jupyter does; the page then
keeps it in an HttpOnly, SameSite=Strict cookie, and the JSON API may send it as the
``X-SDCKIT-Token`` header), else it gets 403.  A request whose ``Host`` header is not
``localhost``, ``127.0.0.1`` or ``[::1]`` gets 403 too (DNS rebinding: a page of another site
whose name resolves to 127.0.0.1 cannot read the UI).  A state-changing request whose
``Origin`` is another site gets 403 (the cookie is SameSite=Strict anyway).  A request body
larger than the upload limit gets 413 before it is read.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["COOKIE", "HEADER", "SecurityMiddleware", "new_token"]

COOKIE = "sdckit_ui_token"
HEADER = "x-sdckit-token"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A new random access token (``secrets.token_urlsafe``)."""
    return secrets.token_urlsafe(32)


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
        self.max_upload_bytes = int(max_upload_bytes)

    async def _refuse(self, send: Send, status: int, text: str) -> None:
        body = text.encode("utf-8")
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode())],
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
            origin = headers.get("origin")
            if (
                origin
                and origin != "null"
                and _host_of(urlsplit(origin).netloc) not in _LOCAL_HOSTS
            ):
                await self._refuse(send, 403, "Forbidden: a request from another site.")
                return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_upload_bytes:
            await self._refuse(send, 413, self._too_large())
            return
        scope.setdefault("state", {})["token_in_query"] = from_query is not None
        await self.app(scope, self._limited(receive, send), send)

    def _too_large(self) -> str:
        mb = self.max_upload_bytes / 2**20
        return f"The file is larger than the upload limit ({mb:g} MB); give its path instead."

    def _limited(self, receive: Receive, send: Send) -> Receive:
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


class BodyTooLarge(Exception):
    """A streamed request body went over the upload limit."""
