"""The independent release check: the released file read by attackers that learn from it.

The check takes the file as it will be written (its columns, whatever their type, and its
record order) and the original, and

(a) computes the **risk panel** of the released file under a stated intruder model
    (:mod:`sdckit.release._risk`) and the k-anonymity of its keys;
(b) lists the **protected values** (suppressed, perturbed, recoded or withheld:
    :mod:`sdckit.release._targets`) and lets **attackers** guess them from the released file
    only (:mod:`sdckit.release._attack`), through every channel the file offers
    (:mod:`sdckit.release._channels`): shared values of any column and of transformations of
    it, neighbours in the order of the file and of every number or date, households rebuilt
    from the household id, household-wide columns or their runs, counting members, averaging
    members, a decision tree over all columns;
(c) scores the guesses with the truth: per variable, the values got back beside the values
    chance gives (for each guess, the share of the true value among comparable records: see
    :mod:`sdckit.release._targets`).  A variable is *given back* when the attacks get back more
    than chance plus the target's tolerance (a share of its protected values), and not by
    luck: by more than half a value and three standard deviations of the chance count, or
    through guesses the attacker was certain of and that are right nine times in ten (a
    household id that gives back the one suppressed region of a household is a leak, though
    one value proves nothing statistically: the channel proved exact on the records that show
    their region);
(d) finds **identifiers**: declared direct identifiers, and columns nobody declared whose
    values are almost all different (a person number stored as ``101.0``, with a few missing
    values or a duplicate, a free text, a date of birth in a small file).

It is written with polars, numpy and scikit-learn, and imports none of sdckit's methods or
measures, so an error in a method is not repeated by its check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import to_polars
from sdckit._results import Summary
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.release._attack import (
    Guesses,
    NumericEstimate,
    average_estimates,
    count_guesses,
    group_guesses,
    monotone_guesses,
    neighbour_guesses,
    regression_estimates,
    structure_guesses,
    tree_guesses,
)
from sdckit.release._chance import Comparable, comparable_sets, tenths, tree_leaves
from sdckit.release._channels import Channels, Grouping, build_channels
from sdckit.release._encode import as_number, as_text, codes, is_missing
from sdckit.release._findings import ReleaseFinding, Remedy
from sdckit.release._risk import ReleaseRisk, released_risk
from sdckit.release._targets import (
    CategoricalTarget,
    GroupIndex,
    NumericTarget,
    categorical_target,
    household_columns,
    is_size_of,
    numeric_target,
)

__all__ = ["AttackResult", "ReleaseCheck", "ReleaseTarget", "check_release"]

#: Share of distinct values (among the non-missing ones) from which an undeclared column
#: identifies records.
IDENTIFIER_SHARE = 0.95
#: Fewest non-missing values for the identifier rule (a tiny file is all distinct anyway).
IDENTIFIER_MIN = 20
#: Standard deviations of the chance count that right guesses must exceed (unless the
#: attacker was certain of them).
NOISE_Z = 3.0
#: A guess is certain from this confidence (a channel exact on the records that show values).
CERTAIN = 0.99
#: A grouping rebuilds households when it matches them for this share of the records.
HOUSEHOLD_MATCH = 0.9


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
             "fix": f.fix_job()}
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
            "max_global_risk_pct": (self.global_risk_pct, "global risk (%)"),
            "max_expected_reidentifications": (self.expected_reidentifications,
                                               "expected re-identifications"),
            "max_individual_risk": (self.highest_risk, "highest individual risk"),
            "max_household_risk_pct": (self.household_risk_pct, "household risk (%)"),
            "max_household_expected_reidentifications": (
                self.household_expected_reidentifications,
                "expected re-identifications through households"),
        }  # fmt: skip
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


# ------------------------------------------------------------------------------ the check
def check_release(
    original: Any,
    released: Any,
    *,
    keys: Sequence[str] = (),
    linked: Mapping[str, str] | None = None,
    household: str | None = None,
    household_level: Sequence[str] = (),
    identifiers: Sequence[str] = (),
    numeric: Sequence[str] = (),
    weight: str | None = None,
    sensitive: Sequence[str] = (),
    declared: Sequence[str] | None = None,
    target: ReleaseTarget | None = None,
    order: Any = None,
    household_id: str | None = None,
    seed: int = 0,
) -> ReleaseCheck:
    """What attackers get back from ``released`` (see the module docstring).

    Parameters
    ----------
    original : DataFrame
        The original file (polars, pandas or pyarrow).
    released : DataFrame
        The file as it will be written: its columns and its record order.
    keys, linked, household, household_level, identifiers, numeric, weight, sensitive
        The roles of the original's columns (as in :class:`~sdckit.Microdata`).
    declared : sequence of str, optional
        The columns the release plan mentions; a released column outside it whose values are
        almost all different is reported as an identifier.  Default: every original column.
    target : ReleaseTarget, optional
        The bounds to check.  Default: :meth:`ReleaseTarget.default`.
    order : array of int, optional
        ``order[i]`` is the original record written as record ``i`` (None: the same order).
    household_id : str, optional
        The released column that holds the (new) household id, if any.
    seed : int, default 0
        Seed of the decision tree's training sample (the check is deterministic).

    Returns
    -------
    ReleaseCheck

    Examples
    --------
    >>> import polars as pl
    >>> orig = pl.DataFrame({"region": ["a", "b"] * 20, "district": [1, 2] * 20,
    ...                      "sex": [1, 1, 2, 2] * 10})
    >>> rel = orig.with_columns(pl.Series("region", [None] + ["b", "a", "b"] * 13))
    >>> res = check_release(orig, rel, keys=["region", "sex"], target=ReleaseTarget(k=2))
    >>> res.ok, res.findings[0].column
    (False, 'district')
    """
    orig = _frame(original, "original")
    rel = _frame(released, "released")
    if order is not None:
        order = np.asarray(order, dtype=np.int64)
        outside = len(order) > 0 and (order.min() < 0 or order.max() >= orig.height)
        if len(order) != rel.height or outside:
            raise DataError(
                "The record order of the release does not fit the files; rebuild it from the "
                "seed the file was written with."
            )
        orig = orig[order]
    if orig.height != rel.height:
        raise DataError(
            "The released file has another number of records than the original; the release "
            "check compares them record by record."
        )
    target = target if target is not None else ReleaseTarget.default()
    linked = dict(linked or {})
    # a numeric variable released as categories (intervals) is a key of the released file
    banded = [c for c in numeric if c in rel.columns and not rel.schema[c].is_numeric()]
    keys = [*keys, *(c for c in banded if c not in keys)]
    numeric = [c for c in numeric if c not in banded]
    ctx = _Context.build(orig, rel, keys=keys, linked=linked, household=household,
                         household_level=household_level, numeric=numeric, weight=weight,
                         sensitive=sensitive, household_id=household_id, seed=seed)  # fmt: skip
    findings: list[ReleaseFinding] = []
    attacks, recovered = _attack_all(ctx, target, findings)
    numeric_results, perturbed = _attack_numbers(ctx, target, findings)
    ids = _identifiers(ctx, identifiers, declared, numeric, weight, findings)
    # the leaks first (they hold whatever the target), then the target's bounds
    risk, k_viol, met = _risk_panel(ctx, keys, linked, target, findings)
    determined = sum(n for (via_household, n) in recovered if not via_household)
    via_household = sum(n for (hh, n) in recovered if hh)
    return ReleaseCheck(
        n_records=rel.height,
        keys=risk.keys,
        k=target.k,
        k_violations=k_viol,
        smallest_class=risk.smallest_class,
        expected_reidentifications=risk.expected_reidentifications,
        global_risk_pct=risk.global_risk_pct,
        highest_risk=risk.highest_risk,
        household_expected_reidentifications=risk.household_expected_reidentifications,
        household_risk_pct=risk.household_risk_pct,
        recoverable_values=determined + via_household,
        determined_values=determined,
        household_values=via_household,
        identifiers=tuple(ids),
        target_met=met,
        findings=tuple(findings),
        risk=risk,
        attacks=tuple(attacks + numeric_results),
        perturbed_values=perturbed,
        target=target,
    )


def _frame(data: Any, what: str) -> pl.DataFrame:
    if isinstance(data, pl.DataFrame):
        return data
    try:
        frame, _ = to_polars(data)
    except Exception:
        raise ColumnError(
            f"The {what} file must be a data frame (polars, pandas or pyarrow)."
        ) from None
    return frame


# ------------------------------------------------------------------------------ context
@dataclass
class _Context:
    """The aligned files, the roles, the protected values and the channels."""

    orig: pl.DataFrame
    rel: pl.DataFrame
    roles: dict[str, str]
    households: np.ndarray | None
    household_id: str | None
    hh_constant: set[str]
    targets: list[CategoricalTarget]
    numbers: list[NumericTarget]
    channels: Channels
    linking: dict[str, bool]
    seed: int

    @classmethod
    def build(
        cls,
        orig: pl.DataFrame,
        rel: pl.DataFrame,
        *,
        keys: Sequence[str],
        linked: dict[str, str],
        household: str | None,
        household_level: Sequence[str],
        numeric: Sequence[str],
        weight: str | None,
        sensitive: Sequence[str],
        household_id: str | None,
        seed: int,
    ) -> _Context:
        roles: dict[str, str] = {}
        for c in keys:
            roles[c] = "key"
        for c in linked:
            roles.setdefault(c, "linked")
        for c in sensitive:
            roles.setdefault(c, "sensitive")
        for c in numeric:
            roles.setdefault(c, "numeric")
        for c in household_level:
            roles.setdefault(c, "household-level")
        if weight is not None:
            roles[weight] = "weight"
        if household is not None:
            roles[household] = "household id"
        households = index = None
        if household is not None and household in orig.columns:
            households, _ = codes(orig.get_column(household))
            index = GroupIndex(households)
        if household_id is not None and household_id not in rel.columns:
            household_id = None
        # household-wide variables: declared, or the same for every member in the original
        hh_constant: set[str] = set()
        if households is not None:
            hh_constant = {c for c in household_level if c in orig.columns}
            hh_constant |= set(
                household_columns(index, orig, [c for c in orig.columns if c != household])
            )
        watched = [c for c in dict.fromkeys([*keys, *linked, *household_level, *sensitive])
                   if c in orig.columns and c not in numeric]  # fmt: skip
        # what an intruder without any channel reads: the released keys and numbers
        comparable = {c: _comparable_column(rel.get_column(c)) for c in
                      dict.fromkeys([*keys, *numeric]) if c in rel.columns}  # fmt: skip
        targets = []
        for c in watched:
            t = categorical_target(
                c,
                orig.get_column(c),
                rel.get_column(c) if c in rel.columns else None,
                household_level=c in hh_constant,
                is_size=households is not None and is_size_of(households, orig.get_column(c)),
            )
            if t is not None:
                targets.append(_with_comparable(t, rel, comparable, keys, seed))
        numbers = []
        for c in dict.fromkeys([*numeric, *(h for h in household_level if h in numeric)]):
            if c in orig.columns:
                nt = numeric_target(
                    c, orig.get_column(c), rel.get_column(c) if c in rel.columns else None,
                    household_level=c in hh_constant,
                )  # fmt: skip
                if nt is not None:
                    numbers.append(nt)
        # the household-wide released columns that link members (clean of protected gaps)
        gapped = {t.name for t in targets if t.learn.any()}
        linkers, size_column = [], None
        if households is not None and index is not None:
            for c in rel.columns:
                if c == household_id or c in gapped:
                    continue
                s = rel.get_column(c)
                if s.n_unique() >= 2 and index.constant(s):
                    linkers.append(c)
                if size_column is None and is_size_of(households, s):
                    size_column = c
        channels = build_channels(
            rel, households=households, household_id=household_id,
            household_columns=linkers, size_column=size_column,
        )  # fmt: skip
        ctx = cls(orig, rel, roles, households, household_id, hh_constant, targets, numbers,
                  channels, {}, seed)  # fmt: skip
        ctx.linking = {g.label: ctx._rebuilds_households(g) for g in channels.groupings}
        return ctx

    def _rebuilds_households(self, g: Grouping) -> bool:
        """Whether the grouping's groups are the households (for most records)."""
        if self.households is None or g.rows is not None:
            return False
        n_households = int(self.households.max()) + 1
        if not 0.5 * n_households <= g.n_groups <= 2 * n_households:
            return False
        frame = pl.DataFrame({"g": g.codes, "h": self.households})
        ok = frame.with_columns(
            pl.col("h").n_unique().over("g").alias("hg"),
            pl.col("g").n_unique().over("h").alias("gh"),
        ).select(((pl.col("hg") == 1) & (pl.col("gh") == 1) & (pl.col("g") >= 0)).mean())
        return float(ok.item()) >= HOUSEHOLD_MATCH

    def via_household(self, g: Guesses | NumericEstimate) -> bool:
        return g.household or self.linking.get(g.label, False)

    def declared_role(self, column: str) -> str:
        return self.roles.get(column, "not mentioned" if column in self.orig.columns else "new")


