"""Benchmark: a job with ``method = "auto"`` end to end (``sdckit protect``), and its search.

Run: ``.venv/bin/python bench/bench_auto_job.py [--persons 1000000] [--dir /tmp/autojob]``.

The project's census (:func:`sdckit.datasets.generate_census`, seed 1) is written as Parquet;
the job protects four keys (sex; age in bands of 5, 10 and 20 years; region; marital status,
the last two "flat": the value, then ``*``) to 5-anonymity with at most 2 % of the records
suppressed, minimising the height, and writes the protected file (Parquet) and the internal
report.  Timed: ``sdckit protect job.toml`` as a subprocess, exactly as a user runs it (wall
time and the child's peak memory), and in this process the search alone (coding the records
with the hierarchies, then ``search_lattice``) for each algorithm that is available.  The
written file is recounted (every released class of at least 5 records, the suppressed records
within the limit).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl

from sdckit.datasets import generate_census
from sdckit.lattice import LatticeAnonymization
from sdckit.microdata import Microdata

KEYS = ["sex", "age", "region", "marital_status"]
HIERARCHIES = {
    "age": {"kind": "bands", "widths": [5, 10, 20]},
    "region": {"kind": "flat"},
    "marital_status": {"kind": "flat"},
}


def _job(folder: Path) -> Path:
    job = folder / "job.toml"
    job.write_text(
        textwrap.dedent(
            """
            seed = 7
            [input]
            file = "census.parquet"
            [roles]
            keys = ["sex", "age", "region", "marital_status"]
            numeric = ["income"]
            [[steps]]
            method = "auto"
            suppression_limit = 0.02
            [steps.hierarchies]
            age = {kind = "bands", widths = [5, 10, 20]}
            region = {kind = "flat"}
            marital_status = {kind = "flat"}
            [target]
            k = 5
            [output]
            data = "out.parquet"
            report_internal = "report.html"
            keep = ["sex", "age", "region", "marital_status", "income"]
            """
        ),
        encoding="utf-8",
    )
    return job


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/autojob/bench"))
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    census = generate_census(args.persons, seed=1)
    census.write_parquet(args.dir / "census.parquet")
    print(f"census of {census.height:,} records written in {time.perf_counter() - start:.1f} s")
    job = _job(args.dir)
    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-m", "sdckit", "protect", str(job)], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    chosen = [line.strip() for line in child.stdout.splitlines() if "Chose" in line]
    print(f"sdckit protect: exit {child.returncode}, {wall:.1f} s wall, peak {peak:,.0f} MB")
    print("  " + " ".join(" ".join(chosen).split()))
    out = pl.read_parquet(args.dir / "out.parquet")
    kept = out.filter(pl.col("sex").is_not_null())
    print(
        f"  recount: {out.height - kept.height:,} records suppressed "
        f"(limit {int(0.02 * out.height):,}), smallest released class "
        f"{kept.group_by(KEYS).len()['len'].min():,}"
    )
    md = Microdata(census.select([*KEYS, "income"]), keys=KEYS, numeric=["income"])
    from sdckit.lattice import search as search_module

    for algorithm in getattr(search_module, "ALGORITHMS", ("exhaustive",)):
        method = LatticeAnonymization(
            hierarchies=HIERARCHIES, models={"k": 5}, suppression_limit=0.02,
            algorithm=algorithm,
        )  # fmt: skip
        start = time.perf_counter()
        data, _, _, result = method.search(md)  # codes the records, then searches
        total = time.perf_counter() - start
        print(
            f"search {algorithm}: coding and search {total:.2f} s, "
            f"{result.n_evaluated} of {data.n_nodes} nodes evaluated, optimum {result.optimum}"
        )


if __name__ == "__main__":
    main()
