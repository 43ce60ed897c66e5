"""Linked tables: common cells, consistent suppression, the joint audit."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit import SdcError
from sdckit.tables import (
    CellStatus,
    Hierarchy,
    HypercubeSuppression,
    LinkedTables,
    MinFrequency,
    ModularSuppression,
    TableMethod,
    audit,
)


def _records(counts: dict[tuple[str, str, str], int]) -> pl.DataFrame:
    rows = []
    for (region, sex, age), n in counts.items():
        rows += [{"region": region, "sex": sex, "age": age}] * n
    return pl.DataFrame(rows)


@pytest.fixture
def linked() -> LinkedTables:
    """region x sex and region x age; (r1, m) = 2 is the only cell under 3."""
    df = _records(
        {
            ("r1", "m", "a1"): 1,
            ("r1", "m", "a2"): 1,
            ("r1", "f", "a1"): 5,
            ("r1", "f", "a2"): 3,
            ("r2", "m", "a1"): 3,
            ("r2", "m", "a2"): 2,
            ("r2", "f", "a1"): 3,
            ("r2", "f", "a2"): 4,
        }
    )
    return LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]])


def test_common_cells_are_the_shared_margin(linked: LinkedTables) -> None:
    t1, t2 = linked.tables
    assert linked.n_distinct == 9 + 9 - 3
    common = linked.common_cells
    assert len(common) == 3
    pairs = {(t1.cell_label(c1), t2.cell_label(c2)) for (_, c1), (_, c2) in common}
    assert pairs == {
        ("region='Total', sex='Total'", "region='Total', age='Total'"),
        ("region='r1', sex='Total'", "region='r1', age='Total'"),
        ("region='r2', sex='Total'", "region='r2', age='Total'"),
    }
    for (_, c1), (_, c2) in common:
        assert t1.values[c1] == t2.values[c2]
    m = linked.constraint_matrix
    assert m.shape[1] == 15
    # 6 relations each; the grand total over the regions is the same relation in both
    assert m.shape[0] == 11
    assert np.allclose(m @ linked.values, 0)


def test_a_suppressed_common_cell_is_suppressed_in_the_other_table(
    linked: LinkedTables,
) -> None:
    lk = linked.apply_rules(MinFrequency(threshold=3))
    t1, t2 = lk.tables
    t1 = t1.suppress([t1.cell(region="r1", sex="Total")])
    synced = lk.with_tables([t1, t2]).synced()
    s2 = synced.tables[1]
    assert s2.status[s2.cell(region="r1", age="Total")] == CellStatus.SECONDARY
    assert synced.consistent
    assert not lk.with_tables([t1, t2]).consistent


def _leaky(linked: LinkedTables) -> LinkedTables:
    """(r1, m) protected in table 1 through the region margin, which table 2 publishes the
    parts of: each table's audit passes, the joint one does not."""
    lk = linked.apply_rules(MinFrequency(threshold=3))
    t1, t2 = lk.tables
    t1 = t1.suppress(
        [
            t1.cell(region="r1", sex="Total"),
            t1.cell(region="r2", sex="m"),
            t1.cell(region="r2", sex="Total"),
        ]
    )
    return lk.with_tables([t1, t2]).synced()


def test_pattern_safe_in_each_table_fails_jointly(linked: LinkedTables) -> None:
    leaky = _leaky(linked)
    t1, t2 = leaky.tables
    p = t1.cell(region="r1", sex="m")
    assert t1.primary.tolist().count(True) == 1 and t1.primary[p]
    assert audit(t1, insider=False).ok and audit(t1, insider=False).interval(p) == (0.0, 7.0)
    assert audit(t2, insider=False).ok  # no primary in table 2, the margin cells are secondaries
    joint = leaky.audit()
    assert not joint.ok
    assert joint.under_protected == [(0, p)]
    assert joint.interval(0, p, leaky) == (2.0, 2.0)  # r1 total = 6 + 4 from table 2
    assert joint.summary().to_dict()["under-protected cells"] == 1


