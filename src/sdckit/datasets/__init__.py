"""Demo data: a synthetic census-like population in households, and its fixed 50,000-person file.

The data are generated (no file is shipped): :func:`generate_census` draws any number of persons
from a seed, :func:`load_demo` returns the fixed, seeded demo file.  :data:`DEMO_COLUMNS`
describes every column and :data:`DEMO_ROLES` gives the suggested column roles (key variables,
numeric variables, weight, strata, household, sensitive variables).
"""

from sdckit.datasets._census import (
    DEMO_COLUMNS,
    DEMO_PERSONS,
    DEMO_ROLES,
    DEMO_SEED,
    generate_census,
    load_demo,
)

__all__ = [
    "DEMO_COLUMNS",
    "DEMO_PERSONS",
    "DEMO_ROLES",
    "DEMO_SEED",
    "generate_census",
    "load_demo",
]
