"""Speed of synthpop's disclosure measures of synthetic data (issue 31).

The original file is ``generate_census(n, seed=1)``; the "synthetic" copies are further draws
of the same generator (``seed=2, 3, ...``): the same variables and distributions, none of the
records, which is what the measures compare (a CART synthesis of a million records would time
the synthesis, not the measures).  Keys: the demo's 7 keys; targets: health_condition,
economic_activity (categorical) and income (numeric, in 20 quantile groups).  Prints a
markdown table; also the measures of the first run, for a sanity look.

Run: ``.venv/bin/python bench/bench_synthetic_disclosure.py --persons 1e6 --copies 3``.
"""

from __future__ import annotations

import argparse
import time

import polars as pl

from sdckit.datasets import DEMO_ROLES, generate_census
from sdckit.utility import synthetic_disclosure

TARGETS = ["health_condition", "economic_activity", "income"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--persons", type=float, default=1e5)
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()
    n = int(args.persons)
    keys = list(DEMO_ROLES["keys"])
    columns = [*keys, *TARGETS]
    start = time.perf_counter()
    original = generate_census(n, seed=1).select(columns)
    copies = [generate_census(n, seed=2 + i).select(columns) for i in range(args.copies)]
    made = time.perf_counter() - start
    print(f"data: {n:,} persons x {1 + args.copies} files generated in {made:.1f} s\n")
    print("| run | records per file | copies | targets | time (s) |")
    print("|---|---:|---:|---:|---:|")
    first = None
    for m, targets in ((1, ["health_condition"]), (1, TARGETS), (args.copies, TARGETS)):
        start = time.perf_counter()
        res = synthetic_disclosure(
            original, copies[:m], keys=keys, targets=targets, ngroups_targets={"income": 20}
            if "income" in targets else None,
        )  # fmt: skip
        took = time.perf_counter() - start
        first = first or res
        print(f"| synthetic_disclosure | {n:,} | {m} | {len(targets)} | {took:.2f} |")
    if first is not None:
        with pl.Config(tbl_cols=20, tbl_width_chars=200):
            print()
            print(first.measures.select("target", "UiO", "repU", "Dorig", "DiSCO", "TCAP"))


if __name__ == "__main__":
    main()
