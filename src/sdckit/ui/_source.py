"""The file open in the UI: where it came from, how it was read, its columns, uploads.

A file is read once when it is opened: typed (for the data page's columns and level counts)
and, for a CSV file, with its number columns as written too (codes such as ``007``).
Assigning the roles then reads the file as a job does (:class:`sdckit.jobs.Runner` with the
jobs layer's rule of which columns are text) through :meth:`OpenedFile.read`, which answers
from those two reads instead of reading a large file again.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import DataError

__all__ = ["ColumnInfo", "OpenedFile", "Source", "read_source", "save_upload"]


@dataclass(frozen=True)
class Source:
    """Where the data came from: the demo, or a file (with how to read it)."""

    kind: str
    name: str
    path: Path | None = None
    format: str | None = None
    na_values: tuple[str, ...] | None = None

    def input_spec(self, numeric_keys: list[str] | None = None) -> dict[str, Any]:
        """The ``[input]`` table of a job reading this source."""
        if self.kind == "demo":
            return {"dataset": "demo"}
        spec: dict[str, Any] = {"file": str(self.path)}
        if self.format:
            spec["format"] = self.format
        if self.na_values is not None:
            spec["na_values"] = list(self.na_values)
        if numeric_keys:
            spec["numeric_keys"] = list(numeric_keys)
        return spec

    @property
    def is_csv(self) -> bool:
        """Whether the file is read as CSV (text columns and missing-value words apply)."""
        from sdckit.io import detect_format

        return self.kind == "file" and detect_format(self.path, self.format) == "csv"  # type: ignore[arg-type]


@dataclass(frozen=True)
class ColumnInfo:
    """One column of the file as the data page shows it."""

    name: str
    dtype: str
    levels: int
    missing: int
    numeric: bool


@dataclass(frozen=True)
class OpenedFile:
    """A file as read when it was opened.

    Attributes
    ----------
    source : Source
    frame : DataFrame
        The typed read.
    text : DataFrame or None
        A CSV file's number columns as written (None for other formats).
    columns : list of ColumnInfo
    """

    source: Source
    frame: pl.DataFrame
    text: pl.DataFrame | None
    columns: list[ColumnInfo]

    def read(
        self, path: Any, *, format: Any = None, na_values: Any = None, text_columns: Any = None
    ) -> pl.DataFrame:
        """:func:`sdckit.io.read_data` of this file, answered from memory (the columns named
        in ``text_columns`` as written); another file, or other options, are read."""
        from sdckit.io import read_data

        src = self.source
        same = (
            src.path is not None
            and Path(path).resolve() == Path(src.path).resolve()
            and format == src.format
            and (None if na_values is None else tuple(na_values)) == src.na_values
        )
        if not same:
            return read_data(path, format=format, na_values=na_values, text_columns=text_columns)
        text = self.text
        wanted = [c for c in text_columns or [] if text is not None and c in text.columns]
        if not wanted:
            return self.frame
        return self.frame.with_columns([text.get_column(c) for c in wanted])  # type: ignore[union-attr]


def read_source(source: Source, progress: Callable[[str, int, int], None]) -> OpenedFile:
    """Read ``source`` (typed; a CSV file's number columns as written too) and count the
    levels and missing values of every column."""
    from sdckit.io import read_data

    progress("Reading the file", 0, 3)
    na_values = list(source.na_values) if source.na_values is not None else None
    if source.kind == "demo":
        from sdckit.datasets import load_demo

        frame = load_demo()
    else:
        frame = read_data(source.path, format=source.format, na_values=na_values)  # type: ignore[arg-type]
    if frame.height == 0 or frame.width == 0:
        raise DataError("The file has no records or no columns.")
    text = None
    if source.is_csv:
        progress("Reading the number columns as text too", 1, 3)
        numbers = [c for c in frame.columns if frame.schema[c] != pl.String]
        if numbers:
            text = read_data(
                source.path,  # type: ignore[arg-type]
                format=source.format,
                na_values=na_values,
                text_columns=numbers,
            ).select(numbers)
    progress("Counting the levels of each column", 2, 3)
    counts = frame.select(
        [pl.col(c).n_unique().alias(f"u{i}") for i, c in enumerate(frame.columns)]
        + [pl.col(c).null_count().alias(f"m{i}") for i, c in enumerate(frame.columns)]
    ).row(0)
    n = frame.width
    columns = [
        ColumnInfo(
            name=c,
            dtype=str(frame.schema[c]),
            levels=int(counts[i]),
            missing=int(counts[n + i]),
            numeric=frame.schema[c].is_numeric(),
        )
        for i, c in enumerate(frame.columns)
    ]
    progress("Done", 3, 3)
    return OpenedFile(source, frame, text, columns)


def save_upload(folder: Path, filename: str, chunks: Any) -> Path:
    """Store an upload in ``folder`` under a name no earlier upload has (``data-2.csv`` after
    ``data.csv``: a job exported from the earlier one still reads it), written atomically;
    return its path."""
    from sdckit.io import atomic_path

    name = Path(filename or "upload").name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "upload"
    folder.mkdir(parents=True, exist_ok=True)
    stem, suffix = Path(name).stem, Path(name).suffix
    target, n = folder / name, 1
    while target.exists():
        n += 1
        target = folder / f"{stem}-{n}{suffix}"
    with atomic_path(target) as tmp, open(tmp, "wb") as out:  # never a half-written file
        shutil.copyfileobj(chunks, out, length=1 << 20)
    return target
