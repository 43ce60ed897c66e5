"""The risk target of a job: the ``[target]`` table read into a release target.

There is one target type, :class:`sdckit.release.ReleaseTarget` (its bounds, the attackers'
strictness, :meth:`~sdckit.release.ReleaseTarget.check` on a risk assessment).
``RiskTarget`` is kept as a plain alias of it, only so that code written against the earlier
job API keeps working.
"""

from __future__ import annotations

from typing import Any

from sdckit._validation import check_int, check_real
from sdckit.errors import ParameterError
from sdckit.jobs._toml import unknown_keys
from sdckit.jobs.auto import SEARCH_ONLY_KEYS
from sdckit.release import ReleaseTarget

__all__ = ["RiskTarget", "parse_target", "target_table"]

_BOUNDS = (
    "max_global_risk_pct",
    "max_expected_reidentifications",
    "max_individual_risk",
    "max_household_risk_pct",
    "max_household_expected_reidentifications",
)

#: Backwards-compatible alias: the risk target of a job is a :class:`ReleaseTarget`.
RiskTarget = ReleaseTarget


def parse_target(spec: dict[str, Any]) -> ReleaseTarget:
    """The ``[target]`` table of a job file."""
    # the privacy models of automatic protection stand beside the bounds (sdckit.jobs.auto)
    allowed = {"k", "tolerance", "confidence", *_BOUNDS, *SEARCH_ONLY_KEYS}
    unknown_keys(spec, allowed, "target")
    if not spec:
        raise ParameterError("[target] is empty; give k or a maximum risk, or remove it.")
    k = spec.get("k")
    extra = {}
    if "tolerance" in spec:
        extra["tolerance"] = check_real(spec["tolerance"], "target.tolerance", minimum=0.0)
    if "confidence" in spec:
        extra["confidence"] = check_real(spec["confidence"], "target.confidence", minimum=0.5)
    return ReleaseTarget(
        k=None if k is None else check_int(k, "target.k", minimum=2),
        **extra,
        **{
            name: check_real(spec[name], f"target.{name}", minimum=0.0)
            for name in _BOUNDS
            if name in spec
        },
    )


def target_table(target: ReleaseTarget) -> dict[str, Any]:
    """The ``[target]`` table that :func:`parse_target` reads back as ``target``."""
    default = ReleaseTarget()
    table: dict[str, Any] = {}
    for name in ("k", *_BOUNDS, "tolerance", "confidence"):
        value = getattr(target, name)
        if value is not None and value != getattr(default, name):
            table[name] = value
    return table
