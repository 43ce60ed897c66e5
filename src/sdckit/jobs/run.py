"""Running a validated protection job: the steps, the target, the R-U map and the outputs.

:func:`run_job` reports its progress to a callback ``progress(stage, done, total)`` (the command
line passes a rich progress bar, the Python API nothing, a browser interface its own), and
returns a :class:`JobResult`.  The risk of every state is assessed once by the session and read
by the target check, the R-U map's original point and the reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sdckit.jobs._outputs import write_options
from sdckit.jobs.load import Job
from sdckit.masking import strata_progress
from sdckit.microdata import Microdata
from sdckit.release import Release
from sdckit.risk.assessment import RiskAssessment, assess_risk
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


def _risk_measure(name: str, session: Session) -> Callable[[Microdata, Microdata], float]:
    """The R-U map's risk measure, reading the session's assessments where it can."""
    from sdckit.utility.rumap import risk_measure

    fallback = risk_measure(name)
    from_assessment: dict[str, Callable[[RiskAssessment], float]] = {
        "global_risk": lambda a: float(a.global_risk or 0.0),
        "expected_reidentifications": lambda a: float(a.expected_reidentifications or 0.0),
        "sample_uniques": lambda a: float(a.sample_uniques or 0),
        "k2_violations": lambda a: float(a.k_violations(2)),
        "k3_violations": lambda a: float(a.k_violations(3)),
        "k5_violations": lambda a: float(a.k_violations(5)),
    }
    if name not in from_assessment:
        return fallback
    read = from_assessment[name]

    def measure(original: Microdata, protected: Microdata) -> float:
        if protected is session.original:
            return read(session.initial_risk)
        if not protected.keys:
            return fallback(original, protected)
        return read(assess_risk(protected, include_household=False, include_diversity=False))

    measure.__name__ = name
    return measure


def _run_ru_map(job: Job, session: Session, progress: Progress) -> Any:
    from sdckit.utility.rumap import ru_map

    spec = job.ru_map
    if spec is None:
        return None
    runs = 1 + sum(len(spec.seeds) if c.method.stochastic else 1 for c in spec.candidates)
    done = 0
    measure = _risk_measure(spec.risk, session)

    def counted(original: Microdata, protected: Microdata) -> float:
        nonlocal done
        value = measure(original, protected)
        done += 1
        progress("R-U map", done, runs)
        return value

    counted.__name__ = spec.risk
    progress("R-U map", 0, runs)
    return ru_map(
        session.original,
        [(c.label, c.method) for c in spec.candidates],
        risk=counted,
        loss=spec.loss,
        seeds=spec.seeds,
        max_risk=spec.max_risk,
    )


def release_seed(job: Job) -> Any:
    """The seed of the new household ids: derived from the job's seed (fresh without one)."""
    import numpy as np

    return None if job.seed is None else np.random.default_rng((job.seed, 0x5DC))


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
    from sdckit.release import ReleaseTarget, release
    from sdckit.report import write_report

    report = progress or _no_progress
    written: list[Path] = []
    report("Assessing the input", 0, 1)
    session = Session(job.microdata)
    report("Assessing the input", 1, 1)
    n = len(job.steps)
    report("Protection steps", 0, n)
    for i, spec in enumerate(job.steps, start=1):
        stage = f"Step {i}: strata"

        def over_strata(done: int, total: int, stage: str = stage) -> None:
            report(stage, done, total)

        with strata_progress(over_strata):  # methods working within strata report each one
            session.apply(spec.method)
        report("Protection steps", i, n)
    ru = _run_ru_map(job, session, report)
    release_target = job.target if job.target is not None else ReleaseTarget.default()
    report("Release check", 0, 1)
    released = release(
        session.original, session.current, job.release_plan, target=release_target,
        seed=release_seed(job),
    )  # fmt: skip
    report("Release check", 1, 1)
    check = released.check
    met = bool(check.target_met and check.k_violations == 0)
    lines = check.target_lines()
    if job.target is None:
        described = release_target.describe()
        lines.insert(0, f"The job gives no [target]: the default target ({described}).")
    refusal = released.refusal()
    result = JobResult(session, ru, met, lines, written, released, refusal, release_target)
    if not write:
        return result
    target = (release_target.describe(), met)
    outputs = [p for p in (job.output_data, job.report_internal, job.report_external) if p]
    total, done = len(outputs), 0
    report("Writing outputs", 0, total)
    if job.report_internal is not None:
        job.report_internal.parent.mkdir(parents=True, exist_ok=True)
        write_report(
            session, job.report_internal, kind="internal", ru_map=ru, title=job.title,
            target=target, plots=job.plots, release=released, timestamp=job.timestamp,
        )  # fmt: skip
        written.append(job.report_internal)
        done += 1
        report("Writing outputs", done, total)
    if refusal is None:
        if job.output_data is not None:
            job.output_data.parent.mkdir(parents=True, exist_ok=True)
            released.write(job.output_data, **write_options(
                released.output, job.output_data, job.labels, job.timestamp, session.history
            ))  # fmt: skip
            written.append(job.output_data)
            done += 1
            report("Writing outputs", done, total)
        if job.report_external is not None:
            job.report_external.parent.mkdir(parents=True, exist_ok=True)
            write_report(
                session, job.report_external, kind="external", title=job.title,
                release=released, timestamp=job.timestamp,
            )  # fmt: skip
            written.append(job.report_external)
            done += 1
            report("Writing outputs", done, total)
    return result
