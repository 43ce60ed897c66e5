"""Column roles: validation once, clear errors, caller's data untouched."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit import ColumnError, DataError, Microdata, ParameterError, SdcError, SdcWarning
from sdckit.risk import frequencies, individual_risk


def _df(**extra) -> pl.DataFrame:
    base = {"a": [1, 2, 1, 2], "b": ["x", "y", "x", "x"], "w": [1.0, 2.0, 3.0, 4.0]}
    base.update(extra)
    return pl.DataFrame(base)


def test_roles_and_repr() -> None:
    md = Microdata(_df(), keys=["a", "b"], weight="w")
    assert md.keys == ("a", "b") and md.weight == "w" and md.n_records == 4
    assert "keys=['a', 'b']" in repr(md)
    assert md.roles()["weight"] == "w"


def test_unknown_column_is_named_with_suggestion() -> None:
    with pytest.raises(ColumnError, match=r"'bb'.*Did you mean 'b'"):
        Microdata(_df(), keys=["a", "bb"])


def test_errors_are_sdc_errors() -> None:
    assert issubclass(ColumnError, SdcError) and issubclass(DataError, ValueError)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ([1.0, -2.0, 3.0, 4.0], "zero or negative"),
        ([1.0, 0.0, 3.0, 4.0], "zero or negative"),
        ([1.0, None, 3.0, 4.0], "missing"),
        ([1.0, float("nan"), 3.0, 4.0], "missing"),
        ([1.0, float("inf"), 3.0, 4.0], "infinite"),
    ],
)
def test_bad_weights(weights, match) -> None:
    with pytest.raises(DataError, match=match):
        Microdata(_df(w=weights), keys=["a"], weight="w")


def test_weight_must_be_numeric() -> None:
    with pytest.raises(ColumnError, match="not numeric"):
        Microdata(_df(), keys=["a"], weight="b")


def test_empty_and_single_record() -> None:
    with pytest.raises(DataError, match="no records"):
        Microdata(_df().head(0), keys=["a"])
    with pytest.raises(DataError, match="single record"):
        Microdata(_df().head(1), keys=["a"])


def test_all_missing_key() -> None:
    df = _df(c=[None, None, None, None])
    with pytest.raises(DataError, match="'c' is missing for every record"):
        frequencies(df, keys=["a", "c"])


def test_duplicate_column_names() -> None:
    pdf = pd.DataFrame([[1, 2], [3, 4]], columns=["a", "a"])
    with pytest.raises(ColumnError, match="duplicate column names"):
        Microdata(pdf, keys=["a"])


def test_two_roles_for_one_column() -> None:
    with pytest.raises(ColumnError, match="two roles"):
        Microdata(_df(), keys=["a", "w"], weight="w")


def test_keys_parameter_errors() -> None:
    with pytest.raises(ParameterError, match="more than once"):
        Microdata(_df(), keys=["a", "a"])
    with pytest.raises(ColumnError, match="needs keys"):
        frequencies(_df())


def test_continuous_key_warns() -> None:
    df = _df(c=[0.5, 1.25, 2.75, 3.5])
    with pytest.warns(SdcWarning, match="looks continuous"):
        frequencies(df, keys=["a", "c"])


def test_too_many_levels_warns() -> None:
    df = pl.DataFrame({"a": np.arange(50), "b": np.zeros(50, dtype=int)})
    with pytest.warns(SdcWarning, match="50 levels"):
        Microdata(df, keys=["a", "b"], max_levels=20).key_codes  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Microdata(df, keys=["a", "b"]).key_codes  # noqa: B018


def test_missing_household_or_strata() -> None:
    with pytest.raises(DataError, match="household column 'h'"):
        Microdata(_df(h=[1, None, 2, 2]), keys=["a"], household="h")


def test_numeric_role_must_be_numeric() -> None:
    with pytest.raises(ColumnError, match="numeric variable 'b'"):
        Microdata(_df(), numeric=["b"])


def test_caller_data_never_modified() -> None:
    pdf = pd.DataFrame({"a": [1, None, 1], "w": [1.0, 2.0, 3.0]}, index=[10, 20, 30])
    before = pdf.copy(deep=True)
    res = individual_risk(pdf, keys=["a"], weight="w")
    res.to_frame()
    pd.testing.assert_frame_equal(pdf, before)


def test_not_a_frame() -> None:
    with pytest.raises(DataError, match="cannot read"):
        Microdata([1, 2, 3], keys=["a"])


def test_lazy_frame_accepted() -> None:
    md = Microdata(_df().lazy(), keys=["a"])
    assert md.n_records == 4


def test_nan_household_is_missing() -> None:
    with pytest.raises(DataError, match="household column 'h'"):
        Microdata(_df(h=[1.0, float("nan"), 2.0, 2.0]), keys=["a"], household="h")


def test_large_integer_keys_and_signed_zero() -> None:
    big = pl.DataFrame({"k": pl.Series([2**60 + 1, 2**60 + 2, 2**60 + 3, None])})
    assert frequencies(big, keys=["k"], missing="category").fk.tolist() == [1, 1, 1, 1]
    zeros = pl.DataFrame({"k": [0.0, -0.0, 1.0]})
    assert frequencies(zeros, keys=["k"]).fk.tolist() == [2, 2, 1]


def test_mixed_object_column() -> None:
    pdf = pd.DataFrame({"a": ["x", 1, "y"], "b": [1, 2, 3]})
    with pytest.raises(DataError, match="single type"):
        Microdata(pdf, keys=["a"])


def test_key_suppressed_everywhere_by_a_method_is_allowed() -> None:
    md = Microdata(_df(), keys=["a", "b"])
    emptied = md.with_frame(md.frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("a")))
    assert frequencies(emptied).fk.tolist() == [3, 1, 3, 3]


def test_nested_key_columns_are_refused_without_a_traceback(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sdckit.io import read_data

    table = pa.table({"a": [[1], [2], [1]], "b": [{"x": 1}, {"x": 2}, {"x": 1}], "c": [1, 2, 3]})
    pq.write_table(table, tmp_path / "nested.parquet")
    frame = read_data(tmp_path / "nested.parquet")
    for col in ("a", "b"):
        with pytest.raises(ColumnError, match=f"'{col}' holds nested values"):
            Microdata(frame, keys=[col, "c"])


def test_release_roles_are_validated() -> None:
    df = pl.DataFrame(
        {"h": [1, 1, 2, 2], "region": ["a", "a", "b", "c"], "d": [1, 1, 2, 3], "sex": [1, 2, 1, 2]}
    )
    with pytest.raises(ColumnError, match="linked to 'sex2'"):
        Microdata(df, keys=["region", "sex"], linked={"d": "sex2"})
    with pytest.raises(ColumnError, match="need the household id"):
        Microdata(df, keys=["region", "sex"], household_level=["region"])
    with pytest.raises(DataError, match="more than one value in 1 household"):
        Microdata(df, keys=["region", "sex"], household="h", household_level=["region"])
    md = Microdata(
        df.with_columns(pl.Series("region", ["a", "a", "b", "b"])),
        keys=["region", "sex"], household="h", household_level=["region"], linked={"d": "region"},
    )  # fmt: skip
    assert md.linked == {"d": "region"} and md.linked_to("region") == ("d",)
    assert md.household_level == ("region",)
    with pytest.raises(ColumnError, match="two roles"):
        Microdata(df, keys=["region", "sex"], identifiers=["sex"])
