"""A synthetic census-like population in households, generated without loops over records.

The generator builds, from one seed: a fixed geography (regions > districts > areas with skewed
sizes and an urban/rural classification per area), households of varying size placed in areas,
and persons with a relationship to the household head, sex, age, marital status, education,
economic activity, occupation, country of birth, a health condition, a household sampling weight
and correlated continuous variables (income, expenditure, savings, hours worked, household
income).  Everything is drawn with numpy arrays (per household or per person, never a Python loop
over either), so a million persons take a few seconds.

The file is synthetic: no row describes a real person.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_int, check_seed

__all__ = [
    "DEMO_COLUMNS",
    "DEMO_PERSONS",
    "DEMO_ROLES",
    "DEMO_SEED",
    "generate_census",
    "load_demo",
]

#: Seed of the bundled demo file returned by :func:`load_demo`.
DEMO_SEED = 20_260_101

#: Number of persons in the bundled demo file.
DEMO_PERSONS = 50_000

DEMO_COLUMNS: dict[str, str] = {
    "person_id": "Person identifier 1..n in file order (a direct identifier: drop before release).",
    "household_id": "Household identifier, 1..H; the members of a household are adjacent rows.",
    "region": "Region of residence (8 regions of very different size), top geography level.",
    "district": "District code (integer, region number * 100 + district number), nested in region.",
    "area": "Area code (integer, district code * 100 + area number), nested in district.",
    "urban_rural": "'urban' or 'rural', a property of the area.",
    "stratum": "Sampling stratum: region and urban/rural, e.g. 'North-urban'.",
    "household_size": "Number of persons in the household (1..14).",
    "relationship": (
        "Relationship to the household head: head, spouse, child, grandchild, parent, sibling, "
        "other relative, non-relative."
    ),
    "sex": "'male' or 'female'.",
    "age": "Age in completed years (0..99).",
    "age_group": "Five-year age group '00-04', '05-09', ..., '80-84', '85+' (18 groups).",
    "marital_status": (
        "never married, married, consensual union, separated, divorced, widowed; everyone under "
        "16 is never married, spouses share the head's union type."
    ),
    "education": (
        "Highest level attained: none, primary, lower secondary, upper secondary, "
        "post-secondary, tertiary; capped by age (tertiary from age 23)."
    ),
    "economic_activity": (
        "employed, unemployed, student, homemaker, retired, other inactive, or 'under 15'."
    ),
    "occupation": (
        "Occupation group (ISCO-08 major groups, incl. the rare 'armed forces') for the employed; "
        "'not employed' otherwise."
    ),
    "country_of_birth": (
        "'home country' for most; a few large and many tiny foreign countries (Zipf-like); "
        "household members tend to share the head's country."
    ),
    "health_condition": (
        "Sensitive: main chronic health condition ('none', hypertension, diabetes, asthma, "
        "depression, heart disease, cancer, HIV), more frequent with age."
    ),
    "weight": (
        "Sampling weight (positive, varying; equal for all members of a household), design "
        "weight of the stratum times a non-response adjustment."
    ),
    "income": (
        "Annual personal income (>= 0; zero for children and most non-earners); lognormal, "
        "rising with education, occupation and age."
    ),
    "expenditure": "Annual personal expenditure (>= 0), correlated with income.",
    "savings": "Savings held (>= 0, many zeros), rising with income and age.",
    "hours_worked": "Usual weekly hours worked (0 for persons not employed).",
    "household_income": "Total annual income of the household (sum of its members' income).",
}

DEMO_ROLES: dict[str, Any] = {
    "keys": [
        "region",
        "urban_rural",
        "sex",
        "age_group",
        "marital_status",
        "education",
        "country_of_birth",
    ],
    "numeric": ["income", "expenditure", "savings", "hours_worked", "household_income"],
    "weight": "weight",
    "strata": "stratum",
    "household": "household_id",
    "sensitive": ["health_condition"],
}

_REGIONS = ("Capital", "North", "South", "East", "West", "Central", "Coast", "Islands")
_REGION_SHARE = np.array([0.24, 0.17, 0.15, 0.12, 0.11, 0.10, 0.07, 0.04])
_REGION_URBAN = np.array([0.95, 0.55, 0.50, 0.40, 0.45, 0.35, 0.60, 0.30])

_RELATIONSHIPS = (
    "head",
    "spouse",
    "child",
    "grandchild",
    "parent",
    "sibling",
    "other relative",
    "non-relative",
)
_MARITAL = ("never married", "married", "consensual union", "separated", "divorced", "widowed")
_EDUCATION = (
    "none",
    "primary",
    "lower secondary",
    "upper secondary",
    "post-secondary",
    "tertiary",
)
_ACTIVITY = (
    "employed",
    "unemployed",
    "student",
    "homemaker",
    "retired",
    "other inactive",
    "under 15",
)
_OCCUPATIONS = (
    "managers",
    "professionals",
    "technicians",
    "clerical support",
    "service and sales",
    "agriculture and fishery",
    "craft and trades",
    "machine operators",
    "elementary occupations",
    "armed forces",
)
_HEALTH = (
    "none",
    "hypertension",
    "diabetes",
    "asthma",
    "depression",
    "heart disease",
    "cancer",
    "HIV",
)
_COUNTRIES = (
    "home country",
    "Poland",
    "Romania",
    "Turkey",
    "Morocco",
    "Ukraine",
    "India",
    "Italy",
    "Portugal",
    "Germany",
    "Syria",
    "China",
    "Albania",
    "Brazil",
    "Philippines",
    "Nigeria",
    "Pakistan",
    "Vietnam",
    "Colombia",
    "Spain",
    "France",
    "Bulgaria",
    "Serbia",
    "Afghanistan",
    "Iraq",
    "Egypt",
    "Algeria",
    "Tunisia",
    "Eritrea",
    "Somalia",
    "Ethiopia",
    "Ghana",
    "Senegal",
    "Bangladesh",
    "Sri Lanka",
    "Nepal",
    "Thailand",
    "Indonesia",
    "Peru",
    "Ecuador",
    "Bolivia",
    "Mexico",
    "United States",
    "Canada",
    "United Kingdom",
    "Ireland",
    "Netherlands",
    "Belgium",
    "Austria",
    "Hungary",
    "Czechia",
    "Slovakia",
    "Greece",
    "Lithuania",
    "Latvia",
    "Estonia",
    "Iran",
    "Lebanon",
    "Japan",
    "Australia",
    "New Zealand",
    "Iceland",
)
_AGE_GROUPS = (*(f"{a:02d}-{a + 4:02d}" for a in range(0, 85, 5)), "85+")


def _choose(rng: np.random.Generator, table: np.ndarray, group: np.ndarray) -> np.ndarray:
    """One category per record, drawn from row ``group[i]`` of a ``(G, k)`` weight table.

    Inverse-CDF sampling for all records at once: row ``g`` of the normalised cumulative table
    is shifted by ``g`` and one sorted search places ``g + u`` (``u`` uniform in [0, 1)).
    """
    n_groups, k = table.shape
    cum = np.cumsum(table, axis=1)
    cum = cum / cum[:, -1:]
    flat = (cum + np.arange(n_groups)[:, None]).ravel()
    group = np.asarray(group, dtype=np.int64)
    position = np.searchsorted(flat, group + rng.random(len(group)), side="right")
    return np.minimum(position - group * k, k - 1)


def _zipf(k: int, s: float) -> np.ndarray:
    """Zipf-like probabilities ``1 / j**s`` for ``j = 1..k``."""
    p = 1.0 / np.arange(1, k + 1, dtype=np.float64) ** s
    return p / p.sum()


def _labels(values: tuple[str, ...], codes: np.ndarray, name: str) -> pl.Series:
    """A string column from integer codes into ``values``."""
    return pl.Series(name, values, dtype=pl.String).gather(pl.Series(codes.astype(np.int64)))


def _geography(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The fixed geography: one row per area with its district, region, size share and urbanity."""
    n_districts = rng.integers(5, 15, size=len(_REGIONS))
    n_districts[0] = 6
    region_of_district = np.repeat(np.arange(len(_REGIONS)), n_districts)
    district_number = np.concatenate([np.arange(1, k + 1) for k in n_districts])
    district_share = np.concatenate([rng.permutation(_zipf(int(k), 1.1)) for k in n_districts])
    district_share *= _REGION_SHARE[region_of_district]
    n_areas = rng.integers(4, 26, size=len(region_of_district))
    district_of_area = np.repeat(np.arange(len(region_of_district)), n_areas)
    area_number = np.concatenate([np.arange(1, k + 1) for k in n_areas])
    area_share = rng.lognormal(0.0, 0.8, size=len(district_of_area))
    totals = np.bincount(district_of_area, weights=area_share)
    area_share = area_share / totals[district_of_area] * district_share[district_of_area]
    region = region_of_district[district_of_area]
    district_code = (region_of_district + 1) * 100 + district_number
    # larger areas are more often urban
    rel = area_share / area_share.mean()
    p_urban = np.clip(_REGION_URBAN[region] * (0.6 + 0.4 * np.minimum(rel, 2.0)), 0.02, 0.99)
    urban = rng.random(len(region)) < p_urban
    return {
        "share": area_share / area_share.sum(),
        "region": region,
        "district": district_code[district_of_area],
        "area": district_code[district_of_area] * 100 + area_number,
        "urban": urban,
    }


