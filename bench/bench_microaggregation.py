"""Microaggregation benchmark: information loss on Census and MDAV run times.

Run as ``.venv/bin/python bench/bench_microaggregation.py`` (``--quick`` for a short run).
Prints markdown tables:

1. Census (CASCrefmicrodata, 1080 x 13, all columns): 100 SSE/SST for MDAV, the refined MDAV
   (``method="mdav_refined"``, default 2000 iterations, seed 0) and the univariate lower bound,
   for k = 3, 4, 5, 10, with times.
2. MDAV times on seeded synthetic data: 100,000 x 10 (no strata) and 1,000,000 x 5 within 10
   strata of 100,000 records (sdcMicro 5.8.1 needs about 85 s for MDAV on 100,000 x 10 on this
   machine class).

Times are wall-clock and CPU seconds of the public function (standardisation, grouping,
aggregation, result), after a warm-up call that compiles the numba kernels; on a shared machine
the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl

from sdckit.masking._microaggregation import (
    information_loss_lower_bound,
    microaggregation,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "CASCrefmicrodata.csv"
PUBLISHED_MDAV = {3: 5.6922, 4: 7.4947, 5: 9.0884, 10: 14.1559}


def _timed(func, *args, **kwargs):
    """Result, wall-clock seconds and CPU seconds of this process (the machine is shared)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = func(*args, **kwargs)
    return out, time.perf_counter() - start, time.process_time() - cpu


def census_table(iterations: int) -> None:
    census = pl.read_csv(DATA)
    cols = census.columns
    microaggregation(census.head(60), numeric=cols, k=3, method="mdav_refined", iterations=5)
    print(f"### Census (1080 x 13), 100 SSE/SST in percent; refined = {iterations} iterations")
    print()
    print(
        "| k | MDAV | published MDAV | MDAV time (s) | mdav_refined | below MDAV | "
        "refined wall / CPU (s) | group sizes | univariate lower bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for k in (3, 4, 5, 10):
        mdav, t_mdav, _ = _timed(microaggregation, census, numeric=cols, k=k)
        refined, t_ref, cpu_ref = _timed(
            microaggregation,
            census,
            numeric=cols,
            k=k,
            method="mdav_refined",
            iterations=iterations,
            seed=0,
        )
        il_mdav = mdav.details["information_loss"]
        il_ref = refined.details["information_loss"]
        sizes = refined.details["group_sizes"]
        bound = information_loss_lower_bound(census, k)
        print(
            f"| {k} | {il_mdav:.4f} | {PUBLISHED_MDAV[k]:.4f} | {t_mdav:.3f} | {il_ref:.4f} | "
            f"{100 * (1 - il_ref / il_mdav):.1f} % | {t_ref:.1f} / {cpu_ref:.1f} | "
            f"{sizes.min()}..{sizes.max()} | "
            f"{bound:.4f} |"
        )
    print()


def timing_table(n_big: int, n_huge: int) -> None:
    rng = np.random.default_rng(2026)
    mixing = rng.normal(size=(10, 10))
    big = pl.DataFrame(
        rng.standard_normal((n_big, 10)) @ mixing, schema=[f"x{j}" for j in range(10)]
    )
    microaggregation(big.head(500), numeric=big.columns, k=3)
    print("### MDAV run time (seeded synthetic data, correlated normal)")
    print()
    print("| data | k | strata | groups | wall (s) | CPU (s) |")
    print("|---|---|---|---|---|---|")
    result, t, cpu = _timed(microaggregation, big, numeric=big.columns, k=3)
    groups = len(result.details["group_sizes"])
    print(f"| {n_big:,} x 10 | 3 | none | {groups:,} | {t:.1f} | {cpu:.1f} |")
    n_strata = max(n_huge // 100_000, 1)
    values = rng.standard_normal((n_huge, 5)) @ rng.normal(size=(5, 5))
    huge = pl.DataFrame(values, schema=[f"x{j}" for j in range(5)]).with_columns(
        stratum=pl.Series(np.repeat(np.arange(n_strata), n_huge // n_strata))
    )
    numeric = [f"x{j}" for j in range(5)]
    result, t, cpu = _timed(microaggregation, huge, numeric=numeric, k=3, strata="stratum")
    print(
        f"| {n_huge:,} x 5 | 3 | {n_strata} x {n_huge // n_strata:,} | "
        f"{len(result.details['group_sizes']):,} | {t:.1f} | {cpu:.1f} |"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    args = parser.parse_args()
    if args.quick:
        census_table(iterations=200)
        timing_table(n_big=20_000, n_huge=200_000)
    else:
        census_table(iterations=2000)
        timing_table(n_big=100_000, n_huge=1_000_000)


if __name__ == "__main__":
    main()