@pytest.mark.parametrize("method", [HypercubeSuppression(), ModularSuppression()])
def test_protect_gives_a_consistent_pattern_that_passes_jointly(
    linked: LinkedTables, method: Any
) -> None:
    lk = linked.apply_rules(MinFrequency(threshold=3))
    res = lk.protect(method)
    assert res.protected and res.audit.ok
    assert res.linked.consistent
    t1 = res.linked.tables[0]
    assert t1.suppressed[t1.cell(region="r1", sex="m")]
    assert all(audit(t, insider=False).ok for t in res.tables)
    assert all(t.protected is True for t in res.tables)
    # the leaky start is repaired: table 2's method protects the forced margin cells
    fixed = _leaky(linked).protect(method)
    assert fixed.audit.ok and fixed.linked.consistent
    t2 = fixed.linked.tables[1]
    assert t2.suppressed[t2.cell(region="r1", age="Total")]
    assert t2.suppressed.sum() >= 4


class _KeepPattern(TableMethod):
    """A 'method' that adds nothing, so that only the joint repair can protect."""

    kind: ClassVar[str] = "suppression"
    family: ClassVar[str | None] = None

    def apply(self, table: Any) -> Any:
        return SimpleNamespace(table=table)

    @classmethod
    def contract_example(cls) -> Any:  # pragma: no cover - not registered
        raise NotImplementedError


def test_joint_repair_protects_a_leak(linked: LinkedTables) -> None:
    res = _leaky(linked).protect(_KeepPattern())
    assert res.joint_repairs > 0
    assert res.audit.ok and res.linked.consistent
    p = res.linked.tables[0].cell(region="r1", sex="m")
    lo, hi = res.audit.interval(0, p, res.linked)
    assert lo <= 1.0 and hi >= 3.0
    assert res.summary().to_dict()["cells added by the joint repair"] == res.joint_repairs


def test_primary_common_cell_is_protected_in_both_tables() -> None:
    # region r3 has two records: its margin cell is primary in both tables
    df = _records(
        {
            ("r1", "m", "a1"): 4,
            ("r1", "f", "a2"): 5,
            ("r1", "m", "a2"): 3,
            ("r1", "f", "a1"): 6,
            ("r2", "m", "a1"): 5,
            ("r2", "f", "a2"): 4,
            ("r2", "m", "a2"): 3,
            ("r2", "f", "a1"): 4,
            ("r3", "m", "a1"): 1,
            ("r3", "f", "a2"): 1,
        }
    )
    lk = LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]])
    lk = lk.apply_rules(MinFrequency(threshold=3))
    t1, t2 = lk.tables
    assert t1.primary[t1.cell(region="r3", sex="Total")]
    assert t2.primary[t2.cell(region="r3", age="Total")]
    res = lk.protect()
    assert res.audit.ok and res.linked.consistent
    for t, dim in zip(res.linked.tables, ("sex", "age"), strict=True):
        assert t.suppressed[t.cell(region="r3", **{dim: "Total"})]
        assert audit(t, insider=False).ok


def test_bad_inputs(linked: LinkedTables) -> None:
    from sdckit.tables import Table

    df = pl.DataFrame({"region": ["a", "b", "a"], "sex": ["m", "f", "f"], "age": ["x", "y", "y"]})
    with pytest.raises(SdcError, match="drop"):
        LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]], missing="drop")
    a = Table.from_microdata(df, ["region", "sex"])
    b = Table.from_microdata(df, {"region": {"All": ["a", "b"]}, "age": None})
    with pytest.raises(SdcError, match="different hierarchies"):
        LinkedTables([a, b])
    c = Table.from_microdata(df.filter(pl.col("sex") == "f"), {"region": ["a", "b"], "age": None})
    with pytest.raises(SdcError, match="disagree on a common cell"):
        LinkedTables([a, c])
    with pytest.raises(SdcError, match="two Table"):
        LinkedTables([a])
    with pytest.raises(SdcError, match="method"):
        linked.protect("hypercube")


def test_hierarchical_variable_shared_by_both_tables() -> None:
    df = _records(
        {
            ("r1", "m", "a1"): 4,
            ("r1", "f", "a2"): 5,
            ("r2", "m", "a1"): 1,
            ("r2", "f", "a2"): 6,
            ("r3", "m", "a2"): 7,
            ("r3", "f", "a1"): 3,
        }
    )
    region = {"Total": ["N", "S"], "N": ["r1", "r2"], "S": ["r3"]}
    lk = LinkedTables.from_microdata(
        df, [["region", "sex"], ["region", "age"]], hierarchies={"region": region}
    )
    # Total, N, r1, r2, S, r3 at the other variable's total: six common cells
    assert len(lk.common_cells) == 6
    res = lk.apply_rules(MinFrequency(threshold=3)).protect()
    assert res.audit.ok and res.linked.consistent
    t1, t2 = res.linked.tables
    assert t1.primary[t1.cell(region="r2", sex="m")]
    for t, dim in ((t1, "sex"), (t2, "age")):
        for code in ("N", "S", "r1", "r2", "r3"):
            c = t.cell(region=code, **{dim: "Total"})
            assert t.suppressed[c] == t1.suppressed[t1.cell(region=code, sex="Total")]


