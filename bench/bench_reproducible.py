"""Benchmark: is the modular method's pattern the same on every run, quiet or under CPU load?

Run as ``.venv/bin/python bench/bench_reproducible.py [--runs 13] [--loaded 6] [--persons N]``.

The case of issue 29: a census-like file (``generate_census``, 200,000 persons, seed 2026), the
magnitude table of income by region x marital status x age group (ten-year groups) x sex
(2,079 cells with the totals), minimum frequency 3 and dominance (1, 80), protected by the
default modular method with ``n_jobs = 1``.  The table is protected ``--runs`` times, the last
``--loaded`` of them beside a CPU-bound process; printed: the number of suppressed cells of
each run, its seconds (wall and CPU), whether a wall-clock limit cut it short, and the number
of distinct patterns.  Run it with an older ``PYTHONPATH`` for the figures before a change.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
import warnings

import polars as pl

from sdckit.datasets import generate_census
from sdckit.tables import Dominance, MinFrequency, ModularSuppression, Table, apply_rules


def case_table(persons: int = 200_000, seed: int = 2026) -> Table:
    """The marked table of the issue's case (see the module text)."""
    df = generate_census(persons, seed=seed).with_columns(
        (pl.col("age") // 10).cast(pl.Utf8).alias("age10")
    )
    table = Table.from_microdata(df, ["region", "marital_status", "age10", "sex"], "income")
    return apply_rules(table, [MinFrequency(threshold=3), Dominance(n=1, k=80)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=13)
    parser.add_argument("--loaded", type=int, default=6, help="runs beside a CPU-bound process")
    parser.add_argument("--persons", type=int, default=200_000)
    args = parser.parse_args()
    table = case_table(args.persons)
    print(f"table: {table.n_cells} cells, {int(table.primary.sum())} primaries")
    print("| run | load | suppressed | secondary | wall s | cpu s | cut short by | pattern |")
    print("|---|---|---|---|---|---|---|---|")
    patterns: dict[str, int] = {}
    counts = []
    for run in range(args.runs):
        loaded = run >= args.runs - args.loaded
        proc = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = ModularSuppression(n_jobs=1).apply(table)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
        key = hashlib.sha1(result.table.status.tobytes()).hexdigest()[:8]
        patterns[key] = patterns.get(key, 0) + 1
        n = int(result.table.suppressed.sum())
        counts.append(n)
        cut = getattr(result, "time_limited", "(no such field)")
        print(
            f"| {run + 1} | {'CPU-bound process' if loaded else 'quiet'} | {n} | "
            f"{result.n_secondary} | {wall:.1f} | {cpu:.1f} | {cut} | {key} |",
            flush=True,
        )
    print(
        f"\n{len(patterns)} distinct pattern(s) in {args.runs} runs; suppressed cells "
        f"{min(counts)} to {max(counts)}"
    )


if __name__ == "__main__":
    main()
