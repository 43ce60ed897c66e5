"""Secondary suppression by Gaussian elimination: exactness, singleton rules, golden values.

The checks of exact recomputability are independent of the method: a primary is exactly
recomputable iff its column of the model matrix lies in the span of the published cells'
columns (a rank test with numpy), equivalently iff the LP minimum equals the LP maximum
(:func:`sdckit.tables.audit`; with every suppressed value positive, the bounds never pin a
cell).  A respondent who is the single contributor of some inner cells knows their values:
the rank test then adds those cells' columns.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit import SdcError
from sdckit.errors import InfeasibleError, SdcWarning
from sdckit.protection import clone, get_method
from sdckit.tables import (
    Dominance,
    GaussSuppression,
    Hierarchy,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    ZeroCells,
    apply_rules,
    audit,
    singleton_violations,
    suppress_gauss,
)
from sdckit.tables.examples import a4_table, e2_table, with_margins
from sdckit.tables.table import CellStatus


# --------------------------------------------------------------------------- independent checks
def model_matrix(t: Table) -> tuple[np.ndarray, np.ndarray]:
    """Dense model matrix (non-empty inner cells x cells) and the inner cell numbers."""
    inner = np.flatnonzero(~t.is_total & (t.status != CellStatus.EMPTY))
    x = np.zeros((len(inner), t.n_cells))
    ancestors = []
    for h in t.hierarchies:
        per_node = []
        for i in range(h.size):
            chain, k = [], i
            while k >= 0:
                chain.append(k)
                k = int(h.parent[k])
            per_node.append(chain)
        ancestors.append(per_node)
    nodes = np.stack(np.unravel_index(inner, t.shape), axis=1)
    for r, leaf in enumerate(nodes):
        for combo in itertools.product(*[ancestors[d][leaf[d]] for d in range(len(leaf))]):
            x[r, np.ravel_multi_index(combo, t.shape)] = 1.0
    return x, inner


def _basis(a: np.ndarray) -> np.ndarray:
    if a.shape[1] == 0:
        return np.zeros((a.shape[0], 0))
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, : int(np.sum(s > 1e-9 * max(1.0, s[0])))]


def _in_span(q: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(b - q @ (q.T @ b)).max(axis=0) < 1e-7


def computable_primaries(t: Table) -> list[int]:
    """Primaries whose model-matrix column lies in the span of the published columns."""
    x, _ = model_matrix(t)
    prim = np.flatnonzero(t.primary)
    if not len(prim):
        return []
    return prim[_in_span(_basis(x[:, ~t.suppressed]), x[:, prim])].tolist()


def singleton_reveals(
    t: Table, groups: np.ndarray | None = None, x: np.ndarray | None = None
) -> list[tuple[int, int]]:
    """(respondent, primary): the primary is computable from the published cells and that
    respondent's single-contributor inner cells, and is not made of those cells alone.

    The span of the published and the known columns is the span of the published columns plus
    that of the known columns' residuals off it, so each respondent costs one small SVD.
    """
    if x is None:
        x, _ = model_matrix(t)
    inner = np.flatnonzero(~t.is_total & (t.status != CellStatus.EMPTY))
    prim = np.flatnonzero(t.primary)
    q0 = _basis(x[:, ~t.suppressed])
    rest = x[:, prim] - q0 @ (q0.T @ x[:, prim])
    plain = np.abs(rest).max(axis=0, initial=0.0) < 1e-7
    singles = [int(c) for c in inner if t.n_contributors[c] == 1]
    group = {c: (c if groups is None else int(groups[c])) for c in singles}
    out = []
    for g in sorted({group[c] for c in singles if t.suppressed[c]}):
        own_rows = x[:, [c for c in singles if group[c] == g]].any(axis=1)
        known = x[:, [c for c in singles if group[c] == g and t.suppressed[c]]]
        q1 = _basis(known - q0 @ (q0.T @ known))
        reached = np.abs(rest - q1 @ (q1.T @ rest)).max(axis=0, initial=0.0) < 1e-7
        for i in np.flatnonzero(reached & ~plain):
            b = int(prim[i])
            if np.any(x[:, b].astype(bool) & ~own_rows):
                out.append((g, b))
    return out


def combination_reveals(t: Table, groups: np.ndarray, x: np.ndarray | None = None) -> list:
    """Rule R2, independently: (respondent, attacker) pairs where some non-zero combination of
    the respondent's primary single-contributor inner cells is computable from the published
    cells (attacker ``None``) or from them and another respondent's unpublished
    single-contributor cells.

    A combination of the columns ``G`` is computable from the columns ``P`` exactly when
    ``span(G)`` meets ``span(P)`` outside 0, i.e. when ``G``'s residuals off ``span(P)`` have a
    smaller rank than ``G`` (the columns of distinct inner cells are independent).
    """
    if x is None:
        x, _ = model_matrix(t)
    inner = ~t.is_total & (t.status != CellStatus.EMPTY)
    single = np.flatnonzero(inner & (t.n_contributors == 1))
    q0 = _basis(x[:, ~t.suppressed])
    out: list = []
    for g in sorted({int(groups[c]) for c in single}):
        mine = [c for c in single if groups[c] == g and t.primary[c]]
        if len(mine) < 2:
            continue  # one cell: rules R0 and R1
        own = x[:, mine]
        if _basis(own - q0 @ (q0.T @ own)).shape[1] < len(mine):
            out.append((g, None))
        for h in sorted({int(groups[c]) for c in single} - {g}):
            known = x[:, [c for c in single if groups[c] == h and t.suppressed[c]]]
            q1 = np.hstack([q0, _basis(known - q0 @ (q0.T @ known))])
            if _basis(own - q1 @ (q1.T @ own)).shape[1] < len(mine):
                out.append((g, h))
    return out


def disclosing_singleton_violations(t: Table, x: np.ndarray | None = None) -> list[int]:
    """:func:`singleton_violations` without the relations whose two suppressed primaries are
    the same quantity (the same non-empty inner cells, e.g. a total over one inner cell):
    knowing one of them tells nothing about anyone else."""
    if x is None:
        x, _ = model_matrix(t)
    m = t.constraint_matrix.tocsr()
    out = []
    for row in singleton_violations(t):
        a, b = (int(c) for c in m[row].indices if t.suppressed[c])
        if not np.array_equal(x[:, a], x[:, b]):
            out.append(int(row))
    return out


# --------------------------------------------------------------------------- random tables
@st.composite
def hierarchical_tables(
    draw: st.DrawFn, dims: tuple[int, ...] = (2, 3), zero_values: bool = False
) -> Table:
    """2-D or 3-D tables, flat or two-level dimensions, empty cells, some single contributors
    (with ``zero_values``, non-empty cells of value 0 too)."""
    n_dims = draw(st.sampled_from(dims))
    hier = {}
    for d in range(n_dims):
        if draw(st.booleans()):
            groups = draw(st.integers(2, 3))
            tree = {"T": [f"g{d}{g}" for g in range(groups)]}
            for g in range(groups):
                tree[f"g{d}{g}"] = [f"g{d}{g}c{c}" for c in range(draw(st.integers(1, 3)))]
            hier[f"v{d}"] = Hierarchy.from_dict(tree)
        else:
            hier[f"v{d}"] = Hierarchy.flat([f"c{d}{c}" for c in range(draw(st.integers(2, 4)))])
    shape = tuple(h.size for h in hier.values())
    values = np.zeros(shape)
    counts = np.zeros(shape, dtype=np.int64)
    leaves = [h.leaves.tolist() for h in hier.values()]
    for combo in itertools.product(*leaves):
        kind = draw(st.sampled_from(["empty", "single", "many", "many"]))
        if kind != "empty":
            if zero_values:  # half of them 0
                values[combo] = draw(st.one_of(st.just(0), st.integers(1, 40)))
            else:
                values[combo] = draw(st.integers(1, 40))
            counts[combo] = 1 if kind == "single" else draw(st.integers(2, 5))
    if not counts.any():
        first = tuple(ls[0] for ls in leaves)
        values[first], counts[first] = 7, 2
    for d, h in enumerate(hier.values()):
        for p in sorted(h.internal.tolist(), key=lambda p: -h.depth[p]):
            for arr in (values, counts):
                moved = np.moveaxis(arr, d, 0)
                moved[p] = sum(moved[c] for c in h.children[p])
    t = Table.from_array(values, hier, n_contributors=counts, kind="magnitude")
    nonempty = np.flatnonzero(t.status != CellStatus.EMPTY).tolist()
    prim = draw(st.lists(st.sampled_from(nonempty), min_size=1, max_size=4, unique=True))
    return apply_rules(t, MarkedCells(cells=prim, upper=1))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(hierarchical_tables())
def test_no_primary_is_computable_rank_and_lp(table: Table) -> None:
    res = GaussSuppression(repair_limit=0).apply(table)
    t = res.table
    assert computable_primaries(t) == []
    lp = audit(t, primaries_only=True, insider=False)
    prim = t.status[lp.cells] == CellStatus.PRIMARY
    assert not np.any(lp.exact[prim])  # LP min < LP max for every primary
    assert (res.table.primary == table.primary).all()


@SETTINGS
@given(hierarchical_tables())
def test_no_respondent_computes_another_primary(table: Table) -> None:
    t = GaussSuppression(repair_limit=0).apply(table).table
    x, _ = model_matrix(t)
    assert singleton_reveals(t, x=x) == []
    assert disclosing_singleton_violations(t, x) == []


@SETTINGS
@given(hierarchical_tables(), st.data())
def test_respondents_with_several_cells(table: Table, data: st.DataObject) -> None:
    ids = np.array(data.draw(st.lists(st.integers(0, 2), min_size=table.n_cells,
                                      max_size=table.n_cells)))  # fmt: skip
    t = GaussSuppression(repair_limit=0, contributors=ids).apply(table).table
    assert computable_primaries(t) == []
    assert singleton_reveals(t, ids) == []
    assert combination_reveals(t, ids) == []


def test_a_respondents_combined_cells_are_checked() -> None:
    """Rule R2: respondent 0 is the single contributor of the primaries c00 x c10 and
    c00 x c11 and of c01 x c10, c01 x c11.  Without the singleton rules the elimination
    publishes the row total of c00 (the sum of his two primaries: a combination of his
    primary cells computable from the published cells), with them it does not; the
    independent rank check sees the difference."""
    values = np.array([[30, 9, 8, 13], [9, 5, 4, 0], [21, 4, 4, 13]])
    counts = np.array([[9, 2, 2, 5], [2, 1, 1, 0], [7, 1, 1, 5]])
    hier = {"v0": Hierarchy.flat(["c00", "c01"]), "v1": Hierarchy.flat(["c10", "c11", "c12"])}
    t = Table.from_array(values, hier, n_contributors=counts, kind="magnitude")
    prim = [t.cell(v0="c00", v1="c10"), t.cell(v0="c00", v1="c11")]
    t = apply_rules(t, MarkedCells(cells=prim, upper=1))
    ids = np.zeros(t.n_cells, dtype=int)
    ids[t.cell(v0="c01", v1="c12")] = 1
    off = GaussSuppression(repair_limit=0, singletons=False).apply(t).table
    assert (0, None) in combination_reveals(off, ids)
    on = GaussSuppression(repair_limit=0, contributors=ids).apply(t).table
    assert combination_reveals(on, ids) == []
    assert computable_primaries(on) == [] and singleton_reveals(on, ids) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables())
def test_exact_and_floating_point_agree(table: Table) -> None:
    a = GaussSuppression(repair_limit=0).apply(table)
    b = GaussSuppression(repair_limit=0, arithmetic="float").apply(table)
    assert a.details["arithmetic"] == "exact" and b.details["arithmetic"] == "float"
    assert np.array_equal(a.table.status, b.table.status)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables())
def test_the_audit_and_repair_meet_the_levels(table: Table) -> None:
    res = GaussSuppression().apply(table)
    assert res.protected and res.table.protected
    assert audit(res.table, insider=False).ok
    assert computable_primaries(res.table) == []


def test_without_singleton_rules_a_respondent_can_compute_a_primary() -> None:
    """The rules matter: the same tables give reveals when they are switched off."""
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(30):
        shape = (4, 4)
        inner = rng.integers(1, 30, size=(3, 3))
        counts = np.where(rng.random((3, 3)) < 0.5, 1, 3)
        t = Table.from_array(
            with_margins(inner), {"r": list("abc"), "c": list("xyz")},
            n_contributors=with_margins(counts).astype(int),
        )  # fmt: skip
        cells = rng.choice(np.flatnonzero(~t.is_total), size=2, replace=False)
        t = apply_rules(t, MarkedCells(cells=cells, upper=1))
        off = GaussSuppression(singletons=False, repair_limit=0).apply(t).table
        on = GaussSuppression(repair_limit=0).apply(t).table
        assert t.shape == shape
        assert singleton_reveals(on) == []
        found += bool(singleton_reveals(off))
    assert found > 0


# --------------------------------------------------------------------------- worked cases
def test_a_single_contributor_and_another_primary_in_one_row_need_a_third_cell() -> None:
    # row a: 10 = 1 (one respondent) + 5 (primary) + 4; the respondent of the first cell
    # would compute the second from the row total if only those two were suppressed
    inner = np.array([[1, 5, 4], [6, 7, 8]])
    counts = np.array([[1, 2, 5], [4, 4, 4]])
    t = Table.from_array(with_margins(inner), {"r": ["a", "b"], "c": ["x", "y", "z"]},
                         n_contributors=with_margins(counts).astype(int))  # fmt: skip
    prim = [t.cell(r="a", c="x"), t.cell(r="a", c="y")]
    t = apply_rules(t, MarkedCells(cells=prim, upper=1))
    off = GaussSuppression(singletons=False).apply(t)
    on = GaussSuppression().apply(t)
    assert singleton_reveals(off.table) != []
    assert singleton_reveals(on.table) == []
    assert on.n_secondary > off.n_secondary
    assert on.details["secondary_singleton"] > 0


def test_a_respondent_combines_cells_whose_columns_did_not_change() -> None:
    """Respondent 0 knows c00 x c10..c12 and c01 x c11, c01 x c12 (five single cells).

    Publishing the row total of c01 would let him compute c01 x c10 and so the primary total
    of c10; the check must look at all of his cells, not only those the update changed.
    """
    values = np.array([[7, 2, 2, 3], [3, 1, 1, 1], [3, 1, 1, 1], [1, 0, 0, 1], [0, 0, 0, 0]])
    counts = np.array([[8, 3, 2, 3], [3, 1, 1, 1], [4, 2, 1, 1], [1, 0, 0, 1], [0, 0, 0, 0]])
    hier = {
        "v0": Hierarchy.flat(["c00", "c01", "c02", "c03"]),
        "v1": Hierarchy.flat(["c10", "c11", "c12"]),
    }
    t = Table.from_array(values, hier, n_contributors=counts, kind="magnitude")
    t = apply_rules(t, MarkedCells(cells=[t.cell(v0="Total", v1="c10")], upper=1))
    ids = np.zeros(t.n_cells, dtype=int)
    ids[t.cell(v0="c02", v1="c12")] = 1
    for arithmetic in ("exact", "float"):
        res = GaussSuppression(repair_limit=0, contributors=ids, arithmetic=arithmetic)
        out = res.apply(t).table
        assert computable_primaries(out) == []
        assert singleton_reveals(out, ids) == []


def test_exact_and_floating_point_agree_on_a_larger_table() -> None:
    """Enough pivots that a bad pivot choice loses floating point (or overflows integers)."""
    rng = np.random.default_rng(17)
    inner = rng.integers(1, 40, size=(6, 5, 6)).astype(float)
    inner[rng.random(inner.shape) < 0.25] = 0
    counts = np.where(inner > 0, np.where(rng.random(inner.shape) < 0.3, 1, 3), 0)
    full, n = inner, counts
    for axis in range(3):
        full = np.concatenate([full.sum(axis=axis, keepdims=True), full], axis=axis)
        n = np.concatenate([n.sum(axis=axis, keepdims=True), n], axis=axis)
    hier = {
        f"v{d}": Hierarchy.flat([f"c{d}{i}" for i in range(k)]) for d, k in enumerate((6, 5, 6))
    }
    t = Table.from_array(full, hier, n_contributors=n, kind="magnitude")
    cells = rng.choice(np.flatnonzero(~t.is_total & (t.values > 0)), size=6, replace=False)
    t = apply_rules(t, MarkedCells(cells=cells.tolist(), upper=1))
    a = GaussSuppression(repair_limit=0).apply(t)
    b = GaussSuppression(repair_limit=0, arithmetic="float").apply(t)
    assert a.details["arithmetic"] == "exact"
    assert np.array_equal(a.table.status, b.table.status)
    assert computable_primaries(a.table) == [] and singleton_reveals(a.table) == []


# --------------------------------------------------------------------------- modular arithmetic
MOD = (1 << 61) - 1


@settings(max_examples=300, deadline=None)
@given(st.integers(0, MOD - 1), st.integers(0, MOD - 1))
def test_products_modulo_the_prime_are_exact(a: int, b: int) -> None:
    from sdckit.tables.suppression import _gauss_kernel as K

    assert K.P == MOD
    for x, y in ((a, b), (MOD - 1, b), (a, MOD - 1), (0, b), (1, b)):
        assert int(K._mulmod(np.int64(x), np.int64(y))) == (x * y) % MOD
    assert int(K._residue(np.int64(-a))) == (-a) % MOD


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_the_rank_modulo_the_prime_is_the_rank(nr: int, nc: int, data: st.DataObject) -> None:
    """Small integer matrices (their minors are far below the prime): the same rank."""
    from sdckit.tables.suppression import _gauss_kernel as K

    entries = data.draw(st.lists(st.integers(-4, 4), min_size=nr * nc, max_size=nr * nc))
    a = np.array(entries, dtype=np.int64).reshape(nr, nc)
    residues = np.mod(a, MOD).astype(np.int64)
    assert K._rank_mod(residues) == np.linalg.matrix_rank(a.astype(float))


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)))
def test_exact_and_modular_arithmetic_agree(table: Table) -> None:
    a = GaussSuppression(repair_limit=0).apply(table)
    b = GaussSuppression(repair_limit=0, arithmetic="modular").apply(table)
    assert b.details["arithmetic"] == "modular" and b.details["modular_from"] == -1
    assert np.array_equal(a.table.status, b.table.status)
    assert computable_primaries(b.table) == [] and singleton_reveals(b.table) == []


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)))
def test_secondary_zeros_protect_every_primary(table: Table) -> None:
    """With empty cells as the last candidates, no primary is computable (rank test with the
    suppressed empty inner cells as unknowns, published ones as known zeros), not even by a
    respondent; only empty cells are added to the candidates."""
    res = GaussSuppression(repair_limit=0, secondary_zeros=True).apply(table)
    out = res.table
    assert computable_primaries(out) == [] and singleton_reveals(out) == []
    empty = table.status == CellStatus.EMPTY
    zeros = out.suppressed & empty & ~table.primary
    assert res.details["secondary_zeros"] == int(zeros.sum())
    assert np.all(out.status[zeros] == CellStatus.SECONDARY)
    assert np.all(out.status[~out.suppressed & empty] == CellStatus.EMPTY)


def skewed_table(records: int, seed: int = 146) -> Table:
    """A five-dimensional business table: a geography of three levels (2 regions, 2
    districts each, 3 municipalities each) and four flat variables of 4, 2, 8 and 4 codes,
    skewed (Zipf-like) counts, the minimum-frequency rule 3."""
    rng = np.random.default_rng(seed)

    def zipf(k: int, s: float) -> np.ndarray:
        p = 1.0 / np.arange(1, k + 1) ** s
        return rng.choice(k, size=records, p=rng.permutation(p) / p.sum())

    mun = zipf(12, 0.9)
    frame = pl.DataFrame(
        {
            "geo": [f"{m // 6:02d}{m // 3 % 2:02d}{m % 3:03d}" for m in mun],
            **{
                f"v{i}": [f"c{c:02d}" for c in zipf(k, s)]
                for i, (k, s) in enumerate(((4, 0.6), (2, 0.0), (8, 1.1), (4, 0.7)))
            },
            "value": np.round(rng.lognormal(3.0, 1.5, records), 1),
        }
    )
    hier = {"geo": Hierarchy.from_code_lengths(sorted(set(frame["geo"])), [2, 4])}
    for i, k in enumerate((4, 2, 8, 4)):
        hier[f"v{i}"] = Hierarchy.flat([f"c{c:02d}" for c in range(k)])
    table = Table.from_microdata(frame, hier, "value")
    return apply_rules(table, MinFrequency(threshold=3, safety_range=10.0))


Q31 = (1 << 31) - 1  # another prime than the kernel's, for the independent check


def moves_modulo_q(t: Table) -> tuple[np.ndarray, np.ndarray]:
    """The moves of ``t``'s published cells modulo the prime ``Q31``, independently of the
    kernel (a dense row reduction of the published columns in numpy): a basis of the inner
    changes that leave every published cell unchanged, and its effect on every cell
    (moves x cells).  Exact where the floating-point rank tests above are not: in five
    dimensions the moves change some inner cells thousands of times more than others."""
    x, inner = model_matrix(t)
    a = x[:, ~t.suppressed].T.astype(np.int64)  # published cells x inner cells
    pivots: list[int] = []
    row = 0
    for col in range(a.shape[1]):
        nz = np.flatnonzero(a[row:, col]) if row < a.shape[0] else []
        if not len(nz):
            continue
        p = row + int(nz[0])
        a[[row, p]] = a[[p, row]]
        a[row] = a[row] * pow(int(a[row, col]), Q31 - 2, Q31) % Q31
        f = a[:, col].copy()
        f[row] = 0
        hit = np.flatnonzero(f)
        a[hit] = (a[hit] - f[hit, None] * a[row][None, :] % Q31) % Q31
        pivots.append(col)
        row += 1
    free = sorted(set(range(a.shape[1])) - set(pivots))
    moves = np.zeros((len(free), a.shape[1]), dtype=np.int64)
    for i, c in enumerate(free):
        moves[i, c] = 1
        moves[i, pivots] = (-a[: len(pivots), c]) % Q31
    return moves @ x.astype(np.int64) % Q31, inner


def exact_reveals(t: Table) -> tuple[list[int], list[tuple[int, int]]]:
    """Primaries computable from the published cells, and (single-contributor cell,
    primary) pairs computable with that cell's respondent's knowledge (each single cell its
    own respondent; a primary made of his own cell excepted), modulo ``Q31``."""
    effect, inner = moves_modulo_q(t)
    prim = np.flatnonzero(t.primary)
    computable = [int(b) for b in prim if not effect[:, b].any()]
    x, _ = model_matrix(t)
    pairs = []
    for s in inner[(t.n_contributors[inner] == 1) & t.suppressed[inner]]:
        es = effect[:, s]
        if not es.any():
            continue
        i0 = int(np.flatnonzero(es)[0])
        prop = (effect[:, prim] * es[i0] % Q31 == es[:, None] * effect[i0, prim] % Q31).all(0)
        own = x[:, s].astype(bool)
        pairs += [
            (int(s), int(b)) for b in prim[prop] if b != s and np.any(x[:, b].astype(bool) & ~own)
        ]
    return computable, pairs


@pytest.mark.parametrize(("records", "seed", "singletons"), [(800, 2, False), (500, 146, True)])
def test_exact_elimination_goes_on_modulo_the_prime_when_integers_grow(
    records: int, seed: int, singletons: bool
) -> None:
    """In five dimensions the integer entries outgrow int64's safe range: the elimination
    takes its state modulo the prime and goes on; the pattern is the one of the modular
    arithmetic from the start (other pivots, the same decisions), and an independent exact
    check modulo another prime finds no primary computable, alone or by a respondent."""
    t = skewed_table(records, seed)
    a = GaussSuppression(repair_limit=0, singletons=singletons).apply(t)
    assert a.details["arithmetic"] == "modular" and a.details["modular_from"] > 0
    b = GaussSuppression(repair_limit=0, singletons=singletons, arithmetic="modular").apply(t)
    assert b.details["modular_from"] == -1
    assert np.array_equal(a.table.status, b.table.status)
    assert a.n_secondary > 0
    computable, pairs = exact_reveals(a.table)
    assert computable == []
    if singletons:
        assert pairs == []
    else:  # the check can fail: without the rules respondents do compute primaries
        assert len(pairs) > 0


def _colliding_weights(kind: str):
    """Fingerprint weights that make unequal columns share keys: ``equal`` (the two weight
    sets the same: every key is 1), ``small`` (weights 1 or 2: many keys shared)."""

    def weights(m: int, prime: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(3)
        w1 = rng.integers(1, 3, size=m, dtype=np.int64)
        w2 = w1.copy() if kind == "equal" else rng.integers(1, 3, size=m, dtype=np.int64)
        return w1, w2

    return weights


def _results_by_path(monkeypatch: pytest.MonkeyPatch, table: Table, arithmetic: str) -> dict:
    """The elimination's result by the row scans, by the fingerprints with their random
    weights, and by the fingerprints with the colliding weights."""
    import sdckit.tables.suppression.gauss as gauss_module

    method = GaussSuppression(repair_limit=0, arithmetic=arithmetic)
    out = {"random": method.apply(table)}
    with monkeypatch.context() as m:
        m.setattr(gauss_module, "_FINGERPRINTS", False)
        out["scans"] = method.apply(table)
    for kind in ("equal", "small"):
        with monkeypatch.context() as m:
            m.setattr(gauss_module, "_fingerprint_weights", _colliding_weights(kind))
            out[kind] = method.apply(table)
    return out


@pytest.mark.parametrize("arithmetic", ["exact", "modular"])
def test_fingerprint_collisions_fall_back_to_the_scans(
    monkeypatch: pytest.MonkeyPatch, arithmetic: str
) -> None:
    """Rule R1 by fingerprints gives the decisions of scanning the rows, also when the keys
    of unequal columns collide (weights chosen to collide): every collision is checked on
    the rows and the step falls back to the scans.  On a five-dimensional table with
    one-cell respondents; the pattern is checked exactly modulo another prime."""
    out = _results_by_path(monkeypatch, skewed_table(500, 146), arithmetic)
    ref = out["scans"]
    assert ref.details["fingerprint_pairs"] == 0 and ref.details["fingerprint_scans"] == 0
    assert ref.details["secondary_singleton"] > 0
    for kind in ("random", "equal", "small"):
        assert np.array_equal(out[kind].table.status, ref.table.status), kind
        assert out[kind].details["secondary_singleton"] == ref.details["secondary_singleton"]
    # random weights: pairs found and no collision; colliding weights: many fallbacks
    assert out["random"].details["fingerprint_pairs"] > 0
    assert out["random"].details["fingerprint_scans"] == 0
    assert out["equal"].details["fingerprint_scans"] > 10
    assert out["small"].details["fingerprint_scans"] > 10
    computable, pairs = exact_reveals(out["equal"].table)
    assert computable == [] and pairs == []


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(hierarchical_tables(dims=(2, 3, 4)))
def test_fingerprint_paths_agree_on_random_tables(
    monkeypatch: pytest.MonkeyPatch, table: Table
) -> None:
    out = _results_by_path(monkeypatch, table, "exact")
    ref = out["scans"].table
    for kind in ("random", "equal", "small"):
        assert np.array_equal(out[kind].table.status, ref.status), kind
    assert computable_primaries(ref) == [] and singleton_reveals(ref) == []


def test_the_a4_trap_is_protected() -> None:
    """sdcTable's 4 x 4 table where two suppressions in every line are not enough."""
    from sdckit.tables.examples import A4_PRIMARIES

    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    t = apply_rules(t, MarkedCells(cells=cells))
    res = GaussSuppression().apply(t)
    assert computable_primaries(res.table) == []
    assert res.protected and audit(res.table, insider=False).ok


