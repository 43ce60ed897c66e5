"""Benchmark: the insider audit of every suppression method's pattern, before and after repair.

Run as ``.venv/bin/python bench/bench_insider.py [--enterprises N] [--seed S] [--methods ...]
[--register 3|4]``.  With ``--register`` the table is the generated business register's
(:func:`~sdckit.datasets.generate_business_register`: local units of enterprises in holdings)
by activity x region (both hierarchical) x size class (``4``: section x region x size class
x legal form), its contributors the holdings.

The table: seeded synthetic enterprises (one record each, so a cell's contributors are its
enterprises) over location (2 regions x 4 municipalities) x activity (3 sections x 3
divisions) x size class (4), with a skewed turnover (lognormal, sigma 1.5): many inner cells
with one or two enterprises, as in business statistics.  Rules: the minimum frequency 3
(safety range 10 %) and the p% rule with p = 15.

For each method (hypercube, modular, optimal, gauss) it prints the primaries and
secondaries of the method's own pattern, what the outsider audit and the insider audit
(:func:`sdckit.tables.audit.insider_audit`: each enterprise of a single-contributor cell
knows it) find: primaries below their levels for some insider, of them computed exactly,
secondaries an outsider computes exactly; then the same after
:func:`~sdckit.tables.repair_suppression` (insider on), the cells it added and the times.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from sdckit.tables import (
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
    suppress_gauss,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)

METHODS = {
    "hypercube": suppress_hypercube,
    "modular": suppress_modular,
    "optimal": suppress_optimal,
    "gauss": suppress_gauss,
}


def business_table(n: int, seed: int) -> Table:
    """Location x activity x size class of ``n`` seeded enterprises (module doc)."""
    rng = np.random.default_rng(seed)
    municipalities = [f"R{r}M{m}" for r in range(1, 3) for m in range(1, 5)]
    divisions = [f"S{s}D{d}" for s in range(1, 4) for d in range(1, 4)]
    weights = 1.0 / np.arange(1, 9) ** 0.8
    act_w = 1.0 / np.arange(1, 10) ** 0.9
    size_p = np.array([0.55, 0.28, 0.12, 0.05])
    frame = pl.DataFrame(
        {
            "location": rng.choice(municipalities, n, p=weights / weights.sum()),
            "activity": rng.choice(divisions, n, p=act_w / act_w.sum()),
            "size": rng.choice(["1-9", "10-49", "50-249", "250+"], n, p=size_p),
            "turnover": np.round(rng.lognormal(4.0, 1.5, n), 1),
        }
    )
    location = {
        "Total": ["R1", "R2"],
        **{f"R{r}": [f"R{r}M{m}" for m in range(1, 5)] for r in (1, 2)},
    }
    activity = {
        "Total": ["S1", "S2", "S3"],
        **{f"S{s}": [f"S{s}D{d}" for d in range(1, 4)] for s in (1, 2, 3)},
    }
    return Table.from_microdata(
        frame,
        {"location": location, "activity": activity, "size": ["1-9", "10-49", "50-249", "250+"]},
        "turnover",
    )


def register_table(n: int, seed: int, four: bool) -> Table:
    """Turnover of ``generate_business_register(n, seed=seed)`` by activity x region x size
    class (both hierarchies; ``four``: section x region x size class x legal form), counted
    by enterprises in holdings."""
    from sdckit.datasets import BUSINESS_HIERARCHIES, generate_business_register

    register = generate_business_register(n, seed=seed)
    dims: dict[str, object] = {
        "activity": BUSINESS_HIERARCHIES["activity"],
        "region": BUSINESS_HIERARCHIES["region"],
        "size_class": None,
    }
    if four:  # sections (flat) instead of divisions: 8 x 12 x 5 x 4 = 1,920 cells
        dims = {"section": None, "region": dims["region"], "size_class": None, "legal_form": None}
    return Table.from_microdata(
        register, dims, "turnover", respondent="enterprise_id", holding="holding_id"
    )


def _row(name: str, stage: str, t: Table, seconds: float) -> str:
    outsider = audit(t, insider=False, intervals="check")
    inside = audit(t, intervals="check")
    ia = inside.insider_audit
    return (
        f"| {name} | {stage} | {int(t.primary.sum())} | {int(t.secondary.sum())} | "
        f"{len(outsider.under_protected)} | {len(outsider.computable_secondaries)} | "
        f"{len(ia.under_protected)} | {len(ia.disclosed)} | {ia.n_units} | {seconds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enterprises", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--methods", nargs="*", default=list(METHODS))
    parser.add_argument(
        "--register",
        choices=("3", "4"),
        default=None,
        help="the generated business register's table of 3 or 4 dimensions (respondents in "
        "holdings) instead of the one-record enterprises",
    )
    args = parser.parse_args()
    if args.register:
        t = register_table(args.enterprises, args.seed, args.register == "4")
    else:
        t = business_table(args.enterprises, args.seed)
    marked = apply_rules(t, [MinFrequency(threshold=3, safety_range=10.0), PPercent(p=15.0)])
    single = int((marked.primary & (marked.n_contributors == 1)).sum())
    unit = "holding" if args.register else "enterprise"
    print(
        f"table: {t.n_cells} cells ({' x '.join(t.dimensions)}), {args.enterprises} "
        f"enterprises (seed {args.seed}), {int(marked.primary.sum())} primaries ({single} "
        f"single-{unit})\n"
    )
    print(
        "| method | pattern | primaries | secondaries | outsider: primaries below level | "
        "outsider: secondaries computable | insider: primaries below level | insider: "
        "computed exactly | insider units | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.methods:
        start = time.perf_counter()
        res = METHODS[name](marked)
        took = time.perf_counter() - start
        print(_row(name, "method", res.table, took))
        start = time.perf_counter()
        fixed = repair_suppression(res.table, insider=True)
        took = time.perf_counter() - start
        print(_row(name, f"repaired (+{fixed.details['repaired']})", fixed.table, took))


if __name__ == "__main__":
    main()
