"""Timings of additive noise and sub-sampling on a large file (default 1,000,000 x 5).

Run: ``.venv/bin/python bench/bench_noise.py [--records N] [--repeat R]``; prints a markdown
table (best of R runs, wall-clock seconds, including validation and building the result).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from sdckit import Microdata
from sdckit.masking.noise import AddNoise
from sdckit.masking.sampling import SubSample


def make_data(n: int, seed: int = 0) -> Microdata:
    """Five correlated numeric variables (the last the total of the first two) and strata."""
    rng = np.random.default_rng(seed)
    cov = np.array(
        [
            [4.0, 1.0, 0.5, 0.0],
            [1.0, 2.0, 0.3, 0.0],
            [0.5, 0.3, 1.0, 0.2],
            [0.0, 0.0, 0.2, 3.0],
        ]
    )
    x = rng.multivariate_normal([10.0, 20.0, 30.0, 40.0], cov, size=n).round(2)
    frame = pl.DataFrame(
        {
            "v1": x[:, 0],
            "v2": x[:, 1],
            "v3": x[:, 2],
            "v4": x[:, 3],
            "total": x[:, 0] + x[:, 1],
            "region": rng.integers(0, 50, size=n),
            "w": rng.uniform(10.0, 100.0, size=n),
        }
    )
    return Microdata(frame, numeric=["v1", "v2", "v3", "v4", "total"], weight="w", strata="region")


def best_time(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    md = make_data(args.records)
    numeric = ["v1", "v2", "v3", "v4", "total"]
    cases: list[tuple[str, int, object]] = [
        ("additive", 5, AddNoise(method="additive", seed=1)),
        ("correlated", 5, AddNoise(method="correlated", seed=1)),
        ("correlated2 (E6)", 5, AddNoise(method="correlated2", seed=1)),
        ("exact", 4, AddNoise(method="exact", variables=numeric[:4], seed=1)),
        (
            "exact + balance edit",
            5,
            AddNoise(method="exact", balance=[("total", ["v1", "v2"])], seed=1),
        ),
        ("outliers (quantile)", 5, AddNoise(method="outliers", seed=1)),
        (
            "outliers (mahalanobis)",
            4,
            AddNoise(method="outliers", outlier_rule="mahalanobis", variables=numeric[:4], seed=1),
        ),
        ("subsample srs 10 %", 7, SubSample(fraction=0.1, seed=1)),
        ("subsample stratified 10 %", 7, SubSample(fraction=0.1, method="stratified", seed=1)),
    ]
    print(f"records: {md.n_records:,}; best of {args.repeat} run(s)\n")
    print("| method | variables | seconds |")
    print("|---|---:|---:|")
    for label, n_vars, method in cases:
        seconds = best_time(lambda m=method: m.apply(md), args.repeat)  # type: ignore[attr-defined]
        print(f"| {label} | {n_vars} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
