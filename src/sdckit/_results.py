"""Shared pieces of result objects: a printable summary and per-record frames."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import FrameInfo, from_polars
from sdckit.errors import ColumnError

__all__ = ["Summary", "format_value", "records_frame"]


def format_value(value: Any) -> str:
    """Format a number for a summary: integers plainly, floats with 6 significant digits."""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        v = float(value)
        if np.isnan(v):
            return "n/a"
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.6g}"
        return f"{v:,.6g}" if abs(v) >= 1000 else f"{v:.6g}"
    return str(value)


@dataclass(frozen=True)
class Summary:
    """A readable summary: a title and labelled figures.

    ``str(summary)`` gives aligned plain text; notebooks show an HTML table.
    """

    title: str
    rows: Sequence[tuple[str, Any]]
    notes: Sequence[str] = ()

    def as_text(self) -> str:
        """The summary as aligned plain text."""
        width = max((len(label) for label, _ in self.rows), default=0)
        lines = [self.title, "-" * max(len(self.title), 20)]
        lines += [f"{label:<{width}}  {format_value(value)}" for label, value in self.rows]
        lines += list(self.notes)
        return "\n".join(lines)

    def as_html(self) -> str:
        """The summary as an HTML table."""
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td>{html.escape(format_value(value))}</td></tr>"
            for label, value in self.rows
        )
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return f"<table><caption>{html.escape(self.title)}</caption>{body}</table>{notes}"

    def to_dict(self) -> dict[str, Any]:
        """The figures as a dict ``label -> value``."""
        return dict(self.rows)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


def records_frame(columns: Mapping[str, np.ndarray], info: FrameInfo | None) -> Any:
    """One row per record in the caller's frame type and index (polars if ``info`` is None)."""
    frame = pl.DataFrame({name: np.asarray(values) for name, values in columns.items()})
    lowered = [c.lower() for c in frame.columns]
    if len(set(lowered)) != len(lowered):
        raise ColumnError(
            "Two result columns differ only in case; DuckDB and Spark would confuse them. "
            "Rename the variables so that their names differ in more than case."
        )
    if info is None:
        return frame
    return from_polars(frame, info)
