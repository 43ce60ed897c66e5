"""Benchmark: what a user runs -- the ``sdckit`` command end to end, against a plain polars floor.

Run: ``.venv/bin/python bench/bench_cli.py [--repeat 5]`` (about two minutes with the defaults).

Generates two seeded Parquet files like ``../shared/data/bench/synth_*.parquet`` (keys ``k1..k7``
with 2, 5, 10, 20, 50, 100, 300 Zipf-like levels, a lognormal weight ``w``), then times, each as
a subprocess exactly as a user would start it (interpreter start and imports included):

* ``sdckit risk FILE --keys k1,...,k7 --weight w --out OUT`` on 5,000,000 records, and the floor:
  a plain polars script that reads the Parquet file, counts and sums the weights per key
  combination (group-by), joins the counts back to the records and writes them to Parquet;
* ``sdckit risk FILE --keys ... --weight w --suda2 --out OUT`` on 1,000,000 records;
* ``sdckit --help`` and ``sdckit risk --help``.

The commands run in rounds (one run of each per round, the order alternating), so that the
command and its floor see the same machine load; the table gives the minimum and the median
wall time over the rounds, the median CPU time of the child (user + system, all its threads:
less sensitive to the other work on the machine than the wall time) and its peak resident
memory.  Two settings: the environment as it
is (on the project machines ``PYTHONDONTWRITEBYTECODE=1``: no ``.pyc`` files, every module is
compiled at import), and with a bytecode cache (``PYTHONPYCACHEPREFIX`` in the work directory,
filled by one warm-up run), as after a ``pip install``.  The outputs are checked: the command's
``fk`` equals the floor's count and ``Fk_hat`` its weight sum (to rounding of the summation
order).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

KEYS = [f"k{i}" for i in range(1, 8)]
LEVELS = (2, 5, 10, 20, 50, 100, 300)
ZIPF = (0.5, 1.0, 1.3, 1.6, 1.8, 2.0, 2.0)

FLOOR_NAME = "floor: polars read, group-by, join, write"
FLOOR = """\
import sys
import polars as pl
src, out, keys, weight = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
df = pl.read_parquet(src)
groups = df.group_by(keys).agg(fk=pl.len(), Fk_hat=pl.col(weight).sum())
joined = df.join(groups, on=keys, how="left", maintain_order="left")
joined.select("fk", "Fk_hat").write_parquet(out)
"""


def synthetic(n: int, seed: int) -> Any:
    """Seeded microdata (a polars frame): seven Zipf-like integer keys, a lognormal weight."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    columns: dict[str, np.ndarray] = {}
    for name, levels, s in zip(KEYS, LEVELS, ZIPF, strict=True):
        p = 1.0 / np.arange(1, levels + 1) ** s
        columns[name] = (rng.choice(levels, size=n, p=p / p.sum()) + 1).astype(np.int16)
    columns["w"] = np.round(np.exp(rng.normal(np.log(150.0), 0.6, size=n)), 2)
    return pl.DataFrame(columns)


def data_file(workdir: Path, n: int, seed: int) -> Path:
    """The seeded file (made once, by a child process: see :func:`main`)."""
    path = workdir / f"synth_{n}_seed{seed}.parquet"
    if not path.exists():
        subprocess.run(
            [sys.executable, __file__, "--generate", str(path), str(n), str(seed)], check=True
        )
    return path


def generate(path: Path, n: int, seed: int) -> None:
    tmp = path.with_suffix(".tmp")
    synthetic(n, seed).write_parquet(tmp)
    tmp.replace(path)


def sdckit_command() -> list[str]:
    """The console script next to this interpreter (what a user types), else ``-m sdckit``."""
    script = Path(sys.executable).with_name("sdckit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sdckit"]


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system, all threads) and peak RSS (MB) of one run of
    ``cmd``; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def rounds(
    cases: dict[str, list[str]], env: dict[str, str], repeat: int
) -> dict[str, list[tuple[float, float, float]]]:
    """Run every case ``repeat`` times, one run of each per round, alternating the order."""
    out: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(repeat):
        for name in names if r % 2 == 0 else names[::-1]:
            out[name].append(run_once(cases[name], env))
    return out


def check_outputs(risk_out: Path, floor_out: Path, suda_out: Path | None) -> str:
    """Compare the command's output with the floor's (run in a child process)."""
    import numpy as np
    import polars as pl

    ours = pl.read_parquet(risk_out)
    floor = pl.read_parquet(floor_out)
    fk_equal = bool((ours["fk"].cast(pl.Int64) == floor["fk"].cast(pl.Int64)).all())
    a, b = ours["Fk_hat"].to_numpy(), floor["Fk_hat"].to_numpy()
    rel = float(np.max(np.abs(a - b) / b))
    note = f"fk equal to the floor's counts: {fk_equal}; largest relative difference of Fk_hat"
    note += f" and the floor's weight sum {rel:.1e}"
    note += f"; output columns {', '.join(ours.columns)} (fk {ours.schema['fk']})"
    if suda_out is not None:
        suda = pl.read_parquet(suda_out)
        scored = int((suda["suda_score"] > 0).sum())
        note += f"; SUDA2: {scored:,} records with a score > 0"
    if not fk_equal or rel > 1e-9:
        raise SystemExit("the command's frequencies differ from the floor's: " + note)
    return note


