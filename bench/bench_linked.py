"""Benchmark: linked tables protected by the Gauss method, jointly and table by table.

Run as ``.venv/bin/python bench/bench_linked.py``.

The four tables of GaussSuppression's test "SuppressLinkedTables" on its public data ``d53``
(10,000 census records, sex x age x labour-market status, sex x age x household status,
sex x age x family status, sex x labour-market status x household status; three-level
hierarchies; tests/tables/data/gauss/d53.csv.gz), primaries below 4 as in that test.  Three
ways are timed: each table on its own (its own elimination, no coordination: the union of
the patterns), ``LinkedTables.protect(GaussSuppression())`` (the iterative scheme with the
joint LP audit and repair), the same with ``secondaries_as_primary=True`` (GaussSuppression's
"back-tracking") and ``protect(..., joint_elimination=True)`` (one elimination over the joint
model first, GaussSuppression's "global" protection).  Printed (markdown):
seconds, distinct secondaries, the joint audit's verdict, the primaries an intruder can
compute from all the published tables (rank test on the joint model of the records'
atoms), and whether the joint elimination gives R's golden sum.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tables"))  # the d53 helpers of the golden tests

import test_gauss_golden_linked as golden  # noqa: E402

from sdckit.tables import GaussSuppression, LinkedTables  # noqa: E402
from sdckit.tables.suppression._gauss_linked import joint_elimination  # noqa: E402
from sdckit.tables.table import CellStatus  # noqa: E402


def computable(lk: LinkedTables, suppressed: np.ndarray) -> int:
    """Primaries in the span of the published columns of the joint atom model."""
    n_atoms, atom, cell = lk.joint_model()
    x = np.zeros((n_atoms, lk.n_distinct))
    x[atom, cell] = 1.0
    prim = np.flatnonzero(lk.status == CellStatus.PRIMARY)
    u, s, _ = np.linalg.svd(x[:, ~suppressed], full_matrices=False)
    q = u[:, s > 1e-9 * s[0]]
    rest = x[:, prim] - q @ (q.T @ x[:, prim])
    return int((np.linalg.norm(rest, axis=0) < 1e-7).sum())


def main() -> None:
    data = pl.read_csv(golden.D53, infer_schema_length=0).with_columns(
        pl.col("freq").cast(pl.Int64)
    )
    tables = [dims for dims, _ in golden.TABLES.values()]
    lk, rows = golden.linked_of(data, tables)
    GaussSuppression().apply(lk.tables[3])  # numba compilation / cache load
    status = lk.status
    n_prim = int((status == CellStatus.PRIMARY).sum())
    print(
        f"d53: {len(lk.tables)} tables, {lk.n_distinct:,} distinct cells, "
        f"{len(lk.common_cells):,} common, {n_prim:,} primaries, {len(lk.atoms):,} atoms\n"
    )
    print(
        "| way | seconds | secondaries (distinct) | consistent | joint audit "
        "| computable primaries |"
    )
    print("|---|---:|---:|---|---|---:|")
    start = time.perf_counter()
    alone = status == CellStatus.PRIMARY
    for t, ids in zip(lk.tables, lk.cell_map, strict=True):
        alone[ids[GaussSuppression().apply(t).table.suppressed]] = True
    seconds = time.perf_counter() - start
    apart = lk.with_tables(
        [
            t.suppress(alone[ids] & ~t.suppressed)
            for t, ids in zip(lk.tables, lk.cell_map, strict=True)
        ]
    )
    print(
        f"| each table alone | {seconds:.1f} | {int(alone.sum()) - n_prim:,} | (forced) | "
        f"{'passes' if apart.audit().ok else 'FAILS'} | {computable(lk, alone)} |"
    )
    ways = (
        ("iterative", {}),
        ("back-tracking (secondaries as primary)", {"secondaries_as_primary": True}),
        ("joint elimination", {"joint_elimination": True}),
    )
    for name, options in ways:
        start = time.perf_counter()
        res = lk.protect(GaussSuppression(), **options)
        seconds = time.perf_counter() - start
        supp = res.linked.hidden
        print(
            f"| {name} | {seconds:.1f} | {int(supp.sum()) - n_prim:,} | {res.linked.consistent} | "
            f"{'passes' if res.protected else 'FAILS'} | {computable(lk, supp)} |"
        )
    start = time.perf_counter()
    n_atoms, atom, cell = lk.joint_model()
    fresh, _, _ = joint_elimination(n_atoms, atom, cell, status, lk._costs("value", status))
    seconds = time.perf_counter() - start
    supp = fresh | (status == CellStatus.PRIMARY)
    total = sum(k + 1 for k, c in enumerate(rows) if supp[c])
    verdict = "reproduced" if total == golden.GLOBAL_SUM else f"NOT reproduced ({total:,})"
    print(
        f"\nthe joint elimination alone: {seconds:.2f} s, {int(fresh.sum()):,} secondaries; "
        f"R's golden sum {golden.GLOBAL_SUM:,}: {verdict}"
    )


if __name__ == "__main__":
    main()
