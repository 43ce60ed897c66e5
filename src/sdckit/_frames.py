"""The data-frame boundary: accept pandas, polars, pyarrow, lazy frames; return the caller's type.

Inside sdckit every computation runs on a :class:`polars.DataFrame` whose rows are in the caller's
order.  :func:`to_polars` converts any frame narwhals understands and remembers what is needed to
hand results back: the backend and, for pandas, the row index.  :func:`from_polars` does the
reverse.  Lazy frames (polars LazyFrame, DuckDB, Dask, PySpark through narwhals) are collected;
results for them come back as polars frames.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import polars as pl

from sdckit.errors import ColumnError, DataError

__all__ = ["FrameInfo", "from_polars", "to_polars"]


@dataclass(frozen=True)
class FrameInfo:
    """What :func:`from_polars` needs to give data back in the caller's form.

    Attributes
    ----------
    backend : str
        ``"pandas"``, ``"polars"`` or ``"pyarrow"``; anything else is returned as polars.
    index : object or None
        The pandas row index of the input (None for other backends).
    """

    backend: str
    index: Any = None


def _check_duplicate_names(names: list[str]) -> None:
    dup = [name for name, count in Counter(names).items() if count > 1]
    if dup:
        raise ColumnError(
            f"The data has duplicate column names: {', '.join(map(repr, dup))}. "
            "Rename them so that every column name is unique."
        )


def _fix_object_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Python-object columns (e.g. from a numpy object array) become typed columns."""
    fixed = [
        pl.Series(name, frame.get_column(name).to_list(), strict=False)
        for name, dtype in frame.schema.items()
        if dtype == pl.Object
    ]
    return frame.with_columns(fixed) if fixed else frame


def to_polars(data: Any) -> tuple[pl.DataFrame, FrameInfo]:
    """Return ``data`` as a polars DataFrame (caller's row order) and its :class:`FrameInfo`.

    The caller's object is never modified.  Raises :class:`ColumnError` for duplicate column
    names and :class:`DataError` for something that is not a data frame.
    """
    if isinstance(data, pl.DataFrame):
        _check_duplicate_names(list(data.columns))
        return _fix_object_columns(data), FrameInfo("polars")
    if isinstance(data, pl.LazyFrame):
        return _fix_object_columns(data.collect()), FrameInfo("polars")
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        _check_duplicate_names([str(c) for c in data.columns])
        for c in data.columns:
            if not isinstance(c, str):
                raise ColumnError(
                    "Every column name must be a string; rename the columns "
                    "(for example df.columns = df.columns.astype(str))."
                )
        index = data.index
        try:
            frame = pl.from_pandas(data, include_index=False)
        except Exception as exc:  # e.g. an object column mixing strings and numbers
            raise DataError(
                "A column of the pandas frame cannot be converted "
                f"({type(exc).__name__}); give every column a single type, for example "
                "df[col] = df[col].astype(str)."
            ) from None
        return _fix_object_columns(frame), FrameInfo("pandas", index)
    if module == "pyarrow":
        names = list(data.column_names) if hasattr(data, "column_names") else []
        _check_duplicate_names(names)
        frame = pl.from_arrow(data)
        if not isinstance(frame, pl.DataFrame):
            raise DataError("A pyarrow Table is needed, not a single array.")
        return frame, FrameInfo("pyarrow")
    import narwhals.stable.v2 as nw  # only for frames other than pandas, polars and pyarrow

    try:
        native = nw.from_native(data)
    except TypeError:
        raise DataError(
            f"sdckit cannot read an object of type {type(data).__name__} as a data frame; "
            "pass a pandas, polars or pyarrow table (or a lazy frame narwhals supports)."
        ) from None
    if isinstance(native, nw.LazyFrame):
        native = native.collect("polars")
    frame = native.to_polars()
    _check_duplicate_names(list(frame.columns))
    return frame, FrameInfo("polars")


def from_polars(frame: pl.DataFrame, info: FrameInfo, *, keep_index: bool = True) -> Any:
    """Return ``frame`` in the caller's form: pandas (with its index), polars or pyarrow."""
    if info.backend == "pandas":
        out = frame.to_pandas()
        if keep_index and info.index is not None and len(info.index) == len(out):
            out.index = info.index
        return out
    if info.backend == "pyarrow":
        return frame.to_arrow()
    return frame
