"""``sdckit table JOB.toml``: protect a statistical table by cell suppression (a job file).

The job names the input (microdata aggregated into a table, or a table given one row per
cell), the dimensions with optional hierarchies, the sensitivity rules, the secondary
suppression method and the outputs; ``docs/job-files.md`` describes the format.  Everything is
validated before the work (:func:`sdckit.jobs.load_table_job`); a bad job (also one whose
output is its input file) and a table no pattern can protect exit with status 2 and a one-line
message.  Every pattern is audited (in check mode without an ``[audit]`` section); when the
audit finds an under-protected cell, neither the published table nor the external report is
written and the status is 1.

``sdckit table BATCH.arb`` runs a tau-ARGUS batch file instead: every ``<SPECIFYTABLE>`` is a
table job (:func:`sdckit.jobs.tauargus.load_arb_jobs`, all validated before the first runs),
run in order and printed like a TOML job; the status is 1 when the audit of any table failed.
Tables of the batch built from the same records with the same response share cells and are
protected together as linked tables (:func:`sdckit.jobs.run_table_jobs`).  ``sdckit table
A.toml B.toml ...`` runs several jobs the same way (all validated first; two jobs may not
write the same file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sdckit.cli._common import fail, progress_bar, reported_errors, stdout_console

__all__ = ["table_command"]


def _print_outcome(console: Any, job: Any, outcome: Any, titles: list[str] | None = None) -> bool:
    """Print the summary of one table job and what it wrote; True when the audit passed."""
    from rich.table import Table as RichTable

    from sdckit._results import format_value

    table, result, checked, written = outcome
    summary = RichTable(title=job.title, title_justify="left")
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    for label, value in table.summary().rows:
        summary.add_row(label, value if isinstance(value, str) else format_value(value))
    summary.add_row("suppression method", result.method)
    linked = result.details.get("linked_with") if titles is not None else None
    if linked:
        summary.add_row("protected together with", "; ".join(titles[j] for j in linked))
        scheme = str(result.details.get("linked_scheme", "iterative")).replace("_", " ")
        summary.add_row("linked-tables scheme", scheme)
        summary.add_row(
            "joint audit of the linked tables", "passed" if result.protected else "FAILED"
        )
        under_atoms = result.details.get("atom_audit_under_protected")
        if under_atoms is not None:
            summary.add_row(
                "joint audit over the records' code combinations",
                "passed" if under_atoms == 0 else f"FAILED ({under_atoms} primaries)",
            )
        computable = result.details.get("atom_audit_computable")
        if computable is not None:
            summary.add_row(
                "rank test over the records' code combinations (exact disclosure only)",
                "passed" if computable == 0 else f"FAILED ({computable} primaries computable)",
            )
    if result.method == "cta":  # controlled tabular adjustment: its own audit
        summary.add_row(
            "audit of the adjustment",
            "every primary moved by its level, the table adds up" if checked.ok else "FAILED",
        )
    elif checked.intervals == "rank":
        summary.add_row(
            "audit: rank test (exact disclosure only, protection levels not asked)",
            "no primary computable" if checked.ok else "FAILED",
        )
    else:
        mode = "" if job.audit_params is not None else " (check mode)"
        summary.add_row(
            "audit" + mode, "every suppressed cell protected" if checked.ok else "FAILED"
        )
    console.print(summary)
    for p in written:
        console.print(f"Wrote {p}")
    from sdckit.jobs.table_runner import table_refusal

    where = f"{job.title}: " if job.path.suffix.lower() == ".arb" else ""
    refusal = table_refusal(
        checked, outcome.withheld, joint_ok=outcome.joint_ok, details=result.details, where=where
    )
    if refusal is not None:
        typer.echo(f"Error: {refusal}", err=True)
    return bool(checked.ok) and bool(outcome.joint_ok)


def _check_distinct_outputs(jobs: list[Any]) -> None:
    """Refuse jobs of one run that write the same file (one would overwrite the other)."""
    from sdckit.errors import ParameterError

    seen: dict[Path, Any] = {}
    for job in jobs:
        for p in (job.output_table, job.output_full, job.report_internal, job.report_external):
            if p is None:
                continue
            other = seen.setdefault(p.resolve(), job)
            if other is not job:
                raise ParameterError(
                    f"The jobs {other.title!r} and {job.title!r} write the same file "
                    f"{p.name!r}; give each job its own outputs."
                )


def table_command(
    job_files: Annotated[
        list[Path],
        typer.Argument(
            help="The table job file (TOML), or a tau-ARGUS batch file (.arb); several files "
            "are run together (tables of one file protected as linked tables)."
        ),
    ],
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (no table method is random yet).")
    ] = None,
) -> None:
    """Protect a statistical table: sensitivity rules, secondary suppression, audit."""
    from sdckit._validation import check_int
    from sdckit.errors import SdcError
    from sdckit.jobs import load_table_job, run_table_job, run_table_jobs
    from sdckit.jobs.tauargus import load_arb_jobs

    console = stdout_console()
    batch = any(f.suffix.lower() == ".arb" for f in job_files)
    with reported_errors():
        if seed is not None:
            check_int(seed, "--seed", minimum=0)
        jobs = []
        for job_file in job_files:
            if job_file.suffix.lower() == ".arb":
                jobs.extend(load_arb_jobs(job_file))
            else:
                jobs.append(load_table_job(job_file))
        _check_distinct_outputs(jobs)
    ok = True
    if len(jobs) > 1:
        # tables of one file share cells: run_table_jobs protects them together
        with reported_errors(), progress_bar(console) as progress:
            outcomes = run_table_jobs(jobs, progress=progress)
        # a batch's tables by their number in it ("table 2"), other jobs by their title
        titles = [
            job.title.rsplit(", ", 1)[-1]
            if job.path.suffix.lower() == ".arb" and len(job_files) == 1
            else job.title
            for job in jobs
        ]
        for job, outcome in zip(jobs, outcomes, strict=True):
            ok = _print_outcome(console, job, outcome, titles) and ok
        if not ok:
            raise typer.Exit(1)
        return
    for job in jobs:
        with reported_errors():
            try:
                with progress_bar(console) as progress:
                    outcome = run_table_job(job, progress=progress)
            except SdcError as exc:
                if not batch:
                    raise
                raise fail(f"{job.title}: {exc}") from None
        ok = _print_outcome(console, job, outcome) and ok
    if not ok:
        raise typer.Exit(1)
