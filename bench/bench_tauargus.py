"""Benchmark: sdckit against tau-ARGUS (pytauargus) on identical cell suppression problems.

Run as ``.venv/bin/python bench/bench_tauargus.py [--parts small,survey,...] [--quick]``.
Prints markdown tables (and writes them to ``--out`` if given).

pytauargus (the tau-ARGUS engine with HiGHS, pip-installable) is not a dependency of sdckit:
it runs in its own environment, created once with ``--setup`` (``python -m venv`` and ``pip
install pytauargus`` into ``bench/.venv-tauargus``, which is git-ignored) or given with
``--tau-python``.  Each tau-ARGUS run is a child process of that interpreter (with a time
limit); the time reported is the ``<SUPPRESS>`` step alone, as sdckit's is the method call.

Identical problems: the tables are built by sdckit from seeded synthetic microdata
(``Table.from_microdata``), the primaries and their protection levels come from sdckit's rules
(minimum frequency 3 with a 10 % safety range, p % rule with p = 10), and the table is written
in tau-ARGUS's tabular format (``.tab`` with a status and the lower and upper protection level
of every cell, ``.rda``, one ``.hrc`` per hierarchical dimension), so that both tools protect
the same cells by the same levels.  tau-ARGUS gives every cell the a priori bounds [smallest
cell value, largest cell value] (its JJ file); the sdckit table gets the same bounds.  Costs
are the cell values in both (tau-ARGUS scales them to integers up to 20,000).  Singleton
options are off in both.

Every pattern, both tools', is audited by sdckit's LP audit (``intervals="check"``: every
primary's requirement decided exactly); "under" is the number of under-protected primaries.

The part ``holdings`` (issue 29, not in the default ``--parts``) is different: a generated
business register with holdings, written as tau-ARGUS microdata with a ``<HOLDING>`` variable,
and one batch with record- and holding-level rules that pytauargus runs and sdckit loads and
runs (``load_arb_jobs``); it compares the primaries and the patterns and audits both, outsider
and insider (see :func:`run_holdings`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import SdcWarning
from sdckit.tables import (
    Hierarchy,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    suppress_gauss,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)

HERE = Path(__file__).resolve().parent
TAU_VENV = HERE / ".venv-tauargus"
TOTAL = "Total"

# ------------------------------------------------------------------------------------ tables


@dataclass
class Dim:
    """A dimension: fan-outs per level (one level: flat), fixed-width codes."""

    name: str
    fanouts: tuple[int, ...]

    def build(self) -> tuple[Hierarchy, list[str]]:
        widths = [len(str(f)) for f in self.fanouts]
        tree: dict[str, list[str]] = {}
        leaves: list[str] = []

        def code(path: list[int]) -> str:
            parts = [f"{path[i]:0{w}d}" if i < len(path) else "0" * w for i, w in enumerate(widths)]
            return "".join(parts)

        def grow(parent: str, path: list[int]) -> None:
            level = len(path)
            kids = [code([*path, c + 1]) for c in range(self.fanouts[level])]
            tree[parent] = kids
            for c, kid in enumerate(kids):
                if level + 1 < len(self.fanouts):
                    grow(kid, [*path, c + 1])
                else:
                    leaves.append(kid)

        grow(TOTAL, [])
        return Hierarchy.from_dict(tree), leaves

    @property
    def hierarchical(self) -> bool:
        return len(self.fanouts) > 1


@dataclass
class Spec:
    name: str
    dims: tuple[Dim, ...]
    records: int
    seed: int
    skew: float = 4.0  # gamma shape of the leaves' popularity (smaller: more uneven)
    repeat: int = 1


def make_microdata(spec: Spec) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    """Seeded synthetic business microdata and the dimensions' hierarchies."""
    rng = np.random.default_rng(spec.seed)
    hier: dict[str, Hierarchy] = {}
    data: dict[str, object] = {}
    for dim in spec.dims:
        h, leaves = dim.build()
        hier[dim.name] = h
        weights = rng.gamma(spec.skew, 1.0, len(leaves))
        pick = rng.choice(len(leaves), spec.records, p=weights / weights.sum())
        data[dim.name] = np.asarray(leaves)[pick]
    data["turnover"] = np.maximum(np.round(rng.lognormal(4.0, 1.5, spec.records)), 1.0)
    return pl.DataFrame(data), hier


def make_table(spec: Spec) -> Table:
    """The microdata aggregated by sdckit, with sdckit's primaries."""
    frame, hier = make_microdata(spec)
    t = Table.from_microdata(frame, hier, "turnover", n_top=2)
    return apply_rules(t, [MinFrequency(threshold=3, safety_range=10), PPercent(p=10)])


