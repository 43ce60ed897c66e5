"""Benchmark: the lattice search (Flash, heuristic, exhaustive) on ARX's adult data.

Run: ``.venv/bin/python bench/bench_lattice.py [--all-exhaustive] [--adult-only]`` (reads
tests/data/arx).
Prints markdown tables:

1. adult (30,162 records, 9 keys, 12,960 nodes) with the k-anonymity settings of ARX's
   ``TestAnonymizationKAnonymity`` (k = 5 and 100, suppression 4 % and 0 %), measure Height:
   Flash, the heuristic and (for the first setting, or all with ``--all-exhaustive``) the
   exhaustive search;
2. ARX's published benchmark setting (anonbench, CBMS 2014: adult with 8 keys, occupation not
   a key, 4,320 nodes, 5-anonymity, no suppression) beside its published Flash figures;
3. adult resampled to 1,000,000 records with a seed (same lattice), Flash and, for k = 1,000
   with 4 %, the exhaustive search;
4. adult with two synthetic keys (a 5-digit code with 4 levels, a month with 4 levels):
   207,360 nodes, and the heuristic within budgets there;
5. the cost of one node's classes: rolled up from snapshots against grouping the records.

Times are wall-clock seconds of one run, after a warm-up search that compiles the numba kernel.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from sdckit._codes import factorize
from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.lattice import Height, KAnonymity, LatticeData, search_lattice

ARX = Path(__file__).resolve().parents[1] / "tests" / "data" / "arx"
ADULT_KEYS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
)
ANONBENCH_KEYS = (
    "age",
    "education",
    "marital-status",
    "native-country",
    "race",
    "salary-class",
    "sex",
    "workclass",
)
SETTINGS = ((5, 0.04), (100, 0.04), (5, 0.0), (100, 0.0))
# resampling repeats each adult record about 33 times: k = 5 holds at the bottom node, so the
# 1e6 runs also take k = 1,000 (about k = 30 on adult itself)
SETTINGS_1M = ((5, 0.04), (100, 0.04), (1000, 0.04), (100, 0.0), (1000, 0.0))


def hierarchy(key: str) -> tuple[tuple[str, ...], ...]:
    return GeneralisationHierarchy.read_arx_csv(ARX / f"adult_hierarchy_{key}.csv").table()


def adult() -> pl.DataFrame:
    return pl.read_csv(ARX / "adult.csv", separator=";", infer_schema=False)


def build(frame: pl.DataFrame, keys: tuple[str, ...], extra: dict | None = None) -> LatticeData:
    hierarchies = {k: hierarchy(k) for k in keys}
    hierarchies.update(extra or {})
    return LatticeData.build(frame, hierarchies)


def row(label: str, data: LatticeData, k: int, limit: float, algorithm: str, **kw) -> str:
    data.__dict__.pop("_snapshots", None)  # a cold start: the bottom grouping is timed too
    start = time.perf_counter()
    r = search_lattice(
        data, [KAnonymity(k)], Height(), suppression_limit=limit, algorithm=algorithm, **kw
    )
    seconds = time.perf_counter() - start
    per_node = 1000 * seconds / max(r.n_evaluated, 1)
    budget = ", ".join(f"{k}={v}" for k, v in kw.items()) or "none"
    return (
        f"| {label} | {data.n_records:,} | {data.n_nodes:,} | {k} | {limit:.0%} | {algorithm} "
        f"| {budget} | {seconds:.2f} | {r.n_evaluated:,} | {per_node:.2f} | {r.optimum} "
        f"| {r.loss:g} | {r.lower_bound:g} | {r.proven_optimal} |"
    )


HEADER = (
    "| data | records | nodes | k | suppression | algorithm | budget | time (s) | nodes "
    "evaluated | ms per evaluated node | optimum | loss (Height) | lower bound | proven |\n"
    "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---:|---|"
)


def synthetic_keys(n: int, seed: int) -> tuple[pl.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    codes = [f"{z:05d}" for z in rng.choice(100_000, 60, replace=False)]
    months = [f"{m:02d}" for m in range(1, 13)]
    frame = pl.DataFrame(
        {"code": rng.choice(codes, n).tolist(), "month": rng.choice(months, n).tolist()}
    )
    extra = {
        "code": [(c, c[:3] + "**", c[:1] + "****", "*") for c in codes],
        "month": [
            (m, f"Q{(int(m) - 1) // 3 + 1}", f"H{(int(m) - 1) // 6 + 1}", "*") for m in months
        ],
    }
    return frame, extra


def records_grouping(data: LatticeData, levels: tuple[int, ...]) -> int:
    """A node's classes grouped from the records (pack the generalised codes, factorise)."""
    packed = np.zeros(data.n_records, dtype=np.int64)
    for j, lv in enumerate(levels):
        width = int(data.maps[j][lv].max()) + 1
        packed = packed * width + data.maps[j][lv][data.base[:, j]]
    _, n_classes = factorize(packed)
    return n_classes