# ---------------------------------------------------------------- the joint elimination
def _joint_dense(lk: LinkedTables) -> np.ndarray:
    """The joint model as a dense 0/1 matrix, rebuilt from the records' atoms without
    :meth:`LinkedTables.joint_model`: atom ``a`` is under distinct cell ``g`` when, in some
    table holding ``g``, each of ``g``'s codes is the atom's code or one of its ancestors."""
    assert lk.atoms is not None
    x = np.zeros((len(lk.atoms), lk.n_distinct))
    for t, ids in zip(lk.tables, lk.cell_map, strict=True):
        for c in range(t.n_cells):
            nodes = t.node_index[c]
            under = np.ones(len(lk.atoms), dtype=bool)
            for d, (name, h) in enumerate(zip(t.dimensions, t.hierarchies, strict=True)):
                leaf = lk.atoms[:, lk.variables.index(name)]
                pairs = set(zip(*(a.tolist() for a in h.ancestor_pairs), strict=True))
                # the cell's node must be an ancestor of (or equal to) the atom's leaf
                under &= np.array([(int(lf), int(nodes[d])) in pairs for lf in leaf])
            x[under, ids[c]] = 1.0
    return x


def _computable(x: np.ndarray, suppressed: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Which of ``cells`` are linear combinations of the published columns of ``x``."""
    published = x[:, ~suppressed]
    if published.shape[1] == 0:
        return np.array([not x[:, c].any() for c in cells], dtype=bool)
    u, s, _ = np.linalg.svd(published, full_matrices=False)
    q = u[:, s > 1e-9 * max(s[0], 1.0)]
    rest = x[:, cells] - q @ (q.T @ x[:, cells])
    return np.linalg.norm(rest, axis=0) < 1e-7


def test_joint_model_is_the_atoms_under_each_cell(linked: LinkedTables) -> None:
    n_atoms, atom, cell = linked.joint_model()
    assert n_atoms == 8 and len(linked.atoms) == 8  # every region x sex x age combination
    x = np.zeros((n_atoms, linked.n_distinct))
    x[atom, cell] = 1.0
    np.testing.assert_array_equal(x, _joint_dense(linked))
    # each atom is under 4 cells of each table, 2 of them (total, region) common
    assert np.all(x.sum(axis=1) == 6)
    # the cells are the sums of their atoms' records
    # the fixture's records by atom (region, then sex f < m, then age)
    counts = np.array([5, 3, 1, 1, 3, 4, 3, 2], dtype=float)
    np.testing.assert_array_equal(counts @ x, linked.values)


def test_joint_elimination_protects_what_the_tables_alone_leak() -> None:
    """region x sex and region x age: each table's own elimination, their suppressions put
    together, leaves five primaries in the span of the published cells of both tables; one
    elimination over the joint model leaves none, and protect() keeps that (common cells
    agree, the joint audit passes)."""
    from sdckit.tables import GaussSuppression

    df = _records(
        {
            ("r1", "f", "a1"): 3,
            ("r1", "m", "a1"): 1,
            ("r2", "f", "a1"): 2,
            ("r2", "f", "a2"): 1,
            ("r2", "m", "a2"): 3,
            ("r3", "m", "a1"): 1,
        }
    )
    lk = LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]])
    lk = lk.apply_rules(MinFrequency(threshold=3))
    x = _joint_dense(lk)
    prim = np.flatnonzero(lk.status == CellStatus.PRIMARY)
    alone = lk.status == CellStatus.PRIMARY
    for t, ids in zip(lk.tables, lk.cell_map, strict=True):
        out = GaussSuppression(singletons=False, repair_limit=0).apply(t).table
        alone[ids[out.suppressed]] = True
    assert _computable(x, alone, prim).sum() == 5
    res = lk.protect(GaussSuppression(), joint_elimination=True)
    assert res.protected and res.linked.consistent
    assert not _computable(x, res.linked.hidden, prim).any()
    assert res.details["joint_elimination"]["atoms"] == 6


@st.composite
def _linked_records(draw: Any) -> tuple[pl.DataFrame, dict[str, Any], list[list[str]]]:
    n = draw(st.integers(min_value=4, max_value=40))
    geo = draw(
        st.lists(st.sampled_from(["0101", "0102", "0201", "0202", "0301"]), min_size=n, max_size=n)
    )
    sex = draw(st.lists(st.sampled_from(["1", "2"]), min_size=n, max_size=n))
    age = draw(st.lists(st.sampled_from(["00", "01", "02"]), min_size=n, max_size=n))
    df = pl.DataFrame({"geo": geo, "sex": sex, "age": age})
    leaves = sorted(set(geo))
    hier = {"geo": Hierarchy.from_code_lengths(leaves, [2])}
    dims = draw(
        st.sampled_from(
            [
                [["geo", "sex"], ["geo", "age"]],
                [["geo", "sex"], ["sex", "age"], ["geo", "age"]],
                [["geo", "sex", "age"], ["geo", "age"]],
            ]
        )
    )
    return df, hier, dims


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_linked_records())
def test_no_primary_is_computable_from_all_the_tables_after_the_joint_elimination(
    case: tuple[pl.DataFrame, dict[str, Any], list[list[str]]],
) -> None:
    """Random linked tables (a hierarchical geography with leading zeros, two or three
    tables): the joint elimination's pattern leaves no primary in the span of the published
    cells of all the tables (an independent rank test on the dense joint model), decides each
    distinct cell once, and suppresses no primary's copy differently."""
    from sdckit.tables.suppression._gauss_linked import joint_elimination

    df, hier, dims = case
    lk = LinkedTables.from_microdata(df, dims, hierarchies=hier)
    lk = lk.apply_rules(MinFrequency(threshold=3))
    status = lk.status
    n_atoms, atom, cell = lk.joint_model()
    fresh, unsafe, _ = joint_elimination(n_atoms, atom, cell, status, lk._costs("value", status))
    prim = np.flatnonzero(status == CellStatus.PRIMARY)
    x = _joint_dense(lk)
    supp = fresh | (status == CellStatus.PRIMARY)
    assert not len(unsafe)
    assert not _computable(x, supp, prim).any()
    assert not np.any(fresh & (status != CellStatus.SAFE))
    # every secondary is needed for some primary: publishing it alone makes one computable
    for g in np.flatnonzero(fresh)[:5]:
        fewer = supp.copy()
        fewer[g] = False
        assert _computable(x, fewer, prim).any()


def test_joint_elimination_needs_the_records_and_a_flag(linked: LinkedTables) -> None:
    with pytest.raises(SdcError, match="from_microdata"):
        LinkedTables(linked.tables).joint_model()
    with pytest.raises(SdcError, match="joint_elimination"):
        linked.protect(joint_elimination="yes")  # type: ignore[arg-type]


def test_a_cell_published_in_one_table_is_known_in_the_joint_audit(linked: LinkedTables) -> None:
    """An inconsistent pattern: the region margin r1 (10 records), primary, suppressed with
    a cycle of four cells in table 1 and published in table 2.  The joint audit reads it from
    table 2 (exact, under-protected) instead of treating it as hidden.  Made consistent it
    still leaks (table 2's age cells add up to it), which protect() repairs."""
    t1, t2 = linked.tables
    r1 = t1.cell(region="r1", sex="Total")
    assert t1.values[r1] == 10
    cycle = [t1.cell(region=r, sex=s) for r in ("r1", "r2") for s in ("Total", "m")]
    t1 = t1.suppress([r1], status=CellStatus.PRIMARY).suppress(cycle[1:])
    apart = linked.with_tables([t1, t2])
    assert not apart.consistent
    gid = int(apart.cell_map[0][r1])
    assert not apart.hidden[gid]  # published in table 2
    assert apart.synced().hidden[gid]
    joint = apart.audit()
    k = int(np.flatnonzero(joint.cells == int(apart.cell_map[0][r1]))[0])
    assert joint.exact[k] and not joint.protected[k]
    assert joint.minimum[k] == joint.maximum[k] == 10.0
    assert (0, r1) in joint.under_protected
    together = apart.synced()  # the margin cells suppressed in table 2 too
    assert together.consistent
    assert not together.audit().ok
    fixed = together.protect()
    assert fixed.protected and fixed.linked.consistent
    t2 = fixed.linked.tables[1]
    assert t2.suppressed[[t2.cell(region="r1", age=a) for a in ("a1", "a2")]].any()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_linked_records())
