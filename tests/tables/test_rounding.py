"""Rounding of frequency tables: worked examples E3 and E4, controlled rounding, audits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import DataError, InfeasibleError
from sdckit.tables import (
    Table,
    audit_rounding,
    round_controlled,
    round_deterministic,
    round_random,
    round_small_cells,
    small_cell_adjustment,
)
from sdckit.tables.examples import e3_table, with_margins

E3_ROUNDED = np.array(
    [
        [39, 0, 12, 9, 15],
        [15, 0, 6, 6, 3],
        [12, 0, 3, 0, 6],
        [3, 0, 3, 0, 0],
        [12, 0, 3, 3, 3],
    ]
)


def test_e3_deterministic_rounding_exactly() -> None:
    res = round_deterministic(e3_table(), base=3)
    assert np.array_equal(res.rounded.reshape(5, 5), E3_ROUNDED)
    assert not res.additive  # column B: 6 + 3 + 3 + 3 = 15, total 12
    frame = res.to_frame()
    total_b = frame.filter((frame["row"] == "Total") & (frame["col"] == "B"))
    assert total_b["published"].item() == 12


def test_ties() -> None:
    t = Table.from_array(
        np.array([[8, 6, 2], [5, 3, 2], [3, 3, 0]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    assert round_deterministic(t, base=4).rounded.tolist() == [8, 8, 4, 4, 4, 4, 4, 4, 0]
    assert round_deterministic(t, base=4, ties="even").rounded.tolist() == [
        8,
        8,
        0,
        4,
        4,
        0,
        4,
        4,
        0,
    ]


def test_e3_controlled_rounding_additive_and_zero_restricted() -> None:
    t = e3_table()
    res = round_controlled(t, base=3)
    assert res.additive
    v, r = t.values, res.rounded
    assert np.all(r % 3 == 0)
    multiple = v % 3 == 0
    assert np.array_equal(r[multiple], v[multiple])  # zero-restricted: multiples stay
    assert np.all(np.abs(r - v) < 3)  # others go to an adjacent multiple
    # optimal: no additive zero-restricted rounding is closer (objective of the MILP)
    assert np.abs(r - v).sum() <= np.abs(round_deterministic(t, base=3).rounded - v).sum() + 12
    assert res.summary().to_dict()["additive"]


def test_controlled_rounding_three_dimensions() -> None:
    rng = np.random.default_rng(5)
    inner = rng.integers(0, 9, size=(3, 2, 2))
    full = np.zeros((4, 3, 3))
    full[1:, 1:, 1:] = inner
    full[0, 1:, 1:] = inner.sum(0)
    full[1:, 0, 1:] = inner.sum(1)
    full[1:, 1:, 0] = inner.sum(2)
    full[0, 0, 1:] = inner.sum((0, 1))
    full[0, 1:, 0] = inner.sum((0, 2))
    full[1:, 0, 0] = inner.sum((1, 2))
    full[0, 0, 0] = inner.sum()
    t = Table.from_array(full, {"a": ["1", "2", "3"], "b": ["x", "y"], "c": ["u", "v"]})
    try:
        res = round_controlled(t, base=5)
    except InfeasibleError:
        res = round_controlled(t, base=5, k_steps=1)
    assert res.additive and np.all(res.rounded % 5 == 0)
    assert np.all(np.abs(res.rounded - t.values) < 10)


def test_e4_audit_finds_narrowed_intervals() -> None:
    inner = np.array([[6, 7, 1], [5, 4, 0]])
    t = Table.from_array(
        with_margins(inner), {"sex": ["Male", "Female"], "age": ["Under 30", "30-60", "Over 60"]}
    )
    published = with_margins(np.array([[5, 10, 0], [5, 5, 0]]))
    published[1:, 0] = [10, 5]  # published row totals (rounded independently)
    published[0, 1:] = [15, 15, 0]
    published[0, 0] = 20
    res = audit_rounding(t, published.ravel(), base=5, use=t.is_total)
    got = {}
    for code in ("Under 30", "30-60", "Over 60"):
        got[code] = (
            res.minimum[t.cell(sex="Total", age=code)],
            res.maximum[t.cell(sex="Total", age=code)],
        )
    for code in ("Male", "Female"):
        got[code] = (
            res.minimum[t.cell(sex=code, age="Total")],
            res.maximum[t.cell(sex=code, age="Total")],
        )
    got["total"] = (res.minimum[0], res.maximum[0])
    assert got == {
        "Under 30": (11, 12),
        "30-60": (11, 12),
        "Over 60": (0, 1),
        "Male": (13, 14),
        "Female": (8, 9),
        "total": (22, 23),
    }
    assert res.summary().to_dict()["cells"] == 12


def test_random_rounding_unbiased_and_reproducible() -> None:
    t = e3_table()
    a = round_random(t, base=3, seed=7).rounded
    assert np.array_equal(a, round_random(t, base=3, seed=7).rounded)
    assert np.all(a % 3 == 0) and np.all(np.abs(a - t.values) < 3)
    mult = t.values % 3 == 0
    assert np.array_equal(a[mult], t.values[mult])
    rng = np.random.default_rng(0)
    mean = np.mean([round_random(t, base=3, seed=rng).rounded for _ in range(2000)], axis=0)
    assert mean == pytest.approx(t.values, abs=0.15)
    assert round_random(t, base=3, seed=1, additive=True).additive


def test_small_cells_and_adjustment() -> None:
    t = e3_table()
    res = round_small_cells(t, base=3, seed=2)
    interior = ~t.is_total
    big = interior & (t.values >= 3)
    assert np.array_equal(res.rounded[big], t.values[big])
    assert set(res.rounded[interior & (t.values < 3)].tolist()) <= {0, 3}
    assert res.additive
    adj = small_cell_adjustment(t, base=3, seed=4)
    assert adj.additive
    assert not np.any(np.isin(adj.rounded[interior], [1, 2]))
    rng = np.random.default_rng(1)
    mean = np.mean(
        [small_cell_adjustment(t, base=3, seed=rng).rounded for _ in range(1000)], axis=0
    )
    assert mean == pytest.approx(t.values, abs=0.2)
    det = round_small_cells(t, base=3, random=False)
    assert det.rounded[t.cell(row="2", col="B")] == 3


def test_counts_needed() -> None:
    t = Table.from_array(np.array([1.5, 1.0, 0.5]), {"x": ["a", "b"]})
    with pytest.raises(DataError):
        round_deterministic(t, base=3)


@settings(max_examples=10)
@given(st.lists(st.integers(0, 12), min_size=6, max_size=6), st.integers(2, 5))
def test_controlled_two_dimensional_always_exists(values: list[int], base: int) -> None:
    t = Table.from_array(
        with_margins(np.array(values).reshape(2, 3)), {"r": ["a", "b"], "c": ["x", "y", "z"]}
    )
    res = round_controlled(t, base=base)
    assert res.additive
    assert np.all(np.abs(res.rounded - t.values) < base)
    aud = audit_rounding(t, res.rounded, base)
    assert np.all(aud.minimum <= t.values + 1e-9) and np.all(aud.maximum >= t.values - 1e-9)


def test_a_rounding_cut_by_its_time_limit_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """scipy's milp reports a reached time limit as status 1 with a feasible point: the
    result names the parameter, warns, and is still a valid additive rounding."""
    import scipy.optimize

    from sdckit.errors import SdcWarning

    real = scipy.optimize.milp

    def cut_short(*args, **kwargs):
        res = real(*args, **kwargs)
        res.status = 1  # as HiGHS returns it when the clock stops the search
        return res

    t = e3_table()
    plain = round_controlled(t, base=3)
    assert plain.time_limited is None
    assert "cut short by (wall clock)" not in plain.summary().to_dict()
    monkeypatch.setattr(scipy.optimize, "milp", cut_short)
    with pytest.warns(SdcWarning, match="'time_limit'"):
        cut = round_controlled(t, base=3, time_limit=5.0)
    assert cut.time_limited == "time_limit" and cut.additive
    assert cut.summary().to_dict()["cut short by (wall clock)"] == "time_limit"