def test_interval_protection_is_repaired_by_the_audit() -> None:
    """The elimination protects against exact disclosure; the LP audit adds the levels."""
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    top = np.zeros((t.n_cells, 2))
    top[d] = [1500, 700]  # p% primary with a protection level of 41
    t = Table.from_array(
        t.values.reshape(t.shape), dict(zip(t.dimensions, t.hierarchies, strict=True)),
        top=top, kind="magnitude",
    )  # fmt: skip
    t = apply_rules(t, PPercent(p=10))
    bare = GaussSuppression(repair_limit=0).apply(t)
    assert computable_primaries(bare.table) == []
    res = GaussSuppression().apply(t)
    assert res.protected and audit(res.table, insider=False).ok
    lo, hi = audit(res.table, insider=False).interval(d)
    assert hi >= t.values[d] + 41 - 1e-6 and lo <= t.values[d] - 41 + 1e-6


def test_large_levels_need_more_cells_than_the_elimination() -> None:
    # in cost order the elimination publishes 31, 30, 30 and 29 and then must suppress the
    # rectangle a-x, a-z, b-x, b-z, where a-x can rise by at most 15 (b-x): less than 19
    inner = np.array([[20, 30, 25], [15, 31, 27], [18, 29, 30]])
    t = Table.from_array(with_margins(inner), {"r": list("abc"), "c": list("xyz")})
    t = apply_rules(t, MarkedCells(cells=[t.cell(r="a", c="x")], upper=19, lower=19))
    bare = GaussSuppression(repair_limit=0).apply(t)
    rectangle = {t.cell(r=r, c=c) for r in "ab" for c in "xz"}
    assert set(np.flatnonzero(bare.table.suppressed).tolist()) == rectangle
    assert not audit(bare.table, insider=False).ok
    res = GaussSuppression().apply(t)
    assert res.protected and audit(res.table, insider=False).ok
    assert res.details["repaired"] > 0


