"""Tests of sdckit.io: every format round trips, labels survive, writes are atomic."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from sdckit import ColumnError, DataError, ParameterError
from sdckit.datasets import load_demo
from sdckit.io import (
    FORMATS,
    FileMetadata,
    atomic_path,
    detect_format,
    read_data,
    read_data_with_labels,
    write_data,
)

SMALL = pl.DataFrame(
    {
        "sex": [1, 2, None, 1],
        "region": ["North", None, "South", "North"],
        "income": [1500.25, None, 0.0, 3.5],
        "big_id": [2**40, 1, 2, 3],
    }
)
EXTENSIONS = [".csv", ".parquet", ".pq", ".sav", ".zsav", ".dta", ".xpt"]


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_round_trip_every_format(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"small{ext}"
    write_data(SMALL, path)
    back = read_data(path)
    if ext == ".xpt":  # SAS transport stores every number as a double
        expected = SMALL.with_columns(pl.col("sex", "big_id").cast(pl.Float64))
    else:
        expected = SMALL
    assert_frame_equal(back, expected)
    assert files_in(tmp_path) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".sav", ".dta"])
def test_round_trip_demo_sample(tmp_path: Path, ext: str) -> None:
    sample = load_demo().head(2_000)
    path = tmp_path / f"demo{ext}"
    write_data(sample, path)
    assert_frame_equal(read_data(path), sample)


def test_pandas_and_pyarrow_input(tmp_path: Path) -> None:
    write_data(SMALL.to_pandas(), tmp_path / "a.parquet")
    write_data(SMALL.to_arrow(), tmp_path / "b.parquet")
    # pandas holds an integer column with a missing value as floats
    assert_frame_equal(read_data(tmp_path / "a.parquet"), SMALL, check_dtypes=False)
    assert_frame_equal(read_data(tmp_path / "b.parquet"), SMALL)


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_value_and_column_labels_are_kept(tmp_path: Path, ext: str) -> None:
    labels = {"sex": {1: "male", 2: "female"}}
    path = tmp_path / f"labelled{ext}"
    write_data(SMALL, path, value_labels=labels, column_labels={"income": "Annual income"})
    frame, meta = read_data_with_labels(path)
    assert_frame_equal(frame, SMALL)
    assert meta.format == detect_format(path)
    assert meta.value_labels == labels
    assert meta.column_labels == {"income": "Annual income"}
    assert all(isinstance(k, int) for k in meta.value_labels["sex"])


def test_csv_metadata_is_empty_and_na_is_missing(tmp_path: Path, shared_data: Path) -> None:
    frame, meta = read_data_with_labels(shared_data / "testdata.csv")
    assert meta == FileMetadata("csv")
    assert frame.shape == (4580, 15)
    assert frame["sampling_weight"].dtype.is_numeric()
    path = tmp_path / "na.csv"
    path.write_text("a,b\n1,NA\n2,\nNA,x\n")
    back = read_data(path)
    assert back["a"].to_list() == [1, 2, None]  # numbers and NA: NA is missing (R's CSV)
    assert back["b"].to_list() == ["NA", None, "x"]  # words: "NA" may be a real category


def test_duplicate_csv_header_is_a_column_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(ColumnError, match="duplicate column names: 'a'"):
        read_data(path)


def test_format_override(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    write_data(SMALL, path, format="csv")
    assert_frame_equal(read_data(path, format="csv"), SMALL)
    assert detect_format("x.SAV") == "spss"
    assert detect_format("x.bin", format="dta") == "stata"
    assert detect_format("x", format=".Parquet") == "parquet"
    assert set(FORMATS) == {"csv", "parquet", "spss", "stata", "sas", "sas_xport"}


@pytest.mark.parametrize("name", ["data.xlsx", "data", "data.csv.gz"])
def test_unknown_extension_is_a_parameter_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(ParameterError, match="extension"):
        read_data(tmp_path / name)
    with pytest.raises(ParameterError, match="extension"):
        write_data(SMALL, tmp_path / name)
    with pytest.raises(ParameterError, match="'format'"):
        read_data(tmp_path / "x.csv", format="excel")
    assert files_in(tmp_path) == []


def test_missing_file_and_directory_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        read_data(tmp_path / "nothing.csv")
    with pytest.raises(DataError, match="directory"):
        write_data(SMALL, tmp_path / "no_such_dir" / "out.csv")
    with pytest.raises(DataError, match="directory"):
        read_data(tmp_path, format="csv")


@pytest.mark.parametrize("ext", [".parquet", ".sav", ".dta", ".sas7bdat", ".xpt"])
def test_corrupt_file_is_a_data_error_without_content(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"broken{ext}"
    path.write_bytes(b"SECRET-VALUE " * 20)
    with pytest.raises(DataError, match="Could not read") as info:
        read_data(path)
    assert "SECRET" not in str(info.value)


def test_sas7bdat_is_read_only_and_read_through_pyreadstat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ParameterError, match="read but not written"):
        write_data(SMALL, tmp_path / "out.sas7bdat")
    assert files_in(tmp_path) == []

    import pyreadstat

    class Meta:
        def __init__(self) -> None:
            self.original_variable_types = {"sex": "BEST12.", "region": "$8."}
            self.variable_value_labels = {"sex": {1.0: "male"}}
            self.column_names_to_labels = {"sex": "Sex", "region": None}
            self.file_label = "survey"

    def fake_reader(path: str, output_format: str) -> tuple[pl.DataFrame, Meta]:
        assert path.endswith(".sas7bdat") and output_format == "polars"
        return pl.DataFrame({"sex": [1.0, 2.0], "region": ["A", ""]}), Meta()

    monkeypatch.setattr(pyreadstat, "read_sas7bdat", fake_reader)
    path = tmp_path / "in.sas7bdat"
    path.write_bytes(b"")
    frame, meta = read_data_with_labels(path)
    assert frame["region"].to_list() == ["A", None]  # empty string read as missing
    assert frame["sex"].dtype == pl.Float64
    assert meta == FileMetadata("sas", {"sex": "Sex"}, {"sex": {1.0: "male"}}, "survey")


def test_labels_need_a_labelled_format_and_known_columns(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot hold"):
        write_data(SMALL, tmp_path / "out.csv", value_labels={"sex": {1: "male"}})
    with pytest.raises(ParameterError, match="'nope'"):
        write_data(SMALL, tmp_path / "out.sav", value_labels={"nope": {1: "x"}})
    with pytest.raises(ParameterError, match="'nope'"):
        write_data(SMALL, tmp_path / "out.sav", column_labels={"nope": "x"})
    assert files_in(tmp_path) == []


def test_failing_writer_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def half_write(self: pl.DataFrame, file: Path, **kwargs: object) -> None:
        Path(file).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", half_write)
    target = tmp_path / "out.parquet"
    with pytest.raises(DataError, match="nothing was written"):
        write_data(SMALL, target)
    assert files_in(tmp_path) == []


def test_failing_write_keeps_the_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "out.dta"
    write_data(SMALL, target)
    before = target.read_bytes()
    # Stata cannot attach value labels to a string column: pyreadstat fails mid-write
    with pytest.raises(DataError, match="Could not write"):
        write_data(SMALL, target, value_labels={"region": {"North": "N"}})
    assert target.read_bytes() == before
    assert files_in(tmp_path) == ["out.dta"]


def test_atomic_path_on_exception_and_permissions(tmp_path: Path) -> None:
    target = tmp_path / "report.txt"

    def interrupted_write() -> None:
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        interrupted_write()
    assert files_in(tmp_path) == []
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        tmp.write_text("done")
    assert target.read_text() == "done"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_writing_does_not_modify_the_input(tmp_path: Path) -> None:
    frame = SMALL.clone()
    write_data(frame, tmp_path / "x.sav", value_labels={"sex": {1: "m"}})
    assert_frame_equal(frame, SMALL)
