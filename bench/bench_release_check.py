"""Benchmark: the release check where the user meets it, beside the job and a polars floor.

Run: ``.venv/bin/python bench/bench_release_check.py [--persons 1000000] [--skip-cli]``
(about six minutes with the defaults on two cores).

Two files:

* the bundled demo census (50,000 persons), protected by the shipped demo job
  (``src/sdckit/demo_job.toml``, the R-U map left out);
* a household survey of about ``--persons`` persons (``generate_household_survey``), protected
  by the shipped survey job (``src/sdckit/survey_job.toml``: interval recoding, local
  suppression with the household size fixed, noise on the household incomes, univariate
  microaggregation, weight calibration; the weight, a new household id, the household size and
  the household incomes are released).

For each, the job runs in this process with its progress callback timing every stage; the
release check's own stage is reported beside the steps' time and the whole job.  On the large
file ``sdckit protect`` also runs as a subprocess, exactly as a user starts it (interpreter
start, reading the Parquet file, writing the protected file).  The floor is what plain polars
needs for the lightest part of the check that no attacker can skip: one group-by of every
released column with every protected variable (the counts the shared-values attack reads), on
the file as written.  It finds nothing and scores nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from sdckit.datasets import generate_household_survey
from sdckit.jobs import load_job, run_job

ROOT = Path(__file__).resolve().parents[1]


def _timed_job(job_path: Path) -> tuple[dict[str, float], float, object]:
    """Run the job in process; the wall time of every stage and of the whole job."""
    marks: dict[str, list[float]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        marks.setdefault(stage, [now, now])[1] = now

    start = time.perf_counter()
    job = load_job(job_path, output_dir=job_path.parent / "out")
    loaded = time.perf_counter()
    result = run_job(job, progress=progress, write=False)
    total = time.perf_counter() - start
    stages = {stage: end - begin for stage, (begin, end) in marks.items()}
    stages["Loading the job"] = loaded - start
    return stages, total, result


def _floor(released: pl.DataFrame, targets: list[str]) -> float:
    start = time.perf_counter()
    for t in targets:
        for c in released.columns:
            if c != t:
                released.group_by(c, t).len()
    return time.perf_counter() - start


def _row(name: str, stages: dict[str, float], total: float, floor: float, result) -> str:  # type: ignore[no-untyped-def]
    check = result.release.check
    steps = stages.get("Protection steps", float("nan"))
    return (
        f"| {name} | {check.n_records:,} | {steps:.1f} | {stages['Release check']:.1f} | "
        f"{total:.1f} | {floor:.1f} | {'yes' if check.ok else 'no'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        demo = (ROOT / "src/sdckit/demo_job.toml").read_text(encoding="utf-8")
        (folder / "demo.toml").write_text(demo[: demo.index("[ru_map]")], encoding="utf-8")
        stages, total, result = _timed_job(folder / "demo.toml")
        out = result.release
        targets = [a.target for a in out.check.attacks]
        rows.append(_row("demo census (demo job)", stages, total,
                         _floor(out.output, sorted(set(targets))), result))  # fmt: skip

        households = max(args.persons * 10 // 24, 10)
        data = generate_household_survey(households, seed=3)
        data.write_parquet(folder / "survey.parquet")
        text = (ROOT / "src/sdckit/survey_job.toml").read_text(encoding="utf-8")
        text = text.replace('dataset = "survey"', 'file = "survey.parquet"')
        (folder / "survey.toml").write_text(text, encoding="utf-8")
        stages, total, result = _timed_job(folder / "survey.toml")
        out = result.release
        targets = sorted({a.target for a in out.check.attacks if a.target in out.output.columns})
        rows.append(_row("household survey (survey job)", stages, total,
                         _floor(out.output, targets), result))  # fmt: skip
        cli = None
        if not args.skip_cli:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "sdckit", "protect", str(folder / "survey.toml"),
                 "--out-dir", str(folder / "out")],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            cli = (time.perf_counter() - start, done.returncode)
    print("| file | records | steps (s) | release check (s) | whole job (s) | floor (s) | "
          "may be released |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(row)
    if cli is not None:
        print(f"\n`sdckit protect` of the survey job as a subprocess: {cli[0]:.1f} s "
              f"(exit status {cli[1]}).")  # fmt: skip


if __name__ == "__main__":
    main()
