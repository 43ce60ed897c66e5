"""Demo data: a synthetic census-like population in households, and its fixed 50,000-person file.

The data are generated (no file is shipped): :func:`generate_census` draws any number of persons
from a seed, :func:`load_demo` returns the fixed, seeded demo file.  :data:`DEMO_COLUMNS`
describes every column and :data:`DEMO_ROLES` gives the suggested column roles (key variables,
numeric variables, weight, strata, household, sensitive variables).
:func:`generate_household_survey` draws an EU-SILC-like household survey file (sorted by region,
person numbers that encode the household, calibrated weights, incomes, interviewer remarks),
described by :data:`SURVEY_COLUMNS` with suggested roles in :data:`SURVEY_ROLES`;
:func:`load_survey` returns its fixed, seeded 5,000-household file.
:func:`generate_business_register` draws a business register (one row per local unit of an
enterprise, enterprises in holdings, NACE-like activities, skewed turnover), described by
:data:`BUSINESS_COLUMNS`, with the hierarchies :data:`BUSINESS_HIERARCHIES` and suggested table
roles :data:`BUSINESS_ROLES`.
"""

from sdckit.datasets._business import (
    BUSINESS_COLUMNS,
    BUSINESS_HIERARCHIES,
    BUSINESS_ROLES,
    generate_business_register,
)
from sdckit.datasets._census import (
    DEMO_COLUMNS,
    DEMO_PERSONS,
    DEMO_ROLES,
    DEMO_SEED,
    generate_census,
    load_demo,
)
from sdckit.datasets._survey import (
    SURVEY_COLUMNS,
    SURVEY_HOUSEHOLDS,
    SURVEY_ROLES,
    SURVEY_SEED,
    generate_household_survey,
    load_survey,
)

__all__ = [
    "BUSINESS_COLUMNS",
    "BUSINESS_HIERARCHIES",
    "BUSINESS_ROLES",
    "DEMO_COLUMNS",
    "DEMO_PERSONS",
    "DEMO_ROLES",
    "DEMO_SEED",
    "SURVEY_COLUMNS",
    "SURVEY_HOUSEHOLDS",
    "SURVEY_ROLES",
    "SURVEY_SEED",
    "generate_business_register",
    "generate_census",
    "generate_household_survey",
    "load_demo",
    "load_survey",
]
