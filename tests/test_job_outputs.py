"""Tests of the labels a job carries from an SPSS / Stata input to its protected file: the codes
still present, through the global recodings, in the output column's type."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.io import FileMetadata
from sdckit.jobs._outputs import carry_labels, recoded_labels


def test_carry_labels_keeps_the_codes_present() -> None:
    meta = FileMetadata(
        "spss",
        {"sex": "Sex", "region": "Region", "gone": "Dropped column"},
        {"sex": {1: "male", 2: "female"}, "region": {1: "N", 2: "S", 3: "E"}},
    )
    # region recoded to text: 3 merged into "2", a new interval code without a label
    frame = pl.DataFrame({"sex": [1, 1], "region": ["1", "2-3"]})
    assert carry_labels(frame, meta, "spss") == {
        "value_labels": {"sex": {1: "male"}, "region": {"1": "N"}},
        "column_labels": {"sex": "Sex", "region": "Region"},
    }
    # Stata labels integer columns only
    assert carry_labels(frame, meta, "stata")["value_labels"] == {"sex": {1: "male"}}
    assert carry_labels(frame, meta, "csv") == {}


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    codes=st.lists(st.integers(-3, 9), min_size=1, max_size=20),
    labelled=st.dictionaries(st.integers(-3, 12), st.text(min_size=1, max_size=5), max_size=8),
    as_text=st.booleans(),
)
def test_carried_labels_are_a_subset_for_present_codes(
    codes: list[int], labelled: dict[int, str], as_text: bool
) -> None:
    series = pl.Series("c", codes)
    frame = pl.DataFrame([series.cast(pl.String) if as_text else series])
    kept = carry_labels(frame, FileMetadata("spss", {}, {"c": labelled}), "spss")
    got = kept.get("value_labels", {}).get("c", {})
    present = set(frame["c"].to_list())
    assert set(got) == {str(k) if as_text else k for k in labelled} & present
    for code, label in got.items():
        assert labelled[int(code)] == label


def test_labels_follow_the_global_recodings() -> None:
    def step(mappings: dict[str, dict[str, str]]) -> SimpleNamespace:
        return SimpleNamespace(result=SimpleNamespace(details={"mappings": mappings}))

    meta = FileMetadata(
        "spss", {"region": "Region"}, {"region": {1: "North", 2: "South", 3: "East", 4: "West"}}
    )
    merged = recoded_labels(meta, [step({"region": {"4": "3"}})])
    assert merged.value_labels["region"] == {1: "North", 2: "South", "3": "East / West"}
    assert merged.column_labels == {"region": "Region"}
    # a new code for two, then a second recoding; an unlabelled code leaves its merge unlabelled
    grouped = recoded_labels(
        meta,
        [step({"region": {"1": "n", "2": "n"}}), step({"region": {"n": "all", "7": "all"}})],
    )
    assert grouped.value_labels["region"] == {3: "East", 4: "West"}
    renamed = recoded_labels(meta, [step({"region": {"1": "n", "2": "n"}})])
    assert renamed.value_labels["region"] == {3: "East", 4: "West", "n": "North / South"}
    # other steps (PRAM, suppression) keep the meaning of the codes
    assert recoded_labels(meta, [SimpleNamespace(result=SimpleNamespace(details={}))]) == meta
    # a new numeric code written as text in a numeric column
    frame = pl.DataFrame({"region": [1, 3]})
    assert carry_labels(frame, merged, "spss")["value_labels"] == {
        "region": {1: "North", 3: "East / West"}
    }
