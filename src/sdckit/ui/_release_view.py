"""What the release page says beside the check: the steps' risk and the released file's.

The protection steps measure the risk of the file as the session holds it (with its weight,
its keys, its households); the release check measures the file as it would be written (the
columns it keeps, the weight it keeps or not, the households it links).  The two can differ a
lot (the weight dropped on the Roles page: the check then estimates the population from the
original weights, or, without any, takes the file for the population), and a target of k
only passes whatever the global risk became; so the page shows both, in one unit (percent of
the records), and says why they differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RiskComparison", "compare_risk"]

#: A released risk this many times the steps' is worth a sentence.
_NOTABLE = 1.5


@dataclass(frozen=True)
class RiskComparison:
    """The steps' risk beside the released file's, and the reasons they differ.

    Attributes
    ----------
    rows : list of (str, object, object)
        ``(measure, after the steps, in the released file)``; risks in percent of the records.
    reasons : list of str
        Why the two differ, in the page's words.
    warning : str or None
        A risk that rose while the target does not bound it ("may be released" is about the
        target only).
    """

    rows: list[tuple[str, Any, Any]]
    reasons: list[str]
    warning: str | None


def _pct(x: Any) -> float | None:
    return None if x is None else float(x)


def compare_risk(ws: Any, released: Any) -> RiskComparison:
    """The comparison of the release page (``ws`` a Workspace, ``released`` its release)."""
    risk, check = ws.session.risk, released.check
    k = ws.target.get("k") or 3
    steps_global = _pct(risk.global_risk_pct)
    released_global = _pct(check.global_risk_pct)
    rows: list[tuple[str, Any, Any]] = [
        ("global risk (% of records)", steps_global, released_global),
    ]
    steps_household = _pct(getattr(risk, "household_risk_pct", None))
    released_household = _pct(check.household_risk_pct)
    if steps_household is not None or released_household is not None:
        rows.append(("household risk (% of records)", steps_household, released_household))
    rows.append((f"records violating {k}-anonymity", risk.k_violations(k),
                 check.risk.k_violations(k)))  # fmt: skip

    reasons: list[str] = []
    weight = ws.roles.get("weight")
    where = getattr(check.risk, "weights", "")
    if weight and weight in ws.drop:
        if "original" in str(where):
            reasons.append(
                f"The sampling weight {weight!r} is not released (its “drop” box on the Roles "
                "page); the check still estimates the population from the original weights."
            )
        else:
            reasons.append(
                f"The sampling weight {weight!r} is not released (its “drop” box on the Roles "
                "page): the risk was recomputed without the weight, taking the released file "
                "for the whole population."
            )
    elif not weight:
        reasons.append(f"No sampling weight: the check takes the population from {where}.")
    households = getattr(check.risk, "households", None)
    if ws.roles.get("household") and households is None:
        reasons.append("The released file does not link household members (no household risk).")
    elif households:
        reasons.append(f"The released file links household members by {households}.")
    dropped_keys = [c for c in ws.roles.get("keys", []) if c in ws.drop]
    if dropped_keys:
        reasons.append("Keys not released: " + ", ".join(dropped_keys) + ".")

    warning = None
    bounded = any(ws.target.get(b) is not None for b in ("max_global_risk_pct",))
    if (
        steps_global is not None and released_global is not None and not bounded
        and released_global > _NOTABLE * max(steps_global, 1e-9)
    ):  # fmt: skip
        from sdckit.ui._words import fmt_number

        warning = (
            f"The released file's global risk is {fmt_number(released_global)} % of the "
            f"records, against {fmt_number(steps_global)} % after the steps, and the risk "
            "target does not bound it (“may be released” is about the target only): set "
            "“Largest global risk (%)” above, or protect further."
        )
    return RiskComparison(rows=rows, reasons=reasons, warning=warning)
