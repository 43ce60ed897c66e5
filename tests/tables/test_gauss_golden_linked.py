"""Golden values from GaussSuppression's test "SuppressLinkedTables", on its public test data.

The R test (``tests/testthat/test-LinkedSuppression.R`` of the R package GaussSuppression,
version 1.2.3; the test starts with ``skip("since more advanced tests below")``, the values it
asserts are R's own) protects four tables of the data ``d53`` (``testdata/d53.rds``: 10,000
records drawn from Statistics Norway's public census hypercube data, aggregated into 1,241
rows with ``freq``; MIT licence; here ``data/gauss/d53.csv.gz``, read with the Python package
``rdata`` outside sdckit and written unchanged) with::

    SuppressLinkedTables(data = d53, freqVar = "freq", fun = SuppressSmallCounts,
                         withinArg = list(list(formula = f1), ..., list(formula = f4)),
                         maxN = 3, protectZeros = FALSE, extend0 = FALSE,
                         singletonMethod = "none", linkedGauss = "local", ...)

    f1 <- ~sex * (age_l + age_m + age_h) * (lms_l + lms_h)
    f2 <- ~sex * (age_l + age_m + age_h) * (hst_l + hst_m + hst_h)
    f3 <- ~sex * (age_l + age_m + age_h) * (fst_l + fst_m + fst_h)
    f4 <- ~sex * (lms_l + lms_h) * (hst_l + hst_m + hst_h)

and asserts ``sapply(a, function(x) sum(seq_len(nrow(x)) * x$suppressed))`` equal to
``local_FALSE = c(1282693, 2221804, 4755062, 20531)``.  "local" protects each table on its own
by ``GaussSuppression``: four independent tables.  The R defaults that apply: primaries are the
cells with ``freq <= 3`` (no zeros are primary; the data have none), the candidates are
published by ``CandidatesDefault`` (decreasing ``freq + 1``, ties by ``X' X (freq + 1)``), and
no singleton method.

The sum weighs each suppressed output row by its row number, so it checks the whole pattern
through R's row order, which is rebuilt here:

* the first row is the grand total; then the formula's terms in R's ``terms()`` order: the
  expansion ``(a * B) * C = a + B + a:B + C + (a + B + a:B):C`` (``B``, ``C`` the sums of the
  level variables), sorted by order (stable);
* within a term, the code combinations present in the data, sorted as R sorts them on the
  machine that made the values: by bytes (C locale; ``"10-14" < "100" < "15-19"``, and with
  ``-`` ignored the sums differ).

The level variables of a dimension nest (``age_l`` > ``age_m`` > ``age_h``), so each table is
a three-way hierarchical table.  Codes of two levels that hold the same records (``lms`` code
``SIN`` at both levels, ``age_m`` ``100`` over the one ``age_h`` ``100``) are separate R rows
but one sdckit cell: their rows are suppressed together.

The same R test runs the four tables through ``tables_by_formulas`` (one output over the
combined formula ``~ (f1) + (f2) + (f3) + (f4)``, its rows in the order of that formula's terms)
and asserts the sum over those rows (``sum2``): ``global_FALSE = 21619689`` (one elimination
over the combined model matrix: sdckit's joint elimination over the atoms),
``local_FALSE = 20753475`` (each table on its own, the candidates in the combined model's
order) and ``back-tracking_FALSE = consistent_FALSE = 20747225`` (the tables protected in
turn, every cell suppressed so far a primary in the next table, until nothing changes:
``LinkedTables.protect(..., secondaries_as_primary=True)``).  All three are reproduced at the
end of this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.tables import (
    GaussSuppression,
    Hierarchy,
    LinkedTables,
    MinFrequency,
    Table,
    apply_rules,
    audit,
)
from sdckit.tables.suppression._gauss_linked import joint_elimination
from sdckit.tables.table import CellStatus

D53 = Path(__file__).parent / "data" / "gauss" / "d53.csv.gz"
LEVELS = {
    "sex": ["sex"],
    "age": ["age_l", "age_m", "age_h"],
    "lms": ["lms_l", "lms_h"],
    "hst": ["hst_l", "hst_m", "hst_h"],
    "fst": ["fst_l", "fst_m", "fst_h"],
}
# the four tables of the R test and their asserted sums (local_FALSE)
TABLES = {
    "f1": (("sex", "age", "lms"), 1282693),
    "f2": (("sex", "age", "hst"), 2221804),
    "f3": (("sex", "age", "fst"), 4755062),
    "f4": (("sex", "lms", "hst"), 20531),
}


@pytest.fixture(scope="module")
def d53() -> pl.DataFrame:
    data = pl.read_csv(D53, infer_schema_length=0)
    return data.with_columns(pl.col("freq").cast(pl.Int64))


def r_terms(dims: tuple[str, str, str]) -> list[tuple[str, ...]]:
    """The terms of ``~a * (b_1 + ...) * (c_1 + ...)`` in R's ``terms()`` order."""
    a, b, c = ([(v,) for v in LEVELS[d]] for d in dims)
    left = a + b + [x + y for x in a for y in b]
    expanded = left + c + [x + y for x in left for y in c]
    return [(), *sorted(expanded, key=len)]