def _household_sizes(rng: np.random.Generator, n_persons: int) -> np.ndarray:
    """Household sizes summing exactly to ``n_persons`` (the last household is cut)."""
    p = np.array([0.27, 0.31, 0.16, 0.14, 0.065, 0.03, 0.012, 0.006, 0.004, 0.002, 0.001])
    p = np.concatenate([p, [0.0005, 0.0003, 0.0002]])
    p = p / p.sum()
    mean = float((np.arange(1, len(p) + 1) * p).sum())
    sizes = np.empty(0, dtype=np.int64)
    while sizes.sum() < n_persons:
        extra = int(n_persons / mean * 1.1) + 10
        sizes = np.concatenate([sizes, rng.choice(np.arange(1, len(p) + 1), size=extra, p=p)])
    ends = np.cumsum(sizes)
    n_households = int(np.searchsorted(ends, n_persons)) + 1
    sizes = sizes[:n_households].copy()
    sizes[-1] -= int(ends[n_households - 1]) - n_persons
    return sizes


def _age_band(age: np.ndarray) -> np.ndarray:
    """0: <16, 1: 16-24, 2: 25-34, 3: 35-49, 4: 50-64, 5: 65-79, 6: 80+."""
    return np.searchsorted(np.array([16, 25, 35, 50, 65, 80]), age, side="right")


