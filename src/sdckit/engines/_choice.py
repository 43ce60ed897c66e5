"""What ``engine="auto"`` picks, and why: the input's kind, its size and the free memory.

A Dask or Spark DataFrame stays where it is.  A frame already in memory runs in memory.  A
Parquet path (or a polars LazyFrame) runs in memory when the columns used fit comfortably in the
memory free now, else on the streaming engine: the in-memory path needs about 2.5 times the
columns' size at its peak (the records, the key codes, the per-record result), so the columns
may take at most :data:`MEMORY_SHARE` of the free memory.  ``SDCKIT_STREAMING_BYTES`` replaces
that bound by a fixed number of bytes; where the free memory cannot be read,
:data:`STREAMING_THRESHOLD_BYTES` is the bound.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sdckit._validation import check_choice
from sdckit.errors import ParameterError

__all__ = [
    "ENGINES",
    "MEMORY_SHARE",
    "STREAMING_THRESHOLD_BYTES",
    "EngineChoice",
    "choose_engine",
    "data_kind",
    "engine_choice",
    "estimated_bytes",
    "free_memory",
]

#: The engines, ``"auto"`` first (see :func:`choose_engine`).
ENGINES = ("auto", "polars", "streaming", "dask", "spark")

#: The share of the free memory the columns used may take for ``engine="auto"`` to run in
#: memory (the in-memory path peaks at about 2.5 times the columns: 200 million records of 7
#: integer keys and a weight, 7.2 GB as columns, peaked at 17.5 GB).
MEMORY_SHARE = 0.25

#: The bound when the free memory cannot be read (environment variable
#: ``SDCKIT_STREAMING_BYTES`` sets a fixed bound instead of the share of free memory).
STREAMING_THRESHOLD_BYTES = 1 << 30

#: Bytes per value of a column in memory, by polars type (text: the 16-byte view and a short
#: string; anything else unknown: 8).
_WIDTHS: dict[Any, int] = {
    pl.Boolean: 1,
    pl.Int8: 1,
    pl.UInt8: 1,
    pl.Int16: 2,
    pl.UInt16: 2,
    pl.Int32: 4,
    pl.UInt32: 4,
    pl.Float32: 4,
    pl.Date: 4,
    pl.Categorical: 4,
    pl.Enum: 4,
    pl.String: 24,
    pl.Binary: 24,
}


@dataclass(frozen=True)
class EngineChoice:
    """The engine that runs the data and the reason, in words a face can print.

    Attributes
    ----------
    engine : {"polars", "streaming", "dask", "spark"}
    reason : str
        Why, e.g. ``"the 8 columns used take about 7.2 GB, more than 25 % of the 18.3 GB
        free"``.

    Examples
    --------
    >>> str(EngineChoice("streaming", "asked for"))
    'streaming (asked for)'
    """

    engine: str
    reason: str

    def __str__(self) -> str:
        return f"{self.engine} ({self.reason})"


def free_memory() -> int | None:
    """The memory available to a new process now, in bytes (None when it cannot be read).

    Linux's ``MemAvailable`` (free memory plus the caches the kernel can drop), else the free
    physical pages of ``os.sysconf``.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gb(n: float) -> str:
    if n >= 1e8:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n:.0f} bytes"


def estimated_bytes(lf: pl.LazyFrame, columns: Sequence[str]) -> int:
    """The in-memory size of ``columns`` (all columns when empty): rows times the widths of
    their types (the row count of a Parquet scan is read from its metadata)."""
    schema = lf.collect_schema()
    names = [c for c in columns if c in schema] or list(schema.names())
    rows = int(lf.select(pl.len()).collect(engine="streaming").item())
    width = sum(_WIDTHS.get(schema[c].base_type(), 8) for c in names)
    return rows * max(width, 1)


def data_kind(data: Any) -> str:
    """``"polars"``, ``"path"``, ``"dask"``, ``"spark"`` or ``"other"``."""
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        return "polars"
    if isinstance(data, str | os.PathLike):
        return "path"
    module = type(data).__module__.split(".")[0]
    if module in ("dask", "dask_expr"):
        return "dask"
    if module == "pyspark":
        return "spark"
    return "other"


def _is_parquet(path: Path) -> bool:
    return path.is_dir() or path.suffix.lower() == ".parquet" or any(c in str(path) for c in "*?[")


