"""The Dask engine: the group-by and the join back run on Dask, the class figures in numpy.

Dask is an optional dependency (``pip install 'sdckit[dask]'``), imported only here, inside the
functions that use it.  The finest table comes from Dask's own group-by (a tree reduction over
the partitions, missing values kept as groups); the per-class figures are merged back into
every partition with pandas (the class table travels once, as one task), keeping each
partition's rows and index; the result is a Dask DataFrame, or partitioned Parquet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.engines._classes import NW, WMIN, N, W
from sdckit.errors import ColumnError

__all__ = ["DaskEngine"]


def _is_float(dtype: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_float_dtype(dtype))


def _normalise(series: Any) -> Any:
    """A key value as the in-process encoding sees it (-0.0 is 0.0; categories are values)."""
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.astype(object)
    if _is_float(series.dtype):
        return series + 0.0
    return series


def _prepare(part: Any, groups: Sequence[str], weight: str | None, value: str | None) -> Any:
    import pandas as pd

    cols = {g: _normalise(part[g]) for g in groups}
    w = (
        pd.Series(np.ones(len(part)), index=part.index)
        if weight is None
        else part[weight].astype("float64")
    )
    cols["__sdc_w"] = w
    if value is not None:
        cols["__sdc_x"] = part[value].astype("float64")
    return pd.DataFrame(cols, index=part.index)


def _merge(part: Any, classes: Any, keys: Sequence[str]) -> Any:
    """``part`` with the class columns merged on ``keys`` (rows, order and index kept)."""
    import pandas as pd

    temps = [f"__sdc_join{j}" for j in range(len(keys))]
    left = pd.DataFrame(
        {t: _normalise(part[k]).to_numpy() for t, k in zip(temps, keys, strict=True)}
    )
    right = classes.rename(columns=dict(zip(keys, temps, strict=True)))
    merged = left.merge(right, on=temps, how="left", sort=False)
    out = part.copy()
    for name in classes.columns:
        if name not in keys:
            out[name] = merged[name].to_numpy()
    return out


def _leaf_part(
    part: Any, dims: Sequence[str], value: str | None, weight: str | None, n_top: int
) -> tuple[Any, Any]:
    """Leaf aggregates and the largest contributions of one partition (pandas)."""
    from sdckit.engines._tables import AGGS, TOPV

    frame = _prepare(part, dims, weight, value)
    x = frame["__sdc_x"] if value is not None else 1.0
    frame["__sdc_wx"] = frame["__sdc_w"] * x
    if value is not None:
        frame["__sdc_xn"] = frame["__sdc_x"]
    else:
        frame["__sdc_xn"] = 1.0
    g = frame.groupby(list(dims), dropna=False, observed=True, sort=False)
    cells = g.agg(
        **{
            N: ("__sdc_w", "size"),
            AGGS["nx"]: ("__sdc_xn", "count"),
            AGGS["sx"]: ("__sdc_wx", "sum"),
            W: ("__sdc_w", "sum"),
            NW: ("__sdc_w", "count"),
            WMIN: ("__sdc_w", "min"),
        }
    ).reset_index()
    tops = None
    if n_top:
        ordered = frame.sort_values("__sdc_wx", ascending=False, kind="stable")
        tops = (
            ordered.groupby(list(dims), dropna=False, observed=True, sort=False)
            .head(n_top)[[*dims, "__sdc_wx"]]
            .rename(columns={"__sdc_wx": TOPV})
        )
    return cells, tops


def _household_part(part: Any, household: str) -> Any:
    import pandas as pd

    with np.errstate(divide="ignore"):
        logs = np.log1p(-np.minimum(part["risk"].to_numpy(dtype=np.float64), 1.0))
    frame = pd.DataFrame({household: part[household].to_numpy(), "__sdc_l": logs})
    return frame.groupby(household, dropna=False, sort=False)["__sdc_l"].agg(["sum", "size"])


class DaskEngine:
    """Risk and tables on a Dask DataFrame."""

    name = "dask"

    def __init__(self, data: Any) -> None:
        self.ddf = data
        self._finest_native: Any = None

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.ddf.columns]

    def _check_numeric(self, column: str | None, role: str) -> None:
        import pandas as pd

        if column is not None and not pd.api.types.is_numeric_dtype(self.ddf.dtypes[column]):
            raise ColumnError(
                f"The {role} column {column!r} is not numeric (type "
                f"{self.ddf.dtypes[column]}); convert it to numbers."
            )

    # ------------------------------------------------------------------ risk
    def finest(self, groups: Sequence[str], weight: str | None) -> pl.DataFrame:
        self._check_numeric(weight, "weight")
        needed = list(dict.fromkeys([*groups, *([weight] if weight else [])]))
        sample = _prepare(self.ddf._meta[needed], groups, weight, None)
        frame = self.ddf[needed].map_partitions(_prepare, list(groups), weight, None, meta=sample)
        agg = (
            frame.groupby(list(groups), dropna=False, observed=True, sort=False)["__sdc_w"]
            .agg(["size", "count", "sum", "min"])
            .compute()
        )
        native = agg.reset_index().rename(columns={"size": N, "count": NW, "sum": W, "min": WMIN})
        native[N] = native[N].astype("int64")
        native[NW] = native[NW].astype("int64")
        self._finest_native = native
        keys = native[list(groups)]
        table = pl.from_pandas(keys, nan_to_null=True)
        aggs = pl.DataFrame({c: native[c].to_numpy() for c in (N, NW, W, WMIN)})
        return pl.concat([table, aggs], how="horizontal")

    def attach(
        self, finest: pl.DataFrame, keys: Sequence[str], first: np.ndarray, columns: dict
    ) -> Any:
        import dask

        clash = [c for c in columns if c in self.columns]
        if clash:
            raise ColumnError(
                f"The data already has a column named {clash[0]!r}, which the per-record result "
                "adds; rename it first."
            )
        classes = self._finest_native.iloc[first][list(keys)].reset_index(drop=True)
        for name, values in columns.items():
            classes[name] = values
        meta = _merge(self.ddf._meta, classes.iloc[:0], list(keys))
        return self.ddf.map_partitions(
            _merge, dask.delayed(classes, pure=True), list(keys), meta=meta
        )

    def household(self, records: Any, household: str) -> tuple[dict, Any]:
        import dask
        import pandas as pd

        from sdckit.engines._polars_stream import check_households, household_figures

        if "household_risk" in self.columns:
            raise ColumnError(
                "The data already has a column named 'household_risk', which the per-record "
                "result adds; rename it first."
            )
        parts = [dask.delayed(_household_part)(p, household) for p in records.to_delayed()]
        partial = pd.concat(dask.compute(*parts))
        missing = int(pd.isna(partial.index).sum())
        check_households(missing, household)
        table = partial.groupby(level=0, sort=False).agg({"sum": "sum", "size": "sum"})
        risk_h = -np.expm1(table["sum"].to_numpy())
        size = table["size"].to_numpy(dtype=np.float64)
        hh = pd.DataFrame({household: table.index.to_numpy(), "household_risk": risk_h})
        meta = _merge(records._meta, hh.iloc[:0], [household])
        out = records.map_partitions(_merge, dask.delayed(hh, pure=True), [household], meta=meta)
        return household_figures(size, risk_h), out

    def result(self, records: Any) -> Any:
        return records

    def write(self, records: Any, output: Path) -> None:
        records.to_parquet(str(output))

    # ------------------------------------------------------------------ tables
    def leaf_cells(
        self, dims: Sequence[str], value: str | None, weight: str | None, n_top: int
    ) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        import dask

        from sdckit.engines._tables import reduce_partials

        self._check_numeric(weight, "weight")
        self._check_numeric(value, "numeric")
        needed = list(dict.fromkeys([*dims, *(c for c in (weight, value) if c)]))
        parts = [
            dask.delayed(_leaf_part)(p, list(dims), value, weight, n_top)
            for p in self.ddf[needed].to_delayed()
        ]
        results = dask.compute(*parts)
        cells = [pl.from_pandas(c, nan_to_null=True) for c, _ in results]
        if n_top == 0:
            return reduce_partials(cells, None, dims, n_top)
        tops = [pl.from_pandas(t, nan_to_null=True) for _, t in results]
        return reduce_partials(cells, tops, dims, n_top)
