"""Benchmark: risk on the engines (in-process, polars, streaming, Dask, Spark) beside the floors.

Run: ``.venv/bin/python bench/bench_engines.py [SIZES...] [--engines a,b,...] [--data DIR]``
(sizes like ``1e6 1e7 5e7``; default ``1e6 1e7``).  The files are generated once, seeded, into
``--data`` (default ``$TMPDIR/sdckit-bench-engines``, outside the repository): ``k1..k7``
integer codes with Zipf-like levels as ``../shared/data/bench/synth_*`` (L = 2, 5, 10, 20, 50,
100, 300) and a lognormal
weight ``w``.  Every measurement runs in a fresh child process, once, and reports the wall time
and the peak resident memory of the child and its children (Spark's JVM included).  Each run
computes fk, Fk_hat, individual and global risk and k-anonymity counts and writes the
per-record result (the input columns plus fk, Fk_hat, risk) as Parquet.  The floors do the same
work in plain polars: a group-by (count, weight sum), sdcMicro's approximate risk per class as a
polars expression, joined back to the records in their order and written (``write_parquet`` in
memory, ``sink_parquet`` on the streaming engine).  ``cli-auto`` is the command as a new user
types it, without ``--engine`` (``sdckit risk FILE --keys k1,...,k7 --weight w --out OUT``, in
a child process of the measured one): the engine it chose is printed in a comment, and its time
is compared with the streaming floor's.

Run it from the source tree you measure (``PYTHONPATH=src`` for a worktree: the children
inherit it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KEYS = [f"k{i}" for i in range(1, 8)]
LEVELS = (2, 5, 10, 20, 50, 100, 300)
EXPONENTS = (0.5, 1.0, 1.3, 1.6, 1.8, 2.0, 2.0)
CHUNK = 5_000_000
ENGINES = (
    "in-process",
    "floor-memory",
    "polars",
    "floor-streaming",
    "streaming",
    "cli-auto",
    "dask",
    "spark",
)


def generate(path: Path, rows: int, seed: int = 20261201) -> None:
    """The benchmark file (seeded), written in row groups of 1 million records."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    probs = []
    for levels, s in zip(LEVELS, EXPONENTS, strict=True):
        p = 1.0 / np.arange(1, levels + 1) ** s
        probs.append(p / p.sum())
    tmp = path.with_suffix(".tmp")
    writer = None
    done = 0
    while done < rows:
        n = min(CHUNK, rows - done)
        cols = {
            k: rng.choice(np.arange(1, len(p) + 1, dtype=np.int32), n, p=p)
            for k, p in zip(KEYS, probs, strict=True)
        }
        cols["w"] = np.round(np.exp(rng.normal(np.log(150.0), 0.6, n)), 2)
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1_000_000)
        done += n
    if writer is not None:
        writer.close()
    tmp.rename(path)


