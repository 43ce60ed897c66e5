"""Rank swapping: window bound, exact marginals, the sdcMicro variant."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError, VerificationError
from sdckit.masking._rank_swapping import RankSwapping, rank_swapping
from sdckit.protection import Protected


@given(
    values=st.lists(st.integers(-50, 50), min_size=2, max_size=120),
    p=st.floats(0.0, 30.0),
    seed=st.integers(0, 1000),
)
def test_window_and_marginals(values: list[int], p: float, seed: int) -> None:
    df = pl.DataFrame({"x": values, "y": values[::-1]})
    md = Microdata(df, numeric=["x", "y"])
    method = RankSwapping(p=p, seed=seed)
    res = method.apply(md)
    method.verify(md, res)  # marginals identical, rank distance <= window
    out = res.data
    assert sorted(out["x"].to_list()) == sorted(values)
    assert res.details["window"]["x"] == int(np.floor(p * len(values) / 100))


def test_each_value_moves_within_window_on_distinct_values() -> None:
    x = np.arange(1000, dtype=float)
    out = rank_swapping(pl.DataFrame({"x": x}), variables=["x"], p=2, seed=5).data["x"].to_numpy()
    assert np.abs(out - x).max() <= 20
    assert np.count_nonzero(out != x) > 900  # nearly every value swapped


def test_zero_window_changes_nothing() -> None:
    df = pl.DataFrame({"x": [3.0, 1.0, 2.0]})
    res = rank_swapping(df, variables=["x"], p=0, seed=1)
    assert res.n_changed_records == 0


def test_missing_values_stay() -> None:
    df = pl.DataFrame({"x": [1.0, None, 3.0, 4.0, None, 6.0]})
    out = rank_swapping(df, variables=["x"], p=50, seed=2).data
    assert out["x"].is_null().to_list() == df["x"].is_null().to_list()


def test_sdcmicro_variant_codes_tails_and_keeps_others() -> None:
    x = np.arange(100, dtype=float)
    res = RankSwapping(variables=["x"], method="sdcmicro", seed=1).apply(pl.DataFrame({"x": x}))
    out = res.data["x"].to_numpy()
    # top and bottom 5 values replaced by their means, not swapped
    np.testing.assert_allclose(np.sort(out)[-5:], np.mean(x[-5:]))
    np.testing.assert_allclose(np.sort(out)[:5], np.mean(x[:5]))
    middle = np.sort(out)[5:-5]
    np.testing.assert_array_equal(middle, x[5:-5])
    # r0 = 0.95 window: sqrt(2 var (1 - 0.95)) / range of the middle values, in ranks
    mid = x[5:-5]
    fraction = np.sqrt(2 * mid.var(ddof=1) * 0.05) / (mid[-1] - mid[0])
    assert res.details["window"]["x"] == int(np.floor(90 * fraction)) - 1


def test_errors() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    with pytest.raises(ColumnError, match="not numeric"):
        rank_swapping(df, variables=["s"])
    with pytest.raises(ParameterError, match="one of"):
        RankSwapping(variables=["x"], method="sdcmicro", p=5, r0=0.9).apply(df)
    with pytest.raises(ParameterError, match="'p'"):
        rank_swapping(df, variables=["x"], p=150)
    with pytest.raises(ParameterError, match="'top_percent' parameter of RankSwapping"):
        RankSwapping(variables=["x"], top_percent=60).apply(df)
    with pytest.raises(ColumnError, match=r"'variables' parameter of RankSwapping .* 'xx'"):
        RankSwapping(variables=["xx"]).apply(df)


def test_verify_reports_what_failed() -> None:
    method, md = RankSwapping.contract_example()
    result = method.apply(md)
    method.verify(md, result)
    scaled = result.microdata.frame.with_columns(pl.col("income") * 2)
    with pytest.raises(VerificationError, match="RankSwapping: the distribution of 'income'"):
        method.verify(md, Protected.from_frames(md, scaled, method))
    reversed_ = md.frame.with_columns(pl.col("savings").sort(descending=True))
    with pytest.raises(VerificationError, match="'savings' moved further than the rank window"):
        method.verify(md, Protected.from_frames(md, reversed_, method, details=result.details))


def test_large_integers_are_swapped_exactly() -> None:
    values = [2**60 + i for i in range(50)]
    df = pl.DataFrame({"x": values})
    out = rank_swapping(df, variables=["x"], p=20, seed=3).data
    assert out["x"].dtype == pl.Int64
    assert sorted(out["x"].to_list()) == values


def test_nan_kept_as_nan() -> None:
    df = pl.DataFrame({"x": [1.0, float("nan"), 3.0, 4.0, None, 6.0]})
    out = rank_swapping(df, variables=["x"], p=50, seed=2).data
    assert out["x"].is_nan().fill_null(False).to_list() == [False, True, False, False, False, False]
    assert out["x"].is_null().to_list() == [False, False, False, False, True, False]


def test_twin_takes_variables_like_the_class() -> None:
    # `variables` once meant "got multiple values for keyword argument 'variables'"
    rng = np.random.default_rng(4)
    df = pl.DataFrame({"income": rng.normal(3000, 500, 100), "savings": rng.normal(800, 90, 100)})
    md = Microdata(df, numeric=["income", "savings"])
    for data in (df, md):
        res = rank_swapping(data, variables=["income"], p=10, seed=1)
        assert list(res.changed) == ["income"]
        assert res.data["savings"].equals(df["savings"])
        assert sorted(res.data["income"]) == sorted(df["income"])
    by_class = RankSwapping(variables=["income"], p=10, seed=1).apply(md)
    assert by_class.microdata.frame.equals(
        rank_swapping(md, variables=["income"], p=10, seed=1).data
    )
    with pytest.raises(ParameterError, match=r"Did you mean 'variables'\?"):
        rank_swapping(df, variabels=["income"])
