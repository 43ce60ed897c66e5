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

from collections.abc import Sequence
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

__all__ = ["Session", "Step", "assess"]


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

    def apply(self, method: ProtectionMethod) -> Step:
        """Apply ``method`` to the current file, assess the result and record the step."""
        if not isinstance(method, ProtectionMethod):
            raise ParameterError(
                "Session.apply takes a protection method such as LocalSuppression(k=3)."
            )
        result = method.apply(self.current)
        step = Step(
            number=len(self._history) + 1,
            method=result.method,
            params=result.params,
            changed=dict(result.changed),
            n_changed_records=result.n_changed_records,
            risk=assess_risk(result.microdata, ks=self._ks),
            utility=assess_utility(self._original, result.microdata),
            result=result,
        )
        self._history.append(step)
        return step

    def undo(self) -> Step:
        """Remove the last step and return it."""
        if not self._history:
            raise ParameterError("There is no step to undo.")
        return self._history.pop()

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
            All the bounds (instead of ``k``).
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
        seed: Any = None,
        **options: Any,
    ) -> Path:
        """Release the current file and write it (atomically) if the release check passes.

        Raises
        ------
        VerificationError
            The release check found something an attacker can read back (the message says
            what and how to fix it); nothing is written.
        """
        return self.release(plan, k=k, seed=seed).write(Path(path), **options)
