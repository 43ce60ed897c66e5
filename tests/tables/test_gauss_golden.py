"""Golden values from the R package GaussSuppression's own test suite, on public tables.

The R test ``tests/testthat/test-GaussSuppressionFromData.R`` ("GaussSuppressionFromData
works") asserts::

    expect_equal(which(GaussSuppressionFromData(SSBtoolsData("z1"), 1:2, 3)$suppressed),
                 c(12, 13, 22, 23, 42, 43))

``which()`` gives 1-based row numbers of the output, which is in the order of SSBtools'
cross table (``ModelMatrix(..., crossTable = TRUE)`` via ``FindDimLists`` /
``Hierarchies2ModelMatrix`` with ``reOrder = TRUE``): in each dimension the total comes first,
then the codes sorted; the first dimension (``region``) varies slowest, the last
(``hovedint``) fastest.  Row ``k`` is therefore ``(region[(k-1) // 5], hovedint[(k-1) % 5])``
with ``region = Total, A, ..., H`` and ``hovedint = Total, annet, arbeid, soshjelp, trygd``::

    12 -> (B, annet)   13 -> (B, arbeid)
    22 -> (D, annet)   23 -> (D, arbeid)
    42 -> (H, annet)   43 -> (H, arbeid)

The R defaults that apply: ``primary = PrimaryDefault`` with ``maxN = 3`` and
``protectZeros = TRUE`` (cells with ``freq <= 3``, zeros included) -- sdckit's
``MinFrequency(threshold=4)`` (fewer than 4 contributors) plus ``ZeroCells(disclosing_only=
False)``; ``candidates = CandidatesDefault`` with ``secondaryZeros = FALSE``: candidates are
published in decreasing order of ``freq + 1`` with ties broken by ``0.99 * tie / max(tie)``,
``tie = |X' X (freq + 1)|`` (X the model matrix), zeros first; ``singleton = SingletonDefault``,
which with ``protectZeros = TRUE`` marks the zero inner cells only -- z1 has none, so no
singleton rule is active in R.  The primaries are (B, arbeid) = 1, (D, arbeid) = 2 and
(H, arbeid) = 3: exactly the cells of the R pattern with ``freq <= 3``, which checks the
mapping (with ``hovedint`` varying slowest the six rows would miss (B, arbeid) and
(H, arbeid), so R's pattern would leave primaries published).

One tie matters: (D, annet) and (D, trygd) are both 13; R publishes (D, trygd) first (its
margin ``trygd`` = 189 is larger than ``annet`` = 72, so its ``tie`` is larger) and suppresses
(D, annet).  sdckit's default order breaks ties among equal costs the same way (by
``X' X (|cost| + 1)``), so its default pattern is R's; a user ``cost`` array equal to R's
ordering key gives it too.

More golden values are tested: the vignette "Small count frequency table suppression"
(its Tables 1, 2, 4, 5 and 7, at the end of this module; not Tables 3 and 8, model formulas
that are not cross tables) and the four tables of the R test
"SuppressLinkedTables" on the public test data ``d53`` (``test_gauss_golden_linked.py``).

The other expectations of the R tests were looked at and are not used here: the z3 sums of row
numbers use a model matrix shuffled with R's random numbers, or z3's two region groupings that
do not nest (one sdckit ``Table`` holds one hierarchy per dimension); the z2 ``extend0`` and
z3 ``structuralEmpty`` tests compare R runs with each other; the magnitude1 wrappers that
assert cells depend on ``removeCodes`` or ``singletonZeros`` (no counterpart in sdckit); the
linked-table tests on d53 assert R's own linked algorithms through sums of row numbers.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from sdckit.tables import (
    GaussSuppression,
    Hierarchy,
    MinFrequency,
    Table,
    ZeroCells,
    apply_rules,
    audit,
)
from sdckit.tables.examples import with_margins
from sdckit.tables.table import CellStatus

# SSBtoolsData("z1") (SSBtools, data/z1.RData: region, hovedint, ant), read with the Python
# package ``rdata`` outside sdckit's environment and written here as a literal.
Z1 = [
    ("A", "annet", 11), ("B", "annet", 7), ("C", "annet", 5), ("D", "annet", 13),
    ("E", "annet", 9), ("F", "annet", 12), ("G", "annet", 6), ("H", "annet", 9),
    ("A", "arbeid", 11), ("B", "arbeid", 1), ("C", "arbeid", 8), ("D", "arbeid", 2),
    ("E", "arbeid", 14), ("F", "arbeid", 9), ("G", "arbeid", 4), ("H", "arbeid", 3),
    ("A", "soshjelp", 55), ("B", "soshjelp", 29), ("C", "soshjelp", 35), ("D", "soshjelp", 17),
    ("E", "soshjelp", 63), ("F", "soshjelp", 24), ("G", "soshjelp", 22), ("H", "soshjelp", 38),
    ("A", "trygd", 36), ("B", "trygd", 18), ("C", "trygd", 25), ("D", "trygd", 13),
    ("E", "trygd", 52), ("F", "trygd", 22), ("G", "trygd", 8), ("H", "trygd", 15),
]  # fmt: skip

REGIONS = sorted({r for r, _, _ in Z1})
HOVEDINT = sorted({h for _, h, _ in Z1})

# The published R expectation, as 1-based row numbers of GaussSuppressionFromData's output.
R_SUPPRESSED_ROWS = (12, 13, 22, 23, 42, 43)


def r_cross_table_order() -> list[tuple[str, str]]:
    """The rows of SSBtools' cross table for z1: totals first, codes sorted, the first
    dimension (region) slowest, the last (hovedint) fastest."""
    return list(itertools.product(["Total", *REGIONS], ["Total", *HOVEDINT]))


def r_named(rows: tuple[int, ...]) -> set[tuple[str, str]]:
    order = r_cross_table_order()
    return {order[k - 1] for k in rows}


def z1_table() -> Table:
    """z1 as a frequency table with its margins (every person a contributor), with the
    primaries of R's defaults: ``freq <= maxN = 3`` and the zeros (``protectZeros``)."""
    inner = np.zeros((len(REGIONS), len(HOVEDINT)))
    for r, h, ant in Z1:
        inner[REGIONS.index(r), HOVEDINT.index(h)] = ant
    full = with_margins(inner)
    t = Table.from_array(
        full,
        {"region": REGIONS, "hovedint": HOVEDINT},
        n_contributors=full.astype(int),
        kind="count",
    )
    return apply_rules(t, [MinFrequency(threshold=4), ZeroCells(disclosing_only=False)])


