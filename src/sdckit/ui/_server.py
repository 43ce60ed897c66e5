"""Running the UI: a uvicorn server on the loopback address, in the foreground or a thread.

:class:`UIServer` binds a socket on ``127.0.0.1`` (port 0: a free port chosen by the system),
builds the application with a new random token, and serves it from a background thread
(:meth:`UIServer.start`, used by the tests and the benchmark) or the calling thread
(:meth:`UIServer.run`, used by ``sdckit ui``).  uvicorn's access log is off: URLs can carry
category codes (a filter of the records table), which are data.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

from sdckit.ui._security import new_token
from sdckit.ui._workspace import Workspace

__all__ = ["LOOPBACK", "UIServer"]

LOOPBACK = "127.0.0.1"
log = logging.getLogger("sdckit.ui")


class UIServer:
    """The UI of one workspace, served on the loopback address.

    Parameters
    ----------
    out_dir : Path
        Where the exports and uploads go.
    port : int, default 0
        0: a free port.
    max_upload_mb : float, default 2048
    seed : int, optional
        The session's seed (default: random).
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        port: int = 0,
        max_upload_mb: float = 2048,
        seed: int | None = None,
        token: str | None = None,
    ) -> None:
        from sdckit.ui._app import create_app

        self.workspace = Workspace(Path(out_dir), seed=seed)
        self.token = token or new_token()
        self.app = create_app(
            self.workspace, token=self.token, max_upload_bytes=int(max_upload_mb * 2**20)
        )
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((LOOPBACK, int(port)))
        self.socket.listen(128)  # connections wait from now on, before uvicorn serves
        self.port = self.socket.getsockname()[1]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (without the token)."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        """The address to open: the base URL with the token."""
        return f"{self.base_url}/?token={self.token}"

    def _make_server(self) -> Any:
        import uvicorn

        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off",
            timeout_graceful_shutdown=2,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        return self._server

    def run(self) -> None:
        """Serve in the calling thread until interrupted (Ctrl-C)."""
        server = self._make_server()
        server.run(sockets=[self.socket])

    def start(self, timeout: float = 20.0) -> UIServer:
        """Serve from a background thread; return once the server answers."""
        server = self._make_server()
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self.socket]}, name="sdckit-ui", daemon=True
        )
        self._thread.start()
        end = time.monotonic() + timeout
        while not server.started:
            if time.monotonic() > end or not self._thread.is_alive():
                raise RuntimeError("The UI server did not start.")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop the background server."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10.0)
        self.socket.close()

    def __enter__(self) -> UIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
