"""``sdckit protect JOB.toml``: run a whole protection job (see ``docs/job-files.md``).

The job file names the input file and its column roles, the protection steps with their
parameters, a risk target, an optional R-U map of candidate methods, and the outputs (the
protected file, the internal and the external HTML report).  The whole job is validated before
any work; a bad job exits with status 2 and a one-line message.  When the protected file
misses the risk target, only the internal report is written and the status is 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sdckit._results import format_value
from sdckit.cli._common import reported_errors, stdout_console
from sdckit.cli._job import Job, load_job

__all__ = ["JobOutcome", "print_outcome", "protect_command", "run_job"]

#: Exit status when the protected file does not meet the job's risk target.
EXIT_TARGET_MISSED = 1


@dataclass(frozen=True)
class JobOutcome:
    """What a job produced: the session, the R-U map, the target check and the files written."""

    session: Any
    ru_map: Any
    target_met: bool | None
    target_lines: list[str]
    written: list[Path]


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _counting(fn: Callable[[Any, Any], float], advance: Callable[[], None], name: str) -> Any:
    def measure(original: Any, protected: Any) -> float:
        value = fn(original, protected)
        advance()
        return value

    measure.__name__ = name
    return measure


def _run_ru_map(job: Job, session: Any, progress: Progress) -> Any:
    from sdckit.utility.rumap import risk_measure, ru_map

    spec = job.ru_map
    assert spec is not None
    runs = 1 + sum(len(spec.seeds) if c.method.stochastic else 1 for c in spec.candidates)
    task = progress.add_task("R-U map", total=runs)
    risk = _counting(
        risk_measure(spec.risk), lambda: progress.advance(task), spec.risk
    )  # counts every run of a candidate (and the original)
    return ru_map(
        session.original,
        [(c.label, c.method) for c in spec.candidates],
        risk=risk,
        loss=spec.loss,
        seeds=spec.seeds,
        max_risk=spec.max_risk,
    )


def run_job(job: Job, console: Console | None = None) -> JobOutcome:
    """Run a validated job: the steps, the target check, the R-U map and the outputs.

    Parameters
    ----------
    job : Job
        From :func:`sdckit.cli._job.load_job`.
    console : rich.console.Console, optional
        Where progress bars and messages go (default: standard output).

    Returns
    -------
    JobOutcome
    """
    from sdckit.io import write_data
    from sdckit.report import write_report
    from sdckit.session import Session

    console = console or stdout_console()
    written: list[Path] = []
    with _progress(console) as progress:
        task = progress.add_task("Assessing the input", total=1)
        session = Session(job.data, **job.roles)
        progress.advance(task)
        steps = progress.add_task("Protection steps", total=len(job.steps))
        for spec in job.steps:
            progress.update(steps, description=f"Step {spec.number}: {spec.method.name}")
            session.apply(spec.method)
            progress.advance(steps)
        progress.update(steps, description="Protection steps")
        ru = _run_ru_map(job, session, progress) if job.ru_map is not None else None
        met: bool | None = None
        lines: list[str] = []
        if job.target is not None:
            met, lines = job.target.check(session.current)
        target = (job.target.describe(), bool(met)) if job.target is not None else None
        outputs = [
            p for p in (job.output_data, job.report_internal, job.report_external) if p is not None
        ]
        writing = progress.add_task("Writing outputs", total=len(outputs))
        if job.report_internal is not None:
            job.report_internal.parent.mkdir(parents=True, exist_ok=True)
            write_report(
                session, job.report_internal, kind="internal", ru_map=ru, title=job.title,
                target=target, plots=job.plots,
            )  # fmt: skip
            written.append(job.report_internal)
            progress.advance(writing)
        if met is not False:
            if job.output_data is not None:
                job.output_data.parent.mkdir(parents=True, exist_ok=True)
                write_data(session.current.frame, job.output_data)
                written.append(job.output_data)
                progress.advance(writing)
            if job.report_external is not None:
                job.report_external.parent.mkdir(parents=True, exist_ok=True)
                write_report(session, job.report_external, kind="external", title=job.title)
                written.append(job.report_external)
                progress.advance(writing)
    return JobOutcome(session, ru, met, lines, written)


def print_outcome(job: Job, outcome: JobOutcome, console: Console) -> None:
    session = outcome.session
    table = Table(
        title=f"Protection of {job.input_name}", title_justify="left", caption_justify="left"
    )
    table.add_column("measure")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    before = session.initial_figures
    after = session.history[-1].figures if session.history else before
    for key in (
        "records",
        "sample_uniques",
        "k3_violations",
        "expected_reidentifications",
        "global_risk_pct",
        "share_keys_changed",
        "sse_sst_pct",
    ):
        if key in after:
            table.add_row(
                key.replace("_", " "),
                format_value(before.get(key, "")),
                format_value(after[key]),
            )
    console.print(table)
    for line in outcome.target_lines:
        console.print(f"  {line}")
    if outcome.ru_map is not None:
        best = outcome.ru_map.best
        console.print(f"R-U map: {outcome.ru_map.points.height - 1} candidates; best: {best}")
    for p in outcome.written:
        console.print(f"Wrote {p}")


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
    console = stdout_console()
    with reported_errors():
        job = load_job(job_file, seed=seed, output_dir=out_dir)
        outcome = run_job(job, console)
    print_outcome(job, outcome, console)
    if outcome.target_met is False:
        typer.echo(
            f"Error: the protected file misses the risk target ({job.target.describe()}); "  # type: ignore[union-attr]
            "only the internal report was written.",
            err=True,
        )
        raise typer.Exit(EXIT_TARGET_MISSED)
