"""The words of the pages without a browser: numbers for reading, a step's parameters, the
controls named instead of job-file syntax, and the form values refused beside their field."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.protection import get_method
from sdckit.ui._forms import FormError, fields_for, parse_fields
from sdckit.ui._words import controls_words, fmt_number, params_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (110429230.61999997, "110,429,231"),
        (367628, "367,628"),
        (367628.0, "367,628"),
        (0.3877, "0.3877"),
        (0.003877, "0.003877"),
        (1.5e-05, "0.000015"),
        (7.8, "7.8"),
        (12.345678, "12.35"),
        (-2500.5, "-2,500"),
        (float("nan"), "–"),
        (float("inf"), "∞"),
        (None, "–"),
        (True, "yes"),
    ],
)
def test_numbers_for_reading(value: object, text: str) -> None:
    assert fmt_number(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e14, max_value=1e14))
def test_no_scientific_notation_and_four_significant_digits(x: float) -> None:
    text = fmt_number(x)
    assert "e" not in text.lower()
    back = float(text.replace(",", ""))
    # four significant digits, or the units of a larger number
    assert math.isclose(back, x, rel_tol=1e-3, abs_tol=max(1e-12, abs(x) * 1e-3))
    if abs(x) >= 1000:
        assert re.fullmatch(r"-?\d{1,3}(,\d{3})+", text)


def test_params_in_words() -> None:
    assert params_text({"k": 3, "seed": 12}) == "k = 3"
    assert params_text({"columns": ["age"], "breaks": [0, 15, float("inf")]}) == (
        "columns = age; breaks = 0, 15, ∞"
    )
    assert params_text({"mapping": {"sex": {"m": "1", "f": "2"}}}) == "mapping: sex (m → 1, f → 2)"
    assert params_text({"importance": {"age": 1, "sex": 2}, "strict": True}) == (
        "importance: age 1, sex 2; strict = yes"
    )
    assert params_text({}) == "defaults"
    assert len(params_text({"mapping": {"a": {str(i): "x" for i in range(500)}}})) == 240


def test_controls_instead_of_job_syntax() -> None:
    message = (
        'Fix: [output] drop = ["dob"] or [roles] linked = { district = "region" }; '
        'or [input] numeric_keys = ["age"].'
    )
    words = controls_words(message)
    assert "[" not in words and "=" not in words
    assert "“drop” boxes on the Roles page" in words
    assert "“linked to a key”" in words
    assert "“read as a number”" in words


def fields(method: str) -> list:
    return fields_for(get_method(method), skip=("seed",))


@pytest.mark.parametrize("typed", ["three", "3 records", "1e", "--2"])
def test_a_word_in_a_number_box_is_refused_not_defaulted(typed: str) -> None:
    fs = fields("local_suppression")
    with pytest.raises(FormError) as info:
        parse_fields(fs, {"p-k": typed})
    assert info.value.field == "k"
    assert "takes a number written in digits" in info.value.message
    assert next(f for f in fs if f.name == "k").raw == typed  # kept, to show the form again


def test_numbers_and_empty_boxes() -> None:
    assert parse_fields(fields("local_suppression"), {"p-k": " 3 "}) == {"k": 3}
    assert parse_fields(fields("local_suppression"), {"p-k": "1,000"}) == {"k": 1000}
    assert parse_fields(fields("local_suppression"), {"p-k": ""}) == {}  # the default


def test_breaks_typed_with_commas() -> None:
    fs = fields("interval_recoding")
    assert next(f for f in fs if f.name == "breaks").widget == "list"
    params = parse_fields(fs, {"p-columns": "age", "p-breaks": "0, 15, 30.5, inf",
                               "p-labels": "child, young, adult"})  # fmt: skip
    assert params == {
        "columns": ["age"],
        "breaks": [0, 15, 30.5, math.inf],
        "labels": ["child", "young", "adult"],
    }
    assert parse_fields(fs, {"p-breaks": "[0, 10]"}) == {"breaks": [0, 10]}  # TOML still
    with pytest.raises(FormError, match="separated by commas"):
        parse_fields(fs, {"p-breaks": "0, , 10"})
    with pytest.raises(FormError) as info:
        parse_fields(fs, {"p-n_bins.age": "four"})
    assert info.value.field == "n_bins"


def test_levels_cut_at_typed_breaks() -> None:
    from sdckit.ui._forms import cut_levels

    levels = ["0", "5", "14", "15", "64", "65", "95"]
    assert cut_levels(levels, "0, 15, 65, inf", "mapping") == {
        "0": "0-14", "5": "0-14", "14": "0-14", "15": "15-64", "64": "15-64",
        "65": "65+", "95": "65+",
    }  # fmt: skip
    assert cut_levels(["0.5", "2"], "0, 1, 2", "mapping") == {"0.5": "[0, 1)", "2": "[1, 2)"}
    with pytest.raises(FormError, match="3 level"):
        cut_levels(levels, "10, 70", "mapping")  # 0 and 5 below, 95 above: counted, not named
    with pytest.raises(FormError, match="increasing"):
        cut_levels(levels, "10, 5", "mapping")
    with pytest.raises(FormError, match="not all numbers"):
        cut_levels(["a", "1"], "0, 5", "mapping")
    fs = fields("global_recoding")
    form = {"p-mapping.column": "age", "p-mapping.old": ["3", "40"], "p-mapping.new": ["", ""],
            "p-mapping.breaks": "0, 18, inf"}  # fmt: skip
    params = parse_fields(fs, form)
    # strict: a value the page did not list (it shows a page of levels) is an error, never
    # kept unbanded in the protected file
    assert params == {"mapping": {"age": {"3": "0-17", "40": "18+"}}, "strict": True}
    import polars as pl

    from sdckit.errors import DataError
    from sdckit.masking import GlobalRecoding

    unlisted = pl.DataFrame({"age": ["3", "40", "41"]})
    with pytest.raises(DataError, match="1 value"):
        GlobalRecoding(**params).apply(unlisted, keys=["age"])
