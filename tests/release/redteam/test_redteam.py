"""Red team: releases that contain a known weakness, attacked by independent attackers.

Each scenario protects a synthetic household survey the way a user would (roles, masking
methods, a release plan) but leaves one weakness in the file: a column that gives a suppressed
or recoded value back, the original record order, a household that can be rebuilt, a person
number.  The attackers (``attackers.py``) read only the file as written; the harness
(``harness.py``) scores their guesses with the original.

The property every test asserts: EITHER the release check refuses the file (and then
``Release.write`` raises ``VerificationError``) OR the attacker gets back nothing beyond chance
(``Score.beyond_chance`` is False; the margin is defined and justified in ``harness.py``).
Which of the two happens is not asserted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.release.redteam.attackers import ATTACKS, Guess
from tests.release.redteam.harness import Score, score

from sdckit import Microdata
from sdckit.datasets import generate_household_survey
from sdckit.errors import VerificationError
from sdckit.masking import AddNoise, GlobalRecoding, LocalSuppression, TopBottomCoding
from sdckit.release import Release, ReleasePlan, release

#: Households of the test files (a few thousand persons: each test runs in seconds).
TEST_HOUSEHOLDS = 1000

#: Age classes of the recoded age (the 5-year groups of ``age_group`` nest in them).
AGE_CLASSES = {a: "0-14" if a < 15 else "15-29" if a < 30 else "30-44" if a < 45 else "45-64"
               if a < 65 else "65+" for a in range(96)}  # fmt: skip


def survey(n_households: int, seed: int) -> pl.DataFrame:
    """The survey with a 5-year age group (as many files carry beside the age)."""
    df = generate_household_survey(n_households, seed=seed)
    lower = (pl.col("age") // 5 * 5).clip(upper_bound=85)
    group = pl.format("{}-{}", lower.cast(pl.String).str.zfill(2), (lower + 4).cast(pl.String))
    group = pl.when(lower == 85).then(pl.lit("85+")).otherwise(group)
    return df.with_columns(age_group=group)


def suppress(md: Microdata, k: int, first: str) -> Microdata:
    """Local suppression to k-anonymity that suppresses ``first`` before the other keys."""
    importance = {key: i + 1 for i, key in enumerate(c for c in md.keys if c != first)}
    importance[first] = len(md.keys)
    return LocalSuppression(k=k, importance=importance).apply(md).microdata


def others(df: pl.DataFrame, keep: list[str]) -> list[str]:
    """The columns of ``df`` not in ``keep`` (a plan's ``drop``: the kept ones stay unmentioned)."""
    return [c for c in df.columns if c not in keep]


Built = tuple[Release, pl.DataFrame]

# Every builder takes ``weak``: True builds the release with its weakness, False the same release
# with the weakness removed the way a user would fix it (the control).


# ---------------------------------------------------------------------- 1. shared values
def weight_after_region_suppression(n: int, seed: int, weak: bool = True, k: int = 5) -> Built:
    """The calibrated weight (one value per region x sex x age class) beside suppressed regions.

    Control: the weight is not released.
    """
    df = survey(n, seed).with_columns(pl.col("age").replace_strict(AGE_CLASSES).alias("age"))
    keys = ["region", "sex", "age", "household_size", "education"]
    md = Microdata(
        df,
        keys=keys,
        weight="weight",
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
    )
    kept = [*keys, "income", *(["weight"] if weak else [])]
    plan = ReleasePlan(keep=kept, household_id="drop")
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


# ---------------------------------------------------------------------- 2. transformations
def _banded_age(n: int, seed: int, leave: str | None, k: int = 5) -> Built:
    """Age recoded into classes and suppressed first; ``leave`` released unmentioned."""
    df = survey(n, seed)
    keys = ["region", "sex", "age", "marital_status", "household_size", "education"]
    md = Microdata(
        df,
        keys=keys,
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
    )
    recoded = GlobalRecoding(mapping={"age": AGE_CLASSES}).apply(md).microdata
    kept = [*keys, "hh_id", *([leave] if leave else [])]
    plan = ReleasePlan(drop=others(df, kept), household_id="drop")
    return release(md, suppress(recoded, k, "age"), plan, k=k, seed=seed), df


def decimal_age_beside_banded_age(n: int, seed: int, weak: bool = True) -> Built:
    """Age recoded into classes and suppressed; the exact decimal age left unmentioned."""
    return _banded_age(n, seed, "age_decimal" if weak else None)


def date_of_birth_beside_banded_age(n: int, seed: int, weak: bool = True) -> Built:
    """Age recoded into classes and suppressed; the date of birth left unmentioned."""
    return _banded_age(n, seed, "date_of_birth" if weak else None)


def remark_beside_suppressed_region(n: int, seed: int, weak: bool = True, k: int = 5) -> Built:
    """Regions suppressed; the interviewer's remark (naming the local office) left unmentioned."""
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "household_size"]
    md = Microdata(
        df,
        keys=keys,
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
    )
    kept = [*keys, "hh_id", *(["remark"] if weak else [])]
    plan = ReleasePlan(drop=others(df, kept), household_id="drop")
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


