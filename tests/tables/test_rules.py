"""Primary sensitivity rules and their protection levels (methods.md M11.1)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import DataError, ParameterError
from sdckit.tables import (
    CellStatus,
    Dominance,
    MarkedCells,
    MinFrequency,
    PPercent,
    PQRule,
    Table,
    ZeroCells,
    apply_rules,
    evaluate_rules,
)
from sdckit.tables.examples import e3_table, with_margins


def _one_dim(values: list[float], top: list[list[float]], contributors: list[int]) -> Table:
    return Table.from_array(
        np.array(values, dtype=float),
        {"x": [f"c{i}" for i in range(len(values) - 1)]},
        top=top,
        n_contributors=contributors,
        kind="magnitude",
    )


# total 100 = 60 + 40; cell c0: 60 = 50 + 6 + 4; cell c1: 40 = 20 + 19 + 1
TABLE = _one_dim([100, 60, 40], [[50, 20, 19], [50, 6, 4], [20, 19, 1]], [6, 3, 3])


def test_p_percent_levels_by_hand() -> None:
    out = PPercent(p=10).evaluate(TABLE)
    # c0: remainder 60-50-6 = 4 < 5 = 10% of 50 -> level 1; c1: remainder 1 < 2 -> level 1
    assert out.unsafe.tolist() == [False, True, True]
    assert out.upper == pytest.approx([0, 1, 1])
    assert out.lower == pytest.approx([0, 1, 1])
    assert PPercent(p=5).evaluate(TABLE).unsafe.tolist() == [False, False, False]


def test_pq_rule_is_p_over_q() -> None:
    # p/q = 0.25: c0 needs 12.5 - 4 = 8.5, c1 needs 5 - 1 = 4
    out = PQRule(p=25, q=100).evaluate(TABLE)
    assert out.upper == pytest.approx([0, 8.5, 4])
    assert PQRule(p=20, q=80).evaluate(TABLE).upper == pytest.approx(out.upper)
    with pytest.raises(ParameterError, match=r"'p' parameter of PQRule must not exceed 'q'"):
        PQRule(p=90, q=80).evaluate(TABLE)


def test_dominance_levels_by_hand() -> None:
    # (1, 80): c0 top 50 <= 48? no: 50 > 48 unsafe, level 50/0.8 - 60 = 2.5
    out = Dominance(n=1, k=80).evaluate(TABLE)
    assert out.unsafe.tolist() == [False, True, False]
    assert out.upper == pytest.approx([0, 2.5, 0])
    # (3, 70) as in the tau-ARGUS manual: c1 top 3 = 40 > 28, level 40/0.7 - 40
    out3 = Dominance(n=3, k=70).evaluate(TABLE)
    assert out3.unsafe.tolist() == [True, True, True]
    assert out3.upper[2] == pytest.approx(40 / 0.7 - 40)
    with pytest.raises(DataError, match="4 largest"):
        Dominance(n=4, k=70).evaluate(TABLE)


def test_negative_contributions_refused() -> None:
    t = Table.from_array(
        np.array([1.0, 3.0, -2.0]), {"x": ["a", "b"]}, top=[[3, 0], [3, 0], [-2, 0]]
    )
    with pytest.raises(DataError, match="non-negative"):
        Dominance().evaluate(t)


def test_min_frequency_and_safety_range() -> None:
    out = MinFrequency(threshold=4, safety_range=10, minimum_level=0).evaluate(TABLE)
    assert out.unsafe.tolist() == [False, True, True]
    assert out.upper == pytest.approx([0, 6, 4])
    counts = e3_table()  # contributors unknown: counts are the frequencies
    unsafe = MinFrequency(threshold=3).evaluate(counts).unsafe.reshape(counts.shape)
    assert unsafe[1:, 1:].sum() == 4  # the interior 1s and 2s
    mag = Table.from_array(np.array([3.0, 1.5, 1.5]), {"x": ["a", "b"]}, kind="magnitude")
    with pytest.raises(DataError, match="contributors"):
        MinFrequency().evaluate(mag)


def test_zero_cells_that_disclose() -> None:
    t = e3_table()
    out = ZeroCells().evaluate(t).unsafe.reshape(t.shape)
    # row 3 is (0, 2, 0, 0): everyone in row 3 is in column B, so its zeros disclose
    assert out[3, [1, 3, 4]].all()
    assert out.sum() == 5  # and column A is (0, 1, 0, 0)
    assert out[[1, 4], 1].all()
    every = ZeroCells(disclosing_only=False).evaluate(t).unsafe.reshape(t.shape)
    assert every.sum() == 5


def test_every_zero_cell_includes_zero_totals() -> None:
    """A zero total is the sum of zero cells and discloses them: with
    ``disclosing_only=False`` it is unsafe as well (else the zeros below it could not be
    protected: the total would be published)."""
    inner = np.array([[0.0, 3.0], [0.0, 4.0]])  # column a all zero: its total is zero
    t = Table.from_array(with_margins(inner), {"r": ["x", "y"], "c": ["a", "b"]})
    every = ZeroCells(disclosing_only=False).evaluate(t).unsafe
    assert every.sum() == 3
    assert every[[t.cell(r="x", c="a"), t.cell(r="y", c="a"), t.cell(r="Total", c="a")]].all()


def test_marked_and_combined_rules() -> None:
    marked = MarkedCells(cells=[{"x": "c1"}], upper=3, lower=2, sliding=4)
    res = evaluate_rules(TABLE, [PPercent(p=10), marked])
    t = res.table
    assert t.primary.tolist() == [False, True, True]
    assert t.upper.tolist() == [0, 1, 3]
    assert t.lower.tolist() == [0, 1, 2]
    assert t.sliding.tolist() == [0, 0, 4]
    assert res.to_frame().get_column("unsafe_marked").to_list() == [False, False, True]
    assert res.summary().to_dict()["primary suppressions"] == 2


def test_lower_level_capped_by_bound_and_frozen_cells() -> None:
    t = _one_dim([10, 8, 2], [[8, 0], [8, 0], [2, 0]], [2, 1, 1])
    out = apply_rules(t, MarkedCells(cells=[2], upper=5))
    assert out.lower[2] == 2  # the cell cannot go below 0
    frozen = t.mark_protected([2])
    assert apply_rules(frozen, MarkedCells(cells=[1, 2], upper=1)).status.tolist() == [
        CellStatus.SAFE,
        CellStatus.PRIMARY,
        CellStatus.PROTECTED,
    ]


def test_rules_on_microdata_table() -> None:
    df = pl.DataFrame({"r": ["a"] * 3 + ["b"] * 4, "v": [90.0, 5, 5, 10, 10, 10, 10]})
    t = apply_rules(
        Table.from_microdata(df, ["r"], "v"), [Dominance(n=1, k=85), MinFrequency(threshold=3)]
    )
    assert t.primary.tolist() == [False, True, False]


def test_rules_take_keyword_arguments_checked_when_evaluated() -> None:
    with pytest.raises(ParameterError, match=r"MinFrequency\(threshold=\.\.\.\)"):
        MinFrequency(3)  # type: ignore[misc]
    with pytest.raises(ParameterError, match="keyword arguments only"):
        MarkedCells([2])  # type: ignore[misc]
    with pytest.raises(ParameterError, match=r"Did you mean 'threshold'\?"):
        MinFrequency(treshold=3)  # type: ignore[call-arg]
    rule = MinFrequency(threshold=0)  # only stored
    assert rule.get_params() == {
        "threshold": 0,
        "safety_range": 10.0,
        "minimum_level": 1.0,
        "level": None,
    }
    with pytest.raises(ParameterError, match=r"'threshold' parameter of MinFrequency"):
        rule.evaluate(TABLE)
    with pytest.raises(ParameterError, match=r"'p' parameter of PPercent"):
        PPercent(p=150).evaluate(TABLE)
    assert repr(PPercent(p=5)) == "PPercent(p=5, level=None)"
    expected = "MarkedCells(cells=[1], upper=0.0, lower=None, sliding=0.0)"
    assert repr(MarkedCells(cells=[1])) == expected


def test_marked_cells_mask_and_default_lower_level() -> None:
    mask = np.array([False, False, True])
    out = MarkedCells(cells=mask, upper=2).evaluate(TABLE)
    assert out.unsafe.tolist() == [False, False, True]
    assert out.lower.tolist() == [0, 0, 2]  # lower defaults to upper
    with pytest.raises(ParameterError, match="one entry per cell"):
        MarkedCells(cells=np.array([True])).evaluate(TABLE)


def test_a_subclass_with_another_signature_declares_its_parameters() -> None:
    with pytest.raises(TypeError, match="must declare exactly the parameters"):

        class Strict(PPercent):  # inherits PPercent.parameters, which lack 'margin'
            def __init__(self, *, p: float = 10.0, margin: float = 1.0) -> None:
                self.p = p
                self.margin = margin

    with pytest.raises(TypeError, match="keyword-only"):

        class Positional(PQRule):
            def __init__(self, p: float = 10.0, q: float = 100.0) -> None:
                self.p = p
                self.q = q
