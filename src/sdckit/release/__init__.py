"""Releasing a protected file: the release plan and the independent release check.

:class:`ReleasePlan` says what happens to every column of the input (released, linked,
household-level, direct identifier, household id, dropped, not mentioned).  :func:`release`
applies the plan to a protected file and runs :func:`check_release`, which reads the result as
an attacker would; :meth:`Release.write` writes the file only when the check passes.

Examples
--------
>>> import polars as pl
>>> from sdckit import Microdata
>>> from sdckit.release import ReleasePlan, release
>>> df = pl.DataFrame({"pid": range(6), "sex": [1, 1, 1, 2, 2, 2], "age": [3, 3, 3, 4, 4, 4]})
>>> md = Microdata(df, keys=["sex", "age"], identifiers=["pid"])
>>> out = release(md, md, ReleasePlan(), k=3, seed=1)
>>> out.check.ok, out.frame.columns, out.output.height
(True, ['sex', 'age'], 6)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import VerificationError
from sdckit.microdata import Microdata
from sdckit.release._align import verify_alignment
from sdckit.release._check import check_release
from sdckit.release._findings import ReleaseFinding, Remedy
from sdckit.release._plan import ReleasePlan, new_household_ids
from sdckit.release._result import AttackResult, ReleaseCheck, ReleaseTarget
from sdckit.release._risk import ReleaseRisk

__all__ = [
    "AttackResult",
    "Release",
    "ReleaseCheck",
    "ReleaseFinding",
    "ReleasePlan",
    "ReleaseRisk",
    "ReleaseTarget",
    "Remedy",
    "check_file",
    "check_release",
    "new_household_ids",
    "release",
    "released_order",
    "verify_alignment",
]


@dataclass(frozen=True)
class Release:
    """A file ready to leave the building, with the check of what it gives away.

    Attributes
    ----------
    frame : polars.DataFrame
        The released file.
    check : ReleaseCheck
    plan : ReleasePlan
    roles : dict of str to str
        The release role of every column of the input.
    """

    frame: pl.DataFrame
    check: ReleaseCheck
    plan: ReleasePlan
    roles: dict[str, str]
    order: Any = None

    @property
    def output(self) -> pl.DataFrame:
        """The file as written: ``frame`` in the plan's record order."""
        return self.frame if self.order is None else self.frame[self.order]

    @property
    def unmentioned(self) -> list[str]:
        """Input columns the plan does not mention (released as they are)."""
        return [c for c, r in self.roles.items() if r.startswith("not mentioned")]

    def refusal(self) -> str | None:
        """Why the file must not be written, in one line of words (None when it may be).

        The first finding with its fix in words; :func:`sdckit.jobs.wording.refusal_line`
        says the same in job-file syntax.
        """
        if self.check.ok:
            return None
        for f in self.check.findings:
            return f.line()
        return self.check.first_problem()

    def write(self, path: str | Path, **options: Any) -> Path:
        """Write the file (atomically) if the check passes; raise VerificationError otherwise."""
        from sdckit.io import write_data

        reason = self.refusal()
        if reason is not None:
            raise VerificationError(f"The file is not written: {reason}")
        target = Path(path)
        write_data(self.output, target, **options)
        return target


def check_file(
    original: Microdata,
    released: Any,
    plan: ReleasePlan,
    target: ReleaseTarget | None = None,
    *,
    order: Any = None,
) -> ReleaseCheck:
    """:func:`check_release` of ``released`` with the roles of ``original`` and the plan.

    ``released`` is the file as written; ``order[i]`` is the original record written as
    record ``i`` (None: the original order).
    """
    hh = original.household
    return check_release(
        original.frame,
        released,
        keys=original.keys,
        linked=original.linked,
        household=hh,
        household_level=original.household_level,
        identifiers=original.identifiers,
        numeric=original.numeric,
        weight=original.weight,
        sensitive=original.sensitive,
        declared=plan.declared(original),
        target=target,
        order=order,
        household_id=hh if hh is not None and plan.household_id == "new" else None,
    )


def released_order(plan: ReleasePlan, original: Microdata, seed: Any) -> Any:
    """The record order :func:`release` gives a file of ``original`` with this seed.

    ``written[i]`` is record ``order[i]`` of the original (None: the original order).  Used to
    check a written file again (``sdckit check``); needs the seed the release used.
    """
    from sdckit._validation import check_seed

    rng = check_seed(seed)
    frame = plan.apply(original, seed=rng)  # draws the household ids first, as release() does
    return plan.record_order(frame.height, seed=rng)


def release(
    original: Microdata,
    protected: Microdata,
    plan: ReleasePlan | None = None,
    *,
    k: int | None = None,
    target: ReleaseTarget | None = None,
    seed: Any = None,
) -> Release:
    """Apply the release plan to ``protected`` and check the result against ``original``.

    Parameters
    ----------
    original : Microdata
        The original file with its roles (keys, linked, household-level, identifiers, ...).
    protected : Microdata
        The protected file (same records in the same order).
    plan : ReleasePlan, optional
        Default: release every column but the direct identifiers, with a new household id.
    k : int, optional
        k-anonymity to check (shortcut for ``target=ReleaseTarget(k=k)``).
    target : ReleaseTarget, optional
        Default (neither ``k`` nor ``target``): :meth:`ReleaseTarget.default`.
    seed : int or numpy.random.Generator, optional
        Seed of the new household ids.

    Returns
    -------
    Release
    """
    plan = plan or ReleasePlan()
    if target is None:
        target = ReleaseTarget.default() if k is None else ReleaseTarget(k=k)
    elif k is not None:
        raise VerificationError("Give k or target, not both.")
    from sdckit._validation import check_seed

    rng = check_seed(seed)
    frame = plan.apply(protected, seed=rng)
    order = plan.record_order(frame.height, seed=rng)
    output = frame if order is None else frame[order]
    check = check_file(original, output, plan, target, order=order)
    return Release(frame=frame, check=check, plan=plan, roles=plan.roles(original), order=order)
