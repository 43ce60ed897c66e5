"""The Spark engine: the group-by and the joins run on Spark, the class figures in numpy.

PySpark is an optional dependency (``pip install 'sdckit[spark]'``, and a Java runtime),
imported only here, inside the functions that use it.  The finest table is a Spark group-by
(missing values are groups of their own) brought home through Arrow; the per-class figures go
back as a Spark DataFrame built from the same Arrow columns (so the key types are Spark's own)
and are joined to the records with null-safe equality on the keys.  Household risk is a second
group-by and join on Spark.  The result is the caller's (lazy) Spark DataFrame, or partitioned
Parquet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from sdckit.engines._classes import NW, WMIN, N, W
from sdckit.errors import ColumnError

__all__ = ["SparkEngine"]

#: Class tables up to this many rows are broadcast to every executor for the join back.
BROADCAST_ROWS = 2_000_000


def _to_arrow(frame: Any) -> pa.Table:
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)  # pragma: no cover


class SparkEngine:
    """Risk and tables on a PySpark DataFrame."""

    name = "spark"

    def __init__(self, data: Any) -> None:
        self.sdf = data
        self.spark = data.sparkSession
        self.types = {f.name: f.dataType for f in data.schema.fields}
        self._finest_arrow: pa.Table | None = None

    @property
    def columns(self) -> list[str]:
        return list(self.sdf.columns)

    def _norm(self, name: str, frame: Any = None) -> Any:
        """A key value as the in-process encoding sees it (NaN is missing, -0.0 is 0.0)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DoubleType, FloatType

        col = F.col(name) if frame is None else frame[name]
        if isinstance(self.types[name], DoubleType | FloatType):
            return F.when(F.isnan(col), F.lit(None)).otherwise(col + F.lit(0.0))
        return col

    def _numeric(self, name: str | None, role: str) -> None:
        from pyspark.sql.types import NumericType

        if name is not None and not isinstance(self.types[name], NumericType):
            raise ColumnError(
                f"The {role} column {name!r} is not numeric (type "
                f"{self.types[name].simpleString()}); convert it to numbers."
            )

    def _weight(self, weight: str | None) -> Any:
        from pyspark.sql import functions as F

        if weight is None:
            return F.lit(1.0)
        w = F.col(weight).cast("double")
        return F.when(F.isnan(w), F.lit(None)).otherwise(w)

    # ------------------------------------------------------------------ risk
    def finest(self, groups: Sequence[str], weight: str | None) -> pl.DataFrame:
        from pyspark.sql import functions as F

        self._numeric(weight, "weight")
        w = self._weight(weight)
        grouped = self.sdf.groupBy(*[self._norm(g).alias(g) for g in groups]).agg(
            F.count(F.lit(1)).alias(N),
            F.count(w).alias(NW),
            F.sum(w).alias(W),
            F.min(w).alias(WMIN),
        )
        arrow = _to_arrow(grouped)
        self._finest_arrow = arrow
        table = pl.from_arrow(arrow)
        return table.with_columns(  # type: ignore[union-attr]
            pl.col(N).cast(pl.Int64), pl.col(NW).cast(pl.Int64), pl.col(W).fill_null(0.0)
        )

    def attach(
        self, finest: pl.DataFrame, keys: Sequence[str], first: np.ndarray, columns: dict
    ) -> Any:
        from pyspark.sql import functions as F

        clash = [c for c in columns if c in self.columns]
        if clash:
            raise ColumnError(
                f"The data already has a column named {clash[0]!r}, which the per-record result "
                "adds; rename it first."
            )
        if self._finest_arrow is None:  # pragma: no cover - finest() runs first
            raise RuntimeError("finest() must run before attach()")
        temps = [f"__sdc_join{j}" for j in range(len(keys))]
        arrow = self._finest_arrow.select(list(keys)).take(pa.array(first))
        arrow = arrow.rename_columns(temps)
        for name, values in columns.items():
            arrow = arrow.append_column(name, pa.array(np.asarray(values, dtype=np.float64)))
        classes = self.spark.createDataFrame(arrow)
        if arrow.num_rows <= BROADCAST_ROWS:
            classes = F.broadcast(classes)
        cond = [
            self._norm(k, self.sdf).eqNullSafe(classes[t]) for k, t in zip(keys, temps, strict=True)
        ]
        joined = self.sdf.join(classes, on=cond, how="left")
        return joined.select(*[self.sdf[c] for c in self.columns], *columns)

    def household(self, records: Any, household: str) -> tuple[dict, Any]:
        from pyspark.sql import functions as F

        from sdckit.engines._polars_stream import check_households

        if "household_risk" in self.columns:
            raise ColumnError(
                "The data already has a column named 'household_risk', which the per-record "
                "result adds; rename it first."
            )
        risk = F.col("risk")
        log_safe = F.when(risk >= 1.0, F.lit(float("-inf"))).otherwise(F.log1p(-risk))
        per_house = (
            records.groupBy(household)
            .agg(F.sum(log_safe).alias("__sdc_s"), F.count(F.lit(1)).alias("__sdc_size"))
            .withColumn("household_risk", -F.expm1(F.col("__sdc_s")))
        )
        totals = per_house.agg(
            F.sum(F.col("__sdc_size") * F.col("household_risk")).alias("er"),
            F.sum("__sdc_size").alias("records"),
            F.sum(F.when(F.col(household).isNull(), 1).otherwise(0)).alias("missing"),
        ).collect()[0]
        check_households(int(totals["missing"] or 0), household)
        er = float(totals["er"])
        figures = {
            "household_expected_reidentifications": er,
            "household_risk_pct": 100.0 * er / float(totals["records"]),
        }
        out = records.join(per_house.select(household, "household_risk"), on=household, how="left")
        return figures, out

    def result(self, records: Any) -> Any:
        return records

    def write(self, records: Any, output: Path) -> None:
        records.write.mode("errorifexists").parquet(str(output))

    # ------------------------------------------------------------------ tables
    def leaf_cells(
        self, dims: Sequence[str], value: str | None, weight: str | None, n_top: int
    ) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        from sdckit.engines._tables import AGGS, TOPV

        self._numeric(weight, "weight")
        self._numeric(value, "numeric")
        w = self._weight(weight)
        if value is None:
            x = F.lit(1.0)
        else:
            x = F.col(value).cast("double")
            x = F.when(F.isnan(x), F.lit(None)).otherwise(x)
        frame = self.sdf.select(
            *[self._norm(d).alias(d) for d in dims], x.alias("__sdc_x"), w.alias("__sdc_w")
        ).withColumn(TOPV, F.col("__sdc_w") * F.col("__sdc_x"))
        cells = frame.groupBy(*dims).agg(
            F.count(F.lit(1)).alias(N),
            F.count("__sdc_x").alias(AGGS["nx"]),
            F.sum(TOPV).alias(AGGS["sx"]),
            F.sum("__sdc_w").alias(W),
            F.count("__sdc_w").alias(NW),
            F.min("__sdc_w").alias(WMIN),
        )
        leaf = pl.from_arrow(_to_arrow(cells)).with_columns(  # type: ignore[union-attr]
            pl.col(N).cast(pl.Int64),
            pl.col(NW).cast(pl.Int64),
            pl.col(AGGS["nx"]).cast(pl.Int64),
            pl.col(AGGS["sx"]).fill_null(0.0),
        )
        if n_top == 0:
            return leaf, None
        order = Window.partitionBy(*dims).orderBy(F.col(TOPV).desc())
        ranked = frame.withColumn("__sdc_rank", F.row_number().over(order))
        tops = ranked.where(F.col("__sdc_rank") <= n_top).select(*dims, TOPV)
        return leaf, pl.from_arrow(_to_arrow(tops))  # type: ignore[return-value]