def person_number_beside_suppressed_region(
    n: int, seed: int, weak: bool = True, k: int = 5
) -> Built:
    """Region suppressed per person (no household declared); the person number released.

    Control: the person number is declared a direct identifier.
    """
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "education"]
    md = Microdata(df, keys=keys, identifiers=[] if weak else ["person_id"])
    plan = ReleasePlan(drop=others(df, [*keys, "person_id"]))
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


def rounded_income_beside_top_coding(n: int, seed: int, weak: bool = True) -> Built:
    """Incomes top-coded at the 95th percentile; income in hundreds left unmentioned."""
    df = survey(n, seed).with_columns(
        income_hundreds=((pl.col("income") / 100).round(0) * 100).cast(pl.Int64)
    )
    keys = ["sex", "urban_rural"]
    md = Microdata(df, keys=keys, numeric=["income"], identifiers=["person_id"])
    coded = TopBottomCoding(columns=["income"], upper=0.95, quantile=True).apply(md).microdata
    kept = [*keys, "income", *(["income_hundreds"] if weak else [])]
    plan = ReleasePlan(drop=others(df, kept))
    return release(md, coded, plan, seed=seed), df


# ---------------------------------------------------------------------- 3. record order
def original_order_sorted_by_region(n: int, seed: int, weak: bool = True, k: int = 5) -> Built:
    """Regions suppressed per household; the file written in its original order (by region)."""
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "household_size"]
    md = Microdata(
        df,
        keys=keys,
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
    )
    order = "original" if weak else "shuffled"
    plan = ReleasePlan(keep=[*keys, "education"], household_id="drop", order=order)
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


def original_order_households_contiguous(n: int, seed: int, weak: bool = True, k: int = 5) -> Built:
    """Region suppressed per person, no household id, original order: households are runs."""
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "education", "household_size"]
    md = Microdata(df, keys=keys, identifiers=["person_id", "hh_id"])
    plan = ReleasePlan(keep=keys, order="original" if weak else "shuffled")
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


# ---------------------------------------------------------------------- 4. households
def _no_household_id(n: int, seed: int, first: str, weak: bool, k: int = 5) -> Built:
    """Keys suppressed per person (no household declared) beside the household incomes.

    Control: the household declared, region and size household-level (suppressed for the whole
    household), the household incomes not released, the household id dropped.
    """
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "household_size"]
    roles: dict[str, Any] = {"keys": keys, "identifiers": ["person_id"]}
    if weak:
        roles["identifiers"] = ["person_id", "hh_id"]
        kept = [*keys, "hh_income", "eq_income", "income"]
    else:
        roles.update(household="hh_id", household_level=["region", "household_size"])
        kept = [*keys, "income"]
    md = Microdata(df, **roles)
    plan = ReleasePlan(keep=kept, household_id="drop")
    return release(md, suppress(md, k, first), plan, k=k, seed=seed), df


def household_incomes_give_region(n: int, seed: int, weak: bool = True) -> Built:
    """No household id declared, household incomes released: members show each other's region."""
    return _no_household_id(n, seed, "region", weak)


def household_incomes_give_size(n: int, seed: int, weak: bool = True) -> Built:
    """No household id declared, household incomes released: counting members gives the size."""
    return _no_household_id(n, seed, "household_size", weak)


