"""Generalisation hierarchies: constructors, ARX's CSV format, validation, labels and loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import DataError, ParameterError, SdcError
from sdckit.hierarchies import GeneralisationHierarchy, HierarchyError, as_text

ARX = Path(__file__).parent / "data" / "arx"
ARX_FILES = sorted(ARX.glob("adult_hierarchy_*.csv"))


# ---------------------------------------------------------------------- ARX's files
def test_the_arx_files_are_there() -> None:
    assert len(ARX_FILES) == 9


@pytest.mark.parametrize("path", ARX_FILES, ids=lambda p: p.stem)
def test_arx_csv_round_trip_is_byte_for_byte(path: Path, tmp_path: Path) -> None:
    h = GeneralisationHierarchy.read_arx_csv(path)
    out = tmp_path / path.name
    h.write_arx_csv(out)
    assert out.read_bytes() == path.read_bytes()
    assert GeneralisationHierarchy.read_arx_csv(out) == h
    # the interface of the lattice search: height + 1 labels per value
    assert all(len(row) == h.height + 1 for row in h.table())
    codes = h.codes()
    assert codes.shape == (len(h.values), h.height + 1)
    for lv in range(h.height + 1):
        assert [h.labels(lv)[c] for c in codes[:, lv]] == [row[lv] for row in h.table()]
    assert h.table()[0][0] == path.read_text().split(";")[0]


def test_arx_age_hierarchy_levels_and_loss() -> None:
    h = GeneralisationHierarchy.read_arx_csv(ARX / "adult_hierarchy_age.csv")
    assert h.height == 4
    assert h.values == tuple(str(v) for v in range(1, 101))
    i = h.values.index("17")
    assert h.table()[i] == ("17", "15-19", "10-19", "0-19", "*")
    assert h.labels(4) == ("*",)
    assert h.labels(3)[:2] == ("0-19", "20-39")
    # ARX's file puts 16..20 under 15-19 (5 of 100 values: (5 - 1) / 99) and 1..20 under 0-19
    assert h.loss(1)[i] == pytest.approx(4 / 99)
    assert h.loss(3)[i] == pytest.approx(19 / 99)
    assert np.all(h.loss(0) == 0.0)
    assert np.all(h.loss(4) == 1.0)
    assert h.precision(2) == 0.5


def test_arx_education_loss_by_hand() -> None:
    h = GeneralisationHierarchy.read_arx_csv(ARX / "adult_hierarchy_education.csv")
    loss = dict(zip(h.values, h.loss(1).tolist(), strict=True))
    # 16 values; High School holds 6 of them, Graduate 2
    assert loss["HS-grad"] == pytest.approx(5 / 15)
    assert loss["Masters"] == pytest.approx(1 / 15)
    assert h.labels(2) == ("Higher education", "Secondary education", "Primary education")


def test_read_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="does not exist"):
        GeneralisationHierarchy.read_arx_csv(tmp_path / "nope.csv")


def test_crlf_file_round_trips_with_its_line_end(tmp_path: Path) -> None:
    src = tmp_path / "g.csv"
    src.write_bytes(b"male;*\r\nfemale;*\r\n")
    h = GeneralisationHierarchy.read_arx_csv(src)
    assert h.table() == (("male", "*"), ("female", "*"))
    out = tmp_path / "out.csv"
    h.write_arx_csv(out, line_end="\r\n")
    assert out.read_bytes() == src.read_bytes()


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([["a", "x", "*"], ["b", "x"]], "number of levels"),
        ([["a", "x"], ["a", "y"]], "listed twice"),
        ([["a", "x", "p"], ["b", "x", "q"]], "not nested"),
        ([["a", ""], ["b", "x"]], "empty"),
        ([["a", None], ["b", "x"]], "missing"),
        ([[float("nan"), "x"], ["b", "x"]], "missing"),
        ([], "at least one value"),
    ],
)
def test_malformed_hierarchies_are_refused(rows: list[list[object]], match: str) -> None:
    with pytest.raises(HierarchyError, match=match) as info:
        GeneralisationHierarchy.from_table(rows)
    assert isinstance(info.value, DataError | SdcError)
    # never a value in the message
    for row in rows:
        for v in row:
            if isinstance(v, str) and v:
                assert f"'{v}'" not in str(info.value)


def test_level_out_of_range() -> None:
    h = GeneralisationHierarchy.from_table([["a", "*"], ["b", "*"]])
    with pytest.raises(ParameterError, match="between 0 and"):
        h.labels(2)
    with pytest.raises(ParameterError, match="integer"):
        h.loss(1.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- builders
def test_from_intervals_with_widths() -> None:
    h = GeneralisationHierarchy.from_intervals(range(17, 41), widths=[5, 10, 20])
    row = h.table()[h.values.index("23")]
    assert row == ("23", "[20, 25)", "[20, 30)", "[20, 40)", "*")
    assert h.table()[0] == ("17", "[15, 20)", "[10, 20)", "[0, 20)", "*")
    assert h.height == 4


def test_interval_labels_write_whole_edges_in_full() -> None:
    h = GeneralisationHierarchy.from_intervals([0, 2_500_000.5], breaks=[[0, 1e6, 1e7]])
    assert h.table()[1] == ("2500000.5", "[1000000, 10000000)", "*")
    h2 = GeneralisationHierarchy.from_intervals([0.25, 0.75], widths=[0.5])
    assert h2.table()[1] == ("0.75", "[0.5, 1)", "*")


def test_from_intervals_with_breaks_and_no_top_needed() -> None:
    h = GeneralisationHierarchy.from_intervals([0, 15, 30, 70], breaks=[[0, 18, 65, 120], [0, 120]])
    assert h.table() == (
        ("0", "[0, 18)", "[0, 120)"),
        ("15", "[0, 18)", "[0, 120)"),
        ("30", "[18, 65)", "[0, 120)"),
        ("70", "[65, 120)", "[0, 120)"),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"widths": [5, 7]},
        {"widths": [0]},
        {"breaks": [[0, 10, 20, 40], [0, 15, 40]]},
        {"breaks": [[20, 40]]},
        {},
        {"widths": [5], "breaks": [[0, 40]]},
    ],
)
def test_from_intervals_refuses_non_nested_or_uncovering(kwargs: dict) -> None:
    with pytest.raises(ParameterError):
        GeneralisationHierarchy.from_intervals([3, 17, 35], **kwargs)


def test_from_prefixes() -> None:
    h = GeneralisationHierarchy.from_prefixes(["0123", "0124", "0201"])
    assert [r[1:] for r in h.table()] == [
        ("012*", "01**", "0***", "*"),
        ("012*", "01**", "0***", "*"),
        ("020*", "02**", "0***", "*"),
    ]
    kept = GeneralisationHierarchy.from_prefixes(["0123", "0201"], keep=[2], top=False)
    assert kept.table() == (("0123", "01**"), ("0201", "02**"))
    with pytest.raises(ParameterError, match="different lengths"):
        GeneralisationHierarchy.from_prefixes(["1", "22"])
    with pytest.raises(ParameterError, match="decrease"):
        GeneralisationHierarchy.from_prefixes(["1234"], keep=[1, 2])


def test_from_mapping_matches_global_recodings_chain() -> None:
    h = GeneralisationHierarchy.from_mapping(
        [{"a1": "a", "a2": "a", "b1": "b"}, {"a": "ab", "b": "ab"}], values=["a1", "a2", "b1", "c"]
    )
    assert h.table() == (
        ("a1", "a", "ab", "*"),
        ("a2", "a", "ab", "*"),
        ("b1", "b", "ab", "*"),
        ("c", "c", "c", "*"),
    )


# ---------------------------------------------------------------------- matching as text
def test_values_are_matched_as_text() -> None:
    h = GeneralisationHierarchy.from_table([[7, "low"], [101, "high"], ["x", "other"]])
    assert h.values == ("7", "101", "x")
    ints = pl.Series("id", [7, 101, None], dtype=pl.Int32)
    floats = pl.Series("id", [101.0, 7.0, float("nan")])
    text = pl.Series("id", ["x", "7", None])
    assert h.generalise(ints, 1).to_list() == ["low", "high", None]
    assert h.generalise(floats, 1).to_list() == ["high", "low", None]
    assert h.generalise(text, 1).to_list() == ["other", "low", None]
    assert h.generalise(ints, 0).to_list() == ["7", "101", None]
    assert as_text(pl.Series([2.5, -3.0])).to_list() == ["2.5", "-3"]
    cat = pl.Series("id", ["x", "7", None], dtype=pl.Categorical)
    assert h.generalise(cat, 1).to_list() == ["other", "low", None]
    assert h.generalise(pl.Series("id", [None, None], dtype=pl.Int64), 1).to_list() == [None] * 2


def test_values_missing_from_the_hierarchy_name_the_column_not_the_value() -> None:
    h = GeneralisationHierarchy.from_table([["7", "low"]])
    with pytest.raises(HierarchyError, match="'income'") as info:
        h.generalise(pl.Series("income", [7, 123456]), 1)
    assert "123456" not in str(info.value)
    assert "1 value(s)" in str(info.value)
    # "007" is not 7: the hierarchy's text is taken as written
    h2 = GeneralisationHierarchy.from_table([["007", "low"]])
    with pytest.raises(HierarchyError):
        h2.generalise(pl.Series("c", [7]), 1)


# ---------------------------------------------------------------------- properties
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 9999), min_size=1, max_size=30, unique=True),
    st.lists(st.integers(0, 9999), min_size=1, max_size=50),
)
def test_prefix_hierarchies_are_nested_and_loss_grows(codes: list[int], draw: list[int]) -> None:
    h = GeneralisationHierarchy.from_prefixes(codes, pad="0")
    width = len(str(max(codes)))
    assert h.height == width
    # the codes as padded text (the integer 7 would not match the code "07")
    data = pl.Series("c", [f"{codes[i % len(codes)]:0{width}d}" for i in draw])
    previous = np.zeros(len(codes))
    for level in range(h.height + 1):
        got = h.generalise(data, level).to_list()
        want = [h.mapping(level)[v] for v in data.to_list()]
        assert got == want
        loss = h.loss(level)
        assert np.all(loss >= previous) and np.all((loss >= 0) & (loss <= 1))
        # loss is (leaves under the label - 1) / (domain - 1)
        labels = [r[level] for r in h.table()]
        sizes = np.array([labels.count(lab) for lab in labels])
        expect = (sizes - 1) / (len(codes) - 1) if len(codes) > 1 else np.zeros(1)
        np.testing.assert_allclose(loss, expect)
        previous = loss


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0]),
    st.lists(st.integers(2, 4), min_size=0, max_size=3),
    st.lists(st.floats(-500, 500, allow_nan=False), min_size=1, max_size=30),
)
def test_interval_hierarchies_are_nested_and_hold_their_values(
    first: float, factors: list[int], values: list[float]
) -> None:
    widths = [first]
    for f in factors:
        widths.append(widths[-1] * f)
    h = GeneralisationHierarchy.from_intervals(values, widths=widths)  # nested, or it raises
    for row in h.table():
        x = float(row[0])
        for level, label in enumerate(row[1 : len(widths) + 1], start=1):
            lo, hi = (float(v) for v in label[1:-1].split(", "))
            assert lo <= x < hi
            assert hi - lo == pytest.approx(widths[level - 1])
