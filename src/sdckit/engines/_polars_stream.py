"""The polars engines: in-memory (``engine="polars"``) and streaming (``engine="streaming"``).

Both run one lazy plan per pass over the data: the group-by to the finest table (collected: it is
small), then the join of the per-class figures back to the records, which stays lazy -- the
caller collects it, or it is written with ``sink_parquet`` and never held in memory.

On the streaming engine every pass runs in bounded memory.  The join keeps only the class table
while the records flow through.  polars' streaming group-by keeps the partial aggregates of
every morsel until the end, which grows with the records when the key combinations are many
(about 50 bytes a record with 7 keys: 1.6 GB a slice), so the group-by runs on slices of
:data:`CHUNK_ROWS` records (each a streaming query, a Parquet scan reading only its row
groups) and the partial class tables are merged as they come: the memory is that of one slice
plus the class table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.engines._classes import NW, WMIN, N, W
from sdckit.errors import ColumnError, DataError

__all__ = ["PolarsEngine"]

#: Records per slice of a streaming group-by (environment variable SDCKIT_STREAM_CHUNK_ROWS).
CHUNK_ROWS = 32_000_000


def chunk_rows() -> int:
    """Records per slice of a streaming group-by."""
    value = os.environ.get("SDCKIT_STREAM_CHUNK_ROWS")
    return max(int(value), 1) if value else CHUNK_ROWS


def normalised(name: str, dtype: Any) -> pl.Expr:
    """A key or sensitive value as the in-process encoding sees it.

    NaN is missing and -0.0 equals 0.0 in a float column; categorical values are their text.
    """
    expr = pl.col(name)
    if dtype.is_float():
        return (expr.fill_nan(None) + 0.0).alias(name)
    if dtype == pl.Categorical or isinstance(dtype, pl.Enum) or dtype == pl.Enum:
        return expr.cast(pl.String).alias(name)
    return expr


def _needs_normalising(dtype: Any) -> bool:
    return bool(
        dtype.is_float()
        or dtype == pl.Categorical
        or isinstance(dtype, pl.Enum)
        or dtype == pl.Enum
    )


class PolarsEngine:
    """Risk and tables on a polars LazyFrame, with the in-memory or the streaming engine."""

    def __init__(self, data: Any, streaming: bool) -> None:
        self.eager = isinstance(data, pl.DataFrame)
        if not self.eager and not streaming:
            data = data.collect(engine="in-memory")  # read once, as in memory it fits
        self.frame: pl.DataFrame | None = None if streaming else data
        self.lazy: pl.LazyFrame = data.lazy()
        self.streaming = streaming
        self.name = "streaming" if streaming else "polars"
        self.schema = self.lazy.collect_schema()

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names())

    @property
    def _engine(self) -> str:
        return "streaming" if self.streaming else "in-memory"

    def _collect(self, lf: pl.LazyFrame) -> pl.DataFrame:
        return lf.collect(engine=self._engine)  # type: ignore[arg-type]

    def _weight_expr(self, weight: str | None) -> pl.Expr:
        if weight is None:
            return pl.lit(1.0, pl.Float64)
        dtype = self.schema[weight]
        if not dtype.is_numeric():
            raise ColumnError(
                f"The weight column {weight!r} is not numeric (type {dtype}); convert it to "
                "numbers."
            )
        return pl.col(weight).cast(pl.Float64)

    # ------------------------------------------------------------------ risk
    def finest(self, groups: Sequence[str], weight: str | None) -> pl.DataFrame:
        """One row per combination of ``groups``: records, weights present, weight sum, min."""
        by = [normalised(g, self.schema[g]) for g in groups]
        w = self._weight_expr(weight)
        aggs = [pl.len().cast(pl.Int64).alias(N)]
        if weight is None:
            aggs += [pl.len().cast(pl.Int64).alias(NW), pl.len().cast(pl.Float64).alias(W)]
            aggs.append(pl.lit(1.0).alias(WMIN))
        else:
            aggs += [
                w.count().cast(pl.Int64).alias(NW),
                w.sum().alias(W),
                w.min().alias(WMIN),
            ]
        names = list(groups)
        return self._grouped(
            self.lazy,
            lambda lf: lf.group_by(by).agg(aggs),
            lambda parts: (
                pl.concat(parts)
                .group_by(names)
                .agg(pl.col(N).sum(), pl.col(NW).sum(), pl.col(W).sum(), pl.col(WMIN).min())
            ),
        )[0]

    def _slices(self, lf: pl.LazyFrame, size: int) -> list[pl.LazyFrame]:
        """``lf`` in slices of ``size`` records (one slice in memory at a time)."""
        if not self.streaming:
            return [lf]
        rows = int(lf.select(pl.len()).collect(engine="streaming").item())
        if rows <= size:
            return [lf]
        return [lf.slice(offset, size) for offset in range(0, rows, size)]

    def _grouped(
        self,
        lf: pl.LazyFrame,
        query: Callable[[pl.LazyFrame], Any],
        merge: Callable[[list[pl.DataFrame]], pl.DataFrame],
        *more: tuple[Callable[[pl.LazyFrame], Any], Callable[[list[pl.DataFrame]], pl.DataFrame]],
        size: int | None = None,
    ) -> list[pl.DataFrame]:
        """Group-by queries run slice by slice, their partial results merged as they come."""
        plans = [(query, merge), *more]
        size = chunk_rows() if size is None else size
        slices = self._slices(lf, size)
        if len(slices) == 1:
            return [self._collect(q(slices[0])) for q, _ in plans]
        limit = size
        partial: list[list[pl.DataFrame]] = [[] for _ in plans]
        sizes = [0 for _ in plans]
        for piece in slices:
            frames = pl.collect_all([q(piece) for q, _ in plans], engine="streaming")
            for i, frame in enumerate(frames):
                partial[i].append(frame)
                sizes[i] += frame.height
                # merge when the partial results outgrow a slice and twice the merged table
                if len(partial[i]) > 1 and sizes[i] > max(2 * partial[i][0].height, limit):
                    partial[i] = [plans[i][1](partial[i])]
                    sizes[i] = partial[i][0].height
        return [m(p) if len(p) > 1 else p[0] for (_, m), p in zip(plans, partial, strict=True)]

    def attach(
        self, finest: pl.DataFrame, keys: Sequence[str], first: np.ndarray, columns: dict
    ) -> Any:
        """The records with the per-class columns joined on the keys (lazy)."""
        clash = [c for c in columns if c in self.schema]
        if clash:
            raise ColumnError(
                f"The data already has a column named {clash[0]!r}, which the per-record result "
                "adds; rename it first."
            )
        if self.frame is None:
            from sdckit.engines._lookup import ClassLookup, packed_codes

            packed = packed_codes(self.schema, keys, finest.select(keys)[first])
            if packed is not None:
                # a hash lookup per batch of records instead of a join (see _lookup)
                code, class_codes = packed
                lookup = ClassLookup(class_codes, columns)
                per_class = code.map_batches(lookup, return_dtype=lookup.dtype, is_elementwise=True)
                return self.lazy.with_columns(per_class.alias("__sdc_class")).unnest("__sdc_class")
        cls = finest.select(keys)[first].with_columns(
            pl.Series(name, values) for name, values in columns.items()
        )
        left: Any = self.lazy if self.frame is None else self.frame
        on: list[str] = []
        temps: list[str] = []
        renames = {}
        for j, k in enumerate(keys):
            if _needs_normalising(self.schema[k]):
                temp = f"__sdc_join{j}"
                left = left.with_columns(normalised(k, self.schema[k]).alias(temp))
                renames[k] = temp
                temps.append(temp)
                on.append(temp)
            else:
                on.append(k)
        cls = cls.rename(renames)
        # null-safe equality only where a key has missing values (it costs time in the join)
        nulls = any(finest.get_column(k).null_count() for k in keys)
        if self.frame is not None:  # in memory the eager join is the faster one
            out = left.join(cls, on=on, how="left", nulls_equal=nulls, maintain_order="left")
            return out.drop(temps).lazy()
        out = left.join(
            cls.lazy(), on=on, how="left", nulls_equal=nulls, maintain_order="left"
        ).drop(temps)
        return out

    def household(self, records: pl.LazyFrame, household: str) -> tuple[dict, Any]:
        """Household risk: figures, and the records with a ``household_risk`` column."""
        if "household_risk" in self.schema:
            raise ColumnError(
                "The data already has a column named 'household_risk', which the per-record "
                "result adds; rename it first."
            )
        h = pl.col(household)
        if self.schema[household].is_float():
            h = h.fill_nan(None)
        table = self._collect(
            records.group_by(h.alias(household)).agg(
                pl.col("risk").clip(upper_bound=1.0).neg().log1p().sum().alias("__sdc_s"),
                pl.len().alias("__sdc_size"),
            )
        )
        check_households(table.get_column(household).null_count(), household)
        s = table.get_column("__sdc_s").to_numpy()
        size = table.get_column("__sdc_size").to_numpy().astype(np.float64)
        with np.errstate(invalid="ignore"):
            risk_h = -np.expm1(s)
        table = table.select(household).with_columns(pl.Series("household_risk", risk_h))
        figures = household_figures(size, risk_h)
        out = records.join(table.lazy(), on=household, how="left", maintain_order="left")
        return figures, out

    def result(self, records: pl.LazyFrame) -> Any:
        """The per-record result in the caller's form (a frame for a frame, else lazy)."""
        return self._collect(records) if self.eager else records

    def write(self, records: pl.LazyFrame, output: Path) -> None:
        output.parent.mkdir(parents=True, exist_ok=True)
        if self.streaming:
            records.sink_parquet(output, engine="streaming")
        else:  # in memory, written at once (faster than a sink on the in-memory engine)
            self._collect(records).write_parquet(output)

    # ------------------------------------------------------------------ tables
    def leaf_cells(
        self, dims: Sequence[str], value: str | None, weight: str | None, n_top: int
    ) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        """Aggregates per leaf cell, and the largest contributions in long form."""
        from sdckit.engines._tables import AGGS, TOPV, reduce_partials

        w = self._weight_expr(weight)
        if value is None:
            x = pl.lit(1.0, pl.Float64)
        else:
            dtype = self.schema[value]
            if not dtype.is_numeric():
                raise ColumnError(
                    f"The numeric variable {value!r} is not numeric (type {dtype}); convert it "
                    "to numbers or declare it a key variable."
                )
            x = pl.col(value).cast(pl.Float64)
        by = [normalised(d, self.schema[d]) for d in dims]
        frame = self.lazy.select(*by, x.alias("__sdc_x"), w.alias("__sdc_w"))
        aggs = [
            pl.len().cast(pl.Int64).alias(N),
            pl.col("__sdc_x").count().cast(pl.Int64).alias(AGGS["nx"]),
            (pl.col("__sdc_w") * pl.col("__sdc_x")).sum().alias(AGGS["sx"]),
            pl.col("__sdc_w").sum().alias(W),
            pl.col("__sdc_w").count().cast(pl.Int64).alias(NW),
            pl.col("__sdc_w").min().alias(WMIN),
        ]
        wx = (pl.col("__sdc_w") * pl.col("__sdc_x")).alias(TOPV)
        names = list(dims)

        def merge_cells(parts: list[pl.DataFrame]) -> pl.DataFrame:
            return reduce_partials(parts, None, names, 0)[0]

        def merge_tops(parts: list[pl.DataFrame]) -> pl.DataFrame:
            best = pl.concat(parts).group_by(names).agg(pl.col(TOPV).top_k(n_top))
            return best.explode(TOPV)

        cells_query = (lambda lf: lf.group_by(names).agg(aggs), merge_cells)
        if n_top == 0:
            return self._grouped(frame, *cells_query)[0], None
        # the largest values of a cell: a group-by keeping every value of the cell (about 120
        # bytes a record), bounded on the streaming engine by slices of an eighth of the size
        tops_query = (
            lambda lf: lf.group_by(names).agg(wx.top_k(n_top)).explode(TOPV),
            merge_tops,
        )
        cells, tops = self._grouped(frame, *cells_query, tops_query, size=max(chunk_rows() // 8, 1))
        return cells, tops


def check_households(n_missing: int, household: str) -> None:
    """A DataError when household ids are missing (as :class:`~sdckit.Microdata` gives)."""
    if n_missing:
        raise DataError(
            f"The household column {household!r} has missing values; every record needs a "
            "household value (fill them or drop those records)."
        )


def household_figures(size: np.ndarray, risk_h: np.ndarray) -> dict[str, float]:
    """Household-level figures from each household's size and risk."""
    er = float(np.dot(size, risk_h))
    return {
        "household_expected_reidentifications": er,
        "household_risk_pct": 100.0 * er / float(size.sum()),
    }
