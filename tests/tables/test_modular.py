"""The modular method: exact protection per sub-table, robust LP status handling."""

from __future__ import annotations

import itertools

import highspy
import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sdckit.tables.suppression.modular as modular
from sdckit.tables import (
    Hierarchy,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    _lp,
    apply_rules,
    audit,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.audit import _rectangles
from sdckit.tables.examples import with_margins
from sdckit.tables.suppression import _solver
from sdckit.tables.suppression._subtables import (
    local_relations,
    rectangle_moves,
    shared_upward,
    subtables,
    waves,
)

ISSUE_TABLE = np.array([[44, 21, 23], [33, 11, 22], [11, 10, 1]])


def _issue_table() -> Table:
    """The 3 x 3 table of issue 13 with its margins (4 x 4 cells, totals first)."""
    return Table.from_array(with_margins(ISSUE_TABLE), {"r": ["a", "b", "c"], "c": ["x", "y", "z"]})


def test_the_issue_example_gets_the_optimum() -> None:
    # before: the joined cheapest paths (one LP per direction) gave 5 secondaries worth 78
    t = _issue_table()
    marked = apply_rules(t, MarkedCells(cells=[t.cell(r="c", c="y")], upper=5, lower=5))
    res = suppress_modular(marked)
    assert res.n_secondary == 3 and res.secondary_value == 55
    assert res.protected and audit(res.table, insider=False).ok
    assert res.details["subtable_milp"] == 1 and res.details["subtable_proven"] == 1
    old = suppress_modular(marked, exact=False)
    assert old.secondary_value > res.secondary_value


@pytest.mark.parametrize("cost", ["value", "unity"])
def test_a_flat_table_is_protected_optimally(cost: str) -> None:
    # a table without hierarchy is one sub-table: the modular pattern is the optimal one
    t = _issue_table()
    for cell in range(t.n_cells):
        marked = apply_rules(t, MarkedCells(cells=[cell], upper=5, lower=5))
        mod = suppress_modular(marked, cost=cost)
        opt = suppress_optimal(marked, cost=cost)
        assert mod.cost == pytest.approx(opt.cost), cell
        assert audit(mod.table, insider=False).ok


def test_two_primaries_of_one_subtable_are_solved_together() -> None:
    t = _issue_table()
    marked = apply_rules(
        t, MarkedCells(cells=[t.cell(r="a", c="y"), t.cell(r="c", c="z")], upper=3, lower=3)
    )
    mod = suppress_modular(marked, cost="unity")
    opt = suppress_optimal(marked, cost="unity")
    assert mod.cost == pytest.approx(opt.cost)


REGION = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2", "n3"], "S": ["s1", "s2"]})
SECTOR = Hierarchy.from_dict({"T": ["A", "B"], "A": ["a1", "a2"], "B": ["b1", "b2", "b3"]})


def _hierarchical(seed: int, n: int = 160) -> Table:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame(
        {
            "region": rng.choice(["n1", "n2", "n3", "s1", "s2"], n),
            "sector": rng.choice(["a1", "a2", "b1", "b2", "b3"], n),
            "v": np.round(rng.lognormal(3, 1.2, n)) + 1,
        }
    )
    t = Table.from_microdata(df, {"region": REGION, "sector": SECTOR}, "v")
    return apply_rules(t, [MinFrequency(threshold=3), PPercent(p=15)])


def test_shared_upward_marks_the_cells_of_higher_subtables() -> None:
    # a cell is marked exactly when a sub-table processed before (higher up) holds it too
    t = _hierarchical(1)
    subs = subtables(t)
    depth = [sum(int(h.depth[n]) for h, n in zip(t.hierarchies, t.node_index[int(c.flat[0])],
                                                 strict=True)) for c in subs]  # fmt: skip
    assert not shared_upward(t, subs[0]).any()
    for i, cells in enumerate(subs):
        higher = set()
        for j, other in enumerate(subs):
            if depth[j] < depth[i]:
                higher |= set(other.ravel().tolist())
        expected = np.isin(cells, list(higher))
        assert np.array_equal(shared_upward(t, cells), expected)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_exact_subtables_leave_little_to_repair(seed: int) -> None:
    t = _hierarchical(seed)
    exact = suppress_modular(t)
    paths = suppress_modular(t, exact=False)
    assert exact.protected and audit(exact.table, insider=False).ok
    assert paths.protected and audit(paths.table, insider=False).ok
    assert exact.details["subtables_failing"] == 0
    # the exact sub-table patterns are never worse in total here (the repair aside)
    assert exact.cost <= paths.cost * 1.05


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_solved_sub_tables_are_not_audited_twice_when_the_whole_table_is(seed: int) -> None:
    """Up to ``repair_limit`` cells a sub-table protected by its exact MILP and unchanged since
    is not audited again (the audit of the whole table follows); the result is protected and
    every sub-table still passes its own audit."""
    t = _hierarchical(seed)
    res = suppress_modular(t)
    bare = suppress_modular(t, repair_limit=0)  # the caller audits: every re-audit is run
    assert res.details["subtable_milp"] > 0
    assert res.details["subtable_audits"] < bare.details["subtable_audits"]
    assert res.protected and audit(res.table, insider=False).ok
    assert bare.details["subtables_failing"] == 0
    checked = suppress_modular(res.table, repair_limit=0)  # its sub-tables as they stand
    assert np.array_equal(checked.table.suppressed, res.table.suppressed)
    assert checked.details["subtables_failing"] == 0


# ------------------------------------------------------------------ LP status handling
class _Flaky:
    """A HiGHS model whose chosen solves report status Unknown (as after an unbounded LP)."""

    def __init__(self, h: highspy.Highs, fail: set[int]) -> None:
        self._h = h
        self._fail = fail
        self.runs = 0
        self.cleared = 0
        self._bad = False

    def run(self):
        self.runs += 1
        self._bad = self.runs in self._fail
        return self._h.run()

    def getModelStatus(self):
        if self._bad:
            return highspy.HighsModelStatus.kUnknown
        return self._h.getModelStatus()

    def clearSolver(self):
        self.cleared += 1
        self._bad = False
        return self._h.clearSolver()

    def __getattr__(self, name):
        return getattr(self._h, name)


def _model() -> highspy.Highs:
    # d0 = d1 + d2 with d0 in [-10, 5], d1 in [-4, 3], d2 in [-6, 8]
    a = sp.csr_matrix(np.array([[1.0, -1.0, -1.0]]))
    return _lp.new_highs(
        a, np.zeros(1), np.zeros(1), np.array([-10.0, -4, -6]), np.array([5.0, 3, 8])
    )


def test_an_unknown_status_is_resolved_cold() -> None:
    flaky = _Flaky(_model(), fail={1})
    flaky.changeColCost(0, 1.0)
    flaky.changeObjectiveSense(highspy.ObjSense.kMaximize)
    status = _lp.solve(flaky)
    assert status == highspy.HighsModelStatus.kOptimal
    assert flaky.cleared == 1 and flaky.runs == 2
    assert flaky.getInfo().objective_function_value == pytest.approx(5.0)


def test_the_basis_of_an_unbounded_lp_is_dropped() -> None:
    a = sp.csr_matrix(np.array([[1.0, -1.0, -1.0]]))
    h = _lp.new_highs(a, np.zeros(1), np.zeros(1), np.array([-10.0, -4, -6]), np.full(3, np.inf))
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.changeColCost(0, 1.0)
    assert _lp.solve(h) == highspy.HighsModelStatus.kUnbounded
    h.changeColCost(0, -1.0)  # the minimum of d0, warm-started after the unbounded solve
    assert _lp.solve(h) == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(10.0)


def test_intervals_and_patterns_survive_unknown_statuses(monkeypatch) -> None:
    # before: "HiGHS stopped with status Unknown" (a warm-started interval LP after an
    # unbounded one) aborted the modular method; every third solve now fails once
    t = _hierarchical(3)
    clean = suppress_modular(t)
    real = _lp.new_highs

    def flaky_highs(*args, **kwargs):
        return _Flaky(real(*args, **kwargs), fail=set(range(1, 10_000, 3)))

    for module in ("sdckit.tables._lp", "sdckit.tables.suppression._common",
                   "sdckit.tables.suppression._solver"):  # fmt: skip
        monkeypatch.setattr(f"{module}.new_highs", flaky_highs)
    shaky = suppress_modular(t)
    assert shaky.protected and audit(shaky.table, insider=False).ok
    assert shaky.cost == pytest.approx(clean.cost)
    m = t.constraint_matrix
    cells = np.flatnonzero(t.suppressed)
    a = t.values[cells]
    zeros = np.zeros(m.shape[0])
    lo, hi = _lp.feasibility_intervals(m[:, cells], zeros, zeros, -a, np.full(len(a), np.inf))
    monkeypatch.undo()
    lo2, hi2 = _lp.feasibility_intervals(m[:, cells], zeros, zeros, -a, np.full(len(a), np.inf))
    assert np.allclose(lo, lo2) and np.array_equal(hi, hi2)


def test_an_lp_that_never_answers_is_an_error(monkeypatch) -> None:
    flaky = _Flaky(_model(), fail=set(range(1, 100)))
    flaky.clearSolver = lambda: None  # the failure survives the cold start and the fallbacks
    flaky.changeColCost(0, 1.0)
    status = _lp.solve(flaky)
    assert status == highspy.HighsModelStatus.kUnknown
    with pytest.raises(Exception, match="HiGHS"):
        _lp._interval_lp(flaky, 0, 3, highspy.ObjSense.kMaximize)


def test_every_cell_combination_of_a_small_table_is_protected() -> None:
    t = _issue_table()
    interior = np.flatnonzero(~t.is_total)
    for pair in itertools.combinations(interior.tolist(), 2):
        marked = apply_rules(t, MarkedCells(cells=list(pair), upper=4, lower=4))
        res = suppress_modular(marked)
        assert audit(res.table, insider=False).ok


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_repair_protects_on_sub_table_models_first(seed: int, monkeypatch) -> None:
    """Each target is first protected on one sub-table's model (or with its neighbours):
    the cells found there protect it in the whole table (the audit says so)."""
    from sdckit.tables.suppression import _common

    t = _hierarchical(seed, n=120)
    calls = {"small": 0, "whole": 0}
    original = _common.protect_with_lp

    def spy(table, matrix, cells, *args, **kwargs):
        calls["whole" if len(cells) == table.n_cells else "small"] += 1
        return original(table, matrix, cells, *args, **kwargs)

    monkeypatch.setattr(_common, "LOCAL_PROTECTION_FROM", 0)
    monkeypatch.setattr(_common, "protect_with_lp", spy)
    cost = _common.cell_costs(t, "value")
    repaired, added, verdict = _common.repair(t, cost, local=True)
    assert calls["small"] > 0
    assert verdict and audit(repaired, insider=False).ok
    assert added == int(repaired.secondary.sum()) > 0


# ------------------------------------------------------------------ sub-tables in threads
def test_waves_keep_every_sub_table_after_the_earlier_ones_it_shares_cells_with() -> None:
    t = _hierarchical(2)
    subs = subtables(t)
    schedule = waves(subs, t.n_cells)
    assert sorted(s for w in schedule for s in w) == list(range(len(subs)))
    wave_of = {s: i for i, w in enumerate(schedule) for s in w}
    cells = [set(c.ravel().tolist()) for c in subs]
    for i in range(len(subs)):
        for j in range(i + 1, len(subs)):
            if cells[i] & cells[j]:
                assert wave_of[i] < wave_of[j], (i, j)
    for w in schedule:  # no two sub-tables of a wave share a cell
        seen: set[int] = set()
        for s in w:
            assert not (seen & cells[s])
            seen |= cells[s]


@pytest.mark.parametrize("seed", [1, 3, 5])
@pytest.mark.parametrize("propagate", [False, True])
def test_threads_give_the_pattern_of_one_thread(seed: int, propagate: bool) -> None:
    t = _hierarchical(seed, n=80)
    one = suppress_modular(t, n_jobs=1, propagate=propagate)
    two = suppress_modular(t, n_jobs=2, propagate=propagate)
    four = suppress_modular(t, n_jobs=4, propagate=propagate, repair_limit=0)
    assert np.array_equal(one.table.suppressed, two.table.suppressed)
    assert one.details == two.details
    assert one.protected and audit(two.table, insider=False).ok
    alone = suppress_modular(t, n_jobs=1, propagate=propagate, repair_limit=0)
    assert np.array_equal(alone.table.suppressed, four.table.suppressed)
    assert alone.details == four.details


def test_the_intervals_of_independent_blocks_do_not_depend_on_threads() -> None:
    rng = np.random.default_rng(7)
    blocks = [sp.csr_matrix(rng.integers(-1, 2, (4, 6)).astype(float)) for _ in range(150)]
    m = sp.block_diag(blocks, format="csr")
    k = m.shape[1]
    lo_b, hi_b = -rng.uniform(1, 9, k), rng.uniform(1, 9, k)
    zeros = np.zeros(m.shape[0])
    serial = _lp.feasibility_intervals(m, zeros, zeros, lo_b, hi_b)
    threaded = _lp.feasibility_intervals(m, zeros, zeros, lo_b, hi_b, threads=2)
    assert np.array_equal(serial[0], threaded[0]) and np.array_equal(serial[1], threaded[1])
    # each unknown's interval is that of its own block alone
    first = _lp.feasibility_intervals(blocks[0], zeros[:4], zeros[:4], lo_b[:6], hi_b[:6])
    assert np.allclose(serial[0][:6], first[0]) and np.allclose(serial[1][:6], first[1])


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(2, 6), st.integers(2, 6)),
    seed=st.integers(0, 2**32 - 1),
    density=st.floats(0.2, 0.9),
)
def test_rectangle_moves_are_moves_of_the_sub_table(
    shape: tuple[int, int], seed: int, density: float
) -> None:
    """Every rectangle move is a feasible point of the LP model: the LP interval holds it."""
    rng = np.random.default_rng(seed)
    n = shape[0] * shape[1]
    pos = np.flatnonzero(rng.random(n) < density)
    room_lo = -rng.integers(0, 6, len(pos)).astype(float)
    room_hi = np.where(rng.random(len(pos)) < 0.3, np.inf, rng.integers(0, 6, len(pos)))
    lo, hi = rectangle_moves(shape, pos, room_lo, room_hi)
    r = local_relations(shape)
    zeros = np.zeros(r.shape[0])
    lp_lo, lp_hi = _lp.feasibility_intervals(r[:, pos], zeros, zeros, room_lo, room_hi)
    assert np.all(lo <= 0) and np.all(hi >= 0)
    assert np.all(lo >= lp_lo - 1e-7) and np.all(hi <= lp_hi + 1e-7)
    # a position with room both ways inside a full table of suppressed cells always moves
    if len(pos) == n and np.all(room_lo < 0) and np.all(room_hi > 0):
        assert np.all(hi > 0) and np.all(lo < 0)


