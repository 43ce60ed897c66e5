"""The ``sdckit`` command-line application (typer).

Each command lives in its own module and is registered here; ``main()`` is the console entry
point (``sdckit = "sdckit.cli.app:main"``).
"""

from __future__ import annotations

import typer

from sdckit import __version__
from sdckit.cli.check import check_command
from sdckit.cli.protect import protect_command
from sdckit.cli.risk import risk_command
from sdckit.cli.table import table_command
from sdckit.cli.ui import ui_command

__all__ = ["app", "main"]

app = typer.Typer(
    name="sdckit",
    help="Statistical disclosure control for microdata and statistical tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
app.command("risk")(risk_command)
app.command("protect")(protect_command)
app.command("table")(table_command)
app.command("check")(check_command)
app.command("ui")(ui_command)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"sdckit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Show the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Statistical disclosure control for microdata and statistical tables."""


def main() -> None:
    """Run the command line (the ``sdckit`` console script)."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
