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
        for spec in SPECS[part]:
            run_problem(spec, tau_python, args, out)
    if args.out:
        Path(args.out).write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
