"""Benchmark: local suppression to k-anonymity (time and number of suppressions).

Run as ``.venv/bin/python bench/bench_suppression.py [--quick]``.  Prints a markdown table.
``--quick`` skips the 1,000,000-record file.  The first run includes numba compilation; it is
done once on a tiny file before timing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from sdckit.masking.suppression import local_suppression
from sdckit.risk import frequencies

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
IMPORTANCE = [1, 5, 3, 6, 4, 7, 2]
SDCMICRO = {2: (157, 0.27), 3: (293, 0.63), 5: (500, 1.08)}
SYNTH_KEYS = [f"k{i}" for i in range(1, 8)]


def _run(frame: pl.DataFrame, keys: list[str], k: int, importance: list[int] | None) -> tuple:
    start, cpu = time.perf_counter(), time.process_time()
    res = local_suppression(frame, keys=keys, k=k, importance=importance)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    fk_min = frequencies(res.data, keys=keys, missing="wildcard").fk.min()
    assert fk_min >= k
    return res.details["suppressions"], elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 1e6-record file")
    args = parser.parse_args()
    warm = pl.DataFrame({"a": [1, 1, 2], "b": [1, 2, 2]})
    local_suppression(warm, keys=["a", "b"], k=2)  # numba compilation / cache load

    rows = []
    testdata = pl.read_csv(DATA / "testdata.csv", null_values="NA")
    for k in (2, 3, 5):
        n_imp, t_imp, _ = _run(testdata, TESTDATA_KEYS, k, IMPORTANCE)
        n_def, t_def, _ = _run(testdata, TESTDATA_KEYS, k, None)
        theirs, t_theirs = SDCMICRO[k]
        rows.append(
            f"| testdata (4,580 x 7) | {k} | {n_imp:,} ({t_imp:.2f} s) | {n_def:,} ({t_def:.2f} s)"
            f" | {theirs} ({t_theirs} s) |"
        )
    if not args.quick:
        synth = pl.read_parquet(DATA / "bench" / "synth_1e6.parquet")
        for k in (2, 3):
            n_def, t_def, c_def = _run(synth, SYNTH_KEYS, k, None)
            rows.append(
                f"| synth_1e6 (1,000,000 x 7) | {k} | - | {n_def:,} ({t_def:.1f} s wall, "
                f"{c_def:.1f} s CPU) | not finished after 30 min (k = 3) |"
            )
    print("| data | k | sdckit, sdcMicro importance | sdckit, default importance | sdcMicro |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
