"""The browser interface of sdckit (``sdckit ui``), for people who do not write code.

A local web application (FastAPI, pages rendered on the server, a little JavaScript of its own;
``docs/ui.md``) that drives the same layers as the command line: open a file, give the columns
their roles, see the risk, apply protection methods with forms drawn from their declared
parameters, undo and redo, build an R-U map, run the release check and export the protected
file, the reports and the job file that reproduces the session; and the tables workflow
(rules, secondary suppression, audit, export).

It is an optional extra (``pip install 'sdckit[ui]'``): nothing here is imported by the rest of
the package, and this module imports the web framework only when :func:`serve` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["serve"]


def serve(
    file: str | Path | None = None,
    *,
    port: int = 8765,
    open_browser: bool = True,
    out_dir: str | Path = "sdckit-ui-out",
    max_upload_mb: float = 2048,
    on_ready: Any = None,
) -> None:
    """Start the UI on ``127.0.0.1:port`` and serve until interrupted.

    Parameters
    ----------
    file : path, optional
        A microdata file to open at once.
    port : int, default 8765
        0: a free port.
    open_browser : bool, default True
    out_dir : path, default "sdckit-ui-out"
        Where the exports and the uploaded files are written.
    max_upload_mb : float, default 2048
        Largest file that can be uploaded (larger files: give their path).
    on_ready : callable, optional
        Called with the URL (with its token) once the server listens.
    """
    import threading
    import webbrowser

    from sdckit.ui._server import UIServer
    from sdckit.ui._tasks import warm_up
    from sdckit.ui._workspace import Source

    server = UIServer(out_dir, port=port, max_upload_mb=max_upload_mb)
    if file is not None:
        path = Path(file).expanduser().resolve()
        source = Source(kind="file", name=path.name, path=path)
        server.workspace.tasks.start(
            f"Opening {path.name}", lambda t: server.workspace.open(source, t.progress), "/data"
        )
    warm_up()
    if on_ready is not None:
        on_ready(server.url)
    if open_browser:
        threading.Timer(0.8, webbrowser.open, args=(server.url,)).start()
    server.run()
