"""Risk over one's own key combinations, each with its own k; mu-ARGUS' generated combinations."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError
from sdckit.risk import (
    KeyCombination,
    combination_risk,
    combinations_from_levels,
    combinations_up_to,
    frequencies,
    key_combinations,
)

DF = pl.DataFrame(
    {
        "sex": [1, 1, 2, 2, 2, 1],
        "age": [3, 3, 3, 4, 4, None],
        "reg": ["a", "a", "b", "b", "c", "c"],
    }
)


def test_hand_computed_fk_and_violations() -> None:
    res = combination_risk(DF, [{"keys": ["sex", "age"], "k": 3}, (["reg"], 2), ["sex"]], k=4)
    # sex x age with the missing age a wildcard: (1,3) x2 + (1,None) -> 3, 3, (2,3) 1,
    # (2,4) 2, (1,None) matches both (1,3) -> 3
    assert res.fk[:, 0].tolist() == [3, 3, 1, 2, 2, 3]
    assert res.fk[:, 1].tolist() == [2, 2, 2, 2, 2, 2]
    assert res.fk[:, 2].tolist() == [3, 3, 3, 3, 3, 3]
    assert [c.k for c in res.combinations] == [3, 2, 4]
    assert res.records_below.tolist() == [3, 0, 6]
    assert res.classes_below.tolist() == [2, 0, 2]
    assert res.unsafe[:, 0].tolist() == [False, False, True, True, True, False]
    assert res.unsafe_records.all() and not res.is_safe
    frame = res.to_frame()
    assert frame["combinations_broken"].to_list() == [1, 1, 2, 2, 2, 1]
    table = res.combinations_frame()
    assert table["keys"].to_list() == ["sex x age", "reg", "sex"]
    summary = res.summary().to_dict()
    assert summary["records breaking a combination"] == 6


def test_missing_as_a_category_counts_like_frequencies() -> None:
    res = combination_risk(DF, [["sex", "age"]], missing="category")
    want = frequencies(DF, keys=["sex", "age"], missing="category").fk
    assert res.fk[:, 0].tolist() == want.tolist()
    assert res.fk[:, 0].tolist() == [2, 2, 1, 2, 2, 1]


def test_equals_frequencies_on_each_combination_and_keeps_the_callers_frame() -> None:
    md = Microdata(DF.to_pandas(), keys=["sex", "age", "reg"])
    res = combination_risk(md, [["age", "reg"], ["sex", "reg"]])
    for j, keys in enumerate((["age", "reg"], ["sex", "reg"])):
        assert res.fk[:, j].tolist() == frequencies(DF, keys=keys).fk.tolist()
    assert isinstance(res.to_frame(), pd.DataFrame)


def test_a_key_suppressed_everywhere_matches_every_record() -> None:
    df = DF.with_columns(pl.lit(None, dtype=pl.Int64).alias("age"))
    res = combination_risk(df, [(["age"], 7), (["age"], 6)])
    assert res.fk[:, 0].tolist() == [6.0] * 6
    assert res.records_below.tolist() == [6, 0]


def test_combinations_name_key_variables_only() -> None:
    md = Microdata(DF, keys=["sex", "age"])
    with pytest.raises(ColumnError, match="'reg'"):
        combination_risk(md, [["sex", "reg"]])


@pytest.mark.parametrize(
    "spec",
    ["sex", [], [["sex", "sex"]], [{"keys": ["sex"], "k": 0}], [{"keys": ["sex"], "t": 2}]],
)
def test_bad_combinations(spec: object) -> None:
    with pytest.raises(ParameterError):
        key_combinations(spec)


def test_key_combinations_forms() -> None:
    got = key_combinations(
        [KeyCombination(("a",), 5), {"keys": "b"}, (["a", "b"], 3), ["c", "d"]], k=2
    )
    assert got == (
        KeyCombination(("a",), 5),
        KeyCombination(("b",), 2),
        KeyCombination(("a", "b"), 3),
        KeyCombination(("c", "d"), 2),
    )


# ---------------------------------------------------------------------- generated (mu-ARGUS)
@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        ({"a": 1, "b": 1, "c": 2}, [("a", "b"), ("a", "c"), ("b", "c")]),
        ({"a": 1, "b": 2, "c": 2}, [("a", "b"), ("a", "c")]),
        ({"a": 1, "b": 3, "x": 0}, [("a", "b")]),
        ({"b": 2, "a": 1}, [("a", "b")]),
        ({"a": 1, "b": 1}, [("a",), ("b",)]),
        (
            {"sex": 1, "age": 2, "region": 2, "job": 3},
            [("sex", "age", "region"), ("sex", "age", "job"), ("sex", "region", "job")],
        ),
    ],
)
def test_combinations_from_identification_levels(
    levels: dict[str, int], expected: list[tuple[str, ...]]
) -> None:
    got = combinations_from_levels(levels, k=3)
    assert [c.keys for c in got] == expected
    assert {c.k for c in got} == {3}


def test_identification_levels_need_an_identifying_key() -> None:
    with pytest.raises(ParameterError, match="above 0"):
        combinations_from_levels({"a": 0})
    with pytest.raises(ParameterError):
        combinations_from_levels({"a": -1})


def test_combinations_up_to_a_dimension() -> None:
    got = combinations_up_to(["a", "b", "c"], [5, 3])
    assert [(c.keys, c.k) for c in got] == [
        (("a",), 5),
        (("b",), 5),
        (("c",), 5),
        (("a", "b"), 3),
        (("a", "c"), 3),
        (("b", "c"), 3),
    ]
    with pytest.raises(ParameterError):
        combinations_up_to(["a"], [2, 2])