def test_forced_hidden_and_protected_cells() -> None:
    inner = np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]])
    t = Table.from_array(with_margins(inner), {"r": list("abc"), "c": list("xyz")})
    prim = t.cell(r="a", c="x")
    t = apply_rules(t, MarkedCells(cells=[prim], upper=1))
    forced = t.cell(r="c", c="z")
    hidden = t.cell(r="b", c="Total")
    frozen = [t.cell(r="a", c="y"), t.cell(r="b", c="x")]
    res = GaussSuppression(forced=[forced], hidden=[hidden], protected=frozen).apply(t)
    out = res.table
    assert out.status[forced] == CellStatus.SECONDARY
    assert out.status[hidden] == CellStatus.SECONDARY  # never published
    assert all(out.status[c] == CellStatus.PROTECTED for c in frozen)
    assert res.details["hidden"] == 1
    assert computable_primaries(out) == []
    assert res.protected
    # a mask works as well as cell numbers
    mask = np.zeros(t.n_cells, dtype=bool)
    mask[forced] = True
    same = GaussSuppression(forced=mask, hidden=[hidden], protected=frozen).apply(t)
    assert np.array_equal(same.table.status, out.status)


def test_a_primary_computable_from_frozen_cells_is_infeasible() -> None:
    inner = np.array([[9, 4], [5, 2]])
    t = Table.from_array(with_margins(inner), {"r": list("ab"), "c": list("xy")})
    prim = t.cell(r="a", c="x")
    t = apply_rules(t, MarkedCells(cells=[prim], upper=1))
    frozen = [t.cell(r="a", c="y"), t.cell(r="a", c="Total")]
    with pytest.raises(InfeasibleError, match="cannot protect 1 primary"):
        GaussSuppression(protected=frozen).apply(t)


