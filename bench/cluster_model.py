"""A model of the census risk job on a cluster, from the costs ``bench_cluster.py`` measured.

Run: ``.venv/bin/python bench/cluster_model.py MEASURED.json [--records 3e8]
[--workers 8,16,32,64] [--engine dask]`` (``MEASURED.json`` is ``bench_cluster.py --json``).

The model (:func:`census_on_cluster`) is deliberately simple; every term is one measured cost
times a count:

* the records are read in ``P = N / R`` partitions of ``R`` records (the benchmark's row groups);
* the group-by costs ``c_g`` task-seconds per partition and the join and write ``c_j``, as
  measured with one worker (one core; measured on a shared, busy machine, so an upper bound);
  ``W`` workers of one core each take ``ceil(P / W)`` rounds of them;
* every task also costs the scheduler ``s`` seconds, serially (1 ms by default: Dask's documented
  order of magnitude, an assumption, not measured here), and the job a fixed ``f`` seconds (what
  the one-worker run spent beyond its task times and the driver's work: building the graph,
  reading the Parquet metadata, starting the computation);
* the driver computes the per-class figures in memory: ``d`` seconds per class of the class
  table;
* the number of classes grows with the records as measured on prefixes of the file, extended
  by the last measured exponent, and never above the key space (the product of the keys'
  numbers of values);
* the group-by moves one partial class table per partition (``classes(R)`` rows of ``b`` bytes,
  ``b`` from Spark's shuffle write), the driver receives the class table and sends it back with
  the figures to every worker (``W`` copies);
* a worker holds one partition at a time (the measured peak above its idle size, which includes
  the class table at the measured size) plus the class table of the whole file, three times
  over during the join (the table, pandas' merge input and its output).

What it leaves out: the network (its bandwidth is a parameter, 1 GB/s by default, and only the
volumes above cross it); reading and writing storage faster or slower than this machine's disk
(object stores are usually slower per task); stragglers, skew between partitions, failures and
retries; the start of the cluster; the household risk (one row per household in the driver:
about a third of the records, which does not fit one driver at 300 million records: run it per
region) and the l-diversity columns; more than one thread per worker.  The scaling with workers
is the model's, not a measurement: this machine has two cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Costs", "census_on_cluster", "classes_at", "costs_from_benchmark"]


@dataclass(frozen=True)
class Costs:
    """Measured costs of the risk job (see the module docstring for each symbol)."""

    partition_rows: int  # R
    groupby_seconds: float  # c_g, task-seconds per partition
    join_write_seconds: float  # c_j, task-seconds per partition
    fixed_seconds: float  # f, per job: what the one-worker run spent beyond tasks and driver
    tasks_per_partition: float  # Dask tasks of the job per partition
    driver_seconds_per_class: float  # d
    shuffle_bytes_per_class: float  # b, one class-table row as moved
    class_table_bytes_per_class: float  # the class table in the driver's memory, per class
    worker_idle_mb: float
    worker_partition_mb: float  # peak above idle with one partition (class table included)
    measured_classes: int  # classes of the measured file (in worker_partition_mb)
    growth: tuple[tuple[int, int], ...]  # (records, classes) measured
    key_space: int


def classes_at(records: float, growth: tuple[tuple[int, int], ...], key_space: int) -> float:
    """Classes (key combinations) in ``records`` records, interpolated in log-log between the
    measured points, extended by the last segment's exponent, at most the key space.

    Examples
    --------
    >>> round(classes_at(1e6, ((1e4, 1000), (1e5, 4000)), 10**9))
    16000
    >>> classes_at(1e6, ((1e4, 1000), (1e5, 4000)), 10_000)
    10000.0
    """
    pts = sorted(growth)
    if records <= pts[0][0]:
        return float(min(pts[0][1] * records / pts[0][0], key_space))
    for (n1, c1), (n2, c2) in itertools.pairwise(pts):
        if records <= n2 or (n2, c2) == pts[-1]:
            b = math.log(c2 / c1) / math.log(n2 / n1)
            return float(min(c1 * (records / n1) ** b, key_space))
    return float(min(pts[0][1], key_space))  # pragma: no cover - one point only


def census_on_cluster(
    records: float,
    workers: int,
    costs: Costs,
    *,
    bandwidth: float = 1e9,
    seconds_per_task: float = 1e-3,
) -> dict[str, float]:
    """Time, memory per worker and bytes moved of the risk job on ``workers`` one-core workers.

    Parameters
    ----------
    records : float
        Records of the file.
    workers : int
        Workers of one core each.
    costs : Costs
        The measured costs (:func:`costs_from_benchmark`).
    bandwidth : float, default 1e9
        Bytes per second a worker (and the driver) sends or receives.
    seconds_per_task : float, default 0.001
        The scheduler's serial cost of one task.

    Returns
    -------
    dict
        ``partitions``, ``classes``, ``seconds`` (and its parts ``task_seconds``,
        ``scheduler_seconds`` (fixed and per task), ``driver_seconds``,
        ``network_seconds``), ``worker_mb``, ``driver_mb`` (the class table),
        ``shuffle_mb`` (the partial class tables of the group-by), ``broadcast_mb`` (the
        class table sent to every worker).

    Examples
    --------
    >>> c = Costs(1_000_000, 1.0, 2.0, 5.0, 5.0, 1e-6, 50.0, 200.0, 100.0, 400.0, 1000,
    ...           ((1_000_000, 1000), (10_000_000, 2000)), 10**6)
    >>> m = census_on_cluster(1e8, 10, c)
    >>> m["partitions"], m["task_seconds"], round(m["scheduler_seconds"], 6)
    (100, 30.0, 5.5)
    >>> round(m["shuffle_mb"], 3)  # 100 partial tables of 1000 classes of 50 bytes
    4.768
    """
    partitions = math.ceil(records / costs.partition_rows)
    classes = classes_at(records, costs.growth, costs.key_space)
    per_partition = classes_at(costs.partition_rows, costs.growth, costs.key_space)
    rounds = math.ceil(partitions / workers)
    task = rounds * (costs.groupby_seconds + costs.join_write_seconds)
    scheduler = costs.fixed_seconds + partitions * costs.tasks_per_partition * seconds_per_task
    driver = classes * costs.driver_seconds_per_class
    shuffle = partitions * per_partition * costs.shuffle_bytes_per_class
    table_bytes = classes * costs.shuffle_bytes_per_class
    broadcast = workers * table_bytes
    # the partials arrive at the reducers in parallel; the driver receives the table and sends
    # it to every worker itself
    network = shuffle / (workers * bandwidth) + (table_bytes + broadcast) / bandwidth
    extra_table = (classes - costs.measured_classes) * costs.class_table_bytes_per_class * 3
    worker_mb = costs.worker_idle_mb + costs.worker_partition_mb + max(extra_table, 0) / 2**20
    return {
        "records": records,
        "workers": workers,
        "partitions": partitions,
        "classes": classes,
        "seconds": task + scheduler + driver + network,
        "task_seconds": task,
        "scheduler_seconds": scheduler,
        "driver_seconds": driver,
        "network_seconds": network,
        "worker_mb": worker_mb,
        "driver_mb": classes * costs.class_table_bytes_per_class / 2**20,
        "shuffle_mb": shuffle / 2**20,
        "broadcast_mb": broadcast / 2**20,
    }


def costs_from_benchmark(measured: dict, engine: str = "dask") -> Costs:
    """The :class:`Costs` of ``bench_cluster.py --json``: task costs, scheduler and memory
    from ``engine`` with one worker, bytes per moved class from Spark's shuffle write."""
    runs = {(r["engine"], r["workers"]): r for r in measured["runs"] if "error" not in r}
    one = runs[(engine, 1)]["jobs"]["risk"]
    ph = one["phases"]
    parts = one["partitions"]
    classes = one["figures"]["classes"]
    growth = tuple(
        (int(g["records"]), int(g["classes"]))
        for g in measured["class_growth"]
        if g["records"] != "key space"
    )
    key_space = next(g["classes"] for g in measured["class_growth"] if g["records"] == "key space")
    rows = measured["partition_rows"]
    task_total = ph["group-by"]["task_seconds"] + ph["join + write"]["task_seconds"]
    driver = ph["driver"]["wall_seconds"]
    fixed = max(one["seconds"] - task_total - driver, 0.0)
    tasks = ph["group-by"]["tasks"] + ph["join + write"]["tasks"]
    spark = [r for (e, _), r in runs.items() if e == "spark"]
    if spark:
        sj = spark[0]["jobs"]["risk"]
        per_part = classes_at(rows, growth, key_space)
        moved = sj["phases"]["group-by"]["shuffle_write_bytes"]
        shuffle_per_class = moved / (sj["partitions"] * per_part)
    else:  # pragma: no cover - without Spark: the class table's in-memory size
        shuffle_per_class = one["class_table_bytes"] / classes
    return Costs(
        partition_rows=rows,
        groupby_seconds=ph["group-by"]["task_seconds_per_partition"],
        join_write_seconds=ph["join + write"]["task_seconds_per_partition"],
        fixed_seconds=fixed,
        tasks_per_partition=tasks / parts,
        driver_seconds_per_class=driver / classes,
        shuffle_bytes_per_class=shuffle_per_class,
        class_table_bytes_per_class=one["class_table_bytes"] / classes,
        worker_idle_mb=max(one["start_worker_mb"]),
        worker_partition_mb=max(one["peak_worker_mb"]) - max(one["start_worker_mb"]),
        measured_classes=classes,
        growth=growth,
        key_space=int(key_space),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measured", type=Path)
    parser.add_argument("--records", type=float, default=3e8)
    parser.add_argument("--workers", default="1,8,16,32,64")
    parser.add_argument("--engine", default="dask")
    parser.add_argument("--bandwidth", type=float, default=1e9)
    args = parser.parse_args()
    costs = costs_from_benchmark(json.loads(args.measured.read_text()), args.engine)
    print(f"<!-- {costs} -->")
    print(
        "| records | workers | partitions | classes | seconds (tasks + scheduler + driver +"
        " network) | memory per worker (MB) | class table in the driver (MB) |"
        " group-by shuffle (MB) | class table sent to the workers (MB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for w in (int(x) for x in args.workers.split(",")):
        m = census_on_cluster(args.records, w, costs, bandwidth=args.bandwidth)
        print(
            f"| {m['records']:,.0f} | {w} | {m['partitions']:,} | {m['classes']:,.0f} | "
            f"{m['seconds']:,.0f} ({m['task_seconds']:,.0f} + {m['scheduler_seconds']:,.0f} + "
            f"{m['driver_seconds']:,.0f} + {m['network_seconds']:,.1f}) | {m['worker_mb']:,.0f} | "
            f"{m['driver_mb']:,.0f} | {m['shuffle_mb']:,.0f} | {m['broadcast_mb']:,.0f} |"
        )


if __name__ == "__main__":
    main()
