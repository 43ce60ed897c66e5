"""The census-like protection job on the streaming engine, beside the in-memory path and a
plain polars floor doing the same group-bys; peak memory of each in its own process.

    python bench/bench_engine_protect.py N [--dask] [--spark] [--pram] [--no-memory]
        [--no-streaming] [--no-floor]

N records from generate_census; the streaming engine (and Dask with a 2-worker LocalCluster,
Spark local[2] when asked); the engine's file compared with the in-memory runner's.

Writes its data under /tmp/engprotect/ (deleted at the end).  The job: global recoding of the
age groups (ten-year groups), local suppression to k = 3 on five keys (with the household id
for block_households), released with new household ids in a shuffled order without the finer
geography and the exact age (which give region and age group back: the release check would
refuse the file, and nothing would be written); ``--pram`` adds a
PRAM step of marital status.  It times the job from Python (plan_engine_job and
run_engine_job, which include the release check, against the in-memory runner without it);
``bench/bench_census_protect.py`` times ``sdckit protect`` itself, end to end.
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
drop = ["district", "area", "stratum", "age"]
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
if "dask" in sys.argv[1]:
    import distributed
    client = distributed.Client(distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
        memory_limit=0))  # (no pause: both in-process workers share the process's memory)
if "spark" in sys.argv[1]:
    import os
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # (workers import sdckit, polars)
    from pyspark.sql import SparkSession
    SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").config(
        "spark.driver.memory", "6g").config("spark.sql.shuffle.partitions", "8").getOrCreate()
chosen, reason, job = plan_engine_job(sys.argv[1])
res = run_engine_job(job, chosen)
print(chosen, "k violations", res.k_violations, "records", res.records,
      "release check passed", res.check.ok)
"""

# the in-memory runner's steps and its released file (columns, household ids, order), without
# the release check (the engine run includes it: the comparison is uneven, see the docstring)
MEMORY = """
import sys
from sdckit.jobs import load_job
from sdckit.jobs.runner import Runner, seed_of_release
job = load_job(sys.argv[1], writes=False, output_folder=True)
runner = Runner.from_job(job)
runner.apply_job_steps()
rng = seed_of_release(job.seed)
frame = job.release_plan.apply(runner.current, seed=rng)
order = job.release_plan.record_order(frame.height, seed=rng)
(frame if order is None else frame[order]).write_parquet(sys.argv[2])
"""


def same(engine_out: Path, memory_out: Path) -> str:
    """Whether the engine's file equals the in-memory one (in order, and as a multiset)."""
    import polars as pl

    got = pl.read_parquet(engine_out / "*.parquet")
    want = pl.read_parquet(memory_out)
    got = got.select(want.columns).with_columns(pl.col(c).cast(t) for c, t in want.schema.items())
    ordered = got.equals(want)
    multiset = ordered or got.sort(want.columns).equals(want.sort(want.columns))
    return f"same records in the same order: {ordered}; same multiset: {multiset}"


def timed(code: str, *args: str) -> tuple[float, float]:
    """Seconds and peak resident memory (GB) of ``code`` in its own process."""
    start = time.perf_counter()
    out = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", code, *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
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
        engines = [
            *([] if "--no-streaming" in sys.argv else ["streaming"]),
            *(e for e in ("dask", "spark") if f"--{e}" in sys.argv),
        ]
        for engine in (*engines, "polars"):
            text = JOB.format(engine=engine, keys=KEYS, mapping=mapping, pram=step)
            (ROOT / f"job_{engine}.toml").write_text(textwrap.dedent(text))
        floor = FLOOR.format(keys=KEYS, mapping=TENS)
        rows = []
        if "--no-floor" not in sys.argv:
            paths = (str(ROOT / "census.parquet"), str(ROOT / "floor.parquet"))
            rows.append(("polars floor (recode, group-by, join, sink)", *timed(floor, *paths)))
        for engine in engines:
            job = str(ROOT / f"job_{engine}.toml")
            rows.append((f"sdckit, engine {engine}", *timed(ENGINE, job)))
        checks = []
        if memory:
            out = str(ROOT / "mem.parquet")
            label = "sdckit, in memory (steps and release, no check)"
            rows.append((label, *timed(MEMORY, str(ROOT / "job_polars.toml"), out)))
            for engine in engines:
                result = same(ROOT / f"out_{engine}.parquet", ROOT / "mem.parquet")
                checks.append(f"{engine}: {result}")
        print(f"\n{n:,} records")
        for name, seconds, peak in rows:
            print(f"{name:48s} {seconds:8.1f} s  {peak:6.2f} GB peak")
        print("\n".join(checks))
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
