"""``sdckit risk FILE --keys ... --out OUT``: disclosure risk of every record of a file.

Reads any file :mod:`sdckit.io` reads, prints the file-level figures as a table and writes one
row per input record, in input order: ``fk``, ``Fk_hat``, ``risk``; with ``--household`` also
``household_risk``; with ``--suda2`` ``suda_score`` and ``dis_suda_score``; with
``--sensitive`` the l-diversity columns ``l_distinct_<s>``, ``l_entropy_<s>`` and
``l_recursive_<s>``.

Without ``--engine`` (or with ``--engine auto``) the command chooses: a Parquet file whose
columns used would take more than a share of the free memory runs on the streaming engine,
anything else in process; the summary says which and why.  ``--engine polars|streaming|dask|
spark`` forces an engine (:mod:`sdckit.cli._risk_engine`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sdckit.cli._common import (
    check_output_columns,
    reported_errors,
    split_columns,
    stdout_console,
)
from sdckit.cli._risk_engine import ENGINES, assess_file_on_engine, auto_engine
from sdckit.errors import DataError, ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import polars as pl

__all__ = ["ENGINES", "assess_file", "assess_file_on_engine", "auto_engine", "risk_command"]


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
            help="Compute on an engine: polars, streaming, dask or spark (the records stay on "
            "it; --out must then be .parquet; no --suda2). Default: auto (a Parquet file too "
            "large for the free memory streams, anything else runs in process; the summary "
            "says which and why).",
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
        if out is not None and out.is_dir() and engine is None:
            raise DataError(f"The --out file {str(out)!r} is a directory; give a file name.")
        if out is not None and not out.is_dir():  # an engine's folder: checked by the engine
            from sdckit.io import check_output_path

            check_output_path(out, "--out file")  # before any work
            if not out.parent.is_dir():
                raise DataError(
                    f"The directory of the --out file, {str(out.parent)!r}, does not exist; "
                    "create it first."
                )
        na_list = (
            None if na_values is None else [v.strip() for v in na_values.split(",") if v.strip()]
        )
        if engine is None or engine == "auto":
            wanted = [*key_list, *(c for c in (weight, household) if c), *sensitive_list]
            choice = auto_engine(file, wanted, suda2=suda2, out=out)
            engine = None if choice.engine == "polars" else choice.engine
            label = f"{choice.engine if engine else 'in memory'} ({choice.reason})"
        else:
            label = f"{engine} (asked for)"
        if engine is not None:
            if suda2:
                raise ParameterError(
                    "The --suda2 option cannot run on an engine (SUDA needs the records in "
                    "memory); drop --engine, or drop --suda2."
                )
            _, rows = assess_file_on_engine(
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
            _print_summary(file, out, key_list, rows, engine=label)
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
    _print_summary(file, out, key_list, rows, engine=label)
