"""Benchmark: fk, Fk_hat, individual and global risk on 1 and 5 million records with 7 keys.

Run: ``.venv/bin/python bench/bench_risk.py`` (reads ../shared/data/bench/synth_*.parquet).
Prints a markdown table: sdckit's time and peak memory beside the floor of a plain polars
group-by plus join on the same data, in the same run.  sdcMicro (``freqCalc`` + ``measure_risk``)
needs 1.1 + 1.8 s and 5.8 + 9.2 s for these files on this machine class (data README).
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import polars as pl

from _memory import PeakMemory  # bench/_memory.py
from sdckit import Microdata
from sdckit.risk import individual_risk

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bench"
KEYS = [f"k{i}" for i in range(1, 8)]
SDCMICRO_SECONDS = {"synth_1e6": 1.1 + 1.8, "synth_5e6": 5.8 + 9.2}


def polars_floor(df: pl.DataFrame) -> pl.DataFrame:
    """The floor: one group-by (count, weight sum) joined back to the records."""
    groups = df.group_by(KEYS).agg(fk=pl.len(), Fk=pl.col("w").sum())
    return df.join(groups, on=KEYS, how="left", maintain_order="left")


def sdckit_risk(df: pl.DataFrame) -> tuple[float, int]:
    md = Microdata(df, keys=KEYS, weight="w", max_levels=10_000)
    res = individual_risk(md)
    return res.expected_reidentifications, res.frequencies.sample_uniques


def best_of(fn, df: pl.DataFrame, repeats: int) -> tuple[float, float, object]:
    times, peak, out = [], 0.0, None
    for _ in range(repeats):
        gc.collect()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            out = fn(df)
            times.append(time.perf_counter() - t0)
        peak = max(peak, mem.extra_mb)
    return min(times), peak, out


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(
        "| file | records | sdckit fk+Fk+risk (s) | peak extra MB | polars group-by+join (s) |"
        " peak extra MB | ratio | sdcMicro (s) | speed-up vs sdcMicro | sample uniques | ER |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("synth_1e6", "synth_5e6"):
        df = pl.read_parquet(DATA / f"{name}.parquet")
        t_floor, m_floor, _ = best_of(polars_floor, df, repeats)
        t_ours, m_ours, out = best_of(sdckit_risk, df, repeats)
        er, uniques = out  # type: ignore[misc]
        print(
            f"| {name} | {df.height:,} | {t_ours:.2f} | {m_ours:.0f} | {t_floor:.2f} | "
            f"{m_floor:.0f} | {t_ours / t_floor:.2f} | {SDCMICRO_SECONDS[name]:.1f} | "
            f"{SDCMICRO_SECONDS[name] / t_ours:.1f}x | {uniques:,} | {er:.2f} |"
        )


if __name__ == "__main__":
    main()
