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
from typing import Annotated

import typer

from sdckit.cli._common import progress_bar, reported_errors, stdout_console

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
) -> None:
    """Run a protection job file: steps, risk target, R-U map, protected file and reports."""
    from sdckit._console import print_job_result
    from sdckit.jobs import load_job, run_job

    console = stdout_console()
    with reported_errors():
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
