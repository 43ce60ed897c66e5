"""Benchmark: SUDA2 and minimal unsafe combinations on testdata and 1 million records.

Run: ``.venv/bin/python bench/bench_suda2.py [repeats]`` (reads ../shared/data).  Prints a
markdown table with the best wall time of ``repeats`` runs (default 2), the CPU time of that
run, and the peak extra resident memory (RSS sampled every 5 ms).  Times include building the
Microdata and encoding the keys.  sdcMicro's compiled ``suda2`` needs 0.007 s on testdata and
24 s on synth_1e6 with all 7 keys on this machine class (data README).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from _memory import PeakMemory  # bench/_memory.py
from sdckit import Microdata
from sdckit.risk.suda import suda2
from sdckit.risk.unsafe import minimal_unsafe_combinations

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
SYNTH_KEYS = [f"k{i}" for i in range(1, 8)]


def best_of(fn: Callable[[], str], repeats: int) -> tuple[float, float, float, str]:
    """Best wall time, its CPU time, peak extra memory (MB) and the run's note."""
    best = (np.inf, 0.0)
    peak, note = 0.0, ""
    for _ in range(repeats):
        gc.collect()
        with PeakMemory() as mem:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            note = fn()
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        best = min(best, (wall, cpu))
        peak = max(peak, mem.extra_mb)
    return best[0], best[1], peak, note


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    testdata = pl.read_csv(SHARED / "testdata.csv", null_values="NA")
    synth = pl.read_parquet(SHARED / "bench" / "synth_1e6.parquet")
    rng = np.random.default_rng(2026)
    head = synth.head(200_000)
    extra = {f"x{j}": rng.integers(1, 4 + 3 * j, size=head.height) for j in range(1, 6)}
    synth12 = head.with_columns(**{name: pl.Series(values) for name, values in extra.items()})
    keys12 = SYNTH_KEYS + list(extra)

    # load the compiled kernel once (numba cache) so that timings exclude it
    suda2(testdata.head(50), keys=TESTDATA_KEYS)

    def run_suda(df: pl.DataFrame, keys: list[str], max_size: int | None = None) -> str:
        md = Microdata(df, keys=keys, max_levels=10_000)
        res = suda2(md, max_size=max_size)
        return f"{res.n_msus:,} MSUs, {int(np.count_nonzero(res.score)):,} records scored"

    def run_unsafe(df: pl.DataFrame, keys: list[str], k: int) -> str:
        md = Microdata(df, keys=keys, max_levels=10_000)
        res = minimal_unsafe_combinations(md, k=k)
        return f"{len(res.record):,} sets, {len(res.risky_records):,} records"

    cases: list[tuple[str, str, Callable[[], str], str]] = [
        ("suda2", "testdata (4,580 x 7 keys)", lambda: run_suda(testdata, TESTDATA_KEYS), "0.007"),
        ("suda2", "synth_1e6 (7 keys)", lambda: run_suda(synth, SYNTH_KEYS), "24"),
        (
            "suda2, max_size=4",
            "synth_1e6[:200k] + 5 random keys (12 keys)",
            lambda: run_suda(synth12, keys12, 4),
            "-",
        ),
        (
            "unsafe combinations, k=3",
            "synth_1e6 (7 keys)",
            lambda: run_unsafe(synth, SYNTH_KEYS, 3),
            "-",
        ),
    ]
    print(f"SUDA2 benchmark, best of {repeats}, {time.strftime('%Y-%m-%d %H:%M %Z')}\n")
    print("| measure | data | wall (s) | CPU (s) | peak extra RSS (MB) | result | sdcMicro (s) |")
    print("|---|---|---|---|---|---|---|")
    for measure, label, fn, reference in cases:
        wall, cpu, peak, note = best_of(fn, repeats)
        print(
            f"| {measure} | {label} | {wall:.3f} | {cpu:.3f} | {peak:.0f} | {note} | {reference} |"
        )


if __name__ == "__main__":
    main()
