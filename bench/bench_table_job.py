"""Benchmark: ``sdckit table JOB.toml`` end to end, beside its phases and a plain polars floor.

Run: ``.venv/bin/python bench/bench_table_job.py [--parts business,large2d,huge] [--repeat 3]``
(about five minutes with the defaults on two cores).

The problems are those of ``bench_tauargus.py`` (seeded synthetic business microdata, two
hierarchical dimensions, the minimum-frequency rule with threshold 3 and the p % rule with
p = 10, the modular method with the singleton option off), written as a Parquet file and a
table job (:func:`bench_tauargus.write_job`).  Timed, each as a subprocess exactly as a user
starts it (interpreter start and imports included), in rounds that alternate the order so that
both see the same load:

* ``sdckit table job.toml``: read the Parquet file, build the table with every margin, apply
  the rules, suppress, audit every primary by LP, write the published table and the table of
  every cell with its status (CSV);
* the floor: a plain polars script that does the part of that work a user could not skip
  without sdckit -- read the Parquet file, aggregate the records into every cell of the
  hierarchical table (count, sum and the two largest contributions per cell: a group-by on
  the leaves, then a join with each dimension's ancestors and a second group-by) and write
  the cells to CSV.  It neither finds the sensitive cells nor protects them.

The table gives the minimum and median wall time, the median CPU time of the child (user +
system, all threads) and its peak resident memory.  Then the same job is run once in this
process, each phase timed: loading the job (reading the file and building the table), the
rules, the secondary suppression (the kernel), the audit and the writes.  The outputs are
checked against each other: every non-empty cell's count, sum and two largest contributions in
the floor's file equal the ``n_contributors``, ``value``, ``top_1`` and ``top_2`` of sdckit's
table of cells.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tauargus as tau

FLOOR_NAME = "floor: polars read, cells of every level (count, sum, top 2), write CSV"
FLOOR = """\
import json
import sys
import polars as pl
src, out, spec = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
dims, value = spec["dimensions"], spec["value"]
df = pl.read_parquet(src)
cells = df.group_by(dims).agg(
    n=pl.len(), s=pl.col(value).sum(), top=pl.col(value).top_k(2)
)
for d in dims:
    up = pl.DataFrame(
        {d: list(spec["ancestors"][d]), "up": list(spec["ancestors"][d].values())}
    ).explode("up")
    cells = cells.join(up, on=d).drop(d).rename({"up": d})
contributions = pl.col("top").list.explode(keep_nulls=False, empty_as_null=False)
cells = cells.group_by(dims).agg(
    n=pl.col("n").sum(), s=pl.col("s").sum(), top=contributions.top_k(2)
)
cells = cells.with_columns(pl.col("top").list.sort(descending=True))
cells = cells.with_columns(
    top_1=pl.col("top").list.get(0, null_on_oob=True),
    top_2=pl.col("top").list.get(1, null_on_oob=True),
).drop("top")
cells.write_csv(out)
"""


def ancestors(hier: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Each leaf code with itself and every code above it, per dimension."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, h in hier.items():
        nodes, ancs = h.ancestor_pairs
        codes = np.asarray(h.codes, dtype=object)
        leaves = set(h.leaves.tolist())
        per: dict[str, list[str]] = {}
        for node, anc in zip(nodes.tolist(), ancs.tolist(), strict=True):
            if node in leaves:
                per.setdefault(str(codes[node]), []).append(str(codes[anc]))
        out[name] = per
    return out


def timed(cmd: list[str], cwd: Path) -> dict[str, float]:
    """Wall time, CPU time (user + system of the child) and peak RSS (MB) of one command."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *cmd], cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    rss = int(proc.stderr.strip().splitlines()[-1]) / 1024
    return {"wall": wall, "cpu": cpu, "rss": rss}


def _phases(job_file: Path) -> dict[str, float]:
    """The job run once in this process, each phase timed (seconds)."""
    from sdckit.jobs import load_table_job, run_table_job

    marks: list[float] = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "Table protection":
            marks.append(time.perf_counter())

    cwd = os.getcwd()
    os.chdir(job_file.parent)
    try:
        start = time.perf_counter()
        job = load_table_job(job_file)
        loaded = time.perf_counter()
        run_table_job(job, progress=progress)
        end = time.perf_counter()
    finally:
        os.chdir(cwd)
    return {
        "load job, read and build the table": loaded - start,
        "rules": marks[1] - marks[0],
        "secondary suppression (the kernel)": marks[2] - marks[1],
        "audit (LP, every primary)": marks[3] - marks[2],
        "write both CSV files": end - marks[3],
        "in process, in all": end - start,
    }


