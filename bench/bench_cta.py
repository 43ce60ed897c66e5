"""Benchmark: controlled tabular adjustment (CTA) of 3-dimensional hierarchical tables.

Run as ``.venv/bin/python bench/bench_cta.py [--quick]``.  Prints a markdown table.

The tables are those of ``bench_tables.py`` (seeded synthetic business microdata aggregated
to region > district x section > division x size group > size class, turnover, p% rule with
p = 15 and minimum frequency 3).  Each is adjusted with the fast heuristic (``direction =
"relaxed"``: directions fixed by a dive on the LP relaxation) and with Castro's exact model
(``"optimal"``, stopped at ``NODES`` branch-and-bound nodes), totals free and with the grand
total kept: time, the weighted distance (weights
1 / value), the total absolute change, the cells changed, the nodes, and the after-the-fact
audit (every primary moved by its level, every relation, every bound).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_tables import make_table
from sdckit.tables import MinFrequency, PPercent, Table, adjust_controlled, apply_rules

#: The exact model's node limit (a count: the same table on any machine); on these tables
#: its relaxation is weak (every binary at 1/2), so the search rarely closes its gap.
NODES = 50

SIZES = {
    "small": (3_000, ((3, 3), (3, 3), (2, 2))),
    "mid": (12_000, ((4, 4), (5, 4), (2, 3))),
}


def _row(name: str, table: Table, **params: object) -> None:
    start = time.perf_counter()
    res = adjust_controlled(table, **params)
    seconds = time.perf_counter() - start
    check = res.audit()
    diff = np.abs(res.adjusted - table.values)
    relative = float(np.sum(diff) / np.abs(table.values).sum())
    setting = ", ".join(f"{k}={v}" for k, v in params.items())
    print(
        f"| {name} | {setting} | {seconds:.2f} | {res.distance:.3f} | {relative:.2e} | "
        f"{int(np.sum(diff > 1e-9)):,} | {res.details['nodes']} | "
        f"{'yes' if res.optimal else 'no'} | {'passed' if check.ok else 'FAILED'} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the small table only")
    args = parser.parse_args()
    names = ["small"] if args.quick else list(SIZES)
    print("| table | parameters | seconds | weighted distance | change / total | cells changed "
          "| nodes | optimal | audit |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for name in names:
        n, sizes = SIZES[name]
        table = apply_rules(make_table(n, sizes), [PPercent(p=15), MinFrequency(threshold=3)])
        label = (
            f"{name}: {table.n_cells:,} cells, {int(table.primary.sum()):,} primaries, "
            f"{table.constraint_matrix.shape[0]:,} relations"
        )
        for totals in ("free", "grand"):
            _row(label, table, direction="relaxed", totals=totals)
            _row(label, table, direction="optimal", totals=totals, node_limit=NODES)


if __name__ == "__main__":
    main()
