"""Benchmark: secondary cell suppression of large hierarchical magnitude tables.

Run as ``.venv/bin/python bench/bench_tables.py [--quick] [--audit-big] [--parts small,mid,big]``.
Prints markdown tables.

* big: from seeded synthetic microdata (1,000,000 records), a 3-dimensional hierarchical
  magnitude table (region > district, section > division, size group > size class) of 122,759
  cells; p% rule (p = 15) and minimum frequency (3); protected by the large-table method
  (sub-table decomposition, ``suppress_modular``) and by the hypercube method: time, peak
  memory, number and value of the secondaries, sub-table audits.  With ``--audit-big`` the
  whole table is audited by LP (``intervals="check"``) and under-protected primaries are
  repaired (``repair_suppression``) and audited again.
* mid: a 3-D table of 11,988 cells (100,000 records): both methods with and without the final
  repair, and a full LP audit of every pattern.
* small: two 2-D hierarchical tables (336 and 1,548 cells) where the optimal method finishes,
  compared with both heuristics.

``--quick`` shrinks the big and mid tables (a smoke test).
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from sdckit.tables import (
    Hierarchy,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)


def _tree(prefix: str, groups: int, per_group: int) -> tuple[Hierarchy, list[str]]:
    tree: dict[str, list[str]] = {"Total": []}
    leaves: list[str] = []
    for g in range(groups):
        parent = f"{prefix}{g:02d}"
        tree["Total"].append(parent)
        kids = [f"{parent}_{c:02d}" for c in range(per_group)]
        tree[parent] = kids
        leaves += kids
    return Hierarchy.from_dict(tree), leaves


def make_table(n: int, sizes: tuple[tuple[int, int], ...], seed: int = 2026) -> Table:
    """Synthetic business microdata aggregated to a hierarchical magnitude table."""
    rng = np.random.default_rng(seed)
    dims: dict[str, Hierarchy] = {}
    data: dict[str, object] = {}
    for name, (groups, per_group) in zip(("region", "industry", "size"), sizes, strict=False):
        h, leaves = _tree(name[0].upper(), groups, per_group)
        dims[name] = h
        # skewed popularity of the leaves, so that some cells are small
        weights = rng.gamma(4.0, 1.0, len(leaves))
        data[name] = np.asarray(leaves)[rng.choice(len(leaves), n, p=weights / weights.sum())]
    data["turnover"] = np.round(rng.lognormal(4.0, 1.6, n), 1)
    return Table.from_microdata(pl.DataFrame(data), dims, "turnover", n_top=2)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _run(method: Callable, table: Table, **kwargs: object) -> dict[str, object]:
    start = time.perf_counter()
    res = method(table, **kwargs)
    seconds = time.perf_counter() - start
    return {
        "method": res.method,
        "seconds": seconds,
        "secondaries": res.n_secondary,
        "secondary value": res.secondary_value,
        "details": res.details,
        "result": res,
    }


def _header(title: str, table: Table, extra: str = "") -> None:
    print(f"\n### {title}\n")
    print(
        f"cells {table.n_cells:,}, interior {int((~table.is_total).sum()):,}, primaries "
        f"{int(table.primary.sum()):,} {extra}\n"
    )
    print("| method | seconds | secondaries | value of secondaries | notes |")
    print("|---|---:|---:|---:|---|", flush=True)


def _row(r: dict[str, object]) -> None:
    d = r["details"]
    notes = ", ".join(f"{k}={v}" for k, v in d.items())
    print(
        f"| {r['method']} | {r['seconds']:.1f} | {r['secondaries']:,} | "
        f"{r['secondary value']:,.0f} | {notes} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small tables only")
    parser.add_argument("--audit-big", action="store_true", help="full LP audit of the big table")
    parser.add_argument("--parts", default="small,mid,big", help="comma list: small,mid,big")
    args = parser.parse_args()
    rules = [PPercent(p=15), MinFrequency(threshold=3)]
    if args.quick:
        big_spec = (20_000, ((4, 4), (4, 4), (2, 3)))
        mid_spec = (5_000, ((3, 3), (3, 3), (2, 2)))
    else:
        big_spec = (1_000_000, ((10, 8), (10, 6), (3, 5)))
        mid_spec = (100_000, ((5, 6), (6, 5), (2, 3)))

    parts = set(args.parts.split(","))
    if "big" in parts:
        start = time.perf_counter()
        big = apply_rules(make_table(big_spec[0], big_spec[1]), rules)
        build = time.perf_counter() - start
        _header(
            f"3-D hierarchical magnitude table from {big_spec[0]:,} records",
            big,
            f"(built with the rules in {build:.1f} s)",
        )
        for method in (suppress_modular, suppress_hypercube):
            r = _run(method, big, repair_limit=0)
            r["details"]["peak_rss_mb"] = round(_peak_mb())
            if args.audit_big:
                start = time.perf_counter()
                res = audit(r["result"].table, intervals="check")
                r["details"]["audit_seconds"] = round(time.perf_counter() - start, 1)
                r["details"]["under_protected"] = len(res.under_protected)
            _row(r)
            if args.audit_big and r["details"]["under_protected"]:
                fixed = _run(repair_suppression, r["result"].table)
                start = time.perf_counter()
                res = audit(fixed["result"].table, intervals="check")
                fixed["method"] = f"{r['method']} + repair"
                fixed["details"]["audit_seconds"] = round(time.perf_counter() - start, 1)
                fixed["details"]["under_protected"] = len(res.under_protected)
                fixed["details"]["peak_rss_mb"] = round(_peak_mb())
                _row(fixed)

    if "mid" in parts:
        mid = apply_rules(make_table(mid_spec[0], mid_spec[1], seed=7), rules)
        _header(f"3-D table from {mid_spec[0]:,} records, full LP audit", mid)
        for method, kwargs in (
            (suppress_modular, {"repair_limit": 0}),
            (suppress_modular, {}),
            (suppress_modular, {"propagate": True, "repair_limit": 0}),
            (suppress_hypercube, {"repair_limit": 0}),
            (suppress_hypercube, {}),
        ):
            r = _run(method, mid, **kwargs)
            start = time.perf_counter()
            res = audit(r["result"].table, intervals="check")
            r["details"].update(kwargs)
            r["details"]["audit_seconds"] = round(time.perf_counter() - start, 1)
            r["details"]["audited_cells"] = len(res.cells)
            r["details"]["under_protected"] = len(res.under_protected)
            _row(r)

    if "small" in parts:
        for n, sizes, rule_p in ((3_000, (4, 4, 3, 4), 25), (20_000, (6, 6, 5, 6), 25)):
            rng = np.random.default_rng(3)
            region, leaves_r = _tree("R", sizes[0], sizes[1])
            sector, leaves_s = _tree("S", sizes[2], sizes[3])
            small = Table.from_microdata(
                pl.DataFrame(
                    {
                        "region": rng.choice(leaves_r, n),
                        "sector": rng.choice(leaves_s, n),
                        "v": rng.lognormal(3, 1.8, n),
                    }
                ),
                {"region": region, "sector": sector},
                "v",
            )
            small = apply_rules(small, [PPercent(p=rule_p), MinFrequency(threshold=4)])
            _header(f"2-D hierarchical table from {n:,} records (optimal vs heuristics)", small)
            for method, kwargs in (
                (suppress_optimal, {"time_limit": 120}),
                (suppress_modular, {}),
                (suppress_hypercube, {}),
            ):
                r = _run(method, small, **kwargs)
                r["details"]["audit_ok"] = audit(r["result"].table, intervals="check").ok
                r["details"]["proven_optimal"] = r["result"].optimal
                _row(r)


if __name__ == "__main__":
    main()