def test_parameter_errors_name_the_class() -> None:
    t = apply_rules(e2_table(), MarkedCells(cells=[7], upper=1))
    with pytest.raises(SdcError, match="GaussSuppression"):
        GaussSuppression(protected=[7]).apply(t)
    with pytest.raises(SdcError, match="GaussSuppression"):
        GaussSuppression(forced=[3], protected=[3]).apply(t)
    with pytest.raises(SdcError, match="contributors"):
        GaussSuppression(contributors=np.zeros(3)).apply(t)
    with pytest.raises(SdcError, match="'arithmetic'"):
        GaussSuppression(arithmetic="rational").apply(t)


def test_progress_is_reported() -> None:
    seen: list[tuple[str, int, int]] = []
    t = apply_rules(e2_table(), MarkedCells(cells=[7, 13], upper=1))
    GaussSuppression().apply(t, progress=lambda s, d, n: seen.append((s, d, n)))
    stages = {s for s, _, _ in seen}
    assert {"model", "elimination", "audit"} <= stages
    done = [d for s, d, n in seen if s == "elimination"]
    assert done[-1] == [n for s, _, n in seen if s == "elimination"][-1]


def test_large_tables_are_not_audited_and_say_so() -> None:
    t = apply_rules(e2_table(), MarkedCells(cells=[7, 13], upper=1))
    with pytest.warns(SdcWarning, match="repair_limit"):
        res = GaussSuppression(repair_limit=10).apply(t)
    assert res.protected is False and res.table.protected is None
    assert computable_primaries(res.table) == []