def named(t: Table, mask: np.ndarray) -> set[tuple[str, str]]:
    return {
        (r, h)
        for r in t.hierarchies[0].codes
        for h in t.hierarchies[1].codes
        if mask[t.cell(region=r, hovedint=h)]
    }


def r_candidate_cost(t: Table) -> np.ndarray:
    """R's CandidatesDefault ordering key as a sdckit cost (publish the largest first):
    ``freq + 1 + 0.99 * tie / max(tie)`` with ``tie = X' X (freq + 1)`` over the model matrix
    ``X`` (inner cells x cells).  In this two-way table with margins the inner cell
    ``(r, h)`` lies in ``(r, h)``, ``(r, Total)``, ``(Total, h)`` and ``(Total, Total)``, so
    ``X (freq + 1)`` is the sum of those four, and ``tie`` of a cell the sum of that over its
    inner cells.  z1 has no zeros, so the zero rule of the key is not needed."""
    f1 = t.values + 1

    def at(r: str, h: str) -> int:
        return t.cell(region=r, hovedint=h)

    row_sum = {
        (r, h): f1[at(r, h)] + f1[at(r, "Total")] + f1[at("Total", h)] + f1[at("Total", "Total")]
        for r in REGIONS
        for h in HOVEDINT
    }
    tie = np.zeros(t.n_cells)
    for (r, h), v in row_sum.items():
        for cell in {at(r, h), at(r, "Total"), at("Total", h), at("Total", "Total")}:
            tie[cell] += v
    return f1 + 0.99 * tie / tie.max()


R_PATTERN = {
    ("B", "annet"), ("B", "arbeid"), ("D", "annet"), ("D", "arbeid"),
    ("H", "annet"), ("H", "arbeid"),
}  # fmt: skip
R_PRIMARIES = {("B", "arbeid"), ("D", "arbeid"), ("H", "arbeid")}