def test_protect_with_the_joint_elimination_is_consistent_and_passes_jointly(
    case: tuple[pl.DataFrame, dict[str, Any], list[list[str]]],
) -> None:
    """The whole scheme after the joint elimination (each table's Gauss method with its
    singleton rules and LP repair, the joint audit and repair): common cells agree, the joint
    audit passes, every table's own audit passes, and no primary is in the span of the
    published cells of all the tables."""
    from sdckit.errors import InfeasibleError
    from sdckit.tables import GaussSuppression

    df, hier, dims = case
    lk = LinkedTables.from_microdata(df, dims, hierarchies=hier)
    lk = lk.apply_rules(MinFrequency(threshold=3))
    try:
        res = lk.protect(GaussSuppression(), joint_elimination=True)
    except InfeasibleError:  # a primary no pattern protects (said so, never returned)
        return
    assert res.protected and res.linked.consistent
    assert all(audit(t, insider=False).ok for t in res.linked.tables)
    prim = np.flatnonzero(lk.status == CellStatus.PRIMARY)
    assert not _computable(_joint_dense(lk), res.linked.hidden, prim).any()


@pytest.mark.parametrize("method", [HypercubeSuppression(), ModularSuppression()])
def test_secondaries_as_primary_with_any_method(linked: LinkedTables, method: Any) -> None:
    """Every suppression so far protected as a primary of no level in the next table: the
    result is consistent, passes the joint audit, and marks as primary only the cells the
    rules marked (the published symbols stay what they were)."""
    lk = linked.apply_rules(MinFrequency(threshold=3))
    res = lk.protect(method, secondaries_as_primary=True)
    assert res.protected and res.linked.consistent
    for t, orig in zip(res.linked.tables, lk.tables, strict=True):
        np.testing.assert_array_equal(t.primary, orig.primary)
        assert audit(t, insider=False).ok
    with pytest.raises(SdcError, match="secondaries_as_primary"):
        lk.protect(method, secondaries_as_primary=1)  # type: ignore[arg-type]


