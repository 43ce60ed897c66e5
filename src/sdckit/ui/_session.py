"""A protection session with checkpoints for cancellation, and redo.

:class:`UISession` is a :class:`~sdckit.session.Session` whose :meth:`apply_with_progress`
reports each stage of a step (the method, the risk, the utility) to a progress callback that
may raise to cancel the step (nothing is recorded then), and whose :meth:`redo` puts back a
step that :meth:`~sdckit.session.Session.undo` removed (the state before it is the same, so
it is not computed again).
"""

from __future__ import annotations

from typing import Any

from sdckit.errors import ParameterError
from sdckit.protection import ProtectionMethod
from sdckit.risk.assessment import assess_risk
from sdckit.session import Session, Step
from sdckit.utility.assessment import assess_utility

__all__ = ["UISession"]


class UISession(Session):
    """A :class:`~sdckit.session.Session` for the browser interface (see the module doc)."""

    def apply_with_progress(self, method: ProtectionMethod, progress: Any) -> Step:
        """Apply ``method`` like :meth:`Session.apply`, calling ``progress(stage, done, 3)``
        between the method, the risk assessment and the utility assessment."""
        if not isinstance(method, ProtectionMethod):
            raise ParameterError("apply_with_progress takes a protection method.")
        progress(f"Applying {method.name}", 0, 3)
        result = method.apply(self.current)
        progress("Assessing the disclosure risk", 1, 3)
        risk = assess_risk(result.microdata, ks=self._ks)
        progress("Assessing the information loss", 2, 3)
        utility = assess_utility(self._original, result.microdata)
        progress("Recording the step", 3, 3)
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
        return step

    def redo(self, step: Step) -> Step:
        """Put back ``step``, the last one undone (its number must be the next one)."""
        if step.number != len(self._history) + 1:
            raise ParameterError("Only the last undone step can be redone.")
        self._history.append(step)
        return step
