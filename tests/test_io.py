"""Tests of sdckit.io: every format round trips, labels survive, writes are atomic, and every
bad input is a one-line SdcError without data values."""

from __future__ import annotations

import csv
import gzip
import os
import re
import stat
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from sdckit import ColumnError, DataError, ParameterError
from sdckit.datasets import load_demo
from sdckit.io import (
    DEFAULT_NA_VALUES,
    FORMATS,
    FileMetadata,
    atomic_path,
    detect_format,
    read_data,
    read_data_with_labels,
    write_data,
)
from sdckit.risk import frequencies

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


def test_csv_metadata_is_empty_and_types_are_inferred(tmp_path: Path, shared_data: Path) -> None:
    frame, meta = read_data_with_labels(shared_data / "testdata.csv")
    assert meta == FileMetadata("csv")
    assert frame.shape == (4580, 15)
    assert frame["sampling_weight"].dtype.is_numeric()
    # the columns not read as text keep polars' type inference over the whole file
    expected = pl.read_csv(shared_data / "testdata.csv", infer_schema_length=None)
    assert_frame_equal(frame, expected)
    path = tmp_path / "types.csv"
    path.write_text("i,f,b,w,z\n1,1.5,true,x,0\n-2,-0.25,false,y,0.5\n,,,,\n")
    back = read_data(path)
    assert back.schema == {
        "i": pl.Int64, "f": pl.Float64, "b": pl.Boolean, "w": pl.String, "z": pl.Float64,
    }  # fmt: skip
    assert back.rows() == [(1, 1.5, True, "x", 0.0), (-2, -0.25, False, "y", 0.5), (None,) * 5]


def test_one_missing_value_rule_for_every_column_type(tmp_path: Path) -> None:
    path = tmp_path / "na.csv"
    path.write_text('a,b,c\n1,NA,x\n2,,"NA"\nNA,x,-9\n3,-9,""\n')
    back = read_data(path)
    assert DEFAULT_NA_VALUES == ("NA",)
    # NA (as R writes it) and empty fields are missing in numbers and words alike
    assert back["a"].to_list() == [1, 2, None, 3]
    assert back["b"].to_list() == [None, None, "x", "-9"]
    assert back["c"].to_list() == ["x", None, "-9", None]
    # only empty fields: "NA" is then a category (and "a" a column of text)
    kept = read_data(path, na_values=[])
    assert kept["a"].to_list() == ["1", "2", "NA", "3"]
    assert kept["b"].to_list() == ["NA", None, "x", "-9"]
    assert kept["c"].to_list() == ["x", "NA", "-9", None]
    # a missing-value code, in every column
    coded = read_data(path, na_values=["NA", "-9"])
    assert coded["b"].to_list() == [None, None, "x", None]
    assert coded["c"].to_list() == ["x", None, None, None]
    assert read_data(path, na_values="-9")["a"].to_list() == ["1", "2", "NA", "3"]
    # a text column follows the same rule
    assert read_data(path, text_columns=["a"])["a"].to_list() == ["1", "2", None, "3"]
    for bad in (5, ["NA", 5], {"NA": 1}):
        with pytest.raises(ParameterError, match=r"'na_values'.*list of strings"):
            read_data(path, na_values=bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="'text_columns'"):
        read_data(path, text_columns=[1])  # type: ignore[list-item]


def test_zero_padded_codes_stay_distinct_and_are_written_back(tmp_path: Path) -> None:
    path = tmp_path / "codes.csv"
    path.write_text(
        "district,occupation,age\n01234,0012,31\n1234,12,44\n001234,012,31\n007,7,52\n7,07,18\n"
    )
    frame = read_data(path)  # no column declared text: leading zeros mark the codes
    assert frame.schema == {"district": pl.String, "occupation": pl.String, "age": pl.Int64}
    assert frame["district"].to_list() == ["01234", "1234", "001234", "007", "7"]
    assert frame["district"].n_unique() == 5
    fk = frequencies(frame, keys=["district"]).fk
    assert fk.tolist() == [1, 1, 1, 1, 1]  # 5 sample uniques (0 when 01234 = 1234 = 001234)
    out = tmp_path / "released.csv"
    write_data(frame, out)
    written = out.read_text().splitlines()
    assert written[1:] == ["01234,0012,31", "1234,12,44", "001234,012,31", "007,7,52",
                           "7,07,18"]  # fmt: skip
    assert_frame_equal(read_data(out), frame)
    # a zero, a decimal fraction and a negative number are not codes with leading zeros
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("x,y\n0,0.5\n10,-0.25\n")
    assert read_data(numbers).schema == {"x": pl.Int64, "y": pl.Float64}


