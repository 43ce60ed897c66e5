"""Timings of the cell key method for magnitudes on a skewed business file.

Run: ``.venv/bin/python bench/bench_cellkey.py [--records N] [--repeat R]``; prints a markdown
table (best of R runs, wall-clock and this process's CPU seconds): building the default
numeric ptable (``ptable::pt_ex_nums()``), and perturbing a 3-way table (activity x region x
size class, every total) from ``N`` records with the top 3 contributions, the flex function
and the record keys hashed from an identifier; then the relative noise of the published cells.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from sdckit.tables import cell_key_magnitudes, default_magnitude_ptable, ptable_magnitudes


def make_firms(n: int, seed: int = 0) -> pl.DataFrame:
    """Enterprises with a lognormal (skewed) turnover over 60 activities, 20 regions, 5 sizes."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "activity": rng.integers(0, 60, n).astype(str),
            "region": rng.integers(0, 20, n).astype(str),
            "size": rng.integers(0, 5, n).astype(str),
            "turnover": np.round(rng.lognormal(6.0, 1.8, n), 2),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start, cpu = time.perf_counter(), time.process_time()
    ptable_magnitudes(D=10, V=3.0, step=2, icat=[1, 5, 10], optim=[4, 1, 1])
    build, build_cpu = time.perf_counter() - start, time.process_time() - cpu
    pt = default_magnitude_ptable()
    firms = make_firms(args.records)
    params = {"fp": 2000.0, "p_small": 0.2, "p_large": 0.03, "q": 2.0, "ptable": pt}
    best = best_cpu = np.inf
    res = None
    for _ in range(args.repeat):
        start, cpu = time.perf_counter(), time.process_time()
        res = cell_key_magnitudes(
            firms, ["activity", "region", "size"], "turnover", key_columns="id", **params
        )
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    assert res is not None
    vals = res.table.values
    rel = np.abs(res.perturbed - vals)[vals > 0] / vals[vals > 0]
    print("| step | wall-clock | CPU (this process) |")
    print("|---|---|---|")
    print(f"| build ptable::pt_ex_nums() (96 rows, SLSQP, scipy import included) | "
          f"{build:.2f} s | {build_cpu:.2f} s |")  # fmt: skip
    print(f"| perturb {res.table.n_cells:,} cells from {args.records:,} records | "
          f"{best:.2f} s | {best_cpu:.2f} s |")  # fmt: skip
    print(f"| relative noise of the cells: median / 90th percentile / largest | "
          f"{np.median(rel):.4f} / {np.quantile(rel, 0.9):.4f} / {rel.max():.4f} | |")  # fmt: skip


if __name__ == "__main__":
    main()
