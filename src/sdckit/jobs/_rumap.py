"""The R-U map of a job, computed on the state of a session.

The candidates are applied to the file after the steps already applied (the question a
methodologist asks at that point is "what would one more step give?"), and their risk and loss
are measured against the original.  The risk of the original and of the current state is read
from the session's assessments (no frequency table is computed twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdckit.jobs.load import RUMapSpec
from sdckit.microdata import Microdata
from sdckit.risk.assessment import RiskAssessment, assess_risk
from sdckit.session import Session

__all__ = ["run_ru_map"]


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
        if protected is session.current:
            return read(session.risk)
        if not protected.keys:
            return fallback(original, protected)
        return read(assess_risk(protected, include_household=False, include_diversity=False))

    measure.__name__ = name
    return measure


def run_ru_map(spec: RUMapSpec, session: Session, progress: Any) -> Any:
    """The R-U map of ``spec`` on the current state of ``session`` (progress per run)."""
    from sdckit.utility.rumap import ru_map

    current = session.current
    start = None if current is session.original else current
    runs = (
        1 + (start is not None)
        + sum(len(spec.seeds) if c.method.stochastic else 1 for c in spec.candidates)
    )  # fmt: skip
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
        start=start,
    )