def hierarchy_toml(name: str, h: Any) -> list[str]:
    """The lines of a job file's ``[table.hierarchies.<name>]`` table for hierarchy ``h``."""
    lines = [f"[table.hierarchies.{name}]"]
    for i in h.internal.tolist():
        kids = [h.codes[c] for c in h.children[i]]
        lines.append(f"{json.dumps(h.codes[i])} = {json.dumps(kids)}")
    return lines


def write_job(spec: Spec, method: str, work: Path) -> Path:
    """The problem's microdata (``micro.parquet``) and a table job for them in ``work``.

    The job has the same rules and the method with ``singletons = false``; the a priori bounds
    are sdckit's defaults (non-negative cells), not tau-ARGUS's; it writes the published table
    (``out/published.csv``) and every cell with its status (``out/status.csv``).
    """
    frame, hier = make_microdata(spec)
    frame.write_parquet(work / "micro.parquet")
    lines = [
        "[input]",
        'file = "micro.parquet"',
        "",
        "[table]",
        f"dimensions = {json.dumps([d.name for d in spec.dims])}",
        'value = "turnover"',
        "n_top = 2",
    ]
    for name, h in hier.items():
        lines += ["", *hierarchy_toml(name, h)]
    lines += [
        "",
        "[[rules]]",
        'rule = "min_frequency"',
        "threshold = 3",
        "safety_range = 10",
        "",
        "[[rules]]",
        'rule = "p_percent"',
        "p = 10",
        "",
        "[suppression]",
        f'method = "{method}"',
        "singletons = false",
        "",
        "[output]",
        'table = "out/published.csv"',
        'table_full = "out/status.csv"',
    ]
    job = work / "job.toml"
    job.write_text("\n".join(lines) + "\n")
    return job


def run_cli(spec: Spec, method: str) -> str:
    """``sdckit table JOB.toml`` on the problem's microdata (Parquet), timed end to end.

    See :func:`write_job` for the job.  Returns a markdown line.
    """
    with tempfile.TemporaryDirectory(prefix="bench_cli_table_") as tmp:
        work = Path(tmp)
        write_job(spec, method, work)
        sdckit = Path(sys.executable).with_name("sdckit")
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-v", str(sdckit), "table", "job.toml"],
            cwd=work,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        peak = [ln for ln in proc.stderr.splitlines() if "Maximum resident" in ln]
        rss = peak[0].split(":")[1].strip() if peak else "0"
        status = pl.read_csv(work / "out" / "status.csv") if proc.returncode == 0 else None
        n_sec = "-" if status is None else status.filter(pl.col("status") == "secondary").height
    tail = proc.stdout.strip().splitlines()[-3:] if proc.returncode == 0 else [proc.stderr[:1500]]
    print("\n".join(tail), flush=True)
    return (
        f"| `sdckit table` ({method}), end to end | {wall:.1f} s | peak RSS {int(rss) // 1024} MB"
        f" | exit {proc.returncode} | secondaries {n_sec} |"
    )


def with_tau_bounds(table: Table) -> Table:
    """The a priori bounds tau-ARGUS gives every cell: [smallest value, largest value].

    A protection level that asks for more room than the bounds leave is cut to that room (in
    both tools' problem: no pattern could meet it).
    """
    lo, hi = float(table.values.min()), float(table.values.max())
    return table.with_status(
        status=table.status,
        upper=np.minimum(table.upper, hi - table.values),
        lower=np.minimum(table.lower, table.values - lo),
        sliding=table.sliding,
        lower_bounds=np.minimum(np.full(table.n_cells, lo), table.values),
        upper_bounds=np.maximum(np.full(table.n_cells, hi), table.values),
    )


# ------------------------------------------------------------------------------------ tau files


def _codes(table: Table) -> list[np.ndarray]:
    return [np.asarray(h.codes, dtype=object) for h in table.hierarchies]


