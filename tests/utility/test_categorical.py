"""Categorical and table information loss: E7 formulas on hand-made tables."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.utility import categorical_loss, cramers_v, pram_entropy, table_distances


def test_e7_measures_on_hand_made_tables() -> None:
    t = np.array([[4, 0], [1, 5]])
    u = np.array([[3, 0], [0, 6]])
    d = table_distances(t, u)
    assert d.hellinger == pytest.approx(
        math.sqrt(0.5 * ((2 - math.sqrt(3)) ** 2 + 1 + (math.sqrt(5) - math.sqrt(6)) ** 2))
    )
    assert d.average_absolute_distance == pytest.approx(3 / 4)
    assert d.relative_absolute_distance == pytest.approx(3 / 10)
    assert d.relative_absolute_distance_cells == pytest.approx(1 / 4 + 1 / 1 + 1 / 5)
    assert (d.false_zeros, d.false_non_zeros) == (1, 0)
    # normalised Hellinger on distributions (E7's last formula), both totals 10
    hd = math.sqrt(sum((math.sqrt(b / 9) - math.sqrt(a / 10)) ** 2
                       for a, b in [(4, 3), (0, 0), (1, 0), (5, 6)])) / math.sqrt(2)  # fmt: skip
    assert d.hellinger_normalised == pytest.approx(hd)


def test_cramers_v_and_change() -> None:
    t = np.array([[10, 5], [5, 10]])
    chi2 = sum((o - 7.5) ** 2 / 7.5 for o in (10, 5, 5, 10))
    assert cramers_v(t) == pytest.approx(math.sqrt(chi2 / 30))
    d = table_distances(t, [[10, 0], [0, 10]])
    assert d.cramers_v_protected == pytest.approx(1.0)
    assert d.cramers_v_change_pct == pytest.approx(
        100 * (1 - d.cramers_v_original) / d.cramers_v_original
    )


def test_shape_mismatch() -> None:
    with pytest.raises(ParameterError, match="shapes"):
        table_distances([1, 2], [1, 2, 3])


def test_categorical_loss_counts_changes_and_suppressions() -> None:
    x = pl.DataFrame({"a": ["u", "v", "u", "w"], "b": [1, 1, 2, 2]})
    y = pl.DataFrame({"a": ["u", "u", None, "w"], "b": [1, 1, 2, 2]})
    res = categorical_loss(x, y, variables=["a", "b"])
    row = res.per_variable.row(0, named=True)
    assert row["share_changed"] == pytest.approx(0.5)
    assert row["suppressed"] == 1
    assert res.per_variable["share_changed"][1] == 0
    assert res.pairs.height == 1


def test_pram_entropy_bounds() -> None:
    assert pram_entropy(np.eye(3), [1, 2, 3]) == 0.0
    uniform = np.full((3, 3), 1 / 3)
    pi = np.array([1, 2, 3]) / 6
    assert pram_entropy(uniform, [1, 2, 3]) == pytest.approx(-np.sum(pi * np.log(pi)))


def test_float_and_integer_versions_compare_equal() -> None:
    import pandas as pd

    x = pd.DataFrame({"r": [1.0, 2.0, float("nan"), 2.0]})
    y = pl.DataFrame({"r": [1, 2, None, 2]})
    res = categorical_loss(x, y, variables=["r"])
    assert res.per_variable["share_changed"][0] == 0
    assert res.per_variable["hellinger"][0] == 0