def r_rows(data: pl.DataFrame, dims: tuple[str, str, str]) -> list[dict[str, str]]:
    """GaussSuppression's output rows: ``{variable: code}`` of each row, in R's order."""
    rows: list[dict[str, str]] = []
    for term in r_terms(dims):
        if not term:
            rows.append({})
            continue
        combos = data.select(term).unique().rows()
        # C locale: by bytes, the first variable slowest
        for combo in sorted(combos, key=lambda t: tuple(x.encode() for x in t)):
            rows.append(dict(zip(term, combo, strict=True)))
    return rows


def hierarchy(data: pl.DataFrame, levels: list[str]) -> tuple[Hierarchy, dict]:
    """The dimension's hierarchy: a node per distinct set of finest codes (codes of two
    levels with the same records are one node), its parent the smallest strict superset.
    Returns it with the node of every ``(variable, code)``."""
    finest = levels[-1]
    pairs = data.select([*levels]).unique(maintain_order=True)
    sets: dict[tuple[str, str], frozenset[str]] = {}
    for v in levels:
        for code, group in pairs.group_by(v, maintain_order=True):
            sets[(v, str(code[0]))] = frozenset(group[finest].to_list())
    name: dict[frozenset[str], str] = {}
    for (v, code), s in sets.items():
        name.setdefault(s, f"{v}={code}")
    everything = frozenset(pairs[finest].to_list())
    name.setdefault(everything, "Total")
    tree: dict[str, list[str]] = {}
    for s, node in name.items():
        if s == everything:
            continue
        parent = min((p for p in name if s < p), key=len)
        tree.setdefault(name[parent], []).append(node)
    return Hierarchy.from_dict(tree), {key: name[s] for key, s in sets.items()}


def table_of(data: pl.DataFrame, dims: tuple[str, str, str]) -> tuple[Table, list[int]]:
    """The frequency table of ``dims`` (MinFrequency(4): R's freq <= 3) and the sdckit cell
    of each R output row."""
    hier, node = {}, {}
    for d in dims:
        hier[d], node[d] = hierarchy(data, LEVELS[d])
    records = data.select(
        *[
            pl.col(LEVELS[d][-1])
            .replace_strict({c: n for (v, c), n in node[d].items() if v == LEVELS[d][-1]})
            .alias(d)
            for d in dims
        ],
        pl.col("freq"),
    )
    records = records.select(pl.exclude("freq").repeat_by(pl.col("freq")).explode())
    t = Table.from_microdata(records, hier)
    t = apply_rules(t, MinFrequency(threshold=4))
    cells = []
    for row in r_rows(data, dims):
        codes = {}
        for d in dims:
            picked = [v for v in LEVELS[d] if v in row]
            codes[d] = node[d][(picked[0], row[picked[0]])] if picked else "Total"
        cells.append(t.cell(**codes))
    return t, cells


def r_sum(cells: list[int], suppressed: np.ndarray) -> int:
    """``sum(seq_len(nrow(x)) * x$suppressed)`` over R's rows."""
    return sum(k + 1 for k, c in enumerate(cells) if suppressed[c])


