"""``sdckit ui [FILE]``: the browser interface (see ``docs/ui.md``).

Starts a local web application on ``127.0.0.1`` and opens the browser at its address, which
carries a random access token (as Jupyter does); requests without it, or for another host
name, are refused.  The interface is an optional extra: ``pip install 'sdckit[ui]'``.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Annotated

import typer

from sdckit.cli._common import fail

__all__ = ["ui_command"]


def ui_command(
    file: Annotated[
        Path | None, typer.Argument(help="A microdata file to open at once (optional).")
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).")] = 8765,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Do not open the browser; print the address.")
    ] = False,
    out_dir: Annotated[
        Path,
        typer.Option("--out-dir", help="Where exports and uploaded files are written."),
    ] = Path("sdckit-ui-out"),
    max_upload_mb: Annotated[
        float, typer.Option("--max-upload-mb", help="Largest file that can be uploaded (MB).")
    ] = 2048.0,
) -> None:
    """Start the browser interface on this computer (one user, 127.0.0.1 only)."""
    missing = [
        m for m in ("fastapi", "uvicorn", "multipart") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise fail(
            "The browser interface needs the 'ui' extra: pip install 'sdckit[ui]' "
            f"(missing: {', '.join(missing)})."
        )
    if file is not None and not file.is_file():
        raise fail(f"The file {str(file)!r} does not exist; check the path.")
    if not 0 <= port <= 65535:
        raise fail("The --port option must be between 0 and 65535.")
    from sdckit.ui import serve

    logging.basicConfig(level=logging.INFO, format="sdckit ui: %(message)s")

    def ready(url: str) -> None:
        typer.echo("sdckit ui is running on this computer only. Open this address:")
        typer.echo(f"    {url}")
        typer.echo("Press Ctrl-C to stop. Exports go to " + str(out_dir.resolve()))

    try:
        serve(file, port=port, open_browser=not no_browser, out_dir=out_dir,
              max_upload_mb=max_upload_mb, on_ready=ready)  # fmt: skip
    except OSError as exc:
        raise fail(
            f"The UI could not listen on port {port} ({exc.strerror}); try --port 0."
        ) from None
    except KeyboardInterrupt:  # pragma: no cover - interactive
        typer.echo("stopped")