def _check(work: Path) -> str:
    """Every non-empty cell of the floor's file equals sdckit's (count, sum, top 2)."""
    floor = pl.read_csv(work / "floor.csv", infer_schema_length=0).rename(
        {"n": "f_n", "s": "f_sum", "top_1": "f_top_1", "top_2": "f_top_2"}
    )
    ours = pl.read_csv(work / "out" / "status.csv", infer_schema_length=0)
    ours = ours.filter(pl.col("n_contributors").cast(pl.Float64) > 0)
    dims = [c for c in floor.columns if not c.startswith("f_")]
    joined = ours.join(floor, on=dims, how="inner")
    if joined.height != floor.height or joined.height != ours.height:
        return f"cells differ: sdckit {ours.height:,}, floor {floor.height:,}"

    def num(name: str) -> np.ndarray:
        return joined[name].cast(pl.Float64).fill_null(0.0).to_numpy()

    same_n = np.array_equal(num("f_n"), num("n_contributors"))
    rel = np.max(np.abs(num("f_sum") - num("value")) / np.maximum(1.0, np.abs(num("value"))))
    top = max(np.abs(num(f"f_top_{j}") - num(f"top_{j}")).max() for j in (1, 2))
    return (
        f"{joined.height:,} non-empty cells in both; counts equal: {same_n}; largest relative "
        f"difference of the sums {rel:.1e}; of the two largest contributions {top:.1e}"
    )


def run(spec: tau.Spec, repeat: int, method: str) -> list[str]:
    out: list[str] = []
    sdckit = str(Path(sys.executable).with_name("sdckit"))
    with tempfile.TemporaryDirectory(prefix="bench_table_job_") as tmp:
        work = Path(tmp)
        job = tau.write_job(spec, method, work)
        _, hier = tau.make_microdata(spec)
        (work / "floor.py").write_text(FLOOR)
        (work / "spec.json").write_text(
            json.dumps(
                {
                    "dimensions": [d.name for d in spec.dims],
                    "value": "turnover",
                    "ancestors": ancestors(hier),
                }
            )
        )
        commands = {
            f"`sdckit table job.toml` ({method})": [sdckit, "table", "job.toml"],
            FLOOR_NAME: [sys.executable, "floor.py", "micro.parquet", "floor.csv", "spec.json"],
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
        for r in range(repeat):
            names = list(commands) if r % 2 == 0 else list(reversed(commands))
            for name in names:
                runs[name].append(timed(commands[name], work))
        phases = _phases(job)
        check = _check(work)
    title = f"### {spec.name}: {spec.records:,} records\n"
    out.append(title)
    out.append("| command | wall min (s) | wall median (s) | CPU median (s) | peak RSS (MB) |")
    out.append("|---|---:|---:|---:|---:|")
    for name, rs in runs.items():
        walls = [x["wall"] for x in rs]
        out.append(
            f"| {name} | {min(walls):.2f} | {statistics.median(walls):.2f} | "
            f"{statistics.median(x['cpu'] for x in rs):.2f} | {max(x['rss'] for x in rs):,.0f} |"
        )
    cmd, floor = (runs[n] for n in commands)
    ratio_min = min(x["wall"] for x in cmd) / min(x["wall"] for x in floor)
    out.append(f"\n`sdckit table` / floor (min wall): {ratio_min:.2f}\n")
    out.append("| phase (in process) | seconds |")
    out.append("|---|---:|")
    for name, sec in phases.items():
        out.append(f"| {name} | {sec:.2f} |")
    out.append(f"\nCheck: {check}\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="business,large2d,huge")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--method", default="modular")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [
        f"`bench/bench_table_job.py --parts {args.parts} --repeat {args.repeat}`, "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, load average "
        f"{os.getloadavg()[0]:.1f}\n"
    ]
    print(lines[0], flush=True)
    for part in args.parts.split(","):
        for spec in tau.SPECS[part]:
            block = run(spec, args.repeat, args.method)
            print("\n".join(block), flush=True)
            lines.extend(block)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