def test_r_rows_are_the_output_of_the_formula(d53: pl.DataFrame) -> None:
    """R's output has one row per term and code combination; the cells behind them add up
    to the table's values (a check of the row rebuild and of the hierarchies)."""
    assert d53.height == 1241 and d53["freq"].sum() == 10000
    t, cells = table_of(d53, TABLES["f4"][0])
    rows = r_rows(d53, TABLES["f4"][0])
    assert len(rows) == len(cells) == 302
    assert rows[0] == {} and t.values[cells[0]] == 10000
    for row, cell in zip(rows, cells, strict=True):
        expected = d53.filter(
            pl.all_horizontal([pl.col(v) == code for v, code in row.items()] or [pl.lit(True)])
        )["freq"].sum()
        assert t.values[cell] == expected
    # C locale: "10-14" before "100" before "15-19"
    ages = [r["age_m"] for r in r_rows(d53, TABLES["f1"][0]) if list(r) == ["age_m"]]
    assert ages.index("10-14") < ages.index("100") < ages.index("15-19")


@pytest.mark.parametrize("name", list(TABLES))
def test_d53_local_gauss_patterns_are_r_golden(d53: pl.DataFrame, name: str) -> None:
    """Each table protected on its own by sdckit's elimination with its default candidate
    order (the tie order of R's CandidatesDefault) and no singleton rule (R's
    ``singletonMethod = "none"``) gives R's asserted sum, so R's pattern."""
    dims, expected = TABLES[name]
    t, cells = table_of(d53, dims)
    res = GaussSuppression(singletons=False, repair_limit=0).apply(t)
    assert r_sum(cells, res.table.suppressed) == expected
    # and no primary is computable from the published cells (the elimination's guarantee,
    # checked by the LP audit: no primary's interval is a point)
    checked = audit(res.table, intervals="check", insider=False)
    assert not np.any(checked.exact[t.primary[checked.cells]])


def test_d53_f4_with_sdckit_defaults_keeps_the_r_pattern(d53: pl.DataFrame) -> None:
    """With the singleton rules and the LP audit and repair on (sdckit's defaults), the
    fourth table keeps R's pattern: it already meets the protection levels."""
    dims, expected = TABLES["f4"]
    t, cells = table_of(d53, dims)
    res = GaussSuppression().apply(t)
    assert r_sum(cells, res.table.suppressed) == expected
    assert res.details["repaired"] == 0 and res.protected


def test_every_r_row_maps_to_one_cell_and_back(d53: pl.DataFrame) -> None:
    """Rows of codes that hold the same records share a cell; every non-empty cell of the
    table is some R row (R's output has no empty cells: extend0 = FALSE)."""
    for dims, _ in TABLES.values():
        t, cells = table_of(d53, dims)
        nonempty = set(np.flatnonzero(t.values > 0).tolist())
        assert set(cells) == nonempty
        assert len(cells) >= len(nonempty)


def test_c_locale_order_matters(d53: pl.DataFrame) -> None:
    """Sorting with '-' ignored (a common locale collation) gives a different sum for f1: the
    golden value pins the order."""
    dims, expected = TABLES["f1"]
    t, cells = table_of(d53, dims)
    res = GaussSuppression(singletons=False, repair_limit=0).apply(t)
    rows = r_rows(d53, dims)
    first: dict[tuple[str, ...], int] = {}  # the position of each term
    for k, row in enumerate(rows):
        first.setdefault(tuple(row), k)
    keyed = sorted(
        range(len(rows)),
        key=lambda k: (first[tuple(rows[k])], tuple(x.replace("-", "") for x in rows[k].values())),
    )
    other = [cells[k] for k in keyed]
    assert r_sum(cells, res.table.suppressed) == expected
    assert r_sum(other, res.table.suppressed) != expected


# R's "global" protection of the four tables: one GaussSuppression over the combined formula
# (``tables_by_formulas(..., linkedGauss = "global")``, the same R defaults), asserted as the
# sum over the rows of the combined output (``sum2`` of the same R test)
GLOBAL_SUM = 21619689


