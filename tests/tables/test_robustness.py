"""Large magnitudes, infeasible tables, and never an unprotected pattern as a normal result."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from sdckit.datasets import load_demo
from sdckit.errors import InfeasibleError, SdcWarning, VerificationError
from sdckit.tables import (
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.examples import A4_PRIMARIES, a4_table, e2_table, with_margins

METHODS = [suppress_optimal, suppress_hypercube, suppress_modular]
DIMS_4D = ["region", "sex", "urban_rural", "marital_status"]


@pytest.fixture(scope="module")
def survey_4d() -> Table:
    """Weighted income of 400 survey respondents in 4 dimensions: cells in the millions."""
    df = load_demo().head(400)
    t = Table.from_microdata(df, DIMS_4D, "income", weight="weight")
    return apply_rules(t, [MinFrequency(threshold=3), PPercent(p=10)])


def test_the_4d_weighted_table_is_large(survey_4d: Table) -> None:
    assert survey_4d.n_cells == 567 and survey_4d.weighted
    assert survey_4d.values.max() > 1e9
    assert survey_4d.primary.sum() == 192


def test_audit_of_large_magnitudes_is_consistent(survey_4d: Table) -> None:
    # before: "The published cells and the a priori bounds are inconsistent" (rounding of the
    # weighted totals against HiGHS's absolute tolerances)
    check = audit(survey_4d, intervals="check")
    assert not check.ok  # the primaries alone are recomputable from the margins
    exact = audit(survey_4d, primaries_only=True)
    assert np.array_equal(exact.protected, check.protected)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_every_method_protects_the_4d_weighted_table(survey_4d: Table, method) -> None:
    res = method(survey_4d)
    # the methods' own verdict is the outsider's (the insider audit and its repair:
    # test_audit_insider.py)
    check = audit(res.table, insider=False)
    assert check.ok and res.protected and res.table.protected
    assert res.n_secondary > 0
    assert np.all(res.table.suppressed >= survey_4d.suppressed)


def test_audit_scales_with_the_values() -> None:
    # E2 in units of a millionth: the intervals are the E2 intervals times 1e6, exactly
    t = e2_table()
    cells = [t.cell(region=r, industry=c) for r, c in [("B", "36210"), ("D", "36210")]]
    cells += [t.cell(region=r, industry=c) for r, c in [("B", "36300"), ("D", "36300")]]
    big = Table.from_array(
        t.values.reshape(t.shape) * 1e6, dict(zip(t.dimensions, t.hierarchies, strict=True))
    )
    got = [audit(big.suppress(cells)).interval(c) for c in cells]
    want = [(0, 4871e6), (0, 4871e6), (1343e6, 6214e6), (489e6, 5360e6)]
    assert np.asarray(got) == pytest.approx(np.asarray(want), rel=1e-12)


def _frozen_table() -> tuple[Table, int]:
    codes = {"row": ["alpha", "beta"], "col": ["gamma", "delta"]}
    t = Table.from_array(with_margins([[7777, 4321], [2468, 1357]]), codes, kind="magnitude")
    p = t.cell(row="alpha", col="gamma")
    marked = apply_rules(t, MarkedCells(cells=[p], upper=100))
    frozen = np.ones(t.n_cells, dtype=bool)
    frozen[p] = False
    return marked.mark_protected(frozen), p


def _assert_no_data(message: str) -> None:
    for data in ("alpha", "beta", "gamma", "delta", "Total", "7777", "4321", "2468", "1357"):
        assert data not in message, message


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_infeasible_primary_is_named_by_position_with_reason_and_fix(method) -> None:
    t, p = _frozen_table()
    with pytest.raises(InfeasibleError) as info:
        method(t)
    message = str(info.value)
    assert f"cell {p} (position 1 in 'row', 1 in 'col')" in message
    assert "along 'row' and 'col'" in message or "along 'col' and 'row'" in message
    assert "empty or frozen" in message
    assert "'safety_range'" in message and "mark_protected" in message
    _assert_no_data(message)


def test_infeasible_levels_name_the_bounds() -> None:
    # the cells around (w, b) may move by at most 10 (a priori upper bounds): a level of 500
    # cannot be reached
    t = a4_table()
    p = t.cell(row="w", col="b")
    marked = apply_rules(t, MarkedCells(cells=[p], upper=500, lower=0))
    tight = marked.with_status(
        status=marked.status, upper_bounds=t.values + 10, upper=marked.upper, lower=marked.lower
    )
    with pytest.raises(InfeasibleError, match=r"more room upward") as info:
        suppress_optimal(tight)
    assert re.search(rf"cell {p} \(position 1 in 'row', 2 in 'col'\)", str(info.value))
    assert "upper_bounds" in str(info.value)


def test_optimal_stopped_early_returns_a_protected_pattern(survey_4d: Table) -> None:
    # before: max_iterations left primaries recomputable, flagged only by optimal=False
    with pytest.warns(SdcWarning, match="max iterations"):
        res = suppress_optimal(survey_4d, max_iterations=2)
    assert not res.optimal
    assert res.protected and audit(res.table, insider=False).ok
    assert res.details["iterations"] == 2 and res.details["repaired"] > 0


def test_heuristics_carry_their_verdict(tmp_path) -> None:
    t = a4_table()
    marked = apply_rules(t, MarkedCells(cells=[t.cell(row=r, col=c) for r, c in A4_PRIMARIES]))
    for method in (suppress_hypercube, suppress_modular):
        res = method(marked)
        assert res.protected and res.table.protected is True
        unaudited = method(marked, repair_limit=0)
        assert not unaudited.protected and unaudited.table.protected is None
    # without the repair the verdict is unknown: a published export audits the pattern first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        res = suppress_hypercube(marked, repair_limit=1)
    assert not res.protected and "audited" in str(res.summary().to_dict())


def test_unprotected_pattern_is_never_written_as_published(tmp_path) -> None:
    t = a4_table()
    trap = apply_rules(t, MarkedCells(cells=[t.cell(row=r, col=c) for r, c in A4_PRIMARIES]))
    assert trap.protected is None
    with pytest.raises(VerificationError, match="not written"):
        trap.write(tmp_path / "trap.csv")  # not audited: refused, never audited here
    checked = audit(trap)
    assert checked.table.protected is False
    with pytest.raises(VerificationError):
        checked.table.write(tmp_path / "trap.csv")
    assert not (tmp_path / "trap.csv").exists()
    checked.table.write(tmp_path / "internal.csv", published=False)  # the internal export is fine
    fixed = repair_suppression(trap, cost="unity")
    assert fixed.protected
    assert fixed.table.write(tmp_path / "ok.csv").exists()