def _singleton_reveals(lk: LinkedTables, x: np.ndarray, suppressed: np.ndarray) -> list:
    """(one-contributor cell, primary): the primary is computable from the published cells
    of all the tables and that respondent's own value (his cell's column), and is not made
    of that value alone -- rule R1 over the joint model, checked by rank independently."""
    prim = np.flatnonzero(lk.status == CellStatus.PRIMARY)
    singles = np.flatnonzero(
        (lk.n_contributors == 1) & (x.sum(axis=0) == 1) & (lk.status != CellStatus.EMPTY)
    )
    out = []
    for s in singles:
        if not suppressed[s]:
            continue
        known = suppressed.copy()
        known[s] = False  # the respondent knows it as if published
        for p in prim[_computable(x, known, prim)]:
            if not np.array_equal(x[:, p], x[:, s]):
                out.append((int(s), int(p)))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_linked_records())
def test_joint_singleton_rules_hold_over_all_the_tables(
    case: tuple[pl.DataFrame, dict[str, Any], list[list[str]]],
) -> None:
    """With the singleton rules, the joint elimination's pattern leaves no primary that one
    respondent computes from his own one-contributor cell and the published cells of all the
    tables (an independent rank test), and no primary computable at all; the pattern holds
    the one without the rules' extra suppressions only where they are needed."""
    from sdckit.tables.suppression._gauss_linked import joint_elimination

    df, hier, dims = case
    lk = LinkedTables.from_microdata(df, dims, hierarchies=hier)
    lk = lk.apply_rules(MinFrequency(threshold=3))
    status = lk.status
    n_atoms, atom, cell = lk.joint_model()
    w = lk._costs("value", status)
    fresh, unsafe, details = joint_elimination(
        n_atoms, atom, cell, status, w, singletons=True, n_contributors=lk.n_contributors
    )
    x = _joint_dense(lk)
    prim = np.flatnonzero(status == CellStatus.PRIMARY)
    supp = fresh | (status == CellStatus.PRIMARY)
    assert not len(unsafe)
    assert not _computable(x, supp, prim).any()
    if not len(details["singleton_unsafe"]):
        assert _singleton_reveals(lk, x, supp) == []
    assert details["respondents"] == len(
        {int(np.flatnonzero(x[:, s])[0]) for s in np.flatnonzero(
            (lk.n_contributors == 1) & (x.sum(axis=0) == 1) & (status != CellStatus.EMPTY)
        )}
    )  # fmt: skip


