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
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import to_polars
from sdckit.errors import ColumnError, DataError
from sdckit.release._attack import (
    Guesses,
    count_guesses,
    group_guesses,
    monotone_guesses,
    neighbour_guesses,
    structure_guesses,
    tree_guesses,
)
from sdckit.release._context import THREADS, Context
from sdckit.release._encode import as_number, as_text, codes, is_missing
from sdckit.release._findings import ReleaseFinding, Remedy
from sdckit.release._result import AttackResult, ReleaseCheck, ReleaseTarget
from sdckit.release._risk import ReleaseRisk, released_risk
from sdckit.release._score import Scored, attack_numbers, score
from sdckit.release._targets import CategoricalTarget

__all__ = ["AttackResult", "ReleaseCheck", "ReleaseTarget", "check_release"]

#: Share of distinct values (among the non-missing ones) from which an undeclared column
#: identifies records.
IDENTIFIER_SHARE = 0.95
#: Fewest non-missing values for the identifier rule (a tiny file is all distinct anyway).
IDENTIFIER_MIN = 20


# ------------------------------------------------------------------------------ the check


def _fewer_than(others: int) -> str:
    """ "no other record", "fewer than 2 other records", ..."""
    return "no other record" if others <= 1 else f"fewer than {others} other records"


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
    ctx = Context.build(orig, rel, keys=keys, linked=linked, household=household,
                         household_level=household_level, numeric=numeric, weight=weight,
                         sensitive=sensitive, household_id=household_id, seed=seed)  # fmt: skip
    scored = _attack_all(ctx, target)
    findings: list[ReleaseFinding] = [f for s in scored for f in s.findings]
    numeric_results, perturbed = attack_numbers(ctx, target, findings)
    ids = _identifiers(ctx, identifiers, declared, numeric, weight, findings)
    # the leaks first (they hold whatever the target), then the target's bounds
    risk, k_viol, met = _risk_panel(ctx, keys, linked, target, findings)
    determined = sum(s.via_columns for s in scored)
    via_household = sum(s.via_household for s in scored)
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
        attacks=tuple([s.result for s in scored] + numeric_results),
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


# ------------------------------------------------------------------------------ (a) risk
def _risk_panel(
    ctx: Context,
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
    risk = released_risk(ctx.coded, eff_keys, w, source, ctx.households, link)
    k_viol = risk.k_violations(target.k) if target.k is not None else 0
    if k_viol:
        findings.append(ReleaseFinding(
            "k_anonymity", ", ".join(eff_keys), "fk", k_viol,
            f"{k_viol} released records share their key combination ({', '.join(eff_keys)}) "
            f"with {_fewer_than(target.k - 1)} (k = {target.k}).",  # type: ignore[operator]
            remedies=(Remedy("protect_keys", None, ", ".join(eff_keys)),),
        ))  # fmt: skip
    met = k_viol == 0
    measured = risk.measures()
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


def _attack_all(ctx: Context, target: ReleaseTarget) -> list[Scored]:
    """Every attack on every protected categorical variable, scored (the variables in
    threads, :data:`sdckit.release._context.THREADS`; the results in the variables' order)."""
    from concurrent.futures import ThreadPoolExecutor

    features, names = _features(ctx.rel) if ctx.targets else (np.zeros((0, 0)), [])

    def attack(t: CategoricalTarget) -> list[Scored]:
        return _attack_one(ctx, t, target, features, names)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return [s for scored in pool.map(attack, ctx.targets) for s in scored]


def _attack_one(
    ctx: Context,
    t: CategoricalTarget,
    target: ReleaseTarget,
    features: np.ndarray,
    names: list[str],
) -> list[Scored]:
    """Every attack on the protected values of ``t``, scored."""
    out: list[Scored] = []
    gamma = target.confidence
    others = [g for g in ctx.channels.groupings if g.column != t.name]
    orders = [o for o in ctx.channels.orderings if o.column != t.name]
    if t.learn.any():
        guesses: list[Guesses] = [group_guesses(t, g, gamma, ctx.sampled) for g in others]
        if t.is_size:
            guesses += [count_guesses(t, g, gamma) for g in others]
        guesses += [neighbour_guesses(t, o, gamma) for o in orders]
        guesses.append(tree_guesses(t, features, names, gamma, ctx.seed))
        # what an intruder who knows the coding scheme reads (an exact age gives the age
        # group even where no record of that age shows its group)
        guesses += [structure_guesses(t, g, t.shown_truth, fine=False) for g in others]
        if t.shown_ordinal is not None:
            guesses += [monotone_guesses(t, o, t.shown_ordinal, fine=False) for o in orders]
        out.append(score(ctx, t, guesses, t.truth, t.comparable, int(t.learn.sum()),
                         "suppressed or perturbed", target))  # fmt: skip
    if t.fine.any():
        guesses = [structure_guesses(t, g, t.fine_truth) for g in others]
        if t.is_size:
            guesses += [count_guesses(t, g, gamma, fine=True) for g in others]
        if t.fine_ordinal is not None:
            guesses += [monotone_guesses(t, o, t.fine_ordinal) for o in orders]
        kind = "recoded" if t.present else "withheld"
        out.append(score(ctx, t, guesses, t.fine_truth, t.fine_comparable,
                         int(t.fine.sum()), kind, target))  # fmt: skip
    return out


# ------------------------------------------------------------------------------ (d)
def _identifiers(
    ctx: Context,
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
