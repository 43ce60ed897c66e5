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
protected together as linked tables (:func:`sdckit.jobs.run_table_jobs`).  Its
``<WRITETABLE>`` files are written in tau-ARGUS's formats; a table rounded (``RND``) or
perturbed by the cell key method (``CKM``) is run on its own.

``sdckit table JOB.toml --write-arb DIR`` writes the job as a tau-ARGUS batch instead of
running it (:func:`sdckit.jobs.tauargus.write_arb`): the table with its primaries as tabular
input, its hierarchies and a batch with the suppression method's counterpart, to rerun in
tau-ARGUS (or with ``sdckit table DIR/JOB.arb``).  ``sdckit table
A.toml B.toml ...`` runs several jobs the same way (all validated first; two jobs may not
write the same file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sdckit.cli._common import fail, progress_bar, reported_errors, stdout_console, summary_table

__all__ = ["table_command"]


def _print_outcome(console: Any, job: Any, outcome: Any, titles: list[str] | None = None) -> bool:
    """Print the summary of one table job and what it wrote; True when the audit passed."""
    from sdckit._results import format_value

    if getattr(outcome, "perturbation", None) is not None:  # a [cellkey] job
        return _print_cellkey(console, job, outcome)
    table, result, checked, written = outcome
    engine = getattr(job, "engine", None)  # where the table was built and why
    caption = f"engine: {engine}" if engine else None
    summary: Any = summary_table(job.title, table.summary().rows, caption)
    summary.add_row("suppression method", result.method)
    limited = getattr(result, "time_limited", None)
    if limited:
        # the pattern depends on the machine and its load: say so and name the parameter
        summary.add_row(
            "cut short by a wall-clock limit",
            f"{limited} (the pattern may differ on another run)",
        )
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
        insider = getattr(checked, "insider_audit", None)
        if insider is not None:
            below = len(insider.under_protected)
            summary.add_row(
                f"insider audit ({insider.n_units} {insider.level}s attacking)",
                "passed" if insider.ok else f"FAILED ({below} primaries)",
            )
        added = result.details.get("repaired_for_insiders")
        if added:
            summary.add_row("secondaries added for the insiders", format_value(added))
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


def _print_cellkey(console: Any, job: Any, outcome: Any) -> bool:
    """Print the summary of a cell key job (a perturbed table) and what it wrote."""
    console.print(summary_table(job.title, outcome.perturbation.summary().rows))
    for p in outcome.written:
        console.print(f"Wrote {p}")
    return True


def _check_distinct_outputs(jobs: list[Any]) -> None:
    """Refuse jobs of one run that write the same file (one would overwrite the other)."""
    from sdckit.errors import ParameterError

    seen: dict[Path, Any] = {}
    for job in jobs:
        named = ("output_table", "output_full", "report_internal", "report_external")
        batch_files = [p for _, _, p in getattr(job, "writes", ())]  # a tau-ARGUS batch's
        for p in [getattr(job, name, None) for name in named] + batch_files:
            if p is None:
                continue
            other = seen.setdefault(p.resolve(), job)
            if other is not job:
                raise ParameterError(
                    f"The jobs {other.title!r} and {job.title!r} write the same file "
                    f"{p.name!r}; give each job its own outputs."
                )


def _print_perturbations(console: Any, jobs: list[Any], outcomes: list[Any]) -> None:
    """Write and print the rounded (RND) and cell-key (CKM) tables of a batch."""
    from sdckit.jobs.tauargus import write_arb_outputs

    for job, outcome in zip(jobs, outcomes, strict=True):
        with reported_errors():
            _print_perturbation(console, job, write_arb_outputs(job, outcome))


def _print_perturbation(console: Any, job: Any, outcome: Any) -> None:
    """Print what a rounded (RND) or cell-key (CKM) table of a batch changed and wrote."""
    summary: Any = summary_table(job.title, outcome.result.summary().rows)
    if outcome.audit is not None:
        summary.add_row(
            "cells disclosed exactly (rounding audit)", str(int(outcome.audit.exact.sum()))
        )
    console.print(summary)
    for p in outcome.written:
        console.print(f"Wrote {p}")


def _write_batches(console: Any, jobs: list[Any], directory: Path) -> None:
    """``--write-arb``: each TOML job written as a tau-ARGUS batch."""
    from sdckit.errors import ParameterError
    from sdckit.jobs.tauargus import write_arb

    with reported_errors():
        if any(job.path.suffix.lower() == ".arb" for job in jobs):
            raise ParameterError("--write-arb writes TOML table jobs; a batch is one already.")
        if any(getattr(job, "cellkey", False) for job in jobs):
            raise ParameterError(
                "--write-arb writes suppression table jobs; a [cellkey] job has no tau-ARGUS "
                "batch form here yet: run it with sdckit table."
            )
        stems = [job.path.stem for job in jobs]
        if len(set(stems)) != len(stems):
            raise ParameterError("--write-arb: two jobs have the same file name; rename one.")
        for job in jobs:
            for p in write_arb(job, directory):
                console.print(f"Wrote {p}")


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
    write_arb: Annotated[
        Path | None,
        typer.Option(
            "--write-arb",
            help="Write each job as a tau-ARGUS batch (tabular input with its primaries) into "
            "this folder instead of running it.",
        ),
    ] = None,
) -> None:
    """Protect a statistical table: sensitivity rules, secondary suppression, audit."""
    from sdckit._validation import check_int
    from sdckit.errors import SdcError
    from sdckit.jobs import load_table_job, run_table_jobs
    from sdckit.jobs.cellkey import is_cellkey_job_file, load_cellkey_job, run_cellkey_job
    from sdckit.jobs.tauargus import (
        ArbPerturbationJob,
        load_arb_jobs,
        run_arb_job,
        write_arb_outputs,
    )

    console = stdout_console()
    batch = any(f.suffix.lower() == ".arb" for f in job_files)
    with reported_errors():
        if seed is not None:
            check_int(seed, "--seed", minimum=0)
        jobs = []
        for job_file in job_files:
            if job_file.suffix.lower() == ".arb":
                jobs.extend(load_arb_jobs(job_file))
            elif is_cellkey_job_file(job_file):
                jobs.append(load_cellkey_job(job_file))
            else:
                jobs.append(load_table_job(job_file))
        _check_distinct_outputs(jobs)
        if len(jobs) > 1 and any(getattr(job, "cellkey", False) for job in jobs):
            raise fail("A [cellkey] job (a perturbed table) runs on its own: give its file alone.")
    if write_arb is not None:
        _write_batches(console, jobs, write_arb)
        return
    ok = True
    perturbed = [job for job in jobs if isinstance(job, ArbPerturbationJob)]
    jobs = [job for job in jobs if not isinstance(job, ArbPerturbationJob)]
    done = []  # rounded / cell-key tables: run first, written with the others' outputs
    for job in perturbed:
        with reported_errors():
            try:
                done.append(run_arb_job(job, write=False))
            except SdcError as exc:
                raise fail(f"{job.title}: {exc}") from None
    if not jobs:
        _print_perturbations(console, perturbed, done)
        return
    if len(jobs) > 1:
        # tables of one file share cells: run_table_jobs protects them together
        with reported_errors(), progress_bar(console) as progress:
            outcomes = run_table_jobs(jobs, progress=progress)
            outcomes = [
                write_arb_outputs(job, out) if hasattr(job, "writes") else out
                for job, out in zip(jobs, outcomes, strict=True)
            ]
        # a batch's tables by their number in it ("table 2"), other jobs by their title
        titles = [
            job.title.rsplit(", ", 1)[-1]
            if job.path.suffix.lower() == ".arb" and len(job_files) == 1
            else job.title
            for job in jobs
        ]
        for job, outcome in zip(jobs, outcomes, strict=True):
            ok = _print_outcome(console, job, outcome, titles) and ok
        _print_perturbations(console, perturbed, done)
        if not ok:
            raise typer.Exit(1)
        return
    for job in jobs:
        with reported_errors():
            try:
                with progress_bar(console) as progress:
                    run = run_cellkey_job if getattr(job, "cellkey", False) else run_arb_job
                    outcome = run(job, progress=progress)
            except SdcError as exc:
                if not batch:
                    raise
                raise fail(f"{job.title}: {exc}") from None
        ok = _print_outcome(console, job, outcome) and ok
    _print_perturbations(console, perturbed, done)
    if not ok:
        raise typer.Exit(1)