# --------------------------------------------------------------------------- the contract
def test_registered_under_its_alias_with_a_function_twin() -> None:
    cls = get_method("gauss", "table")
    assert cls is GaussSuppression and cls.kind == "suppression"
    assert get_method("gauss_suppression", "table") is cls
    method, table = cls.contract_example()
    a = method.apply(table)
    b = suppress_gauss(table, **method.get_params())
    c = clone(method).apply(table)
    for other in (b, c):
        assert np.array_equal(a.table.status, other.table.status)
        assert a.n_secondary == other.n_secondary and a.cost == other.cost
    assert a.n_secondary > 0 and a.protected


# --------------------------------------------------------------------------- golden values
def test_small_count_vignette_example() -> None:
    """GaussSuppression's vignette "Small count frequency table suppression", first example.

    ``SuppressSmallCounts(dataset_a, dimVar = c("age", "geo"), freqVar = "freq", maxN = 1)``
    on SSBtoolsData("example1"), year 2014 (the data are text in SSBtools' R code); the
    published output suppresses old:Iceland, old:Portugal, young:Iceland and young:Portugal
    (primary: the zero young:Portugal).
    """
    inner = np.array([[3, 4, 6], [2, 0, 5]])  # age old, young x geo Iceland, Portugal, Spain
    full = with_margins(inner)
    t = Table.from_array(
        full, {"age": ["old", "young"], "geo": ["Iceland", "Portugal", "Spain"]},
        n_contributors=full.astype(int), kind="count",
    )  # fmt: skip
    t = apply_rules(t, [MinFrequency(threshold=2), ZeroCells(disclosing_only=False)])
    res = GaussSuppression().apply(t)
    out = res.table
    suppressed = {
        (a, g)
        for a in out.hierarchies[0].codes
        for g in out.hierarchies[1].codes
        if out.suppressed[out.cell(age=a, geo=g)]
    }
    assert suppressed == {
        ("old", "Iceland"), ("old", "Portugal"), ("young", "Iceland"), ("young", "Portugal"),
    }  # fmt: skip
    assert res.protected


