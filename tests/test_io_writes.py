"""Tests of how sdckit writes files: the one atomic writer (permissions, fsync, leftovers of
killed writes), the checks of an output before any work, labels carried to labelled outputs,
and the same bytes for the same data (no time of writing in headers or reports)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyreadstat
import pytest
from polars.testing import assert_frame_equal

from sdckit import ColumnError, DataError
from sdckit._files import TEMP_TAG, leftover_temp_files
from sdckit.io import (
    FileMetadata,
    atomic_path,
    check_column_names,
    check_output_path,
    read_data,
    read_data_with_labels,
    read_labels,
    write_data,
)

SMALL = pl.DataFrame({"sex": [1, 2, 1], "region": ["North", "South", None], "x": [1.5, 2.0, 0.0]})


def names_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def start_time(pid: int) -> str:
    """When the process ``pid`` started (clock ticks since boot, from /proc)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ------------------------------------------------------------------------ the atomic writer
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_new_file_gets_the_usual_permissions(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_data(SMALL, tmp_path / "a.csv")
        with atomic_path(tmp_path / "b.txt") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(old)
    for name in ("a.csv", "b.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask


def test_the_temporary_file_is_private_while_written(tmp_path: Path) -> None:
    """Confidential data is never readable by others on the way (nor in a file a killed
    writer leaves behind); the target gets the usual permissions at the rename."""
    with atomic_path(tmp_path / "c.csv") as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o600
        tmp.write_text("secret")
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o600
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "c.csv").stat().st_mode) == 0o666 & ~umask


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "a.csv"
    write_data(SMALL, target)
    target.chmod(0o640)
    write_data(SMALL.head(1), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert read_data(target).height == 1


def test_the_file_is_flushed_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync " + Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with atomic_path(tmp_path / "t.txt") as tmp:
        tmp.write_text("x")
    first = events.index("replace")
    assert any(e.startswith(f"fsync .t.txt.{TEMP_TAG}-{os.getpid()}.") for e in events[:first])
    assert events[first + 1 :] == [f"fsync {tmp_path.name}"]  # the folder, for the rename


def test_the_temporary_file_has_a_recognisable_name(tmp_path: Path) -> None:
    with atomic_path(tmp_path / "data.csv") as tmp:
        assert tmp.parent == tmp_path
        assert re.fullmatch(
            rf"\.data\.csv\.{TEMP_TAG}-{os.getpid()}\.{start_time(os.getpid())}-[0-9a-f]{{8}}",
            tmp.name,
        ), tmp.name
        assert tmp.exists()
    assert names_in(tmp_path) == ["data.csv"]


def test_leftovers_of_dead_writers_are_removed_live_ones_kept(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    dead = tmp_path / f".out.csv.{TEMP_TAG}-{dead_pid()}-0123abcd"
    dead.write_text("half a file of a killed run")
    dead_dir = tmp_path / f".out.csv.{TEMP_TAG}-{dead_pid()}-89abcdef"
    dead_dir.mkdir()
    (dead_dir / "part-0.parquet").write_text("x")
    live = tmp_path / f".out.csv.{TEMP_TAG}-{os.getppid()}-0123abcd"  # the parent is alive
    live.write_text("being written")
    other = tmp_path / f".other.csv.{TEMP_TAG}-{dead_pid()}-0123abcd"  # another target's
    other.write_text("x")
    assert leftover_temp_files(target) == sorted([dead, dead_dir])
    write_data(SMALL, target)
    assert names_in(tmp_path) == sorted(["out.csv", live.name, other.name])


def test_a_pid_reused_by_another_process_counts_as_dead(tmp_path: Path) -> None:
    parent = os.getppid()  # alive: its start time tells its own leftover from a dead one's
    own = tmp_path / f".a.csv.{TEMP_TAG}-{parent}.{start_time(parent)}-0123abcd"
    own.write_text("being written")
    reused = tmp_path / f".a.csv.{TEMP_TAG}-{parent}.{int(start_time(parent)) + 1}-0123abcd"
    reused.write_text("left by a dead writer whose pid the parent got")
    assert leftover_temp_files(tmp_path / "a.csv") == [reused]


def test_a_zombie_writer_counts_as_dead(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    leftover = tmp_path / f".r.html.{TEMP_TAG}-{proc.pid}-0123abcd"
    leftover.write_text("x")
    assert leftover_temp_files(tmp_path / "r.html") == [leftover]
    proc.wait()


@pytest.mark.parametrize("where", ["under_a_file", "proc", "missing_folder"], ids=lambda w: str(w))
def test_an_unwritable_target_is_a_data_error_and_leaves_nothing(
    tmp_path: Path, where: str
) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("a file")
    target = {
        "under_a_file": blocker / "out.csv",
        "proc": Path("/proc/sdckit-test/out.csv"),
        "missing_folder": tmp_path / "no" / "out.csv",
    }[where]
    with pytest.raises(DataError) as info:
        write_data(SMALL, target)
    assert "\n" not in str(info.value)
    assert names_in(tmp_path) == ["plain.txt"]


def test_a_failed_rename_keeps_the_old_file_and_is_a_data_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "t.csv"
    write_data(SMALL, target)
    before = target.read_bytes()

    def no_space(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(DataError, match=r"No space left on device.*nothing was written"):
        write_data(SMALL.head(1), target)
    assert target.read_bytes() == before
    assert names_in(tmp_path) == ["t.csv"]


# ------------------------------------------------------------------ checks before any work
def test_check_output_path(tmp_path: Path) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("a file")
    check_output_path(tmp_path / "deep" / "er" / "out.csv", "output")  # can be created
    assert names_in(tmp_path) == ["plain.txt"]  # and nothing was created
    with pytest.raises(DataError, match="is a file, not a folder"):
        check_output_path(blocker / "sub" / "out.csv", "[output] 'data' file")
    with pytest.raises(DataError, match="is a folder"):
        check_output_path(tmp_path, "[output] 'data' file")
    with pytest.raises(DataError, match="no file can be created in '/proc'"):
        check_output_path(Path("/proc/sdckit-test/out.csv"), "[output] 'data' file")
    assert names_in(tmp_path) == ["plain.txt"]


@pytest.mark.parametrize(
    ("fmt", "ok", "refused", "why"),
    [
        ("spss", ["a" * 64, "é" * 32, "a.b"], ["a" * 65, "é" * 33, "a b", "_a"], "64 bytes"),
        ("stata", ["a" * 32, "é" * 32, "_a"], ["a" * 33, "é" * 33, "a.b"], "32"),
        ("sas_xport", ["a" * 32, "_a"], ["a" * 33, "é", "a-b"], "32"),
    ],
)
def test_column_names_the_format_cannot_hold(
    fmt: str, ok: list[str], refused: list[str], why: str
) -> None:
    check_column_names(["id", *ok], fmt, "out")
    for name in refused:
        with pytest.raises(ColumnError) as info:
            check_column_names(["id", name], fmt, "out")
        message = str(info.value)
        assert repr(name) in message and "rename it" in message, message
    with pytest.raises(ColumnError, match=why):
        check_column_names(["x" * 70], fmt, "out")
    check_column_names(["x" * 70, "a b", "é" * 40], "csv", "out")
    check_column_names(["x" * 70, "a b", "é" * 40], "parquet", "out")


@pytest.mark.parametrize("ext", [".sav", ".dta", ".xpt"])
def test_write_data_names_the_long_column(tmp_path: Path, ext: str) -> None:
    long = "household_" + "x" * 60
    with pytest.raises(ColumnError, match=f"'{long}'"):
        write_data(SMALL.rename({"x": long}), tmp_path / f"out{ext}")
    assert names_in(tmp_path) == []


# ------------------------------------------------------------------------ the same bytes
HEADER_TIME = {".sav": b"01 Jan 7000:00:00", ".dta": b"01 Jan 1970 00:00", ".xpt": b"01JAN70:"}


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".sav", ".zsav", ".dta", ".xpt"])
def test_the_same_data_give_the_same_bytes(tmp_path: Path, ext: str) -> None:
    frame = SMALL.with_columns(pl.col("region").fill_null("none"))
    labels = {"value_labels": {"sex": {1: "m", 2: "f"}}} if ext in (".sav", ".dta") else {}
    write_data(frame, tmp_path / f"a{ext}", **labels)
    time.sleep(1.1)  # a second later: a header with the time of writing would differ
    write_data(frame, tmp_path / f"b{ext}", **labels)
    a, b = (tmp_path / f"a{ext}").read_bytes(), (tmp_path / f"b{ext}").read_bytes()
    assert a == b
    fixed = HEADER_TIME.get(ext.replace(".zsav", ".sav"))
    if fixed is not None:
        assert fixed in a[:700]
    back = read_data(tmp_path / f"a{ext}")
    assert_frame_equal(back, frame, check_dtypes=False)


@pytest.mark.parametrize("ext", [".sav", ".dta", ".xpt"])
def test_timestamp_true_keeps_the_time_of_writing(tmp_path: Path, ext: str) -> None:
    write_data(SMALL, tmp_path / f"a{ext}", timestamp=True)
    head = (tmp_path / f"a{ext}").read_bytes()[:700]
    year = time.strftime("%Y").encode()
    assert HEADER_TIME[ext] not in head
    assert year in head or year[2:] in head


# ------------------------------------------------------------------------------ labels
def labelled_file(path: Path) -> None:
    frame = pl.DataFrame({"sex": [1, 2, 2], "region": [1, 3, 3], "age": [30, 41, 52]})
    writer = pyreadstat.write_sav if path.suffix == ".sav" else pyreadstat.write_dta
    writer(
        frame,
        str(path),
        column_labels={"sex": "Sex of the person", "region": "Region"},
        variable_value_labels={"sex": {1: "male", 2: "female"}, "region": {1: "N", 2: "S", 3: "E"}},
        variable_format={"sex": "F1.0", "region": "F1.0", "age": "F3.0"}
        if path.suffix == ".sav"
        else {"sex": "%8.0f", "region": "%8.0f", "age": "%8.0f"},
    )


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_read_labels_reads_only_the_labels(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"in{ext}"
    labelled_file(path)
    _, full = read_data_with_labels(path)
    meta = read_labels(path)
    assert (
        meta.value_labels
        == full.value_labels
        == {
            "sex": {1: "male", 2: "female"},
            "region": {1: "N", 2: "S", 3: "E"},
        }
    )
    assert meta.column_labels == full.column_labels
    assert meta.column_labels == {"sex": "Sex of the person", "region": "Region"}
    assert read_labels(tmp_path / "x.csv") == FileMetadata("csv")


def test_every_writer_gives_the_usual_permissions_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    import numpy as np

    from sdckit.report import write_report, write_table_report
    from sdckit.session import Session
    from sdckit.tables import MarkedCells, Table, apply_rules, suppress_optimal
    from sdckit.tables.ptable import ptable_counts, write_ptable

    t = Table.from_array(
        np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]), {"r": ["a", "b"], "c": ["x", "y"]}
    )
    result = suppress_optimal(apply_rules(t, MarkedCells(cells=[4], upper=1)), cost="unity")
    session = Session(pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2]}), keys=["a", "b"])
    old = os.umask(0o027)
    try:
        written = [
            result.table.write(tmp_path / "published.csv", published=True),
            result.table.write(tmp_path / "full.parquet", published=False),
            write_ptable(ptable_counts(D=2, V=1.0), tmp_path / "pt.txt"),
            write_table_report(result, tmp_path / "table.html"),
            write_report(session, tmp_path / "report.html", kind="external"),
        ]
        write_data(SMALL, tmp_path / "data.sav")
    finally:
        os.umask(old)
    for path in [*written, tmp_path / "data.sav"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path.name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    for report in ("table.html", "report.html"):  # no time of writing by default
        text = (tmp_path / report).read_text(encoding="utf-8")
        assert "generated by sdckit" in text
