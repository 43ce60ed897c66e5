"""The risk target of a job: the bounds the protected file must meet."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from sdckit._validation import check_int, check_real
from sdckit.errors import ParameterError
from sdckit.jobs._toml import unknown_keys
from sdckit.microdata import Microdata
from sdckit.release import ReleaseTarget
from sdckit.risk.assessment import RiskAssessment, assess_risk

__all__ = ["RiskTarget", "parse_target"]

_BOUNDS = (
    "max_global_risk_pct",
    "max_expected_reidentifications",
    "max_individual_risk",
    "max_household_risk_pct",
    "max_household_expected_reidentifications",
)


@dataclass(frozen=True)
class RiskTarget(ReleaseTarget):
    """The risk target of a job: :class:`~sdckit.release.ReleaseTarget` (one set of bounds,
    checked on the released file by the release check), which can also be checked on the
    risk assessment of a protection step (:meth:`check`).

    Attributes
    ----------
    k : int or None
        Every record shares its key combination with at least ``k - 1`` others.
    max_global_risk_pct : float or None
        Largest global risk, in percent of the records.
    max_expected_reidentifications : float or None
        Largest expected number of re-identifications.
    max_individual_risk : float or None
        Largest individual risk of any record (a probability).
    max_household_risk_pct : float or None
        Largest household-level global risk, in percent of the records.
    max_household_expected_reidentifications : float or None
        Largest expected number of persons re-identified through their households.
    tolerance : float
        Share of a variable's protected values the release check's attacks may get back
        beyond chance.
    confidence : float
        Confidence from which the attacks assert a guess.
    """

    @property
    def needs_household(self) -> bool:
        """Whether a household bound is given (the file then needs a household id)."""
        return (
            self.max_household_risk_pct is not None
            or self.max_household_expected_reidentifications is not None
        )

    def for_release(self) -> ReleaseTarget:
        """The same bounds as a plain :class:`~sdckit.release.ReleaseTarget`."""
        return ReleaseTarget(**{f.name: getattr(self, f.name) for f in fields(ReleaseTarget)})

    def check(self, risk: RiskAssessment | Microdata) -> tuple[bool, list[str]]:
        """Whether the assessed file meets the target, and one line per bound.

        Parameters
        ----------
        risk : RiskAssessment or Microdata
            The assessment of the protected file (a Microdata is assessed first).
        """
        if isinstance(risk, Microdata):
            risk = assess_risk(risk)
        lines: list[str] = []
        ok = True
        if self.k is not None:
            reached = risk.smallest_class
            met = reached is not None and reached >= self.k
            ok &= met
            lines.append(f"k-anonymity: smallest class {reached} (target {self.k})")
        checks: list[tuple[float | None, float | None, str]] = [
            (self.max_global_risk_pct, risk.global_risk_pct, "global risk (%)"),
            (
                self.max_expected_reidentifications,
                risk.expected_reidentifications,
                "expected re-identifications",
            ),
            (self.max_individual_risk, risk.highest_risk, "highest individual risk"),
            (self.max_household_risk_pct, risk.household_risk_pct, "household risk (%)"),
            (
                self.max_household_expected_reidentifications,
                risk.household_expected_reidentifications,
                "expected re-identifications through households",
            ),
        ]
        for bound, value, label in checks:
            if bound is None:
                continue
            if value is None:
                ok = False
                lines.append(f"{label}: not measured (target <= {bound:g})")
                continue
            ok &= bool(value <= bound)
            lines.append(f"{label}: {value:.6g} (target <= {bound:g})")
        return ok, lines


def parse_target(spec: dict[str, Any]) -> RiskTarget:
    """The ``[target]`` table of a job file."""
    allowed = {"k", "tolerance", "confidence", *_BOUNDS}
    unknown_keys(spec, allowed, "target")
    if not spec:
        raise ParameterError("[target] is empty; give k or a maximum risk, or remove it.")
    k = spec.get("k")
    extra = {}
    if "tolerance" in spec:
        extra["tolerance"] = check_real(spec["tolerance"], "target.tolerance", minimum=0.0)
    if "confidence" in spec:
        extra["confidence"] = check_real(spec["confidence"], "target.confidence", minimum=0.5)
    return RiskTarget(
        k=None if k is None else check_int(k, "target.k", minimum=2),
        **extra,
        **{
            name: check_real(spec[name], f"target.{name}", minimum=0.0)
            for name in _BOUNDS
            if name in spec
        },
    )