def _by_size(size: int, n_columns: int, free: Callable[[], int | None]) -> EngineChoice:
    """Streaming or in memory for columns of ``size`` bytes (see the module docstring)."""
    what = f"the {n_columns} column{'s' if n_columns != 1 else ''} used take about {_gb(size)}"
    fixed = os.environ.get("SDCKIT_STREAMING_BYTES")
    if fixed:
        bound = int(fixed)
        if size > bound:
            return EngineChoice("streaming", f"{what}, more than SDCKIT_STREAMING_BYTES")
        return EngineChoice("polars", f"{what}, within SDCKIT_STREAMING_BYTES")
    available = free()
    if available is None:
        if size > STREAMING_THRESHOLD_BYTES:
            return EngineChoice(
                "streaming", f"{what}, more than {_gb(STREAMING_THRESHOLD_BYTES)} (free memory "
                "unknown)"
            )  # fmt: skip
        return EngineChoice("polars", f"{what} (free memory unknown)")
    share = f"{MEMORY_SHARE * 100:.0f} % of the {_gb(available)} free"
    if size > MEMORY_SHARE * available:
        return EngineChoice("streaming", f"{what}, more than {share}")
    return EngineChoice("polars", f"{what}, within {share}")


def engine_choice(
    data: Any,
    engine: str = "auto",
    columns: Sequence[str] = (),
    *,
    free: Callable[[], int | None] | None = None,
) -> EngineChoice:
    """The engine that runs ``data`` and why: ``engine`` itself, or the choice of ``"auto"``.

    ``"auto"``: a Dask DataFrame runs on Dask, a PySpark DataFrame on Spark; a polars
    DataFrame (or pandas, pyarrow) in memory on polars; a Parquet path or a polars LazyFrame on
    the streaming engine when ``columns`` (all of them when empty) would take more than
    :data:`MEMORY_SHARE` of the free memory (:func:`free_memory`), else in memory on polars.
    The environment variable ``SDCKIT_STREAMING_BYTES`` replaces that share by a fixed number
    of bytes.

    Parameters
    ----------
    data : DataFrame, LazyFrame, path, Dask or PySpark DataFrame
    engine : {"auto", "polars", "streaming", "dask", "spark"}, default "auto"
    columns : sequence of str
        The columns the work reads (their size decides).
    free : callable, optional
        Returns the free memory in bytes (or None); default :func:`free_memory`.

    Returns
    -------
    EngineChoice

    Raises
    ------
    ParameterError
        A Dask or Spark DataFrame forced onto another engine, or data in memory forced onto
        Dask or Spark.

    Examples
    --------
    >>> import polars as pl
    >>> engine_choice(pl.DataFrame({"a": [1, 2]}))
    EngineChoice(engine='polars', reason='the data is in memory')
    >>> lf = pl.LazyFrame({"a": [1, 2], "w": [1.0, 2.0]})
    >>> print(engine_choice(lf, columns=["a", "w"], free=lambda: 40))
    streaming (the 2 columns used take about 32 bytes, more than 25 % of the 40 bytes free)
    """
    check_choice(engine, "engine", ENGINES)
    kind = data_kind(data)
    if engine != "auto":
        if kind in ("dask", "spark") and engine != kind:
            raise ParameterError(
                f"The data is a {kind.capitalize()} DataFrame; it runs on engine={kind!r} "
                "(or 'auto'). To use another engine, convert it first."
            )
        if kind in ("polars", "other") and engine in ("dask", "spark"):
            raise ParameterError(
                f"engine={engine!r} needs a {engine.capitalize()} DataFrame or a Parquet path; "
                "this data is in memory: use engine='polars' (or 'streaming')."
            )
        return EngineChoice(engine, "asked for")
    if kind in ("dask", "spark"):
        name = "Dask" if kind == "dask" else "Spark"
        return EngineChoice(kind, f"the data is a {name} DataFrame: it stays on {name}")
    if kind == "path":
        path = Path(data)
        if not _is_parquet(path):
            return EngineChoice("polars", "the file is not Parquet: it is read in memory")
        lf = pl.scan_parquet(data)
    elif isinstance(data, pl.LazyFrame):
        lf = data
    else:
        return EngineChoice("polars", "the data is in memory")
    used = list(columns) or list(lf.collect_schema().names())
    return _by_size(estimated_bytes(lf, used), len(used), free or free_memory)


def choose_engine(data: Any, engine: str = "auto", columns: Sequence[str] = ()) -> str:
    """The engine that runs ``data``: ``engine`` itself, or the choice of ``"auto"``.

    :func:`engine_choice` without the reason.

    Examples
    --------
    >>> import polars as pl
    >>> choose_engine(pl.DataFrame({"a": [1, 2]}))
    'polars'
    >>> choose_engine(pl.DataFrame({"a": [1, 2]}), "streaming")
    'streaming'
    """
    return engine_choice(data, engine, columns).engine
