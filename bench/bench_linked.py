"""Benchmark: linked tables protected by the Gauss method, jointly and table by table.

Run as ``.venv/bin/python bench/bench_linked.py [--cli] [--records N]``.

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
atoms), the joint audit over the atoms (``audit(model="atoms", intervals="check")``: the
primaries short of their levels for that intruder, and its time), and whether the joint
elimination gives R's golden sum.

``--cli`` times what a user runs on a larger problem: ``sdckit table a.toml b.toml c.toml``
on a Parquet file of ``--records`` seeded business records (``bench_gauss``'s microdata with a
geography of 4 x 5 x 25: three linked magnitude tables geo x v4, geo x v2 x v3 and
v4 x v5 x v3, the minimum-frequency rule 3, the Gauss method), once with each
``[suppression] linked`` scheme, each as a subprocess (interpreter start and imports
included, wall and CPU time, peak RSS), beside the kernel in this process
(``LinkedTables.from_microdata(...).protect(...)``) and a plain polars floor: read the file,
aggregate the records into every cell of the three tables (count and sum), write three CSV
files.  The floor's counts and sums are checked against sdckit's files of every cell.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tables"))  # the d53 helpers of the golden tests
sys.path.insert(0, str(ROOT / "bench"))

import test_gauss_golden_linked as golden  # noqa: E402

import bench_gauss  # noqa: E402
from bench_table_job import ancestors, timed  # noqa: E402
from bench_tauargus import hierarchy_toml  # noqa: E402
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


FLOOR = """\
import json
import sys
import polars as pl
src, spec = sys.argv[1], json.load(open(sys.argv[2]))
df = pl.read_parquet(src)
for k, dims in enumerate(spec["tables"]):
    cells = df.group_by(dims).agg(n=pl.len(), s=pl.col("value").sum())
    for d in dims:
        up = pl.DataFrame(
            {d: list(spec["ancestors"][d]), "up": list(spec["ancestors"][d].values())}
        ).explode("up")
        cells = cells.join(up, on=d).drop(d).rename({"up": d})
    cells.group_by(dims).agg(n=pl.col("n").sum(), s=pl.col("s").sum()).write_csv(f"floor{k}.csv")
