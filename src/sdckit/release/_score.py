"""Scoring the attacks with the truth, and wording what they found (findings and remedies)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdckit.release._attack import (
    Guesses,
    NumericEstimate,
    average_estimates,
    regression_estimates,
)
from sdckit.release._chance import Comparable
from sdckit.release._context import Context
from sdckit.release._encode import as_number
from sdckit.release._findings import ReleaseFinding, Remedy
from sdckit.release._result import AttackResult, ReleaseTarget
from sdckit.release._targets import (
    CategoricalTarget,
    NumericTarget,
)

__all__ = ["Scored", "attack_numbers", "score"]

#: Standard deviations of the chance count that right guesses must exceed (unless the
#: attacker was certain of them).
NOISE_Z = 3.0
#: A guess is certain from this confidence (a channel exact on the records that show values).
CERTAIN = 0.99


def _beyond(
    right: np.ndarray,
    chance: np.ndarray,
    confidence: np.ndarray,
    allowed: float,
    clusters: np.ndarray | None = None,
) -> bool:
    """Whether right guesses beat chance by more than the tolerance, and not by luck: by
    more than half a value and three standard deviations of the chance count, or through
    guesses the attacker was certain of (a channel exact on the records that show their
    values, such as the other members of a household) that are right nine times in ten.

    ``clusters`` groups guesses that are right or wrong together (the members of a household
    given the same guess of a household-wide value): their luck is one draw, so a cluster's
    standard deviations add up instead of their variances."""
    excess = float(right.sum()) - float(chance.sum())
    if excess <= max(allowed, 0.0):
        return False
    spread = np.sqrt(chance * (1.0 - chance))
    if clusters is None:
        sd = float(np.sqrt((spread**2).sum()))
    else:
        _, cluster = np.unique(clusters, return_inverse=True)
        sd = float(np.sqrt((np.bincount(cluster.ravel(), weights=spread) ** 2).sum()))
    if excess > max(NOISE_Z * sd, 0.5):
        return True
    certain = confidence >= CERTAIN
    hits = float(right[certain].sum())
    return (
        bool(certain.any())
        and hits >= 0.9 * certain.sum()
        and hits - float(chance[certain].sum()) >= 0.5
    )


def _clusters(
    households: np.ndarray | None, rows: np.ndarray, values: np.ndarray
) -> np.ndarray | None:
    """The guesses that stand or fall together: one household, one guessed value (for a
    household-wide target, whose true value is the same for every member)."""
    if households is None:
        return None
    h = households[rows].astype(np.int64)
    # a record without a household id is a cluster of its own
    return np.where(h >= 0, h * (int(values.max(initial=0)) + 2) + values + 1, -1 - rows)


@dataclass(frozen=True)
class _Channel:
    """One attack on one target, scored."""

    guesses: Guesses
    right: np.ndarray
    chance: np.ndarray
    beyond: bool

    @property
    def hits(self) -> int:
        return int(self.right.sum())


@dataclass(frozen=True)
class Scored:
    """The attacks on one kind of protected values of a variable, scored.

    ``result`` is the variable's line of the attack table; ``findings`` the channels that gave
    values back (when the variable is given back); ``via_household`` and ``via_columns`` the
    values got back through the household and through the other channels.
    """

    result: AttackResult
    findings: tuple[ReleaseFinding, ...] = ()
    via_household: int = 0
    via_columns: int = 0


def score(
    ctx: Context,
    t: CategoricalTarget,
    guesses: list[Guesses],
    truth: np.ndarray,
    comparable: Comparable | None,
    protected: int,
    kind: str,
    target: ReleaseTarget,
) -> Scored:
    """Score every attack on one kind of protected values of ``t`` (``truth``: the true codes
    of every record; ``protected``: how many values are protected) and word the findings."""
    allowed = target.tolerance * protected
    households = ctx.households if t.household_level else None
    channels = []
    for g in guesses:
        if len(g.rows) == 0:
            continue
        right = g.values == truth[g.rows]
        chance = (comparable.chance(g.rows, g.values, truth[g.rows]) if comparable is not None
                  else np.zeros(len(g.rows)))  # fmt: skip
        beyond = _beyond(
            right, chance, g.confidence, allowed, _clusters(households, g.rows, g.values)
        )
        channels.append(_Channel(g, right, chance, beyond))
    if not channels:
        return Scored(AttackResult(t.name, kind, protected, 0, 0, 0.0, False, ""))
    # the attacker's answer for each record: its most confident guess
    rows = np.concatenate([c.guesses.rows for c in channels])
    conf = np.concatenate([c.guesses.confidence for c in channels])
    right = np.concatenate([c.right for c in channels])
    odds = np.concatenate([c.chance for c in channels])
    via = np.concatenate([np.full(len(c.guesses.rows), i) for i, c in enumerate(channels)])
    order = np.lexsort((via, -conf, rows))
    first = np.ones(len(order), dtype=bool)
    first[1:] = rows[order][1:] != rows[order][:-1]
    sel = order[first]
    right, via, conf, odds = right[sel], via[sel], conf[sel], odds[sel]
    values = np.concatenate([c.guesses.values for c in channels])[sel]
    given_back = _beyond(right, odds, conf, allowed, _clusters(households, rows[sel], values))
    best = max(channels, key=lambda c: c.hits)
    result = AttackResult(
        t.name, kind, protected, len(sel), int(right.sum()), float(odds.sum()), given_back,
        best.guesses.label if best.hits else "",
    )  # fmt: skip
    if not given_back:
        return Scored(result)
    household = sum(
        int(right[via == i].sum()) for i, c in enumerate(channels) if ctx.via_household(c.guesses)
    )  # fmt: skip
    # one finding per column (its best channel); the tree only when it adds to them
    reported: dict[str, _Channel] = {}
    for c in sorted(channels, key=lambda c: -c.hits):
        if c.beyond and c.guesses.kind != "tree":
            reported.setdefault(c.guesses.column or c.guesses.label, c)
    best_column = max((c.hits for c in reported.values()), default=0)
    tree = [c for c in channels if c.guesses.kind == "tree" and c.beyond]
    if tree and (not reported or tree[0].hits > 1.2 * best_column):
        reported["tree"] = tree[0]
    if not reported:  # only together: report the best channel as one finding
        reported[best.guesses.label] = best
    findings = tuple(
        _finding(ctx, t, c.guesses, c.hits, float(c.chance.sum()), protected, kind)
        for c in reported.values()
    )
    return Scored(result, findings, household, int(right.sum()) - household)


_HOW = {
    "groups": "the released records that share its value show them",
    "neighbours": "the neighbouring records in that order show them",
    "tree": "it predicts them from the records that show them",
    "counting": "counting the records that share its value gives them",
    "structure": "each of its values goes with one value of {t} in the released records",
    "order": "{t} follows it in order, so a transformation of it gives them",
}


def _finding(
    ctx: Context,
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
    ctx: Context, t: CategoricalTarget, g: Guesses, household: bool
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


def attack_numbers(
    ctx: Context, target: ReleaseTarget, findings: list[ReleaseFinding]
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


def _numeric_remedies(ctx: Context, t: NumericTarget, e: NumericEstimate) -> tuple[Remedy, ...]:
    if e.kind == "averaging" and t.household_level and ctx.roles.get(t.name) != "household-level":
        return (Remedy("household_level", e.column, t.name),)
    role = ctx.declared_role(e.column)
    if role in ("not mentioned", "new"):
        return (Remedy("drop", e.column, t.name),)
    return (Remedy("drop", e.column, t.name),)
