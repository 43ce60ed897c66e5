"""Benchmark: the census jobs on a Dask ``LocalCluster`` and Spark ``local[N]``, 1, 2, 4 workers.

Run: ``.venv/bin/python bench/bench_cluster.py [--records 1e7] [--workers 1,2,4]
[--engines dask,spark] [--jobs risk,table] [--partition-rows 500000] [--data DIR]
[--json FILE]``.

The file is generated once, seeded, by the project's census generator
(:func:`sdckit.datasets.generate_census`), written to ``--data`` (default
``$TMPDIR/sdckit-bench-cluster``) as zstd Parquet in row groups of ``--partition-rows`` records:
Dask reads one partition per row group, and Spark is given splits of the same size, so both
engines work on the same partitions.  Every (engine, workers) configuration runs in a fresh
child process and reports, per job:

* the wall time of the job, and of its phases: ``group-by`` (the class table built on the engine
  and brought to the driver), ``driver`` (the per-class figures computed in memory), ``join +
  write`` (the per-class columns joined back to the records and the Parquet part files written);
  the table job is one ``group-by`` (the leaf cells and the largest contributions);
* the cost per partition: the engine's own task times (Dask's task stream, Spark's stage metrics
  from its REST API) summed over the phase's tasks and divided by the number of partitions;
* the bytes moved: on Dask the bytes workers fetched from one another (their transfer logs) and
  the size of the partial aggregates the tasks produced; on Spark the stages' shuffle write;
* the peak resident memory of each worker process (Dask) or of the one JVM that runs all the
  task threads (Spark's local mode has no separate workers: its figure is shared by N threads),
  and of the driver process.

The jobs are in :data:`JOBS` (name -> function of the data, the engine, an output directory):
``risk`` (fk, Fk_hat, individual and global risk of the census key variables with the weight,
the per-record result written as part files) and ``table`` (income by region x age group x sex,
weighted, with every margin).  A job added to :data:`JOBS` is run, timed and measured the same
way: its phases are those of the
engine methods listed in :data:`PHASES`.

The machine this was written on has 2 cores: 4 workers on it measure the overhead of more
workers than cores, not a speed-up.  The class table's growth with the records (the number of
key combinations in prefixes of the file) is measured too, for the model in
``bench/cluster_model.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEYS = [
    "region",
    "urban_rural",
    "sex",
    "age_group",
    "marital_status",
    "education",
    "country_of_birth",
]
COLUMNS = ["person_id", "household_id", *KEYS, "health_condition", "weight", "income"]
SEED = 30


def generate(path: Path, records: int, partition_rows: int) -> None:
    """The census file (seeded), generated in memory and written in row groups."""
    if path.exists():
        return
    from sdckit.datasets import generate_census

    path.parent.mkdir(parents=True, exist_ok=True)
    frame = generate_census(records, seed=SEED).select(COLUMNS)
    tmp = path.with_suffix(".tmp")
    frame.write_parquet(tmp, compression="zstd", row_group_size=partition_rows)
    tmp.rename(path)


def class_growth(path: Path, records: int, partition_rows: int) -> list[dict]:
    """Key combinations (the risk job's class table) in prefixes of the file: 1e5, 1e6, ...
    and one partition's records.

    The households are in random order of area, so a prefix is a sample of households.
    """
    import polars as pl

    sizes = {partition_rows, records}
    n = 100_000
    while n < records:
        sizes.add(n)
        n *= 10
    sizes = sorted(s for s in sizes if s <= records)
    lf = pl.scan_parquet(path).select(KEYS)
    out = []
    for n in sizes:
        classes = lf.head(n).unique().select(pl.len()).collect(engine="streaming").item()
        out.append({"records": n, "classes": int(classes)})
    levels = lf.select(pl.all().n_unique()).collect(engine="streaming").row(0)
    out.append({"records": "key space", "classes": int(_product(levels))})
    return out


def _product(values: tuple) -> int:
    total = 1
    for v in values:
        total *= int(v)
    return total


# The child: one engine with W workers, every job, its phases and the engine's own metrics.
CHILD = r"""
import json, os, socket, sys, threading, time, urllib.request
from pathlib import Path
import psutil

engine, workers, src, scratch, jobs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], \
    sys.argv[5].split(",")
