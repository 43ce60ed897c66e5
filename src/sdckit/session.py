"""A protection session: the original file, its roles, the steps applied, and undo.

:class:`Session` keeps the original :class:`~sdckit.microdata.Microdata` and an ordered
history of :class:`Step` objects.  Each step records the method object and its parameters,
what it changed, and the disclosure risk (:class:`~sdckit.risk.RiskAssessment`) and
information loss (:class:`~sdckit.utility.assessment.UtilityAssessment`) of the file after it,
so the whole path of a protection can be reported and justified.  ``undo()`` drops the last
step.  Steps share the unchanged columns of the data: polars frames are immutable and a
method's output reuses every column it did not change, so keeping one frame per step costs only
the changed columns, not a copy of the whole file.

The risk of each state is assessed once (one frequency table per step) and read by everything
that shows it: the target check of a job, the reports, the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.protection import Protected, ProtectionMethod
from sdckit.release import Release, ReleasePlan, ReleaseTarget
from sdckit.risk.assessment import DEFAULT_KS, RiskAssessment, assess_risk
from sdckit.utility.assessment import UtilityAssessment, assess_utility

__all__ = ["Progress", "Session", "Step", "assess", "release_map"]

#: ``progress(stage, done, total)``: how the work reports how far it is.
Progress = Callable[[str, int, int], Any]


def _strata_progress(method: ProtectionMethod, progress: Progress) -> dict[str, Any]:
    """The ``progress=`` call argument of a method whose ``apply`` takes one (the methods that
    work within strata report ``(done, total)`` strata), as a stage of ``progress``."""
    import inspect

    if "progress" not in inspect.signature(method.apply).parameters:
        return {}
    stage = f"{method.name}: {getattr(method, 'progress_unit', 'strata')}"

    def strata(done: int, total: int) -> None:
        progress(stage, done, total)

    return {"progress": strata}


def assess(
    original: Microdata, current: Microdata, ks: tuple[int, ...] = DEFAULT_KS
) -> dict[str, Any]:
    """Risk and utility figures of ``current`` (compared with ``original`` where aligned)."""
    return {**assess_risk(current, ks=ks).figures(), **assess_utility(original, current).figures()}


@dataclass(frozen=True, repr=False)
class Step:
    """One applied method: the method, its changes, and the risk and loss after it.

    Attributes
    ----------
    number : int
        1 for the first step.
    method : str
        The method's display name.
    params : dict
        Its parameters.
    changed : dict of str to int
        Values changed per variable.
    n_changed_records : int
    risk : RiskAssessment
        Disclosure risk of the file after the step.
    utility : UtilityAssessment
        Information loss of the file after the step, against the original.
    result : Protected
        What the method returned (the protected file, details, the method object).
    """

    number: int
    method: str
    params: dict[str, Any]
    changed: dict[str, int]
    n_changed_records: int
    risk: RiskAssessment = field(compare=False)
    utility: UtilityAssessment = field(compare=False)
    result: Protected = field(compare=False)

    @property
    def protection(self) -> ProtectionMethod | None:
        """The method object of the step."""
        return self.result.protection

    @property
    def figures(self) -> dict[str, Any]:
        """Risk and loss figures after the step, by name."""
        return {**self.risk.figures(), **self.utility.figures()}

    def __repr__(self) -> str:
        return f"Step({self.number}: {self.method}, changed_records={self.n_changed_records})"


class Session:
    """A protection session over one microdata file.

    Parameters
    ----------
    data : DataFrame or Microdata
    ks : sequence of int, default (2, 3, 5)
        The k's whose k-anonymity violations are counted after each step.
    **roles
        Column roles (``keys``, ``numeric``, ``weight``, ``strata``, ``household``,
        ``sensitive``) when ``data`` is a frame.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import Pram
    >>> df = pl.DataFrame({"sex": [1, 2] * 50, "reg": [1, 2, 3, 4, 5] * 20})
    >>> s = Session(df, keys=["sex", "reg"])
    >>> _ = s.apply(Pram(variables=["reg"], seed=1))
    >>> len(s.history), s.undo().method, len(s.history)
    (1, 'PRAM', 0)
    """

    def __init__(self, data: Any, *, ks: Sequence[int] = DEFAULT_KS, **roles: Any) -> None:
        self._original = as_microdata(data, **roles)
        self._ks = tuple(ks)
        self._history: list[Step] = []
        self._initial_risk = assess_risk(self._original, ks=self._ks)
        self._initial_utility = UtilityAssessment(aligned=True)

    @property
    def original(self) -> Microdata:
        """The original file."""
        return self._original

    @property
    def current(self) -> Microdata:
        """The file after the last step (the original if no step was applied)."""
        return self._history[-1].result.microdata if self._history else self._original

    @property
    def history(self) -> tuple[Step, ...]:
        """The applied steps, in order."""
        return tuple(self._history)

    @property
    def initial_risk(self) -> RiskAssessment:
        """Risk assessment of the original file."""
        return self._initial_risk

    @property
    def risk(self) -> RiskAssessment:
        """Risk assessment of the current file."""
        return self._history[-1].risk if self._history else self._initial_risk

    @property
    def utility(self) -> UtilityAssessment:
        """Information loss of the current file against the original."""
        return self._history[-1].utility if self._history else self._initial_utility

    @property
    def initial_figures(self) -> dict[str, Any]:
        """Risk figures of the original file (and zero loss)."""
        zero: dict[str, Any] = {}
        if self._original.numeric:
            zero.update(sse_sst_pct=0.0, il1s=0.0)
        if self._original.keys:
            zero.update(share_keys_changed=0.0, key_values_suppressed=0)
        return {**self._initial_risk.figures(), **zero}

    @property
    def figures(self) -> dict[str, Any]:
        """Figures of the current file (those of the original before any step)."""
        return self._history[-1].figures if self._history else self.initial_figures

    def apply(self, method: ProtectionMethod, progress: Progress | None = None) -> Step:
        """Apply ``method`` to the current file, assess the result and record the step.

        Parameters
        ----------
        method : ProtectionMethod
        progress : callable, optional
            ``progress(stage, done, total)``, called between the method, the risk assessment
            and the loss assessment (``total`` 3), and after each stratum of a method that
            works within strata (stage ``"<method>: strata"``).  It may raise to stop the
            step: nothing is recorded then.
        """
        if not isinstance(method, ProtectionMethod):
            raise ParameterError(
                "Session.apply takes a protection method such as LocalSuppression(k=3)."
            )
        if progress is None:
            result = method.apply(self.current)
        else:
            progress(f"Applying {method.name}", 0, 3)
            result = method.apply(self.current, **_strata_progress(method, progress))
            progress("Assessing the disclosure risk", 1, 3)
        risk = assess_risk(result.microdata, ks=self._ks)
        if progress is not None:
            progress("Assessing the information loss", 2, 3)
        utility = assess_utility(self._original, result.microdata)
        step = Step(
            number=len(self._history) + 1,
            method=result.method,
            params=result.params,
            changed=dict(result.changed),
            n_changed_records=result.n_changed_records,
            risk=risk,
            utility=utility,
            result=result,
        )
        self._history.append(step)
        if progress is not None:
            progress("Recording the step", 3, 3)
        return step

    def undo(self) -> Step:
        """Remove the last step and return it (:meth:`redo` puts it back)."""
        if not self._history:
            raise ParameterError("There is no step to undo.")
        return self._history.pop()

    def redo(self, step: Step) -> Step:
        """Put back ``step``, the last one :meth:`undo` removed (the state before it is the
        same, so nothing is computed again)."""
        if step.number != len(self._history) + 1:
            raise ParameterError("Only the last undone step can be redone.")
        self._history.append(step)
        return step

    def to_frame(self) -> pl.DataFrame:
        """One row per state: the original (step 0) and every step, with its figures."""
        rows = [{"step": 0, "method": "original", "changed_records": 0, **self.initial_figures}]
        for s in self._history:
            rows.append(
                {
                    "step": s.number,
                    "method": s.method,
                    "changed_records": s.n_changed_records,
                    **s.figures,
                }
            )
        return pl.DataFrame(rows)

    def summary(self) -> Summary:
        """The risk before and after the steps."""
        before, now = self.initial_figures, self.figures
        rows: list[tuple[str, Any]] = [("steps", len(self._history))]
        for key in (
            "sample_uniques",
            "k3_violations",
            "expected_reidentifications",
            "global_risk_pct",
            "household_expected_reidentifications",
        ):
            if key in before:
                rows.append((f"{key.replace('_', ' ')}: before", before[key]))
                rows.append((f"{key.replace('_', ' ')}: after", now.get(key, np.nan)))
        for key in ("sse_sst_pct", "share_keys_changed", "key_values_suppressed"):
            if key in now:
                rows.append((key.replace("_", " "), now[key]))
        notes = [
            f"{s.number}. {s.method}: {s.n_changed_records} records changed" for s in self._history
        ]
        return Summary("Protection session", rows, notes)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def release(
        self,
        plan: ReleasePlan | None = None,
        *,
        k: int | None = None,
        target: ReleaseTarget | None = None,
        seed: Any = None,
    ) -> Release:
        """The current file as it would be released, with the independent release check.

        Parameters
        ----------
        plan : ReleasePlan, optional
            Default: every column but the direct identifiers, a new random household id, the
            records in a random order.
        k : int, optional
            k-anonymity the released file must have.
        target : ReleaseTarget, optional
            All the bounds (instead of ``k``).  Default (neither): the default release target,
            :meth:`sdckit.release.ReleaseTarget.default`; ``ReleaseTarget()`` checks no bound
            (the attacks still run).
        seed : int or numpy.random.Generator, optional
            Seed of the new household ids and the record order.

        Returns
        -------
        sdckit.release.Release
            ``release.check`` counts what an attacker can read back; ``release.write(path)``
            writes the file only when it may be released.
        """
        from sdckit.release import release

        return release(self._original, self.current, plan, k=k, target=target, seed=seed)

    def export(
        self,
        path: str | Path,
        plan: ReleasePlan | None = None,
        *,
        k: int | None = None,
        target: ReleaseTarget | None = None,
        seed: Any = None,
        **options: Any,
    ) -> Path:
        """Release the current file and write it (atomically) if the release check passes.

        ``k`` and ``target`` as in :meth:`release` (default: the default release target).

        Raises
        ------
        VerificationError
            The release check found something an attacker can read back (the message says
            what and how to fix it); nothing is written.
        """
        return self.release(plan, k=k, target=target, seed=seed).write(Path(path), **options)


def release_map(
    original: Microdata,
    releases: Mapping[str, Release],
    *,
    risk: str = "household_risk_pct",
    totals: Sequence[str] | None = None,
    means: Sequence[str] | None = None,
    regression: str | None = None,
    max_risk: float | None = None,
) -> Any:
    """The R-U map of released files: the risk of each file as written against its loss on
    the weighted estimates users make (totals, means, a regression).

    Parameters
    ----------
    original : Microdata
        The original file with its roles (and weight).
    releases : mapping of str to Release
        Candidate releases (:func:`sdckit.release.release`), by label: for instance one that
        keeps the weight, the household id and the household income, protected, and one that
        drops them.
    risk : {"household_risk_pct", "global_risk_pct", "expected_reidentifications"}
        The risk of each released file from its release check (a file that does not link
        households has its persons' risk as household risk).
    totals, means : list of str, optional
        Variables whose weighted totals and means are compared (default: the keys and the
        numeric variables).
    regression : str, optional
        A weighted least-squares formula compared too, e.g. ``"income ~ C(sex) + C(age)"``.
    max_risk : float, optional
        The largest tolerable risk (marks the admissible releases).

    Returns
    -------
    sdckit.utility.rumap.RUMapResult
        The original file first (its own risk, no loss), then one point per release; the
        loss is :func:`sdckit.utility.weighted.weighted_estimates`'s (0: the original's
        estimates, 1: none of them).
    """
    from sdckit.release import release as make_release
    from sdckit.utility.rumap import RUMapResult, pareto_front
    from sdckit.utility.weighted import weighted_estimates

    names = ("household_risk_pct", "global_risk_pct", "expected_reidentifications")
    if risk not in names:
        raise ParameterError(f"The 'risk' parameter must be one of {', '.join(names)}.")
    if not releases:
        raise ParameterError("The release map needs at least one release.")
    totals = list(original.keys) if totals is None else list(totals)
    means = list(original.numeric) if means is None else list(means)

    def risk_of(check: Any) -> float:
        value = getattr(check, risk)
        if value is None and risk == "household_risk_pct":
            value = check.global_risk_pct
        return float("nan") if value is None else float(value)

    as_is = make_release(original, original, ReleasePlan(order="original"),
                         target=ReleaseTarget())  # fmt: skip
    rows = [{"candidate": "original", "method": "none", "risk": risk_of(as_is.check),
             "loss": 0.0}]  # fmt: skip
    for label, rel in releases.items():
        loss = weighted_estimates(
            original, rel.frame, totals=totals, means=means, regression=regression
        ).loss
        rows.append({"candidate": str(label), "method": "release", "risk": risk_of(rel.check),
                     "loss": float(loss)})  # fmt: skip
    points = pl.DataFrame(rows).with_columns(
        pl.lit(0.0).alias("risk_sd"), pl.lit(0.0).alias("loss_sd"), pl.lit(1).alias("replicates")
    )
    points = points.select("candidate", "method", "risk", "risk_sd", "loss", "loss_sd",
                           "replicates")  # fmt: skip
    front = pareto_front(points["risk"].to_numpy(), points["loss"].to_numpy())
    admissible = (
        points["risk"].to_numpy() <= max_risk if max_risk is not None
        else np.ones(points.height, dtype=bool)
    )  # fmt: skip
    points = points.with_columns(pl.Series("pareto", front), pl.Series("admissible", admissible))
    return RUMapResult(points=points, risk_name=risk, loss_name="weighted estimates",
                       max_risk=max_risk)  # fmt: skip
