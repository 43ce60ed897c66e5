"""Benchmark: how much interval protection the Gauss elimination gives on five-way tables.

Run as ``.venv/bin/python bench/bench_gauss_intervals.py [--sample 20] [--skip-large]``.

Two measurements behind the open gap of issue 13 (interval protection of the 1,000,000-cell
five-dimensional table in minutes):

1. The 42,120-cell five-dimensional table of ``bench_gauss.py`` (``build(20_000, (2, 2, 2),
   (5, 2, 25, 5))``, minimum frequency 3 with a 10 % safety range): the elimination's
   pattern (singleton rules off, no LP repair), then the exact LP intervals of ``--sample``
   primaries (uniform, seeded) over all suppressed cells.  Printed: how many meet their
   levels, and the median width of their intervals against the median width asked.
2. The 1,075,932-cell table (``build(650_000, (2, 2, 8), (10, 2, 75, 10))``): how many of the
   primaries that are inner cells in all five dimensions have a hypercube move of 32
   non-empty inner cells (each pair of codes siblings) in which every corner has room for the
   primary's level -- the move the hypercube method looks for.  A numba search over the
   sibling codes whose one-step neighbour qualifies; it needs no suppression pattern.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gauss import build, sampled_audit
from sdckit.tables import GaussSuppression
from sdckit.tables.table import CellStatus


def sampled_intervals(k: int) -> None:
    table = build(20_000, (2, 2, 2), (5, 2, 25, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        res = GaussSuppression(repair_limit=0, singletons=False).apply(table)
        seconds = time.perf_counter() - start
    t = res.table
    found = sampled_audit(t, k)
    print(
        f"{t.n_cells:,} cells, {int(t.primary.sum()):,} primaries; elimination {seconds:.1f} s, "
        f"{int(t.secondary.sum()):,} secondaries, {found['lp_columns']:,} suppressed cells\n"
        f"exact LP intervals of {found['sampled']} sampled primaries: {found['seconds']:.1f} s; "
        f"{found['meeting_levels']} meet their levels; median width {found['median_width']:.3f} "
        f"against a median {found['median_asked']:.3f} asked\n"
    )


@nb.njit(cache=True)
def _hypercubes(cells, ni, sib, nsib, strides, vals, ok, level):  # pragma: no cover
    n = len(cells)
    found = np.zeros(n, np.bool_)
    alts = np.empty((5, 128), np.int64)
    na = np.zeros(5, np.int64)
    choice = np.zeros(5, np.int64)
    for i in range(n):
        c = cells[i]
        lv = level[c]
        dead = False
        for d in range(5):
            k = 0
            a = ni[c, d]
            for j in range(nsib[d, a]):
                b = sib[d, a, j]
                other = c + (b - a) * strides[d]
                if ok[other] and vals[other] >= lv:
                    alts[d, k] = b
                    k += 1
            na[d] = k
            dead = dead or k == 0
        if dead:
            continue
        for d in range(5):
            choice[d] = 0
        while not found[i]:
            good = True
            for mask in range(1, 32):
                cc = c
                for d in range(5):
                    if mask & (1 << d):
                        cc += (alts[d, choice[d]] - ni[c, d]) * strides[d]
                if not ok[cc] or vals[cc] < lv:
                    good = False
                    break
            found[i] = good
            d = 0
            while d < 5:
                choice[d] += 1
                if choice[d] < na[d]:
                    break
                choice[d] = 0
                d += 1
            if d == 5:
                break
    return found


def hypercube_room() -> None:
    table = build(650_000, (2, 2, 8), (10, 2, 75, 10))
    hs = table.hierarchies
    ni = table.node_index
    prim = np.flatnonzero(table.primary)
    inner = np.ones(len(prim), dtype=bool)
    for d, h in enumerate(hs):
        inner &= np.isin(ni[prim, d], h.leaves)
    width = max(h.size for h in hs)
    sib = np.full((5, width, 128), -1, dtype=np.int64)
    nsib = np.zeros((5, width), dtype=np.int64)
    for d, h in enumerate(hs):
        for p in range(h.size):
            if h.parent[p] >= 0:
                s = [c for c in h.children[h.parent[p]] if c != p]
                sib[d, p, : len(s)] = s
                nsib[d, p] = len(s)
    shape = table.shape
    strides = np.array([int(np.prod(shape[d + 1 :])) for d in range(5)], dtype=np.int64)
    ok = table.status != CellStatus.EMPTY
    vals = table.values.astype(np.float64)
    cells = prim[inner]
    _hypercubes(cells[:5], ni, sib, nsib, strides, vals, ok, table.upper)  # compile
    start = time.perf_counter()
    found = _hypercubes(cells, ni, sib, nsib, strides, vals, ok, table.upper)
    seconds = time.perf_counter() - start
    print(
        f"{table.n_cells:,} cells, {len(prim):,} primaries, {len(cells):,} of them inner in every "
        f"dimension, {int((ok & ~table.is_total).sum()):,} non-empty inner cells\n"
        f"inner primaries with a hypercube of 32 non-empty inner cells with room for their "
        f"level: {int(found.sum()):,} of {len(cells):,} ({seconds:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    sampled_intervals(args.sample)
    if not args.skip_large:
        hypercube_room()


if __name__ == "__main__":
    main()
