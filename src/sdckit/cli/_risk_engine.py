"""The engine path of ``sdckit risk FILE --engine ...``: the risk measures on an engine.

The frequencies and risks run on :func:`sdckit.engines.risk_on_engine` (polars in memory, polars
streaming, Dask or Spark) instead of in process; the printed figures are those of the in-process
command (less the household count and the largest household risk, which the engines do not
compute) and the per-record result is Parquet, written atomically: the role columns followed by
the risk columns.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdckit.cli._common import check_output_columns
from sdckit.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["ENGINES", "assess_file_on_engine", "auto_engine"]

#: The values of ``--engine`` (those of :data:`sdckit.engines.ENGINES`, not imported here so
#: that ``sdckit --help`` stays fast).
ENGINES = ("auto", "polars", "streaming", "dask", "spark")


def auto_engine(
    path: Path, columns: list[str], *, suda2: bool = False, out: Path | None = None
) -> Any:
    """What ``sdckit risk`` without ``--engine`` (or with ``--engine auto``) runs on, and why.

    A Parquet file whose columns used would take more than
    :data:`sdckit.engines.MEMORY_SHARE` of the free memory runs on the streaming engine;
    anything else in memory, in process (every measure, any output format): a file of another
    format (read in memory by the engines too), ``--suda2`` and a non-Parquet ``--out`` (which
    need the records in memory; the reason says so, with the size when it is large).

    Returns
    -------
    EngineChoice
        ``engine`` is ``"streaming"`` or ``"polars"`` (in memory, in process).
    """
    from sdckit.engines import EngineChoice, engine_choice
    from sdckit.io import detect_format

    try:
        parquet = detect_format(path) == "parquet" and path.exists()
    except ParameterError:
        parquet = False  # the in-process reader names the format problem
    if not parquet:
        return EngineChoice("polars", "the file is not Parquet: it is read in memory")
    names = _parquet_columns(path)
    by_size = engine_choice(path, "auto", [c for c in columns if c in names])
    blocker = None
    if suda2:
        blocker = "--suda2 needs the records in memory"
    elif out is not None and not out.is_dir() and detect_format(out) != "parquet":
        blocker = f"the --out file {out.name!r} is not Parquet: it is written in memory"
    if blocker is None:
        return by_size
    if by_size.engine == "streaming":
        blocker += f"; {by_size.reason}"
    return EngineChoice("polars", blocker)


def _engine_missing(engine: str) -> None:
    """Raise EngineError when the optional package of ``engine`` is not installed."""
    from sdckit.engines import EngineError

    module, name, note = {
        "dask": ("dask.dataframe", "Dask", ""),
        "spark": ("pyspark.sql", "PySpark", " (Spark also needs a Java runtime)"),
    }[engine]
    try:
        __import__(module)
    except ImportError:
        raise EngineError(
            f"--engine {engine} needs {name}, which is not installed: pip install "
            f"'sdckit[{engine}]'{note}, or use --engine polars or streaming."
        ) from None


def _parquet_columns(path: Path) -> list[str]:
    """The column names of a Parquet file (a DataError naming the file when it is unreadable)."""
    import polars as pl

    from sdckit.io import read_data

    try:
        return list(pl.read_parquet_schema(path))
    except Exception:
        read_data(path, columns=[])  # raises the DataError that names the file and its fault
        raise


def _engine_input(
    path: Path, engine: str, roles: dict[str, list[str]], na_values: list[str] | None
) -> Any:
    """The data handed to the engine: the role columns of ``path``, in the engine's form.

    A Parquet file is scanned (polars LazyFrame, Dask or Spark reading only the role columns);
    any other format is read as the in-process path reads it (key variables as text) and
    handed over from memory.
    """
    import polars as pl

    from sdckit._validation import check_columns_exist
    from sdckit.io import detect_format, read_data

    keys = roles["key"]
    wanted = [c for columns in roles.values() for c in columns]
    if detect_format(path) == "parquet":
        names = _parquet_columns(path)
        for role, columns in roles.items():
            check_columns_exist(columns, names, role)
        ordered = [n for n in names if n in wanted]  # the file's order, as read_data reads
        if engine == "dask":
            import dask.dataframe as dd

            return dd.read_parquet(str(path), columns=ordered)
        if engine == "spark":
            return _spark_session().read.parquet(str(path)).select(*ordered)
        return pl.scan_parquet(path).select(ordered)
    frame = read_data(path, na_values=na_values, text_columns=keys, columns=wanted)
    if any(name not in frame.columns for name in wanted):
        # read it whole, so that the error lists the columns it has and suggests a name
        names = read_data(path, na_values=na_values, text_columns=keys).columns
        for role, columns in roles.items():
            check_columns_exist(columns, names, role)
    if engine == "dask":
        import dask.dataframe as dd

        chunks = max(1, min(32, frame.height // 1_000_000))
        return dd.from_pandas(frame.to_pandas(), npartitions=chunks, sort=False)
    if engine == "spark":
        return _spark_session().createDataFrame(frame.to_pandas())
    return frame


def _spark_session() -> Any:
    """The active SparkSession, or a local one started for the command."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        return session
    builder = SparkSession.builder.appName("sdckit risk")
    session = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")  # Spark's own warnings are not for the user
    return session