def test_text_columns_are_read_exactly_as_written(tmp_path: Path) -> None:
    path = tmp_path / "keys.csv"
    path.write_text('sex,region,code,income\n1,1.0, 5,100\n2,1,5,200.5\n1,"1e0",+5,\n')
    frame = read_data(path, text_columns=["sex", "region", "code", "not_in_the_file"])
    assert frame.schema == {
        "sex": pl.String, "region": pl.String, "code": pl.String, "income": pl.Float64,
    }  # fmt: skip
    assert frame["sex"].to_list() == ["1", "2", "1"]
    assert frame["region"].to_list() == ["1.0", "1", "1e0"]  # three codes, not one number
    assert frame["code"].to_list() == [" 5", "5", "+5"]  # no trimming
    assert frame["income"].to_list() == [100.0, 200.5, None]
    assert read_data(path, text_columns="sex")["region"].dtype == pl.Float64
    # typed formats keep the file's types
    for ext in (".parquet", ".sav", ".dta"):
        typed = tmp_path / f"keys{ext}"
        write_data(SMALL, typed)
        assert_frame_equal(read_data(typed, text_columns=["sex"], na_values=["North"]), SMALL)


@given(
    st.lists(
        st.text(st.sampled_from("0123456789 .-+eNA"), min_size=1, max_size=6).filter(
            lambda s: s not in ("NA",)
        ),
        min_size=1,
        max_size=30,
    )
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_text_columns_round_trip_any_code(tmp_path: Path, codes: list[str]) -> None:
    path = tmp_path / "codes.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["code", "n"])
        writer.writerows([code, i] for i, code in enumerate(codes))
    frame = read_data(path, text_columns=["code"])
    assert frame["code"].to_list() == codes
    assert frame["n"].to_list() == list(range(len(codes)))
    out = tmp_path / "out.csv"
    write_data(frame, out)
    assert read_data(out, text_columns=["code"])["code"].to_list() == codes


def test_ragged_csv_row_is_a_data_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    # three unique records and a truncated row, whose missing keys would match every record
    path.write_text("sex,region,age\n1,North,30\n2,South,41\n1,South,52\n2,North\n")
    with pytest.raises(DataError) as info:
        read_data(path)
    message = str(info.value)
    assert message == (
        "Line 5 of 'ragged.csv' has 2 fields but the header has 3 columns; complete the row or "
        "remove it."
    )
    path.write_text("sex,region,age\n1,North,30\n2,South,41\n1,South,52\n")
    assert frequencies(read_data(path), keys=["sex", "region"]).fk.tolist() == [1, 1, 1]
    # too many fields; lines are counted in the file (a quoted field may span lines)
    path.write_text('a,b\n1,"two\nlines"\n3,4,SECRET\n5,6,7\n')
    with pytest.raises(DataError, match=r"^Line 4 of 'ragged\.csv' has 3 fields") as info:
        read_data(path)
    assert "and 1 more row that do" in str(info.value)
    assert "quote" in str(info.value) and "SECRET" not in str(info.value)
    # a line with only spaces is a row with one field
    path.write_text("a,b\n1,2\n  \n")
    with pytest.raises(DataError, match=r"Line 3 .* 1 field but the header has 2 columns"):
        read_data(path)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "blank.csv"
    path.write_bytes(b"a,b\r\n1,x\r\n\r\n2,y\r\n\r\n\r\n")
    assert read_data(path).rows() == [(1, "x"), (2, "y")]  # no record of missing values
    path.write_text("a\n1\n\n3\n\n")
    assert read_data(path)["a"].to_list() == [1, 3]
    path.write_text('a\n1\n""\n3\n')  # an empty quoted field is a missing value
    assert read_data(path)["a"].to_list() == [1, None, 3]


def test_csv_quoting_encoding_and_layout_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    cases = {
        b'a,b\n1,2\n3,"SECRET\n4,5\n': "Line 3 of 'bad.csv' has a quoted field that is not closed",
        b'a,b\n1,2\n3,"SECRET"x\n': "Line 3 of 'bad.csv' has a quoted field that is not closed",
        b"a,b\n1,2\n3,Z\xfcrich-SECRET\n": "Line 3 of 'bad.csv' is not UTF-8 text",
        b"\n\na,b\n1,2\n": "first line of 'bad.csv' is empty",
        b"a,b\r1,SECRET\r3,4\r": "rows cannot be told apart",
        b'a,b\n1,ab"SECRET\n': "field holding a quote is quoted",
        b"\x28\xb5\x2f\xfdSECRET": "compressed with zstd; decompress it first",
    }
    for content, needle in cases.items():
        path.write_bytes(content)
        with pytest.raises(DataError) as info:
            read_data(path)
        message = str(info.value)
        assert needle in message, (content, message)
        assert "SECRET" not in message and "rich" not in message
        assert "\n" not in message
    # a byte-order mark and gzip compression are read as before, with the same checks
    path.write_bytes(b"\xef\xbb\xbfcode,b\n01,2\n")
    assert read_data(path).rows() == [("01", 2)]
    gz = tmp_path / "data.csv"
    gz.write_bytes(gzip.compress(b"code,b\n01,2\n1,3\n"))
    assert read_data(gz).rows() == [("01", 2), ("1", 3)]
    gz.write_bytes(gzip.compress(b"code,b\n01,2\n1\n"))
    with pytest.raises(DataError, match=r"Line 3 .* 1 field"):
        read_data(gz)


def test_duplicate_column_names_are_a_column_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(ColumnError, match="duplicate column names: 'a'"):
        read_data(path)
    path.write_text(",,b\n1,2,3\n")
    with pytest.raises(ColumnError, match="duplicate column names: '' \\(columns without a name"):
        read_data(path)
    path.write_text(",b\n1,2\n")  # one column without a name (a pandas index) is kept
    assert read_data(path).columns == ["", "b"]
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(ColumnError, match=r"'dup\.parquet' has duplicate column names: 'a'"):
        read_data(tmp_path / "dup.parquet")


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
    assert "does not begin like one" in str(info.value) and "format=" in str(info.value)


@pytest.mark.parametrize("ext", [".parquet", ".sav", ".dta", ".xpt"])
def test_truncated_file_is_damaged_not_another_format(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"cut{ext}"
    write_data(SMALL.with_columns(pl.lit("SECRET").alias("s")), path)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(DataError, match="Could not read 'cut") as info:
        read_data(path)
    message = str(info.value)
    assert "SECRET" not in message and "does not begin like" not in message
    expected = "incomplete (the Parquet footer is missing)" if ext == ".parquet" else "damaged"
    assert expected in message


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".sav", ".dta"])
def test_empty_and_unopenable_files_are_data_errors(
    tmp_path: Path, ext: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"empty{ext}"
    path.write_bytes(b"")
    with pytest.raises(DataError, match=rf"^The file 'empty{ext}' is empty \(0 bytes\)"):
        read_data(path)
    path.write_bytes(b"SECRET")
    import sdckit.io

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sdckit.io, "open", refused, raising=False)
    with pytest.raises(DataError, match=rf"^Could not open 'empty{ext}': permission denied"):
        read_data(path)


