"""Benchmark: record-level methods within strata, one process against two.

Run as ``.venv/bin/python bench/bench_parallel.py [--quick] [--repeat N]``.  Prints a markdown
table: for local suppression (``by_strata``), microaggregation (MDAV), PRAM and additive noise
(``by_strata``) within 8 strata, the wall-clock time with ``n_jobs=1`` and ``n_jobs=2`` (minimum
and median of ``--repeat`` runs, end to end through the class) and whether both outputs are
identical (they must be, bit for bit).

Data: the seeded synthetic file ``synth_1e6`` (keys ``k1..k7``, weight ``w``) with a stratum
column and two numeric variables drawn with a fixed seed; microaggregation uses its first
200,000 records (MDAV is quadratic within a stratum).  ``--quick`` uses 100,000 records for all.
The two-process time includes starting the workers (the first pool of the process also starts
the fork server, which imports sdckit once: its cost is shown separately).  On a machine whose
two cores are shared the speed-up is bounded by what the other processes leave.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from sdckit import Microdata
from sdckit.masking._microaggregation import Microaggregation
from sdckit.masking._pram import Pram
from sdckit.masking._strata import run
from sdckit.masking.noise import AddNoise
from sdckit.masking.suppression import LocalSuppression
from sdckit.protection import Protected, ProtectionMethod

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bench" / "synth_1e6.parquet"
KEYS = [f"k{i}" for i in range(1, 8)]
N_STRATA = 8


def _data(n: int | None) -> pl.DataFrame:
    frame = pl.read_parquet(DATA)
    if n is not None:
        frame = frame.head(n)
    rng = np.random.default_rng(2024)
    return frame.with_columns(
        stratum=pl.Series(rng.integers(0, N_STRATA, frame.height)),
        x1=pl.Series(rng.gamma(2.0, 500.0, frame.height).round(1)),
        x2=pl.Series(rng.normal(100.0, 15.0, frame.height).round(2)),
    )


def _timed(method: ProtectionMethod, md: Microdata, repeat: int) -> tuple[list[float], Protected]:
    walls = []
    out = None
    for _ in range(repeat):
        start = time.perf_counter()
        out = method.apply(md)
        walls.append(time.perf_counter() - start)
    assert out is not None
    return walls, out


def _span(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100,000 records for every method")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    frame = _data(100_000 if args.quick else None)
    small = frame.head(100_000 if args.quick else 200_000)
    start = time.perf_counter()
    run(abs, [(1,), (2,)], 2)  # the fork server, started once per process
    server = time.perf_counter() - start

    cases: list[tuple[str, Callable[[int], ProtectionMethod], Microdata]] = [
        (
            "local suppression k = 3, by_strata",
            lambda j: LocalSuppression(k=3, by_strata=True, n_jobs=j),
            Microdata(frame, keys=KEYS, strata="stratum"),
        ),
        (
            "microaggregation MDAV k = 3 (x1, x2)",
            lambda j: Microaggregation(k=3, n_jobs=j),
            Microdata(small, numeric=["x1", "x2"], strata="stratum"),
        ),
        (
            "PRAM k3, k4, k5",
            lambda j: Pram(variables=["k3", "k4", "k5"], seed=1, n_jobs=j),
            Microdata(frame, keys=["k3", "k4", "k5"], strata="stratum"),
        ),
        (
            "noise correlated (x1, x2, w), by_strata",
            lambda j: AddNoise(method="correlated", by_strata=True, seed=1, n_jobs=j),
            Microdata(frame, numeric=["x1", "x2", "w"], strata="stratum"),
        ),
    ]
    # warm-up: compile or load the kernels in this process
    warm = frame.head(2000)
    LocalSuppression(k=3, by_strata=True).apply(Microdata(warm, keys=KEYS, strata="stratum"))
    Microaggregation(k=3).apply(Microdata(warm, numeric=["x1", "x2"], strata="stratum"))

    print(
        f"{N_STRATA} strata; min / median of {repeat} run(s), wall-clock seconds; the fork "
        f"server started in {server:.1f} s\n"
    )
    print("| method | records | n_jobs = 1 | n_jobs = 2 | speed-up (medians) | identical |")
    print("|---|---|---|---|---|---|")
    for name, make, md in cases:
        serial, a = _timed(make(1), md, repeat)
        parallel, b = _timed(make(2), md, repeat)
        same = a.microdata.frame.equals(b.microdata.frame, null_equal=True)
        speedup = statistics.median(serial) / statistics.median(parallel)
        print(
            f"| {name} | {md.n_records:,} | {_span(serial)} | {_span(parallel)} | "
            f"{speedup:.2f} | {'yes' if same else 'NO'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