def write_tau_files(table: Table, work: Path) -> None:
    """``t.tab`` (every non-empty cell), ``t.rda``, one ``.hrc`` per hierarchical dimension."""
    work.mkdir(parents=True, exist_ok=True)
    meta = ['<SEPARATOR> ";"', '<SAFE> "S"', '<UNSAFE> "U"', '<PROTECT> "P"']
    for d, (name, h) in enumerate(zip(table.dimensions, table.hierarchies, strict=True)):
        meta += [f'{name} "" ""', "  <RECODEABLE>", f'  <TOTCODE> "{TOTAL}"']
        if int(h.depth.max()) > 1:
            lines = [("@" * (int(h.depth[i]) - 1)) + h.codes[i] for i in range(1, h.size)]
            (work / f"d{d}.hrc").write_text("\n".join(lines) + "\n")
            meta += ["  <HIERARCHICAL>", f'  <HIERCODELIST> "d{d}.hrc"', '  <HIERLEADSTRING> "@"']
    meta += [
        'value "" ""',
        "  <NUMERIC>",
        "  <DECIMALS> 0",
        'freq "" ""',
        "  <FREQUENCY>",
        'status "" ""',
        "  <STATUS>",
        'lpl "" ""',
        "  <NUMERIC> <LOWERPL>",
        'upl "" ""',
        "  <NUMERIC> <UPPERPL>",
    ]
    (work / "t.rda").write_text("\n".join(meta) + "\n")
    keep = table.n_contributors > 0
    idx = table.node_index[keep]
    cols = [
        pl.Series(f"c{d}", _codes(table)[d][idx[:, d]].astype(str)) for d in range(idx.shape[1])
    ]
    status = np.where(table.primary[keep], "U", "S")
    frame = pl.DataFrame(
        [
            *cols,
            pl.Series("value", np.round(table.values[keep]).astype(np.int64)),
            pl.Series("freq", table.n_contributors[keep]),
            pl.Series("status", status),
            pl.Series("lpl", np.round(table.lower[keep], 6)),
            pl.Series("upl", np.round(table.upper[keep], 6)),
        ]
    )
    frame.write_csv(work / "t.tab", separator=";", include_header=False, quote_style="never")


