"""Benchmark: generalisation hierarchies and local suppression over own key combinations.

Run as ``.venv/bin/python bench/bench_hierarchies.py [--records N] [--repeat R] [--only
generalise|suppression]``.  Prints
markdown tables (minimum and median wall clock of ``--repeat`` runs; the machine may be shared).

* ``GeneralisationHierarchy.generalise``: a column of ``--records`` integer ages (0..99) to
  each level of a five / ten / twenty-year interval hierarchy, the same ages stored as floats
  (``101.0`` matched as ``101``), and five-digit codes (10,000 of them) to a prefix level.
* ``GlobalRecoding`` to levels of two hierarchies (end to end: the method's checks, the
  recoded frame and its record of changes).
* ``LocalSuppression`` on the stored ``synth_1e6`` file (1,000,000 x 7 keys), k = 3: the full
  key set, ``combinations=2`` (every pair, one k), the same 21 pairs as own combinations, and
  the combinations mu-ARGUS generates from identification levels, each checked by
  :func:`sdckit.risk.combination_risk` afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit import Microdata
from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.masking import GlobalRecoding, LocalSuppression
from sdckit.risk import combination_risk, combinations_from_levels

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bench"
SYNTH_KEYS = [f"k{i}" for i in range(1, 8)]


def _times(run: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    walls, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        walls.append(time.perf_counter() - start)
    return walls, out


def _span(walls: list[float]) -> str:
    return f"{min(walls):.2f} / {statistics.median(walls):.2f}"


def bench_generalise(n: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    ages = pl.Series("age", rng.integers(0, 100, n))
    age_h = GeneralisationHierarchy.from_intervals(range(100), widths=[5, 10, 20])
    codes = [f"{c:05d}" for c in rng.choice(100_000, 10_000, replace=False)]
    zips = pl.Series("zip", rng.choice(codes, n))
    zip_h = GeneralisationHierarchy.from_prefixes(codes)
    print(f"\n### generalise ({n:,} records; seconds, min / median of {repeat})\n")
    print("| column | hierarchy | level | seconds |")
    print("|---|---|---|---|")
    for level in (1, 2, 3):
        walls, _ = _times(lambda lv=level: age_h.generalise(ages, lv), repeat)
        print(f"| age (int) | intervals 5/10/20 | {level} | {_span(walls)} |")
    floats = ages.cast(pl.Float64)
    walls, _ = _times(lambda: age_h.generalise(floats, 2), repeat)
    print(f"| age (float) | intervals 5/10/20 | 2 | {_span(walls)} |")
    walls, _ = _times(lambda: zip_h.generalise(zips, 2), repeat)
    print(f"| zip (text, 10,000 codes) | prefixes | 2 | {_span(walls)} |")
    md = Microdata(pl.DataFrame([ages, zips]), keys=["age", "zip"])
    method = GlobalRecoding(hierarchies={"age": age_h, "zip": zip_h}, levels={"age": 2, "zip": 3})
    walls, _ = _times(lambda: method.apply(md), repeat)
    print(f"| GlobalRecoding age + zip | both | 2, 3 | {_span(walls)} |")


def bench_combinations(repeat: int) -> None:
    frame = pl.read_parquet(DATA / "synth_1e6.parquet").select(SYNTH_KEYS)
    md = Microdata(frame, keys=SYNTH_KEYS)
    pairs = [list(p) for p in combinations(SYNTH_KEYS, 2)]
    levels = {"k1": 1, "k2": 1, "k3": 2, "k4": 2, "k5": 3, "k6": 3, "k7": 3}
    generated = combinations_from_levels(levels, 3)
    cases: list[tuple[str, LocalSuppression, list[Any]]] = [
        ("all 7 keys, k = 3", LocalSuppression(k=3), [(SYNTH_KEYS, 3)]),
        ("combinations=2 (21 pairs, k = 3)", LocalSuppression(k=3, combinations=2),
         [(p, 3) for p in pairs]),
        ("21 pairs as own combinations, k = 3", LocalSuppression(k=3, key_combinations=pairs),
         [(p, 3) for p in pairs]),
        ("pairs k = 2, (k1, k2, k3) k = 5", LocalSuppression(
            key_combinations=[*([p, 2] for p in pairs), (["k1", "k2", "k3"], 5)]),
         [*((p, 2) for p in pairs), (["k1", "k2", "k3"], 5)]),
        (f"identification levels ({len(generated)} triples, k = 3)",
         LocalSuppression(k=3, identification_levels=levels), list(generated)),
    ]  # fmt: skip
    print(f"\n### local suppression, synth_1e6 (1,000,000 x 7; min / median of {repeat})\n")
    print("| combinations | suppressions | seconds | every combination meets its k |")
    print("|---|---|---|---|")
    for label, method, combos in cases:
        walls, res = _times(lambda m=method: m.apply(md), repeat)
        safe = combination_risk(res.microdata, combos).is_safe
        print(f"| {label} | {res.details['suppressions']:,} | {_span(walls)} | {safe} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("generalise", "suppression"), default=None)
    args = parser.parse_args()
    # numba kernels compiled (or loaded from the cache) before timing
    tiny = pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2]})
    LocalSuppression(k=2, key_combinations=[["a"]]).apply(tiny, keys=["a", "b"])
    if args.only != "suppression":
        bench_generalise(args.records, args.repeat)
    if args.only != "generalise":
        bench_combinations(args.repeat)


if __name__ == "__main__":
    main()
