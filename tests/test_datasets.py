"""Tests of the synthetic census generator and the demo file."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata, ParameterError
from sdckit.datasets import (
    DEMO_COLUMNS,
    DEMO_PERSONS,
    DEMO_ROLES,
    DEMO_SEED,
    generate_census,
    load_demo,
)

EDUCATION = ["none", "primary", "lower secondary", "upper secondary", "post-secondary", "tertiary"]


def check_consistency(df: pl.DataFrame) -> None:
    """Invariants every generated file must satisfy."""
    assert list(df.columns) == list(DEMO_COLUMNS)
    assert df["person_id"].to_list() == list(range(1, df.height + 1))
    hh = df["household_id"].to_numpy()
    # households are numbered 1..H in order and their members are adjacent
    assert hh[0] == 1
    assert np.all(np.diff(hh) >= 0) and np.all(np.diff(hh) <= 1)
    per_household = df.group_by("household_id").agg(
        pl.len().alias("members"),
        pl.col("household_size").first(),
        pl.col("relationship").first().alias("first_relationship"),
        (pl.col("relationship") == "head").sum().alias("heads"),
        (pl.col("relationship") == "spouse").sum().alias("spouses"),
        *(
            pl.col(c).n_unique().alias(f"n_{c}")
            for c in ("region", "district", "area", "urban_rural", "stratum", "weight")
        ),
        pl.col("income").sum().alias("income_sum"),
        pl.col("household_income").first(),
    )
    assert (per_household["members"] == per_household["household_size"]).all()
    assert (per_household["first_relationship"] == "head").all()
    assert (per_household["heads"] == 1).all()
    assert (per_household["spouses"] <= 1).all()
    for c in ("region", "district", "area", "urban_rural", "stratum", "weight"):
        assert (per_household[f"n_{c}"] == 1).all(), c
    np.testing.assert_allclose(per_household["income_sum"], per_household["household_income"])
    # geography is nested: area -> district -> region, stratum = region x urban/rural
    assert ((df["area"] // 100) == df["district"]).all()
    assert df.group_by("district").agg(pl.col("region").n_unique())["region"].max() == 1
    assert (df["stratum"] == df["region"] + "-" + df["urban_rural"]).all()
    # ages, marital status and education consistent with age
    age = df["age"]
    assert age.min() >= 0 and age.max() <= 99
    lower = df["age_group"].str.slice(0, 2).cast(pl.Int64)
    assert ((age >= lower) & ((age < lower + 5) | (lower == 85))).all()
    assert (df.filter(age < 16)["marital_status"] == "never married").all()
    assert (df.filter(pl.col("relationship") == "head")["age"] >= 18).all()
    assert (df.filter(pl.col("relationship") == "spouse")["age"] >= 18).all()
    children = df.filter(pl.col("relationship") == "child")
    assert not (children["marital_status"] == "married").any()
    head_age = df.filter(pl.col("relationship") == "head").select(
        "household_id", pl.col("age").alias("head_age")
    )
    gaps = df.join(head_age, on="household_id").with_columns(
        (pl.col("age") - pl.col("head_age")).alias("gap")
    )
    assert (gaps.filter(pl.col("relationship") == "child")["gap"] <= -16).all()
    assert (gaps.filter(pl.col("relationship") == "grandchild")["gap"] <= -30).all()
    assert (gaps.filter(pl.col("relationship") == "parent")["gap"] >= 15).all()
    level = df["education"].replace_strict(EDUCATION, list(range(6)), return_dtype=pl.Int64)
    assert (level.filter(age < 10) == 0).all()
    assert (level.filter(age < 23) <= 4).all()
    # activity, occupation and the continuous variables
    employed = df["economic_activity"] == "employed"
    assert ((df["occupation"] != "not employed") == employed).all()
    assert ((df["hours_worked"] > 0) == employed).all()
    assert (df.filter(age < 15)["economic_activity"] == "under 15").all()
    for c in ("income", "expenditure", "savings", "household_income"):
        assert df[c].min() >= 0, c
    assert (df.filter(age < 15)["income"] == 0).all()
    assert df["weight"].min() > 0
    assert df.null_count().sum_horizontal().item() == 0


def test_demo_file_shape_and_cache() -> None:
    df = load_demo()
    assert df.shape == (DEMO_PERSONS, len(DEMO_COLUMNS)) == (50_000, 24)
    assert load_demo() is df
    assert df.equals(generate_census(DEMO_PERSONS, seed=DEMO_SEED))
    check_consistency(df)


def test_demo_roles_build_microdata() -> None:
    df = load_demo()
    md = Microdata(df, **DEMO_ROLES)
    assert len(md.keys) == 7
    assert md.weight == "weight" and md.household == "household_id"
    assert set(DEMO_ROLES["numeric"]) <= set(df.columns)


def test_demo_distributions_are_realistic() -> None:
    df = load_demo()
    n = df.height
    regions = df["region"].value_counts()["count"]
    assert regions.max() / regions.min() > 3  # skewed region sizes
    assert 50 < df["district"].n_unique() < 150
    assert df["area"].n_unique() > 500
    cob = df["country_of_birth"].value_counts()
    home = cob.filter(pl.col("country_of_birth") == "home country")["count"].item()
    assert 0.8 < home / n < 0.95
    assert (cob["count"] < 50).sum() >= 20  # many tiny categories
    assert 0 < (df["occupation"] == "armed forces").sum() < 0.01 * n  # a rare category
    assert 0.45 < (df["sex"] == "male").mean() < 0.55
    assert 0.7 < (df["health_condition"] == "none").mean() < 0.9
    sizes = df.group_by("household_id").agg(pl.col("household_size").first())["household_size"]
    assert 2.3 < sizes.mean() < 3.0
    assert df["weight"].std() > 10  # weights vary
    assert 0.1 < (df["income"] == 0).mean() < 0.5  # some zeros
    assert (df["savings"] == 0).mean() > 0.2
    earners = df.filter(pl.col("income") > 0)
    assert earners.select(pl.corr("income", "expenditure")).item() > 0.5
    by_education = (
        df.filter(pl.col("economic_activity") == "employed")
        .group_by("education")
        .agg(pl.col("income").median())
    )
    med = dict(zip(by_education["education"], by_education["income"], strict=True))
    assert med["tertiary"] > med["upper secondary"] > med["primary"]
    older = df.filter(pl.col("age") >= 65)
    younger = df.filter(pl.col("age").is_between(20, 40))
    assert (older["health_condition"] != "none").mean() > (
        younger["health_condition"] != "none"
    ).mean()
    assert (older["marital_status"] == "widowed").mean() > 0.1


def test_same_seed_same_frame_and_different_seed_differs() -> None:
    a = generate_census(3_000, seed=11)
    b = generate_census(3_000, seed=11)
    c = generate_census(3_000, seed=12)
    assert a.equals(b)
    assert not a.equals(c)
    rng_a = generate_census(500, seed=np.random.default_rng(4))
    rng_b = generate_census(500, seed=np.random.default_rng(4))
    assert rng_a.equals(rng_b)


@given(n=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_small_files_are_consistent(n: int, seed: int) -> None:
    df = generate_census(n, seed=seed)
    assert df.height == n
    check_consistency(df)


@pytest.mark.parametrize("bad", [0, -5, 2.5, "100"])
def test_bad_size_is_a_parameter_error(bad: object) -> None:
    with pytest.raises(ParameterError, match="n_persons"):
        generate_census(bad)  # type: ignore[arg-type]


def test_bad_seed_is_a_parameter_error() -> None:
    with pytest.raises(ParameterError, match="seed"):
        generate_census(10, seed="x")


def test_geography_depends_on_the_seed_only() -> None:
    columns = ["area", "district", "region", "urban_rural", "stratum"]
    small = generate_census(1_000, seed=9).select(columns).unique()
    large = generate_census(10_000, seed=9).select(columns).unique()
    joined = small.join(large, on="area", suffix="_large")
    assert joined.height > 0.8 * small.height  # most small-file areas appear in the large file
    for c in columns[1:]:
        assert (joined[c] == joined[f"{c}_large"]).all(), c
