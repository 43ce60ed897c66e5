"""The streaming engine in bounded memory: a file far larger than the memory it may use.

A child process reads a Parquet data set of 48 million records (six files; 7 keys and a
weight: 1,728 MB as columns in memory, 2,880 MB with the three result columns) and writes the
per-record result with ``sink_parquet``; its peak resident memory above what it had after the
imports must stay below half the records' in-memory size (864 MB; the key combinations are
57,600).  A second child builds a table with the largest contributions under the same bound.

The memory measured is flat in the number of records (the same run on 16, 48 and 96 million
records gave the same range): it is that of one group-by slice, the class table and the
Parquet reader's and writer's buffers.  It is not steady from run to run: on a two-core
machine the risk run took 209 to 350 MB extra alone and up to 417 MB with another process
busy on the cores (the Parquet sink keeps the records in order and holds the morsels that
arrive early); the table run 200 to 226 MB.  The bound leaves room for that, and is still far
below what holding the records would take.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

FILE_ROWS = 8_000_000
FILES = 6
ROWS = FILE_ROWS * FILES
CHUNK = 2_000_000
#: Records per slice of the streaming group-by in the child (the memory of one slice).
CHUNK_ROWS = 8_000_000
LEVELS = (2, 5, 10, 4, 8, 6, 3)
IN_MEMORY_BYTES = ROWS * (7 * 4 + 8)
#: The bound on the child's extra resident memory: half the records' in-memory size.
BOUND = IN_MEMORY_BYTES / 2

CHILD = textwrap.dedent(
    """
    import json, sys, threading, time
    import psutil
    import sdckit.engines as engines
    import sdckit.tables  # imported before the baseline is taken

    src, out, what = sys.argv[1], sys.argv[2], sys.argv[3]
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.002)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    keys = [f"k{i}" for i in range(1, 8)]
    if what == "risk":
        res = engines.risk_on_engine(src, keys=keys, weight="w", engine="streaming", output=out)
        result = res.figures()
    else:
        tab = engines.table_on_engine(src, ["k1", "k2", "k3"], "w", engine="streaming")
        result = {"cells": int(tab.values.size), "total": float(tab.values[0])}
    stop.set()
    t.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    print(json.dumps({"extra": peak[0] - base, "result": result}))
    """
)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> str:
    """A glob of six Parquet files of 8 million records (copies of one file)."""
    folder = tmp_path_factory.mktemp("big")
    first = folder / "part0.parquet"
    rng = np.random.default_rng(2024)
    writer = None
    for _ in range(FILE_ROWS // CHUNK):
        cols = {f"k{i + 1}": rng.integers(1, L + 1, CHUNK, dtype=np.int32) for i, L in
                enumerate(LEVELS)}  # fmt: skip
        cols["w"] = rng.integers(50, 400, CHUNK).astype(np.float64)
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(first, table.schema, compression="lz4")
        writer.write_table(table, row_group_size=100_000)
    assert writer is not None
    writer.close()
    for i in range(1, FILES):
        shutil.copyfile(first, folder / f"part{i}.parquet")
    return str(folder / "*.parquet")


def _child(*args: str) -> dict:
    env = {**os.environ, "SDCKIT_STREAM_CHUNK_ROWS": str(CHUNK_ROWS)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_risk_streams_in_bounded_memory(big_file: str, tmp_path: Path) -> None:
    out = tmp_path / "risk.parquet"
    report = _child(big_file, str(out), "risk")
    print(f"streaming risk: {report['extra'] / 2**20:.0f} MB extra")
    assert report["result"]["records"] == ROWS
    assert pl.scan_parquet(out).select(pl.len()).collect().item() == ROWS
    assert report["extra"] < BOUND, report["extra"] / 2**20


@pytest.mark.slow
def test_table_streams_in_bounded_memory(big_file: str) -> None:
    report = _child(big_file, "-", "table")
    print(f"streaming table: {report['extra'] / 2**20:.0f} MB extra")
    assert report["result"]["cells"] == 3 * 6 * 11
    assert report["extra"] < BOUND, report["extra"] / 2**20
