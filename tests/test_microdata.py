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


# ------------------------------------------------------------------ household-wide variables
def _households(n_pairs: int = 10) -> pl.DataFrame:
    """``n_pairs`` households of two members, then two single-person households.

    ``region`` and ``hh_income`` are household-wide; ``tenure`` is missing for both members
    of household 0 (still household-wide); ``car`` is missing for one member of household 0
    only (not household-wide); ``sex`` and ``income`` vary; ``hh_size`` has no role.
    """
    h = [*np.repeat(np.arange(n_pairs), 2).tolist(), n_pairs, n_pairs + 1]
    n = len(h)
    per_household = np.arange(n_pairs + 2) % 3
    region = [f"r{per_household[i]}" for i in h]
    tenure = [None if i == 0 else int(per_household[i]) for i in h]
    car = [int(per_household[i]) for i in h]
    car[1] = None
    hh_income = [float(per_household[i]) * 1000.0 for i in h]
    hh_income[2:4] = [float("nan"), float("nan")]  # NaN for both members: missing for all
    return pl.DataFrame(
        {
            "h": h,
            "region": region,
            "tenure": tenure,
            "car": car,
            "sex": [i % 2 for i in range(n)],
            "hh_income": hh_income,
            "income": [float(i) for i in range(n)],
            "hh_size": [2] * (2 * n_pairs) + [1, 1],
            "w": [1.0] * n,
        }
    )


ROLES = {
    "keys": ["region", "tenure", "car", "sex"],
    "numeric": ["hh_income", "income"],
    "weight": "w",
}


def test_household_level_detected_with_missing_values() -> None:
    md = Microdata(_households(), household="h", **ROLES)
    # the household id, the weight and columns without a role are not candidates
    assert md.detect_household_level() == ("region", "tenure", "hh_income")
    assert md.household_level == ()  # detection does not change the declared roles
    # a household with a value for one member and none for the other is not constant
    df = _households().with_columns(pl.Series("tenure", [None, 1] + [1] * 20))
    assert "tenure" not in Microdata(df, household="h", **ROLES).detect_household_level()
    # as sensitive and linked variables too, in the order of the roles
    md = Microdata(
        _households(), household="h", keys=["sex", "region"], sensitive=["tenure"],
        linked={"car": "region"}, numeric=["hh_income"],
    )  # fmt: skip
    assert md.detect_household_level() == ("region", "hh_income", "tenure")


def test_household_level_needs_enough_households_and_a_household_id() -> None:
    # nine households of two members: constant by accident too often, nothing is found
    assert Microdata(_households(9), household="h", **ROLES).detect_household_level() == ()
    assert Microdata(_households(10), household="h", **ROLES).detect_household_level() != ()
    # without a household id nothing is found, and "auto" finds nothing without an error
    assert Microdata(_households(), **ROLES).detect_household_level() == ()
    assert Microdata(_households(), household_level="auto", **ROLES).household_level == ()
    # a declared list without a household id keeps its error
    with pytest.raises(ColumnError, match="need the household id"):
        Microdata(_households(), household_level=["region"], **ROLES)


def test_household_level_auto() -> None:
    md = Microdata(_households(), household="h", household_level="auto", **ROLES)
    assert md.household_level == ("region", "tenure", "hh_income")
    assert md.roles()["household_level"] == ["region", "tenure", "hh_income"]
    assert Microdata(md.frame, **md.roles()).household_level == md.household_level
    # "auto" is detection only: a declared column that is not household-wide is not kept
    assert "hh_size" not in md.household_level
    # with_frame (and a Microdata given new roles) accepts it too
    plain = Microdata(_households(), household="h", **ROLES)
    assert plain.with_frame(plain.frame, household_level="auto").household_level == (
        md.household_level
    )
    # new household-level variables given to with_frame are still checked
    with pytest.raises(DataError, match="'car' takes more than one value"):
        plain.with_frame(plain.frame, household_level=["car"])
    # a column named "auto" is given as a list
    df = _households().rename({"hh_size": "auto"})
    named = Microdata(df, household="h", household_level=["auto"], **ROLES)
    assert named.household_level == ("auto",)


def test_household_level_detection_is_vectorised() -> None:
    import time

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 6, size=350_000)
    h = np.repeat(np.arange(len(sizes)), sizes)
    n = len(h)
    df = pl.DataFrame(
        {
            "h": h,
            "region": np.repeat(rng.integers(0, 30, size=len(sizes)), sizes),
            "sex": rng.integers(0, 2, size=n),
            "age": rng.integers(0, 90, size=n),
            "hh_income": np.repeat(rng.normal(size=len(sizes)), sizes),
            "income": rng.normal(size=n),
        }
    ).sample(fraction=1.0, shuffle=True, seed=1)
    md = Microdata(
        df, keys=["region", "sex", "age"], numeric=["hh_income", "income"], household="h"
    )
    assert n > 1_000_000
    start = time.perf_counter()
    assert md.detect_household_level() == ("region", "hh_income")
    assert time.perf_counter() - start < 10.0
