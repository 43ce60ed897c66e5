"""Issue 30's must-show: ``sdckit protect`` of a census job on the streaming engine, end to end.

    nice -n 10 python bench/bench_census_protect.py --persons 5e7 [--engine streaming]
        [--data /tmp/supp] [--no-floor] [--keep]

The file: ``--persons`` records of :func:`sdckit.datasets.generate_census`, made in chunks of
at most 10,000,000 (seeds 1, 2, ...; household and person ids offset so they stay unique),
each in its own process, then streamed into one Parquet file.  The job: global recoding of the
age groups into ten-year groups, PRAM of marital status, local suppression to k = 3 on five
keys (household blocking on), the release check and both reports, released shuffled without
the finer geography and the exact age (which give region and age group back)
(``sdckit protect job.toml``, under ``/usr/bin/time -v``).  Beside it, a polars streaming floor
doing the same recoding and key group-by (joined back and written), and an independent recount
of the released part files on the streaming engine: the records whose key pattern (missing
values as wildcards) is shared by fewer than 3 records, by ``sdckit.engines.risk_on_engine``.
Everything is written under ``--data`` and deleted at the end (unless ``--keep``).
``--steps-only``: the job's steps on the engine (PRAM left out unless ``--pram``) and the
recount of their output, without the release check, the write and the reports.  Run it with an
absolute ``PYTHONPATH`` (the job runs in the data folder).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

KEYS = ["region", "sex", "age_group", "marital_status", "education"]
TENS = {f"{a:02d}-{a + 4:02d}": f"{a - a % 10:02d}-{a - a % 10 + 9:02d}" for a in range(0, 85, 5)}
CHUNK = 10_000_000

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
[[steps]]
method = "pram"
variables = ["marital_status"]
[[steps]]
method = "local_suppression"
k = 3
[target]
k = 3
[output]
drop = ["district", "area", "stratum", "age"]
data = "out_{engine}.parquet"
report_internal = "internal_{engine}.html"
report_external = "external_{engine}.html"
plots = false
"""

CHUNK_CODE = """
import sys
from sdckit.datasets import generate_census
import polars as pl
n, seed, offset_p, offset_h = (int(a) for a in sys.argv[1:5])
out = sys.argv[5]
df = generate_census(n, seed=seed)
df = df.with_columns(pl.col("person_id") + offset_p, pl.col("household_id") + offset_h)
df.write_parquet(out, row_group_size=1 << 20)
print(int(df["household_id"].max()) + 1)
"""

FLOOR = """
import polars as pl, sys
lf = pl.scan_parquet(sys.argv[1])
keys = {keys}
lf = lf.with_columns(pl.col("age_group").replace({mapping}))
classes = lf.group_by(keys).agg(pl.len()).collect(engine="streaming")
lf.join(classes.lazy(), on=keys, how="left", nulls_equal=True).sink_parquet(sys.argv[2])
"""

GROUP_BY = """
import polars as pl, sys
lf = pl.scan_parquet(sys.argv[1]).with_columns(pl.col("age_group").replace({mapping}))
print(lf.group_by({keys}).agg(pl.len()).collect(engine="streaming").height)
"""

# the job's steps on the engine without the release check and the write (--steps-only), then
# the recount of their output on the engine; PRAM left out unless --pram
STEPS = """
import sys, time
from sdckit.engines._protect import k_violations_on_engine, run_steps
from sdckit.engines._rows import read_with_row
from sdckit.jobs.engine_job import plan_engine_job
chosen, reason, job = plan_engine_job(sys.argv[1])
roles = {k: v for k, v in job.microdata.roles().items() if v}
steps = [s for s in job.steps if type(s.method).__name__ != "Pram" or "--pram" in sys.argv]
t = time.perf_counter()
frame = read_with_row(job.tables["input"]["file"], "streaming")
out = run_steps(frame, "streaming", [s.method for s in steps],
                [s.params.get("seed") for s in steps], roles)
t1 = time.perf_counter() - t
v = k_violations_on_engine(out, "streaming", roles["keys"], 3)
print([type(s.method).__name__ for s in steps], f"steps {t1:.0f} s, with the recount "
      f"{time.perf_counter() - t:.0f} s; records with fk < 3: {v}")
"""

