"""The aggregates of the release check on an engine: counts, margins, moments, a sample.

Each engine computes them where the records are and returns small polars frames: the number
of records, one frequency table per variable, the sums that give means, variances and
correlations, the number of values each variable changed between the original and the
released file (records matched by the row index column), and the records of a seeded sample.
Nothing here collects every record.

The sample is drawn by a seeded hash of an integer column (the row index, or the household id
so that households stay whole): a record is in it when ``(a * (h mod P) + b) mod P`` is below
``fraction * P``, with ``P = 2**31 - 1`` and ``a``, ``b`` drawn from the seed.  The products
stay below ``2**62``, so every engine computes the same integers: the same seed gives the same
sample on polars, Dask and Spark.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "PRIME",
    "ROW",
    "SampleHash",
    "engine_aggregates",
    "frame_columns",
    "is_integer",
    "is_numeric",
]

#: The global row index both frames carry: ``0..n-1``, the same record in both.
ROW = "__sdckit_row"

#: Records per slice when the polars streaming engine compares the two files record by record
#: (environment variable SDCKIT_CHANGED_ROWS): two slices of the compared columns in memory.
CHANGED_ROWS = 1_000_000


def changed_rows() -> int:
    """Records per slice of the record-by-record comparison on the streaming engine."""
    value = os.environ.get("SDCKIT_CHANGED_ROWS")
    return int(value) if value else CHANGED_ROWS


#: The modulus of the sample hash (a prime below 2**31).
PRIME = 2_147_483_647


class SampleHash:
    """The seeded hash that draws the sample (see the module docstring).

    Examples
    --------
    >>> h = SampleHash(a=3, b=5, threshold=PRIME)
    >>> h.keep(np.array([0, 1, -1]))
    array([ True,  True,  True])
    """

    def __init__(self, a: int, b: int, threshold: int) -> None:
        self.a, self.b, self.threshold = int(a), int(b), int(threshold)

    def keep(self, h: np.ndarray) -> np.ndarray:
        """Whether the records with these integer ids are in the sample (numpy)."""
        h = np.asarray(h, dtype=np.int64)
        u = ((h % PRIME + PRIME) % PRIME * self.a + self.b) % PRIME
        return u < self.threshold

    def polars(self, column: str) -> pl.Expr:
        h = pl.col(column).cast(pl.Int64)
        return ((h % PRIME + PRIME) % PRIME * self.a + self.b) % PRIME < self.threshold

    def spark(self, column: str) -> Any:
        from pyspark.sql import functions as F

        h = F.col(column).cast("long")
        u = (((h % PRIME) + PRIME) % PRIME * F.lit(self.a) + F.lit(self.b)) % PRIME
        return u < F.lit(self.threshold)


def _as_text(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """The value column as text (original and released values compared as shown)."""
    s = frame.get_column(column)
    if s.dtype.is_float():
        s = s.fill_nan(None)
    return frame.with_columns(s.cast(pl.String).alias("value")).select("value", "count")


# ------------------------------------------------------------------------------ polars
class _Polars:
    def __init__(self, streaming: bool) -> None:
        self.engine = "streaming" if streaming else "in-memory"

    def _lazy(self, frame: Any) -> pl.LazyFrame:
        return frame.lazy()

    def count(self, frame: Any) -> int:
        out = self._lazy(frame).select(pl.len()).collect(engine=self.engine)  # type: ignore[arg-type]
        return int(out.item())

    def margins(self, frame: Any, columns: Sequence[str]) -> dict[str, pl.DataFrame]:
        lf = self._lazy(frame)
        queries = [lf.group_by(c).agg(pl.len().cast(pl.Int64).alias("count")) for c in columns]
        frames = pl.collect_all(queries, engine=self.engine)  # type: ignore[arg-type]
        return {c: _as_text(f, c) for c, f in zip(columns, frames, strict=True)}

    def moments(self, frame: Any, numeric: Sequence[str]) -> dict[str, float]:
        values = {x: pl.col(x).cast(pl.Float64).fill_nan(None) for x in numeric}
        complete = pl.all_horizontal([v.is_not_null() for v in values.values()])
        exprs = []
        for x, v in values.items():
            exprs += [v.count().cast(pl.Float64).alias(f"{x}||n"), v.sum().alias(f"{x}||s"),
                      (v * v).sum().alias(f"{x}||ss")]  # fmt: skip
        exprs.append(complete.sum().cast(pl.Float64).alias("||nc"))
        for i, (x, v) in enumerate(values.items()):
            exprs += [v.filter(complete).sum().alias(f"{x}||cs"),
                      (v * v).filter(complete).sum().alias(f"{x}||css")]  # fmt: skip
            for y in numeric[i + 1 :]:
                exprs.append((v * values[y]).filter(complete).sum().alias(f"{x}|{y}||cxy"))
        out = self._lazy(frame).select(exprs).collect(engine=self.engine)  # type: ignore[arg-type]
        return {k: float(v or 0.0) for k, v in out.row(0, named=True).items()}

    def changed(self, original: Any, released: Any, columns: Sequence[str]) -> pl.DataFrame:
        a = self._lazy(original).select(ROW, *columns)
        b = self._lazy(released).select(
            pl.col(ROW).alias("__sdc_row_r"), *(pl.col(c).alias(f"{c}__r") for c in columns)
        )
        # files written in row order line up: compared slice by slice (a Parquet scan reads
        # only the row groups of its slice), each slice checked to line up, no join
        n = self.count(a)
        size = n if self.engine == "in-memory" else max(changed_rows(), 1)
        parts = []
        for offset in range(0, max(n, 1), size):
            left, right = pl.collect_all(
                [a.slice(offset, size), b.slice(offset, size)],
                engine=self.engine,  # type: ignore[arg-type]
            )
            if not left.get_column(ROW).equals(right.get_column("__sdc_row_r"), check_names=False):
                joined = a.join(b, left_on=ROW, right_on="__sdc_row_r", how="inner")
                exprs = _change_exprs(columns, joined.collect_schema())
                return joined.select(exprs).collect(engine=self.engine)  # type: ignore[arg-type]
            both = pl.concat([left, right], how="horizontal")
            parts.append(both.select(_change_exprs(columns, both.schema)))
            del left, right, both
        return pl.concat(parts).sum()

    def attach(self, original: Any, released: Any, column: str, name: str) -> Any:
        """The released records with the original's ``column`` as ``name`` (joined on the
        row index, lazily)."""
        right = self._lazy(original).select(ROW, pl.col(column).alias(name))
        return self._lazy(released).join(right, on=ROW, how="left", maintain_order="left")

    def sample(self, frame: Any, column: str, hashing: SampleHash) -> pl.DataFrame:
        lf = self._lazy(frame).filter(hashing.polars(column))
        return lf.collect(engine=self.engine)  # type: ignore[arg-type]

    def row_range(self, frame: Any) -> tuple[int, int]:
        """The smallest and the largest row index."""
        lf = self._lazy(frame).select(pl.col(ROW).min().alias("a"), pl.col(ROW).max().alias("b"))
        a, b = lf.collect(engine=self.engine).row(0)  # type: ignore[arg-type]
        return int(a), int(b)

    def rows(self, frame: Any, rows: np.ndarray) -> pl.DataFrame:
        """The records whose row index is in ``rows``."""
        lf = self._lazy(frame).filter(pl.col(ROW).is_in(pl.Series(rows, dtype=pl.Int64).implode()))
        return lf.collect(engine=self.engine)  # type: ignore[arg-type]


def _change_exprs(columns: Sequence[str], schema: Any) -> list[pl.Expr]:
    """Values changed and suppressed per column (``c`` against ``c__r``); values of two types
    (a number released as a band) are compared as text, numbers of two types as floats (an
    integer column with missing values is float in pandas), NaN as missing."""
    out = []
    for c in columns:
        a, b = pl.col(c), pl.col(f"{c}__r")
        ta, tb = schema[c], schema[f"{c}__r"]
        if ta.is_float():
            a = a.fill_nan(None)
        if tb.is_float():
            b = b.fill_nan(None)
        if ta != tb and ta.is_numeric() and tb.is_numeric():
            a, b = a.cast(pl.Float64), b.cast(pl.Float64)
        elif ta != tb:
            a, b = a.cast(pl.String), b.cast(pl.String)
        out += [
            a.ne_missing(b).sum().cast(pl.Int64).alias(f"{c}||changed"),
            (b.is_null() & a.is_not_null()).sum().cast(pl.Int64).alias(f"{c}||suppressed"),
        ]
    return out


def _sum_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in rows:
        for name, value in row.items():
            out[name] = out.get(name, 0.0) + float(value or 0.0)
    return out


def _merge_margins(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts).group_by("value").agg(pl.col("count").sum())


# ------------------------------------------------------------------------------ Dask
def _part_polars(part: Any) -> pl.DataFrame:
    return pl.from_pandas(part, nan_to_null=True)


def _margins_part(part: Any, columns: Sequence[str]) -> list[pl.DataFrame]:
    frame = _part_polars(part)
    return [
        _as_text(frame.group_by(c).agg(pl.len().cast(pl.Int64).alias("count")), c) for c in columns
    ]


def _moments_part(part: Any, numeric: Sequence[str]) -> dict[str, float]:
    frame = _part_polars(part).with_columns(pl.col(x).cast(pl.Float64) for x in numeric)
    return _Polars(streaming=False).moments(frame, numeric)


def _changed_part(part: Any, columns: Sequence[str]) -> dict[str, float]:
    frame = _part_polars(part)
    return frame.select(_change_exprs(columns, frame.schema)).row(0, named=True)


def _rows_part(part: Any, rows: np.ndarray) -> Any:
    return part[part[ROW].isin(rows)]


def _sample_part(part: Any, column: str, hashing: SampleHash) -> Any:
    h = part[column].to_numpy(dtype=np.int64)
    return part[hashing.keep(h)]


class _Dask:
    def count(self, frame: Any) -> int:
        return int(frame.shape[0].compute())

    def margins(self, frame: Any, columns: Sequence[str]) -> dict[str, pl.DataFrame]:
        import dask

        parts = dask.compute(
            *[
                dask.delayed(_margins_part)(p, list(columns))
                for p in frame[list(columns)].to_delayed()
            ]
        )
        return {c: _merge_margins([p[i] for p in parts]) for i, c in enumerate(columns)}

    def moments(self, frame: Any, numeric: Sequence[str]) -> dict[str, float]:
        import dask

        parts = [
            dask.delayed(_moments_part)(p, list(numeric)) for p in frame[list(numeric)].to_delayed()
        ]
        rows = dask.compute(*parts)
        return _sum_rows(list(rows))

    def changed(self, original: Any, released: Any, columns: Sequence[str]) -> pl.DataFrame:
        import dask

        right = released[[ROW, *columns]].rename(columns={c: f"{c}__r" for c in columns})
        joined = original[[ROW, *columns]].merge(right, on=ROW, how="inner")
        rows = dask.compute(
            *[dask.delayed(_changed_part)(p, list(columns)) for p in joined.to_delayed()]
        )
        summed = _sum_rows(list(rows))
        return pl.DataFrame({k: [int(v)] for k, v in summed.items()})

    def attach(self, original: Any, released: Any, column: str, name: str) -> Any:
        right = original[[ROW, column]].rename(columns={column: name})
        return released.merge(right, on=ROW, how="left")

    def sample(self, frame: Any, column: str, hashing: SampleHash) -> pl.DataFrame:
        import dask
        import pandas as pd

        parts = dask.compute(
            *[dask.delayed(_sample_part)(p, column, hashing) for p in frame.to_delayed()]
        )
        return _part_polars(pd.concat(parts).reset_index(drop=True))

    def row_range(self, frame: Any) -> tuple[int, int]:
        """The smallest and the largest row index."""
        import dask

        a, b = dask.compute(frame[ROW].min(), frame[ROW].max())
        return int(a), int(b)

    def rows(self, frame: Any, rows: np.ndarray) -> pl.DataFrame:
        """The records whose row index is in ``rows``."""
        import dask
        import pandas as pd

        parts = dask.compute(*[dask.delayed(_rows_part)(p, rows) for p in frame.to_delayed()])
        return _part_polars(pd.concat(parts).reset_index(drop=True))


# ------------------------------------------------------------------------------ Spark
def _spark_value(sdf: Any, name: str) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    col = F.col(name)
    if isinstance(sdf.schema[name].dataType, DoubleType | FloatType):
        return F.when(F.isnan(col), F.lit(None)).otherwise(col)
    return col


def _arrow_polars(sdf: Any) -> pl.DataFrame:
    table = sdf.toArrow() if hasattr(sdf, "toArrow") else None
    if table is None:  # pragma: no cover - PySpark < 4
        import pyarrow as pa

        table = pa.Table.from_pandas(sdf.toPandas(), preserve_index=False)
    return pl.from_arrow(table)  # type: ignore[return-value]


class _Spark:
    def count(self, frame: Any) -> int:
        return int(frame.count())

    def margins(self, frame: Any, columns: Sequence[str]) -> dict[str, pl.DataFrame]:
        from pyspark.sql import functions as F

        if not columns:
            return {}
        values = frame.select(*(_spark_value(frame, c).alias(c) for c in columns))
        if not hasattr(values, "groupingSets"):  # pragma: no cover - PySpark < 4: a job each
            out = {}
            for c in columns:
                grouped = values.groupBy(c).agg(F.count("*").alias("count"))
                out[c] = _as_text(
                    _arrow_polars(grouped).with_columns(pl.col("count").cast(pl.Int64)), c
                )
            return out
        # one job for every margin: a grouping set per column; grouping_id() tells the sets
        # apart (a bit per column left out, the first column the highest bit)
        grouped = values.groupingSets([[c] for c in columns], *columns).agg(
            F.count("*").alias("count"), F.grouping_id().alias("__sdc_gid")
        )
        table = _arrow_polars(grouped).with_columns(pl.col("count").cast(pl.Int64))
        full = (1 << len(columns)) - 1
        out = {}
        for i, c in enumerate(columns):
            gid = full - (1 << (len(columns) - 1 - i))
            out[c] = _as_text(table.filter(pl.col("__sdc_gid") == gid).select(c, "count"), c)
        return out

    def moments(self, frame: Any, numeric: Sequence[str]) -> dict[str, float]:
        from pyspark.sql import functions as F

        values = {x: _spark_value(frame, x).cast("double") for x in numeric}
        complete = F.lit(True)
        for v in values.values():
            complete = complete & v.isNotNull()
        exprs = []
        for x, v in values.items():
            exprs += [F.count(v).cast("double").alias(f"{x}||n"), F.sum(v).alias(f"{x}||s"),
                      F.sum(v * v).alias(f"{x}||ss")]  # fmt: skip
        exprs.append(F.sum(F.when(complete, 1.0).otherwise(0.0)).alias("||nc"))
        for i, (x, v) in enumerate(values.items()):
            exprs += [F.sum(F.when(complete, v)).alias(f"{x}||cs"),
                      F.sum(F.when(complete, v * v)).alias(f"{x}||css")]  # fmt: skip
            for y in numeric[i + 1 :]:
                exprs.append(F.sum(F.when(complete, v * values[y])).alias(f"{x}|{y}||cxy"))
        row = frame.agg(*exprs).collect()[0].asDict()
        return {k: float(v or 0.0) for k, v in row.items()}

    def changed(self, original: Any, released: Any, columns: Sequence[str]) -> pl.DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.types import NumericType

        a = original.select(ROW, *(_spark_value(original, c).alias(c) for c in columns))
        b = released.select(
            F.col(ROW).alias("__sdc_row_r"),
            *(_spark_value(released, c).alias(f"{c}__r") for c in columns),
        )
        joined = a.join(b, a[ROW] == b["__sdc_row_r"], "inner")
        exprs = []
        types = {f.name: f.dataType for f in joined.schema.fields}
        for c in columns:
            x, y = F.col(c), F.col(f"{c}__r")
            tx, ty = types[c], types[f"{c}__r"]
            if tx != ty and isinstance(tx, NumericType) and isinstance(ty, NumericType):
                x, y = x.cast("double"), y.cast("double")
            elif tx != ty:
                x, y = x.cast("string"), y.cast("string")
            same = x.eqNullSafe(y)
            exprs += [
                F.sum(F.when(same, 0).otherwise(1)).cast("long").alias(f"{c}||changed"),
                F.sum(F.when(y.isNull() & x.isNotNull(), 1).otherwise(0))
                .cast("long")
                .alias(f"{c}||suppressed"),
            ]
        row = joined.agg(*exprs).collect()[0].asDict()
        return pl.DataFrame({k: [int(v or 0)] for k, v in row.items()})

    def attach(self, original: Any, released: Any, column: str, name: str) -> Any:
        from pyspark.sql import functions as F

        right = original.select(F.col(ROW), F.col(column).alias(name))
        return released.join(right, on=ROW, how="left")

    def sample(self, frame: Any, column: str, hashing: SampleHash) -> pl.DataFrame:
        return _arrow_polars(frame.filter(hashing.spark(column)))

    def row_range(self, frame: Any) -> tuple[int, int]:
        """The smallest and the largest row index."""
        from pyspark.sql import functions as F

        a, b = frame.agg(F.min(ROW), F.max(ROW)).collect()[0]
        return int(a), int(b)

    def rows(self, frame: Any, rows: np.ndarray) -> pl.DataFrame:
        """The records whose row index is in ``rows`` (a broadcast join on the index)."""
        from pyspark.sql import functions as F

        wanted = frame.sparkSession.createDataFrame([(int(r),) for r in rows], [ROW])
        return _arrow_polars(frame.join(F.broadcast(wanted), on=ROW, how="inner"))


def engine_aggregates(engine: str) -> Any:
    """The aggregates of ``engine`` (``"polars"``, ``"streaming"``, ``"dask"``, ``"spark"``)."""
    if engine == "dask":
        return _Dask()
    if engine == "spark":
        return _Spark()
    return _Polars(streaming=engine == "streaming")


def frame_columns(frame: Any, engine: str) -> list[str]:
    """The column names of an engine's frame."""
    if isinstance(frame, pl.LazyFrame):
        return list(frame.collect_schema().names())
    return [str(c) for c in frame.columns]


def is_numeric(frame: Any, engine: str, column: str) -> bool:
    """Whether a column of an engine's frame holds numbers."""
    if engine == "dask":
        import pandas as pd

        return bool(pd.api.types.is_numeric_dtype(frame.dtypes[column]))
    if engine == "spark":
        from pyspark.sql.types import NumericType

        return isinstance(frame.schema[column].dataType, NumericType)
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    return bool(schema[column].is_numeric())


def is_integer(frame: Any, engine: str, column: str) -> bool:
    """Whether a column of an engine's frame holds integers (the sample hash reads them)."""
    if engine == "dask":
        import pandas as pd

        return bool(pd.api.types.is_integer_dtype(frame.dtypes[column]))
    if engine == "spark":
        from pyspark.sql.types import IntegralType

        return isinstance(frame.schema[column].dataType, IntegralType)
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    return bool(schema[column].is_integer())
