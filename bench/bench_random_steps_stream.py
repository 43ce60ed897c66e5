"""PRAM and additive noise on the streaming engine: Parquet in, Parquet out (issue 30).

Writes ``N`` records (default 20,000,000: an 8-level and a 5-level category, 20 strata, two
lognormal amounts) in row groups under ``--dir`` without holding them, then runs
``pram_on_engine`` (both categories, within strata) and ``noise_on_engine`` (additive, both
amounts) on ``scan_parquet`` with the row index, and ``sink_parquet``; prints the seconds and the
peak resident memory of the process while the step runs (the input would take ``--size`` in
memory), beside a polars floor reading and writing the same file.

Run: ``.venv/bin/python bench/bench_random_steps_stream.py [N] [--dir /tmp/x]``.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
import polars as pl

from _memory import PeakMemory
from sdckit.engines._random import noise_on_engine, pram_on_engine
from sdckit.masking import AddNoise, Pram

ROW = "__sdckit_row"
ROLES = {"keys": ["a", "b"], "numeric": ["x", "y"], "strata": "s"}


def write(path: Path, n: int, chunk: int = 2_000_000) -> None:
    import pyarrow.parquet as pq

    writer = None
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        rng = np.random.default_rng(start)
        part = pl.DataFrame(
            {
                "a": rng.integers(0, 8, m).astype(np.int32),
                "b": rng.choice(np.array(["p", "q", "r", "s", "t"]), m),
                "s": rng.integers(0, 20, m).astype(np.int32),
                "x": rng.lognormal(10, 1, m),
                "y": rng.lognormal(8, 2, m),
            }
        ).to_arrow()
        if writer is None:
            writer = pq.ParquetWriter(path, part.schema)
        writer.write_table(part, row_group_size=500_000)
    if writer is not None:
        writer.close()


def scan(path: Path) -> pl.LazyFrame:
    return pl.scan_parquet(path).with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("records", nargs="?", type=float, default=2e7)
    parser.add_argument("--dir", default="/tmp/engrandom")
    args = parser.parse_args()
    n = int(args.records)
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "in.parquet"
    try:
        write(source, n)
        size = n * (4 + 8 + 4 + 8 + 8 + 8) / 1e6
        print(f"{n:,} records (about {size:,.0f} MB as columns in memory)\n")
        print("| step | seconds | peak RSS increase (MB) |")
        print("|---|---:|---:|")
        cases = [
            ("floor: scan + row index + sink", lambda: scan(source)),
            (
                "PRAM of a, b within strata",
                lambda: pram_on_engine(
                    scan(source), "streaming", Pram(variables=["a", "b"]), seed=1, roles=ROLES
                ),
            ),
            (
                "additive noise of x, y",
                lambda: noise_on_engine(scan(source), "streaming", AddNoise(), seed=1, roles=ROLES),
            ),
        ]
        for name, build in cases:
            out = work / "out.parquet"
            with PeakMemory() as peak:
                start = time.perf_counter()
                build().sink_parquet(out)
                seconds = time.perf_counter() - start
            print(f"| {name} | {seconds:.1f} | {peak.extra_mb:,.0f} |")
            out.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
