"""``sdckit table JOB.toml``: protect a statistical table by cell suppression (a job file).

The job names the input (microdata aggregated into a table, or a table given one row per
cell), the dimensions with optional hierarchies, the sensitivity rules, the secondary
suppression method and the outputs; ``docs/job-files.md`` describes the format.  Everything is
validated before the work; a bad job exits with status 2 and a one-line message.  When the
audit finds an under-protected cell, the published table is not written and the status is 1.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table as RichTable

from sdckit._results import format_value
from sdckit._validation import check_columns_exist, check_int
from sdckit.cli._common import reported_errors, stdout_console
from sdckit.cli._job import _path, _table, _unknown_keys, check_call_params
from sdckit.errors import DataError, ParameterError, SdcError

__all__ = ["TableJob", "load_table_job", "run_table_job", "table_command"]

_SECTIONS = {"title", "input", "table", "rules", "suppression", "audit", "output"}


def _rules() -> dict[str, type]:
    from sdckit.tables import Dominance, MinFrequency, PPercent, PQRule, ZeroCells

    return {
        "min_frequency": MinFrequency,
        "dominance": Dominance,
        "p_percent": PPercent,
        "pq": PQRule,
        "zero_cells": ZeroCells,
    }


def _suppressors() -> dict[str, Callable[..., Any]]:
    from sdckit.tables import suppress_hypercube, suppress_modular, suppress_optimal

    return {
        "hypercube": suppress_hypercube,
        "modular": suppress_modular,
        "optimal": suppress_optimal,
    }


@dataclass(frozen=True)
class TableJob:
    """A validated table job."""

    path: Path
    title: str
    table: Any
    rules: tuple[Any, ...]
    suppression: str
    suppression_params: dict[str, Any]
    audit_params: dict[str, Any] | None
    output_table: Path | None
    output_full: Path | None


def _build_table(base: Path, input_spec: dict[str, Any], spec: dict[str, Any]) -> Any:
    from sdckit.io import read_data
    from sdckit.tables import Table

    _unknown_keys(input_spec, {"file", "format", "kind"}, "input")
    _unknown_keys(
        spec,
        {"dimensions", "hierarchies", "value", "weight", "n_top", "n_contributors", "top"},
        "table",
    )
    if "file" not in input_spec:
        raise ParameterError("[input] of the table job needs a 'file'.")
    kind = input_spec.get("kind", "microdata")
    if kind not in ("microdata", "cells"):
        raise ParameterError('[input] \'kind\' must be "microdata" or "cells".')
    frame = read_data(
        _path(base, input_spec["file"], "input file"), format=input_spec.get("format")
    )
    dims = spec.get("dimensions")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError("[table] 'dimensions' must be a list of column names.")
    hierarchies = spec.get("hierarchies", {})
    if not isinstance(hierarchies, dict):
        raise ParameterError("[table] 'hierarchies' must be a table: column -> hierarchy.")
    for name in hierarchies:
        if name not in dims:
            raise ParameterError(f"[table.hierarchies] {name!r} is not one of the dimensions.")
    value = spec.get("value")
    for key in ("value", "weight", "n_contributors"):
        if key in spec and not isinstance(spec[key], str):
            raise ParameterError(f"[table] {key!r} must be a column name.")
    cols = [*dims, *(spec[k] for k in ("value", "weight", "n_contributors") if k in spec)]
    check_columns_exist(cols, list(frame.columns), "table")
    dimensions = {d: hierarchies.get(d) for d in dims}
    if kind == "microdata":
        if "n_contributors" in spec or "top" in spec:
            raise ParameterError(
                "[table] 'n_contributors' and 'top' are for kind = \"cells\" inputs."
            )
        n_top = check_int(spec.get("n_top", 3), "table.n_top", minimum=1)
        return Table.from_microdata(
            frame, dimensions, value, weight=spec.get("weight"), n_top=n_top
        )
    if value is None:
        raise ParameterError("[table] a kind = \"cells\" input needs the 'value' column.")
    return Table.from_frame(
        frame, dimensions, value, n_contributors=spec.get("n_contributors"), top=spec.get("top")
    )


def _instantiate_rules(specs: Any) -> tuple[Any, ...]:
    if not isinstance(specs, list) or not specs:
        raise ParameterError("The table job needs at least one [[rules]] table.")
    known = _rules()
    rules = []
    for i, spec in enumerate(specs, start=1):
        where = f"rule {i}"
        if not isinstance(spec, dict) or "rule" not in spec:
            raise ParameterError(f"{where}: a [[rules]] table needs a 'rule' name.")
        name = spec["rule"]
        if name not in known:
            raise ParameterError(
                f"{where}: unknown rule {name!r}; known rules: {', '.join(known)}."
            )
        params = {k: v for k, v in spec.items() if k != "rule"}
        cls = known[name]
        check_call_params(cls.__init__, params, f"{where} ({name})", cls.__name__)
        try:
            rules.append(cls(**params))
        except SdcError as exc:
            raise type(exc)(f"{where} ({name}): {exc}") from None
    return tuple(rules)


def load_table_job(path: str | Path) -> TableJob:
    """Read and validate a table job file; raise an :class:`SdcError` for anything wrong."""
    job_path = Path(path)
    if not job_path.is_file():
        raise DataError(f"The job file {str(job_path)!r} does not exist; check the path.")
    try:
        spec = tomllib.loads(job_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"The job file {job_path.name!r} is not valid TOML: {exc}.") from None
    _unknown_keys(spec, _SECTIONS, "top level")
    base = job_path.parent
    output = _table(spec.get("output"), "output")
    _unknown_keys(output, {"table", "table_full"}, "output")
    out_table = _path(base, output["table"], "output table") if "table" in output else None
    out_full = _path(base, output["table_full"], "output table") if "table_full" in output else None
    if out_table is None and out_full is None:
        raise ParameterError("[output] needs 'table' (published) or 'table_full' (with status).")
    for p in (out_table, out_full):
        if p is not None and p.suffix.lower() not in (".csv", ".parquet"):
            raise ParameterError("[output] tables must be .csv or .parquet files.")
    rules = _instantiate_rules(spec.get("rules"))
    supp = dict(_table(spec.get("suppression", {"method": "hypercube"}), "suppression"))
    method = supp.pop("method", "hypercube")
    suppressors = _suppressors()
    if method not in suppressors:
        raise ParameterError(
            f"[suppression] unknown method {method!r}; choose one of {', '.join(suppressors)}."
        )
    check_call_params(suppressors[method], supp, "[suppression]", f"suppress_{method}", ("table",))
    audit_params = None
    if "audit" in spec:
        from sdckit.tables import audit

        audit_params = dict(_table(spec["audit"], "audit"))
        check_call_params(audit, audit_params, "[audit]", "audit", ("table",))
    table = _build_table(
        base, _table(spec.get("input"), "input"), _table(spec.get("table"), "table")
    )
    title = spec.get("title", "Table protection")
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    return TableJob(job_path, title, table, rules, method, supp, audit_params, out_table, out_full)


def run_table_job(
    job: TableJob, console: Console | None = None
) -> tuple[Any, Any, Any, list[Path]]:
    """Apply the rules, the secondary suppression and the audit; write the outputs.

    Returns
    -------
    (protected table, SuppressionResult, AuditResult or None, files written)
    """
    from rich.progress import Progress

    from sdckit.tables import apply_rules, audit

    console = console or stdout_console()
    with Progress(console=console) as progress:
        task = progress.add_task("Table protection", total=3)
        marked = apply_rules(job.table, list(job.rules))
        progress.advance(task)
        result = _suppressors()[job.suppression](marked, **job.suppression_params)
        progress.advance(task)
        checked = audit(result.table, **job.audit_params) if job.audit_params is not None else None
        progress.advance(task)
    written = []
    if job.output_full is not None:
        job.output_full.parent.mkdir(parents=True, exist_ok=True)
        written.append(result.table.write(job.output_full, published=False))
    if job.output_table is not None and (checked is None or checked.ok):
        job.output_table.parent.mkdir(parents=True, exist_ok=True)
        written.append(result.table.write(job.output_table, published=True))
    return result.table, result, checked, written


def table_command(
    job_file: Annotated[Path, typer.Argument(help="The table job file (TOML).")],
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (no table method is random yet).")
    ] = None,
) -> None:
    """Protect a statistical table: sensitivity rules, secondary suppression, audit."""
    console = stdout_console()
    with reported_errors():
        if seed is not None:
            check_int(seed, "--seed", minimum=0)
        job = load_table_job(job_file)
        table, result, checked, written = run_table_job(job, console)
    summary = RichTable(title=job.title, title_justify="left")
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    for label, value in table.summary().rows:
        summary.add_row(label, value if isinstance(value, str) else format_value(value))
    summary.add_row("suppression method", result.method)
    if checked is not None:
        summary.add_row("audit", "every suppressed cell protected" if checked.ok else "FAILED")
    console.print(summary)
    for p in written:
        console.print(f"Wrote {p}")
    if checked is not None and not checked.ok:
        typer.echo(
            f"Error: the audit found {len(checked.under_protected)} under-protected cells; "
            "the published table was not written.",
            err=True,
        )
        raise typer.Exit(1)