split_bytes = int(sys.argv[6])
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[7])))
from bench_cluster import JOBS, PHASES, KEYS

proc = psutil.Process()
peaks = {}          # pid -> peak RSS while the job runs
watched = {}        # pid -> label
stop = threading.Event()

def watch():
    while not stop.is_set():
        for pid in list(watched):
            try:
                rss = psutil.Process(pid).memory_info().rss
            except psutil.Error:
                continue
            peaks[pid] = max(peaks.get(pid, 0), rss)
        time.sleep(0.02)

phase_log = []      # (job, phase, start, stop) in time.time()
class_bytes = {}    # job -> bytes of the class table in the driver
current = {"job": None}

def timed(cls, name, label, on_start=None):
    original = getattr(cls, name)
    def wrapper(self, *a, **k):
        if on_start is not None:
            on_start(label)
        t0 = time.time()
        try:
            return original(self, *a, **k)
        finally:
            phase_log.append((current["job"], label, t0, time.time()))
            if name == "finest":  # the class table as the driver holds it
                native = getattr(self, "_finest_native", None)
                arrow = getattr(self, "_finest_arrow", None)
                class_bytes[current["job"]] = (
                    int(native.memory_usage(deep=True).sum()) if native is not None
                    else int(arrow.nbytes) if arrow is not None else 0
                )
    setattr(cls, name, wrapper)

setup_start = time.perf_counter()
if engine == "dask":
    import dask.dataframe as dd
    from dask.utils import key_split
    from distributed import Client, LocalCluster, get_task_stream
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit="6GiB")
    client = Client(cluster)
    worker_pids = client.run(os.getpid)
    for addr, pid in worker_pids.items():
        watched[pid] = "worker"
    from sdckit.engines._dask import DaskEngine as Backend
    on_start = None
    def data():
        return dd.read_parquet(src, split_row_groups=True)
