"""``sdckit protect JOB.toml``: run a whole protection job (see ``docs/job-files.md``).

The job file names the input file and its column roles, the protection steps with their
parameters, a risk target, an optional R-U map of candidate methods, and the outputs (the
protected file, the internal and the external HTML report).  The whole job is validated before
any work (:func:`sdckit.jobs.load_job`); a bad job exits with status 2 and a one-line message.
When the protected file misses the risk target, or the independent release check finds a
protected value that the released columns give back (or a direct identifier), only the internal
report is written and the status is 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sdckit.cli._common import progress_bar, reported_errors, stdout_console, summary_table

__all__ = ["EXIT_TARGET_MISSED", "protect_command"]

#: Exit status when the protected file does not meet the job's risk target.
EXIT_TARGET_MISSED = 1


def protect_command(
    job_file: Annotated[Path, typer.Argument(help="The job file (TOML), see docs/job-files.md.")],
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed of the random steps (overrides the job's seeds)."),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Write the outputs into this directory instead."),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="auto, polars (in memory), streaming, dask or spark (overrides [input] engine).",
        ),
    ] = None,
) -> None:
    """Run a protection job file: steps, risk target, R-U map, protected file and reports."""
    from sdckit._console import print_job_result
    from sdckit.jobs import load_job, run_job
    from sdckit.jobs.engine_job import plan_engine_job

    console = stdout_console()
    with reported_errors():
        chosen, reason, engine_job = plan_engine_job(job_file, engine, seed, out_dir)
        if chosen is not None and engine_job is not None:
            _run_on_engine(engine_job, chosen, reason, console)
            return
        if engine is not None:
            console.print(f"In memory: {reason}.")
        job = load_job(job_file, seed=seed, output_dir=out_dir)
        with progress_bar(console) as progress:
            outcome = run_job(job, progress=progress)
    print_job_result(job, outcome, console)
    if outcome.refusal is not None:
        if outcome.target_met is False:
            description = outcome.target.describe() if outcome.target is not None else ""
            message = (
                f"the released file misses the risk target ({description}); only the "
                "internal report was written."
            )
        else:
            message = f"the protected file was not written: {outcome.refusal}"
        typer.echo(f"Error: {' '.join(message.split())}", err=True)
        raise typer.Exit(EXIT_TARGET_MISSED)


def _run_on_engine(job: Any, engine: str, reason: str, console: Any) -> None:
    """The job on an engine: progress per step, the protected folder, the k recount."""
    from sdckit.jobs.engine_job import run_engine_job

    console.print(f"Running on {reason}.")
    with progress_bar(console) as progress:
        result = run_engine_job(job, engine, progress=progress)
    console.print(f"Records: {result.records}")
    if result.k is not None:
        console.print(
            f"Records below k = {result.k} in the released file (recounted on the engine): "
            f"{result.k_violations}"
        )
    if result.check is not None:
        _print_summary(console, result.check.summary())
    if result.output is not None:
        console.print(f"Protected file (Parquet part files): {result.output}")
    for path in result.reports:
        console.print(f"Wrote {path}")
    if result.check is not None and not result.check.ok:
        check = result.check
        if not check.target_met:
            why = "the risk target is missed"
        elif check.k_violations:
            why = f"{check.k_violations} record(s) below k"
        else:
            why = "the attacks on the sample got protected values back (see the summary)"
        typer.echo(
            f"Error: the release check refused the released file: {why}; it was not written.",
            err=True,
        )
        raise typer.Exit(EXIT_TARGET_MISSED)
    if result.k_violations:
        typer.echo(
            f"Error: the released file has {result.k_violations} record(s) below k = {result.k}; "
            "it was not written.",
            err=True,
        )
        raise typer.Exit(EXIT_TARGET_MISSED)


def _print_summary(console: Any, summary: Any) -> None:
    """A :class:`~sdckit._results.Summary` as a table, its notes below it."""
    console.print(summary_table(summary.title, summary.rows))
    for note in summary.notes:
        console.print(f"  {note}", soft_wrap=True, markup=False)
