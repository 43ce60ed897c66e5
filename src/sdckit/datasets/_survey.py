"""A synthetic EU-SILC-like household survey file, generated without loops over records.

The file imitates what a field organisation delivers: one row per person, the households of a
region together (sorted by region, then household number), a household number assigned at
random with respect to the region, a person number that encodes the household, calibrated survey
weights, household and personal incomes, and a free-text interviewer remark naming the local
office.  Everything is drawn with numpy arrays (per household or per person, never a Python loop
over either), so a million persons take a few seconds.

The file is synthetic: no row describes a real person.  It is meant for testing protection and
release checks, so it keeps the weaknesses real files have (person numbers that give the
household, exact dates of birth, free text naming a place, weights shared by a whole cell).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_int, check_seed
from sdckit.datasets._census import _choose, _zipf

__all__ = [
    "SURVEY_COLUMNS",
    "SURVEY_HOUSEHOLDS",
    "SURVEY_ROLES",
    "SURVEY_SEED",
    "generate_household_survey",
    "load_survey",
]

#: Reference date of the survey: ages are completed years on this day.
REFERENCE_DATE = dt.date(2026, 6, 30)

SURVEY_COLUMNS: dict[str, str] = {
    "hh_id": (
        "Household number 1..H, assigned at random with respect to the region (a register id)."
    ),
    "person_id": "Person number hh_id * 100 + member (encodes the household).",
    "member": "Member number 1..size within the household (1 is the head).",
    "relationship": "Relationship to the head: head, spouse, child, parent, other.",
    "region": "Region of residence (12 regions of very different size); household-level.",
    "district": "District code region number * 100 + district number; household-level.",
    "urban_rural": "'urban' or 'rural'; household-level.",
    "household_size": "Number of members of the household (1..10); household-level.",
    "sex": "'male' or 'female'.",
    "age": "Age in completed years on 2026-06-30 (0..95).",
    "date_of_birth": "Date of birth (consistent with age on 2026-06-30).",
    "age_decimal": "Exact age in years on 2026-06-30, floored to two decimals (e.g. 34.72).",
    "marital_status": (
        "never married, married, divorced, widowed; children and persons under 16 are never "
        "married, head and spouse are married."
    ),
    "education": (
        "Highest level attained: none, primary, lower secondary, upper secondary, tertiary; "
        "capped by age."
    ),
    "employment": "employed, unemployed, student, retired, inactive, or 'under 16'.",
    "weight": (
        "Calibrated survey weight: design weights by region x urban/rural post-stratified to "
        "population counts of region x sex x age class (0-15, 16-29, 30-44, 45-64, 65+); one "
        "whole-numbered value per cell, stored as a float."
    ),
    "hh_income": (
        "Household disposable income: members' incomes after tax plus other income "
        "(benefits, capital); household-level."
    ),
    "eq_income": (
        "Equivalised disposable income: hh_income / OECD-modified scale (1, 0.5 per other "
        "person 14+, 0.3 per child under 14); household-level."
    ),
    "income": "Personal yearly income (0 for persons under 16; skewed, by age and activity).",
    "remark": (
        "Free-text interviewer remark, mostly naming the local office (each office belongs to "
        "one region); some generic remarks; about 10 % missing."
    ),
}

SURVEY_ROLES: dict[str, Any] = {
    "keys": [
        "region",
        "urban_rural",
        "household_size",
        "sex",
        "age",
        "marital_status",
        "education",
        "employment",
    ],
    "numeric": ["income", "hh_income", "eq_income"],
    "weight": "weight",
    "household": "hh_id",
    "household_level": [
        "region",
        "district",
        "urban_rural",
        "household_size",
        "hh_income",
        "eq_income",
    ],
    "identifiers": ["person_id", "date_of_birth", "remark"],
}

# regions in alphabetical order (their number is their position + 1), shares of households
_REGIONS = (
    "Capital",
    "Central",
    "Coast",
    "East",
    "Islands",
    "Lakes",
    "Midlands",
    "North",
    "Northeast",
    "South",
    "Southwest",
    "West",
)
_REGION_SHARE = np.array(
    [0.22, 0.12, 0.09, 0.08, 0.02, 0.04, 0.13, 0.07, 0.05, 0.10, 0.03, 0.05], dtype=np.float64
)
_REGION_URBAN = np.array([0.95, 0.55, 0.5, 0.4, 0.2, 0.3, 0.6, 0.45, 0.35, 0.55, 0.3, 0.45])
_DISTRICTS = np.array([9, 5, 6, 4, 2, 3, 7, 6, 4, 6, 3, 5])
# one or two local offices per region (an office serves only its region)
_OFFICES = (
    ("Kingsbridge", "Riverside"),
    ("Millbrook",),
    ("Saltmarsh", "Harbourton"),
    ("Eastwick",),
    ("Port Ellen",),
    ("Windmere",),
    ("Oakham", "Stonebury"),
    ("Northfield", "Fellgate"),
    ("Ravenscar",),
    ("Southport", "Brackley"),
    ("Tamworth",),
    ("Westbury",),
)
_OFFICE_TEMPLATES = (
    "Interview completed by the {office} office; respondent helpful.",
    "{office} office: interview completed on the second visit.",
    "Proxy interview for this member, recorded by the {office} office.",
    "Respondent asked for a call back; the {office} office completed the interview by phone.",
    "Checked by the {office} office supervisor; no problems.",
)
_GENERIC_REMARKS = (
    "Respondent helpful.",
    "Interview completed in one visit.",
    "Language difficulties; an interpreter was present.",
    "Respondent unsure about some income amounts.",
)
_SIZE_P = np.array([0.33, 0.31, 0.15, 0.12, 0.05, 0.02, 0.01, 0.006, 0.003, 0.001])
_RELATIONSHIPS = ("head", "spouse", "child", "parent", "other")
_MARITAL = ("never married", "married", "divorced", "widowed")
_EDUCATION = ("none", "primary", "lower secondary", "upper secondary", "tertiary")
_EMPLOYMENT = ("employed", "unemployed", "student", "retired", "inactive", "under 16")
_AGE_CLASS_BOUNDS = np.array([16, 30, 45, 65])  # classes 0-15, 16-29, 30-44, 45-64, 65+


def _labels(values: tuple[str, ...], codes: np.ndarray, name: str) -> pl.Series:
    """A string column from integer codes into ``values``."""
    return pl.Series(name, values, dtype=pl.String).gather(pl.Series(codes.astype(np.int64)))


def generate_household_survey(
    n_households: int = 2000, *, seed: int | np.random.Generator | None = None
) -> pl.DataFrame:
    """Generate a synthetic EU-SILC-like household survey file (one row per person).

    Parameters
    ----------
    n_households : int, default 2000
        Number of households (about 2.3 persons each).
    seed : int or numpy.random.Generator, optional
        Seed of the generator; the same seed gives an identical frame.

    Returns
    -------
    polars.DataFrame
        One row per person, sorted by region then household number, the members of a
        household adjacent; the columns are described in :data:`SURVEY_COLUMNS` and their
        suggested roles in :data:`SURVEY_ROLES`.

    Raises
    ------
    ParameterError
        ``n_households`` is not a positive integer, or the seed is invalid.

    Notes
    -----
    Ages are completed years on the reference date 2026-06-30; the last birthday of every
    person falls in the year before it (nobody is born on 29 February).  The weight of a person
    depends only on region, sex and age class (calibrated weights), so many persons share it.

    Examples
    --------
    >>> from sdckit.datasets import generate_household_survey
    >>> df = generate_household_survey(500, seed=1)
    >>> df["hh_id"].n_unique(), df.columns[:3]
    (500, ['hh_id', 'person_id', 'member'])
    >>> bool((df["person_id"] // 100 == df["hh_id"]).all())
    True
    >>> df["region"].is_sorted()
    True
    """
    n_hh = check_int(n_households, "n_households", minimum=1)
    rng = check_seed(seed)
    n_regions = len(_REGIONS)

    # ---------------------------------------------------------------- households
    region = rng.choice(n_regions, size=n_hh, p=_REGION_SHARE / _REGION_SHARE.sum())
    hh_id = rng.permutation(n_hh).astype(np.int64) + 1
    order = np.lexsort((hh_id, region))  # the file is sorted by region, then household number
    region, hh_id = region[order], hh_id[order]

    max_d = int(_DISTRICTS.max())
    district_table = np.zeros((n_regions, max_d))
    for r, k in enumerate(_DISTRICTS):
        district_table[r, :k] = _zipf(int(k), 0.9)
    district_number = _choose(rng, district_table, region) + 1
    district = (region + 1) * 100 + district_number
    p_urban = np.clip(_REGION_URBAN[region] * np.where(district_number == 1, 1.3, 0.85), 0, 0.98)
    urban = rng.random(n_hh) < p_urban
    size = rng.choice(np.arange(1, len(_SIZE_P) + 1), size=n_hh, p=_SIZE_P / _SIZE_P.sum())
    spouse = (size >= 2) & (rng.random(n_hh) < np.where(size >= 3, 0.8, 0.55))
    head_age = 18 + rng.gamma(4.0, 7.0, size=n_hh)
    head_age = np.where(head_age > 95, rng.uniform(60, 95, size=n_hh), head_age)
    head_age = np.where(size >= 3, np.clip(head_age, 24, 68), head_age).astype(np.int64)
    head_male = rng.random(n_hh) < np.where(spouse, 0.65, 0.45)
    ses = rng.normal(0.0, 1.0, size=n_hh) + 0.3 * urban  # socio-economic status
    # office: by district parity where the region has two offices
    n_offices = np.array([len(o) for o in _OFFICES])
    office_start = np.concatenate([[0], np.cumsum(n_offices)[:-1]])
    office = office_start[region] + (district_number + 1) % 2 * (n_offices[region] == 2)

    # ---------------------------------------------------------------- persons
    n = int(size.sum())
    hh = np.repeat(np.arange(n_hh), size)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    member = np.arange(n) - start[hh] + 1
    h_age = head_age[hh]
    rel = rng.choice(np.array([2, 3, 4]), size=n, p=[0.85, 0.06, 0.09])
    rel = np.where((rel == 3) & (h_age > 70), 4, rel)  # heads over 70 live with no parents
    rel = np.where(member == 2, np.where(spouse[hh], 1, rel), rel)
    rel = np.where(member == 1, 0, rel)

    gap = 18 + np.rint(rng.gamma(3.0, 3.0, size=n)).astype(np.int64)
    child_age = h_age - gap
    fallback = np.floor(rng.random(n) * (h_age - 15)).astype(np.int64)  # 0..head age - 16
    child_age = np.where(child_age < 0, fallback, child_age)
    spouse_age = np.maximum(h_age + np.rint(rng.normal(-2.0, 4.0, size=n)).astype(np.int64), 18)
    by_rel = np.stack(
        [h_age, spouse_age, child_age, np.minimum(h_age + gap, 95), rng.integers(0, 91, size=n)]
    )
    age = np.clip(np.take_along_axis(by_rel, rel[None, :], axis=0)[0], 0, 95)

    male = rng.random(n) < 0.5
    male = np.where(rel == 0, head_male[hh], male)
    male = np.where(rel == 1, ~head_male[hh] ^ (rng.random(n) < 0.02), male)
    band = np.searchsorted(np.array([16, 25, 35, 50, 65, 80]), age, side="right")  # 0..6

    # ---------------------------------------------------------------- marital status
    marital_by_band = np.array(
        # never, married, divorced, widowed (persons not living with a spouse)
        [
            [1.0, 0.0, 0.0, 0.0],
            [0.95, 0.04, 0.01, 0.0],
            [0.72, 0.18, 0.09, 0.01],
            [0.42, 0.22, 0.32, 0.04],
            [0.24, 0.2, 0.4, 0.16],
            [0.1, 0.14, 0.28, 0.48],
            [0.06, 0.08, 0.1, 0.76],
        ]
    )
    marital = _choose(rng, marital_by_band, band)
    marital = np.where(spouse[hh] & (rel <= 1), 1, marital)
    marital = np.where((rel == 2) | (age < 16), 0, marital)

    # ---------------------------------------------------------------- education
    cohort = np.clip((age < 60) * 0.5 - (age >= 75) * 0.4, -1.0, 1.0)
    latent = 0.6 * ses[hh] + 0.8 * rng.normal(size=n) + cohort
    edu = np.searchsorted(np.array([-1.8, -0.8, 0.0, 0.9]), latent)
    cap = np.searchsorted(np.array([12, 15, 18, 21]), age, side="right")
    edu = np.minimum(edu, cap)

    # ---------------------------------------------------------------- employment
    activity_by_band = np.array(
        # employed, unemployed, student, retired, inactive
        [
            [0.0, 0.0, 1.0, 0.0, 0.0],
            [0.4, 0.1, 0.45, 0.0, 0.05],
            [0.8, 0.08, 0.05, 0.0, 0.07],
            [0.82, 0.07, 0.01, 0.01, 0.09],
            [0.68, 0.06, 0.0, 0.16, 0.1],
            [0.06, 0.01, 0.0, 0.9, 0.03],
            [0.01, 0.0, 0.0, 0.97, 0.02],
        ]
    )
    table = np.repeat(activity_by_band, 2 * len(_EDUCATION), axis=0)
    combo_male = np.tile(np.repeat([True, False], len(_EDUCATION)), len(activity_by_band))
    combo_edu = np.tile(np.arange(len(_EDUCATION)), 2 * len(activity_by_band))
    table[:, 0] *= np.where(combo_male, 1.1, 0.85) * (1.0 + 0.1 * combo_edu)
    table[:, 4] *= np.where(combo_male, 0.5, 1.8)
    activity = _choose(rng, table, (band * 2 + (~male)) * len(_EDUCATION) + edu)
    activity = np.where(age < 16, 5, activity)

    # ---------------------------------------------------------------- incomes
    years = np.maximum(age - 16, 0).astype(np.float64)
    earned = np.exp(
        9.5
        + 0.16 * edu
        + 0.035 * years
        - 0.0006 * years**2
        - 0.15 * (~male)
        + 0.08 * urban[hh]
        + 0.15 * ses[hh]
        + rng.normal(0.0, 0.5, size=n)
    )
    pension = np.exp(9.3 + 0.1 * edu + rng.normal(0.0, 0.35, size=n))
    small = np.exp(rng.normal(8.0, 0.6, size=n))
    u = rng.random(n)
    income = np.select(
        [
            activity == 0,
            (activity == 3) & (u < 0.95),
            (activity == 1) & (u < 0.7),
            (activity == 2) & (age >= 18) & (u < 0.4),
            (activity == 4) & (u < 0.3),
        ],
        [earned, pension, 1.2 * small, 0.6 * small, small],
        default=0.0,
    )
    income = np.round(np.where(age < 16, 0.0, income), 0)
    gross = np.bincount(hh, weights=income, minlength=n_hh)
    under_16 = np.bincount(hh, weights=(age < 16).astype(np.float64), minlength=n_hh)
    capital = np.exp(rng.normal(6.5, 1.3, size=n_hh)) * (rng.random(n_hh) < 0.45)
    support = np.where(gross < 6000, 6000 - 0.5 * gross, 0.0)  # minimum income support
    hh_income = np.round(0.78 * gross + 1400 * under_16 + capital + support, 0)
    under_14 = np.bincount(hh, weights=(age < 14).astype(np.float64), minlength=n_hh)
    eq_size = 1.0 + 0.5 * (size - under_14 - 1) + 0.3 * under_14
    eq_income = np.round(hh_income / eq_size, 2)

    # ---------------------------------------------------------------- weights
    design = np.round(rng.uniform(150, 900, size=(n_regions, 2)) * np.array([1.0, 0.7]), 0)
    design_p = design[region[hh], (~urban[hh]).astype(np.int64)]
    age_class = np.searchsorted(_AGE_CLASS_BOUNDS, age, side="right")
    cell = (region[hh] * 2 + (~male)) * 5 + age_class
    n_cells = n_regions * 10
    sample = np.bincount(cell, minlength=n_cells)
    estimate = np.bincount(cell, weights=design_p, minlength=n_cells)
    population = np.round(estimate * rng.lognormal(0.03, 0.08, size=n_cells), 0)
    cell_weight = np.maximum(np.round(population / np.maximum(sample, 1), 0), 1.0)
    weight = cell_weight[cell].astype(np.float64)

    # ---------------------------------------------------------------- dates of birth
    since_birthday = rng.integers(0, 365, size=n)  # days since the last birthday
    age_decimal = np.floor(age * 100 + since_birthday * 100 / 365) / 100

    # ---------------------------------------------------------------- remarks
    all_offices = [o for offices in _OFFICES for o in offices]
    n_t = len(_OFFICE_TEMPLATES)
    texts = (
        *_GENERIC_REMARKS,
        *(t.format(office=o) for o in all_offices for t in _OFFICE_TEMPLATES),
    )
    u = rng.random(n)
    remark_code = np.where(
        u < 0.12,
        rng.integers(0, len(_GENERIC_REMARKS), size=n),
        len(_GENERIC_REMARKS) + office[hh] * n_t + rng.integers(0, n_t, size=n),
    )
    remark = _labels(texts, remark_code, "remark")
    remark = pl.select(
        pl.when(pl.Series(u >= 0.90)).then(None).otherwise(remark).alias("remark")
    ).to_series()

    # ---------------------------------------------------------------- assemble
    frame = pl.DataFrame(
        [
            pl.Series("hh_id", hh_id[hh]),
            pl.Series("person_id", hh_id[hh] * 100 + member),
            pl.Series("member", member.astype(np.int64)),
            _labels(_RELATIONSHIPS, rel, "relationship"),
            _labels(_REGIONS, region[hh], "region"),
            pl.Series("district", district[hh].astype(np.int64)),
            _labels(("urban", "rural"), (~urban[hh]).astype(np.int64), "urban_rural"),
            pl.Series("household_size", size[hh].astype(np.int64)),
            _labels(("male", "female"), (~male).astype(np.int64), "sex"),
            pl.Series("age", age.astype(np.int64)),
            pl.Series("_days", since_birthday.astype(np.int64)),
            pl.Series("age_decimal", age_decimal),
            _labels(_MARITAL, marital, "marital_status"),
            _labels(_EDUCATION, edu, "education"),
            _labels(_EMPLOYMENT, activity, "employment"),
            pl.Series("weight", weight),
            pl.Series("hh_income", hh_income[hh]),
            pl.Series("eq_income", eq_income[hh]),
            pl.Series("income", income),
            remark,
        ]
    )
    last_birthday = pl.lit(REFERENCE_DATE) - pl.duration(days=pl.col("_days"))
    birth = pl.date(
        last_birthday.dt.year() - pl.col("age").cast(pl.Int32),
        last_birthday.dt.month(),
        last_birthday.dt.day(),
    )
    return frame.with_columns(birth.alias("_days")).rename({"_days": "date_of_birth"})


#: Seed and size of the bundled survey file returned by :func:`load_survey`.
SURVEY_SEED = 20_261_206
SURVEY_HOUSEHOLDS = 5_000
_SURVEY_CACHE: dict[str, pl.DataFrame] = {}


def load_survey() -> pl.DataFrame:
    """The bundled household survey: 5,000 synthetic households (seeded, always identical).

    Generated on the first call by :func:`generate_household_survey` and cached for the
    process (polars frames are immutable).  A job file reads it with ``[input] dataset =
    "survey"``.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> from sdckit.datasets import load_survey
    >>> df = load_survey()
    >>> df["hh_id"].n_unique()
    5000
    """
    frame = _SURVEY_CACHE.get("survey")
    if frame is None:
        frame = generate_household_survey(SURVEY_HOUSEHOLDS, seed=SURVEY_SEED)
        _SURVEY_CACHE["survey"] = frame
    return frame
