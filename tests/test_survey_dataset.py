"""Tests of the synthetic household survey generator (``generate_household_survey``)."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import Microdata, ParameterError
from sdckit.datasets import SURVEY_COLUMNS, SURVEY_ROLES, generate_household_survey

REFERENCE = dt.date(2026, 6, 30)
HOUSEHOLD_LEVEL = ["region", "district", "urban_rural", "household_size", "hh_income", "eq_income"]


@pytest.fixture(scope="module")
def survey() -> pl.DataFrame:
    return generate_household_survey(1500, seed=7)


def test_columns_and_types(survey: pl.DataFrame) -> None:
    assert survey.columns == list(SURVEY_COLUMNS)
    assert survey["hh_id"].n_unique() == 1500
    assert survey.schema["date_of_birth"] == pl.Date
    for col in ("weight", "hh_income", "eq_income", "income", "age_decimal"):
        assert survey.schema[col] == pl.Float64, col
    for col in ("hh_id", "person_id", "member", "district", "household_size", "age"):
        assert survey.schema[col] == pl.Int64, col
    assert all(c.isascii() for c in survey.columns)
    strings = [c for c, t in survey.schema.items() if t == pl.String]
    for col in strings:
        assert all(v.isascii() for v in survey[col].drop_nulls().unique()), col


def test_roles_build_a_microdata(survey: pl.DataFrame) -> None:
    md = Microdata(survey, **SURVEY_ROLES)
    assert md.household == "hh_id"
    assert set(SURVEY_ROLES["household_level"]) == set(HOUSEHOLD_LEVEL)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300))
def test_same_seed_same_frame(seed: int, n: int) -> None:
    a = generate_household_survey(n, seed=seed)
    b = generate_household_survey(n, seed=np.random.default_rng(seed))
    assert a.equals(b)
    assert a["hh_id"].n_unique() == n
    assert sorted(a["hh_id"].unique().to_list()) == list(range(1, n + 1))


def test_different_seeds_differ() -> None:
    assert not generate_household_survey(200, seed=1).equals(generate_household_survey(200, seed=2))


def test_person_number_encodes_household(survey: pl.DataFrame) -> None:
    assert (survey["person_id"] // 100 == survey["hh_id"]).all()
    assert (survey["person_id"] % 100 == survey["member"]).all()
    assert survey["person_id"].n_unique() == survey.height


def test_households(survey: pl.DataFrame) -> None:
    per = survey.group_by("hh_id").agg(
        pl.len().alias("n"),
        pl.col("household_size").first(),
        pl.col("member").sort().alias("members"),
        (pl.col("relationship") == "head").sum().alias("heads"),
        (pl.col("relationship") == "spouse").sum().alias("spouses"),
        *(pl.col(c).n_unique().alias(f"n_{c}") for c in HOUSEHOLD_LEVEL),
    )
    assert (per["n"] == per["household_size"]).all()
    assert per["household_size"].min() >= 1
    assert per["household_size"].max() >= 8
    assert all(m == list(range(1, len(m) + 1)) for m in per["members"].to_list())
    assert (per["heads"] == 1).all()
    assert (per["spouses"] <= 1).all()
    for col in HOUSEHOLD_LEVEL:
        assert (per[f"n_{col}"] == 1).all(), col
    # members of a household are adjacent rows
    changes = int((survey["hh_id"].diff().drop_nulls() != 0).sum())
    assert changes + 1 == survey["hh_id"].n_unique()


def test_relationships_and_ages_coherent(survey: pl.DataFrame) -> None:
    heads = survey.filter(pl.col("relationship") == "head").select("hh_id", head_age="age")
    joined = survey.join(heads, on="hh_id")
    children = joined.filter(pl.col("relationship") == "child")
    assert (children["age"] < children["head_age"]).all()
    assert (survey.filter(pl.col("member") == 1)["relationship"] == "head").all()
    assert survey["age"].min() >= 0 and survey["age"].max() <= 95
    young = survey.filter((pl.col("age") < 16) | (pl.col("relationship") == "child"))
    assert (young["marital_status"] == "never married").all()
    assert (survey.filter(pl.col("age") < 16)["employment"] == "under 16").all()
    assert (survey.filter(pl.col("age") < 16)["income"] == 0).all()
    assert (survey.filter(pl.col("age") < 12)["education"] == "none").all()
    assert (survey.filter(pl.col("age") < 21)["education"] != "tertiary").all()


def test_dates_of_birth(survey: pl.DataFrame) -> None:
    dob = survey["date_of_birth"]
    year, month, day = dob.dt.year(), dob.dt.month(), dob.dt.day()
    not_yet = (month > REFERENCE.month) | ((month == REFERENCE.month) & (day > REFERENCE.day))
    completed = REFERENCE.year - year - not_yet.cast(pl.Int64)
    assert (completed == survey["age"]).all()
    exact = survey["age_decimal"]
    assert (exact.floor() == survey["age"]).all()
    assert ((exact * 100).round(6) == (exact * 100).round(0)).all()  # two decimals
    # the fraction is the share of the year since the last birthday (never on 29 February)
    last_birthday = pl.select(
        pl.date(pl.lit(REFERENCE.year) - not_yet.cast(pl.Int32), month, day)
    ).to_series()
    days = (pl.Series([REFERENCE]) - last_birthday).dt.total_days().to_numpy()
    assert days.min() >= 0 and days.max() < 365
    fraction = exact.to_numpy() - survey["age"].to_numpy()
    np.testing.assert_allclose(fraction, np.floor(days * 100 / 365) / 100, atol=1e-9)


def test_weights_calibrated(survey: pl.DataFrame) -> None:
    w = survey["weight"]
    assert w.dtype == pl.Float64
    assert (w == w.round(0)).all() and (w >= 1).all()
    age_class = np.searchsorted([16, 30, 45, 65], survey["age"].to_numpy(), side="right")
    cells = survey.with_columns(age_class=pl.Series(age_class)).group_by(
        "region", "sex", "age_class"
    )
    assert (cells.agg(pl.col("weight").n_unique())["weight"] == 1).all()
    assert w.n_unique() > 50  # many cells, many values


def test_sorted_by_region_then_household(survey: pl.DataFrame) -> None:
    assert survey["region"].is_sorted()
    assert survey.select(pl.col("hh_id").is_sorted().over("region").all()).item()
    # household numbers are assigned at random with respect to the region
    assert not survey["hh_id"].is_sorted()
    capital = survey.filter(pl.col("region") == "Capital")["hh_id"]
    assert capital.min() < 300 and capital.max() > 1200  # type: ignore[operator]


def test_district_within_region(survey: pl.DataFrame) -> None:
    per_district = survey.group_by("district").agg(pl.col("region").n_unique())
    assert (per_district["region"] == 1).all()
    assert survey.group_by("region").agg(pl.col("district").n_unique())["district"].max() > 3


def test_remark_office_gives_region(survey: pl.DataFrame) -> None:
    remark = survey["remark"]
    share_missing = remark.null_count() / survey.height
    assert 0.05 < share_missing < 0.15
    office = remark.str.extract(r"(?:the |^)([A-Z][a-z]+(?: [A-Z][a-z]+)?) office", 1)
    named = survey.with_columns(office=office).filter(pl.col("office").is_not_null())
    assert named.height > 0.6 * survey.height
    assert (named.group_by("office").agg(pl.col("region").n_unique())["region"] == 1).all()
    per_region = named.group_by("region").agg(pl.col("office").n_unique())["office"]
    assert per_region.min() >= 1 and per_region.max() == 2
    generic = survey.filter(remark.is_not_null() & office.is_null())
    assert generic.height > 0.05 * survey.height
    assert all(re.fullmatch(r"[ -~]+", r) for r in generic["remark"].unique())


def test_incomes(survey: pl.DataFrame) -> None:
    per = survey.group_by("hh_id").agg(
        pl.col("income").sum(), pl.col("hh_income").first(), pl.col("eq_income").first()
    )
    assert (per["hh_income"] > 0).all()
    assert per["hh_income"].n_unique() > 0.9 * per.height
    assert np.corrcoef(per["income"], per["hh_income"])[0, 1] > 0.8
    assert (per["eq_income"] <= per["hh_income"]).all()
    adults = survey.filter(pl.col("age") >= 25)
    by_edu = adults.group_by("education").agg(pl.col("income").mean()).sort("income")
    assert by_edu["education"][-1] == "tertiary"
    assert survey["income"].mean() > survey["income"].median()  # skewed


def test_n_households_validated() -> None:
    with pytest.raises(ParameterError, match="n_households"):
        generate_household_survey(0)
    with pytest.raises(ParameterError, match="n_households"):
        generate_household_survey(2.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="seed"):
        generate_household_survey(10, seed=-1)


@pytest.mark.slow
def test_a_million_persons_quickly() -> None:
    import time

    start = time.perf_counter()
    df = generate_household_survey(410_000, seed=3)
    assert df.height > 900_000
    assert time.perf_counter() - start < 15