# ------------------------------------------------------------------------------ (a) risk
def _risk_panel(
    ctx: _Context,
    keys: Sequence[str],
    linked: dict[str, str],
    target: ReleaseTarget,
    findings: list[ReleaseFinding],
) -> tuple[ReleaseRisk, int, bool]:
    rel, orig = ctx.rel, ctx.orig
    present = set(rel.columns)
    finer = []
    for c, key in linked.items():
        if c in present and key in orig.columns and not _function_of(orig, key, c):
            finer.append(c)
    eff_keys = [k for k in keys if k in present] + finer
    weight = next((c for c, r in ctx.roles.items() if r == "weight"), None)
    if weight is not None and weight in present:
        w, source = as_number(rel.get_column(weight)), "the released weights"
    elif weight is not None and weight in orig.columns:
        w, source = as_number(orig.get_column(weight)), "the original weights (not released)"
    else:
        w, source = None, "the file itself (no weights: a census)"
    link = None
    if ctx.household_id is not None:
        link = f"the household id {ctx.household_id!r}"
    else:
        rebuilt = [label for label, yes in ctx.linking.items() if yes]
        if rebuilt:
            link = f"households rebuilt from {rebuilt[0]}"
    risk = released_risk(rel, eff_keys, w, source, ctx.households, link)
    k_viol = risk.k_violations(target.k) if target.k is not None else 0
    if k_viol:
        findings.append(ReleaseFinding(
            "k_anonymity", ", ".join(eff_keys), "fk", k_viol,
            f"{k_viol} released records share their key combination ({', '.join(eff_keys)}) "
            f"with fewer than {target.k - 1} others.",  # type: ignore[operator]
            remedies=(Remedy("protect_keys", None, ", ".join(eff_keys)),),
        ))  # fmt: skip
    met = k_viol == 0
    measured = {
        "max_global_risk_pct": (risk.global_risk_pct, "global risk (%)"),
        "max_expected_reidentifications": (risk.expected_reidentifications,
                                           "expected re-identifications"),
        "max_individual_risk": (risk.highest_risk, "highest individual risk"),
        "max_household_risk_pct": (risk.household_risk_pct, "household risk (%)"),
        "max_household_expected_reidentifications": (
            risk.household_expected_reidentifications,
            "expected re-identifications through households"),
    }  # fmt: skip
    for name, bound in target.bounds.items():
        value, label = measured[name]
        if value is None:
            # a household bound of a file that does not link households holds trivially; a
            # file without keys has no key risk to bound
            continue
        if value > bound:
            met = False
            findings.append(ReleaseFinding(
                "risk", "", label, value,
                f"The released file's {label} is {value:.6g} (target <= {bound:g}; "
                f"{risk.intruder}).",
                remedies=(Remedy("protect_keys", None, ", ".join(eff_keys)),),
            ))  # fmt: skip
    return risk, k_viol, met