# ---------------------------------------------------------------------- 5. averaging
def household_income_noised_per_person(n: int, seed: int, weak: bool = True) -> Built:
    """Household income noised independently per member (not declared household-level).

    Control: household income declared household-level (noised once per household).
    """
    df = survey(n, seed)
    keys = ["sex", "urban_rural"]
    md = Microdata(
        df,
        keys=keys,
        numeric=["hh_income"],
        household="hh_id",
        household_level=[] if weak else ["hh_income"],
        identifiers=["person_id"],
    )
    noisy = AddNoise(variables=["hh_income"], noise=10.0, seed=seed).apply(md).microdata
    plan = ReleasePlan(keep=[*keys, "hh_income", "household_size"])
    return release(md, noisy, plan, seed=seed), df


# ---------------------------------------------------------------------- 6. identifiers
def _person_number(n: int, seed: int, number: pl.Expr, weak: bool, k: int = 5) -> Built:
    """Household size suppressed per household; a person number released (control: dropped)."""
    df = survey(n, seed).with_columns(number.alias("person_no"))
    keys = ["region", "sex", "age_group", "household_size"]
    md = Microdata(
        df,
        keys=keys,
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
    )
    plan = ReleasePlan(keep=[*keys, *(["person_no"] if weak else [])], household_id="drop")
    return release(md, suppress(md, k, "household_size"), plan, k=k, seed=seed), df


def float_person_number(n: int, seed: int, weak: bool = True) -> Built:
    """The person number stored as a float (101.0), two of them missing."""
    missing = pl.int_range(pl.len()).is_in([3, 17])
    number = pl.when(missing).then(None).otherwise(pl.col("person_id").cast(pl.Float64))
    return _person_number(n, seed, number, weak)


def nine_digit_person_number(n: int, seed: int, weak: bool = True) -> Built:
    """A 9-digit person number (household number + 1,000,000, then the member), one duplicated."""
    number = (pl.col("hh_id") + 1_000_000) * 100 + pl.col("member")
    duplicated = pl.when(pl.int_range(pl.len()) == 5).then(number.shift(1)).otherwise(number)
    return _person_number(n, seed, duplicated, weak)


# ---------------------------------------------------------------------- 7. learning
def age_group_beside_banded_age(n: int, seed: int, weak: bool = True) -> Built:
    """Age recoded into classes and suppressed; the 5-year age group left unmentioned."""
    return _banded_age(n, seed, "age_group" if weak else None)


def district_beside_suppressed_region(n: int, seed: int, weak: bool = True, k: int = 5) -> Built:
    """Regions suppressed; the district (region * 100 + d) left unmentioned.

    Control: the district declared linked to the region (suppressed with it).
    """
    df = survey(n, seed)
    keys = ["region", "sex", "age_group", "household_size"]
    md = Microdata(
        df,
        keys=keys,
        household="hh_id",
        household_level=["region", "household_size"],
        identifiers=["person_id"],
        linked=None if weak else {"district": "region"},
    )
    plan = ReleasePlan(drop=others(df, [*keys, "district", "hh_id"]), household_id="drop")
    return release(md, suppress(md, k, "region"), plan, k=k, seed=seed), df


# ---------------------------------------------------------------------- the suite
@dataclass(frozen=True)
class Scenario:
    """A release with a known weakness, the attacker meant for it and the target it attacks."""

    name: str
    attack: str
    target: str
    build: Callable[..., Built]


SCENARIOS = (
    Scenario("weight after region suppression", "shared values", "region",
             weight_after_region_suppression),
    Scenario("decimal age beside banded age", "transformations", "age",
             decimal_age_beside_banded_age),
    Scenario("date of birth beside banded age", "transformations", "age",
             date_of_birth_beside_banded_age),
    Scenario("remark beside suppressed region", "transformations", "region",
             remark_beside_suppressed_region),
    Scenario("person number // 100 beside region", "transformations", "region",
             person_number_beside_suppressed_region),
    Scenario("income in hundreds beside top coding", "transformations", "income",
             rounded_income_beside_top_coding),
    Scenario("original order, sorted by region", "record order", "region",
             original_order_sorted_by_region),
    Scenario("original order, households contiguous", "record order", "region",
             original_order_households_contiguous),
    Scenario("no household id, household incomes", "households", "region",
             household_incomes_give_region),
    Scenario("no household id, count members", "households", "household_size",
             household_incomes_give_size),
    Scenario("household income noised per person", "averaging", "hh_income",
             household_income_noised_per_person),
    Scenario("float person number", "identifiers", "household_size", float_person_number),
    Scenario("9-digit person number, one duplicate", "identifiers", "household_size",
             nine_digit_person_number),
    Scenario("age group beside banded age", "learning", "age", age_group_beside_banded_age),
    Scenario("district beside suppressed region", "learning", "region",
             district_beside_suppressed_region),
)  # fmt: skip