DRIVER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytauargus.batch import Suppress, parse_batch
    from pytauargus.engine import Engine
    work, method, max_time = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    dims = sys.argv[4].split(",")
    spec = "".join(f'"{d}"' for d in dims)
    (work / "t.arb").write_text(
        f'<OPENTABLEDATA> "t.tab"\\n<OPENMETADATA> "t.rda"\\n'
        f'<SPECIFYTABLE> {spec}|"value"||\\n<SAFETYRULE>\\n<READTABLE> 0\\n'
    )
    eng = Engine()
    eng._work_dir = work
    for cmd in parse_batch(work / "t.arb"):
        eng._execute(cmd)
    lo, hi = eng._table_cell_bounds(0)
    cmd = Suppress(kind=method, tab_no=1)
    if method == "MOD":
        cmd.mod_max_time = max_time
    else:
        cmd.opt_max_time = max_time
    start, cpu = time.perf_counter(), time.process_time()
    eng.suppress(cmd)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    eng.write_intermediate_table(0, str(work / f"out_{method}.tab"), simple=True)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "lo": lo, "hi": hi}))
    """
)


def run_tau(
    tau_python: str, table: Table, work: Path, method: str, timeout: float, max_time: int
) -> dict[str, object]:
    """Run tau-ARGUS ``method`` (MOD or OPT) on the files in ``work``; read its pattern back."""
    script = work / "driver.py"
    script.write_text(DRIVER)
    python = os.path.abspath(tau_python)  # (not resolved: a venv's python is a link)
    cmd = [python, str(script), str(work), method, str(max_time), ",".join(table.dimensions)]
    start = time.perf_counter()
    try:
        # in the work directory: the engine writes its log and scratch files where it runs
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=work
        )
    except subprocess.TimeoutExpired:
        return {"status": f"not finished in {timeout:.0f} s", "wall": time.perf_counter() - start}
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        return {"status": f"failed: {tail[0][:120]}", "wall": wall}
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    supp = read_tau_pattern(table, work / f"out_{method}.tab")
    return {"status": "ok", "wall": wall, "suppressed": supp, **info}


def read_tau_pattern(table: Table, path: Path) -> np.ndarray:
    """Cells that tau-ARGUS suppressed (status U or M) as a boolean mask over the table."""
    index = [h.index for h in table.hierarchies]
    out = np.zeros(table.n_cells, dtype=bool)
    shape = table.shape
    for line in path.read_text().splitlines():
        if not line:
            continue
        f = [x.strip().strip('"') for x in line.split(";")]
        d = len(shape)
        status = f[-3]
        if status not in ("U", "M"):
            continue
        nodes = [index[k][f[k] if f[k] else TOTAL] for k in range(d)]
        out[int(np.ravel_multi_index(nodes, shape))] = True
    return out


# ------------------------------------------------------------------------------------ figures


def _audit(table: Table, suppressed: np.ndarray) -> tuple[int, float]:
    start = time.perf_counter()
    t = table.suppress(suppressed & ~table.suppressed)
    res = audit(t, intervals="check")
    return len(res.under_protected), time.perf_counter() - start


def _fmt(times: list[float]) -> str:
    times = sorted(times)
    if len(times) == 1:
        return f"{times[0]:.2f}"
    return f"{times[0]:.2f} / {float(np.median(times)):.2f}"


def _row(
    problem: str,
    tool: str,
    wall: list[float],
    cpu: list[float],
    table: Table,
    supp: np.ndarray,
    **extra: object,
) -> dict:
    sec = supp & ~table.primary
    under, audit_s = _audit(table, supp)
    notes = ", ".join(f"{k}={v}" for k, v in extra.items() if v is not None)
    return {
        "problem": problem,
        "tool": tool,
        "wall": _fmt(wall),
        "cpu": _fmt(cpu),
        "best": min(cpu),
        "secondaries": int(sec.sum()),
        "value": float(table.values[sec].sum()),
        "under": under,
        "notes": notes + (", " if notes else "") + f"audit {audit_s:.1f} s",
    }


def _print(rows: list[dict], out: list[str]) -> None:
    lines = [
        "| tool / method | wall s (min / median) | CPU s (min / median) | secondaries | "
        "suppressed value | under-protected | notes |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tool']} | {r['wall']} | {r['cpu']} | {r['secondaries']:,} | "
            f"{r['value']:,.0f} | {r['under']} | {r['notes']} |"
        )
    text = "\n".join(lines)
    print(text, flush=True)
    out.append(text)


def _sdckit(method, table: Table, repeat: int, **kwargs) -> tuple[list, list, object]:
    wall, cpu, res = [], [], None
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SdcWarning)
            start, c0 = time.perf_counter(), time.process_time()
            res = method(table, singletons=False, **kwargs)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - c0)
    return wall, cpu, res


def run_problem(
    spec: Spec, tau_python: str | None, args: argparse.Namespace, out: list[str]
) -> list[dict]:
    start = time.perf_counter()
    table = with_tau_bounds(make_table(spec))
    build = time.perf_counter() - start
    n_prim = int(table.primary.sum())
    title = (
        f"\n### {spec.name}: {table.n_cells:,} cells "
        f"({' x '.join(str(s) for s in table.shape)}), {n_prim:,} primaries, "
        f"{spec.records:,} records (built in {build:.1f} s)\n"
    )
    print(title, flush=True)
    out.append(title)
    rows: list[dict] = []
    tau: dict[str, dict] = {}
    big = table.n_cells > 20_000
    tools = set(args.tools.split(","))
    if tau_python and "tau" in tools:
        with tempfile.TemporaryDirectory(prefix="bench_tau_") as tmp:
            work = Path(tmp)
            write_tau_files(table, work)
            methods = ["MOD"] if big and not args.tau_opt_big else ["MOD", "OPT"]
            methods = [m for m in methods if m in args.tau_methods.split(",")]
            for method in methods:
                wall, cpu, result = [], [], None
                for _ in range(spec.repeat):
                    result = run_tau(
                        tau_python, table, work, method, args.timeout, args.tau_max_time
                    )
                    if result["status"] != "ok":
                        break
                    wall.append(float(result["seconds"]))
                    cpu.append(float(result["cpu"]))
                tau[method] = result
                if result["status"] != "ok":
                    unfinished = "not finished" in str(result["status"])
                    shown = f"> {args.timeout:.0f}" if unfinished else "-"
                    rows.append(
                        {
                            "problem": spec.name,
                            "tool": f"tau-ARGUS {method}",
                            "wall": shown,
                            "cpu": "-",
                            "best": np.inf,
                            "secondaries": 0,
                            "value": float("nan"),
                            "under": "-",
                            "notes": result["status"],
                        }
                    )
                    continue
                bounds = (float(result["lo"]), float(result["hi"]))
                same = bounds == (float(table.lower_bounds.min()), float(table.upper_bounds.max()))
                rows.append(
                    _row(
                        spec.name,
                        f"tau-ARGUS {method}",
                        wall,
                        cpu,
                        table,
                        result["suppressed"],
                        bounds=None if same else f"{bounds} (differ!)",
                    )
                )
    # sdckit: the large-table method, the optimal method, the hypercube
    reps = spec.repeat
    if "modular" in tools:
        wall, cpu, res = _sdckit(suppress_modular, table, reps)
        rows.append(
            _row(
                spec.name,
                "sdckit modular",
                wall,
                cpu,
                table,
                res.table.suppressed,
                repaired=res.details.get("repaired"),
            )
        )
    if "optimal" in tools and (not big or args.opt_big):
        limit = args.opt_limit
        tau_opt = tau.get("OPT", {})
        if tau_opt.get("status") == "ok" and args.match_time:
            limit = max(float(tau_opt["seconds"]), 1.0)
        wall, cpu, res = _sdckit(suppress_optimal, table, reps, time_limit=limit)
        rows.append(
            _row(
                spec.name,
                "sdckit optimal",
                wall,
                cpu,
                table,
                res.table.suppressed,
                proven=res.optimal,
                gap=f"{100 * res.details['gap']:.2f} %",
                limit=f"{limit:.0f} s",
            )
        )
    if "gauss" in tools:
        # the elimination, then the LP audit and the completion and repair of the primaries
        # short of their levels (repair_limit raised to every table here)
        wall, cpu, res = _sdckit(suppress_gauss, table, reps, repair_limit=10_000_000)
        timings = res.details["timings"]
        rows.append(
            _row(
                spec.name,
                "sdckit Gauss",
                wall,
                cpu,
                table,
                res.table.suppressed,
                elimination=f"{timings['elimination']:.1f} s",
                eliminated=int(res.details["secondary_reveal"]),
                repaired=res.details.get("repaired"),
            )
        )
    if "hypercube" in tools and table.n_cells <= 20_000:
        wall, cpu, res = _sdckit(suppress_hypercube, table, reps)
        rows.append(_row(spec.name, "sdckit hypercube", wall, cpu, table, res.table.suppressed))
    _print(rows, out)
    if args.cli:
        line = run_cli(spec, args.cli)
        print(line, flush=True)
        out.append(line)
    return rows


SPECS = {
    "small": [
        Spec(f"52 cells #{s}", (Dim("region", (3,)), Dim("sector", (12,))), 500, s, repeat=3)
        for s in range(1, 7)
    ],
    "survey": [
        Spec(
            "240 cells 3-D",
            (Dim("region", (3,)), Dim("size", (5,)), Dim("sector", (9,))),
            1_500,
            11,
            repeat=3,
        )
    ],
    "business": [
        Spec(
            "9,301 cells 2-D hierarchical",
            (Dim("region", (10, 6)), Dim("sector", (10, 12))),
            55_000,
            21,
        )
    ],
    "large2d": [
        Spec(
            "56,291 cells 2-D hierarchical",
            (Dim("region", (12, 14)), Dim("sector", (10, 30))),
            400_000,
            31,
        )
    ],
    "large3d": [
        Spec(
            "64,255 cells 3-D hierarchical",
            (Dim("size", (4,)), Dim("region", (10, 6)), Dim("sector", (12, 14))),
            300_000,
            41,
        )
    ],
    "huge": [
        Spec(
            "1,000,000 cells 2-D hierarchical",
            (Dim("region", (9, 110)), Dim("sector", (9, 110))),
            2_000_000,
            51,
            skew=0.7,
        )
    ],
}


# ------------------------------------------------------------------------------------ holdings
#
# Issue 29: the same business table with holdings protected by both tools from one batch.  The
# register (generate_business_register) is written as tau-ARGUS microdata, one fixed-format
# record per local unit with a <HOLDING> variable; the batch's <SAFETYRULE> has individual
# (record-level) and holding-level rules in tau-ARGUS's slots: the 1st and 2nd P rule and the
# 1st FREQ rule count records, the 3rd and 4th P rule and the 2nd FREQ rule count holdings.
# pytauargus runs the batch; sdckit loads the same batch (load_arb_jobs) and runs it.

HOLD_RULE = "P(15,1)|P(0,1)|P(15,1)|FREQ(3,10)|FREQ(3,10)"
HOLD_SIZES = {"0-9": "1", "10-49": "2", "50-249": "3", "250+": "4"}

HOLD_DRIVER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytauargus.batch import Suppress, parse_batch
    from pytauargus.engine import Engine
    work, arb = Path(sys.argv[1]), Path(sys.argv[2])
    eng = Engine()
    eng._work_dir = work
    info = {}
    for cmd in parse_batch(arb):
        if isinstance(cmd, Suppress):
            # the primaries (status U) as the rules left them, then the pattern
            eng.write_intermediate_table(0, str(work / "tau_primary.tab"), simple=True)
            start, cpu = time.perf_counter(), time.process_time()
            eng._execute(cmd)
            info = {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}
            eng.write_intermediate_table(0, str(work / "tau_pattern.tab"), simple=True)
        else:
            eng._execute(cmd)
    print(json.dumps(info))
    """
)