"""

#: The three linked tables of ``--cli``.
CLI_TABLES = (["geo", "v4"], ["geo", "v2", "v3"], ["v4", "v5", "v3"])


def _write_jobs(work: Path, hier: dict, scheme: str) -> list[Path]:
    paths = []
    for k, dims in enumerate(CLI_TABLES):
        lines = [
            "[input]",
            'file = "micro.parquet"',
            "[table]",
            f"dimensions = {json.dumps(dims)}",
            'value = "value"',
        ]
        for name in dims:
            if len(hier[name].internal) > 1:
                lines += hierarchy_toml(name, hier[name])
        lines += [
            "[[rules]]",
            'rule = "min_frequency"',
            "threshold = 3",
            "[suppression]",
            'method = "gauss"',
            f'linked = "{scheme}"',
            "[output]",
            f'table = "out/{scheme}_{k}_published.csv"',
            f'table_full = "out/{scheme}_{k}_status.csv"',
        ]
        path = work / f"{scheme}_{k}.toml"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def _check(work: Path, scheme: str) -> str:
    """The floor's count and sum of every non-empty cell equal those of sdckit's files."""
    cells = 0
    for k, dims in enumerate(CLI_TABLES):
        floor = pl.read_csv(work / f"floor{k}.csv", infer_schema_length=0)
        ours = pl.read_csv(work / "out" / f"{scheme}_{k}_status.csv", infer_schema_length=0)
        ours = ours.filter(pl.col("n_contributors").cast(pl.Int64) > 0)
        joined = ours.join(floor, on=dims, how="inner")
        if joined.height != floor.height or joined.height != ours.height:
            return f"table {k}: cells differ (sdckit {ours.height:,}, floor {floor.height:,})"
        n = joined["n"].cast(pl.Int64).to_numpy()
        if not np.array_equal(n, joined["n_contributors"].cast(pl.Int64).to_numpy()):
            return f"table {k}: counts differ"
        a, b = (joined[c].cast(pl.Float64).to_numpy() for c in ("s", "value"))
        if np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))) > 1e-9:
            return f"table {k}: sums differ"
        cells += joined.height
    return f"{cells:,} non-empty cells of the three tables: counts and sums equal"


def _secondaries(lk: LinkedTables, work: Path, scheme: str) -> int:
    """Distinct secondaries of the status files the command wrote."""
    secondary = np.zeros(lk.n_distinct, dtype=bool)
    for k in range(len(CLI_TABLES)):
        st = pl.read_csv(work / "out" / f"{scheme}_{k}_status.csv", infer_schema_length=0)
        secondary[lk.cell_map[k][(st["status"] == "secondary").to_numpy()]] = True
    return int(secondary.sum())


def run_cli(records: int) -> None:
    """``sdckit table`` on three linked tables, each scheme, beside the kernel and the floor."""
    from sdckit.tables import MinFrequency, apply_rules

    frame, hier = bench_gauss.microdata(records, (4, 5, 25))
    sdckit = str(Path(sys.executable).with_name("sdckit"))
    names = ", ".join(" x ".join(t) for t in CLI_TABLES)
    print(f"\n`sdckit table` on three linked tables ({names}), {records:,} records\n")
    print("| command | wall s | CPU s | peak RSS MB | secondaries (distinct) | check |")
    print("|---|---:|---:|---:|---:|---|")
    lk = LinkedTables.from_microdata(frame, CLI_TABLES, "value", hierarchies={"geo": hier["geo"]})
    lk = lk.with_tables([apply_rules(x, [MinFrequency(threshold=3)]) for x in lk.tables])
    schemes = {"iterative": {}, "joint_elimination": {"joint_elimination": True}}
    with tempfile.TemporaryDirectory(prefix="bench_linked_") as tmp:
        work = Path(tmp)
        frame.write_parquet(work / "micro.parquet")
        (work / "floor.py").write_text(FLOOR)
        spec = {"tables": CLI_TABLES, "ancestors": ancestors(hier)}
        (work / "spec.json").write_text(json.dumps(spec))
        floor = timed([sys.executable, "floor.py", "micro.parquet", "spec.json"], work)
        for scheme in schemes:
            jobs = _write_jobs(work, hier, scheme)
            t = timed([sdckit, "table", *[j.name for j in jobs]], work)
            print(
                f'| `sdckit table` (linked = "{scheme}") | {t["wall"]:.1f} | {t["cpu"]:.1f} | '
                f"{t['rss']:,.0f} | {_secondaries(lk, work, scheme):,} | {_check(work, scheme)} |",
                flush=True,
            )
        print(
            "| floor: polars read, the three tables' cells (count, sum), write | "
            f"{floor['wall']:.1f} | {floor['cpu']:.1f} | {floor['rss']:,.0f} | | |"
        )
    n_prim = int((lk.status == CellStatus.PRIMARY).sum())
    print(
        f"\n{len(lk.tables)} tables, {lk.n_distinct:,} distinct cells, {len(lk.common_cells):,} "
        f"common, {n_prim:,} primaries, {len(lk.atoms):,} atoms\n"
    )
    print("| kernel (in process): `LinkedTables.protect(GaussSuppression(), ...)` | seconds |"
          " secondaries (distinct) | joint audit |")  # fmt: skip
    print("|---|---:|---:|---|")
    for scheme, options in schemes.items():
        start = time.perf_counter()
        res = lk.protect(GaussSuppression(), **options)
        seconds = time.perf_counter() - start
        n_sec = int((res.linked.status == CellStatus.SECONDARY).sum())
        verdict = "passes" if res.protected else "FAILS"
        print(f"| {scheme} | {seconds:.1f} | {n_sec:,} | {verdict} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", action="store_true", help="also time sdckit table end to end")
    parser.add_argument("--records", type=int, default=650_000)
    args = parser.parse_args()
    run_d53()
    if args.cli:
        run_cli(args.records)


def _atom_audit(lk: LinkedTables) -> str:
    """The joint audit over the atoms in check mode: under-protected primaries, seconds."""
    start = time.perf_counter()
    checked = lk.audit(model="atoms", intervals="check")
    return f"{int((~checked.protected).sum()):,}, {time.perf_counter() - start:.1f} s"


def run_d53() -> None:
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
        "| computable primaries | atom audit (check): under-protected, seconds |"
    )
    print("|---|---:|---:|---|---|---:|---|")
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
        f"{'passes' if apart.audit().ok else 'FAILS'} | {computable(lk, alone)} | "
        f"{_atom_audit(apart)} |"
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
            f"{'passes' if res.protected else 'FAILS'} | {computable(lk, supp)} | "
            f"{_atom_audit(res.linked)} |"
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
