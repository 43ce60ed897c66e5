"""Records on an engine with their global row index: read, small tables, collect, write.

A protection job on an engine works on *native* frames -- a polars LazyFrame (the streaming
engine), a Dask DataFrame or a PySpark DataFrame -- that carry the column :data:`ROW`: the
position of each record in the input (int64, ``0..n-1`` in file order).  The row index is what
per-record decisions computed in memory (local suppression) are joined back on, what the
released record order is drawn over, and what an engine result is compared with the in-memory
path by; it is dropped at the write.

File order: on the streaming engine and on Dask it is the order of the Parquet files and of the
rows in them (Dask: the partitions in order); on Spark it is the order of the DataFrame's
partitions, which for a directory of several part files is Spark's own split order, not the
file names' (give Spark one file, or a DataFrame in the wanted order).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import ParameterError

__all__ = ["ROW", "collect", "native_table", "read_with_row", "remove_output", "write_parts"]

#: The global row index column (file order), added at the read and dropped at the write.
ROW = "__sdckit_row"


def read_with_row(data: Any, engine: str) -> Any:
    """``data`` (a Parquet path or a native frame) on ``engine`` with the row index added.

    Parameters
    ----------
    data : path, polars LazyFrame or DataFrame, Dask DataFrame, PySpark DataFrame
    engine : {"streaming", "dask", "spark"}

    Returns
    -------
    The native frame with :data:`ROW` as its last column.

    Examples
    --------
    >>> import polars as pl
    >>> lf = read_with_row(pl.LazyFrame({"a": [5, 6, 7]}), "streaming")
    >>> lf.collect().get_column(ROW).to_list()
    [0, 1, 2]
    """
    path = isinstance(data, str | os.PathLike)
    if engine == "dask":
        return _dask_rows(_read_dask(data) if path else data)
    if engine == "spark":
        return _spark_rows(_read_spark(data) if path else data)
    lf = pl.scan_parquet(data) if path else data.lazy()
    return lf.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))


def _read_dask(path: Any) -> Any:
    import dask.dataframe as dd

    # nullable types: an integer column with missing values stays an integer column (the
    # in-memory path reads it so, and a recoding maps its values as integers)
    return dd.read_parquet(str(path), dtype_backend="numpy_nullable")


def _read_spark(path: Any) -> Any:
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        raise ParameterError(
            "engine='spark' with a Parquet path needs an active SparkSession; start one or "
            "pass a Spark DataFrame."
        )
    return session.read.parquet(str(path))


def _add_dask_rows(part: Any, offsets: Any, partition_info: Any = None) -> Any:
    start = int(offsets[partition_info["number"]]) if partition_info is not None else 0
    out = part.copy()
    out[ROW] = np.arange(start, start + len(part), dtype=np.int64)
    return out


def _dask_rows(ddf: Any) -> Any:
    # the partition lengths once (a pass over the row groups), then each partition numbers its
    # records from its offset
    lengths = np.asarray(ddf.map_partitions(len).compute(), dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    meta = ddf._meta.copy()
    meta[ROW] = np.zeros(0, dtype=np.int64)
    return ddf.map_partitions(_add_dask_rows, offsets, meta=meta)


def _spark_rows(sdf: Any) -> Any:
    from pyspark.sql import functions as F

    # monotonically_increasing_id is (partition << 33) + position in the partition: with the
    # records per partition counted once, the offset of each partition makes it 0..n-1
    tagged = sdf.withColumn("__sdckit_pid", F.spark_partition_id()).withColumn(
        "__sdckit_mid", F.monotonically_increasing_id()
    )
    counts = dict(tagged.groupBy("__sdckit_pid").count().collect())
    offset, mapping = 0, []
    for pid in sorted(counts):
        mapping += [F.lit(pid), F.lit(offset - (pid << 33))]
        offset += counts[pid]
    shift = F.create_map(*mapping)[F.col("__sdckit_pid")] if mapping else F.lit(0)
    return tagged.withColumn(ROW, (F.col("__sdckit_mid") + shift).cast("long")).drop(
        "__sdckit_pid", "__sdckit_mid"
    )


def collect(frame: Any, engine: str, columns: Sequence[str]) -> pl.DataFrame:
    """``columns`` and :data:`ROW` of every record, in memory, in file order (polars)."""
    cols = [*columns, ROW]
    if engine == "dask":
        out = pl.from_pandas(frame[cols].compute())
    elif engine == "spark":
        out = pl.DataFrame(pl.from_arrow(frame.select(*cols).toArrow()))
    else:  # (a polars DataFrame or LazyFrame)
        out = frame.lazy().select(cols).collect(engine="streaming")
    return out if out.get_column(ROW).is_sorted() else out.sort(ROW)


def native_table(table: pl.DataFrame, engine: str, like: Any) -> Any:
    """A small table computed in memory, as a frame of ``engine`` (to join to ``like``)."""
    if engine == "dask":
        import dask.dataframe as dd

        return dd.from_pandas(table.to_pandas(), npartitions=1)
    if engine == "spark":
        return like.sparkSession.createDataFrame(table.to_arrow())
    return table.lazy()


#: Records per part file of the streaming engine (and per sorted chunk of a shuffled write).
PART_ROWS = 4_000_000


def _sink_in_order(
    frame: pl.LazyFrame, order: np.ndarray, tmp: Path, staged: Path | None = None
) -> None:
    """Sink ``frame`` with its records in the order ``order`` (row indexes, first written
    first) in bounded memory: the records once to a staging file in file order, then one part
    file per :data:`PART_ROWS` positions, each a streaming join of the staging file to the
    rows of its positions, sorted (only that part is held in memory).  ``staged``: the
    records' file, already written by :func:`stage_records`."""
    stage = tmp / "_stage"
    records = staged
    if records is None:
        stage.mkdir()
        records = stage / "records.parquet"
        frame.sink_parquet(records)
    try:
        for c, start in enumerate(range(0, len(order), PART_ROWS)):
            rows = order[start : start + PART_ROWS]
            chosen = pl.LazyFrame(
                {ROW: rows, "__sdckit_pos": np.arange(start, start + len(rows), dtype=np.int64)}
            )
            part = (
                pl.scan_parquet(records)
                .join(chosen, on=ROW, how="inner")
                .sort("__sdckit_pos")
                .drop(ROW, "__sdckit_pos")
            )
            part.sink_parquet(tmp / f"part-{c:05d}.parquet")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def stage_records(frame: pl.LazyFrame, folder: Path) -> pl.LazyFrame:
    """``frame`` written once to ``folder/records.parquet`` (in its order) and read back
    (give that file to :func:`write_parts` as ``staged``).

    A protection job's lazy steps would otherwise run again for every pass that reads their
    result (the release check's counts, margins, comparisons and sample, then the write): with
    the records staged, each pass reads from the file only the columns it needs."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "records.parquet"
    frame.sink_parquet(path, row_group_size=1 << 20)
    return pl.scan_parquet(path)


def remove_output(path: Path) -> None:
    """An older output at ``path`` (a folder of part files or a file) removed, so that no
    earlier release stands as if it were this one."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def write_parts(
    frame: Any,
    engine: str,
    path: Path,
    order: np.ndarray | None = None,
    accept: Callable[[Path], bool] | None = None,
    staged: Path | None = None,
) -> Path | None:
    """Write ``frame`` (without :data:`ROW`) as Parquet part files in the directory ``path``.

    Atomic: the parts go to a temporary directory beside ``path``, renamed over it at the end;
    a failure leaves no half-written output (and an older output at ``path`` untouched until
    the new one is complete).  ``order`` (streaming engine only): the row indexes in the order
    to write (a shuffled release), written in bounded memory; Dask and Spark frames come
    sorted.  ``accept``: called with the complete temporary folder before it is renamed; when
    it returns False nothing is written, an older output at ``path`` is removed (it is not
    this release), and the result is None.  ``staged`` (streaming engine): the file of
    :func:`stage_records` that ``frame`` reads, used as the shuffled write's staging file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    try:
        if engine == "dask":
            frame.drop(columns=[ROW]).to_parquet(str(tmp), write_index=False)
        elif engine == "spark":
            frame.drop(ROW).write.mode("overwrite").parquet(str(tmp))
            for extra in [*tmp.glob(".*.crc"), *tmp.glob("_SUCCESS")]:  # Hadoop's marks
                extra.unlink()
        elif order is not None:
            tmp.mkdir()
            _sink_in_order(frame, order, tmp, staged)
        else:
            tmp.mkdir()
            frame.drop(ROW).sink_parquet(pl.PartitionBy(tmp, max_rows_per_file=PART_ROWS))
        if accept is not None and not accept(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
            remove_output(path)
            return None
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.{uuid.uuid4().hex}.old"
            path.rename(old)
        tmp.rename(path)
        if old is not None:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path