RECOUNT = """
import sys, polars as pl
from sdckit.engines import risk_on_engine
lf = pl.scan_parquet(sys.argv[1] + "/*.parquet")
res = risk_on_engine(lf, keys={keys}, ks=(3,), engine="streaming")
f = res.figures()
print("released records", lf.select(pl.len()).collect().item(), "| records with fk < 3:",
      int(f["k3_violations"]))
"""


def timed(args: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    """Seconds, peak resident memory (GB) and stdout of ``args`` in its own process."""
    start = time.perf_counter()
    out = subprocess.run(
        ["/usr/bin/time", "-v", *args], capture_output=True, text=True, check=False, cwd=cwd
    )
    seconds = time.perf_counter() - start
    if out.returncode not in (0, 1):  # (1: the job's target was missed -- still measured)
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-3000:])
    peak = next(
        int(line.split()[-1]) for line in out.stderr.splitlines() if "Maximum resident" in line
    )
    return seconds, peak / 1e6, out.stdout


def generate(root: Path, persons: int) -> Path:
    """The census file (one Parquet file), made chunk by chunk in bounded memory."""
    import polars as pl

    parts, offset_h, start = [], 0, 0
    for i, begin in enumerate(range(0, persons, CHUNK)):
        n = min(CHUNK, persons - begin)
        part = root / f"chunk-{i:03d}.parquet"
        args = [str(n), str(i + 1), str(start), str(offset_h), str(part)]
        out = subprocess.run(
            [sys.executable, "-c", CHUNK_CODE, *args], capture_output=True, text=True, check=True
        )
        offset_h = int(out.stdout.split()[-1])
        start += n
        parts.append(part)
    path = root / "census.parquet"
    pl.scan_parquet(parts).sink_parquet(path, row_group_size=1 << 20)
    for part in parts:
        part.unlink()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=float, default=5e7)
    parser.add_argument("--engine", default="streaming")
    parser.add_argument("--data", type=Path, default=Path("/tmp/supp"))
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="use census.parquet if there")
    parser.add_argument("--steps-only", action="store_true", help="no check, write, reports")
    parser.add_argument("--pram", action="store_true", help="with --steps-only: keep PRAM")
    args = parser.parse_args()
    persons = int(args.persons)
    root = args.data / f"census_{persons}"
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        census = root / "census.parquet"
        if not (args.reuse and census.exists()):
            census = generate(root, persons)
        print(f"data: {persons:,} persons in {time.perf_counter() - t:.0f} s", flush=True)
        mapping = "\n".join(f'"{a}" = "{b}"' for a, b in TENS.items())
        job = root / f"job_{args.engine}.toml"
        job.write_text(JOB.format(engine=args.engine, keys=KEYS, mapping=mapping))
        rows = []
        if not args.no_floor:
            floor = FLOOR.format(keys=KEYS, mapping=TENS)
            s, gb, _ = timed([sys.executable, "-c", floor, str(census), str(root / "floor.pq")])
            (root / "floor.pq").unlink(missing_ok=True)
            rows.append(("polars streaming floor (recode, group-by, join, sink)", s, gb))
            print(rows[-1], flush=True)
            s, gb, _ = timed([sys.executable, "-c", GROUP_BY.format(keys=KEYS, mapping=TENS),
                              str(census)])  # fmt: skip
            rows.append(("polars streaming floor (recode, group-by only)", s, gb))
            print(rows[-1], flush=True)
        if args.steps_only:
            extra = ["--pram"] if args.pram else []
            s, gb, out = timed([sys.executable, "-c", STEPS, str(job), *extra], cwd=root)
            print(out.strip())
            print(f"\n{persons:,} records: steps and recount {s:.1f} s, {gb:.2f} GB peak")
            return
        s, gb, out = timed([sys.executable, "-m", "sdckit", "protect", str(job)], cwd=root)
        print(out.strip()[-3000:], flush=True)
        rows.append((f"sdckit protect, engine {args.engine} (whole job)", s, gb))
        recount = RECOUNT.format(keys=KEYS)
        s2, gb2, out2 = timed(
            [sys.executable, "-c", recount, str(root / f"out_{args.engine}.parquet")]
        )
        rows.append(("independent recount of the released file (streaming)", s2, gb2))
        print(f"\n{persons:,} records")
        for name, seconds, peak in rows:
            print(f"{name:56s} {seconds:8.1f} s  {peak:6.2f} GB peak")
        print(out2.strip())
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
