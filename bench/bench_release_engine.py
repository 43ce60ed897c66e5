"""Benchmark: the release check of a census on the streaming engine, beside a polars floor.

Run: ``.venv/bin/python bench/bench_release_engine.py [--persons 1e7] [--data DIR]``
(default 10,000,000 persons, data in ``$TMPDIR/sdckit-bench-release-engine``, deleted after
the run unless ``--keep``).

The original is the project's census (``generate_census(n, seed=1)``) with the row index
``__sdckit_row``, written as Parquet; the released file is made from it with polars streaming:
the key ``age_group`` suppressed in the classes of the seven demo keys below 3 records,
``marital_status`` where the classes without age group are below 3, incomes rounded to
thousands (every column released; the person id dropped).  Each measurement runs in a fresh
child process and reports the wall time and the peak resident memory of that process:

* ``check``: :func:`sdckit.engines.check_on_engine` on the two Parquet scans, streaming engine,
  the demo roles, k = 3, a sample of 200,000 records (whole households);
* ``floor``: plain polars, streaming, doing the group-bys of the check: the class table of the
  released keys (count, weight sum) and the frequency table of every key and the stratum in
  both files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW = "__sdckit_row"
KEYS = ["region", "urban_rural", "sex", "age_group", "marital_status", "education",
        "country_of_birth"]  # fmt: skip


def generate(data: Path, persons: int) -> tuple[Path, Path]:
    """The original and the released file (generated once)."""
    import polars as pl

    from sdckit.datasets import generate_census

    orig, rel = data / "original.parquet", data / "released.parquet"
    if orig.exists() and rel.exists():
        return orig, rel
    data.mkdir(parents=True, exist_ok=True)
    df = generate_census(persons, seed=1)
    df = df.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))
    df.write_parquet(orig, row_group_size=1_000_000)
    del df
    lf = pl.scan_parquet(orig)
    small = lf.group_by(KEYS).agg(pl.len().alias("__n"))
    coarse = [k for k in KEYS if k not in ("age_group", "marital_status")]
    small2 = lf.group_by([*coarse, "marital_status"]).agg(pl.len().alias("__m"))
    released = (
        lf.join(small, on=KEYS, how="left", nulls_equal=True, maintain_order="left")
        .join(small2, on=[*coarse, "marital_status"], how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("__n") < 3).then(None).otherwise(pl.col("age_group")).alias("age_group"),
            pl.when(pl.col("__m") < 3).then(None).otherwise(pl.col("marital_status"))
            .alias("marital_status"),
            *((pl.col(c) / 1000).round() * 1000 for c in ("income", "household_income")),
        )
        .drop("__n", "__m", "person_id")
    )  # fmt: skip
    released.sink_parquet(rel, engine="streaming", row_group_size=1_000_000)
    return orig, rel


CHECK = """
import json, sys, time
import polars as pl
from sdckit.datasets import DEMO_ROLES
from sdckit.engines import check_on_engine
orig, rel = sys.argv[1], sys.argv[2]
t = time.perf_counter()
stages, last = {}, [t]
def progress(stage, done, total):
    now = time.perf_counter()
    if done:
        stages[stage.removeprefix("Release check: ")] = round(now - last[0], 1)
    last[0] = now
res = check_on_engine(pl.scan_parquet(orig), pl.scan_parquet(rel), engine="streaming",
                      roles=DEMO_ROLES, k=3, seed=1, sample_size=200_000, progress=progress)
elapsed = time.perf_counter() - t
f = res.figures()
found = res.to_frame().select("source", "check", "target").rows()
print(json.dumps({"seconds": elapsed, "ok": res.ok, "k_violations": res.k_violations,
                  "sample_records": res.sample_records, "classes_smallest": res.smallest_class,
                  "global_risk_pct": f["global_risk_pct"], "findings": found,
                  "key_values_suppressed": f["key_values_suppressed"], "stages": stages}))
"""

FLOOR = """
import json, sys, time
import polars as pl
from sdckit.datasets import DEMO_ROLES
orig, rel = sys.argv[1], sys.argv[2]
t = time.perf_counter()
keys = DEMO_ROLES["keys"]
qs = [pl.scan_parquet(rel).group_by(keys).agg(pl.len(), pl.col("weight").sum())]
for path in (orig, rel):
    qs += [pl.scan_parquet(path).group_by(c).agg(pl.len()) for c in [*keys, "stratum"]]
pl.collect_all(qs, engine="streaming")
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def measure(code: str, orig: Path, rel: Path) -> dict:
    """Run ``code`` in a child process; its JSON line plus the child's peak memory (MB)."""
    import psutil

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code, str(orig), str(rel)],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    watch, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            rss = watch.memory_info().rss + sum(c.memory_info().rss for c in watch.children(True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = peak / 2**20
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--persons", type=float, default=1e7)
    default = Path(tempfile.gettempdir()) / "sdckit-bench-release-engine"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    persons = int(args.persons)
    data = args.data / f"census_{persons}"
    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--generate-only", str(persons), str(data)],
                   check=True)  # fmt: skip
    print(f"data: {persons:,} persons in {time.perf_counter() - t:.0f} s")
    orig, rel = data / "original.parquet", data / "released.parquet"
    for name, code in (("floor", FLOOR), ("check", CHECK)):
        r = measure(code, orig, rel)
        print(f"{name}: {r['seconds']:.1f} s, peak {r['peak_mb']:,.0f} MB  {json.dumps(r)}")
    if not args.keep:
        shutil.rmtree(data)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--generate-only":
        generate(Path(sys.argv[3]), int(sys.argv[2]))
    else:
        main()
