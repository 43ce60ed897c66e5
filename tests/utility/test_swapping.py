"""Information loss on frequency tables after record swapping (sdcMicro ``infoLoss``, M8)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.datasets import generate_census
from sdckit.errors import ColumnError
from sdckit.masking import targeted_record_swapping
from sdckit.utility import SwapTableLoss, swap_table_loss

HIERARCHY = ["region", "district", "area"]


def test_swap_table_loss_hand_computed() -> None:
    o = pl.DataFrame({"area": [1, 1, 2, 2], "sex": ["f", "m", "f", "f"]})
    s = pl.DataFrame({"area": [1, 2, 2, 2], "sex": ["f", "m", "f", "f"]})
    loss = swap_table_loss(o, s, ["area", "sex"])
    cells = loss.cells.sort("margin", "area", "sex", nulls_last=True)
    inner = cells.filter(pl.col("margin") == "area x sex")
    assert inner.select("area", "sex", "original", "swapped").rows() == [
        (1, "f", 1, 1),
        (1, "m", 1, 0),
        (2, "f", 2, 2),
        (2, "m", 0, 1),
    ]
    area = cells.filter(pl.col("margin") == "area")
    assert area.select("area", "original", "swapped", "abs_diff", "rel_abs_diff").rows() == [
        (1, 2, 1, 1.0, 0.5),
        (2, 2, 3, 1.0, 0.5),
    ]
    assert cells.filter(pl.col("margin") == "sex")["abs_diff"].to_list() == [0.0, 0.0]
    total = cells.filter(pl.col("margin") == "total")
    assert total.select("original", "swapped", "abs_diff").rows() == [(4, 4, 0.0)]
    assert loss.false_zeros == 1 and loss.false_non_zeros == 1
    absd = np.array([0, 1, 0, 1, 1, 1, 0, 0, 0], dtype=float)
    mean = loss.measures.filter(pl.col("statistic") == "mean")
    assert mean["abs_diff"][0] == pytest.approx(absd.mean())
    # rel: (1,m): 1/1, (2,m): o=0 -> 0, areas 0.5 each
    assert mean["rel_abs_diff"][0] == pytest.approx((1 + 0.5 + 0.5) / 9)
    sqrt_expected = (1 + 1 + (np.sqrt(3) - np.sqrt(2)) + (np.sqrt(2) - 1)) / 9
    assert mean["abs_sqrt_diff"][0] == pytest.approx(sqrt_expected)
    median = loss.measures.filter(pl.col("statistic") == "q0.50")
    assert median["abs_diff"][0] == 0.0
    # the full table's distances come from sdckit.utility.table_distances
    assert loss.distances.hellinger == pytest.approx(np.sqrt(0.5 * 2.0))
    assert loss.distances.false_zeros == 1
    assert "false zeros" in str(loss.summary())
    assert loss.to_frame().height == 9


def test_swap_table_loss_after_swapping() -> None:
    df = generate_census(2_000, seed=6)
    out = targeted_record_swapping(
        df, hierarchy=HIERARCHY, household="household_id", risk_variables=["sex", "age_group"],
        k=2, swap_rate=0.1, seed=1,
    )  # fmt: skip
    same = swap_table_loss(df, df, ["area", "sex"])
    assert same.measures.drop("statistic").to_numpy().max() == 0.0
    assert same.false_zeros == same.false_non_zeros == 0
    loss = swap_table_loss(df, out, ["area", "sex"])
    sex = loss.cells.filter(pl.col("margin") == "sex")
    assert (sex["abs_diff"] == 0).all()  # swapping only moves people between areas
    area = loss.cells.filter(pl.col("margin") == "area")
    assert area["abs_diff"].max() > 0
    with pytest.raises(ColumnError):
        swap_table_loss(df, out, ["areas"])
    renamed = df.rename({"sex": "original"})
    with pytest.raises(ColumnError, match="rename"):
        swap_table_loss(renamed, renamed, ["area", "original"])


def test_swap_table_loss_result_object() -> None:
    o = pl.DataFrame({"area": [1, 1, 2, 2], "sex": ["f", "m", "f", "f"]})
    loss = swap_table_loss(o, o, ["area", "sex"], probs=[0.5])
    assert isinstance(loss, SwapTableLoss)
    assert loss.table_vars == ("area", "sex")
    assert loss.measures["statistic"].to_list() == ["q0.50", "mean", "q1.00"]
    assert "SwapTableLoss" in repr(loss)
    with pytest.raises(AttributeError):
        loss.false_zeros = 3  # type: ignore[misc]