def holdings_files(frame: pl.DataFrame, work: Path, suppress: str) -> Path:
    """The register as tau-ARGUS microdata with a ``<HOLDING>`` variable, and its batch.

    One fixed-format record per local unit: activity, region, size class (1-4), holding,
    turnover in whole thousands.  An independent enterprise is a holding of its own (``E`` and
    its number; a group is ``H`` and its number); records sorted by holding, as tau-ARGUS
    expects the records of a holding together.  Returns the batch file.
    """
    from sdckit.datasets import BUSINESS_HIERARCHIES

    holding = frame.select(
        pl.when(pl.col("holding_id").is_null())
        .then(pl.lit("E") + pl.col("enterprise_id").cast(pl.Utf8))
        .otherwise(pl.lit("H") + pl.col("holding_id").cast(pl.Int64).cast(pl.Utf8))
    ).to_series()
    order = np.argsort(holding.to_numpy(), kind="stable")
    columns = [
        frame["activity"].to_numpy()[order],
        frame["region"].to_numpy()[order],
        frame["size_class"].to_numpy()[order],
        holding.to_numpy()[order],
        np.round(frame["turnover"].to_numpy()).astype(np.int64)[order],
    ]
    lines = [
        f"{a:<3}{r:<2}{HOLD_SIZES[s]}{h:<8}{v:>12}" for a, r, s, h, v in zip(*columns, strict=True)
    ]
    (work / "b.asc").write_text("\n".join(lines) + "\n")
    meta: list[str] = []
    layout = (("Activity", 1, 3, "activity"), ("Region", 4, 2, "region"), ("Size", 6, 1, None))
    for name, start, width, tree_name in layout:
        meta += [f"{name} {start} {width}", "  <RECODEABLE>", '  <TOTCODE> "Total"']
        if tree_name:
            tree = BUSINESS_HIERARCHIES[tree_name]
            hrc = [c for top in tree["Total"] for c in (top, *("@" + k for k in tree[top]))]
            (work / f"{tree_name}.hrc").write_text("\n".join(hrc) + "\n")
            meta += [
                "  <HIERARCHICAL>",
                f'  <HIERCODELIST> "{tree_name}.hrc"',
                '  <HIERLEADSTRING> "@"',
            ]
    meta += ["Holding 7 8", "  <HOLDING>", "Turnover 15 12", "  <NUMERIC>", "  <DECIMALS> 0"]
    (work / "b.rda").write_text("\n".join(meta) + "\n")
    arb = work / "b.arb"
    arb.write_text(
        '<OPENMICRODATA> "b.asc"\n<OPENMETADATA> "b.rda"\n'
        '<SPECIFYTABLE> "Activity""Region""Size"|"Turnover"|"Turnover"|"Turnover"\n'
        f"<SAFETYRULE> {HOLD_RULE}\n<READMICRODATA>\n<SUPPRESS> {suppress}\n"
    )
    return arb


