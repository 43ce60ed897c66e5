"""``sdckit risk FILE --keys ... --out OUT``: disclosure risk of every record of a file.

Reads any file :mod:`sdckit.io` reads, prints the file-level figures as a table and writes one
row per input record, in input order: ``fk``, ``Fk_hat``, ``risk``; with ``--household`` also
``household_risk``; with ``--suda2`` ``suda_score`` and ``dis_suda_score``; with
``--sensitive`` the l-diversity columns ``l_distinct_<s>``, ``l_entropy_<s>`` and
``l_recursive_<s>``.

With ``--engine`` the frequencies and risks run on an engine (:func:`sdckit.engines.risk_on_engine`:
polars in memory, polars streaming, Dask or Spark) instead of in process; the printed figures
are the same (less the household count and largest household risk, which the engines do not
compute) and the per-record result is Parquet: the role columns followed by the risk columns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sdckit.cli._common import (
    check_output_columns,
    reported_errors,
    split_columns,
    stdout_console,
)
from sdckit.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import polars as pl

__all__ = ["ENGINES", "assess_file", "assess_file_on_engine", "risk_command"]

#: The values of ``--engine`` (those of :data:`sdckit.engines.ENGINES`, not imported here so
#: that ``sdckit --help`` stays fast).
ENGINES = ("auto", "polars", "streaming", "dask", "spark")

# numpy, polars and the measures are imported by the command when it runs, not when the
# command line starts: ``sdckit --help`` needs none of them.


def assess_file(
    path: Path,
    *,
    keys: list[str],
    weight: str | None = None,
    household: str | None = None,
    sensitive: list[str] | None = None,
    suda2: bool = False,
    missing: str = "wildcard",
    method: str = "approx",
    na_values: list[str] | None = None,
) -> tuple[pl.DataFrame, list[tuple[str, Any]]]:
    """Risk measures of a file: the per-record frame and the summary rows.

    Parameters
    ----------
    path : Path
        Input file (any format :func:`sdckit.io.read_data` reads).
    keys, weight, household, sensitive
        Column roles, as in :class:`sdckit.Microdata`.
    suda2 : bool
        Add SUDA and DIS-SUDA scores.
    missing : {"wildcard", "category"}
    method : {"approx", "exact"}
    na_values : list of str, optional
        The CSV fields read as missing besides empty fields (default ``["NA"]``, see
        :func:`sdckit.io.read_data`).  The key variables are read as text exactly as written
        (codes such as ``007`` keep their zeros).

    Returns
    -------
    records : polars.DataFrame
        One row per input record, in input order.
    summary : list of (label, value)
    """
    import numpy as np
    import polars as pl

    from sdckit._validation import check_choice
    from sdckit.io import read_data
    from sdckit.microdata import Microdata
    from sdckit.risk.assessment import assess_risk

    check_choice(missing, "--missing", ("wildcard", "category"))
    check_choice(method, "--method", ("approx", "exact"))
    # only the columns with a role are read (a Parquet file reads nothing else)
    wanted = [*keys, *([weight] if weight else []), *([household] if household else [])]
    wanted += sensitive or []
    frame = read_data(path, na_values=na_values, text_columns=keys, columns=wanted)
    if any(name not in frame.columns for name in wanted):
        # a role names a column the file lacks: read it whole, so that the error lists the
        # columns it has and suggests the closest name
        frame = read_data(path, na_values=na_values, text_columns=keys)
    md = Microdata(
        frame, keys=keys, weight=weight, household=household, sensitive=sensitive or None
    )
    if sensitive:
        # l-diversity names its columns after the sensitive variables: check them first
        planned = [f"l_{m}_{s}" for s in md.sensitive for m in ("distinct", "entropy", "recursive")]
        if len(md.sensitive) >= 2:
            planned += ["l_entropy_multi", "l_recursive_multi"]
        check_output_columns(["fk", "Fk_hat", "risk", "household_risk", *planned])
    assessment = assess_risk(md, method=method, missing=missing)
    # the per-record arrays themselves, in the order of RiskAssessment.to_frame
    columns: dict[str, np.ndarray] = assessment.record_columns()
    freq = assessment.frequencies
    # fk is constant within a class: test the classes only; whole counts (always, without
    # alpha < 1) are written as integers (cast by polars in the output frame)
    whole_fk = freq is not None and bool(np.all(freq.class_fk == np.round(freq.class_fk)))
    rows: list[tuple[str, Any]] = assessment.rows()
    if suda2:
        from sdckit.risk.suda import suda2 as run_suda2

        suda = run_suda2(md)
        first = [c for c in columns if not c.startswith("l_")]
        rest = {c: columns.pop(c) for c in list(columns) if c not in first}
        columns.update(suda_score=suda.score, dis_suda_score=suda.dis_score, **rest)
        rows += [
            ("records with a SUDA score > 0", int(np.count_nonzero(suda.score > 0))),
            ("largest DIS-SUDA score", float(suda.dis_score.max(initial=0.0))),
        ]
    check_output_columns(list(columns))
    records = pl.DataFrame(columns)  # the arrays themselves, not copies
    if whole_fk:
        records = records.with_columns(pl.col("fk").cast(pl.Int64))
    return records, rows


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


@contextlib.contextmanager
def _atomic_directory(target: Path) -> Iterator[Path]:
    """A temporary folder next to ``target``, renamed to ``target`` only on success."""
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
            atomic: Any = _atomic_directory if engine in ("dask", "spark") else atomic_path
            with atomic(out) as tmp:
                result = risk_on_engine(data, **params, output=tmp)
            result = dataclasses.replace(result, output=out)  # not the temporary path
    return result, _engine_rows(result, sens, household)


def _print_summary(
    path: Path,
    out: Path | None,
    keys: list[str],
    rows: list[tuple[str, Any]],
    engine: str | None = None,
) -> None:
    from rich.table import Table

    from sdckit._results import format_value

    caption = f"key variables: {', '.join(keys)}"
    if engine is not None:
        caption += f"; engine: {engine}"
    table = Table(
        title=f"Disclosure risk of {path.name}",
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(label, format_value(value) if not isinstance(value, str) else value)
    console = stdout_console()
    console.print(table)
    if out is not None:
        console.print(f"Per-record risk written to {out}")


def risk_command(
    file: Annotated[Path, typer.Argument(help="Input file: .csv, .parquet, .sav, .dta, ...")],
    keys: Annotated[
        str, typer.Option("--keys", "-k", help="Key variables, comma-separated: a,b,c.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Output file, one row per record (.csv or .parquet); optional."
        ),
    ] = None,
    weight: Annotated[
        str | None, typer.Option("--weight", "-w", help="Sampling weight column.")
    ] = None,
    household: Annotated[
        str | None, typer.Option("--household", help="Household id column (household risk).")
    ] = None,
    sensitive: Annotated[
        str | None,
        typer.Option("--sensitive", help="Sensitive variables for l-diversity, comma-separated."),
    ] = None,
    suda2: Annotated[bool, typer.Option("--suda2", help="Add SUDA and DIS-SUDA scores.")] = False,
    missing: Annotated[
        str,
        typer.Option(
            "--missing", help="Missing key values: 'wildcard' (match anything) or 'category'."
        ),
    ] = "wildcard",
    method: Annotated[
        str, typer.Option("--method", help="Individual risk: 'approx' (sdcMicro) or 'exact'.")
    ] = "approx",
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (reserved for random methods).")
    ] = None,
    na_values: Annotated[
        str | None,
        typer.Option(
            "--na-values",
            help="CSV fields read as missing besides empty fields, comma-separated (default NA; "
            "'' for empty fields only).",
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Compute on an engine: auto, polars, streaming, dask or spark (the records "
            "stay on it; --out must then be .parquet; no --suda2). Default: in process.",
        ),
    ] = None,
) -> None:
    """Disclosure risk of every record: frequencies, k-anonymity, individual risk and more."""
    from sdckit.io import detect_format, write_data

    with reported_errors():
        if seed is not None:
            from sdckit._validation import check_seed

            check_seed(seed)
        key_list = split_columns(keys, "--keys")
        sensitive_list = split_columns(sensitive, "--sensitive")
        if out is not None and detect_format(out) == "sas":
            raise ParameterError(
                "The --out file cannot be a SAS .sas7bdat file (read only); use .csv or .parquet."
            )
        if out is not None and out.resolve() == file.resolve():
            raise ParameterError("The --out file must differ from the input file.")
        na_list = (
            None if na_values is None else [v.strip() for v in na_values.split(",") if v.strip()]
        )
        if engine is not None:
            if suda2:
                raise ParameterError(
                    "The --suda2 option cannot run on an engine (SUDA needs the records in "
                    "memory); drop --engine, or drop --suda2."
                )
            result, rows = assess_file_on_engine(
                file,
                engine=engine,
                keys=key_list,
                weight=weight,
                household=household,
                sensitive=sensitive_list,
                missing=missing,
                method=method,
                na_values=na_list,
                out=out,
            )
            _print_summary(file, out, key_list, rows, engine=result.engine)
            return
        records, rows = assess_file(
            file,
            keys=key_list,
            weight=weight,
            household=household,
            sensitive=sensitive_list,
            suda2=suda2,
            missing=missing,
            method=method,
            na_values=na_list,
        )
        if out is not None:
            write_data(records, out)
    _print_summary(file, out, key_list, rows)
