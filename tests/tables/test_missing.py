"""Missing codes in table dimensions: an error with a fix, a category of their own, or dropped."""

from __future__ import annotations

import polars as pl
import pytest

from sdckit.errors import DataError, ParameterError
from sdckit.tables import Hierarchy, Table

DF = pl.DataFrame(
    {
        "region": ["N1", "N1", None, "S1", None, "S1"],
        "sex": ["f", "m", "f", None, "m", "f"],
        "v": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
        "w": [1.0, 1.0, 2.0, 1.0, 2.0, 1.0],
    }
)
REGION = Hierarchy.from_dict({"Total": ["N", "S"], "N": ["N1"], "S": ["S1"]})


def test_missing_codes_are_an_error_that_names_the_fix() -> None:
    with pytest.raises(DataError) as info:
        Table.from_microdata(DF, ["region", "sex"], "v")
    message = str(info.value)
    assert "'region'" in message and 'missing = "category"' in message and '"drop"' in message
    with pytest.raises(ParameterError, match="'missing'"):
        Table.from_microdata(DF, ["region"], "v", missing="ignore")


def test_missing_codes_as_a_category() -> None:
    t = Table.from_microdata(DF, ["region", "sex"], "v", missing="category")
    assert "(missing)" in t.hierarchies[0].codes and "(missing)" in t.hierarchies[1].codes
    assert t.values[t.cell(region="(missing)", sex="Total")] == 20
    assert t.values[t.cell(region="(missing)", sex="f")] == 4
    assert t.values[t.cell(region="S1", sex="(missing)")] == 8
    assert t.values[0] == 63 and t.records_dropped == 0
    t.check_additivity()


def test_missing_category_joins_a_given_hierarchy_under_its_total() -> None:
    t = Table.from_microdata(DF, {"region": REGION}, "v", weight="w", missing="category")
    h = t.hierarchies[0]
    assert h.codes == ("Total", "N", "N1", "S", "S1", "(missing)")
    assert h.parent[h.index["(missing)"]] == 0
    assert t.values[t.cell(region="(missing)")] == 2 * 4 + 2 * 16
    assert t.n_contributors[t.cell(region="(missing)")] == 2


def test_missing_codes_dropped_and_counted() -> None:
    t = Table.from_microdata(DF, ["region", "sex"], "v", weight="w", missing="drop")
    assert t.records_dropped == 3  # two without a region, one without a sex
    assert t.values[0] == 1 + 2 + 32
    assert t.n_contributors[0] == 3
    assert t.summary().to_dict()["records dropped (missing codes or values)"] == 3
    with pytest.raises(DataError, match="Every record"):
        Table.from_microdata(DF.filter(pl.col("region").is_null()), ["region"], missing="drop")


def test_a_real_category_called_missing_is_not_merged() -> None:
    clash = DF.with_columns(pl.Series("sex", ["(missing)", "m", "f", None, "m", "f"]))
    with pytest.raises(DataError, match="already has the code"):
        Table.from_microdata(clash, ["sex"], missing="category")


# records without a value (item nonresponse) in a magnitude table
GAPS = DF.with_columns(pl.Series("v", [1.0, None, 4.0, float("nan"), 16.0, 32.0]))


def test_missing_values_are_an_error_that_names_the_fix() -> None:
    with pytest.raises(DataError) as info:
        Table.from_microdata(GAPS, ["sex"], "v", missing="category")
    assert "'v'" in str(info.value) and 'missing_value = "drop"' in str(info.value)
    with pytest.raises(ParameterError, match="'missing_value'"):
        Table.from_microdata(GAPS, ["sex"], "v", missing="category", missing_value="zero")


def test_missing_values_dropped_with_their_weights_and_counted() -> None:
    t = Table.from_microdata(
        GAPS, ["sex"], "v", weight="w", missing="category", missing_value="drop"
    )
    # left out: record 2 (null) and record 4 (NaN); the weights of the others stay theirs
    assert t.records_dropped == 2
    assert t.values[0] == 1 * 1 + 2 * 4 + 2 * 16 + 1 * 32
    assert t.values[t.cell(sex="f")] == 1 + 8 + 32 and t.n_contributors[t.cell(sex="f")] == 3
    assert t.values[t.cell(sex="m")] == 32 and t.n_contributors[t.cell(sex="m")] == 1
    assert "(missing)" not in t.hierarchies[0].codes  # the record without a sex had no value
    t.check_additivity()


def test_both_rules_together_equal_the_table_of_the_complete_records() -> None:
    """Dropping codes and values composes: the weights follow the records kept (the masks
    of the two rules are over the same records)."""
    both = Table.from_microdata(
        GAPS, ["region", "sex"], "v", weight="w", missing="drop", missing_value="drop"
    )
    complete = GAPS.filter(
        pl.col("region").is_not_null() & pl.col("sex").is_not_null() & pl.col("v").is_not_nan()
    )
    plain = Table.from_microdata(complete, ["region", "sex"], "v", weight="w")
    assert both.records_dropped == GAPS.height - complete.height == 4
    assert both.values.tolist() == plain.values.tolist()
    assert both.n_contributors.tolist() == plain.n_contributors.tolist()
    assert both.top.tolist() == plain.top.tolist()


def test_a_value_missing_everywhere_is_an_error() -> None:
    empty = DF.with_columns(pl.lit(None, dtype=pl.Float64).alias("v"))
    with pytest.raises(DataError, match="missing in every record"):
        Table.from_microdata(empty, ["region"], "v", missing="category", missing_value="drop")