def test_rectangle_proofs_do_not_change_a_verdict(monkeypatch) -> None:
    # the sub-table audits and the attacker LPs of the sub-table MILPs with the rectangle
    # proofs, and with LPs only, give the same pattern
    t = _hierarchical(4, n=80)
    decided: list[int] = []  # positions left to the LPs, per sub-table audit
    attacker: list[int] = []  # attacker LPs solved in the separation of the sub-table MILPs
    lp = modular.feasibility_intervals
    solve = _solver._Separator._solve

    def counting(*args, targets=None, **kwargs):
        decided.append(len(targets))
        return lp(*args, targets=targets, **kwargs)

    def counting_solve(self, *args, **kwargs):
        attacker.append(1)
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(modular, "feasibility_intervals", counting)
    monkeypatch.setattr(_solver._Separator, "_solve", counting_solve)
    with_proofs = suppress_modular(t, n_jobs=1)
    by_proofs, attacker_by_proofs = sum(decided), len(attacker)
    decided.clear()
    attacker.clear()
    monkeypatch.setattr(_rectangles, "MAX_POSITIONS", 0)
    lp_only = suppress_modular(t, n_jobs=1)
    assert by_proofs < sum(decided)  # the proofs spared LPs in the audits
    assert attacker_by_proofs < len(attacker)  # and in the separation
    assert np.array_equal(with_proofs.table.suppressed, lp_only.table.suppressed)
    assert with_proofs.protected and audit(with_proofs.table, insider=False).ok


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(2, 6), st.integers(2, 6)),
    seed=st.integers(0, 2**32 - 1),
    density=st.floats(0.2, 0.9),
)
def test_separation_by_rectangles_gives_the_lp_verdicts(
    shape: tuple[int, int], seed: int, density: float
) -> None:
    """The attacker LPs a two-way sub-table's 4-cell cycles spare change no verdict."""
    rng = np.random.default_rng(seed)
    n = shape[0] * shape[1]
    r = local_relations(shape)
    supp = rng.random(n) < density
    if not supp.any():
        supp[rng.integers(n)] = True
    cells = np.flatnonzero(supp)
    cells = cells[rng.random(len(cells)) < 0.7]
    up = rng.integers(0, 6, len(cells)).astype(float)
    low = rng.integers(0, 6, len(cells)).astype(float)
    sl = np.where(rng.random(len(cells)) < 0.3, rng.integers(0, 9, len(cells)), 0.0)
    ub = np.where(rng.random(n) < 0.3, np.inf, rng.integers(0, 8, n).astype(float))
    lb = rng.integers(0, 8, n).astype(float)

    def problem(with_shape: bool) -> _solver.Problem:
        return _solver.Problem(
            matrix=r, ub=ub, lb=lb, cost=np.ones(n), fixed=supp, cand=~supp, cells=cells,
            up=up, low=low, sl=sl, size=np.full(n, 10.0), zero=np.zeros(n, dtype=bool),
            shape=shape if with_shape else None,
        )  # fmt: skip

    y = supp.astype(float)
    by_rectangles = _solver._Separator(problem(True))
    _, failing = by_rectangles.run(y, fractional=False)
    lp_only = _solver._Separator(problem(False))
    _, failing_lp = lp_only.run(y, fractional=False)
    assert np.array_equal(failing, failing_lp)
    assert by_rectangles.lp_solves <= lp_only.lp_solves