def main() -> None:
    """Time the commands.  This process imports neither numpy nor polars: a child's peak RSS
    would otherwise include this process's memory (the child starts as its copy)."""
    if len(sys.argv) > 1 and sys.argv[1] in ("--generate", "--check"):
        return _child(sys.argv[1], sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds per setting (default 5)")
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--suda-records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--bytecode",
        choices=("as-is", "cached", "both"),
        default="both",
        help="the environment as it is, with a bytecode cache, or both (default)",
    )
    parser.add_argument("--no-suda", action="store_true", help="skip the SUDA2 command")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "sdckit-bench-cli",
        help="where the generated files, outputs and bytecode cache go",
    )
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    big = data_file(work, args.records, args.seed)
    small = None if args.no_suda else data_file(work, args.suda_records, args.seed)
    keys = ",".join(KEYS)
    sdckit = sdckit_command()
    risk_out = work / "risk.parquet"
    floor_out = work / "floor.parquet"
    suda_out = work / "suda.parquet"
    roles = ["--keys", keys, "--weight", "w"]
    cases = {
        "sdckit --help": [*sdckit, "--help"],
        "sdckit risk --help": [*sdckit, "risk", "--help"],
        FLOOR_NAME: [sys.executable, "-c", FLOOR, str(big), str(floor_out), keys, "w"],
        "sdckit risk": [*sdckit, "risk", str(big), *roles, "--out", str(risk_out)],
    }
    if small is not None:
        cases["sdckit risk --suda2"] = [
            *sdckit,
            "risk",
            str(small),
            *roles,
            "--suda2",
            "--out",
            str(suda_out),
        ]
    settings: list[tuple[str, dict[str, str]]] = []
    if args.bytecode in ("as-is", "both"):
        settings.append(("as is" + _pyc_note(os.environ), dict(os.environ)))
    if args.bytecode in ("cached", "both"):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cache = work / "pycache"
        shutil.rmtree(cache, ignore_errors=True)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
        settings.append(("bytecode cache", env))

    load = os.getloadavg()
    code = "import numpy, polars; print(polars.__version__, numpy.__version__)"
    versions = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    print(
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load average "
        f"{load[0]:.2f} at the start; Python {platform.python_version()}, polars "
        f"{versions[0]}, numpy {versions[1]}; {args.repeat} rounds; files "
        f"{args.records:,} and {args.suda_records:,} records x 7 keys (seed {args.seed})"
    )
    print()
    print(
        "| command | records | environment | wall min (s) | wall median (s) | CPU median (s) "
        "| peak RSS (MB) |"
    )
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for label, env in settings:
        for cmd in cases.values():  # warm-up: the file cache, numba's cache, the .pyc cache
            run_once(cmd, env)
        timings = rounds(cases, env, args.repeat)
        for name, runs in timings.items():
            walls = [w for w, _, _ in runs]
            cpu = statistics.median(c for _, c, _ in runs)
            records = (
                f"{args.records:,}"
                if "floor" in name or name == "sdckit risk"
                else (f"{args.suda_records:,}" if "suda" in name else "-")
            )
            print(
                f"| `{name}` | {records} | {label} | {min(walls):.2f} | "
                f"{statistics.median(walls):.2f} | {cpu:.2f} | {max(m for _, _, m in runs):.0f} |"
            )
        ours = [w for w, _, _ in timings["sdckit risk"]]
        floor = [w for w, _, _ in timings[FLOOR_NAME]]
        cpu_ratio = statistics.median(c for _, c, _ in timings["sdckit risk"]) / statistics.median(
            c for _, c, _ in timings[FLOOR_NAME]
        )
        ratios.append(
            f"{label}: sdckit risk / floor = {min(ours) / min(floor):.2f} (min), "
            f"{statistics.median(ours) / statistics.median(floor):.2f} (median), per round "
            + " ".join(f"{o / f:.2f}" for o, f in zip(ours, floor, strict=True))
            + f"; CPU time {cpu_ratio:.2f}"
        )
    print()
    for line in ratios:
        print(f"- {line}")
    check = [sys.executable, __file__, "--check", str(risk_out), str(floor_out)]
    if small is not None:
        check.append(str(suda_out))
    print("- " + subprocess.run(check, capture_output=True, text=True, check=True).stdout.strip())
    load = os.getloadavg()
    print(f"- load average at the end {load[0]:.2f}")


def _child(task: str, argv: list[str]) -> None:
    if task == "--generate":
        generate(Path(argv[0]), int(argv[1]), int(argv[2]))
    else:
        print(check_outputs(Path(argv[0]), Path(argv[1]), Path(argv[2]) if len(argv) > 2 else None))


def _pyc_note(env: os._Environ[str] | dict[str, str]) -> str:
    return " (no .pyc: PYTHONDONTWRITEBYTECODE=1)" if env.get("PYTHONDONTWRITEBYTECODE") else ""


if __name__ == "__main__":
    main()
