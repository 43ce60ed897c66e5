"""``sdckit check ORIGINAL RELEASED --job JOB``: the independent release check of a file.

Reads the original as the job reads its input (the job's ``[input]`` options: ``rows``,
``na_values``, ``numeric_keys``), the released file with every column it has (columns the
original does not have included), and the job file that made it (the column roles, the release
plan and the target).  The records of a file the job wrote in a random order (the default) are
lined up with the original from the seed it was written with (the job's, or ``--seed`` when
``sdckit protect --seed`` wrote it), and the check refuses when they do not line up.  It then
reads the file as the attackers of :func:`sdckit.release.check_release` do.  Exit status 0 when
the file may be released, 1 when it may not, 2 for bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sdckit.cli._common import reported_errors, stdout_console

__all__ = ["check_command"]


def check_command(
    original: Annotated[Path, typer.Argument(help="The original file.")],
    released: Annotated[Path, typer.Argument(help="The released (protected) file.")],
    job: Annotated[
        Path, typer.Option("--job", help="The job file (roles, release plan and target).")
    ],
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="The seed the file was written with (sdckit protect --seed)."),
    ] = None,
) -> None:
    """Check a released file against the original, reading every released column."""
    from rich.table import Table

    from sdckit._results import format_value
    from sdckit.errors import DataError
    from sdckit.io import read_data
    from sdckit.jobs import load_job
    from sdckit.jobs.load import text_columns
    from sdckit.jobs.run import release_seed
    from sdckit.jobs.wording import finding_line
    from sdckit.release import ReleaseTarget, check_file, released_order, verify_alignment

    console = stdout_console()
    with reported_errors():
        spec = load_job(job, seed=seed, input_file=original, writes=False)
        md = spec.microdata
        # the released file read with the job's rule of which columns are text
        numeric_keys = spec.tables.get("input", {}).get("numeric_keys", [])
        text = text_columns(spec.tables.get("roles", {}), numeric_keys)
        written = read_data(released, text_columns=text)
        plan = spec.release_plan
        order = None
        if plan.order == "shuffled":
            if spec.seed is None:
                raise DataError(
                    "The job has no seed, so the random record order of the released file "
                    "cannot be rebuilt; give the seed it was written with (--seed), or release "
                    'with order = "original".'
                )
            order = released_order(plan, md, release_seed(spec))
        unchanged = [c for c in written.columns if c in md.frame.columns and c != md.household]
        verify_alignment(md.frame, written, order, unchanged)
        target = spec.target if spec.target is not None else ReleaseTarget.default()
        result = check_file(md, written, plan, target, order=order)
    table = Table(title=f"Release check of {released.name}", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in result.summary().rows:
        table.add_row(label, value if isinstance(value, str) else format_value(value))
    console.print(table)
    if spec.target is None:
        console.print(f"  The job gives no [target]: the default ({target.describe()}).",
                      markup=False)  # fmt: skip
    for line in result.target_lines():
        console.print(f"  {line}", soft_wrap=True, markup=False)
    if result.risk is not None:
        console.print(f"  Intruder model: {result.risk.intruder}.", soft_wrap=True, markup=False)
    extra = [c for c in written.columns if c not in md.frame.columns]
    if extra:
        console.print(
            "  Columns of the released file that the original does not have (read as well): "
            + ", ".join(extra), soft_wrap=True, markup=False,
        )  # fmt: skip
    for finding in result.findings:
        console.print(f"  {finding_line(finding)}", soft_wrap=True, markup=False)
    if not result.ok:
        typer.echo("Error: the released file must not be published as it is.", err=True)
        raise typer.Exit(1)
