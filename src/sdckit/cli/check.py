"""``sdckit check ORIGINAL RELEASED --job JOB``: the independent release check of a file.

Reads the original and the released file and the job file that made it (for the column roles,
the release plan and the target), and counts what an attacker can read from the released file
(:func:`sdckit.release.check_release`): k-anonymity violations and the target's risk measures
recomputed from the file, protected values that other released columns or the household give
back, and direct identifiers.  Exit status 0 when the file may be released, 1 when it may not,
2 for bad input.  A file the job wrote in a random record order (the default) is put back into
the original order from the job's seed.
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
) -> None:
    """Check a released file against the original, reading every released column."""
    import numpy as np
    from rich.table import Table

    from sdckit._results import format_value
    from sdckit.errors import DataError
    from sdckit.io import read_data
    from sdckit.jobs import load_job
    from sdckit.jobs.run import release_seed
    from sdckit.microdata import Microdata
    from sdckit.release import ReleaseTarget, check_file, released_order

    console = stdout_console()
    with reported_errors():
        spec = load_job(job)
        roles = spec.microdata.roles()
        text = [*roles["keys"], *roles["linked"], *roles["household_level"]]
        md = Microdata(read_data(original, text_columns=text), **roles)
        released_frame = read_data(released, text_columns=text)
        if released_frame.height != md.n_records:
            raise DataError(
                "The released file has another number of records than the original; check "
                "the file names."
            )
        if spec.release_plan.order == "shuffled":
            if spec.seed is None:
                raise DataError(
                    "The job has no seed, so the random record order of the released file "
                    'cannot be rebuilt; give the job a seed, or release with order = "original".'
                )
            order = released_order(spec.release_plan, md, release_seed(spec))
            inverse = np.argsort(order)
            released_frame = released_frame[inverse]
        target = spec.target.for_release() if spec.target is not None else ReleaseTarget()
        result = check_file(md, released_frame, spec.release_plan, target)
    table = Table(title=f"Release check of {released.name}", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in result.summary().rows:
        table.add_row(label, value if isinstance(value, str) else format_value(value))
    console.print(table)
    for finding in result.findings:
        console.print(f"  {finding.how}", soft_wrap=True)
    if not result.ok:
        typer.echo("Error: the released file must not be published as it is.", err=True)
        raise typer.Exit(1)