def test_r_row_numbers_name_the_cells() -> None:
    """The mapping of the docstring: 45 rows, and the six R rows are these named cells."""
    order = r_cross_table_order()
    assert len(order) == (len(REGIONS) + 1) * (len(HOVEDINT) + 1) == 45
    assert order[0] == ("Total", "Total") and order[1] == ("Total", "annet")
    assert r_named(R_SUPPRESSED_ROWS) == R_PATTERN


def test_z1_primaries_are_the_small_cells_of_the_r_pattern() -> None:
    """The primaries of R's defaults (freq <= 3; z1 has no zeros) are the three cells of the
    R pattern with freq <= 3 -- a check of the row mapping and of the threshold semantics."""
    t = z1_table()
    assert not np.any(t.values == 0)
    assert named(t, t.primary) == R_PRIMARIES
    assert R_PRIMARIES.issubset(r_named(R_SUPPRESSED_ROWS))
    small = {(r, h) for r, h, ant in Z1 if ant <= 3}
    assert small == R_PRIMARIES
    # the other order (hovedint slowest) would leave two primaries published: not R's order
    swapped = [(r, h) for h, r in itertools.product(["Total", *HOVEDINT], ["Total", *REGIONS])]
    assert not R_PRIMARIES.issubset({swapped[k - 1] for k in R_SUPPRESSED_ROWS})


def test_z1_pure_elimination_with_r_candidate_order_is_r_golden() -> None:
    """GaussSuppressionFromData(SSBtoolsData("z1"), 1:2, 3): rows 12, 13, 22, 23, 42, 43.

    sdckit's elimination alone (``repair_limit=0``), with R's candidate order as the cost and
    no singleton rule (R's default singletons are the zero cells; z1 has none), suppresses
    exactly the R pattern."""
    t = z1_table()
    res = GaussSuppression(cost=r_candidate_cost(t), singletons=False, repair_limit=0).apply(t)
    out = res.table
    assert named(out, out.suppressed) == r_named(R_SUPPRESSED_ROWS)
    assert named(out, out.primary) == R_PRIMARIES
    assert named(out, out.secondary) == R_PATTERN - R_PRIMARIES
    assert res.n_secondary == 3


def test_z1_repaired_with_r_candidate_order_keeps_the_r_pattern() -> None:
    """With sdckit's defaults otherwise (singleton rules on, LP audit and repair) the R
    pattern is kept: it passes the audit with MinFrequency's protection levels, and the
    singleton respondent (B, arbeid) = 1 cannot recompute another primary from it."""
    t = z1_table()
    res = GaussSuppression(cost=r_candidate_cost(t)).apply(t)
    out = res.table
    assert named(out, out.suppressed) == R_PATTERN
    assert res.details["repaired"] == 0
    assert res.protected and audit(out, insider=False).ok


def test_r_tie_break_prefers_publishing_the_cell_in_the_larger_margin() -> None:
    """(D, annet) and (D, trygd) both hold 13; R's key publishes (D, trygd) first (the
    ``trygd`` margin, 189, is larger than ``annet``, 72), so (D, annet) is suppressed."""
    t = z1_table()
    cost = r_candidate_cost(t)
    annet, trygd = t.cell(region="D", hovedint="annet"), t.cell(region="D", hovedint="trygd")
    assert t.values[annet] == t.values[trygd] == 13
    assert cost[trygd] > cost[annet]
    assert t.values[t.cell(region="Total", hovedint="trygd")] == 189
    assert t.values[t.cell(region="Total", hovedint="annet")] == 72


def test_z1_default_order_gives_the_r_golden_pattern() -> None:
    """sdckit's default order (cost = value, equal cells by ``X' X (|cost| + 1)``, the tie
    order of R's CandidatesDefault) gives R's pattern, with and without the singleton rules
    and the LP repair.  (Equal cells by cell number gave (D, trygd) instead of (D, annet),
    then (G, trygd) and one more cell in region G: 5 secondaries, not 3.)"""
    t = z1_table()
    plain = GaussSuppression(singletons=False, repair_limit=0).apply(t).table
    assert named(plain, plain.suppressed) == R_PATTERN
    res = GaussSuppression().apply(t)
    assert named(res.table, res.table.suppressed) == R_PATTERN
    assert res.n_secondary == 3 and res.details["repaired"] == 0
    assert res.protected and audit(res.table, insider=False).ok