def run(
    scenario: Scenario, n_households: int, seed: int, *, weak: bool = True
) -> tuple[Release, Score, Any]:
    """Build the release, run the scenario's attacker on the file as written, score it."""
    out, original = scenario.build(n_households, seed, weak)
    guess = ATTACKS[scenario.attack](out.output, scenario.target)
    return out, score(out, original, scenario.target, guess), guess


def assert_refused_or_nothing_beyond_chance(out: Release, result: Score) -> None:
    """The property: the check refuses the file (write raises), or the attack gets nothing."""
    if not out.check.ok:
        with tempfile.TemporaryDirectory() as folder, pytest.raises(VerificationError):
            out.write(Path(folder) / "released.parquet")
        return
    assert not result.beyond_chance, f"the release check let a leak through: {result}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_release_refused_or_attack_fails(scenario: Scenario) -> None:
    out, result, _ = run(scenario, TEST_HOUSEHOLDS, seed=11)
    assert result.protected > 0  # the scenario does protect something
    assert_refused_or_nothing_beyond_chance(out, result)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_control_refused_or_attack_fails(scenario: Scenario) -> None:
    """The same release with the weakness removed: the same property (the attackers and the
    harness must not see a leak where the user fixed it, unless the check refuses the file)."""
    out, result, _ = run(scenario, TEST_HOUSEHOLDS, seed=11, weak=False)
    assert_refused_or_nothing_beyond_chance(out, result)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 6))
def test_remark_property_over_seeds_and_k(seed: int, k: int) -> None:
    out, original = remark_beside_suppressed_region(400, seed, k=k)
    guess = ATTACKS["transformations"](out.output, "region")
    assert_refused_or_nothing_beyond_chance(out, score(out, original, "region", guess))


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 6))
def test_weight_property_over_seeds_and_k(seed: int, k: int) -> None:
    out, original = weight_after_region_suppression(400, seed, k=k)
    for attack in ("shared values", "learning"):
        guess = ATTACKS[attack](out.output, "region")
        assert_refused_or_nothing_beyond_chance(out, score(out, original, "region", guess))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(300, 3000))
def test_top_coding_property_over_seeds_and_sizes(seed: int, n: int) -> None:
    out, original = rounded_income_beside_top_coding(n, seed)
    guess = ATTACKS["transformations"](out.output, "income")
    assert_refused_or_nothing_beyond_chance(out, score(out, original, "income", guess))


# ---------------------------------------------------------------------- the tools themselves
def test_attackers_read_only_the_released_file() -> None:
    """No attacker needs the original: each runs on a bare frame and guesses only hidden rows."""
    frame = pl.DataFrame(
        {
            "region": ["A", None, "B", "B", None, "A"] * 10,
            "code": [1.5, 1.5, 2.5, 2.5, 2.5, 1.5] * 10,
            "size": [2, 2, 1, 3, 3, 3] * 10,
        }
    )
    for name, attack in ATTACKS.items():
        guess = attack(frame, "region")
        assert guess.values.len() == frame.height, name
        assert guess.values.filter(frame["region"].is_not_null()).null_count() == 40, name
    guess = ATTACKS["shared values"](frame, "region")
    assert guess.values.filter(frame["region"].is_null()).to_list() == ["A", "B"] * 10


def test_harness_counts_at_the_released_granularity() -> None:
    """A band suppressed in the release is scored as a band, learned from the shown records."""
    ages = np.array([5, 7, 20, 22, 40, 41, 5, 20, 40, 7])
    original = pl.DataFrame({"age": ages})
    band = pl.Series(["a" if a < 10 else "b" if a < 30 else "c" for a in ages])
    released = pl.DataFrame({"age": band.scatter([6, 7], None)})

    out = SimpleNamespace(output=released, order=None, check=SimpleNamespace(ok=True))
    guess = Guess("test", "age", pl.Series(["a"] * 6 + ["a", "b"] + ["a"] * 2), np.ones(10))
    result = score(out, original, "age", guess)
    assert (result.protected, result.got_back, result.chance) == (2, 2, 1)
    assert not result.continuous