MAGNITUDE1 = [  # SSBtoolsData("magnitude1"): sector4, geo, company, value
    ("Agriculture", "Portugal", "A", 75.9), ("Agriculture", "Portugal", "B", 24.5),
    ("Agriculture", "Spain", "A", 96.6), ("Agriculture", "Spain", "B", 43.2),
    ("Entertainment", "Iceland", "B", 16.8), ("Entertainment", "Portugal", "B", 7.1),
    ("Entertainment", "Portugal", "D", 2.3), ("Entertainment", "Spain", "A", 77.4),
    ("Entertainment", "Spain", "B", 11.5), ("Entertainment", "Spain", "C", 16.4),
    ("Governmental", "Portugal", "B", 21.6), ("Governmental", "Portugal", "D", 2.0),
    ("Governmental", "Spain", "C", 6.5), ("Governmental", "Spain", "D", 2.7),
    ("Industry", "Iceland", "B", 9.6), ("Industry", "Iceland", "C", 8.8),
    ("Industry", "Iceland", "D", 1.9), ("Industry", "Portugal", "B", 25.7),
    ("Industry", "Portugal", "D", 3.4), ("Industry", "Spain", "C", 8.4),
]  # fmt: skip


def _magnitude1(rule: object) -> Table:
    frame = pl.DataFrame(MAGNITUDE1, schema=["sector4", "geo", "company", "value"], orient="row")
    return apply_rules(Table.from_microdata(frame, ["sector4", "geo"], "value"), rule)