def test_joint_singleton_rule_needs_the_other_table() -> None:
    """region x sex and region x age: a respondent alone in (r2, m) -- and so alone in
    (r2, m, a2) -- reads the other table's published cells.  Without the singleton rules the
    joint pattern lets him compute another primary; with them (the Gauss method's default)
    it does not, and protect() passes the joint audit with it."""
    from sdckit.tables import GaussSuppression
    from sdckit.tables.suppression._gauss_linked import joint_elimination

    df = _records(
        {
            ("r1", "f", "a1"): 4,
            ("r1", "m", "a2"): 4,
            ("r2", "f", "a1"): 2,
            ("r2", "m", "a2"): 1,
            ("r3", "f", "a1"): 5,
            ("r3", "m", "a2"): 5,
        }
    )
    lk = LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]])
    lk = lk.apply_rules(MinFrequency(threshold=3))
    x = _joint_dense(lk)
    status = lk.status
    n_atoms, atom, cell = lk.joint_model()
    w = lk._costs("value", status)
    plain, _, _ = joint_elimination(n_atoms, atom, cell, status, w)
    rules, _, details = joint_elimination(
        n_atoms, atom, cell, status, w, singletons=True, n_contributors=lk.n_contributors
    )
    primary = status == CellStatus.PRIMARY
    assert _singleton_reveals(lk, x, plain | primary) != []
    assert _singleton_reveals(lk, x, rules | primary) == []
    assert details["secondary_singleton"] >= 1
    res = lk.protect(GaussSuppression(), joint_elimination=True)
    assert res.protected and res.linked.consistent
    assert _singleton_reveals(lk, x, res.linked.hidden) == []


def _full_product_interval(lk: LinkedTables, suppressed: np.ndarray, c: int) -> tuple:
    """Min and max of distinct cell ``c`` over every non-negative array on all the
    combinations of the variables' leaves whose sums give the published cells (scipy's
    linprog, written independently of sdckit's LP code)."""
    from itertools import product

    from scipy.optimize import linprog

    leaves, anc = [], []
    for d in lk.variables:
        k = next(i for i, t in enumerate(lk.tables) if d in t.dimensions)
        h = lk.tables[k].hierarchies[lk.tables[k].dimensions.index(d)]
        leaves.append(h.leaves.tolist())
        nodes, ups = h.ancestor_pairs
        anc.append({int(n): {int(a) for a, m in zip(ups, nodes, strict=True) if m == n}
                    for n in h.leaves})  # fmt: skip
    combos = list(product(*leaves))
    a = np.zeros((lk.n_distinct, len(combos)))
    for t, ids in zip(lk.tables, lk.cell_map, strict=True):
        pos = [lk.variables.index(d) for d in t.dimensions]
        for cell in range(t.n_cells):
            nodes = t.node_index[cell]
            for j, combo in enumerate(combos):
                if all(int(nodes[i]) in anc[p][combo[p]] for i, p in enumerate(pos)):
                    a[ids[cell], j] = 1.0
    known = ~suppressed
    out = []
    for sign in (1.0, -1.0):
        res = linprog(
            sign * a[c], A_eq=a[known], b_eq=lk.values[known], bounds=(0, None), method="highs"
        )
        assert res.status == 0
        out.append(sign * res.fun)
    return out[0], out[1]