def _comparable_column(s: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A released key or number as a feature of comparable records and its groups (a key's
    values, a missing value as a value of its own; a number's tenths)."""
    if s.dtype.is_numeric():
        x = as_number(s)
        groups = tenths(x)
        none = np.full(len(x), -1, np.int64)
        return x, (groups if groups is not None else none)  # trees take NaN as missing
    cc, _ = codes(s)
    return cc.astype(np.float64), cc + 1


def _with_comparable(
    t: CategoricalTarget,
    rel: pl.DataFrame,
    comparable: dict[str, tuple[np.ndarray, np.ndarray]],
    keys: Sequence[str],
    seed: int,
) -> CategoricalTarget:
    """``t`` with its comparable records (see :mod:`sdckit.release._chance`)."""
    others = {c: v for c, v in comparable.items() if c != t.name}
    learn = fine = None
    if t.learn.any():
        shown = np.flatnonzero((t.labels >= 0) & ~t.learn)
        sets = [(groups, shown) for _, groups in others.values()]
        features = (np.column_stack([x for x, _ in others.values()]) if others
                    else np.zeros((rel.height, 0)))  # fmt: skip
        leaves = tree_leaves(features, t.labels, shown, seed)
        if leaves is not None:
            sets.append(leaves)
        learn = comparable_sets(t.labels, t.n_labels, shown, sets, t.truth[t.learn])
    if t.fine.any():
        known = np.flatnonzero(t.fine_truth >= 0)
        n_fine = int(t.fine_truth.max()) + 1
        sets = [(groups, known) for c, (_, groups) in others.items() if c in keys]
        if t.present:
            own, _ = codes(rel.get_column(t.name))
            sets.append((own, known))
        fine = comparable_sets(t.fine_truth, n_fine, known, sets, t.fine_truth[t.fine])
    return replace(t, comparable=learn, fine_comparable=fine)


def _function_of(orig: pl.DataFrame, key: str, col: str) -> bool:
    """Whether ``col`` is a function of ``key`` in the original (adds nothing to the key)."""
    frame = pl.DataFrame({"k": as_text(orig.get_column(key)), "c": as_text(orig.get_column(col))})
    per = frame.drop_nulls().group_by("k").agg(pl.col("c").n_unique().alias("u"))
    return bool((per.get_column("u") <= 1).all())


# ------------------------------------------------------------------------------ (b), (c)
def _features(rel: pl.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Every released column as numbers for the tree (texts as codes; missing as NaN)."""
    cols, names = [], []
    for c in rel.columns:
        s = rel.get_column(c)
        if s.dtype.is_nested() or s.dtype in (pl.Object, pl.Null):
            continue
        if s.dtype.is_numeric() or s.dtype.is_temporal() or s.dtype == pl.Boolean:
            x = as_number(s)
        else:
            cc, _ = codes(s)
            x = np.where(cc >= 0, cc, np.nan).astype(np.float64)
        cols.append(x)
        names.append(c)
    if not cols:
        return np.zeros((rel.height, 0)), []
    return np.column_stack(cols), names


def _attack_all(
    ctx: _Context, target: ReleaseTarget, findings: list[ReleaseFinding]
) -> tuple[list[AttackResult], list[tuple[bool, int]]]:
    results: list[AttackResult] = []
    recovered: list[tuple[bool, int]] = []
    features, names = _features(ctx.rel) if ctx.targets else (np.zeros((0, 0)), [])
    gamma = target.confidence
    for t in ctx.targets:
        if t.learn.any():
            guesses: list[Guesses] = []
            for g in ctx.channels.groupings:
                if g.column == t.name:
                    continue
                guesses.append(group_guesses(t, g, gamma))
                if t.is_size:
                    guesses.append(count_guesses(t, g, gamma))
            for o in ctx.channels.orderings:
                if o.column != t.name:
                    guesses.append(neighbour_guesses(t, o, gamma))
            guesses.append(tree_guesses(t, features, names, gamma, ctx.seed))
            # what an intruder who knows the coding scheme reads (an exact age gives the
            # age group even where no record of that age shows its group)
            for g in ctx.channels.groupings:
                if g.column != t.name:
                    guesses.append(structure_guesses(t, g, t.shown_truth, fine=False))
            if t.shown_ordinal is not None:
                for o in ctx.channels.orderings:
                    if o.column != t.name:
                        guesses.append(monotone_guesses(t, o, t.shown_ordinal, fine=False))
            _score(ctx, t, guesses, t.truth, t.comparable,
                   int(t.learn.sum()), "suppressed or perturbed", target, findings, results,
                   recovered)  # fmt: skip
        if t.fine.any():
            guesses = []
            for g in ctx.channels.groupings:
                if g.column != t.name:
                    guesses.append(structure_guesses(t, g, t.fine_truth))
                    if t.is_size:
                        guesses.append(count_guesses(t, g, gamma, fine=True))
            if t.fine_ordinal is not None:
                for o in ctx.channels.orderings:
                    if o.column != t.name:
                        guesses.append(monotone_guesses(t, o, t.fine_ordinal))
            kind = "recoded" if t.present else "withheld"
            _score(ctx, t, guesses, t.fine_truth, t.fine_comparable, int(t.fine.sum()), kind,
                   target, findings, results, recovered)  # fmt: skip
    return results, recovered


def _beyond(right: np.ndarray, chance: np.ndarray, confidence: np.ndarray, allowed: float) -> bool:
    """Whether right guesses beat chance by more than the tolerance, and not by luck: by
    more than half a value and three standard deviations of the chance count, or through
    guesses the attacker was certain of (a channel exact on the records that show their
    values, such as the other members of a household) that are right nine times in ten."""
    excess = float(right.sum()) - float(chance.sum())
    if excess <= max(allowed, 0.0):
        return False
    sd = float(np.sqrt((chance * (1.0 - chance)).sum()))
    if excess > max(NOISE_Z * sd, 0.5):
        return True
    certain = confidence >= CERTAIN
    hits = float(right[certain].sum())
    return (
        bool(certain.any())
        and hits >= 0.9 * certain.sum()
        and hits - float(chance[certain].sum()) >= 0.5
    )


def _score(
    ctx: _Context,
    t: CategoricalTarget,
    guesses: list[Guesses],
    truth: np.ndarray,
    comparable: Comparable | None,
    protected: int,
    kind: str,
    target: ReleaseTarget,
    findings: list[ReleaseFinding],
    results: list[AttackResult],
    recovered: list[tuple[bool, int]],
) -> None:
    """Score every attack on one kind of protected values of ``t``; record the findings."""
    allowed = target.tolerance * protected
    per_channel = []
    for g in guesses:
        if len(g.rows) == 0:
            continue
        right = g.values == truth[g.rows]
        hits = int(right.sum())
        chance = (comparable.chance(g.rows, g.values, truth[g.rows]) if comparable is not None
                  else np.zeros(len(g.rows)))  # fmt: skip
        beyond = _beyond(right, chance, g.confidence, allowed)
        per_channel.append((g, hits, float(chance.sum()), beyond, right, chance))
    # the attacker's answer for each record: its most confident guess
    if per_channel:
        rows = np.concatenate([g.rows for g, *_ in per_channel])
        vals = np.concatenate([g.values for g, *_ in per_channel])
        conf = np.concatenate([g.confidence for g, *_ in per_channel])
        odds = np.concatenate([p[5] for p in per_channel])
        via = np.concatenate([np.full(len(g.rows), i) for i, (g, *_) in enumerate(per_channel)])
        order = np.lexsort((via, -conf, rows))
        first = np.ones(len(order), dtype=bool)
        first[1:] = rows[order][1:] != rows[order][:-1]
        sel = order[first]
        rows, vals, via, conf, odds = rows[sel], vals[sel], via[sel], conf[sel], odds[sel]
        right = vals == truth[rows]
        hits, expected = int(right.sum()), float(odds.sum())
        given_back = _beyond(right, odds, conf, allowed)
    else:
        rows = np.zeros(0, dtype=np.int64)
        hits, expected, given_back, right, via = 0, 0.0, False, np.zeros(0, bool), rows
    best = max(per_channel, key=lambda p: p[1], default=None)
    results.append(AttackResult(
        t.name, kind, protected, len(rows), hits, expected, given_back,
        best[0].label if best is not None and best[1] else "",
    ))  # fmt: skip
    if not given_back:
        return
    household_hits = sum(
        int(right[via == i].sum()) for i, (g, *_) in enumerate(per_channel)
        if ctx.via_household(g)
    )  # fmt: skip
    recovered.append((True, household_hits))
    recovered.append((False, hits - household_hits))
    # one finding per column (its best channel); the tree only when it adds to them
    reported: dict[str, tuple] = {}
    for p in sorted(per_channel, key=lambda p: -p[1]):
        if p[3] and p[0].kind != "tree":
            reported.setdefault(p[0].column or p[0].label, p)
    best_column = max((p[1] for p in reported.values()), default=0)
    tree = [p for p in per_channel if p[0].kind == "tree" and p[3]]
    if tree and (not reported or tree[0][1] > 1.2 * best_column):
        reported["tree"] = tree[0]
    if not reported:  # only together: report the best channel as one finding
        best_all = max(per_channel, key=lambda p: p[1])
        reported[best_all[0].label] = best_all
    for g, h, e, *_ in reported.values():
        findings.append(_finding(ctx, t, g, h, e, protected, kind))


_HOW = {
    "groups": "the released records that share its value show them",
    "neighbours": "the neighbouring records in that order show them",
    "tree": "it predicts them from the records that show them",
    "counting": "counting the records that share its value gives them",
    "structure": "each of its values goes with one value of {t} in the released records",
    "order": "{t} follows it in order, so a transformation of it gives them",
}


def _finding(
    ctx: _Context,
    t: CategoricalTarget,
    g: Guesses,
    hits: int,
    expected: float,
    protected: int,
    kind: str,
) -> ReleaseFinding:
    what = {"suppressed or perturbed": "protected", "recoded": "recoded (fine)",
            "withheld": "withheld"}[kind]  # fmt: skip
    channel = g.label
    subject = f"The column {channel}" if g.column and g.label.startswith("'") else channel
    subject = subject[0].upper() + subject[1:]
    how = _HOW[g.kind].format(t=repr(t.name))
    household = ctx.via_household(g)
    text = (
        f"{subject} gives back {hits:,} of {protected:,} {what} values of {t.name!r} ({how}; "
        f"chance would give {expected:,.0f})."
    )
    return ReleaseFinding(
        "household" if household else "determined",
        g.column or ("record order" if g.kind == "neighbours" else "all columns"),
        t.name, hits, text, protected, expected, _remedies(ctx, t, g, household),
    )  # fmt: skip


def _remedies(
    ctx: _Context, t: CategoricalTarget, g: Guesses, household: bool
) -> tuple[Remedy, ...]:
    c = g.column
    role = ctx.declared_role(c) if c else ""
    if g.kind == "neighbours" and not c:
        return (Remedy("shuffle"),)
    if g.kind == "tree" and role in ("key", "numeric", ""):
        return (Remedy("suppress", None, t.name),)
    if role == "weight":
        return (Remedy("calibrate_weights", c, t.name), Remedy("drop", c, t.name))
    if household:
        out = []
        if g.kind == "counting" or t.is_size:
            out.append(Remedy("derive_household_size", c, t.name))
        elif t.household_level and ctx.roles.get(t.name) != "household-level":
            out.append(Remedy("household_level", c, t.name))
        if c == ctx.household_id:
            out.append(Remedy("drop_household_id", c, t.name))
        elif c:
            out.append(Remedy("drop", c, t.name))
        return tuple(out) or (Remedy("suppress", None, t.name),)
    if role in ("not mentioned", "new"):
        out = [Remedy("drop", c, t.name)]
        if g.kind == "groups" and g.label == repr(c) and t.present:
            out.append(Remedy("link", c, t.name))
        else:
            out.append(Remedy("recode", c, t.name))
        return tuple(out)
    if role == "household id":
        return (Remedy("drop_household_id", c, t.name),)
    return (Remedy("suppress", None, t.name), Remedy("drop", c, t.name))


def _attack_numbers(
    ctx: _Context, target: ReleaseTarget, findings: list[ReleaseFinding]
) -> tuple[list[AttackResult], int]:
    results: list[AttackResult] = []
    total = 0
    numbers = {c: as_number(ctx.rel.get_column(c)) for c in ctx.rel.columns
               if ctx.rel.schema[c].is_numeric()}  # fmt: skip
    for t in ctx.numbers:
        estimates: list[NumericEstimate] = []
        for g in ctx.channels.groupings:
            e = average_estimates(t, g)
            if e is not None:
                estimates.append(e)
        for name, values in numbers.items():
            if name != t.name:
                e = regression_estimates(t, name, values)
                if e is not None:
                    estimates.append(e)
        protected = int((t.perturbed | t.suppressed).sum())
        best = None
        for e in estimates:
            truth = t.original[e.rows]
            err = np.abs(e.estimate - truth)
            released_err = np.where(
                t.suppressed[e.rows], np.abs(truth), np.abs(t.released[e.rows] - truth)
            )
            closer = int(np.count_nonzero(err < released_err))
            med_e, med_r = float(np.median(err)), float(np.median(released_err))
            beyond = len(e.rows) >= 10 and med_e < (1.0 - max(target.tolerance, 0.1)) * med_r
            if best is None or (beyond, closer) > (best[1], best[2]):
                best = (e, beyond, closer, med_e, med_r)
            if beyond:
                findings.append(ReleaseFinding(
                    "perturbed", e.column, t.name, closer,
                    f"{_numeric_subject(e)} brings {closer:,} of {protected:,} perturbed values "
                    f"of {t.name!r} closer to the truth than released (median error "
                    f"{med_e:,.4g} instead of {med_r:,.4g}).",
                    protected, 0.5 * len(e.rows), _numeric_remedies(ctx, t, e),
                ))  # fmt: skip
        given = best is not None and best[1]
        if given:
            total += best[2]  # type: ignore[index]
        results.append(AttackResult(
            t.name, "perturbed number", protected, 0 if best is None else len(best[0].rows),
            0 if best is None else best[2], 0.0 if best is None else 0.5 * len(best[0].rows),
            bool(given), "" if best is None else best[0].label,
        ))  # fmt: skip
    return results, total


def _numeric_subject(e: NumericEstimate) -> str:
    if e.kind == "averaging":
        return f"Averaging the records that share {e.label}"
    return f"A regression on the column {e.label}"


def _numeric_remedies(ctx: _Context, t: NumericTarget, e: NumericEstimate) -> tuple[Remedy, ...]:
    if e.kind == "averaging" and t.household_level and ctx.roles.get(t.name) != "household-level":
        return (Remedy("household_level", e.column, t.name),)
    role = ctx.declared_role(e.column)
    if role in ("not mentioned", "new"):
        return (Remedy("drop", e.column, t.name),)
    return (Remedy("drop", e.column, t.name),)


# ------------------------------------------------------------------------------ (d)
def _identifiers(
    ctx: _Context,
    identifiers: Sequence[str],
    declared: Sequence[str] | None,
    numeric: Sequence[str],
    weight: str | None,
    findings: list[ReleaseFinding],
) -> list[str]:
    rel = ctx.rel
    ids = [c for c in identifiers if c in rel.columns]
    for c in ids:
        findings.append(ReleaseFinding(
            "identifier", c, c, rel.height, f"The direct identifier {c!r} is in the file.",
            remedies=(Remedy("drop", c, c),),
        ))  # fmt: skip
    mentioned = set(declared) if declared is not None else set(ctx.orig.columns)
    measured = set(numeric) | ({weight} if weight else set())
    for c in rel.columns:
        if c in ids or c == ctx.household_id or (c in mentioned and c in ctx.orig.columns):
            continue
        if c in measured:
            continue
        s = rel.get_column(c)
        kept = int((~is_missing(s)).sum())
        if kept < IDENTIFIER_MIN:
            continue
        distinct = as_text(s).drop_nulls().n_unique()
        if distinct >= IDENTIFIER_SHARE * kept:
            ids.append(c)
            share = 100.0 * distinct / kept
            findings.append(ReleaseFinding(
                "identifier", c, c, rel.height,
                f"The column {c!r}, which the release does not mention, has a different value "
                f"in {share:.0f} % of the records: it identifies records.",
                remedies=(Remedy("drop", c, c), Remedy("identifier", c, c)),
            ))  # fmt: skip
    return ids
