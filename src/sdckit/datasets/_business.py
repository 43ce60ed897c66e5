"""A synthetic business register: enterprises, their holdings and local units, without loops.

Statistical offices tabulate business statistics (turnover, employment, wages by activity x
region x size class) from a register such as this one: enterprises (the respondents), most of
them independent and some in enterprise groups (holdings) of 2 to 20 enterprises, each with one
or more local units (establishments) in the regions.  One row is one **local unit**: the
enterprise's employees, turnover and wages where it works.  An enterprise with local units in
two regions contributes to both, and its sum to the national total; tables count enterprises
with ``Table.from_microdata(..., respondent="enterprise_id")`` and holdings with
``holding="holding_id"``.

Everything is drawn with numpy arrays (per enterprise or per local unit, never a Python loop
over them).  The file is synthetic: no row describes a real enterprise.  It keeps what makes
business tables hard to protect: skewed magnitudes (lognormal employment with a heavy tail, a
few dominant enterprises), holdings whose enterprises often share an activity, and cells with
one or two enterprises.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sdckit._validation import check_int, check_seed
from sdckit.datasets._census import _choose, _zipf

__all__ = [
    "BUSINESS_COLUMNS",
    "BUSINESS_HIERARCHIES",
    "BUSINESS_ROLES",
    "generate_business_register",
]

# NACE-like activities: sections (1st level) and their divisions (2nd level)
_SECTIONS: dict[str, tuple[str, ...]] = {
    "C": ("C10", "C20", "C25", "C28"),
    "F": ("F41", "F43"),
    "G": ("G45", "G46", "G47"),
    "H": ("H49", "H52"),
    "I": ("I55", "I56"),
    "J": ("J62", "J63"),
    "M": ("M69", "M71", "M73"),
}
_SECTION_SHARE = np.array([0.14, 0.15, 0.24, 0.07, 0.12, 0.10, 0.18])
# turnover per employee (thousands) of each section, on the log scale
_SECTION_PRODUCTIVITY = np.log([260.0, 150.0, 320.0, 180.0, 70.0, 170.0, 120.0])
_SECTION_WAGE = np.log([42.0, 38.0, 33.0, 36.0, 22.0, 55.0, 47.0])
# regions (2nd level) in areas (1st level)
_AREAS: dict[str, tuple[str, ...]] = {
    "N": ("N1", "N2", "N3"),
    "S": ("S1", "S2"),
    "W": ("W1", "W2", "W3"),
}
_REGION_SHARE = np.array([0.22, 0.08, 0.05, 0.20, 0.07, 0.18, 0.12, 0.08])
_SIZE_CLASSES = ("0-9", "10-49", "50-249", "250+")
_SIZE_BOUNDS = np.array([10, 50, 250])
_LEGAL_FORMS = ("sole proprietor", "partnership", "limited company")

BUSINESS_HIERARCHIES: dict[str, dict[str, list[str]]] = {
    "activity": {"Total": list(_SECTIONS), **{s: list(d) for s, d in _SECTIONS.items()}},
    "region": {"Total": list(_AREAS), **{a: list(r) for a, r in _AREAS.items()}},
}
"""The hierarchies of the coded columns (``parent -> children``, total ``"Total"``): activity
divisions in sections, regions in areas.  ``section`` and ``area`` hold the first level."""

BUSINESS_COLUMNS: dict[str, str] = {
    "local_unit_id": "Local unit number: enterprise_id * 100 + its number (1, 2, ...).",
    "enterprise_id": "Enterprise number 1..N (the respondent), at random to activity and size.",
    "holding_id": (
        "Enterprise group (holding) number, null for an independent enterprise (about 80 % of "
        "them; larger enterprises more often belong to a group); groups have 2-20 enterprises."
    ),
    "section": "Activity section of the enterprise (C, F, G, H, I, J, M): 1st level.",
    "activity": (
        "Activity division of the enterprise (C10 ... M73, 18 codes): 2nd level, in "
        "BUSINESS_HIERARCHIES['activity']; enterprises of one holding often share a section."
    ),
    "area": "Area of the local unit (N, S, W): 1st level.",
    "region": "Region of the local unit (N1 ... W3, 8 codes), in BUSINESS_HIERARCHIES['region'].",
    "size_class": "Size class of the enterprise by its employees: 0-9, 10-49, 50-249, 250+.",
    "legal_form": "Legal form of the enterprise: sole proprietor, partnership, limited company.",
    "employees": "Employees of the local unit (the enterprise's: lognormal, heavy tail).",
    "turnover": (
        "Turnover of the local unit, thousands (the enterprise's employees x a lognormal "
        "productivity of its section, shared among its local units by their employees)."
    ),
    "wages": "Wages paid at the local unit, thousands (employees x a lognormal wage).",
}

BUSINESS_ROLES: dict[str, object] = {
    "dimensions": ["activity", "region", "size_class"],
    "value": "turnover",
    "respondent": "enterprise_id",
    "holding": "holding_id",
}
"""Suggested roles for a table: dimensions, value, respondent and holding columns."""


def _holdings(rng: np.random.Generator, employees: np.ndarray) -> np.ndarray:
    """A holding number per enterprise (-1: independent), groups of 2 to 20 enterprises."""
    n = len(employees)
    p_group = np.where(employees >= 250, 0.7, np.where(employees >= 50, 0.45, 0.12))
    members = np.flatnonzero(rng.random(n) < p_group)
    members = rng.permutation(members)
    sizes = rng.choice(np.arange(2, 21), size=len(members) // 2 + 1, p=_zipf(19, 1.6))
    group = np.repeat(np.arange(len(sizes)), sizes)[: len(members)]
    if len(group) and np.sum(group == group[-1]) == 1:  # no group of one
        group[-1] = group[-2] if len(group) > 1 else -1
    holding = np.full(n, -1, dtype=np.int64)
    holding[members] = group
    return holding


def generate_business_register(
    n_enterprises: int = 2000, *, seed: int | np.random.Generator | None = None
) -> pl.DataFrame:
    """Generate a synthetic business register: one row per local unit of an enterprise.

    Parameters
    ----------
    n_enterprises : int, default 2000
        Number of enterprises (about 1.3 local units each).
    seed : int or numpy.random.Generator, optional
        Seed of the generator; the same seed gives an identical frame (the same bytes when
        written).

    Returns
    -------
    polars.DataFrame
        One row per local unit, sorted by enterprise then local unit; the columns are described
        in :data:`BUSINESS_COLUMNS`, the hierarchies of ``activity`` and ``region`` are
        :data:`BUSINESS_HIERARCHIES` and suggested table roles :data:`BUSINESS_ROLES`.

    Raises
    ------
    ParameterError
        ``n_enterprises`` is not a positive integer, or the seed is invalid.

    Examples
    --------
    >>> from sdckit.datasets import generate_business_register
    >>> df = generate_business_register(300, seed=1)
    >>> df["enterprise_id"].n_unique(), df.columns[:3]
    (300, ['local_unit_id', 'enterprise_id', 'holding_id'])
    >>> per = df.group_by("enterprise_id").agg(pl.col("holding_id").n_unique())
    >>> int(per["holding_id"].max())
    1
    """
    n = check_int(n_enterprises, "n_enterprises", minimum=1)
    rng = check_seed(seed)
    sections = list(_SECTIONS)
    n_div = np.array([len(d) for d in _SECTIONS.values()])

    # ---------------------------------------------------------------- enterprises
    employees = np.ceil(rng.lognormal(1.0, 1.45, size=n)).astype(np.int64)
    employees = np.minimum(employees, 20_000)
    holding = _holdings(rng, employees)
    section = rng.choice(len(sections), size=n, p=_SECTION_SHARE / _SECTION_SHARE.sum())
    # enterprises of one holding often share its section (a group is in one trade)
    in_group = holding >= 0
    n_groups = int(holding.max()) + 1 if in_group.any() else 0
    group_section = rng.choice(
        len(sections), size=max(n_groups, 1), p=_SECTION_SHARE / _SECTION_SHARE.sum()
    )
    same = in_group & (rng.random(n) < 0.6)
    section[same] = group_section[holding[same]]
    div_table = np.zeros((len(sections), int(n_div.max())))
    for s, k in enumerate(n_div):
        div_table[s, :k] = _zipf(int(k), 0.7)
    division = _choose(rng, div_table, section)
    size_class = np.searchsorted(_SIZE_BOUNDS, employees, side="right")
    p_legal = np.array(
        [[0.55, 0.25, 0.20], [0.15, 0.30, 0.55], [0.02, 0.18, 0.80], [0, 0.05, 0.95]]
    )
    legal = _choose(rng, p_legal, size_class)
    productivity = rng.lognormal(_SECTION_PRODUCTIVITY[section], 0.6)
    wage = rng.lognormal(_SECTION_WAGE[section], 0.25)
    ent_id = rng.permutation(n).astype(np.int64) + 1

    # ---------------------------------------------------------------- local units
    n_units = 1 + np.minimum(rng.poisson(employees / 60.0), 29)
    ent = np.repeat(np.arange(n), n_units)
    first = np.r_[0, np.cumsum(n_units)[:-1]]
    number = np.arange(len(ent)) - first[ent] + 1
    head = rng.choice(len(_REGION_SHARE), size=n, p=_REGION_SHARE / _REGION_SHARE.sum())
    other = rng.choice(len(_REGION_SHARE), size=len(ent), p=_REGION_SHARE / _REGION_SHARE.sum())
    region = np.where(number == 1, head[ent], other)
    share = rng.gamma(1.0, size=len(ent))
    share[number == 1] += 1.0  # the head office is the largest unit more often than not
    share = share / np.bincount(ent, weights=share)[ent]
    lu_emp = np.floor(share * employees[ent]).astype(np.int64)
    rest = employees - np.bincount(ent, weights=lu_emp, minlength=n).astype(np.int64)
    lu_emp[first] += rest  # what rounding left goes to the head office
    exact_share = lu_emp / employees[ent]
    turnover = np.round(employees[ent] * productivity[ent] * exact_share, 0)
    wages = np.round(lu_emp * wage[ent] * rng.lognormal(0.0, 0.05, size=len(ent)), 0)

    order = np.lexsort((number, ent_id[ent]))
    ent, number, region = ent[order], number[order], region[order]
    lu_emp, turnover, wages = lu_emp[order], turnover[order], wages[order]
    area_of_region = np.repeat(np.arange(len(_AREAS)), [len(r) for r in _AREAS.values()])
    regions = [r for rs in _AREAS.values() for r in rs]
    divisions = [d for ds in _SECTIONS.values() for d in ds]
    div_code = np.r_[0, np.cumsum(n_div)[:-1]][section] + division
    hold = holding[ent]
    return pl.DataFrame(
        {
            "local_unit_id": ent_id[ent] * 100 + number,
            "enterprise_id": ent_id[ent],
            "holding_id": pl.Series(hold + 1).set(pl.Series(hold < 0), None),
            "section": pl.Series(sections, dtype=pl.String).gather(section[ent]),
            "activity": pl.Series(divisions, dtype=pl.String).gather(div_code[ent]),
            "area": pl.Series(list(_AREAS), dtype=pl.String).gather(area_of_region[region]),
            "region": pl.Series(regions, dtype=pl.String).gather(region),
            "size_class": pl.Series(_SIZE_CLASSES, dtype=pl.String).gather(size_class[ent]),
            "legal_form": pl.Series(_LEGAL_FORMS, dtype=pl.String).gather(legal[ent]),
            "employees": lu_emp,
            "turnover": turnover,
            "wages": wages,
        }
    )
