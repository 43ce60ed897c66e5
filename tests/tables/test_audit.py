"""LP audit of suppression patterns: worked example E2, tau-ARGUS 2x2, the sdcTable trap."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.tables import CellStatus, MarkedCells, Table, apply_rules, audit, singleton_violations
from sdckit.tables.examples import A4_PRIMARIES, a4_table, e2_table, with_margins

E2_PATTERN = [("B", "36210"), ("D", "36210"), ("B", "36300"), ("D", "36300")]


def test_e2_intervals_exactly() -> None:
    t = e2_table()
    cells = [t.cell(region=r, industry=c) for r, c in E2_PATTERN]
    res = audit(t.suppress(cells))
    got = [res.interval(c) for c in cells]
    assert got == [(0, 4871), (0, 4871), (1343, 6214), (489, 5360)]
    assert res.ok
    assert audit(t.suppress(cells), integer=True).interval(cells[2]) == (1343, 6214)


def test_e2_checked_against_p_percent_levels() -> None:
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    pattern = [t.cell(region=r, industry=c) for r, c in E2_PATTERN]
    ok = apply_rules(t, MarkedCells(cells=[d], upper=2000, lower=2000)).suppress(
        [c for c in pattern if c != d]
    )
    assert audit(ok).ok  # [0, 4871] reaches 2309 - 2000 and 2309 + 2000
    too_much = apply_rules(t, MarkedCells(cells=[d], upper=3000)).suppress(
        [c for c in pattern if c != d]
    )
    res = audit(too_much)
    assert not res.ok
    assert res.under_protected.tolist() == [d]
    frame = res.to_frame()
    assert frame.filter(frame["cell"] == d)["maximum"].item() == 4871


def test_tau_argus_two_by_two() -> None:
    t = Table.from_array(with_margins([[4, 3], [2, 1]]), {"r": ["1", "2"], "c": ["1", "2"]})
    res = audit(t.suppress([4, 5, 7, 8]))
    assert res.interval(4) == (3, 6)
    assert res.interval(8) == (0, 3)


def test_sdctable_trap_is_found() -> None:
    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    marked = apply_rules(t, MarkedCells(cells=cells))
    # every row and every column of the interior has at least two suppressions ...
    sup = marked.suppressed.reshape(t.shape)[1:, 1:]
    assert sup.sum(axis=0).min() >= 2 and sup.sum(axis=1).min() >= 2
    res = audit(marked)
    wb = t.cell(row="w", col="b")
    # ... yet (w, b) = 47 is recomputable exactly
    assert res.disclosed.tolist() == [wb]
    assert res.interval(wb) == pytest.approx((47, 47))
    assert res.under_protected.tolist() == [wb]
    assert res.summary().to_dict()["primaries disclosed exactly"] == 1


def test_unbounded_and_a_priori_bounds() -> None:
    t = Table.from_array(np.array([10.0, 3.0, 7.0]), {"x": ["a", "b"]})
    res = audit(t.suppress([0, 1]))  # the total and a part hidden: no upper bound
    assert res.interval(0) == (7, np.inf)
    assert res.interval(1) == (0, np.inf)
    ub = np.full(t.n_cells, np.inf)
    ub[0] = 12
    assert audit(t.with_status(upper_bounds=ub).suppress([0, 1])).interval(1) == (0, 5)


def test_singleton_violations() -> None:
    t = Table.from_array(
        with_margins([[5, 1, 4], [6, 2, 2]]),
        {"r": ["1", "2"], "c": ["a", "b", "c"]},
        n_contributors=with_margins([[3, 1, 3], [3, 1, 3]]),
    )
    marked = apply_rules(
        t, MarkedCells(cells=[t.cell(r="1", c="b"), t.cell(r="1", c="c")], upper=1)
    )
    assert len(singleton_violations(marked)) == 1
    assert len(singleton_violations(marked.suppress([t.cell(r="1", c="a")]))) == 0


def test_nothing_suppressed() -> None:
    res = audit(e2_table())
    assert res.ok and len(res.cells) == 0
    assert res.table.status[0] == CellStatus.SAFE


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_check_mode_gives_the_same_verdicts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    inner = rng.integers(1, 30, size=(5, 4))
    t = Table.from_array(with_margins(inner), {"r": list("abcde"), "c": list("wxyz")})
    interior = np.flatnonzero(~t.is_total)
    prim = rng.choice(interior, 4, replace=False)
    others = rng.choice(np.setdiff1d(interior, prim), 5, replace=False)
    marked = apply_rules(t, MarkedCells(cells=prim, upper=3, lower=2)).suppress(others)
    exact = audit(marked)
    check = audit(marked, intervals="check")
    assert np.array_equal(exact.protected, check.protected)
    primary = marked.primary[exact.cells]
    assert np.array_equal(exact.exact[primary], check.exact[primary])
    # inner approximation: never wider than the true interval
    assert np.all(check.minimum[primary] >= exact.minimum[primary] - 1e-9)
    assert np.all(check.maximum[primary] <= exact.maximum[primary] + 1e-9)
