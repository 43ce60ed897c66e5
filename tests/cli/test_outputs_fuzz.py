"""A fuzz test of the outputs of ``sdckit protect``: bad paths, duplicate outputs, long column
names, unwritable folders, labelled SPSS / Stata inputs and ``kill -9`` during a write.

What must hold in every case: no traceback, a bad output refused with exit 2 and one line
*before any work* (no progress shown, no file touched), no output silently overwritten by
another, the labels of a labelled input kept, the same bytes for the same seed, and no temporary
file left once the next run of the job has written its outputs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyreadstat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import sdckit
from sdckit._files import TEMP_TAG
from sdckit.cli.app import app
from sdckit.io import read_data, read_labels

runner = CliRunner()
N = 240
REGIONS = {1: "North", 2: "South", 3: "East", 4: "West", 9: "unknown"}
SEXES = {1: "male", 2: "female"}
AGES = {1: "0-29", 2: "30-59", 3: "60+"}
COLUMN_LABELS = {"region": "Region of residence", "sex": "Sex", "age_group": "Age group"}
LONG = "highest_completed_level_of_education_of_the_household_reference_person"  # 70


def survey(seed: int = 11) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "region": rng.integers(1, 5, N),
            "sex": rng.integers(1, 3, N),
            "age_group": rng.integers(1, 4, N),
            "income": rng.normal(3000, 700, N).round(2),
        }
    )


def write_labelled(path: Path) -> None:
    """An SPSS or Stata file as a survey office would send it: codes with value labels."""
    frame = survey()
    labels = {"region": REGIONS, "sex": SEXES, "age_group": AGES}
    if path.suffix == ".sav":
        formats = {"region": "F1.0", "sex": "F1.0", "age_group": "F1.0", "income": "F8.2"}
        pyreadstat.write_sav(
            frame, str(path), column_labels=COLUMN_LABELS, variable_value_labels=labels,
            variable_format=formats,
        )  # fmt: skip
    else:
        formats = {"region": "%8.0f", "sex": "%8.0f", "age_group": "%8.0f", "income": "%9.2f"}
        pyreadstat.write_dta(
            frame, str(path), column_labels=COLUMN_LABELS, variable_value_labels=labels,
            variable_format=formats,
        )  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    write_labelled(folder / "survey.sav")
    write_labelled(folder / "survey.dta")
    survey().with_columns(pl.col("income").alias(LONG)).write_csv(folder / "long.csv")
    (folder / "a_file").write_text("a file, not a folder")
    (folder / "folder.csv").mkdir()
    return folder


def job(folder: Path, input_file: Path, outputs: dict[str, str], extra: str = "") -> Path:
    """A small protection job: recode a region away, 3-anonymity; ``outputs`` as given."""
    lines = "\n".join(f'{key} = "{value}"' for key, value in outputs.items())
    text = textwrap.dedent(
        f"""
        seed = 5
        [input]
        file = "{input_file.as_posix()}"
        [roles]
        keys = ["region", "sex", "age_group"]
        numeric = ["income"]
        [[steps]]
        method = "global_recoding"
        mapping = {{ region = {{ "4" = "3" }} }}
        [[steps]]
        method = "local_suppression"
        k = 3
        [target]
        k = 3
        max_global_risk_pct = 30
        [output]
        plots = false
        """
    )
    path = folder / "job.toml"
    path.write_text(text + lines + "\n" + textwrap.dedent(extra), encoding="utf-8")
    return path


def protect(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["protect", *map(str, args)])
    # an exception other than the exit is a traceback for the user
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


def temp_files(*folders: Path) -> list[Path]:
    return [p for f in folders if f.is_dir() for p in f.rglob(f"*{TEMP_TAG}*")]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# ------------------------------------------------------------- bad outputs, before any work
ROOT = os.geteuid() == 0

#: name -> (outputs of [output], extra job text, --out-dir or None, words of the message)
BAD = {
    "under a file": ({"data": "{inputs}/a_file/out.csv"}, "", None, ["is a file"]),
    "report under a file": (
        {"data": "o/d.csv", "report_internal": "{inputs}/a_file/r.html"},
        "",
        None,
        ["is a file"],
    ),
    "in /proc": ({"data": "/proc/sdckit-fuzz/out.csv"}, "", None, ["no file can be created"]),
    "out-dir is a file": ({"data": "o/d.csv"}, "", "{inputs}/a_file", ["is a file"]),
    "out-dir in /proc": ({"data": "o/d.csv"}, "", "/proc/sdckit-fuzz", ["no file can be"]),
    "internal = external": (
        {"data": "o/d.csv", "report_internal": "o/r.html", "report_external": "o/r.html"},
        "",
        None,
        ["'report_internal' and 'report_external' are the same file"],
    ),
    "same file, other spelling": (
        {"report_internal": "o/r.html", "report_external": "o/../o/./r.html"},
        "",
        None,
        ["are the same file"],
    ),
    "out-dir maps two to one": (
        {"report_internal": "a/r.html", "report_external": "b/r.html"},
        "",
        "{work}/moved",
        ["--out-dir puts", "'report_internal' and 'report_external'"],
    ),
    "output is the input": ({"data": "{input}"}, "", None, ["input file"]),
    "out-dir onto the input": ({"data": "o/survey.sav"}, "", "{inputs}", ["input file"]),
    "a folder as output": ({"data": "{inputs}/folder.csv"}, "", None, ["directory"]),
    "long name to .sav": ({"data": "o/d.sav"}, "", None, [f"'{LONG}'", "64 bytes"]),
    "long name to .dta": ({"data": "o/d.dta"}, "", None, [f"'{LONG}'", "32 characters"]),
    "long name to .xpt": ({"data": "o/d.xpt"}, "", None, [f"'{LONG}'", "32 characters"]),
    "timestamp not a bool": ({"data": "o/d.csv"}, 'timestamp = "yes"', None, ["'timestamp'"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
@settings(
    max_examples=4, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(source=st.sampled_from(["survey.sav", "survey.dta", "long.csv"]), existing=st.booleans())
def test_a_bad_output_is_refused_before_any_work(
    inputs: Path, case: str, source: str, existing: bool
) -> None:
    outputs, extra, out_dir, needles = BAD[case]
    if case.startswith("long name"):
        source = "long.csv"
    if case == "out-dir onto the input":
        source = "survey.sav"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        names = {"inputs": inputs.as_posix(), "work": work.as_posix()}
        names["input"] = (inputs / source).as_posix()
        filled = {k: v.format(**names) for k, v in outputs.items()}
        path = job(work, inputs / source, filled, extra)
        if existing:  # earlier outputs at the places: none may change
            (work / "o").mkdir()
            (work / "o" / "d.csv").write_text("an earlier output")
            (work / "o" / "r.html").write_text("an earlier report")
        before, inputs_before = snapshot(work), snapshot(inputs)
        args: list[str | Path] = [path]
        if out_dir is not None:
            args += ["--out-dir", out_dir.format(**names)]
        code, stdout, stderr = protect(*args)
        assert code == 2, (case, stdout, stderr)
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
        for needle in needles:
            assert needle in lines[0], (case, lines[0])
        assert "Protection steps" not in stdout  # refused before the first step
        assert snapshot(work) == before and snapshot(inputs) == inputs_before
        assert temp_files(work, inputs) == []


def test_a_read_only_folder(inputs: Path, tmp_path: Path) -> None:
    """Root writes into a read-only folder (as in CI): then the job runs; otherwise it is
    refused before any work.  Never a traceback."""
    locked = tmp_path / "locked"
    locked.mkdir()
    path = job(tmp_path, inputs / "survey.sav", {"data": f"{locked.as_posix()}/d.csv"})
    locked.chmod(0o555)
    try:
        code, _, stderr = protect(path)
    finally:
        locked.chmod(0o755)
    if ROOT:
        assert code == 0, stderr
        assert read_data(locked / "d.csv").height == N
    else:  # pragma: no cover - CI runs as root
        assert code == 2 and "no file can be created" in stderr
        assert list(locked.iterdir()) == []


def test_a_long_name_left_out_of_the_release_is_fine(inputs: Path, tmp_path: Path) -> None:
    path = job(tmp_path, inputs / "long.csv", {"data": "o/d.sav"}, f'drop = ["{LONG}"]')
    code, _, stderr = protect(path)
    assert code == 0, stderr
    assert LONG not in read_data(tmp_path / "o" / "d.sav").columns


# ---------------------------------------------------------- labels, and the same bytes
@pytest.mark.parametrize(
    ("source", "target"),
    [("survey.sav", "d.sav"), ("survey.dta", "d.dta"), ("survey.sav", "d.dta"),
     ("survey.dta", "d.sav")],
)  # fmt: skip
def test_labels_are_kept_and_the_same_seed_gives_the_same_bytes(
    inputs: Path, tmp_path: Path, source: str, target: str
) -> None:
    outputs = {"data": target, "report_internal": "r_int.html", "report_external": "r_ext.html"}
    path = job(tmp_path, inputs / source, outputs)
    for run in ("one", "two"):
        code, _, stderr = protect(path, "--out-dir", tmp_path / run, "--seed", "7")
        assert code == 0, stderr
    one, two = snapshot(tmp_path / "one"), snapshot(tmp_path / "two")
    assert sorted(one) == sorted(outputs.values())
    assert one == two  # byte for byte, reports and file headers included
    written = tmp_path / "one" / target
    frame = read_data(written)  # pyreadstat still reads the file
    labels = read_labels(written)
    assert labels.column_labels == COLUMN_LABELS
    assert labels.value_labels["sex"] == SEXES
    if target.endswith(".sav"):  # the region recoded to text: West merged into East
        present = set(frame["region"].drop_nulls().to_list())
        assert present == {"1", "2", "3"}
        assert labels.value_labels["region"] == {"1": "North", "2": "South", "3": "East / West"}
    else:  # Stata labels whole-number columns only
        assert "region" not in labels.value_labels
    assert b"generated by sdckit" in (tmp_path / "one" / "r_int.html").read_bytes()


def test_timestamp_true_writes_the_time(inputs: Path, tmp_path: Path) -> None:
    outputs = {"data": "d.sav", "report_external": "r.html"}
    path = job(tmp_path, inputs / "survey.sav", outputs, "timestamp = true")
    code, _, stderr = protect(path)
    assert code == 0, stderr
    year = time.strftime("%Y")
    assert f"generated {year}-" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert b"01 Jan 70" not in (tmp_path / "d.sav").read_bytes()[:120]


# ------------------------------------------------------------------- kill -9 during writes
#: Runs ``sdckit protect`` with one writer slowed down: it writes half its content, says so
#: (touches the flag file) and waits, so that the test kills the process in the middle of it.
SLOW_WRITER = """
import pathlib, sys, time
import polars as pl
flag, which = pathlib.Path(sys.argv[1]), sys.argv[2]