CHILD = r"""
import json, sys, threading, time
from pathlib import Path
import psutil

engine, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
KEYS = [f"k{i}" for i in range(1, 8)]
proc = psutil.Process()
peak = [0]
stop = threading.Event()

def tree_rss():
    total = proc.memory_info().rss
    for child in proc.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total

def watch():
    while not stop.is_set():
        peak[0] = max(peak[0], tree_rss())
        time.sleep(0.01)

import polars as pl
setup = {}
if engine == "dask":
    import dask.dataframe as dd
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit="8GiB")
    client = Client(cluster)
if engine == "spark":
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "8g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
from sdckit.engines import risk_on_engine
from sdckit.risk import assess_risk

base = tree_rss()
peak[0] = base
t = threading.Thread(target=watch, daemon=True)
t.start()
t0 = time.perf_counter()
result = {}
if engine == "in-process":
    df = pl.read_parquet(src)
    res = assess_risk(df, keys=KEYS, weight="w")
    df.hstack(res.to_frame()).write_parquet(out)
    result = res.figures()
elif engine in ("floor-memory", "floor-streaming"):
    # plain polars, the same work: fk, Fk_hat and sdcMicro's approximate risk per class,
    # joined back to the records in their order and written
    f, F = pl.col("fk"), pl.col("Fk_hat")
    p = (f / F).clip(upper_bound=1.0)
    q = 1.0 - p
    risk = (
        pl.when(q <= 1e-12).then(1.0 / f)
        .when(f == 1).then(p * (-p.log()) / q)
        .when(f == 2).then(p / q**2 * (p * p.log() + q))
        .otherwise(p / (f - q))
    )
    aggs = [pl.len().cast(pl.Float64).alias("fk"), pl.col("w").sum().alias("Fk_hat")]
    if engine == "floor-memory":
        df = pl.read_parquet(src)
        g = df.group_by(KEYS).agg(aggs).with_columns(risk=risk)
        df.join(g, on=KEYS, how="left", maintain_order="left").write_parquet(out)
    else:
        lf = pl.scan_parquet(src)
        g = lf.group_by(KEYS).agg(aggs).with_columns(risk=risk)
        lf.join(g, on=KEYS, how="left", maintain_order="left").sink_parquet(
            out, engine="streaming"
        )
elif engine == "cli-auto":
    import subprocess
    cmd = [sys.executable, "-m", "sdckit", "risk", src, "--keys", ",".join(KEYS),
           "--weight", "w", "--out", out]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**__import__("os").environ,
                          "COLUMNS": "400"})
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    text = " ".join(x.strip(" │") for x in done.stdout.splitlines())
    at = text.find("engine:")
    result = {"engine": text[at:text.find(")", at) + 1]}
elif engine in ("polars", "streaming"):
    result = risk_on_engine(src, keys=KEYS, weight="w", engine=engine, output=out).figures()
elif engine == "dask":
    data = dd.read_parquet(src)
    result = risk_on_engine(data, keys=KEYS, weight="w", output=out).figures()
elif engine == "spark":
    data = spark.read.parquet(src)
    result = risk_on_engine(data, keys=KEYS, weight="w", output=out).figures()
elapsed = time.perf_counter() - t0
stop.set()
t.join()
peak[0] = max(peak[0], tree_rss())
print(json.dumps({"seconds": elapsed, "peak_mb": peak[0] / 2**20,
                  "extra_mb": (peak[0] - base) / 2**20, "figures": result}))
"""


def measure(engine: str, src: Path, scratch: Path) -> dict:
    out = scratch / f"out-{engine}"
    if engine in (
        "polars",
        "streaming",
        "in-process",
        "floor-memory",
        "floor-streaming",
        "cli-auto",
    ):
        out = out.with_suffix(".parquet")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, engine, str(src), str(out)],
        capture_output=True,
        text=True,
    )
    if out.is_dir():
        shutil.rmtree(out, ignore_errors=True)
    else:
        out.unlink(missing_ok=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    args = sys.argv[1:]
    engines = list(ENGINES)
    data = Path(tempfile.gettempdir()) / "sdckit-bench-engines"
    sizes: list[int] = []
    i = 0
    while i < len(args):
        if args[i] == "--engines":
            engines = args[i + 1].split(",")
            i += 2
        elif args[i] == "--data":
            data = Path(args[i + 1])
            i += 2
        else:
            sizes.append(int(float(args[i])))
            i += 1
    sizes = sizes or [1_000_000, 10_000_000]
    print("| records | engine | seconds | peak RSS (MB) | extra RSS (MB) | ratio to floor |"
          " sample uniques | expected re-identifications |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    data.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=data) as tmp:
        for rows in sizes:
            src = data / f"engines_{rows:.0e}.parquet".replace("+0", "")
            t0 = time.perf_counter()
            generate(src, rows)
            print(f"<!-- {src.name}: generated or found in {time.perf_counter() - t0:.0f} s -->")
            floors: dict[str, float] = {}
            for engine in engines:
                r = measure(engine, src, Path(tmp))
                if "error" in r:
                    print(f"| {rows:,} | {engine} | failed: {r['error'][:80]} | | | | | |")
                    continue
                if engine.startswith("floor"):
                    floors[engine] = r["seconds"]
                streamed = engine in ("streaming", "cli-auto")
                floor = floors.get("floor-streaming" if streamed else "floor-memory")
                ratio = (
                    f"{r['seconds'] / floor:.2f}"
                    if floor and not engine.startswith("floor")
                    else ""
                )
                fig = r["figures"]
                print(
                    f"| {rows:,} | {engine} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
                    f"{r['extra_mb']:.0f} | {ratio} | {fig.get('sample_uniques', '')} | "
                    f"{fig.get('expected_reidentifications', float('nan')):.2f} |",
                    flush=True,
                )
                if "engine" in fig:
                    print(f"<!-- {engine}: {fig['engine']} -->", flush=True)


if __name__ == "__main__":
    main()
