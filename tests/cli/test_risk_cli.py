"""End-to-end tests of ``sdckit risk`` (typer CliRunner), against the API and sdcMicro."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.io import read_data, write_data
from sdckit.risk import household_risk, individual_risk, l_diversity
from sdckit.risk.suda import suda2

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def testdata(shared_data: Path) -> pl.DataFrame:
    return read_data(shared_data / "testdata.csv")


def test_testdata_matches_api_and_sdcmicro(
    tmp_path: Path, shared_data: Path, testdata: pl.DataFrame
) -> None:
    out = tmp_path / "risk.csv"
    code, stdout, stderr = run(
        "risk", shared_data / "testdata.csv", "--keys", ",".join(KEYS),
        "--weight", "sampling_weight", "--out", out,
    )  # fmt: skip
    assert code == 0, stderr
    records = read_data(out)
    assert records.columns == ["fk", "Fk_hat", "risk"]
    assert records.schema["fk"] == pl.Int64
    assert records.height == 4580
    api = individual_risk(testdata, keys=KEYS, weight="sampling_weight")
    np.testing.assert_array_equal(records["fk"].to_numpy(), api.fk)
    np.testing.assert_array_equal(records["Fk_hat"].to_numpy(), api.Fk_hat)
    np.testing.assert_array_equal(records["risk"].to_numpy(), api.risk)
    reference = pl.read_csv(shared_data / "reference" / "testdata_risk_sdcmicro.csv")
    np.testing.assert_array_equal(records["fk"].to_numpy(), reference["fk"].to_numpy())
    np.testing.assert_allclose(records["Fk_hat"].to_numpy(), reference["Fk"].to_numpy())
    np.testing.assert_allclose(records["risk"].to_numpy(), reference["risk"], rtol=1e-9)
    # file-level figures of the data README (sdcMicro 5.8.1)
    assert int((records["fk"] == 1).sum()) == 157
    assert [int((records["fk"] < k).sum()) for k in (2, 3, 5)] == [157, 281, 458]
    assert records["risk"].sum() == pytest.approx(10.77829892, abs=1e-8)
    lines = {" ".join(line.strip("│┃ ").split()) for line in stdout.splitlines()}
    printed = {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[-1] for line in lines if line}
    assert printed["records │"] == "4,580"
    assert printed["sample uniques (fk = 1) │"] == "157"
    assert printed["records violating 2-anonymity │"] == "157"
    assert printed["records violating 3-anonymity │"] == "281"
    assert printed["records violating 5-anonymity │"] == "458"
    assert printed["expected re-identifications │"] == "10.7783"
    assert printed["global risk (%) │"] == "0.235334"
    assert "Traceback" not in stdout + stderr


def test_parquet_output_with_household_suda2_and_l_diversity(
    tmp_path: Path, shared_data: Path, testdata: pl.DataFrame
) -> None:
    source = tmp_path / "testdata.parquet"  # any format io reads
    write_data(testdata, source)
    out = tmp_path / "risk.parquet"
    code, stdout, stderr = run(
        "risk", source, "-k", ",".join(KEYS), "-w", "sampling_weight", "--household", "ori_hid",
        "--suda2", "--sensitive", "hhcivil,income", "--method", "exact", "--seed", "7", "-o", out,
    )  # fmt: skip
    assert code == 0, stderr
    records = pl.read_parquet(out)
    ldiv = l_diversity(testdata, keys=KEYS, sensitive=["hhcivil", "income"])
    assert records.columns == [
        "fk", "Fk_hat", "risk", "household_risk", "suda_score", "dis_suda_score",
        *ldiv.to_frame().columns,
    ]  # fmt: skip
    hh = household_risk(
        testdata, keys=KEYS, weight="sampling_weight", household="ori_hid", method="exact"
    )
    np.testing.assert_array_equal(records["risk"].to_numpy(), hh.individual.risk)
    np.testing.assert_array_equal(records["household_risk"].to_numpy(), hh.household_risk)
    suda = suda2(testdata, keys=KEYS)
    np.testing.assert_array_equal(records["suda_score"].to_numpy(), suda.score)
    np.testing.assert_array_equal(records["dis_suda_score"].to_numpy(), suda.dis_score)
    reference = pl.read_csv(shared_data / "reference" / "testdata_suda2_sdcmicro.csv")
    np.testing.assert_allclose(records["suda_score"].to_numpy(), reference["score"].to_numpy())
    for name in ldiv.to_frame().columns:
        np.testing.assert_array_equal(records[name].to_numpy(), ldiv.to_frame()[name].to_numpy())
    assert "households" in stdout and "1,000" in stdout
    assert "SUDA" in stdout


def test_missing_values_wildcard_or_category(tmp_path: Path) -> None:
    source = tmp_path / "small.csv"
    source.write_text("a,b,w\n2,3,18\n3,3,45.5\n2,NA,39\n2,3,51\n")
    frame = read_data(source)
    for mode in ("wildcard", "category"):
        out = tmp_path / f"{mode}.csv"
        code, _, stderr = run(
            "risk", source, "--keys", "a,b", "--weight", "w", "--missing", mode, "--out", out
        )
        assert code == 0, stderr
        api = individual_risk(frame, keys=["a", "b"], weight="w", missing=mode)  # type: ignore[arg-type]
        np.testing.assert_array_equal(read_data(out)["fk"].to_numpy(), api.fk)
        np.testing.assert_array_equal(read_data(out)["risk"].to_numpy(), api.risk)
    assert read_data(tmp_path / "wildcard.csv")["fk"].to_list() == [3, 1, 3, 3]
    assert read_data(tmp_path / "category.csv")["fk"].to_list() == [2, 1, 1, 2]


def assert_one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 2
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0]


def test_unknown_column_is_one_line_naming_it(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "risk.csv"
    for option in ("--keys", "--weight", "--household", "--sensitive"):
        args = ["risk", shared_data / "testdata.csv", "--keys", "urbrur,roof", "--out", out]
        if option == "--keys":
            args[3] = "urbrur,rooof"
        else:
            args += [option, "rooof"]
        assert_one_line_error(*run(*args), "'rooof'", "'roof'")
    assert not out.exists()


def test_missing_and_bad_files(tmp_path: Path) -> None:
    out = tmp_path / "risk.csv"
    assert_one_line_error(
        *run("risk", tmp_path / "nothing.csv", "--keys", "a", "--out", out), "does not exist"
    )
    bad = tmp_path / "data.xlsx"
    bad.write_text("a\n1\n")
    assert_one_line_error(*run("risk", bad, "--keys", "a", "--out", out), "extension")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    assert_one_line_error(*run("risk", broken, "--keys", "a", "--out", out), "Could not read")
    good = tmp_path / "good.csv"
    good.write_text("a,b\n1,2\n1,3\n")
    for target in ("out.xlsx", "out.sas7bdat"):
        assert_one_line_error(*run("risk", good, "--keys", "a", "--out", tmp_path / target))
    assert_one_line_error(*run("risk", good, "--keys", "a", "--out", good), "differ")
    assert_one_line_error(
        *run("risk", good, "--keys", "a", "--out", tmp_path / "no_dir" / "x.csv"), "directory"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.parquet", "data.xlsx", "good.csv"]


def test_duplicate_columns(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("a,b,Income,income\n1,2,3,4\n1,3,3,5\n")
    out = tmp_path / "risk.csv"
    assert_one_line_error(*run("risk", good, "--keys", "a,a", "--out", out), "more than once")
    repeated = tmp_path / "repeated.csv"
    repeated.write_text("a,b,a\n1,2,3\n1,2,4\n")
    assert_one_line_error(*run("risk", repeated, "--keys", "a,b", "--out", out), "duplicate", "'a'")
    assert_one_line_error(*run("risk", good, "--keys", "a,,b", "--out", out), "empty")
    # l-diversity columns of 'Income' and 'income' would differ only in case
    assert_one_line_error(
        *run("risk", good, "--keys", "a,b", "--sensitive", "Income,income", "--out", out),
        "l_distinct_Income",
        "case",
    )
    multi = tmp_path / "multi.csv"
    multi.write_text("a,multi,x\n1,2,3\n1,3,3\n")
    assert_one_line_error(
        *run("risk", multi, "--keys", "a", "--sensitive", "multi,x", "--out", out),
        "l_entropy_multi",
    )
    # one column with two roles
    assert_one_line_error(
        *run("risk", good, "--keys", "a,b", "--weight", "b", "--out", out), "two roles"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--method", "fast", "'--method'"),
        ("--missing", "skip", "'--missing'"),
        ("--seed", "-1", "seed"),
    ],
)
def test_bad_option_values(tmp_path: Path, option: str, value: str, needle: str) -> None:
    good = tmp_path / "good.csv"
    good.write_text("a,b\n1,2\n1,3\n")
    out = tmp_path / "risk.csv"
    assert_one_line_error(*run("risk", good, "--keys", "a", "--out", out, option, value), needle)
    assert not out.exists()


def test_version_and_console_script(tmp_path: Path) -> None:
    code, stdout, _ = run("--version")
    assert code == 0 and stdout.strip().startswith("sdckit ")
    # the real entry point, in a fresh process: exit status 2, one line, no traceback
    proc = subprocess.run(
        [sys.executable, "-m", "sdckit", "risk", str(tmp_path / "none.csv"), "-k", "a", "-o",
         str(tmp_path / "o.csv")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "does not exist")


def test_summary_without_out(shared_data: Path) -> None:
    from typer.testing import CliRunner

    from sdckit.cli.app import app

    keys = "urbrur,roof,walls,water,electcon,relat,sex"
    result = CliRunner().invoke(
        app, ["risk", str(shared_data / "testdata.csv"), "--keys", keys, "-w", "sampling_weight"]
    )
    assert result.exit_code == 0, result.output
    assert "157" in result.output and "written" not in result.output


def test_key_codes_are_read_as_written(tmp_path: Path) -> None:
    source = tmp_path / "codes.csv"
    # codes of a classification: 1.1 and 1.10 differ, and so do 01234, 1234 and 001234
    source.write_text(
        "activity,district,w\n1.1,01234,10\n1.10,1234,20\n1.2,001234,30\n1.20,007,40\n1.3,7,50\n"
    )
    out = tmp_path / "risk.csv"
    code, stdout, stderr = run(
        "risk", source, "--keys", "activity,district", "--weight", "w", "--out", out
    )
    assert code == 0, stderr
    assert read_data(out)["fk"].to_list() == [1, 1, 1, 1, 1]
    lines = {" ".join(line.strip("│┃ ").split()) for line in stdout.splitlines()}
    assert "sample uniques (fk = 1) │ 5" in lines
    code, _, stderr = run("risk", source, "--keys", "activity", "--weight", "w", "--out", out)
    assert code == 0, stderr
    assert read_data(out)["fk"].to_list() == [1, 1, 1, 1, 1]  # not 2, 2, 2, 2, 1


def test_na_values_option(tmp_path: Path) -> None:
    source = tmp_path / "small.csv"
    source.write_text("a,b,w\n2,3,18\n3,3,45.5\n2,-9,39\n2,NA,51\n")
    out = tmp_path / "risk.csv"
    expected = {
        None: [2, 1, 2, 3],  # NA is missing (matches any b), -9 a category
        "NA,-9": [3, 1, 3, 3],  # both missing
        "NA, -9": [3, 1, 3, 3],  # spaces around the entries do not count
        "": [1, 1, 1, 1],  # only empty fields: NA and -9 are categories
    }
    for option, fk in expected.items():
        extra = [] if option is None else ["--na-values", option]
        code, _, stderr = run("risk", source, "--keys", "a,b", "-w", "w", "-o", out, *extra)
        assert code == 0, stderr
        assert read_data(out)["fk"].to_list() == fk, option


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (b"a,b\n1,2\n3,4\n5,6\n7\n", ("Line 5 of 'bad.csv' has 1 field", "complete the row")),
        (b"a,b\n1,2\n3,4,SECRET\n", ("Line 3", "3 fields", "remove the extra fields")),
        (b"a,b\n1,2\n3,Z\xfcrich SECRET\n", ("Line 3", "not UTF-8", "save it as UTF-8")),
        (b'a,b\n1,2\n3,"SECRET\n', ("Line 3", "quoted field that is not closed")),
        (b"", ("'bad.csv' is empty",)),
        (b"a,b,a\n1,2,3\n", ("duplicate column names: 'a'",)),
    ],
)
def test_bad_csv_files_exit_2_in_one_line_without_values(
    tmp_path: Path, content: bytes, needles: tuple[str, ...]
) -> None:
    source = tmp_path / "bad.csv"
    source.write_bytes(content)
    code, stdout, stderr = run("risk", source, "--keys", "a,b", "--out", tmp_path / "risk.csv")
    assert_one_line_error(code, stdout, stderr, *needles)
    assert "SECRET" not in stdout + stderr and "rich" not in stderr
    assert not (tmp_path / "risk.csv").exists()


@pytest.mark.parametrize("ext", [".parquet", ".sav", ".dta"])
def test_damaged_typed_files_exit_2_in_one_line(tmp_path: Path, ext: str) -> None:
    source = tmp_path / f"bad{ext}"
    write_data(pl.DataFrame({"a": [1, 2], "b": ["SECRET", "x"]}), source)
    source.write_bytes(source.read_bytes()[:40])
    code, stdout, stderr = run("risk", source, "--keys", "a,b", "--out", tmp_path / "risk.csv")
    assert_one_line_error(code, stdout, stderr, f"Could not read 'bad{ext}'")
    assert "SECRET" not in stdout + stderr
    source.write_bytes(b"SECRET " * 10)
    code, stdout, stderr = run("risk", source, "--keys", "a,b", "--out", tmp_path / "risk.csv")
    assert_one_line_error(code, stdout, stderr, "does not begin like one")
    assert "SECRET" not in stdout + stderr


@pytest.mark.parametrize("argv", [["--help"], ["risk", "--help"]])
def test_help_starts_fast(argv: list[str]) -> None:
    """The help needs no numpy, polars or measure: a fresh process answers at once.

    About 0.25 s on the project machine without bytecode files; the bound leaves room for a
    loaded CI machine.
    """
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "sdckit", *argv], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert elapsed < 2.0, f"sdckit {' '.join(argv)} took {elapsed:.2f} s"


def test_only_the_role_columns_are_read(
    tmp_path: Path, testdata: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Parquet file gives only the columns with a role; the result is the same."""
    plain = tmp_path / "plain.parquet"
    write_data(testdata, plain)
    extra = tmp_path / "extra.parquet"
    nested = pl.Series("nested", [[i, i + 1] for i in range(testdata.height)])
    testdata.with_columns(nested).write_parquet(extra)
    read = pl.read_parquet
    asked: list[object] = []

    def spy(source: object, *args: object, **kwargs: object) -> pl.DataFrame:
        asked.append(kwargs.get("columns"))
        return read(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pl, "read_parquet", spy)
    outputs = []
    for source in (plain, extra):
        out = tmp_path / f"risk_{source.stem}.parquet"
        code, _, stderr = run(
            "risk", source, "-k", ",".join(KEYS), "-w", "sampling_weight", "--household",
            "ori_hid", "--sensitive", "hhcivil", "-o", out,
        )  # fmt: skip
        assert code == 0, stderr
        outputs.append(read(out))
    wanted = {*KEYS, "sampling_weight", "ori_hid", "hhcivil"}
    assert [set(c) for c in asked if c is not None] == [wanted, wanted]
    assert outputs[0].equals(outputs[1])
    api = individual_risk(testdata, keys=KEYS, weight="sampling_weight")
    np.testing.assert_array_equal(outputs[0]["risk"].to_numpy(), api.risk)