def r_combined_terms(tables: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The terms of ``~ (f1) + (f2) + ...`` in R's ``terms()`` order: each formula's expanded
    terms in turn, a term already seen dropped, then sorted by order (stable)."""
    seen: set[frozenset[str]] = set()
    terms: list[tuple[str, ...]] = []
    for dims in tables:
        for term in r_terms(dims)[1:]:
            if frozenset(term) not in seen:
                seen.add(frozenset(term))
                terms.append(term)
    return [(), *sorted(terms, key=len)]


def linked_of(data: pl.DataFrame, tables: list[tuple[str, ...]]) -> tuple[LinkedTables, list]:
    """The linked frequency tables (MinFrequency(4)) and the distinct cell of each row of
    R's combined output."""
    variables = ["sex", "age", "lms", "hst", "fst"]
    hier, node = {}, {}
    for d in variables:
        hier[d], node[d] = hierarchy(data, LEVELS[d])
    finest = {d: {c: n for (v, c), n in node[d].items() if v == LEVELS[d][-1]} for d in variables}
    records = data.select(
        *[pl.col(LEVELS[d][-1]).replace_strict(finest[d]).alias(d) for d in variables],
        pl.col("freq"),
    )
    records = records.select(pl.exclude("freq").repeat_by(pl.col("freq")).explode())
    lk = LinkedTables.from_microdata(records, [list(t) for t in tables], hierarchies=hier)
    lk = lk.apply_rules(MinFrequency(threshold=4))
    cells = []
    for term in r_combined_terms(tables):
        combos = [()] if not term else data.select(term).unique().rows()
        for combo in sorted(combos, key=lambda t: tuple(x.encode() for x in t)):
            row = dict(zip(term, combo, strict=True))
            # the first table holding every variable of the term gives the cell
            k = next(i for i, t in enumerate(tables) if all(
                any(v in LEVELS[d] for d in t) for v in term
            ))  # fmt: skip
            codes = {}
            for d in tables[k]:
                picked = [v for v in LEVELS[d] if v in row]
                codes[d] = node[d][(picked[0], row[picked[0]])] if picked else "Total"
            cells.append(int(lk.cell_map[k][lk.tables[k].cell(**codes)]))
    return lk, cells


def test_d53_global_gauss_is_r_golden(d53: pl.DataFrame) -> None:
    """One elimination over the four tables' joint model (LinkedTables.protect with the
    joint elimination) gives R's global pattern: the asserted sum over the combined rows."""
    tables = [dims for dims, _ in TABLES.values()]
    lk, cells = linked_of(d53, tables)
    assert len(lk.atoms) == d53.height  # the rows of d53 are the atoms
    n_atoms, atom, cell = lk.joint_model()
    status = lk.status
    fresh, unsafe, _ = joint_elimination(n_atoms, atom, cell, status, lk._costs("value", status))
    assert not len(unsafe)
    suppressed = fresh | (status == CellStatus.PRIMARY)
    assert sum(k + 1 for k, c in enumerate(cells) if suppressed[c]) == GLOBAL_SUM


# R's "local" protection through tables_by_formulas: each table protected on its own, but in
# the candidate order of the combined model (``sum2`` of the same R test)
LOCAL_GLOBAL_ORDER_SUM = 20753475


def combined_order(lk: LinkedTables) -> np.ndarray:
    """A cost per distinct cell that ranks the candidates as R's CandidatesDefault does over
    the combined model: value, then ``X' X (value + 1)`` over the atoms (highest first)."""
    from sdckit.tables.suppression import gauss

    w = lk._costs("value", lk.status)
    n_atoms, atom, cell = lk.joint_model()
    model = gauss.model_from_entries(
        n_atoms,
        lk.n_distinct,
        atom,
        cell,
        np.zeros(n_atoms, dtype=np.int64),
        np.ones(lk.n_distinct, dtype=bool),
        np.full(n_atoms, -1, dtype=np.int64),
        np.abs(w) + 1.0,
    )
    order = gauss._order(w, model, np.arange(lk.n_distinct))
    rank = np.empty(lk.n_distinct)
    rank[order] = np.arange(lk.n_distinct, 0, -1)  # published first: the highest cost
    return rank


def r_total(cells: list[int], suppressed: np.ndarray) -> int:
    return sum(k + 1 for k, c in enumerate(cells) if suppressed[c])


def test_d53_local_tables_in_the_combined_order_are_r_golden(d53: pl.DataFrame) -> None:
    """Each table's own elimination, its candidates published in the order of the joint
    model (the order R builds over the combined formula), gives R's asserted sum over the
    combined rows for the union of the four patterns; each table in its own order gives
    another."""
    tables = [dims for dims, _ in TABLES.values()]
    lk, cells = linked_of(d53, tables)
    rank = combined_order(lk)

    def union(costs: bool) -> np.ndarray:
        out = lk.status == CellStatus.PRIMARY
        for t, ids in zip(lk.tables, lk.cell_map, strict=True):
            method = GaussSuppression(singletons=False, repair_limit=0)
            if costs:
                method = GaussSuppression(singletons=False, repair_limit=0, cost=rank[ids])
            out[ids[method.apply(t).table.suppressed]] = True
        return out

    assert r_total(cells, union(costs=True)) == LOCAL_GLOBAL_ORDER_SUM
    assert r_total(cells, union(costs=False)) != LOCAL_GLOBAL_ORDER_SUM


# R's "back-tracking" (and "consistent") through tables_by_formulas
BACK_TRACKING_SUM = 20747225


def test_d53_back_tracking_is_r_golden(d53: pl.DataFrame) -> None:
    """LinkedTables.protect with every suppression so far protected as a primary in each
    table (``secondaries_as_primary``) and the combined order gives R's back-tracking
    pattern, consistent and passing the joint audit with no joint repair; with the
    suppressions only forced, the joint audit needs a repair and the pattern differs."""
    tables = [dims for dims, _ in TABLES.values()]
    lk, cells = linked_of(d53, tables)
    rank = combined_order(lk)
    methods = [
        GaussSuppression(singletons=False, repair_limit=0, cost=rank[ids]) for ids in lk.cell_map
    ]

    back = lk.protect(methods, secondaries_as_primary=True)
    assert r_total(cells, back.linked.hidden) == BACK_TRACKING_SUM
    assert back.protected and back.linked.consistent and back.joint_repairs == 0
    # the promoted cells are secondaries again in the release
    for t, orig in zip(back.linked.tables, lk.tables, strict=True):
        np.testing.assert_array_equal(t.primary, orig.primary)
    forced = lk.protect(methods)
    assert forced.protected and forced.linked.consistent and forced.joint_repairs >= 1
    assert r_total(cells, forced.linked.hidden) != BACK_TRACKING_SUM


def test_d53_atom_audit_finds_what_the_rank_test_finds(d53: pl.DataFrame) -> None:
    """The joint audit over the records' atoms (``model="atoms"``, check mode) on d53: the
    iterative pattern passes the tables' joint audit but leaves 334 primaries exactly
    computable to an intruder who knows the empty combinations -- the audit names the same
    primaries as an independent rank test on the dense atom model; the joint elimination's
    pattern passes it."""
    tables = [dims for dims, _ in TABLES.values()]
    lk, _ = linked_of(d53, tables)
    n_atoms, atom, cell = lk.joint_model()
    x = np.zeros((n_atoms, lk.n_distinct))
    x[atom, cell] = 1.0
    prim = np.flatnonzero(lk.status == CellStatus.PRIMARY)

    def computable(hidden: np.ndarray) -> set[int]:
        u, s, _ = np.linalg.svd(x[:, ~hidden], full_matrices=False)
        q = u[:, s > 1e-9 * s[0]]
        rest = x[:, prim] - q @ (q.T @ x[:, prim])
        return set(prim[np.linalg.norm(rest, axis=0) < 1e-7].tolist())

    iterative = lk.protect(GaussSuppression())
    assert iterative.protected  # the tables' own joint audit
    checked = iterative.linked.audit(model="atoms", intervals="check")
    short = set(checked.cells[~checked.protected].tolist())
    assert short == computable(iterative.linked.hidden) and len(short) == 334
    # the rank test alone (computable_primaries) finds the same 334
    assert set(iterative.linked.computable_primaries().tolist()) == short
    joint = lk.protect(GaussSuppression(), joint_elimination=True)
    assert joint.linked.audit(model="atoms", intervals="check").ok
    assert not len(joint.linked.computable_primaries())