def test_reader_messages_that_quote_values_are_not_passed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyreadstat

    def leaky(*args: object, **kwargs: object) -> None:
        raise pl.exceptions.ComputeError("could not parse 'SECRET-VALUE' as i64")

    def leaky_readstat(*args: object, **kwargs: object) -> None:
        raise pyreadstat.ReadstatError("bad value SECRET-VALUE")

    write_data(SMALL, tmp_path / "x.parquet")
    write_data(SMALL, tmp_path / "x.sav")
    write_data(SMALL, tmp_path / "x.csv")
    monkeypatch.setattr(pl, "read_parquet", leaky)
    monkeypatch.setattr(pyreadstat, "read_sav", leaky_readstat)
    monkeypatch.setattr(pl, "read_csv", leaky)
    for name, kind in (("x.parquet", "Parquet"), ("x.sav", "SPSS"), ("x.csv", "CSV")):
        with pytest.raises(DataError) as info:
            read_data(tmp_path / name)
        message = str(info.value)
        assert message.startswith(f"Could not read {name!r} as a {kind} file (")
        assert "SECRET" not in message and "\n" not in message


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
    path.write_bytes(b"read by the fake reader")
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


def test_job_input_reads_key_codes_as_text_with_its_na_values(tmp_path: Path) -> None:
    from sdckit.jobs import load_job

    (tmp_path / "survey.csv").write_text(
        "district,activity,age,income,w\n01234,1.1,31,100,10\n1234,1.10,44,NA,20\n"
        "001234,-9,31,300,30\n"
    )

    def job(input_extra: str = "", roles_extra: str = "") -> Path:
        path = tmp_path / "job.toml"
        path.write_text(
            f'[input]\nfile = "survey.csv"\n{input_extra}\n'
            f'[roles]\nkeys = ["district", "activity", "age"]\nnumeric = ["income"]\n'
            f'weight = "w"\n{roles_extra}\n'
            '[[steps]]\nmethod = "local_suppression"\nk = 2\n'
            '[output]\nreport_internal = "out/report.html"\n',
            encoding="utf-8",
        )
        return path

    frame = load_job(job()).data
    assert frame.schema == {
        "district": pl.String, "activity": pl.String, "age": pl.String, "income": pl.Int64,
        "w": pl.Int64,
    }  # fmt: skip
    assert frame["district"].to_list() == ["01234", "1234", "001234"]
    assert frame["activity"].to_list() == ["1.1", "1.10", "-9"]  # as written: 3 codes
    assert frame["income"].to_list() == [100, None, 300]
    frame = load_job(job('na_values = ["NA", "-9"]\nnumeric_keys = ["age"]')).data
    assert frame["activity"].to_list() == ["1.1", "1.10", None]
    assert frame["age"].to_list() == [31, 44, 31]
    with pytest.raises(ColumnError, match="'income' is not numeric"):  # NA is then text
        load_job(job("na_values = []"))
    for bad, needle in (
        ('na_values = "NA"', "'na_values' must be a list of strings"),
        ('numeric_keys = ["income"]', "'numeric_keys' names 'income', which is not a key"),
        ('na_valeus = ["NA"]', "Did you mean 'na_values'?"),
    ):
        with pytest.raises(ParameterError, match=re.escape(needle)):
            load_job(job(bad))