def pause():
    flag.touch()
    time.sleep(120)

if which == "data":
    real = pl.DataFrame.write_csv
    def write_csv(self, file=None, **options):
        real(self.head(self.height // 2), file, **options)
        pause()
    pl.DataFrame.write_csv = write_csv
else:
    real_text = pathlib.Path.write_text
    def write_text(self, data, *args, **options):
        if ".html." in self.name:
            real_text(self, data[: len(data) // 2], *args, **options)
            pause()
        return real_text(self, data, *args, **options)
    pathlib.Path.write_text = write_text
from sdckit.cli.app import app
sys.argv = ["sdckit", "protect", *sys.argv[3:]]
app()
"""


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(Path(sdckit.__file__).parents[1]))
    return subprocess.Popen(
        [sys.executable, *args], env=env, cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_for(flag: Path, proc: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not flag.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the job never reached the write"
        time.sleep(0.02)


@pytest.mark.parametrize("which", ["data", "report"])
def test_kill_9_during_a_write_then_the_next_run_cleans_up(
    inputs: Path, tmp_path: Path, which: str
) -> None:
    outputs = {"data": "o/d.csv", "report_internal": "o/int.html", "report_external": "o/ext.html"}
    path = job(tmp_path, inputs / "survey.sav", outputs)
    out = tmp_path / "o"
    code, _, stderr = protect(path)  # an earlier complete run
    assert code == 0, stderr
    earlier = snapshot(out)
    flag = tmp_path / "writing"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_WRITER, encoding="utf-8")
    proc = start([str(script), str(flag), which, str(path), "--seed", "9"], tmp_path)
    wait_for(flag, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()  # reaped: the pid is gone
    left = temp_files(out)
    assert len(left) == 1 and left[0].name.startswith(
        f".{'d.csv' if which == 'data' else 'int.html'}.{TEMP_TAG}-{proc.pid}."
    )
    assert {k: v for k, v in snapshot(out).items() if TEMP_TAG not in k} == earlier
    code, _, stderr = protect(path, "--seed", "9")  # the next run
    assert code == 0, stderr
    assert temp_files(out) == []
    assert sorted(snapshot(out)) == ["d.csv", "ext.html", "int.html"]
    assert read_data(out / "d.csv").height == N


def test_kill_9_at_any_moment_leaves_complete_files_or_none(inputs: Path, tmp_path: Path) -> None:
    """The real command, unpatched, killed as soon as it starts writing (when the polling
    catches it): every output is complete or absent, and the next run leaves no temp file."""
    outputs = {"data": "o/d.csv", "report_internal": "o/int.html", "report_external": "o/ext.html"}
    path = job(tmp_path, inputs / "survey.dta", outputs)
    out = tmp_path / "o"
    proc = start(["-m", "sdckit", "protect", str(path)], tmp_path)
    deadline = time.monotonic() + 90
    while proc.poll() is None and not temp_files(out) and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for name in ("d.csv",):
        if (out / name).exists():
            assert read_data(out / name).height == N
    for name in ("int.html", "ext.html"):
        if (out / name).exists():
            assert (out / name).read_text(encoding="utf-8").rstrip().endswith("</html>")
    code, _, stderr = protect(path)
    assert code == 0, stderr
    assert temp_files(out) == []


# ----------------------------------------------------------------------------- table jobs
@pytest.mark.parametrize(
    ("key", "where", "needle"),
    [
        ("table", "{inputs}/a_file/t.csv", "is a file"),
        ("table_full", "/proc/sdckit-fuzz/t.csv", "no file can be created"),
        ("report_internal", "{inputs}/a_file/r.html", "is a file"),
    ],
)
def test_a_table_job_output_that_cannot_be_written_is_refused_before_any_work(
    inputs: Path, tmp_path: Path, key: str, where: str, needle: str
) -> None:
    data = tmp_path / "survey.csv"
    survey().write_csv(data)
    outputs = {"table": "o/t.csv", "table_full": "o/full.csv"}
    outputs[key] = where.format(inputs=inputs.as_posix())
    lines = "\n".join(f'{k} = "{v}"' for k, v in outputs.items())
    path = tmp_path / "table.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [input]
            file = "{data.as_posix()}"
            [table]
            dimensions = ["region", "sex"]
            [[rules]]
            rule = "min_frequency"
            threshold = 3
            [suppression]
            method = "optimal"
            [output]
            """
        )
        + lines
        + "\n",
        encoding="utf-8",
    )
    before = snapshot(inputs)
    result = runner.invoke(app, ["table", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    message = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(message) == 1 and needle in message[0] and f"'{key}'" in message[0], message
    assert not (tmp_path / "o").exists()  # nothing written, no folder created
    assert snapshot(inputs) == before


def test_a_job_only_read_does_not_need_writable_outputs(inputs: Path, tmp_path: Path) -> None:
    """``sdckit check`` reads a job (writes=False): its outputs need not be writable there."""
    from sdckit.errors import DataError
    from sdckit.jobs import load_job

    path = job(tmp_path, inputs / "long.csv", {"data": f"{inputs.as_posix()}/a_file/d.sav"})
    with pytest.raises(DataError, match="is a file"):
        load_job(path)
    assert load_job(path, writes=False).output_data == inputs / "a_file" / "d.sav"


def test_a_write_failing_at_the_end_is_one_line_with_exit_2(
    inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up during the writes: one line, exit 2 (not 1, "target missed"), the
    earlier file kept, no temporary file."""
    outputs = {"data": "o/d.csv", "report_internal": "o/int.html"}
    path = job(tmp_path, inputs / "survey.sav", outputs)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "d.csv").write_text("an earlier output")
    real = os.replace

    def full_disk(src: str | Path, dst: str | Path) -> None:
        if Path(dst).name == "d.csv":
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", full_disk)
    code, _, stderr = protect(path)
    assert code == 2, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0], stderr
    assert "'d.csv'" in lines[0] and "nothing was written" in lines[0]
    assert (tmp_path / "o" / "d.csv").read_text() == "an earlier output"
    assert temp_files(tmp_path / "o") == []
