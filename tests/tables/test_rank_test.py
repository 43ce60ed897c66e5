"""The rank test of a suppression pattern (:func:`sdckit.tables.suppression.rank_test`).

Checked against an independent dense rank test (numpy SVD over the model matrix, from
``test_gauss``) on random hierarchical tables with random patterns, against the LP audit,
and on hand-made tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.tables.test_gauss import (
    SETTINGS,
    computable_primaries,
    hierarchical_tables,
    model_matrix,
    singleton_reveals,
)

from sdckit.errors import ParameterError, SdcWarning
from sdckit.tables import (
    CellStatus,
    GaussSuppression,
    MarkedCells,
    Table,
    apply_rules,
    audit,
)
from sdckit.tables.suppression import RankTest, rank_audit, rank_test
from sdckit.tables.suppression._common import contract_table


def _with_pattern(table: Table, data: st.DataObject) -> Table:
    """``table`` with a random set of further cells suppressed (empty cells included)."""
    others = np.flatnonzero(~table.primary).tolist()
    extra = data.draw(st.lists(st.sampled_from(others), max_size=len(others), unique=True))
    return table.suppress(np.array(extra, dtype=np.int64)) if extra else table


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)), st.data())
def test_the_rank_test_finds_the_computable_primaries_of_any_pattern(
    table: Table, data: st.DataObject
) -> None:
    t = _with_pattern(table, data)
    res = rank_test(t)
    assert res.computable.tolist() == computable_primaries(t)
    assert res.ok == (not computable_primaries(t))
    assert res.n_primary == int(t.primary.sum())
    assert len(res.respondent_computable) == 0  # respondents were not asked about


@SETTINGS
@given(hierarchical_tables(), st.data())
def test_the_respondents_test_finds_what_one_respondent_computes(
    table: Table, data: st.DataObject
) -> None:
    t = _with_pattern(table, data)
    res = rank_test(t, respondents=True)
    assert res.computable.tolist() == computable_primaries(t)
    x, _ = model_matrix(t)
    expected = sorted({b for _, b in singleton_reveals(t, x=x)})
    assert res.respondent_computable.tolist() == expected


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)))
def test_the_gauss_patterns_pass_the_rank_test_and_the_lp_agrees(table: Table) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        t = GaussSuppression(repair_limit=0).apply(table).table
    assert rank_test(t, respondents=True).ok
    # the primaries only: with each of them left out of the pattern, the LP audit and the
    # rank test agree on which are exact (every suppressed value is positive, so the bounds
    # never pin a cell on these tables)
    lp = audit(t, primaries_only=True, insider=False)
    prim = t.status[lp.cells] == CellStatus.PRIMARY
    assert not np.any(lp.exact[prim])


def test_the_nine_a4_primaries_alone_give_one_of_them() -> None:
    # sdcTable's 4 x 4 table with its nine primaries and nothing else suppressed: row 1 gives
    # x6 + x7 + x8 = 230 - 89 = 141; column 1, row 2 and column 3 give x6 + x11 = 120,
    # x11 + x13 = 95 and x8 + x13 = 69, so x6 + x8 = 120 + 69 - 95 = 94 and x7 = 47
    t = contract_table()
    res = rank_test(t)
    assert res.computable.tolist() == [7] == computable_primaries(t)
    assert t.values[7] == 141 - 94
    assert not res.ok
    lp = audit(t, insider=False)
    assert lp.cells[lp.exact].tolist() == [7]  # the LP audit agrees
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        protected = GaussSuppression().apply(t).table
    assert rank_test(protected, respondents=True).ok
    assert isinstance(res, RankTest)


def test_a_two_by_two_table_by_hand() -> None:
    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    # cell 4 is (a, x): alone in its row, its row total and column total give it
    one = rank_test(t.suppress([4], CellStatus.PRIMARY))
    assert one.computable.tolist() == [4]
    assert not one.ok
    assert "1 computable exactly" in one.summary()
    # a cycle of four inner cells: no relation holds one of them alone
    cycle = rank_test(t.suppress([4, 5, 7, 8], CellStatus.PRIMARY))
    assert cycle.computable.tolist() == []
    assert cycle.ok
    # cells are numbered (total, a, b) x (total, x, y): 4 = (a, x), 5 = (a, y), 7 = (b, x).
    # Three inner cells of an L: (b, x) is the only suppressed cell of row b, then (a, x)
    # and (a, y) follow from their columns
    ell = rank_test(t.suppress([4, 5, 7], CellStatus.PRIMARY))
    assert ell.computable.tolist() == [4, 5, 7]
    # a cycle through the totals, (T, x), (T, y), (a, x), (a, y): one degree of freedom left
    # ((T, x) - (a, x) = 2, (T, y) - (a, y) = 1, (a, x) + (a, y) = 7)
    through = rank_test(t.suppress([1, 2, 4, 5], CellStatus.PRIMARY))
    assert through.computable.tolist() == []


def test_the_rank_audit_decides_the_primaries_exact_disclosure() -> None:
    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    marked = apply_rules(t, MarkedCells(cells=[4, 8], upper=0))
    safe = rank_audit(marked.suppress([5, 7]))  # the cycle of four
    assert safe.ok and safe.intervals == "rank" and safe.table.protected
    assert np.isnan(safe.minimum).all() and not safe.exact.any()
    assert safe.summary().title.startswith("Rank test")
    # (a, y) as the only secondary: row b gives (b, y), then column x gives (a, x)
    bad = rank_audit(marked.suppress([5]))
    assert not bad.ok and bad.table.protected is False
    assert bad.under_protected.tolist() == [4, 8]
    assert bad.interval(4) == (4.0, 4.0) and bad.interval(8) == (1.0, 1.0)
    assert not bad.exact[bad.cells == 5].any()  # secondaries are not decided


def test_the_rank_audit_refuses_what_it_cannot_check() -> None:
    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    with_levels = apply_rules(t, MarkedCells(cells=[4], upper=1)).suppress([5, 7, 8])
    with pytest.raises(ParameterError, match=r"1 primary cell\(s\) have protection levels"):
        rank_audit(with_levels)


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)), st.data())
def test_the_rank_audit_agrees_with_the_independent_rank_test(
    table: Table, data: st.DataObject
) -> None:
    zero = np.zeros(table.n_cells)
    t = _with_pattern(table.with_status(upper=zero, lower=zero, sliding=zero), data)
    res = rank_audit(t)
    assert res.under_protected.tolist() == computable_primaries(t)
    assert res.ok == (not computable_primaries(t))


@SETTINGS
@given(hierarchical_tables(dims=(2, 3, 4)), st.data())
def test_the_order_in_which_the_published_cells_are_taken_changes_nothing(
    table: Table, data: st.DataObject
) -> None:
    import sdckit.tables.suppression.elimination as elimination

    t = _with_pattern(table, data)
    saved = elimination.FEWEST_CHUNK, elimination.FEWEST_FIRST
    try:
        elimination.FEWEST_CHUNK = 1  # re-sorted by the current counts before every cell
        fewest = rank_test(t, respondents=True)
        elimination.FEWEST_FIRST = False  # in the order of the cell numbers
        static = rank_test(t, respondents=True)
    finally:
        elimination.FEWEST_CHUNK, elimination.FEWEST_FIRST = saved
    assert fewest.computable.tolist() == static.computable.tolist() == computable_primaries(t)
    assert fewest.respondent_computable.tolist() == static.respondent_computable.tolist()


def test_the_rank_test_reports_its_progress() -> None:
    t = Table.from_array(
        np.array([[10, 6, 4], [7, 4, 3], [3, 2, 1]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    calls: list[tuple[str, int, int]] = []
    res = rank_test(
        t.suppress([4, 5, 7, 8], CellStatus.PRIMARY),
        respondents=True,
        progress=lambda stage, done, total: calls.append((stage, done, total)),
    )
    assert res.ok
    # five published cells in each run: the grand total and the four margins
    assert calls[0] == ("rank test", 0, 5) and calls[-1] == ("rank test, respondents", 5, 5)
    assert ("rank test", 5, 5) in calls


def test_zeros_pinned_by_the_bounds_give_the_primaries_away() -> None:
    # rows a, b; columns x, y; column y is all zeros (published total 0): the intruder knows
    # both zeros are 0 (cells are at least 0), then (a, x) and (b, x) from their rows,
    # although no relation gives any of the four
    t = Table.from_array(
        np.array([[9, 9, 0], [5, 5, 0], [4, 4, 0]]),
        {"r": ["a", "b"], "c": ["x", "y"]},
        n_contributors=np.array([[6, 4, 2], [3, 2, 1], [3, 2, 1]]),
        kind="magnitude",
    )
    marked = apply_rules(t, MarkedCells(cells=[4, 5], upper=0))
    zeros_known = marked.suppress([7, 8])  # (b, y) a secondary of value 0
    lp = audit(zeros_known, primaries_only=True, insider=False)
    assert lp.exact[np.isin(lp.cells, [4, 5])].all()  # the LP pins both primaries
    assert computable_primaries(zeros_known) == []  # the relations alone do not
    found = rank_test(zeros_known)
    assert found.computable.tolist() == [4, 5] and found.n_on_bounds == 2
    assert "2 suppressed cell(s) on their a priori bounds" in found.summary()
    res = rank_audit(zeros_known)
    assert not res.ok and res.under_protected.tolist() == [4, 5]
    # both zeros primary: each is pinned by the other's sign (a move raising one lowers the
    # other), then (a, x) and (b, x) follow
    both = apply_rules(t, MarkedCells(cells=[5, 8], upper=0)).suppress([4, 7])
    assert rank_test(both).computable.tolist() == [5, 8]
    assert (
        audit(both, primaries_only=True, insider=False)
        .exact[np.isin(audit(both, insider=False).cells, [5, 8])]
        .all()
    )


def test_a_zero_primary_a_move_can_raise_is_safe() -> None:
    # (a, y) = 0 is a primary on its bound; the cycle of four raises it ((a, x) = 5 and
    # (b, y) = 4 have room to go down): not pinned
    t = Table.from_array(
        np.array([[12, 8, 4], [5, 5, 0], [7, 3, 4]]),
        {"r": ["a", "b"], "c": ["x", "y"]},
        n_contributors=np.array([[6, 4, 2], [3, 2, 1], [3, 2, 1]]),
        kind="magnitude",
    )
    t = apply_rules(t, MarkedCells(cells=[5], upper=0)).suppress([4, 7, 8])
    found = rank_test(t)
    assert found.ok and found.n_on_bounds == 1
    assert audit(t, insider=False).interval(5) == (0.0, 4.0)
    assert rank_audit(t).ok


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables(dims=(2, 3), zero_values=True), st.data())
def test_what_the_rank_test_passes_the_lp_audit_does_not_find_exact(
    table: Table, data: st.DataObject
) -> None:
    zeros = np.flatnonzero((table.status != CellStatus.EMPTY) & (table.values == 0))
    if len(zeros):  # zero-valued primaries, where the bounds can pin
        more = data.draw(st.lists(st.sampled_from(zeros.tolist()), max_size=4, unique=True))
        table = table.suppress(np.array(more, dtype=np.int64), CellStatus.PRIMARY)
    t = _with_pattern(table, data)
    found = rank_test(t)
    lp = audit(t, primaries_only=True, insider=False)
    prim = t.primary[lp.cells]
    lp_exact = lp.cells[prim & lp.exact].tolist()
    # sound: every primary the LP finds exact, the rank test finds too
    assert set(lp_exact) <= set(found.computable.tolist())
    on_bound = t.suppressed & (t.values <= t.lower_bounds + 1e-9)
    if not on_bound.any():
        # every suppressed cell inside its bounds: the same verdicts
        assert found.computable.tolist() == lp_exact == computable_primaries(t)