def node_costs(data: LatticeData, label: str) -> str:
    rng = np.random.default_rng(5)
    nodes = [tuple(int(rng.integers(0, h + 1)) for h in data.heights) for _ in range(300)]
    data.classes(nodes[0])
    start = time.perf_counter()
    for levels in nodes:
        data.classes(levels)
    rolled = (time.perf_counter() - start) / len(nodes)
    start = time.perf_counter()
    for levels in nodes:
        records_grouping(data, levels)
    grouped = (time.perf_counter() - start) / len(nodes)
    return (
        f"| {label} | {data.n_records:,} | {1000 * rolled:.2f} | {1000 * grouped:.2f} "
        f"| {grouped / rolled:.1f} |"
    )


def main() -> None:
    all_exhaustive = "--all-exhaustive" in sys.argv
    adult_only = "--adult-only" in sys.argv
    frame = adult()
    data = build(frame, ADULT_KEYS)
    search_lattice(data, [KAnonymity(5)], Height(), suppression_limit=0.04)  # warm-up
    data = build(frame, ADULT_KEYS)

    print("### adult, ARX's k-anonymity test settings\n")
    print(HEADER)
    for i, (k, limit) in enumerate(SETTINGS):
        print(row("adult", data, k, limit, "flash"), flush=True)
        print(row("adult", data, k, limit, "heuristic"), flush=True)
        if i == 0 or all_exhaustive:
            print(row("adult", data, k, limit, "exhaustive"), flush=True)
    if adult_only:
        return

    print("\n### ARX's benchmark setting (anonbench, CBMS 2014)\n")
    print(HEADER)
    bench8 = build(frame, ANONBENCH_KEYS)
    print(row("adult, 8 keys", bench8, 5, 0.0, "flash"), flush=True)

    print("\n### 1,000,000 records, the same lattice\n")
    print(HEADER)
    rng = np.random.default_rng(31)
    big = frame.select(pl.all().gather(rng.integers(0, frame.height, 1_000_000)))
    data_1m = build(big, ADULT_KEYS)
    for k, limit in SETTINGS_1M:
        print(row("adult x 1e6", data_1m, k, limit, "flash"), flush=True)
        if (k, limit) == (1000, 0.04):
            print(row("adult x 1e6", data_1m, k, limit, "exhaustive"), flush=True)

    print("\n### 207,360 nodes: adult with two synthetic keys\n")
    print(HEADER)
    extra_frame, extra = synthetic_keys(frame.height, seed=7)
    wide = build(pl.concat([frame, extra_frame], how="horizontal"), ADULT_KEYS, extra)
    print(row("adult + 2 keys", wide, 5, 0.04, "flash", time_limit=900.0), flush=True)
    for budget in ({"max_nodes": 100}, {"time_limit": 5.0}):
        print(row("adult + 2 keys", wide, 5, 0.04, "heuristic", **budget), flush=True)
        print(row("adult + 2 keys", wide, 5, 0.04, "flash", **budget), flush=True)

    print("\n### One node's classes: rolled up against grouped from the records\n")
    print("| data | records | rolled up (ms) | from the records (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    print(node_costs(build(frame, ADULT_KEYS), "adult"), flush=True)
    print(node_costs(build(big, ADULT_KEYS), "adult x 1e6"), flush=True)


if __name__ == "__main__":
    main()
