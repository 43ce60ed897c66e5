"""Pieces shared by the commands: error reporting, column lists, the rich console.

Only typer and :mod:`sdckit.errors` are imported here, so that registering the commands (and
``sdckit --help``) stays fast; rich and the console helpers are imported when first used.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import typer

from sdckit.errors import ColumnError, ParameterError, SdcError

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = [
    "EXIT_USAGE",
    "check_output_columns",
    "fail",
    "progress_bar",
    "reported_errors",
    "split_columns",
    "stdout_console",
    "summary_table",
]

#: Exit status for bad input: an SdcError or a bad option (as click uses for usage errors).
EXIT_USAGE = 2


def stdout_console() -> Console:
    """A rich console on standard output (created per call, so test runners capture it)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def progress_bar(
    console: Console,
) -> contextlib.AbstractContextManager[Callable[[str, int, int], None]]:
    """The progress bar of :func:`sdckit._console.progress_bar` (imported when used)."""
    from sdckit._console import progress_bar as bar

    return bar(console)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as one line on standard error and return the Exit to raise."""
    one_line = " ".join(str(message).split())
    typer.echo(f"Error: {one_line}", err=True)
    return typer.Exit(EXIT_USAGE)


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """Turn an :class:`SdcError` into a one-line message and exit status 2 (no traceback).

    Warnings raised inside the block (for example an :class:`~sdckit.errors.SdcWarning`) are
    printed as one line each on standard error.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except SdcError as exc:
            raise fail(str(exc)) from None
        finally:
            seen = set()
            for w in caught:
                text = " ".join(str(w.message).split())
                if text not in seen:
                    seen.add(text)
                    typer.echo(f"Warning: {text}", err=True)


def split_columns(value: str | None, option: str) -> list[str]:
    """Split a comma-separated column list (``"a,b , c"``); empty entries are an error."""
    if value is None:
        return []
    names = [part.strip() for part in value.split(",")]
    if not names or any(not name for name in names):
        raise ParameterError(
            f"The {option} option needs comma-separated column names without empty entries "
            "(for example a,b,c)."
        )
    if len(set(names)) != len(names):
        raise ParameterError(f"The {option} option lists a column more than once.")
    return names


def check_output_columns(names: Sequence[str]) -> None:
    """Raise ColumnError if two output columns are equal or differ only in case."""
    seen: dict[str, str] = {}
    for name in names:
        low = name.lower()
        if low in seen:
            raise ColumnError(
                f"The output would have the columns {seen[low]!r} and {name!r}, which differ "
                "only in case (or are equal); rename the input columns so that they differ."
            )
        seen[low] = name


def summary_table(
    title: str, rows: Sequence[tuple[str, object]], caption: str | None = None
) -> object:
    """A rich table of a summary's labelled figures (measure, value), numbers formatted as
    in :class:`sdckit._results.Summary`."""
    from rich.table import Table as RichTable

    from sdckit._results import format_value

    table = RichTable(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(label, value if isinstance(value, str) else format_value(value))
    return table
