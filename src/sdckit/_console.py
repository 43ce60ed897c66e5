"""Console output shared by the faces (the command line and the demo): rich tables."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from sdckit._results import format_value

if TYPE_CHECKING:
    from sdckit.jobs import Job, JobResult

__all__ = ["print_job_result", "progress_bar"]


def print_job_result(job: Job, result: JobResult, console: Console) -> None:
    """Print the before/after figures, the target lines, the R-U map and the files written."""
    from sdckit.jobs.wording import finding_line

    table = Table(
        title=f"Protection of {job.input_name}", title_justify="left", caption_justify="left"
    )
    table.add_column("measure")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for key, before, after in result.comparison():
        table.add_row(key.replace("_", " "), format_value(before), format_value(after))
    console.print(table)
    from sdckit.jobs.auto import search_lines

    for line in search_lines(result.session):  # the transformation automatic protection chose
        console.print(f"  {line}", soft_wrap=True, markup=False)
    for note in job.notes:
        console.print(f"  Note: {note}", soft_wrap=True, markup=False)
    for line in result.target_lines:
        console.print(f"  {line}", soft_wrap=True, markup=False)
    if result.release is not None:
        check = result.release.check
        counts = check.counts()
        k_part = f"{counts['k_violations']} records below {check.k}-anonymity, " if check.k else ""
        console.print(
            "Release check of the file as written: "
            + k_part
            + f"{counts['determined_values']} protected values given back by other columns, "
            f"{counts['household_values']} by the household, "
            f"{counts['perturbed_values']} perturbed numbers estimated more closely, "
            f"{counts['identifiers']} identifiers" + ("" if check.ok else " (NOT releasable)"),
            soft_wrap=True,
        )
        session = result.session
        for line in check.reconcile(
            session.original.keys,
            session.figures,
            session.original.household is not None,
        ):
            console.print(f"  {line}", soft_wrap=True, markup=False)
        for finding in check.findings[:10]:
            console.print(f"  {finding_line(finding)}", soft_wrap=True, markup=False)
        unmentioned = result.release.unmentioned
        if unmentioned:
            console.print(
                "Columns the job does not mention (released as they are): "
                + ", ".join(unmentioned),
                soft_wrap=True,
            )
    ru = result.ru_map
    if ru is not None:
        console.print(f"R-U map: {ru.n_candidates} candidates; best: {ru.best}")
    for p in result.written:
        console.print(f"Wrote {p}")


@contextlib.contextmanager
def progress_bar(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress display and the ``progress(stage, done, total)`` callback feeding it.

    Each stage gets its own bar, created the first time the stage reports.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=max(total, 1))
            bar.update(tasks[stage], completed=done, total=max(total, 1))

        yield update