else:
    from pyspark.sql import SparkSession
    sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
    spark = (SparkSession.builder.master(f"local[{workers}]")
             .config("spark.ui.enabled", "true").config("spark.ui.port", str(port))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.files.maxPartitionBytes", str(split_bytes))
             .config("spark.driver.memory", "6g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    for child in proc.children(recursive=True):
        if "java" in child.name():
            watched[child.pid] = "jvm"
    from sdckit.engines._spark import SparkEngine as Backend
    def on_start(label):
        sc.setJobGroup(f"{current['job']}|{label}", label)
    def data():
        return spark.read.parquet(src)
    api = f"http://127.0.0.1:{port}/api/v1/applications/{sc.applicationId}"
    def get(path):
        with urllib.request.urlopen(api + path, timeout=30) as r:
            return json.loads(r.read())
watched[proc.pid] = "driver"
for name, label in PHASES.items():
    timed(Backend, name, label, on_start)
setup_seconds = time.perf_counter() - setup_start

from sdckit.engines import risk_on_engine  # noqa: F401  (imports before the clock)
t = threading.Thread(target=watch, daemon=True)
t.start()
results = {"engine": engine, "workers": workers, "setup_seconds": setup_seconds, "jobs": {}}
for job in jobs:
    current["job"] = job
    start_rss = {}
    for pid in list(watched):
        try:
            start_rss[pid] = psutil.Process(pid).memory_info().rss
        except psutil.Error:
            start_rss[pid] = 0
        peaks[pid] = start_rss[pid]
    if engine == "dask":
        client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
        frame = data()
        npart = frame.npartitions
        t0 = time.perf_counter()
        with get_task_stream(client) as ts:
            figures = JOBS[job](frame, engine, Path(scratch) / f"{engine}-{workers}-{job}")
        seconds = time.perf_counter() - t0
        moved = client.run(lambda dask_worker: sum(e["total"] for e in
                                                   dask_worker.transfer_incoming_log))
        tasks = ts.data
    else:
        frame = data()
        npart = frame.rdd.getNumPartitions()
        t0 = time.perf_counter()
        figures = JOBS[job](frame, engine, Path(scratch) / f"{engine}-{workers}-{job}")
        seconds = time.perf_counter() - t0
        sc.setJobGroup("idle", "idle")
        time.sleep(3)  # the REST API's listener catches up
    phases = {}
    for j, label, a, b in phase_log:
        if j != job:
            continue
        ph = phases.setdefault(label, {"wall_seconds": 0.0, "task_seconds": 0.0, "tasks": 0,
                                       "bytes_out": 0, "shuffle_write_bytes": 0,
                                       "shuffle_read_bytes": 0, "_windows": []})
        ph["wall_seconds"] += b - a
        ph["_windows"].append((a, b))
    if engine == "dask":
        for task in tasks:
            start = min(s["start"] for s in task["startstops"] if s["action"] == "compute") \
                if any(s["action"] == "compute" for s in task["startstops"]) else None
            if start is None:
                continue
            compute = sum(s["stop"] - s["start"] for s in task["startstops"]
                          if s["action"] == "compute")
            for label, ph in phases.items():
                if any(a <= start <= b for a, b in ph["_windows"]):
                    ph["task_seconds"] += compute
                    ph["tasks"] += 1
                    ph["bytes_out"] += int(task.get("nbytes", 0) or 0)
                    break
        transfer = int(sum(moved.values()))
    else:
        jobs_api = get("/jobs")
        stages = {s["stageId"]: s for s in get("/stages") if s["status"] == "COMPLETE"}
        for js in jobs_api:
            group = js.get("jobGroup", "") or ""
            if not group.startswith(job + "|"):
                continue
            label = group.split("|", 1)[1]
            ph = phases.get(label)
            if ph is None:
                continue
            for sid in js["stageIds"]:
                s = stages.pop(sid, None)
                if s is None:
                    continue
                ph["task_seconds"] += s["executorRunTime"] / 1000.0
                ph["tasks"] += s["numTasks"]
                ph["shuffle_write_bytes"] += s["shuffleWriteBytes"]
                ph["shuffle_read_bytes"] += s["shuffleReadBytes"]
        transfer = int(sum(ph["shuffle_write_bytes"] for ph in phases.values()))
    # what is left is the driver's work in memory (the per-class figures, the margins)
    phases["driver"] = {"wall_seconds": max(seconds - sum(p["wall_seconds"] for p in
                        phases.values()), 0.0), "task_seconds": 0.0, "tasks": 0, "_windows": []}
    for ph in phases.values():
        ph.pop("_windows")
        ph["task_seconds_per_partition"] = ph["task_seconds"] / npart
    worker_peaks = [peaks.get(p, 0) / 2**20 for p, l in watched.items() if l != "driver"]
    results["jobs"][job] = {
        "seconds": seconds, "partitions": npart, "phases": phases,
        "bytes_moved": transfer,
        "peak_worker_mb": worker_peaks,
        "start_worker_mb": [start_rss.get(p, 0) / 2**20 for p, l in watched.items()
                            if l != "driver"],
        "class_table_bytes": class_bytes.get(job, 0),
        "peak_driver_mb": peaks.get(proc.pid, 0) / 2**20,
        "figures": figures,
    }
stop.set()
t.join()
print("RESULT " + json.dumps(results))
if engine == "dask":
    client.close(); cluster.close()
else:
    spark.stop()
"""

#: Engine methods timed as phases (method -> phase), for every job.
PHASES = {
    "finest": "group-by",
    "household": "household",
    "write": "join + write",
    "leaf_cells": "group-by",
}


def risk_job(data, engine: str, out: Path) -> dict:
    """fk, Fk_hat, risk of the census keys with the weight; the per-record result written."""
    from sdckit.engines import risk_on_engine

    res = risk_on_engine(data, keys=KEYS, weight="weight", engine=engine, output=out)
    fig = res.figures()
    return {
        "classes": res.classes.height,
        "sample_uniques": fig["sample_uniques"],
        "expected_reidentifications": round(fig["expected_reidentifications"], 2),
    }


def table_job(data, engine: str, out: Path) -> dict:
    """Income by region x age group x sex (weighted, every margin, the 3 largest contributions)."""
    from sdckit.engines import table_on_engine

    res = table_on_engine(
        data, ["region", "age_group", "sex"], "income", weight="weight", engine=engine
    )
    return {"cells": int(res.cells.height), "total": round(float(res.values[0]), 0)}


#: The jobs: name -> function(data, engine, output directory) -> figures (JSON-able).  The
#: protect job is not among them: it is timed by bench_census_protect.py (one machine).
JOBS = {"risk": risk_job, "table": table_job}


def run(engine: str, workers: int, src: Path, scratch: Path, jobs: list[str], split: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, engine, str(workers), str(src), str(scratch),
         ",".join(jobs), str(split), __file__],
        capture_output=True,
        text=True,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = proc.stderr.strip().splitlines()[-3:] if proc.stderr else ["failed"]
    return {"engine": engine, "workers": workers, "error": " / ".join(tail)}


def _mb(x: float) -> str:
    return f"{x / 2**20:,.1f}"


def header() -> None:
    print("| engine | workers | job | seconds | partitions | phase: wall s / task s per partition |"
          " MB moved between workers (Dask) or shuffled (Spark) | peak RSS per worker (MB) |"
          " driver peak (MB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")


def report(results: list[dict], jobs: list[str]) -> None:
    for r in results:
        if "error" in r:
            print(f"| {r['engine']} | {r['workers']} | | failed: {r['error'][:120]} | | | | | |")
            continue
        for job in jobs:
            j = r["jobs"][job]
            phases = "; ".join(
                f"{name}: {ph['wall_seconds']:.1f} / {ph['task_seconds_per_partition']:.2f}"
                for name, ph in j["phases"].items()
            )
            per_worker = ", ".join(f"{m:,.0f}" for m in j["peak_worker_mb"])
            print(
                f"| {r['engine']} | {r['workers']} | {job} | {j['seconds']:.1f} | "
                f"{j['partitions']} | {phases} | {_mb(j['bytes_moved'])} | {per_worker} | "
                f"{j['peak_driver_mb']:,.0f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=float, default=1e7)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--engines", default="dask,spark")
    parser.add_argument("--jobs", default="risk,table")
    parser.add_argument("--partition-rows", type=int, default=500_000)
    parser.add_argument(
        "--data", type=Path, default=Path(tempfile.gettempdir()) / "sdckit-bench-cluster"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = parser.parse_args()
    records = int(args.records)
    jobs = args.jobs.split(",")
    args.data.mkdir(parents=True, exist_ok=True)
    src = args.data / f"census_{records:.0e}.parquet".replace("+0", "")
    t0 = time.perf_counter()
    generate(src, records, args.partition_rows)
    print(f"<!-- {src.name}: generated or found in {time.perf_counter() - t0:.0f} s -->")
    import pyarrow.parquet as pq

    groups = pq.ParquetFile(src).metadata.num_row_groups
    split = max(src.stat().st_size // groups, 1 << 16)  # Spark splits of one row group's size
    growth = class_growth(src, records, args.partition_rows)
    print("<!-- classes by records: "
          + ", ".join(f"{g['records']}: {g['classes']}" for g in growth) + " -->")  # fmt: skip
    results = []
    header()
    with tempfile.TemporaryDirectory(dir=args.data) as scratch:
        for engine in args.engines.split(","):
            for w in (int(x) for x in args.workers.split(",")):
                r = run(engine, w, src, Path(scratch), jobs, split)
                results.append(r)
                report([r], jobs)
    if args.json is not None:
        payload = {
            "records": records,
            "partition_rows": args.partition_rows,
            "file_bytes": src.stat().st_size,
            "class_growth": growth,
            "runs": results,
        }
        args.json.write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
