"""Global recoding to a level of a generalisation hierarchy (objects and ARX CSV files)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ParameterError, VerificationError
from sdckit.hierarchies import GeneralisationHierarchy, HierarchyError
from sdckit.masking.recoding import GlobalRecoding, global_recode
from sdckit.protection import Protected

ARX = Path(__file__).parents[1] / "data" / "arx"

AGE = GeneralisationHierarchy.from_intervals(range(0, 100), widths=[10, 50])


def test_recode_to_levels_of_two_hierarchies() -> None:
    df = pl.DataFrame(
        {
            "age": [17, 23, 61, None, 99],
            "zip": ["0123", "0124", "0201", "0201", None],
            "x": [1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    zips = GeneralisationHierarchy.from_prefixes(["0123", "0124", "0201"])
    method = GlobalRecoding(hierarchies={"age": AGE, "zip": zips}, levels={"age": 1, "zip": 3})
    md = Microdata(df, keys=["age", "zip"])
    res = method.apply(md)
    assert res.data["age"].to_list() == ["[10, 20)", "[20, 30)", "[60, 70)", None, "[90, 100)"]
    assert res.data["zip"].to_list() == ["0***", "0***", "0***", "0***", None]
    assert res.data["x"].to_list() == df["x"].to_list()
    assert res.details["hierarchy_levels"] == {"age": 1, "zip": 3}
    assert res.details["mappings"]["zip"]["0201"] == "0***"
    method.verify(md, res)
    # one level for every variable
    top = GlobalRecoding(hierarchies={"age": AGE, "zip": zips}, levels=3).apply(md)
    assert set(top.data["age"].drop_nulls()) == {"*"}


def test_whole_floats_match_integer_values() -> None:
    h = GeneralisationHierarchy.from_table([[101, "1xx"], [102, "1xx"], [205, "2xx"]])
    df = pl.DataFrame({"person": [101.0, 205.0, 102.0, float("nan")]})
    out = global_recode(df, hierarchies={"person": h}, levels={"person": 1}, keys=["person"])
    assert out.data["person"].to_list() == ["1xx", "2xx", "1xx", None]


def test_arx_csv_path(tmp_path: Path) -> None:
    df = pl.DataFrame({"education": ["Masters", "HS-grad", "Preschool", "Doctorate"]})
    path = ARX / "adult_hierarchy_education.csv"
    res = global_recode(df, hierarchies={"education": str(path)}, levels=2)
    assert res.data["education"].to_list() == [
        "Higher education",
        "Secondary education",
        "Primary education",
        "Higher education",
    ]
    res0 = global_recode(df, hierarchies={"education": path}, levels=0)
    assert res0.data.equals(df)


def test_mapping_and_hierarchies_on_different_columns() -> None:
    df = pl.DataFrame({"age": [5, 15], "region": ["n1", "s1"]})
    res = global_recode(
        df,
        mapping={"region": {"n1": "n", "s1": "s"}},
        hierarchies={"age": AGE},
        levels={"age": 2},
    )
    assert res.data.rows() == [("[0, 50)", "n"), ("[0, 50)", "s")]


def test_values_missing_from_the_hierarchy_are_an_error_naming_the_column() -> None:
    df = pl.DataFrame({"age": [5, 150]})
    with pytest.raises(HierarchyError, match="'age'") as info:
        global_recode(df, hierarchies={"age": AGE}, levels=1, strict=False)
    assert "150" not in str(info.value)
    with pytest.raises(HierarchyError, match="'age'"):  # level 0 checks the cover too
        global_recode(df, hierarchies={"age": AGE}, levels=0)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"hierarchies": {"age": AGE}}, "no level for 'age'"),
        ({"hierarchies": {"age": AGE}, "levels": {"age": 9}}, "above the height"),
        ({"levels": 1, "mapping": {"age": {5: 1}}}, "needs 'hierarchies'"),
        ({"hierarchies": {"age": AGE}, "levels": 1, "mapping": {"age": {5: 1}}}, "both"),
        ({"hierarchies": {"nope": AGE}, "levels": 1}, "nope"),
        ({}, "mapping"),
    ],
)
def test_bad_parameters(params: dict, match: str) -> None:
    df = pl.DataFrame({"age": [5, 15]})
    with pytest.raises(ParameterError if match != "nope" else Exception, match=match):
        GlobalRecoding(**params).apply(df)


def test_missing_hierarchy_file_is_a_parameter_error(tmp_path: Path) -> None:
    df = pl.DataFrame({"age": [5, 15]})
    with pytest.raises(ParameterError, match="does not exist"):
        global_recode(df, hierarchies={"age": str(tmp_path / "x.csv")}, levels=1)


def test_verify_catches_a_wrong_level() -> None:
    md = Microdata(pl.DataFrame({"age": [5, 15, 55]}), keys=["age"])
    method = GlobalRecoding(hierarchies={"age": AGE}, levels=2)
    good = method.apply(md)
    wrong = GlobalRecoding(hierarchies={"age": AGE}, levels=1).apply(md)
    tampered = Protected.from_frames(md, wrong.data, method, details=good.details)
    with pytest.raises(VerificationError, match="level 2"):
        method.verify(md, tampered)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 999), min_size=2, max_size=20, unique=True),
    st.lists(st.integers(0, 100), min_size=2, max_size=40),
    st.integers(0, 4),
)
def test_recoding_equals_the_hierarchy_table(
    codes: list[int], picks: list[int], level: int
) -> None:
    h = GeneralisationHierarchy.from_prefixes(codes, pad="0")
    level = min(level, h.height)
    values = [codes[i % len(codes)] for i in picks]
    width = len(str(max(codes)))
    df = pl.DataFrame({"c": [f"{v:0{width}d}" for v in values]})
    md = Microdata(df, keys=["c"])
    method = GlobalRecoding(hierarchies={"c": h}, levels=level)
    res = method.apply(md)
    row = {r[0]: r[level] for r in h.table()}
    assert res.data["c"].to_list() == [row[v] for v in df["c"].to_list()]
    method.verify(md, res)


@pytest.mark.parametrize("engine", ["polars", "streaming"])
def test_engine_step_equals_the_in_memory_recoding(engine: str) -> None:
    from sdckit.engines._rows import read_with_row
    from sdckit.engines._steps import recode_on_engine

    df = pl.DataFrame({"age": [17.0, 23.0, None, 99.0, 23.0], "sex": [1, 2, 1, 2, 1]})
    method = GlobalRecoding(hierarchies={"age": AGE}, levels=1)
    want = method.apply(Microdata(df, keys=["age", "sex"])).data["age"]
    lf = read_with_row(df.lazy(), engine)
    out = recode_on_engine(lf, engine, method, seed=None, roles={"keys": ["age", "sex"]})
    got = (out.collect() if isinstance(out, pl.LazyFrame) else out).sort("__sdckit_row")
    assert got["age"].to_list() == want.to_list()
    bad = read_with_row(pl.DataFrame({"age": [5.0, 150.0], "sex": [1, 2]}).lazy(), engine)
    with pytest.raises(HierarchyError, match="'age'"):
        recode_on_engine(
            bad, engine, GlobalRecoding(hierarchies={"age": AGE}, levels=0),
            seed=None, roles={"keys": ["age", "sex"]},
        )  # fmt: skip
