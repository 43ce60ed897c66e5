"""A protection session: the original file, its roles, the steps applied, and undo.

:class:`Session` keeps the original :class:`~sdckit.microdata.Microdata` and an ordered
history of :class:`Step` objects.  Each step records the method and its parameters, what it
changed, and the disclosure risk and information loss of the file after it (measured against
the original), so the whole path of a protection can be reported and justified.  ``undo()``
drops the last step.  Steps share the unchanged columns of the data: polars frames are
immutable and a method's output reuses every column it did not change, so keeping one frame
per step costs only the changed columns, not a copy of the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.protection import Protected, ProtectionMethod

__all__ = ["Session", "Step", "assess"]


def assess(
    original: Microdata, current: Microdata, ks: tuple[int, ...] = (2, 3, 5)
) -> dict[str, Any]:
    """Risk and utility figures of ``current`` (compared with ``original`` where aligned)."""
    from sdckit.risk import individual_risk
    from sdckit.utility.categorical import categorical_loss
    from sdckit.utility.continuous import continuous_loss

    figures: dict[str, Any] = {"records": current.n_records}
    if current.keys:
        res = individual_risk(current)
        freq = res.frequencies
        figures["sample_uniques"] = freq.sample_uniques
        for k in ks:
            figures[f"k{k}_violations"] = freq.violations(k).records
        figures["expected_reidentifications"] = res.expected_reidentifications
        figures["global_risk_pct"] = res.global_risk_pct
        figures["highest_risk"] = float(res.risk.max())
    aligned = current.n_records == original.n_records
    if aligned and current.numeric:
        cont = continuous_loss(original, current)
        figures["sse_sst_pct"] = cont.sse_sst
        figures["il1s"] = cont.il1s
    if aligned and current.keys:
        cat = categorical_loss(original, current)
        figures["share_keys_changed"] = cat.share_changed
        figures["key_values_suppressed"] = int(cat.per_variable["suppressed"].sum())
    return figures


@dataclass(frozen=True, repr=False)
class Step:
    """One applied method: parameters, changes, and the figures after it."""

    number: int
    method: str
    params: dict[str, Any]
    changed: dict[str, int]
    n_changed_records: int
    figures: dict[str, Any]
    result: Protected = field(compare=False)

    def __repr__(self) -> str:
        return f"Step({self.number}: {self.method}, changed_records={self.n_changed_records})"


class Session:
    """A protection session over one microdata file.

    Parameters
    ----------
    data : DataFrame or Microdata
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

    def __init__(self, data: Any, **roles: Any) -> None:
        self._original = as_microdata(data, **roles)
        self._history: list[Step] = []
        self._initial = assess(self._original, self._original)

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
    def initial_figures(self) -> dict[str, Any]:
        """Risk figures of the original file."""
        return dict(self._initial)

    def apply(self, method: ProtectionMethod) -> Step:
        """Apply ``method`` to the current file and record the step."""
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
            figures=assess(self._original, result.microdata),
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
        rows = [{"step": 0, "method": "original", "changed_records": 0, **self._initial}]
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
        now = self._history[-1].figures if self._history else self._initial
        rows: list[tuple[str, Any]] = [("steps", len(self._history))]
        for key in (
            "sample_uniques",
            "k3_violations",
            "expected_reidentifications",
            "global_risk_pct",
        ):
            if key in self._initial:
                rows.append((f"{key.replace('_', ' ')}: before", self._initial[key]))
                rows.append((f"{key.replace('_', ' ')}: after", now.get(key, np.nan)))
        for key in ("sse_sst_pct", "share_keys_changed", "key_values_suppressed"):
            if key in now:
                rows.append((key.replace("_", " "), now[key]))
        notes = [
            f"{s.number}. {s.method}: {s.n_changed_records} records changed" for s in self._history
        ]
        return Summary("Protection session", rows, notes)

    def export(self, path: str | Path, **options: Any) -> Path:
        """Write the current file (atomically) in the format given by the file extension."""
        from sdckit.io import write_data

        target = Path(path)
        write_data(self.current.frame, target, **options)
        return target