def run_tau_batch(tau_python: str, work: Path, arb: Path, timeout: float) -> dict[str, Any]:
    """pytauargus on the batch (a child process): its primaries' and its pattern's files."""
    (work / "hold_driver.py").write_text(HOLD_DRIVER)
    cmd = [os.path.abspath(tau_python), str(work / "hold_driver.py"), str(work), str(arb)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=work
        )
    except subprocess.TimeoutExpired:
        return {"status": f"not finished in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"status": "failed", "message": (proc.stderr or proc.stdout).strip()[-2000:]}
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"status": "ok", "wall": time.perf_counter() - start, **info}


def _same_cells(source: Table, target: Table) -> np.ndarray:
    """For each cell of ``target``, the number of the cell with the same codes in ``source``."""
    codes = _codes(source)
    where = {
        tuple(codes[d][i] for d, i in enumerate(row)): n
        for n, row in enumerate(source.node_index.tolist())
    }
    tcodes = _codes(target)
    return np.array(
        [
            where[tuple(tcodes[d][i] for d, i in enumerate(row))]
            for row in target.node_index.tolist()
        ]
    )


def _units_table(frame: pl.DataFrame, rules_table: Table) -> Table:
    """The batch's table rebuilt with its units: enterprises (respondents) in holdings, and the
    primaries, protection levels and bounds of sdckit's rules; the insider audit's table."""
    data = frame.select(
        pl.col("activity").alias("Activity"),
        pl.col("region").alias("Region"),
        pl.col("size_class").replace_strict(HOLD_SIZES).alias("Size"),
        pl.col("turnover").round(0).alias("Turnover"),
        "enterprise_id",
        "holding_id",
    )
    hier = dict(zip(rules_table.dimensions, rules_table.hierarchies, strict=True))
    units = Table.from_microdata(
        data, hier, "Turnover", respondent="enterprise_id", holding="holding_id"
    )
    src = _same_cells(rules_table, units)
    assert np.allclose(units.values, rules_table.values[src]), "the two tables differ"
    return units.with_status(
        status=rules_table.status[src],
        upper=rules_table.upper[src],
        lower=rules_table.lower[src],
        sliding=rules_table.sliding[src],
        lower_bounds=rules_table.lower_bounds[src],
        upper_bounds=rules_table.upper_bounds[src],
    )