def test_the_atom_audit_sees_the_cycle_the_tables_miss() -> None:
    """sex x age, age x region, region x sex (the variables overlap in a cycle), only the
    one-way margins published.  The records have four combinations, so each inner cell of
    each table is one atom, and the six margins fix the four atoms (x1 + x2 = 7, x1 + x3 = 8,
    x2 + x3 = 9, ...): an intruder who knows which combinations are empty computes the
    primary (f, y) = 3.  The tables' own relations leave it free, and so does the array over
    every combination (an independent LP: 0 to 8): the atom audit is the strictest of the
    three intruders."""
    df = _records({("a", "f", "y"): 3, ("a", "m", "o"): 4, ("b", "f", "o"): 5, ("b", "m", "y"): 6})
    lk = LinkedTables.from_microdata(df, [["sex", "age"], ["age", "region"], ["region", "sex"]])
    # the four inner cells of each table suppressed, (f, y) primary
    tables = []
    for t in lk.tables:
        inner = np.flatnonzero(~t.is_total)
        status = t.status.copy()
        status[inner] = CellStatus.SECONDARY
        tables.append(t.with_status(status=status))
    first = tables[0]
    status = first.status.copy()
    status[first.cell(sex="f", age="y")] = CellStatus.PRIMARY
    tables[0] = first.with_status(status=status, upper=np.full(first.n_cells, 1.0))
    lk = lk.with_tables(tables).synced()
    gid = int(lk.cell_map[0][lk.tables[0].cell(sex="f", age="y")])
    by_tables = lk.audit()
    by_atoms = lk.audit(model="atoms")
    k = int(np.flatnonzero(by_tables.cells == gid)[0])
    assert by_tables.maximum[k] - by_tables.minimum[k] > 1 and by_tables.ok
    assert by_atoms.exact[k] and not by_atoms.ok
    lo, hi = _full_product_interval(lk, lk.hidden, gid)
    assert (lo, hi) == pytest.approx((0.0, 8.0))
    assert lo <= by_atoms.minimum[k] <= by_atoms.maximum[k] <= hi
    # the rank test over the atoms finds it without an LP; a copy of a primary published in
    # another table is computable too
    assert lk.computable_primaries().tolist() == [gid]
    assert lk.audit(model="atoms", intervals="check").exact[k]
    published = lk.with_tables([lk.tables[0], *[t.with_status(
        status=np.where(t.status == CellStatus.SECONDARY, CellStatus.SAFE, t.status)
    ) for t in lk.tables[1:]]])  # fmt: skip
    assert gid in published.computable_primaries().tolist()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_linked_records())
def test_atom_intervals_lie_in_the_tables_ones_and_in_the_full_arrays(
    case: tuple[pl.DataFrame, dict[str, Any], list[list[str]]],
) -> None:
    """On random linked tables protected by the joint elimination: each suppressed cell's
    interval in the atom model lies inside its interval from the tables' relations and
    inside the one over every combination (independent LP); the exact primaries of the atom
    model are the ones the rank test finds computable (none after the joint elimination),
    and the check mode gives the exact mode's verdicts."""
    from sdckit.tables import GaussSuppression

    df, hier, dims = case
    lk = LinkedTables.from_microdata(df, dims, hierarchies=hier)
    lk = lk.apply_rules(MinFrequency(threshold=3))
    res = lk.protect(GaussSuppression(), joint_elimination=True)
    out = res.linked
    tables = out.audit()
    atoms = out.audit(model="atoms")
    np.testing.assert_array_equal(tables.cells, atoms.cells)
    tol = 1e-6 * (1 + np.abs(out.values[atoms.cells]))
    assert np.all(atoms.minimum >= tables.minimum - tol)
    assert np.all(atoms.maximum <= tables.maximum + tol)
    prim = out.status[atoms.cells] == CellStatus.PRIMARY
    assert not np.any(atoms.exact & prim)
    assert atoms.ok == out.audit(model="atoms", intervals="check").ok
    # the check mode's first model (only the atoms under a suppressed cell free), used from
    # 5,000 unknowns, forced on here: the same verdicts as the exact intervals
    from sdckit.tables import _lp

    iterative = lk.protect(GaussSuppression()).linked  # may fail the atom audit
    for pattern, exact in ((out, atoms), (iterative, iterative.audit(model="atoms"))):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_lp, "LOCAL_PROOFS_FROM", 0)
            local = pattern.audit(model="atoms", intervals="check")
        np.testing.assert_array_equal(local.protected, exact.protected)
    for k in np.flatnonzero(prim)[:2]:
        lo, hi = _full_product_interval(out, out.hidden, int(atoms.cells[k]))
        assert lo - 1e-6 <= atoms.minimum[k] and atoms.maximum[k] <= hi + 1e-6


