"""Running a validated protection job: a loop over :class:`sdckit.jobs.Runner`.

:func:`run_job` reports its progress to a callback ``progress(stage, done, total)`` (the command
line passes a rich progress bar, the Python API nothing, a browser interface its own), and
returns a :class:`JobResult`.  The risk of every state is assessed once by the session and read
by the target check, the R-U map's original point and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sdckit.jobs.load import Job
from sdckit.release import Release
from sdckit.risk.assessment import RiskAssessment
from sdckit.session import Session

__all__ = ["SUMMARY_FIGURES", "JobResult", "Progress", "release_seed", "run_job"]

#: The figures of a job's console summary, in order.
SUMMARY_FIGURES = (
    "records",
    "sample_uniques",
    "k3_violations",
    "expected_reidentifications",
    "global_risk_pct",
    "household_expected_reidentifications",
    "share_keys_changed",
    "sse_sst_pct",
)


class Progress(Protocol):
    """Receives the progress of a job: the stage, the units done and the total of the stage."""

    def __call__(self, stage: str, done: int, total: int) -> None: ...


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class JobResult:
    """What a job produced.

    Attributes
    ----------
    session : Session
        The original file, every step with its risk and loss.
    ru_map : RUMapResult or None
    target_met : bool or None
        Whether the released file meets the target (the job's, or the default target of
        :meth:`sdckit.release.ReleaseTarget.default` when it gives none); None before the
        release check ran.
    target_lines : list of str
        One line per bound of the target, with the released file's value.
    written : list of Path
        The files written, in order.
    release : Release
        The released file and its independent check.
    refusal : str or None
        Why the protected file was not written (target missed, or the release check found
        something), in one line; None when it was released.
    """

    session: Session
    ru_map: Any
    target_met: bool | None
    target_lines: list[str]
    written: list[Path]
    release: Release | None = None
    refusal: str | None = None
    target: Any = None

    @property
    def risk(self) -> RiskAssessment:
        """Risk assessment of the protected file."""
        return self.session.risk

    def comparison(self) -> list[tuple[str, Any, Any]]:
        """``(figure, before, after)`` for the figures a console summary shows."""
        before, after = self.session.initial_figures, self.session.figures
        return [(key, before.get(key, ""), after[key]) for key in SUMMARY_FIGURES if key in after]


def release_seed(job: Job) -> Any:
    """The seed of the new household ids and the record order of ``job``'s release."""
    from sdckit.jobs.runner import seed_of_release

    return seed_of_release(job.seed)


def run_job(job: Job, *, progress: Progress | None = None, write: bool = True) -> JobResult:
    """Run a validated job: the steps, the target, the R-U map, the release check, the outputs.

    Parameters
    ----------
    job : Job
        From :func:`sdckit.jobs.load_job`.
    progress : callable, optional
        ``progress(stage, done, total)``, called as the work goes on.
    write : bool, default True
        Write the outputs the job names (False: only compute).

    Returns
    -------
    JobResult
        The protected file and the external report are written only when the target is met
        and the independent release check (:func:`sdckit.release.check_release`) finds nothing
        an attacker could read back; otherwise only the internal report is written and
        ``refusal`` says why.
    """
    from sdckit.jobs.runner import Runner
    from sdckit.jobs.wording import refusal_line

    report = progress or _no_progress
    report("Assessing the input", 0, 1)
    runner = Runner.from_job(job)
    report("Assessing the input", 1, 1)
    runner.apply_job_steps(report)
    ru = runner.ru_map(report)
    released = runner.release(report)
    written: list[Path] = []
    if write:
        written, _ = runner.write(progress=report)
    # the command line words the fix in job-file syntax
    refusal = refusal_line(released)
    return JobResult(
        runner.session, ru, runner.target_met(), runner.target_lines(), written, released,
        refusal, runner.release_target,
    )  # fmt: skip
