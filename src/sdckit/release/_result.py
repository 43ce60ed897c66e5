"""The bounds a released file must meet, and what its release check found."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.release._findings import ReleaseFinding
from sdckit.release._risk import BOUNDED, ReleaseRisk

__all__ = ["AttackResult", "ReleaseCheck", "ReleaseTarget"]


@dataclass(frozen=True)
class ReleaseTarget:
    """The bounds a released file must meet, and how strict the attackers are.

    Attributes
    ----------
    k : int or None
        Every released record shares its key combination with at least ``k - 1`` others.
    max_global_risk_pct, max_expected_reidentifications, max_individual_risk,
    max_household_risk_pct, max_household_expected_reidentifications : float or None
        Bounds on the risk panel of the released file (see :class:`ReleaseRisk`).
    tolerance : float, default 0.01
        Share of the protected values of a variable that the attacks may get back beyond
        chance (and beyond sampling noise): 1 % by default, so that a channel adding a few
        per cent of certainty to values the other keys nearly give anyway (a twelve-year-old
        is never married) is not a refusal; 0 refuses any gain beyond noise.
    confidence : float, default 0.9
        The attackers assert a guess when their own confidence, learnt from the released
        file, reaches this level.
    """

    k: int | None = None
    max_global_risk_pct: float | None = None
    max_expected_reidentifications: float | None = None
    max_individual_risk: float | None = None
    max_household_risk_pct: float | None = None
    max_household_expected_reidentifications: float | None = None
    tolerance: float = 0.01
    confidence: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.tolerance < 1.0:
            raise ParameterError("The release 'tolerance' must be >= 0 and < 1 (a share).")
        if not 0.5 <= self.confidence < 1.0:
            raise ParameterError("The release 'confidence' must be >= 0.5 and < 1.")

    @classmethod
    def default(cls) -> ReleaseTarget:
        """The target of a release that gives none: 3-anonymity, a global risk of at most
        1 % of the records, and a household risk of at most 1 % where the released file links
        households (a bound that does not apply holds).  A file without weights is a census:
        its risk is ``1 / fk``, so 3-anonymity alone does not meet it; give such a file its
        own target."""
        return cls(k=3, max_global_risk_pct=1.0, max_household_risk_pct=1.0)

    @property
    def bounds(self) -> dict[str, float]:
        """The risk bounds given, by name."""
        names = ("max_global_risk_pct", "max_expected_reidentifications", "max_individual_risk",
                 "max_household_risk_pct", "max_household_expected_reidentifications")  # fmt: skip
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def describe(self) -> str:
        """The bounds in words."""
        parts = [f"{self.k}-anonymity"] if self.k is not None else []
        words = {
            "max_global_risk_pct": "global risk <= {:g} %",
            "max_expected_reidentifications": "expected re-identifications <= {:g}",
            "max_individual_risk": "individual risk <= {:g}",
            "max_household_risk_pct": "household risk <= {:g} %",
            "max_household_expected_reidentifications":
                "expected re-identifications through households <= {:g}",
        }  # fmt: skip
        parts += [words[n].format(v) for n, v in self.bounds.items()]
        return ", ".join(parts) or "no bound"

    @property
    def needs_household(self) -> bool:
        """Whether a household bound is given (the file then needs a household id)."""
        return (
            self.max_household_risk_pct is not None
            or self.max_household_expected_reidentifications is not None
        )

    def check(self, risk: Any) -> tuple[bool, list[str]]:
        """Whether an assessed file meets the target, and one line per bound.

        The check of one state of a protection (a step), on its risk assessment; the release
        check (:func:`sdckit.release.release`) checks the released file itself.

        Parameters
        ----------
        risk : RiskAssessment
            The assessment of the protected file (:func:`sdckit.risk.assess_risk`; the
            release layer reads it and measures nothing itself).
        """
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


@dataclass(frozen=True)
class AttackResult:
    """The attacks on the protected values of one variable, scored.

    Attributes
    ----------
    target : str
    kind : str
        ``"suppressed or perturbed"`` (guessed at the released granularity), ``"recoded"``
        (the fine value behind a band), ``"withheld"`` or ``"perturbed number"``.
    protected : int
        Protected values of that kind.
    guessed : int
        Values for which an attacker asserted a guess.
    got_back : int
        Guesses that are right (for numbers: estimates closer to the truth than released).
    chance : float
        Right guesses expected by chance (numbers: half the estimates).
    given_back : bool
        More than chance, the tolerance and sampling noise explain (numbers: the median error
        reduced by more than the tolerance).
    channel : str
        The channel that got back the most values.
    """

    target: str
    kind: str
    protected: int
    guessed: int
    got_back: int
    chance: float
    given_back: bool
    channel: str


@dataclass(frozen=True, repr=False)
class ReleaseCheck:
    """What attackers get back from a released file, counted.

    Attributes
    ----------
    n_records : int
    keys : tuple of str
        The key variables and finer linked variables of the risk panel.
    k : int or None
        The k checked (from the target).
    k_violations : int
        Records with ``fk < k`` in the released file (0 when no k is checked).
    smallest_class : int or None
    expected_reidentifications, global_risk_pct, highest_risk : float or None
    household_expected_reidentifications, household_risk_pct : float or None
    recoverable_values : int
        Protected values got back, in the variables given back (each value counted once).
    determined_values : int
        Of them, through the columns of the file, its order and a tree.
    household_values : int
        Of them, through the household (its id, household-wide columns, counting members).
    identifiers : tuple of str
        Direct identifiers and identifier-like columns in the released file.
    target_met : bool
    findings : tuple of ReleaseFinding
    risk : ReleaseRisk or None
        The risk panel of the released file and its intruder model.
    attacks : tuple of AttackResult
        Every variable attacked, given back or not.
    perturbed_values : int
        Perturbed numbers that averaging or a regression estimates more closely, in the
        variables where that beats the tolerance.
    target : ReleaseTarget or None
    """

    n_records: int
    keys: tuple[str, ...]
    k: int | None
    k_violations: int
    smallest_class: int | None
    expected_reidentifications: float | None
    global_risk_pct: float | None
    highest_risk: float | None
    household_expected_reidentifications: float | None
    household_risk_pct: float | None
    recoverable_values: int
    determined_values: int
    household_values: int
    identifiers: tuple[str, ...]
    target_met: bool
    findings: tuple[ReleaseFinding, ...] = field(default=())
    risk: ReleaseRisk | None = None
    attacks: tuple[AttackResult, ...] = field(default=())
    perturbed_values: int = 0
    target: ReleaseTarget | None = None

    @property
    def ok(self) -> bool:
        """Whether the file may be released: target met, nothing given back, no identifier."""
        return (
            self.target_met
            and self.k_violations == 0
            and self.recoverable_values == 0
            and self.perturbed_values == 0
            and not self.identifiers
        )

    def counts(self) -> dict[str, Any]:
        """The counts by name (what the reports show)."""
        return {
            "k_violations": self.k_violations,
            "recoverable_values": self.recoverable_values,
            "determined_values": self.determined_values,
            "household_values": self.household_values,
            "perturbed_values": self.perturbed_values,
            "identifiers": len(self.identifiers),
        }

    def to_frame(self) -> pl.DataFrame:
        """One row per finding: check, column, target, count, protected, chance, how, fix."""
        schema = {
            "check": pl.String, "column": pl.String, "target": pl.String, "count": pl.Float64,
            "protected": pl.Int64, "chance": pl.Float64, "how": pl.String, "fix": pl.String,
        }  # fmt: skip
        rows = [
            {"check": f.check, "column": f.column, "target": f.target, "count": float(f.count),
             "protected": f.protected, "chance": float(f.chance), "how": f.how,
             "fix": f.fix_words()}
            for f in self.findings
        ]  # fmt: skip
        return pl.DataFrame(rows, schema=schema)

    def attacks_frame(self) -> pl.DataFrame:
        """One row per attacked variable: protected, guessed, got back, chance, given back."""
        schema = {
            "target": pl.String, "kind": pl.String, "protected": pl.Int64, "guessed": pl.Int64,
            "got_back": pl.Int64, "chance": pl.Float64, "given_back": pl.Boolean,
            "channel": pl.String,
        }  # fmt: skip
        return pl.DataFrame([a.__dict__ for a in self.attacks], schema=schema)

    def target_lines(self) -> list[str]:
        """One line per bound of the target, with the released file's value."""
        target = self.target or ReleaseTarget()
        lines = []
        if target.k is not None:
            lines.append(
                f"k-anonymity: smallest class {self.smallest_class} (target {target.k}), "
                f"{self.k_violations} records below it"
            )
        values = {
            name: (getattr(self, attribute), label) for name, (attribute, label) in BOUNDED.items()
        }
        for name, bound in target.bounds.items():
            value, label = values[name]
            if value is None:
                why = (
                    "the released file does not link households" if "household" in name
                    else "no key variables are released"
                )  # fmt: skip
                lines.append(f"{label}: not applicable, {why} (target <= {bound:g})")
            else:
                lines.append(f"{label}: {value:.6g} (target <= {bound:g})")
        return lines

    def reconcile(
        self, keys: Sequence[str], figures: Mapping[str, Any], household: bool
    ) -> list[str]:
        """Why the risk of the released file differs from the risk after the steps.

        Parameters
        ----------
        keys : sequence of str
            The key variables the steps' risk was computed on.
        figures : mapping
            The steps' figures (``global_risk_pct``, ``household_expected_reidentifications``).
        household : bool
            Whether the steps' risk counted households.
        """
        risk = self.risk
        if risk is None:
            return []
        out = []
        added = [k for k in risk.keys if k not in keys]
        left = [k for k in keys if k not in risk.keys]
        if added:
            out.append(
                "The released file's risk also counts "
                + ", ".join(repr(k) for k in added)
                + " (linked variables finer than their key, released as they are)."
            )
        if left:
            out.append(
                "The released file's risk leaves out "
                + ", ".join(repr(k) for k in left)
                + " (not in the released file)."
            )
        steps_hh = figures.get("household_expected_reidentifications")
        if household and steps_hh is not None and risk.households is None:
            out.append(
                f"The steps counted {float(steps_hh):,.4g} expected re-identifications through "
                "households; the released file does not link the members of a household (no "
                "household id, and the attacks rebuilt none), so its risk is per person."
            )
        out.append(f"Intruder model of the released file's risk: {risk.intruder}.")
        return out

    def first_problem(self) -> str | None:
        """The first finding in one line (None when the file may be released)."""
        if self.ok:
            return None
        for f in self.findings:
            return f.how
        return "the release target is not met"

    def summary(self) -> Summary:
        """The counts as a printable summary."""
        rows: list[tuple[str, Any]] = [("records released", self.n_records)]
        if self.k is not None:
            rows.append((f"records violating {self.k}-anonymity", self.k_violations))
        if self.smallest_class is not None:
            rows.append(("smallest key class", self.smallest_class))
        if self.global_risk_pct is not None:
            rows.append(("global risk (%)", self.global_risk_pct))
        if self.household_risk_pct is not None:
            rows.append(("household risk (%)", self.household_risk_pct))
        rows += [
            ("protected values given back by other columns", self.determined_values),
            ("protected values given back by the household", self.household_values),
            ("perturbed numbers estimated more closely", self.perturbed_values),
            ("identifiers released", len(self.identifiers)),
            ("may be released", self.ok),
        ]
        notes = [] if self.risk is None else [f"Intruder model: {self.risk.intruder}."]
        notes += [f.how for f in self.findings[:20]]
        return Summary("Release check", rows, notes)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        return (
            f"ReleaseCheck(ok={self.ok}, k_violations={self.k_violations}, "
            f"recoverable_values={self.recoverable_values}, "
            f"perturbed_values={self.perturbed_values}, identifiers={list(self.identifiers)})"
        )