def test_the_atom_audit_needs_the_records(linked: LinkedTables) -> None:
    with pytest.raises(SdcError, match="records"):
        LinkedTables(linked.tables).audit(model="atoms")
    with pytest.raises(SdcError, match="records"):
        LinkedTables(linked.tables).computable_primaries()
    with pytest.raises(SdcError, match="model"):
        linked.audit(model="cube")


def test_the_rank_test_over_the_atoms_takes_the_zeros_as_known() -> None:
    """Column y holds only records of value 0: its published total 0 pins both zero atoms
    (values are at least 0), and then the primary (a, x) follows from its row."""
    from sdckit.tables.audit._atoms import exact_in_atoms

    df = pl.DataFrame(
        {
            "r": ["a", "a", "a", "b", "b", "b"],
            "c": ["x", "x", "y", "x", "x", "y"],
            "g": ["p", "q", "p", "q", "p", "q"],
            "v": [3.0, 2.0, 0.0, 1.0, 3.0, 0.0],
        }
    )
    lk = LinkedTables.from_microdata(df, [["r", "c"], ["r", "g"]], value="v")
    t = lk.tables[0]
    ax, ay, bx, by = (t.cell(r=r, c=c) for r, c in (("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")))
    t = t.suppress([ax], status=CellStatus.PRIMARY).suppress([ay, bx, by])
    lk = lk.with_tables([t, lk.tables[1]])
    gid = int(lk.cell_map[0][ax])
    # the relations alone leave the cycle of four free
    hidden = np.flatnonzero(lk.hidden)
    assert not exact_in_atoms(lk, hidden, lk.values[hidden] == 5.0).any()
    # the LP over the atoms pins it, and so does the rank test with the zeros known
    by_atoms = lk.audit(model="atoms")
    k = int(np.flatnonzero(by_atoms.cells == gid)[0])
    assert by_atoms.exact[k] and by_atoms.minimum[k] == by_atoms.maximum[k] == 5.0
    assert lk.computable_primaries().tolist() == [gid]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_linked_records(), st.data())
def test_what_the_rank_test_over_the_atoms_passes_the_atom_audit_does_not_find_exact(
    case: tuple[pl.DataFrame, dict[str, Any], list[list[str]]], data: st.DataObject
) -> None:
    """Records with values of 0 (where the bounds can pin), random patterns: every primary
    the LP over the atoms finds exact, the rank test finds computable."""
    df, hier, dims = case
    values = data.draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 4.0, 9.0]), min_size=df.height,
                                max_size=df.height))  # fmt: skip
    df = df.with_columns(v=pl.Series(values))
    lk = LinkedTables.from_microdata(df, dims, hierarchies=hier, value="v")
    lk = lk.apply_rules(MinFrequency(threshold=3, safety_range=0, minimum_level=0))
    tables = []
    for t in lk.tables:
        safe = np.flatnonzero(t.status == CellStatus.SAFE).tolist()
        more = data.draw(st.lists(st.sampled_from(safe), unique=True)) if safe else []
        tables.append(t.suppress(np.array(more, dtype=np.int64)) if more else t)
    lk = lk.with_tables(tables).synced()
    found = set(lk.computable_primaries().tolist())
    by_atoms = lk.audit(model="atoms")
    primary = lk.status[by_atoms.cells] == CellStatus.PRIMARY
    assert set(by_atoms.cells[primary & by_atoms.exact].tolist()) <= found


def test_protect_passes_progress_to_the_methods_that_take_it(linked: LinkedTables) -> None:
    """Progress is a call argument: GaussSuppression reports its model and elimination for
    each table it protects; the pattern is the one found without a callback."""
    from sdckit.tables import GaussSuppression

    lk = linked.apply_rules(MinFrequency(threshold=3))
    seen: list[tuple[str, int, int]] = []
    res = lk.protect(GaussSuppression(), progress=lambda *a: seen.append(a))
    assert {"model", "elimination"} <= {stage for stage, _, _ in seen}
    assert all(0 <= done <= total for _, done, total in seen)
    quiet = lk.protect(GaussSuppression())
    for a, b in zip(res.linked.tables, quiet.linked.tables, strict=True):
        np.testing.assert_array_equal(a.status, b.status)
    # a method whose apply takes no progress is applied as it is
    assert lk.protect(HypercubeSuppression(), progress=lambda *a: seen.append(a)).protected
