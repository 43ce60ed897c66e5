"""Benchmark: secondary suppression by Gaussian elimination on a large hierarchical table.

Run as ``.venv/bin/python bench/bench_gauss.py [--quick] [--records N] [--sample K]
[--geo RxDxM] [--time-limit SECONDS] [--no-singletons] [--rank] [--cli]``.

The table is shaped like the one in sdcTools UserSupport#146 (a 650,000-record file; a
geography of three levels below the total; four more variables with 10, 2, 75 and 10 codes;
the minimum-frequency rule with threshold 3).  The seeded microdata are skewed (Zipf-like
municipality and industry sizes, lognormal values), so that many inner cells have one or two
records, as in real business data.  The full cross product of that issue's codes has about
86 million cells (114 million in the issue, of which 110 million empty); a :class:`Table`
holds every cell, so the geography is scaled down (``--geo``: regions, districts per region,
municipalities per district; default 4 x 5 x 5 = 100 municipalities) to give a table of about
3.4 million cells with the other variables as in the issue.

Printed (markdown): the table (cells, inner cells, records, primaries), then for the Gauss
method the time of each phase, the peak RSS above the start, the secondaries and their value;
then a *sampled* LP audit: ``--sample`` primaries (uniform, seeded) get their exact
feasibility intervals from one LP model over all suppressed cells (min and max of each), and
the check that none is disclosed exactly; and the time of the LP for the sample.  A full LP
audit of a table this size is out of reach (one LP per primary and direction over hundreds of
thousands of unknowns).

``--rank`` also times the rank test of the pattern (:func:`sdckit.tables.suppression.rank_test`:
every primary, exact disclosure through the relations, no LP).  ``--cli`` instead times the
command a user runs, as a subprocess: ``sdckit table job.toml`` on the records (Parquet) with
the Gauss method (``repair_limit = 0``, ``elimination_time_limit`` from ``--time-limit``, 600 s
by default), the minimum-frequency rule without protection levels and ``[audit] intervals =
"rank"``, writing the published table and every cell with its status (CSV); beside it the
polars floor of ``bench_table_job.py`` (read, every cell of every level, write), and a check
that both give the same count and sum in every non-empty cell.

``--compare`` runs the Gauss, modular and hypercube methods on a mid-size table of the same
shape (about 19,000 cells) and prints time, secondaries, their value and the audit verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _memory import PeakMemory
from sdckit.tables import (
    GaussSuppression,
    Hierarchy,
    MinFrequency,
    Table,
    apply_rules,
    audit,
    suppress_hypercube,
    suppress_modular,
)
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables.suppression import rank_test


def _zipf_choice(rng: np.random.Generator, k: int, size: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, k + 1) ** s
    p = p[rng.permutation(k)]
    return rng.choice(k, size=size, p=p / p.sum())


def microdata(
    records: int,
    geo: tuple[int, int, int],
    sizes: tuple[int, ...] = (10, 2, 75, 10),
    seed: int = 146,
) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    """Seeded records over a 3-level geography and further variables of ``sizes`` codes."""
    rng = np.random.default_rng(seed)
    n_reg, n_dis, n_mun = geo
    n_leaf = n_reg * n_dis * n_mun
    mun = _zipf_choice(rng, n_leaf, records, 0.9)
    reg, rest = np.divmod(mun, n_dis * n_mun)
    dis, m = np.divmod(rest, n_mun)
    geo_code = [f"{r:02d}{d:02d}{x:03d}" for r, d, x in zip(reg, dis, m, strict=True)]
    data: dict[str, object] = {"geo": geo_code}
    skew = (0.6, 0.0, 1.1, 0.7)
    for i, (k, s) in enumerate(zip(sizes, skew[: len(sizes)], strict=True)):
        codes = _zipf_choice(rng, k, records, s) if s else rng.integers(0, k, records)
        data[f"v{i + 2}"] = [f"c{c:02d}" for c in codes]
    data["value"] = np.round(rng.lognormal(3.0, 1.5, records), 1)
    frame = pl.DataFrame(data)
    leaves = sorted(set(geo_code))
    hier = {"geo": Hierarchy.from_code_lengths(leaves, [2, 4])}
    for i, k in enumerate(sizes):
        hier[f"v{i + 2}"] = Hierarchy.flat([f"c{c:02d}" for c in range(k)])
    return frame, hier


def build(records: int, geo: tuple[int, int, int], sizes: tuple[int, ...]) -> Table:
    frame, hier = microdata(records, geo, sizes)
    table = Table.from_microdata(frame, hier, "value")
    return apply_rules(table, MinFrequency(threshold=3, safety_range=10.0))


def sampled_audit(table: Table, k: int, seed: int = 7) -> dict[str, float]:
    """Exact feasibility intervals of ``k`` primaries sampled uniformly (one LP model)."""
    rng = np.random.default_rng(seed)
    cells = np.flatnonzero(table.suppressed)
    prim = np.flatnonzero(table.primary[cells])
    sample = np.sort(rng.choice(prim, size=min(k, len(prim)), replace=False))
    m = table.constraint_matrix.tocsc()[:, cells]
    rows = np.unique(m.nonzero()[0])
    m = m[rows]
    a = table.values[cells]
    lb = np.minimum(table.lower_bounds[cells], a) - a
    ub = np.maximum(table.upper_bounds[cells], a) - a
    zeros = np.zeros(m.shape[0])
    start = time.perf_counter()
    lo, hi = feasibility_intervals(m, zeros, zeros, lb, ub, targets=sample)
    seconds = time.perf_counter() - start
    width = (hi - lo)[sample]
    need_up = table.upper[cells][sample]
    need_lo = table.lower[cells][sample]
    exact = width <= 1e-6 * (1 + np.abs(a[sample]))
    levels = (hi[sample] >= need_up - 1e-6) & (-lo[sample] >= need_lo - 1e-6)
    return {
        "sampled": len(sample),
        "disclosed_exactly": int(exact.sum()),
        "meeting_levels": int(levels.sum()),
        "lp_columns": m.shape[1],
        "lp_rows": m.shape[0],
        "seconds": seconds,
        "median_width": float(np.median(width)),
        "median_asked": float(np.median(need_up + need_lo)),
    }


def _describe(table: Table, records: int) -> str:
    inner = int((~table.is_total).sum())
    nonempty = int((table.n_contributors > 0).sum())
    return (
        f"| {table.n_cells:,} | {inner:,} | {nonempty:,} | {records:,} | "
        f"{int(table.primary.sum()):,} |"
    )


def run_large(args: argparse.Namespace) -> None:
    geo = tuple(int(x) for x in args.geo.split("x"))
    start = time.perf_counter()
    with PeakMemory() as mem_build:
        table = build(args.records, geo, (10, 2, 75, 10))  # type: ignore[arg-type]
    t_build = time.perf_counter() - start
    print("| cells | inner cells | non-empty cells | records | primaries |")
    print("|---|---|---|---|---|")
    print(_describe(table, args.records))
    print(f"\nbuilt in {t_build:.1f} s (peak RSS +{mem_build.extra_mb:.0f} MB)\n")
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 10 or done == total:
            last[0] = now
            print(f"  {stage}: {done:,}/{total:,} ({now - start:.0f} s)", flush=True)

    start = time.perf_counter()
    with PeakMemory() as mem:
        res = GaussSuppression(
            repair_limit=0,
            singletons=not args.no_singletons,
            elimination_time_limit=args.time_limit,
        ).apply(table, progress=progress)
    seconds = time.perf_counter() - start
    d = res.details
    print("\n| method | seconds (model / elimination) | peak RSS | secondaries | value |")
    print("|---|---|---|---|---|")
    print(
        f"| gauss | {seconds:.1f} ({d['timings']['model']:.1f} / "
        f"{d['timings']['elimination']:.1f}) | +{mem.extra_mb:.0f} MB | {res.n_secondary:,} "
        f"| {res.secondary_value:,.0f} ({100 * res.secondary_value / table.values[0]:.1f} % "
        "of the total) |"
    )
    keys = (
        "rows", "model_nonzeros", "candidates", "updates", "undone",
        "secondary_reveal", "secondary_singleton", "arithmetic", "work",
        "stopped", "budget_from", "undecided",
    )  # fmt: skip
    print(
        "\n" + ", ".join(f"{k}={d[k]:,}" if isinstance(d[k], int) else f"{k}={d[k]}" for k in keys)
    )
    if args.rank:
        with PeakMemory() as mem_r:
            start = time.perf_counter()
            found = rank_test(res.table)
            seconds = time.perf_counter() - start
        print(f"\n{found.summary()} {seconds:.1f} s (peak RSS +{mem_r.extra_mb:.0f} MB)")
    if args.sample:
        with PeakMemory() as mem_a:
            s = sampled_audit(res.table, args.sample)
        print(
            f"\nsampled LP audit: {s['sampled']} primaries, {s['disclosed_exactly']} disclosed "
            f"exactly, {s['meeting_levels']} meeting their levels; LP {s['lp_columns']:,} "
            f"unknowns x {s['lp_rows']:,} relations, {s['seconds']:.0f} s "
            f"(peak RSS +{mem_a.extra_mb:.0f} MB)"
        )


def run_cli(args: argparse.Namespace) -> None:
    """``sdckit table job.toml`` end to end (Gauss method, rank-test audit) beside the floor."""
    import json
    import tempfile

    import bench_table_job as tj
    from bench_tauargus import hierarchy_toml

    geo = tuple(int(x) for x in args.geo.split("x"))
    limit = 600.0 if args.time_limit is None else args.time_limit
    frame, hier = microdata(args.records, geo)  # type: ignore[arg-type]
    dims = list(hier)
    sdckit = str(Path(sys.executable).with_name("sdckit"))
    with tempfile.TemporaryDirectory(prefix="bench_gauss_cli_") as tmp:
        work = Path(tmp)
        frame.write_parquet(work / "micro.parquet")
        lines = [
            'title = "Gauss suppression, rank-test audit"',
            "[input]",
            'file = "micro.parquet"',
            "[table]",
            f"dimensions = {json.dumps(dims)}",
            'value = "value"',
            *hierarchy_toml("geo", hier["geo"]),
            "[[rules]]",
            'rule = "min_frequency"',
            "threshold = 3",
            "safety_range = 0",
            "minimum_level = 0",
            "[suppression]",
            'method = "gauss"',
            "repair_limit = 0",
            f"elimination_time_limit = {limit}",
            "singletons = " + ("false" if args.no_singletons else "true"),
            "[audit]",
            'intervals = "rank"',
            "[output]",
            'table = "out/published.csv"',
            'table_full = "out/status.csv"',
        ]
        (work / "job.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        spec = {"dimensions": dims, "value": "value", "ancestors": tj.ancestors(hier)}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        (work / "floor.py").write_text(tj.FLOOR, encoding="utf-8")
        job = tj.timed([sdckit, "table", "job.toml"], work)
        floor = tj.timed(
            [sys.executable, "floor.py", "micro.parquet", "floor.csv", "spec.json"], work
        )
        status = pl.read_csv(work / "out" / "status.csv", infer_schema_length=0)
        published = pl.read_csv(work / "out" / "published.csv", infer_schema_length=0)
        counts = status["status"].value_counts()
        n_of = dict(zip(counts["status"].to_list(), counts["count"].to_list(), strict=True))
        ours = status.filter(pl.col("n_contributors").cast(pl.Float64) > 0)
        mine = pl.read_csv(work / "floor.csv", infer_schema_length=0)
        joined = ours.join(mine, on=dims, how="inner")
        same = (
            joined.height == ours.height == mine.height
            and (joined["n"].cast(pl.Int64) == joined["n_contributors"].cast(pl.Int64)).all()
            and np.allclose(
                joined["s"].cast(pl.Float64).to_numpy(),
                joined["value"].cast(pl.Float64).to_numpy(),
                rtol=1e-9,
            )
        )
        hidden = int((published["suppressed"] == "true").sum())
    print(
        f"\n`sdckit table job.toml`: {args.records:,} records, geography {args.geo}, "
        f"elimination_time_limit {limit:.0f} s, audit by the rank test\n"
    )
    print("| command | wall s | CPU s | peak RSS | cells | primaries | secondaries |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(
        f"| `sdckit table job.toml` | {job['wall']:.1f} | {job['cpu']:.1f} | "
        f"{job['rss']:,.0f} MB | {status.height:,} | {n_of.get('primary', 0):,} | "
        f"{n_of.get('secondary', 0):,} |"
    )
    print(
        f"| {tj.FLOOR_NAME} | {floor['wall']:.1f} | {floor['cpu']:.1f} | "
        f"{floor['rss']:,.0f} MB | {mine.height:,} non-empty | | |"
    )
    print(
        f"\npublished table: {published.height:,} cells, {hidden:,} suppressed; the counts and "
        f"sums of all {ours.height:,} non-empty cells equal the floor's: {same}"
    )


def run_compare(args: argparse.Namespace) -> None:
    records = 20_000
    table = build(records, (3, 3, 3), (5, 2, 25))
    print("\nmid-size table:")
    print("| cells | inner cells | non-empty cells | records | primaries |")
    print("|---|---|---|---|---|")
    print(_describe(table, records))
    print("\n| method | seconds | secondaries | value | audit |")
    print("|---|---|---|---|---|")
    methods = [
        ("gauss", lambda t: GaussSuppression(repair_limit=10**6).apply(t)),
        (
            "gauss (singletons off)",
            lambda t: GaussSuppression(singletons=False, repair_limit=10**6).apply(t),
        ),
        ("modular", lambda t: suppress_modular(t, repair_limit=10**6)),
        ("hypercube", lambda t: suppress_hypercube(t, repair_limit=10**6)),
    ]
    for name, fn in methods:
        start = time.perf_counter()
        res = fn(table)
        seconds = time.perf_counter() - start
        ok = audit(res.table, intervals="check").ok
        print(
            f"| {name} | {seconds:.1f} | {res.n_secondary:,} | {res.secondary_value:,.0f} | "
            f"{'passes' if ok else 'FAILS'} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=650_000)
    parser.add_argument("--geo", default="4x5x5", help="regions x districts x municipalities")
    parser.add_argument("--sample", type=int, default=100, help="primaries in the LP audit")
    parser.add_argument("--compare", action="store_true", help="mid-size comparison")
    parser.add_argument("--quick", action="store_true", help="only the mid-size comparison")
    parser.add_argument(
        "--time-limit", type=float, default=None, help="elimination_time_limit (seconds)"
    )
    parser.add_argument("--no-singletons", action="store_true", help="singleton rules off")
    parser.add_argument("--rank", action="store_true", help="also time the rank test")
    parser.add_argument("--cli", action="store_true", help="time `sdckit table` end to end")
    args = parser.parse_args()
    if args.cli:
        run_cli(args)
        return
    warm = build(200, (2, 2, 2), (2, 2))
    GaussSuppression().apply(warm)  # numba compilation / cache load
    if not args.quick:
        run_large(args)
    if args.compare or args.quick:
        run_compare(args)


if __name__ == "__main__":
    main()