def generate_census(n_persons: int = 50_000, *, seed: Any = DEMO_SEED) -> pl.DataFrame:
    """Generate a synthetic census-like population of persons living in households.

    Parameters
    ----------
    n_persons : int, default 50000
        Number of persons (rows).  Households are generated until the count is reached (the
        last household is cut to fit).
    seed : int or numpy.random.Generator, default DEMO_SEED
        Seed of the generator; the same seed gives an identical frame.  The geography (regions,
        districts, areas and their sizes) is drawn first, so it depends on the seed only: files
        of different sizes from the same seed share it.

    Returns
    -------
    polars.DataFrame
        One row per person, households in adjacent rows; the columns are described in
        :data:`DEMO_COLUMNS` and their suggested roles in :data:`DEMO_ROLES`.

    Examples
    --------
    >>> from sdckit.datasets import generate_census
    >>> df = generate_census(1_000, seed=1)
    >>> df.height, df["household_id"].n_unique() < 1_000
    (1000, True)
    >>> bool((df.filter(df["age"] < 16)["marital_status"] == "never married").all())
    True
    """
    n = check_int(n_persons, "n_persons", minimum=1)
    rng = check_seed(seed)
    geo = _geography(rng)

    # ---------------------------------------------------------------- households
    hh_size = _household_sizes(rng, n)
    n_hh = len(hh_size)
    hh_area = rng.choice(len(geo["share"]), size=n_hh, p=geo["share"])
    hh_urban = geo["urban"][hh_area]
    hh_region = geo["region"][hh_area]
    stratum = hh_region * 2 + (~hh_urban).astype(np.int64)
    hh_ses = rng.normal(0.0, 1.0, size=n_hh) + 0.3 * hh_urban  # socio-economic status
    hh_spouse = (hh_size >= 2) & (rng.random(n_hh) < np.where(hh_size >= 3, 0.78, 0.62))
    head_age = 18 + rng.gamma(4.0, 7.5, size=n_hh)
    head_age = np.where(head_age > 99, rng.uniform(60, 95, size=n_hh), head_age)
    head_age = np.where(hh_size >= 4, np.clip(head_age, 24, 70), head_age).astype(np.int64)
    p_male = np.where(hh_spouse, 0.7, 0.45)
    head_male = rng.random(n_hh) < p_male
    union_type = np.where(rng.random(n_hh) < 0.82, 1, 2)  # married / consensual union
    origin_cob = rng.choice(len(_COUNTRIES), size=n_hh, p=_country_probs())
    design = 40.0 + 160.0 * rng.random(2 * len(_REGIONS))
    hh_weight = np.round(design[stratum] * rng.lognormal(0.0, 0.25, size=n_hh), 2)
    hh_weight = np.maximum(hh_weight, 1.0)

    # ---------------------------------------------------------------- persons
    hh = np.repeat(np.arange(n_hh), hh_size)
    start = np.concatenate([[0], np.cumsum(hh_size)[:-1]])
    pos = np.arange(n) - start[hh]
    h_age = head_age[hh]
    rel = np.zeros(n, dtype=np.int64)
    is_spouse = (pos == 1) & hh_spouse[hh]
    rel[is_spouse] = 1
    others = pos >= (1 + hh_spouse[hh])
    # child, grandchild, parent, sibling, other relative, non-relative
    p_other = np.array([0.80, 0.06, 0.05, 0.04, 0.03, 0.02])
    draw = rng.choice(6, size=n, p=p_other) + 2
    draw = np.where((draw == 3) & (h_age < 45), 2, draw)  # no grandchildren of young heads
    draw = np.where((draw == 4) & (h_age > 75), 6, draw)  # parents of old heads are rare
    rel[others] = draw[others]

    age = np.empty(n, dtype=np.int64)
    head = rel == 0
    age[head] = h_age[head]
    spouse_age = h_age + np.rint(rng.normal(-2.0, 4.0, size=n)).astype(np.int64)
    child_gap = 18 + np.rint(rng.gamma(3.0, 3.0, size=n)).astype(np.int64)
    child_age = h_age - child_gap
    young = child_age < 0
    child_age[young] = np.floor(rng.random(int(young.sum())) * (h_age[young] - 16)).astype(np.int64)
    grand_age = h_age - 2 * child_gap + 5
    parent_age = h_age + child_gap
    too_old = parent_age > 99  # parents are only drawn for heads up to 75
    parent_age = np.where(
        too_old, h_age + 15 + np.floor(rng.random(n) * np.maximum(85 - h_age, 1)), parent_age
    ).astype(np.int64)
    sibling_age = h_age + np.rint(rng.normal(0.0, 6.0, size=n)).astype(np.int64)
    other_age = rng.integers(0, 85, size=n)
    nonrel_age = rng.integers(18, 65, size=n)
    by_rel = np.stack(
        [h_age, spouse_age, child_age, grand_age, parent_age, sibling_age, other_age, nonrel_age]
    )
    age = np.take_along_axis(by_rel, rel[None, :], axis=0)[0]
    age = np.where(rel == 1, np.maximum(age, 18), age)
    age = np.clip(age, 0, 99)

    male = rng.random(n) < 0.51
    male[head] = head_male[hh[head]]
    male[is_spouse] = ~head_male[hh[is_spouse]] ^ (rng.random(int(is_spouse.sum())) < 0.02)
    band = _age_band(age)

    # ---------------------------------------------------------------- marital status
    marital_by_band = np.array(
        # never, married, union, separated, divorced, widowed  (persons not in a union here)
        [
            [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [0.94, 0.02, 0.02, 0.01, 0.01, 0.0],
            [0.70, 0.10, 0.05, 0.05, 0.09, 0.01],
            [0.40, 0.12, 0.04, 0.12, 0.28, 0.04],
            [0.22, 0.14, 0.03, 0.10, 0.36, 0.15],
            [0.10, 0.12, 0.02, 0.05, 0.25, 0.46],
            [0.06, 0.08, 0.01, 0.02, 0.10, 0.73],
        ]
    )
    marital = _choose(rng, marital_by_band, band)
    in_union = (head & hh_spouse[hh]) | is_spouse
    marital[in_union] = union_type[hh[in_union]]
    # lone heads and spouses-less members are not married to someone in the household: they are
    # still allowed "married" (spouse living elsewhere) but children of the head rarely are
    child = rel == 2
    marital[child & (marital == 1)] = 0
    marital[age < 16] = 0

    # ---------------------------------------------------------------- education
    cohort = np.clip((1990 - (2026 - age)) / 40.0, -1.5, 1.0)  # younger cohorts study longer
    latent = 0.6 * hh_ses[hh] + 0.8 * rng.normal(size=n) + 0.7 * cohort
    cuts = np.array([-1.9, -0.9, -0.1, 0.8, 1.25])
    edu = np.searchsorted(cuts, latent)
    cap = np.searchsorted(np.array([10, 15, 18, 21, 23]), age, side="right")
    edu = np.minimum(edu, cap)

    # ---------------------------------------------------------------- economic activity
    activity_by_band = np.array(
        # employed, unemployed, student, homemaker, retired, other inactive
        [
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            [0.38, 0.09, 0.47, 0.03, 0.0, 0.03],
            [0.78, 0.08, 0.05, 0.06, 0.0, 0.03],
            [0.80, 0.07, 0.01, 0.08, 0.01, 0.03],
            [0.66, 0.06, 0.0, 0.08, 0.16, 0.04],
            [0.08, 0.01, 0.0, 0.04, 0.85, 0.02],
            [0.01, 0.0, 0.0, 0.02, 0.95, 0.02],
        ]
    )
    # one weight row per (age band, sex, education) combination
    table = np.repeat(activity_by_band, 2 * len(_EDUCATION), axis=0)
    combo_male = np.tile(np.repeat([True, False], len(_EDUCATION)), len(activity_by_band))
    combo_edu = np.tile(np.arange(len(_EDUCATION)), 2 * len(activity_by_band))
    table[:, 0] *= np.where(combo_male, 1.1, 0.85) * (1.0 + 0.08 * combo_edu)
    table[:, 3] *= np.where(combo_male, 0.1, 1.9)
    combo = (band * 2 + (~male)) * len(_EDUCATION) + edu
    activity = _choose(rng, table, combo)
    activity[age < 15] = 6

    # ---------------------------------------------------------------- occupation
    occ_by_edu = np.array(
        # mgr   prof  tech  cler  serv  agri  craft mach  elem  army
        [
            [0.01, 0.00, 0.01, 0.02, 0.18, 0.25, 0.15, 0.10, 0.28, 0.001],
            [0.02, 0.01, 0.03, 0.05, 0.22, 0.16, 0.18, 0.13, 0.20, 0.002],
            [0.03, 0.02, 0.06, 0.09, 0.24, 0.08, 0.19, 0.14, 0.15, 0.003],
            [0.06, 0.06, 0.14, 0.16, 0.22, 0.04, 0.12, 0.09, 0.09, 0.004],
            [0.09, 0.14, 0.24, 0.16, 0.14, 0.02, 0.10, 0.06, 0.04, 0.004],
            [0.15, 0.50, 0.16, 0.07, 0.05, 0.01, 0.02, 0.02, 0.02, 0.003],
        ]
    )
    table = np.repeat(occ_by_edu, 2, axis=0)  # rows: (education, urban / rural)
    table[0::2, 5] *= 0.25
    table[1::2, 5] *= 3.0
    urban = hh_urban[hh]
    occupation = _choose(rng, table, edu * 2 + (~urban))
    employed = activity == 0
    occupation_labels = (*_OCCUPATIONS, "not employed")
    occupation = np.where(employed, occupation, len(_OCCUPATIONS))

    # ---------------------------------------------------------------- country of birth
    cob = origin_cob[hh].copy()
    fresh = rng.choice(len(_COUNTRIES), size=n, p=_country_probs())
    keep = np.select(
        [head, is_spouse, age < 10],
        [1.0, 0.7, 0.35],
        default=0.8,
    )
    switch = rng.random(n) >= keep
    cob[switch] = np.where(age[switch] < 10, 0, fresh[switch])

    # ---------------------------------------------------------------- health (sensitive)
    a = np.repeat(np.arange(100) / 100.0, 2)  # rows: (age, unemployed or not)
    unemployed = np.tile([0.0, 1.0], 100)
    health_table = np.column_stack(
        [
            np.ones_like(a),
            0.45 * a**2.0,
            0.22 * a**1.8,
            np.full_like(a, 0.035),
            0.04 + 0.02 * unemployed,
            0.20 * a**3.0,
            0.06 * a**2.5,
            np.full_like(a, 0.002),
        ]
    )
    health = _choose(rng, health_table, age * 2 + (activity == 1))

    # ---------------------------------------------------------------- continuous variables
    occ_effect = np.array([0.55, 0.45, 0.25, 0.05, -0.15, -0.35, 0.0, -0.05, -0.35, 0.1, 0.0])
    years = np.maximum(age - 15, 0).astype(np.float64)
    log_income = (
        9.9
        + 0.12 * edu
        + occ_effect[occupation]
        + 0.035 * years
        - 0.0006 * years**2
        - 0.15 * (~male)
        + 0.08 * urban
        + 0.15 * hh_ses[hh]
        + rng.normal(0.0, 0.45, size=n)
    )
    income = np.exp(log_income)
    pension = np.exp(9.3 + 0.1 * edu + rng.normal(0.0, 0.35, size=n))
    income = np.select(
        [
            employed,
            (activity == 4) & (rng.random(n) < 0.92),
            (activity == 1) & (rng.random(n) < 0.5),
            (activity == 2) & (age >= 18) & (rng.random(n) < 0.3),
        ],
        [income, pension, 0.35 * pension, 0.15 * income],
        default=0.0,
    )
    income = np.round(income, 0)
    spend_share = np.exp(rng.normal(np.log(0.6), 0.35, size=n))
    no_income_spend = np.exp(rng.normal(7.6, 0.6, size=n)) * (rng.random(n) < 0.6)
    expenditure = np.where(
        income > 0, income * spend_share + 0.5 * no_income_spend, no_income_spend
    )
    expenditure = np.round(np.where(age < 15, 0.0, expenditure), 0)
    p_zero = np.clip(0.65 - 0.04 * np.log1p(income) + 0.002 * (50 - age), 0.05, 0.98)
    savings = np.exp(0.85 * np.log1p(income) + 0.02 * years + rng.normal(0.0, 1.0, size=n))
    savings = np.round(np.where((rng.random(n) < p_zero) | (age < 15), 0.0, savings), 0)
    hours = np.clip(np.rint(rng.normal(np.where(male, 42.0, 35.0), 8.0, size=n)), 4, 80)
    hours = np.where(employed, hours, 0).astype(np.int64)
    household_income = np.bincount(hh, weights=income, minlength=n_hh)[hh]

    # ---------------------------------------------------------------- assemble
    stratum_labels = tuple(f"{r}-{u}" for r in _REGIONS for u in ("urban", "rural"))
    age_group = np.minimum(age // 5, len(_AGE_GROUPS) - 1)
    return pl.DataFrame(
        [
            pl.Series("person_id", np.arange(1, n + 1, dtype=np.int64)),
            pl.Series("household_id", hh + 1),
            _labels(_REGIONS, hh_region[hh], "region"),
            pl.Series("district", geo["district"][hh_area][hh].astype(np.int64)),
            pl.Series("area", geo["area"][hh_area][hh].astype(np.int64)),
            _labels(("urban", "rural"), (~urban).astype(np.int64), "urban_rural"),
            _labels(stratum_labels, stratum[hh], "stratum"),
            pl.Series("household_size", hh_size[hh].astype(np.int64)),
            _labels(_RELATIONSHIPS, rel, "relationship"),
            _labels(("male", "female"), (~male).astype(np.int64), "sex"),
            pl.Series("age", age.astype(np.int64)),
            _labels(_AGE_GROUPS, age_group, "age_group"),
            _labels(_MARITAL, marital, "marital_status"),
            _labels(_EDUCATION, edu, "education"),
            _labels(_ACTIVITY, activity, "economic_activity"),
            _labels(occupation_labels, occupation, "occupation"),
            _labels(_COUNTRIES, cob, "country_of_birth"),
            _labels(_HEALTH, health, "health_condition"),
            pl.Series("weight", hh_weight[hh]),
            pl.Series("income", income),
            pl.Series("expenditure", expenditure),
            pl.Series("savings", savings),
            pl.Series("hours_worked", hours),
            pl.Series("household_income", household_income),
        ]
    )


def _country_probs() -> np.ndarray:
    """Country of birth: the home country, then foreign countries with Zipf-like shares."""
    foreign = _zipf(len(_COUNTRIES) - 1, 1.35) * 0.12
    return np.concatenate([[0.88], foreign])


_DEMO_CACHE: dict[str, pl.DataFrame] = {}


def load_demo() -> pl.DataFrame:
    """The bundled demo file: 50,000 synthetic persons in households (seeded, always identical).

    The frame is generated on the first call and cached for the process; polars frames are
    immutable, so every caller shares it safely.  Column meanings are in :data:`DEMO_COLUMNS`,
    suggested roles in :data:`DEMO_ROLES`.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> from sdckit.datasets import DEMO_ROLES, load_demo
    >>> df = load_demo()
    >>> df.height
    50000
    >>> all(k in df.columns for k in DEMO_ROLES["keys"])
    True
    """
    frame = _DEMO_CACHE.get("demo")
    if frame is None:
        frame = generate_census(DEMO_PERSONS, seed=DEMO_SEED)
        _DEMO_CACHE["demo"] = frame
    return frame