# ---------------------------------------------------------------------------------------------
# The vignette "Small count frequency table suppression" of GaussSuppression (its output as R
# printed it, on CRAN): ``dataset_a`` is the year 2014 of SSBtoolsData("example1"), built from
# literals in SSBtools' R/SSBtoolsData.R (age recoded young / old, the freq vector given
# there), and
#
#     SuppressSmallCounts(data = dataset_a, dimVar = c("age", "geo"), freqVar = "freq",
#                         maxN = 1)
#
# prints 12 rows (age slowest: Total, old, young; geo: Total, Iceland, Portugal, Spain) with
# (young, Portugal) = 0 primary and rows 6, 7, 10, 11 suppressed: old and young in Iceland and
# Portugal.  R's defaults there: zeros and counts <= maxN primary, the candidates by
# CandidatesDefault, the singleton method anySum.
EXAMPLE1_2014 = {
    ("young", "Spain"): 5, ("young", "Iceland"): 2, ("young", "Portugal"): 0,
    ("old", "Spain"): 6, ("old", "Iceland"): 3, ("old", "Portugal"): 4,
}  # fmt: skip
VIGNETTE_ROWS = (6, 7, 10, 11)


def test_vignette_table_1_is_r_golden() -> None:
    ages, geos = ["old", "young"], ["Iceland", "Portugal", "Spain"]
    inner = np.array([[EXAMPLE1_2014[(a, g)] for g in geos] for a in ages], dtype=float)
    full = with_margins(inner)
    t = Table.from_array(
        full, {"age": ages, "geo": geos}, n_contributors=full.astype(int), kind="count"
    )
    t = apply_rules(t, [MinFrequency(threshold=2), ZeroCells(disclosing_only=False)])
    r_order = list(itertools.product(["Total", *ages], ["Total", *geos]))
    expected = {r_order[k - 1] for k in VIGNETTE_ROWS}
    assert expected == {("old", "Iceland"), ("old", "Portugal"), ("young", "Iceland"),
                        ("young", "Portugal")}  # fmt: skip

    def pattern(out: Table) -> set[tuple[str, str]]:
        return {(a, g) for a, g in r_order if out.suppressed[t.cell(age=a, geo=g)]}

    assert pattern(t) == {("young", "Portugal")}  # the primary: the zero
    plain = GaussSuppression(singletons=False, repair_limit=0).apply(t).table
    assert pattern(plain) == expected
    res = GaussSuppression().apply(t)
    assert pattern(res.table) == expected
    assert res.protected and audit(res.table, insider=False).ok


# The same vignette with the geography's hierarchy (``dimVar = c("age", "geo", "eu")``: EU over
# Portugal and Spain, nonEU over Iceland).  R prints 18 rows, age slowest (Total, old, young),
# geo as Total, EU, nonEU, Iceland, Portugal, Spain; the suppressed rows as printed on CRAN
# (version 1.0.0 of the vignette), with R's defaults (``protectZeros = TRUE``, the singleton
# method anySum, whose singletons here are the zero inner cells):
#
# * Table 2, ``maxN = 2`` on dataset_a: rows 8-11 and 14-17 suppressed;
# * Table 4, ``maxN = 4, protectZeros = FALSE`` on dataset_a: rows 5, 6, 8-11, 14-16, 18;
# * Table 5, ``maxN = 3, protectZeros = FALSE, secondaryZeros = TRUE`` on dataset_a: rows 8-11
#   and 14-17 (the zero young Portugal, row 17, a secondary);
# * Table 7, ``maxN = 2`` on dataset_b (the year 2015: young Iceland is 0 as well): rows 8-12
#   and 14-18; the vignette: with ``singletonMethod = "none"`` rows 12 and 18 (the Spain cells
#   of old and young) would be published.
EXAMPLE1_2015 = {**EXAMPLE1_2014, ("young", "Iceland"): 0}
EU_GEO = Hierarchy.from_dict(
    {"Total": ["EU", "nonEU"], "EU": ["Portugal", "Spain"], "nonEU": ["Iceland"]}
)
EU_ROWS = list(
    itertools.product(
        ["Total", "old", "young"], ["Total", "EU", "nonEU", "Iceland", "Portugal", "Spain"]
    )
)