def _is_suppressed(t: Table, sector: str, geo: str) -> bool:
    return bool(t.suppressed[t.cell(sector4=sector, geo=geo)])


def test_magnitude_vignette_singleton_statements() -> None:
    """GaussSuppression's vignette "Magnitude table suppression", the singleton section.

    Table 2 (``SuppressFewContributors``, ``maxN = 1``): "By using singletonMethod = "none"
    in Table 2, Industry:Portugal will not be suppressed".  Table 3
    (``SuppressDominantCells``, ``n = 1, k = 80``): "Governmental:Total and Industry:Total are
    suppressed due to advanced singleton handling".  Each record is its own company there.
    """
    few = _magnitude1(MinFrequency(threshold=2))
    assert _is_suppressed(GaussSuppression().apply(few).table, "Industry", "Portugal")
    off = GaussSuppression(singletons=False).apply(few).table
    assert not _is_suppressed(off, "Industry", "Portugal")
    dom = _magnitude1(Dominance(n=1, k=80))
    on = GaussSuppression().apply(dom).table
    off = GaussSuppression(singletons=False).apply(dom).table
    for cell in [("Governmental", "Total"), ("Industry", "Total")]:
        assert _is_suppressed(on, *cell) and not _is_suppressed(off, *cell)
    assert singleton_reveals(on) == [] and singleton_reveals(off) != []


def test_no_warning_on_an_ordinary_table() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GaussSuppression().apply(_magnitude1(Dominance(n=1, k=80)))


def test_the_repair_from_known_primaries_is_the_repair() -> None:
    """The repair that starts from the audited under-protected primaries (one full audit
    saved) adds the same cells, with the same verdict, as the repair that audits first."""
    from sdckit.tables.suppression._common import cell_costs, repair

    inner = np.array([[20, 30, 25], [15, 31, 27], [18, 29, 30]])
    t = Table.from_array(with_margins(inner), {"r": list("abc"), "c": list("xyz")})
    t = apply_rules(t, MarkedCells(cells=[t.cell(r="a", c="x")], upper=19, lower=19))
    bare = GaussSuppression(repair_limit=0).apply(t).table
    w = cell_costs(t, "value")
    bad = audit(bare, intervals="check", insider=False).under_protected
    assert len(bad)
    known, added_known, ok_known = repair(bare, w, max_rounds=5, method="gauss", bad=bad)
    full, added_full, ok_full = repair(bare, w, max_rounds=5, method="gauss")
    assert ok_known and ok_full and added_known == added_full > 0
    assert np.array_equal(known.suppressed, full.suppressed)
    assert audit(known, insider=False).ok


@SETTINGS
@given(hierarchical_tables(), st.integers(2, 12))
def test_large_tables_complete_the_levels_sub_table_by_sub_table(table: Table, level: int) -> None:
    """Above LOCAL_PROTECTION_FROM cells the elimination's pattern is completed by the
    sub-table protection: every cell it suppressed stays suppressed, the levels hold."""
    from sdckit.tables.suppression import _common

    with_levels = apply_rules(
        table, MarkedCells(cells=np.flatnonzero(table.primary).tolist(), upper=level, lower=level)
    )
    bare = GaussSuppression(repair_limit=0).apply(with_levels).table
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_common, "LOCAL_PROTECTION_FROM", 0)
        try:
            res = GaussSuppression().apply(with_levels)
        except InfeasibleError:
            return  # some primary has no protecting pattern at all (the error says which)
    assert not np.any(bare.suppressed & ~res.table.suppressed)
    assert res.protected and audit(res.table, insider=False).ok
    assert computable_primaries(res.table) == []


@SETTINGS
@given(hierarchical_tables(), st.integers(2, 12))
def test_very_large_tables_complete_without_auditing_the_elimination_first(
    table: Table, level: int
) -> None:
    """Above _AUDIT_FIRST_UP_TO cells the elimination's pattern goes to the completion at
    once: the method does not audit it first (the repair after the completion audits the
    result); every cell the elimination suppressed stays suppressed, the levels hold."""
    from sdckit.tables.suppression import gauss as gauss_module

    with_levels = apply_rules(
        table, MarkedCells(cells=np.flatnonzero(table.primary).tolist(), upper=level, lower=level)
    )
    bare = GaussSuppression(repair_limit=0).apply(with_levels).table
    audited: list[int] = []
    real = gauss_module.lp_audit

    def counting(t: Table, **kwargs: object) -> object:
        audited.append(int(t.suppressed.sum()))
        return real(t, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gauss_module, "lp_audit", counting)
        mp.setattr(gauss_module, "_AUDIT_FIRST_UP_TO", 0)
        try:
            res = GaussSuppression().apply(with_levels)
        except InfeasibleError:
            return  # some primary has no protecting pattern at all (the error says which)
    assert audited == []  # the elimination's pattern was not audited by the method itself
    assert not np.any(bare.suppressed & ~res.table.suppressed)
    assert res.protected and audit(res.table, insider=False).ok
    assert computable_primaries(res.table) == []


