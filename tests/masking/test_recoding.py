"""Global recoding, interval recoding and top / bottom coding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.masking.recoding import (
    GlobalRecoding,
    IntervalRecoding,
    TopBottomCoding,
    global_recode,
    recode_intervals,
    top_bottom_code,
)


# ---------------------------------------------------------------------- global recoding
def test_global_recode_groups_and_keeps_unknown() -> None:
    df = pl.DataFrame({"edu": [1, 2, 3, 4, 9, None], "x": [1.0, 2, 3, 4, 5, 6]})
    res = global_recode(df, mapping={"edu": {1: 1, 2: 1, 3: 2, 4: 2}})
    assert res.data["edu"].to_list() == [1, 1, 2, 2, 9, None]
    assert res.data["edu"].dtype == pl.Int64
    assert res.changed == {"edu": 3}
    assert res.data["x"].to_list() == df["x"].to_list()


def test_global_recode_round_trip() -> None:
    df = pl.DataFrame({"region": ["a", "b", "c", "a", None]})
    forward = {"a": "north", "b": "south", "c": "east"}
    back = {v: k for k, v in forward.items()}
    coded = global_recode(df, mapping={"region": forward}).data
    assert coded["region"].to_list() == ["north", "south", "east", "north", None]
    again = global_recode(coded, mapping={"region": back}).data
    assert again.equals(df, null_equal=True)


def test_global_recode_hierarchy_levels() -> None:
    df = pl.DataFrame({"place": ["z11", "z12", "z21", "z3", "other"]})
    levels = [{"z11": "z1", "z12": "z1", "z21": "z2"}, {"z1": "Z", "z2": "Z", "z3": "Z"}]
    method = GlobalRecoding(mapping={"place": levels})
    md = Microdata(df, keys=["place"])
    res = method.apply(md)
    assert res.data["place"].to_list() == ["Z", "Z", "Z", "Z", "other"]
    method.verify(md, res)


def test_global_recode_type_change_to_text() -> None:
    df = pd.DataFrame({"age": [1, 2, 3]}, index=["a", "b", "c"])
    res = global_recode(df, mapping={"age": {1: "young", 2: "young"}})
    out = res.data
    assert list(out.index) == ["a", "b", "c"]
    assert out["age"].tolist() == ["young", "young", "3"]


def test_global_recode_strict_and_errors() -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match="'a'"):
        global_recode(df, mapping={"a": {1: 0, 2: 0}}, strict=True)
    assert global_recode(df, mapping={"a": {1: 0, 2: 0, 3: 1}}, strict=True).changed == {"a": 3}
    with pytest.raises(ColumnError, match="'b'"):
        global_recode(df, mapping={"b": {1: 0}})
    with pytest.raises(ParameterError, match="mapping"):
        global_recode(df, mapping={})
    with pytest.raises(ParameterError, match="mapping"):
        global_recode(df, mapping={"a": "x"})  # type: ignore[dict-item]
    # mapping keys given as text (a TOML job file) are read in the column's type
    assert global_recode(df, mapping={"a": {"1": 5}}).data["a"].to_list() == [5, 2, 3]
    with pytest.raises(ParameterError, match="not numbers"):
        global_recode(df, mapping={"a": {"x": "one"}})
    with pytest.raises(ColumnError, match="numeric"):
        GlobalRecoding(mapping={"v": {1.0: 0.0}}).apply(df, numeric=["v"])


def test_global_recode_text_keys_that_read_as_the_same_number() -> None:
    md = Microdata(pl.DataFrame({"code": [1, 2, 3, 1]}), keys=["code"])
    # a job file gives mapping keys as text: "01" and "1" are one number of an integer column
    with pytest.raises(ParameterError) as info:
        GlobalRecoding(mapping={"code": {"01": 9, "1": 8, "2": 7}}).apply(md)
    message = str(info.value)
    assert message.startswith("2 old values of the mapping of 'code' are the same number")
    assert "Int64" in message
    assert "01" not in message and "'1'" not in message  # category codes are data: not quoted
    with pytest.raises(ParameterError, match=r"4 old values .* same number"):
        GlobalRecoding(mapping={"code": {"01": 9, "1": 9, "2": 9, "002": 1}}).apply(md)
    with pytest.raises(ParameterError, match=r"2 old values .* same number"):
        GlobalRecoding(mapping={"code": {"1": 0, 1: 5}}).apply(md)
    floats = Microdata(pl.DataFrame({"v": [1.0, 2.5]}))
    with pytest.raises(ParameterError, match=r"2 old values .* same number .*\(Float64\)"):
        GlobalRecoding(mapping={"v": {"1.0": 0, "1": 0}}).apply(floats)
    # text keys that are distinct numbers recode, and verify reads them the same way
    method = GlobalRecoding(mapping={"code": {"01": 9, "2": 9}})
    result = method.apply(md)
    assert result.data["code"].to_list() == [9, 9, 3, 9]
    method.verify(md, result)
    # a float column recoded to an integer target is verified by number, not by text
    method = GlobalRecoding(mapping={"v": {"2.5": 0}})
    result = method.apply(floats)
    assert result.data["v"].to_list() == [1.0, 0.0]
    method.verify(floats, result)
    # a text column with a number next to text among the old values: a clear error
    text = Microdata(pl.DataFrame({"t": ["1", "2"]}))
    with pytest.raises(ParameterError, match="'t' lists old values of another type"):
        GlobalRecoding(mapping={"t": {1: "a", "1": "b"}}).apply(text)


def test_global_recode_verify_detects_wrong_target() -> None:
    df = pl.DataFrame({"a": [1, 2, 3]})
    method = GlobalRecoding(mapping={"a": {1: 0}})
    md = Microdata(df, keys=["a"])
    res = method.apply(md)
    bad = res.microdata.with_frame(pl.DataFrame({"a": [5, 2, 3]}))
    with pytest.raises(AssertionError):
        method.verify(md, type(res)(bad, res.method, res.params, {}, res.changed_records))


# ---------------------------------------------------------------------- intervals
def test_intervals_explicit_breaks_and_labels() -> None:
    df = pl.DataFrame({"age": [0, 17, 18, 64, 65, 120, None]})
    res = recode_intervals(df, columns="age", breaks=[0, 18, 65, 120])
    assert res.data["age"].to_list() == [
        "[0, 18)",
        "[0, 18)",
        "[18, 65)",
        "[18, 65)",
        "[65, 120]",
        "[65, 120]",
        None,
    ]
    right = recode_intervals(df, columns="age", breaks=[0, 18, 65, 120], closed="right")
    assert right.data["age"].to_list()[:6] == ["[0, 18]"] * 3 + ["(18, 65]"] * 2 + ["(65, 120]"]
    named = recode_intervals(
        df, columns="age", breaks=[0, 18, 65, 120], labels=["child", "adult", "senior"]
    )
    assert named.data["age"].to_list()[:6] == ["child"] * 2 + ["adult"] * 2 + ["senior"] * 2


def test_intervals_equal_width_and_quantile() -> None:
    x = np.arange(100, dtype=float)
    df = pl.DataFrame({"x": x, "y": x**2})
    res = recode_intervals(df, columns=["x", "y"], n_bins=4, method="quantile")
    for col in ("x", "y"):
        assert sorted(res.data[col].value_counts()["count"].to_list()) == [25, 25, 25, 25]
    assert res.details["breaks"]["x"] == pytest.approx([0, 24.75, 49.5, 74.25, 99])
    width = recode_intervals(df, columns="y", n_bins=3)
    edges = width.details["breaks"]["y"]
    assert np.allclose(np.diff(edges), 99**2 / 3)


def test_intervals_numeric_role_becomes_key() -> None:
    df = pl.DataFrame({"sex": [1, 2, 1], "age": [10.0, 50.0, 90.0]})
    md = Microdata(df, keys=["sex"], numeric=["age"])
    method = IntervalRecoding(columns="age", breaks=[0, 50, 100])
    res = method.apply(md)
    assert res.microdata.keys == ("sex", "age")
    assert res.microdata.numeric == ()
    assert res.details["roles_changed"]
    method.verify(md, res)


def test_intervals_errors() -> None:
    df = pl.DataFrame({"x": [1.0, 5.0, 9.0], "s": ["a", "b", "c"]})
    with pytest.raises(DataError, match="outside"):
        recode_intervals(df, columns="x", breaks=[2, 10])
    with pytest.raises(ParameterError, match="increasing"):
        recode_intervals(df, columns="x", breaks=[0, 5, 5, 10])
    with pytest.raises(ParameterError, match="n_bins"):
        recode_intervals(df, columns="x")
    with pytest.raises(ParameterError, match="labels"):
        recode_intervals(df, columns="x", breaks=[0, 5, 10], labels=["a"])
    with pytest.raises(ColumnError, match="'s'"):
        recode_intervals(df, columns="s", n_bins=2)
    with pytest.raises(ParameterError, match="method"):
        recode_intervals(df, columns="x", n_bins=2, method="kmeans")


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60),
    st.integers(1, 6),
    st.sampled_from(["equal_width", "quantile"]),
)
def test_property_intervals_contain_values(values: list[float], bins: int, how: str) -> None:
    df = pl.DataFrame({"x": values})
    method = IntervalRecoding(columns="x", n_bins=bins, method=how)
    md = Microdata(df)
    res = method.apply(md)
    method.verify(md, res)
    assert res.data["x"].null_count() == 0
    assert res.data["x"].n_unique() <= bins


# ---------------------------------------------------------------------- top / bottom coding
def test_top_coding_threshold_and_mean() -> None:
    df = pl.DataFrame({"inc": [10.0, 20.0, 30.0, 400.0, 600.0, None]})
    res = top_bottom_code(df, columns="inc", upper=100)
    assert res.data["inc"].to_list() == [10.0, 20.0, 30.0, 100.0, 100.0, None]
    mean = top_bottom_code(df, columns="inc", upper=100, replacement="mean")
    assert mean.data["inc"].to_list() == [10.0, 20.0, 30.0, 500.0, 500.0, None]
    given_value = top_bottom_code(df, columns="inc", upper=100, replacement=999)
    assert given_value.data["inc"].to_list()[3:5] == [999.0, 999.0]
    both = top_bottom_code(df, columns="inc", upper=100, lower=15, replacement=(0, 1000))
    assert both.data["inc"].to_list() == [0.0, 20.0, 30.0, 1000.0, 1000.0, None]
    assert both.changed == {"inc": 3}


def test_top_coding_weighted_mean_and_quantile() -> None:
    df = pl.DataFrame(
        {"inc": [1.0, 2.0, 3.0, 4.0, 100.0, 200.0], "w": [1.0, 1.0, 1.0, 1.0, 3.0, 1.0]}
    )
    res = top_bottom_code(
        df, columns="inc", upper=50, replacement="mean", weight="w", weighted=True
    )
    assert res.data["inc"].to_list()[4:] == [125.0, 125.0]  # (3*100 + 200) / 4
    md = Microdata(df, numeric=["inc"], weight="w")
    method = TopBottomCoding(columns="inc", upper=0.5, lower=0.2, quantile=True)
    out = method.apply(md)
    method.verify(md, out)
    q_hi, q_lo = np.quantile(df["inc"].to_numpy(), [0.5, 0.2])
    vals = out.data["inc"].to_numpy()
    assert vals.max() == q_hi and vals.min() == q_lo


def test_top_coding_keeps_integer_type() -> None:
    df = pd.DataFrame({"x": [1, 5, 9, 50]}, index=[4, 3, 2, 1])
    res = top_bottom_code(df, columns="x", upper=10, lower=2)
    assert res.data["x"].tolist() == [2, 5, 9, 10]
    assert list(res.data.index) == [4, 3, 2, 1]
    mean = top_bottom_code(df, columns="x", upper=4, replacement="mean")
    assert mean.data["x"].tolist() == [1.0, 64 / 3, 64 / 3, 64 / 3]


def test_declared_parameters_admit_every_valid_form() -> None:
    """Infinite edges (also per column), numeric labels, pairs as lists (job files)."""
    df = pl.DataFrame({"x": [1.0, 5.0, 9.0, 12.0], "y": [1, 2, 3, 4]})
    per_column = recode_intervals(
        df, columns=["x", "y"], breaks={"x": [-np.inf, 5, np.inf], "y": [0, 10]}
    )
    assert per_column.data["x"].to_list() == ["[-inf, 5)", "[5, inf]", "[5, inf]", "[5, inf]"]
    coded = recode_intervals(df, columns="x", breaks=np.array([0.0, 5.0, 20.0]), labels=[1, 2])
    assert coded.data["x"].to_list() == ["1", "2", "2", "2"]
    pair = top_bottom_code(df, columns="x", upper=10, lower=2, replacement=[0, 100])
    assert pair.data["x"].to_list() == [0.0, 5.0, 9.0, 100.0]
    assert top_bottom_code(df, columns="y", upper=np.int64(3)).data["y"].to_list() == [1, 2, 3, 3]
    with pytest.raises(ParameterError, match="'strict' parameter of GlobalRecoding"):
        global_recode(df, mapping={"y": {1: 0}}, strict=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="'replacement' parameter of TopBottomCoding"):
        top_bottom_code(df, columns="x", upper=10, replacement=np.inf)


def test_top_coding_errors() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="upper"):
        top_bottom_code(df, columns="x")
    with pytest.raises(ParameterError, match="pair"):
        top_bottom_code(df, columns="x", upper=2, lower=1, replacement=5)
    with pytest.raises(ParameterError, match="probability"):
        top_bottom_code(df, columns="x", upper=2, quantile=True)
    with pytest.raises(ParameterError, match="lower threshold"):
        top_bottom_code(df, columns="x", upper=1, lower=2)
    with pytest.raises(ColumnError, match="weight"):
        TopBottomCoding(columns="x", upper=2, weighted=True).apply(df)
    with pytest.raises(ColumnError, match="'y'"):
        top_bottom_code(df, columns="y", upper=2)


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60),
    st.floats(0.0, 1.0),
    st.sampled_from(["threshold", "mean"]),
)
def test_property_top_coding_bounds(values: list[float], q: float, how: str) -> None:
    df = pl.DataFrame({"x": values})
    md = Microdata(df, numeric=["x"])
    method = TopBottomCoding(columns="x", upper=q, quantile=True, replacement=how)
    res = method.apply(md)
    method.verify(md, res)
    out = res.data["x"].to_numpy()
    threshold = np.quantile(np.asarray(values), q)
    tail = np.asarray(values)[np.asarray(values) > threshold]
    top = threshold if how == "threshold" or len(tail) == 0 else tail.mean()
    assert out.max() <= max(threshold, top) + 1e-9 * max(1.0, abs(top))
    assert np.count_nonzero(out != np.asarray(values)) <= len(tail)