def _audit_both(units: Table, suppressed: np.ndarray) -> dict[str, Any]:
    """The outsider audit (under-protected primaries, computable secondaries) and the insider
    audit (primaries some unit brings below their levels or computes exactly) of a pattern."""
    start = time.perf_counter()
    t = units.suppress(suppressed & ~units.suppressed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        outsider = audit(t, intervals="check", insider=False)
        ins = audit(t, intervals="check", insider=True).insider_audit
    return {
        "under": len(outsider.under_protected),
        "exact": int((outsider.exact & t.primary[outsider.cells]).sum()),
        "computable": len(outsider.computable_secondaries),
        "insider": len(ins.under_protected),
        "insider_exact": len(ins.disclosed),
        "level": ins.level,
        "units": int(ins.n_units),
        "pairs": int(ins.n_pairs),
        "seconds": time.perf_counter() - start,
    }


def run_holdings(tau_python: str | None, args: argparse.Namespace, out: list[str]) -> None:
    """The ``holdings`` part: one batch per ``<SUPPRESS>``, both tools, flags and patterns
    compared, both patterns audited (outsider and insider) on the table of enterprises in
    holdings."""
    from sdckit.datasets import generate_business_register
    from sdckit.jobs.tauargus import load_arb_jobs, run_arb_job

    frame = generate_business_register(args.enterprises, seed=29)
    title = (
        f"\n### holdings: business register, {args.enterprises:,} enterprises "
        f"({frame.height:,} local units, {frame['holding_id'].n_unique() - 1} holdings), "
        f"activity x region x size class, `<SAFETYRULE> {HOLD_RULE}`\n"
    )
    print(title, flush=True)
    out.append(title)
    header = [
        "| batch | tool | primaries | secondaries | suppressed value | time s (wall / CPU) | "
        "outsider: under-protected (exact) | outsider: computable secondaries | "
        "insider: primaries below level (exact) | insider units / pairs decided | audit s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows: list[str] = []
    notes: list[str] = []
    units = to_units = None
    for suppress in args.holding_suppress or ["MOD(1,5,1,1,1)"]:
        with tempfile.TemporaryDirectory(prefix="bench_tau_hold_") as tmp:
            work = Path(tmp)
            arb = holdings_files(frame, work, suppress)
            (job,) = load_arb_jobs(arb)
            table = job.table
            start, c0 = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SdcWarning)
                result = run_arb_job(job, write=False)
            sdc_wall, sdc_cpu = time.perf_counter() - start, time.process_time() - c0
            rules_table = apply_rules(table, list(job.rules))
            if units is None:
                units = _units_table(frame, rules_table)
                to_units = _same_cells(table, units)
                notes.append(
                    f"{table.n_cells:,} cells ({' x '.join(str(s) for s in table.shape)}), "
                    f"{int((table.n_contributors > 0).sum()):,} non-empty"
                )
            patterns = [("sdckit", rules_table.primary, result.table.suppressed, sdc_wall, sdc_cpu)]
            tau = run_tau_batch(tau_python, work, arb, args.timeout) if tau_python else None
            if tau is not None and tau["status"] == "ok":
                tau_primary = read_tau_pattern(table, work / "tau_primary.tab")
                tau_pattern = read_tau_pattern(table, work / "tau_pattern.tab")
                patterns.append(("tau-ARGUS", tau_primary, tau_pattern, tau["seconds"], tau["cpu"]))
        for name, prim, patt, wall, cpu in patterns:
            a = _audit_both(units, patt[to_units])
            sec = patt & ~prim
            rows.append(
                f"| `{suppress}` | {name} | {int(prim.sum())} | {int(sec.sum())} | "
                f"{float(table.values[sec].sum()):,.0f} | {wall:.2f} / {cpu:.2f} | "
                f"{a['under']} ({a['exact']}) | {a['computable']} | "
                f"{a['insider']} ({a['insider_exact']}) | {a['units']} {a['level']}s / "
                f"{a['pairs']:,} | {a['seconds']:.1f} |"
            )
        if tau is None:
            notes.append(f"`{suppress}`: no pytauargus environment, sdckit only")
        elif tau["status"] != "ok":
            notes.append(
                f"`{suppress}`: tau-ARGUS {tau['status']}\n\n```\n{tau.get('message', '')}\n```"
            )
        else:
            sdc_primary, sdc_pattern = patterns[0][1], patterns[0][2]
            only_sdc = np.flatnonzero(sdc_primary & ~tau_primary)
            only_tau = np.flatnonzero(tau_primary & ~sdc_primary)
            notes.append(
                f"`{suppress}`: primaries flagged by sdckit only: {len(only_sdc)}, by "
                f"tau-ARGUS only: {len(only_tau)}; cells suppressed by both: "
                f"{int((sdc_pattern & tau_pattern).sum())}, by sdckit only: "
                f"{int((sdc_pattern & ~tau_pattern).sum())}, by tau-ARGUS only: "
                f"{int((tau_pattern & ~sdc_pattern).sum())}"
            )
            for label, cells in (("sdckit only", only_sdc), ("tau-ARGUS only", only_tau)):
                if len(cells):
                    shown = table.to_frame()[cells[:10].tolist()]
                    notes.append(f"primaries of {label} (first 10):\n\n```\n{shown}\n```")
    text = "\n".join(header + rows) + "\n\n" + "\n\n".join(notes)
    print(text, flush=True)
    out.append(text)


def setup_tau() -> str:
    """Create bench/.venv-tauargus with pytauargus (not a dependency of sdckit)."""
    python = TAU_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TAU_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "pytauargus"], check=True)
    return str(python)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parts", default="small,survey,business,large2d,large3d,huge")
    parser.add_argument("--setup", action="store_true", help="create bench/.venv-tauargus")
    parser.add_argument("--tau-python", default=None, help="python of an env with pytauargus")
    parser.add_argument("--no-tau", action="store_true", help="sdckit only")
    parser.add_argument(
        "--tools",
        default="tau,modular,optimal,hypercube",
        help="comma list of the tools to run (also: gauss)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per tau-ARGUS run")
    parser.add_argument("--tau-max-time", type=int, default=60, help="tau-ARGUS MaxTime")
    parser.add_argument(
        "--tau-methods", default="MOD,OPT", help="tau-ARGUS methods to run (comma list)"
    )
    parser.add_argument("--tau-opt-big", action="store_true", help="tau-ARGUS OPT on big tables")
    parser.add_argument("--opt-big", action="store_true", help="sdckit optimal on big tables")
    parser.add_argument("--opt-limit", type=float, default=300.0, help="sdckit optimal limit")
    parser.add_argument(
        "--match-time",
        action="store_true",
        help="give sdckit optimal tau-ARGUS OPT's time as its time limit",
    )
    parser.add_argument(
        "--cli", default=None, help="also time `sdckit table` on the microdata with this method"
    )
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument(
        "--enterprises", type=int, default=3000, help="register size of the holdings part"
    )
    parser.add_argument(
        "--holding-suppress",
        action="append",
        help="a <SUPPRESS> of the holdings part's batch, repeatable (default MOD(1,5,1,1,1);"
        " OPT's time is in minutes)",
    )
    args = parser.parse_args()
    tau_python = None
    if not args.no_tau:
        tau_python = args.tau_python
        if tau_python is None and (TAU_VENV / "bin" / "python").exists():
            tau_python = str(TAU_VENV / "bin" / "python")
        if tau_python is None and args.setup:
            tau_python = setup_tau()
        if tau_python is None and Path("/tmp/tauargus-venv/bin/python").exists():
            tau_python = "/tmp/tauargus-venv/bin/python"
        if tau_python is None:
            sys.exit("No pytauargus environment: run with --setup, --tau-python or --no-tau.")
    out: list[str] = [
        f"bench/bench_tauargus.py --parts {args.parts}, {time.strftime('%Y-%m-%d')}, "
        f"load average {os.getloadavg()[0]:.1f}"
    ]
    for part in args.parts.split(","):
        if part == "holdings":
            run_holdings(tau_python, args, out)
            continue
        for spec in SPECS[part]:
            run_problem(spec, tau_python, args, out)
    if args.out:
        Path(args.out).write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