# --------------------------------------------------------------------------- the time limit
def _stopped_run(
    table: Table, stop: int, cut: int | None = None, budget: int | None = None, **params: object
) -> object:
    """``GaussSuppression(repair_limit=0)`` as after its time limit: budget mode from
    position ``stop`` of its order, every candidate left unchecked from ``cut``."""
    import sdckit.tables.suppression.gauss as gauss_module

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        mp.setattr(gauss_module, "_STOP_AT", stop)
        mp.setattr(gauss_module, "_CUT_AT", cut)
        if budget is not None:
            mp.setattr(gauss_module, "_BUDGET", budget)
        return GaussSuppression(repair_limit=0, **params).apply(table)


@SETTINGS
@given(
    hierarchical_tables(dims=(2, 3, 4)),
    st.floats(0.0, 1.0),
    st.one_of(st.none(), st.floats(0.0, 1.0)),
    st.sampled_from([1, 8, 64, 1 << 15]),
    st.booleans(),
)
def test_a_stopped_elimination_keeps_every_rule(
    table: Table, stop: float, cut: float | None, budget: int, singletons: bool
) -> None:
    """Stopped anywhere, with any budget: no primary is computable, also by a respondent
    from his own cells, and every suppression is accounted for.  Cut at the stop (no budget
    mode), the pattern suppresses every cell a full run suppresses (the decided positions
    are the full run's, and a candidate computable then is computable later)."""
    full = GaussSuppression(repair_limit=0, singletons=singletons).apply(table)
    n = full.details["candidates"]
    at = int(stop * n)
    cut_at = None if cut is None else at + int(cut * (n - at))
    res = _stopped_run(table, at, cut_at, budget, singletons=singletons)
    t = res.table
    assert computable_primaries(t) == []
    if singletons:
        x, _ = model_matrix(t)
        assert singleton_reveals(t, x=x) == []
    d = res.details
    assert 0 <= d["undecided"] <= n - d["budget_from"]
    parts = d["secondary_reveal"] + d["secondary_singleton"] + d["undecided"]
    assert res.n_secondary == parts
    if d["stopped"] is None:
        assert d["budget_from"] == n and d["undecided"] == 0
        assert np.array_equal(t.suppressed, full.table.suppressed)
    if cut_at == at:
        assert np.all(t.suppressed >= full.table.suppressed)


def _two_by_two() -> Table:
    """A 2 x 2 table with margins, primary (a, x); cells 3 and 6 are the row totals."""
    t = Table.from_array(
        np.array([[19, 7, 12], [6, 1, 5], [13, 6, 7]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    return apply_rules(t, MarkedCells(cells=[4], upper=1))


def test_a_cut_before_any_candidate_publishes_only_what_is_computable() -> None:
    """Cut at once, every candidate is left unchecked: published exactly when the cells
    published first already determine it.  Here the frozen row totals give the grand total
    (published); every other candidate is suppressed."""
    t = _two_by_two()
    res = _stopped_run(t, 0, 0, protected=[3, 6])
    d = res.details
    assert d["stopped"] == "elimination_time_limit"
    assert d["budget_from"] == 0 and d["candidates"] == 6
    assert d["undecided"] == 5
    assert np.flatnonzero(~res.table.suppressed).tolist() == [0, 3, 6]
    assert computable_primaries(res.table) == []
    full = GaussSuppression(repair_limit=0, protected=[3, 6]).apply(t)
    assert np.all(res.table.suppressed >= full.table.suppressed)
    assert full.n_secondary < res.n_secondary


def test_the_budget_mode_decides_the_cheap_candidates() -> None:
    """After the stop a candidate is still decided exactly when its update is cheap: with
    the default budget the small table's pattern is the full run's; with a budget of one
    entry every candidate with an update is suppressed unchecked, except (1, y), whose
    column is the primary's (rule R0 is checked first: a reveal is a reveal)."""
    t = _two_by_two()
    full = GaussSuppression(repair_limit=0, protected=[3, 6]).apply(t)
    cheap = _stopped_run(t, 0, protected=[3, 6])
    assert cheap.details["stopped"] == "elimination_time_limit"
    assert cheap.details["undecided"] == 0
    assert np.array_equal(cheap.table.suppressed, full.table.suppressed)
    tight = _stopped_run(t, 0, budget=1, protected=[3, 6])
    assert tight.details["undecided"] == 4 and tight.details["secondary_reveal"] == 1
    assert np.flatnonzero(~tight.table.suppressed).tolist() == [0, 3, 6]


def test_the_time_limit_stops_the_elimination_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock past the deadline at the first check: the run stops, warns, and the audit
    and repair after it still protect every primary."""
    import sdckit.tables.suppression.gauss as gauss_module

    ticks = itertools.count(0.0, 100.0)
    monkeypatch.setattr(gauss_module, "_CLOCK", lambda: next(ticks))
    t = skewed_table(300)
    with pytest.warns(SdcWarning, match="elimination_time_limit"):
        res = GaussSuppression(singletons=False, elimination_time_limit=1.0).apply(t)
    d = res.details
    assert d["stopped"] == "elimination_time_limit"
    assert res.time_limited == "elimination_time_limit"  # the result says the clock cut it
    assert ("cut short by (wall clock)", "elimination_time_limit") in res.summary().rows
    assert d["budget_from"] < d["candidates"] and d["undecided"] > 0
    assert res.protected is True
    assert not len(audit(res.table, intervals="check", insider=False).under_protected)


def test_an_ample_time_limit_changes_nothing() -> None:
    t = skewed_table(300)
    plain = GaussSuppression(singletons=False, repair_limit=0).apply(t)
    timed = GaussSuppression(singletons=False, repair_limit=0, elimination_time_limit=600.0)
    res = timed.apply(t)
    assert res.details["stopped"] is None and res.details["undecided"] == 0
    assert res.time_limited is None
    assert res.details["budget_from"] == res.details["candidates"]
    assert np.array_equal(res.table.suppressed, plain.table.suppressed)
    with pytest.raises(SdcError, match="elimination_time_limit"):
        GaussSuppression(elimination_time_limit=0).apply(t)
