"""The census-like protection job on the streaming engine, beside the in-memory path and a
plain polars floor doing the same group-bys; peak memory of each in its own process.

    python bench/bench_engine_protect.py N [--pram]      # N records from generate_census

Writes its data under /tmp/engprotect/ (deleted at the end).  The job: global recoding of the
age groups (ten-year groups), local suppression to k = 3 on five keys (with the household id
for block_households), released with new household ids in a shuffled order; ``--pram`` adds a
PRAM step of marital status (once the engine's PRAM step is in ENGINE_STEPS).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path("/tmp/engprotect")
KEYS = ["region", "sex", "age_group", "marital_status", "education"]
TENS = {f"{a:02d}-{a + 4:02d}": f"{a - a % 10:02d}-{a - a % 10 + 9:02d}" for a in range(0, 85, 5)}

JOB = """
seed = 7
[input]
file = "census.parquet"
engine = "{engine}"
[roles]
keys = {keys}
weight = "weight"
household = "household_id"
identifiers = ["person_id"]
[[steps]]
method = "global_recoding"
[steps.mapping.age_group]
{mapping}
{pram}
[[steps]]
method = "local_suppression"
k = 3
[target]
k = 3
[output]
data = "out_{engine}.parquet"
"""

FLOOR = """
import polars as pl, sys
lf = pl.scan_parquet(sys.argv[1])
keys = {keys}
lf = lf.with_columns(pl.col("age_group").replace({mapping}))
classes = lf.group_by(keys).agg(pl.len()).collect(engine="streaming")
lf.join(classes.lazy(), on=keys, how="left").sink_parquet(sys.argv[2])
"""

ENGINE = """
import sys
from sdckit.jobs.engine_job import plan_engine_job, run_engine_job
chosen, reason, job = plan_engine_job(sys.argv[1])
res = run_engine_job(job, chosen)
print("k violations", res.k_violations, "records", res.records)
"""

MEMORY = """
import sys
from sdckit.jobs import load_job
from sdckit.jobs.runner import Runner
runner = Runner.from_job(load_job(sys.argv[1], writes=False, output_folder=True))
runner.apply_job_steps()
frame = runner.current.frame
frame.write_parquet(sys.argv[2])
"""


def timed(code: str, *args: str) -> tuple[float, float]:
    """Seconds and peak resident memory (GB) of ``code`` in its own process."""
    start = time.perf_counter()
    out = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", code, *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    peak = next(
        int(line.split()[-1]) for line in out.stderr.splitlines() if "Maximum resident" in line
    )
    print(out.stdout.strip())
    return seconds, peak / 1e6


def main() -> None:
    from sdckit.datasets import generate_census

    n = int(sys.argv[1])
    pram = "--pram" in sys.argv
    memory = "--no-memory" not in sys.argv
    ROOT.mkdir(parents=True, exist_ok=True)
    try:
        generate_census(n, seed=1).write_parquet(ROOT / "census.parquet", row_group_size=1 << 20)
        mapping = "\n".join(f'"{a}" = "{b}"' for a, b in TENS.items())
        step = '[[steps]]\nmethod = "pram"\nvariables = ["marital_status"]' if pram else ""
        for engine in ("streaming", "polars"):
            text = JOB.format(engine=engine, keys=KEYS, mapping=mapping, pram=step)
            (ROOT / f"job_{engine}.toml").write_text(textwrap.dedent(text))
        floor = FLOOR.format(keys=KEYS, mapping=TENS)
        rows = [
            (
                "polars floor (recode, group-by, join, sink)",
                *timed(floor, str(ROOT / "census.parquet"), str(ROOT / "floor.parquet")),
            )
        ]
        rows.append(("sdckit, engine streaming", *timed(ENGINE, str(ROOT / "job_streaming.toml"))))
        if memory:
            rows.append(
                (
                    "sdckit, in memory (steps only)",
                    *timed(MEMORY, str(ROOT / "job_polars.toml"), str(ROOT / "mem.parquet")),
                )
            )
        print(f"\n{n:,} records")
        for name, seconds, peak in rows:
            print(f"{name:45s} {seconds:8.1f} s  {peak:6.2f} GB peak")
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
