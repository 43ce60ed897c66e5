"""Tests of the loss on weighted estimates (totals, means, a weighted regression)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit import Microdata
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.utility.rumap import LOSS_MEASURES, loss_measure
from sdckit.utility.weighted import WeightedEstimates, weighted_estimates


def _original() -> Microdata:
    frame = pl.DataFrame(
        {
            "region": ["N", "N", "S", "S"],
            "sex": [1, 2, 1, 2],
            "income": [10.0, 20.0, 30.0, 40.0],
            "w": [1.0, 3.0, 2.0, 2.0],
        }
    )
    return Microdata(frame, keys=["region", "sex"], numeric=["income"], weight="w")


def _rows(result: WeightedEstimates, kind: str, variable: str) -> dict[object, tuple]:
    frame = result.to_frame().filter((pl.col("kind") == kind) & (pl.col("variable") == variable))
    return {
        row[0]: row[1:]
        for row in frame.select(
            "category", "original", "released", "relative_difference"
        ).iter_rows()
    }


def _component(result: WeightedEstimates, variable: str) -> dict[str, object]:
    return result.components.filter(pl.col("variable") == variable).row(0, named=True)


# ---------------------------------------------------------------------------------- totals
def test_suppressed_values_are_their_own_category_and_count_as_lost() -> None:
    # original N 4, S 4 (total 8); released N 2, S 4, missing 2 (total 8)
    released = pl.DataFrame({"region": ["N", None, "S", "S"], "w": [2.0, 2.0, 2.0, 2.0]})
    res = weighted_estimates(_original(), released, totals=["region"])
    rows = _rows(res, "total", "region")
    assert rows == {"N": (4.0, 2.0, -0.5), "S": (4.0, 4.0, 0.0), None: (0.0, 2.0, None)}
    comp = _component(res, "region")
    # TVD = 1/2 (|1/2 - 1/4| + |1/2 - 1/2| + |0 - 1/4|) = 1/4, all of it lost to "missing"
    assert comp["loss"] == pytest.approx(0.25)
    assert comp["lost_share"] == pytest.approx(0.25)
    assert comp["moved_share"] == pytest.approx(0.0)
    assert res.loss == pytest.approx(0.25)
    assert res.released_weight == "w"


def test_moved_weight_is_measured_by_the_shares() -> None:
    # released N 1, S 7: TVD = 1/2 (|1/2 - 1/8| + |1/2 - 7/8|) = 3/8, all moved
    released = pl.DataFrame({"region": ["N", "S", "S", "S"], "w": [1.0, 3.0, 2.0, 2.0]})
    res = weighted_estimates(_original(), released, totals="region")
    comp = _component(res, "region")
    assert comp["loss"] == pytest.approx(0.375)
    assert comp["lost_share"] == pytest.approx(0.0)
    assert comp["moved_share"] == pytest.approx(0.375)


def test_a_category_only_in_the_released_file_is_compared_with_nothing() -> None:
    released = pl.DataFrame({"region": ["N", "N", "S", "X"], "w": [1.0, 3.0, 2.0, 2.0]})
    res = weighted_estimates(_original(), released, totals=["region"])
    rows = _rows(res, "total", "region")
    assert rows["X"] == (0.0, 2.0, None)
    assert rows["S"] == (4.0, 2.0, -0.5)
    assert _component(res, "region")["loss"] == pytest.approx(0.25)


def test_identical_files_lose_nothing() -> None:
    md = _original()
    res = weighted_estimates(md, md, totals=["region", "sex"], means=["income"])
    assert res.loss == 0.0
    assert res.total_original == res.total_released == 8.0


# ---------------------------------------------------------------------------------- means
def test_weighted_means_hand_computed_and_capped() -> None:
    # original (10 + 60 + 60 + 80) / 8 = 26.25; released (20 + 40 + 80) / 6 = 70 / 3
    released = pl.DataFrame(
        {"region": ["N", "N", "S", "S"], "income": [10.0, 20.0, None, 40.0], "w": [2.0] * 4}
    )
    res = weighted_estimates(_original(), released, means=["income"])
    (row,) = _rows(res, "mean", "income").values()
    assert row[0] == pytest.approx(26.25)
    assert row[1] == pytest.approx(70 / 3)
    assert row[2] == pytest.approx((70 / 3 - 26.25) / 26.25)
    assert res.loss == pytest.approx((26.25 - 70 / 3) / 26.25)
    far = released.with_columns(income=pl.lit(1000.0))
    assert weighted_estimates(_original(), far, means=["income"]).loss == 1.0


def test_a_recoded_numeric_variable_is_lost_for_its_mean() -> None:
    released = pl.DataFrame({"income": ["low", "low", "high", "high"], "w": [2.0] * 4})
    res = weighted_estimates(_original(), released, means=["income"])
    assert res.loss == 1.0
    assert _rows(res, "mean", "income")[None][1] is None


# ------------------------------------------------------- dropped columns and weights
def test_dropped_variable_counts_as_fully_lost() -> None:
    released = _original().frame.drop("region", "income")
    res = weighted_estimates(_original(), released, totals=["region", "sex"], means=["income"])
    assert _component(res, "region")["loss"] == 1.0
    assert _component(res, "income")["loss"] == 1.0
    assert _component(res, "sex")["loss"] == 0.0
    assert res.loss == pytest.approx(2 / 3)
    assert all(r[1] is None for r in _rows(res, "total", "region").values())


def test_dropped_weight_gives_equal_weights_scaled_to_the_original_total() -> None:
    # two released records, no weight column: each weighs 8 / 2 = 4
    released = pl.DataFrame({"region": ["N", "S"], "income": [10.0, 40.0]})
    res = weighted_estimates(_original(), released, totals=["region"], means=["income"])
    assert res.released_weight is None
    assert res.total_released == pytest.approx(8.0)
    assert _rows(res, "total", "region") == {"N": (4.0, 4.0, 0.0), "S": (4.0, 4.0, 0.0)}
    assert _rows(res, "mean", "income")[None][1] == pytest.approx(25.0)


def test_released_microdata_with_its_own_weight_role() -> None:
    frame = _original().frame.rename({"w": "w2"}).with_columns(w2=pl.lit(2.0))
    released = Microdata(frame, keys=["region"], weight="w2")
    res = weighted_estimates(_original(), released, totals=["sex"])
    assert res.released_weight == "w2"
    # original sex 1: 3, sex 2: 5; released 4 and 4: TVD = 1/8
    assert res.loss == pytest.approx(0.125)


def test_pandas_frames_and_an_explicit_weight() -> None:
    original = pd.DataFrame({"g": ["a", "a", "b"], "pw": [1.0, 1.0, 2.0]})
    released = pd.DataFrame({"g": ["a", "b", "b"], "pw": [1.0, 1.0, 2.0]})
    res = weighted_estimates(original, released, weight="pw", totals=["g"])
    assert res.loss == pytest.approx(0.25)  # 1/2 (|1/2 - 1/4| + |1/2 - 3/4|)


# ------------------------------------------------------------------------------ regression
def _regression_file(seed: int = 0, n: int = 60) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 70, n).astype(float)
    sex = rng.choice(["f", "m"], n)
    income = 200 + 15 * age + 80 * (sex == "m") + rng.normal(0, 60, n)
    return pl.DataFrame(
        {"age": age, "sex": sex, "income": income, "w": rng.uniform(1, 5, n).round(2)}
    )


def test_weighted_least_squares_hand_computed() -> None:
    frame = pl.DataFrame(
        {
            "y": [1.0, 2.0, 3.0, 5.0, 4.0],
            "x": [0.0, 1.0, 2.0, 3.0, 4.0],
            "w": [1.0, 1.0, 2.0, 2.0, 1.0],
        }
    )
    md = Microdata(frame, weight="w")
    res = weighted_estimates(md, frame, regression="y ~ x")
    x = np.column_stack([np.ones(5), frame["x"].to_numpy()])
    w = frame["w"].to_numpy()
    beta = np.linalg.solve(x.T @ (w[:, None] * x), x.T @ (w * frame["y"].to_numpy()))
    coef = res.to_frame().filter(pl.col("kind") == "coefficient")
    np.testing.assert_allclose(coef["original"].to_numpy(), beta, rtol=1e-10)
    np.testing.assert_allclose(coef["released"].to_numpy(), beta, rtol=1e-10)
    assert coef["ci_overlap"].to_list() == pytest.approx([1.0, 1.0])
    assert res.loss == pytest.approx(0.0)


def test_regression_overlap_and_a_lost_regressor() -> None:
    original = Microdata(_regression_file(1), weight="w")
    released = _regression_file(1).with_columns(income=pl.col("income") + 40.0)
    res = weighted_estimates(original, released, regression="income ~ age + C(sex)")
    coef = res.to_frame().filter(pl.col("kind") == "coefficient")
    assert coef["variable"].to_list() == ["Intercept", "C(sex)[T.m]", "age"]
    j = coef["ci_overlap"].to_numpy()
    assert j[1] == pytest.approx(1.0) and j[2] == pytest.approx(1.0)  # slopes unchanged
    assert j[0] < 1.0  # the intercept moved by 40
    assert res.loss == pytest.approx(1 - np.mean(np.maximum(j, 0)))
    dropped = _regression_file(1).drop("sex")
    lost = weighted_estimates(original, dropped, regression="income ~ age + C(sex)")
    assert lost.loss == 1.0
    assert lost.to_frame()["released"].null_count() == 3


def test_a_coefficient_the_released_file_cannot_estimate_has_overlap_zero() -> None:
    original = Microdata(_regression_file(2), weight="w")
    released = _regression_file(2).with_columns(sex=pl.lit("f"))  # one category left
    res = weighted_estimates(original, released, regression="income ~ age + C(sex)")
    row = res.to_frame().filter(pl.col("variable") == "C(sex)[T.m]").row(0, named=True)
    assert row["released"] is None and row["ci_overlap"] is None
    assert res.loss >= 1 / 3


# ----------------------------------------------------------------------- errors and R-U
def test_bad_input() -> None:
    with pytest.raises(ParameterError, match="Nothing to compare"):
        weighted_estimates(_original(), _original())
    with pytest.raises(ColumnError, match="nope"):
        weighted_estimates(_original(), _original(), totals=["nope"])
    with pytest.raises(ColumnError, match="not numeric"):
        weighted_estimates(_original(), _original(), means=["region"])
    with pytest.raises(ParameterError, match="formula"):
        weighted_estimates(_original(), _original(), regression="income")
    with pytest.raises(ParameterError, match="could not be fitted"):
        weighted_estimates(_original(), _original(), regression="income ~ nope")
    bad = _original().frame.with_columns(w=pl.Series([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(DataError, match="'w' of the released file"):
        weighted_estimates(_original(), bad, totals=["region"])


def test_summary_and_frame_columns() -> None:
    res = weighted_estimates(_original(), _original(), totals=["region"], means=["income"])
    assert res.to_frame().columns == [
        "kind", "variable", "category", "original", "released", "relative_difference",
        "ci_overlap",
    ]  # fmt: skip
    text = str(res.summary())
    assert "loss" in text and "total region" in text and "mean income" in text


def test_registered_as_an_ru_map_loss() -> None:
    assert "weighted_estimates" in LOSS_MEASURES
    measure = loss_measure("weighted_estimates")
    md = _original()
    assert measure(md, md) == 0.0
    released = md.with_frame(md.frame.with_columns(region=pl.Series(["N", None, "S", "S"])))
    # region: 3/8 of the weight lost to missing; sex and income unchanged: (3/8 + 0 + 0) / 3
    assert measure(md, released) == pytest.approx(0.125)
