"""Benchmark: business tables from the generated register, counted by enterprises and holdings.

Run as ``.venv/bin/python bench/bench_respondents.py [--enterprises N] [--build N]
[--methods h,m,g,o] [--dims 3|4]``.

Printed (markdown):

* the time to build a table of activity (2 levels) x region (2 levels) x size class from a
  register of ``--build`` enterprises (about 1.3 local units each), with records as
  contributors, with ``respondent`` and with ``respondent`` and ``holding`` (the unit-level
  roll-up is vectorised: no Python loop over records);
* on the register of ``--enterprises`` enterprises, the 3-D (activity x region x size class)
  or 4-D (section x region x size class x legal form) table with the rules minimum frequency 3
  and p% 10 on holdings and (1, 80)-dominance on enterprises: primaries counted by records and
  by holdings, and for each suppression method its time, secondaries and the primaries the LP
  audit (outsider) finds under-protected.
"""

from __future__ import annotations

import argparse
import time

import polars as pl

from sdckit.datasets import BUSINESS_HIERARCHIES, generate_business_register
from sdckit.tables import (
    Dominance,
    GaussSuppression,
    HypercubeSuppression,
    MinFrequency,
    ModularSuppression,
    OptimalSuppression,
    PPercent,
    Table,
    apply_rules,
    audit,
)

METHODS = {
    "h": HypercubeSuppression,
    "m": ModularSuppression,
    "g": GaussSuppression,
    "o": OptimalSuppression,
}
RULES = [MinFrequency(threshold=3), PPercent(p=10), Dominance(n=1, k=80, level="respondent")]


def _dims(d: int) -> dict[str, object]:
    region = BUSINESS_HIERARCHIES["region"]
    if d == 4:
        return {"section": None, "region": region, "size_class": None, "legal_form": None}
    return {"activity": BUSINESS_HIERARCHIES["activity"], "region": region, "size_class": None}


def build_times(n: int) -> None:
    df = generate_business_register(n, seed=1)
    dims = _dims(3)
    print(f"\n## Build ({n:,} enterprises, {df.height:,} local units)\n")
    print("| contributors | seconds | cells |\n|---|---:|---:|")
    for label, kw in (
        ("records", {}),
        ("enterprises", {"respondent": "enterprise_id"}),
        ("holdings", {"respondent": "enterprise_id", "holding": "holding_id"}),
    ):
        t0 = time.perf_counter()
        t = Table.from_microdata(df, dims, "turnover", **kw)
        print(f"| {label} | {time.perf_counter() - t0:.2f} | {t.n_cells:,} |")


def protect(n: int, d: int, methods: str) -> None:
    df = generate_business_register(n, seed=7)
    dims = _dims(d)
    by_records = apply_rules(Table.from_microdata(df, dims, "turnover"), RULES)
    t = Table.from_microdata(df, dims, "turnover", respondent="enterprise_id", holding="holding_id")
    t = apply_rules(t, RULES)
    print(f"\n## {d}-D table ({n:,} enterprises, {df.height:,} local units, {t.n_cells:,} cells)\n")
    print(
        f"primaries: {int(by_records.primary.sum())} by records, {int(t.primary.sum())} by "
        f"holdings ({int((t.n_contributors > 0).sum())} non-empty cells)\n"
    )
    print("| method | seconds | secondaries | primaries under-protected |\n|---|---:|---:|---:|")
    for k in methods.split(","):
        t0 = time.perf_counter()
        out = METHODS[k]().apply(t).table
        seconds = time.perf_counter() - t0
        verdict = audit(out, intervals="check")
        under = int(out.primary[verdict.under_protected].sum())
        name = METHODS[k].__name__
        print(f"| {name} | {seconds:.1f} | {int(out.secondary.sum())} | {under} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--enterprises", type=int, default=2000)
    p.add_argument("--build", type=int, default=200_000)
    p.add_argument("--methods", default="h,m,g")
    p.add_argument("--dims", type=int, choices=(3, 4), default=3)
    a = p.parse_args()
    pl.Config.set_tbl_rows(50)
    build_times(a.build)
    protect(a.enterprises, a.dims, a.methods)


if __name__ == "__main__":
    main()