def _eu_table(counts: dict[tuple[str, str], int], rules: list) -> Table:
    """The frequency table of one record per person (a zero count: an empty cell)."""
    people = pl.DataFrame(
        [(a, g) for (a, g), n in counts.items() for _ in range(n)],
        schema=["age", "geo"],
        orient="row",
    )
    ages = Hierarchy.flat(["old", "young"])
    return apply_rules(Table.from_microdata(people, {"age": ages, "geo": EU_GEO}), rules)


def _rows(t: Table, mask: np.ndarray) -> list[int]:
    return [k + 1 for k, (a, g) in enumerate(EU_ROWS) if mask[t.cell(age=a, geo=g)]]


def test_vignette_tables_2_and_4_are_r_golden() -> None:
    # Table 2: maxN = 2 with the zeros primary; R's primaries are rows 15, 16, 17
    t2 = _eu_table(EXAMPLE1_2014, [MinFrequency(threshold=3), ZeroCells(disclosing_only=False)])
    assert _rows(t2, t2.primary) == [15, 16, 17]
    plain = GaussSuppression(repair_limit=0).apply(t2)
    assert _rows(plain.table, plain.table.suppressed) == [8, 9, 10, 11, 14, 15, 16, 17]
    assert audit(plain.table, intervals="check", insider=False).disclosed.size == 0
    # Table 4: maxN = 4, the zero not primary (and never suppressed)
    t4 = _eu_table(EXAMPLE1_2014, [MinFrequency(threshold=5)])
    assert _rows(t4, t4.primary) == [5, 9, 10, 11, 15, 16]
    for method in (GaussSuppression(repair_limit=0), GaussSuppression()):
        res = method.apply(t4)
        assert _rows(res.table, res.table.suppressed) == [5, 6, 8, 9, 10, 11, 14, 15, 16, 18]
    assert res.protected


def test_vignette_table_7_zero_totals_and_the_sum_of_zeros() -> None:
    """dataset_b: young nonEU is a zero total over the zero young Iceland.  Both zeros are
    primary (R's rows 15 and 16) with young Portugal (17).  Without more, publishing the
    Spain cells gives young Portugal + young nonEU = 0, so both are 0 (cells are non-negative):
    R's anySum suppresses rows 12 and 18 for that; sdckit's elimination alone does not (R's
    "none"), and its audit with the non-negative bounds finds it and the repair adds them."""
    t = _eu_table(EXAMPLE1_2015, [MinFrequency(threshold=3), ZeroCells(disclosing_only=False)])
    assert _rows(t, t.primary) == [15, 16, 17]
    plain = GaussSuppression(repair_limit=0).apply(t)
    assert _rows(plain.table, plain.table.suppressed) == [8, 9, 10, 11, 14, 15, 16, 17]
    res = GaussSuppression().apply(t)
    assert _rows(res.table, res.table.suppressed) == [8, 9, 10, 11, 12, 14, 15, 16, 17, 18]
    assert res.protected and audit(res.table, intervals="check", insider=False).ok


def test_vignette_table_5_a_zero_as_secondary() -> None:
    """``secondary_zeros=True``: the empty cells are the last candidates, so the zero young
    Portugal is suppressed where R suppresses it; by default it is never suppressed and the
    Spain cells are (rows 12 and 18 instead of 11 and 17)."""
    t = _eu_table(EXAMPLE1_2014, [MinFrequency(threshold=4)])
    assert _rows(t, t.primary) == [9, 10, 15, 16]
    zeros = GaussSuppression(repair_limit=0, secondary_zeros=True).apply(t)
    assert _rows(zeros.table, zeros.table.suppressed) == [8, 9, 10, 11, 14, 15, 16, 17]
    assert zeros.details["secondary_zeros"] == 1
    assert zeros.table.status[zeros.table.cell(age="young", geo="Portugal")] == CellStatus.SECONDARY
    assert audit(zeros.table, intervals="check", insider=False).disclosed.size == 0
    plain = GaussSuppression(repair_limit=0).apply(t)
    assert _rows(plain.table, plain.table.suppressed) == [8, 9, 10, 12, 14, 15, 16, 18]
    assert plain.details["secondary_zeros"] == 0
    res = GaussSuppression(secondary_zeros=True).apply(t)
    assert res.protected and audit(res.table, intervals="check", insider=False).ok