def _check_engine_out(out: Path, engine: str) -> None:
    """Refuse an --out the engines cannot write (before any work)."""
    from sdckit.errors import DataError
    from sdckit.io import detect_format

    if detect_format(out) != "parquet":
        raise ParameterError(
            f"With --engine the per-record result is written as Parquet; give an --out file "
            f"ending in .parquet (not {out.name!r}), or drop --engine to write CSV."
        )
    if not out.parent.is_dir():
        raise DataError(
            f"The directory {str(out.parent)!r} does not exist; create it before writing "
            f"{out.name!r}."
        )
    if engine in ("dask", "spark") and out.exists():
        raise ParameterError(
            f"The --out path {out.name!r} exists; --engine {engine} writes a folder of Parquet "
            "part files there: remove it or give a new path."
        )
    if engine not in ("dask", "spark") and out.is_dir():
        raise DataError(f"{str(out)!r} is a directory; give a file name to write.")


def _engine_rows(result: Any, sensitive: list[str], household: str | None) -> list[tuple[str, Any]]:
    """The summary rows of the in-process path, from an :class:`~sdckit.engines.EngineRisk`.

    The counts of records per class come from the class table; the number of households and
    the largest household risk are not computed by the engines and are left out.
    """
    import polars as pl

    from sdckit.risk.assessment import DEFAULT_KS

    figures = result.figures()
    classes = result.classes

    def records_where(condition: pl.Expr) -> int:
        return int(classes.filter(condition).get_column("records").sum())

    rows: list[tuple[str, Any]] = [
        ("records", figures["records"]),
        ("equivalence classes", classes.height),
        ("sample uniques (fk = 1)", figures["sample_uniques"]),
    ]
    rows += [(f"records violating {k}-anonymity", figures[f"k{k}_violations"]) for k in DEFAULT_KS]
    rows += [
        ("expected re-identifications", figures["expected_reidentifications"]),
        ("global risk (%)", figures["global_risk_pct"]),
        ("highest individual risk", figures["highest_risk"]),
        ("records with risk > 0.1", records_where(pl.col("risk") > 0.1)),
    ]
    if household is not None:
        rows += [
            (
                "expected re-identifications (households)",
                figures["household_expected_reidentifications"],
            ),
            ("global household risk (%)", figures["household_risk_pct"]),
        ]
    for s in sensitive:
        rows.append(
            (f"records with distinct l < 2 on {s}", records_where(pl.col(f"l_distinct_{s}") < 2))
        )
    return rows


def assess_file_on_engine(
    path: Path,
    *,
    engine: str,
    keys: list[str],
    weight: str | None = None,
    household: str | None = None,
    sensitive: list[str] | None = None,
    missing: str = "wildcard",
    method: str = "approx",
    na_values: list[str] | None = None,
    out: Path | None = None,
) -> tuple[Any, list[tuple[str, Any]]]:
    """Risk measures of a file on an engine: the :class:`~sdckit.engines.EngineRisk` and rows.

    Parameters
    ----------
    path : Path
        Input file: a Parquet file is scanned by the engine (only the role columns are read);
        any other format is read in memory as :func:`assess_file` reads it and handed over.
    engine : {"auto", "polars", "streaming", "dask", "spark"}
    keys, weight, household, sensitive, missing, method, na_values
        As in :func:`assess_file`.
    out : Path, optional
        The per-record result, written as Parquet (one file; a folder of part files on Dask
        and Spark), atomically: a temporary file or folder next to ``out`` renamed over it
        when complete.

    Returns
    -------
    result : EngineRisk
    summary : list of (label, value)
        The rows of the in-process summary that the engines compute.
    """
    from sdckit._validation import check_choice
    from sdckit.engines import risk_on_engine
    from sdckit.io import atomic_path
    from sdckit.risk.assessment import DEFAULT_KS

    check_choice(engine, "--engine", ENGINES)
    check_choice(missing, "--missing", ("wildcard", "category"))
    check_choice(method, "--method", ("approx", "exact"))
    if engine in ("dask", "spark"):
        _engine_missing(engine)
    sens = sensitive or []
    if out is not None:
        _check_engine_out(out, engine)
    if sens:
        planned = [f"l_{m}_{s}" for s in sens for m in ("distinct", "entropy", "recursive")]
        check_output_columns(["fk", "Fk_hat", "risk", "household_risk", *planned])
    roles = {
        "key": keys,
        "weight": [weight] if weight else [],
        "household": [household] if household else [],
        "sensitive": sens,
    }
    params: dict[str, Any] = {
        "keys": keys,
        "weight": weight,
        "household": household,
        "sensitive": sens or None,
        "missing": missing,
        "method": method,
        "ks": DEFAULT_KS,
        "engine": engine,
    }
    with warnings.catch_warnings():
        # the libraries' deprecation notices (pandas in Dask, ...) are not for the user
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        data = _engine_input(path, engine, roles, na_values)
        if out is None:
            result = risk_on_engine(data, **params)
        else:
            with atomic_path(out, directory=engine in ("dask", "spark")) as tmp:
                result = risk_on_engine(data, **params, output=tmp)
            result = dataclasses.replace(result, output=out)  # not the temporary path
    return result, _engine_rows(result, sens, household)
