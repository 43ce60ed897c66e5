"""The deterministic protection steps on an engine: global recoding, top/bottom coding and
local suppression, written once for polars (streaming), Dask and Spark with narwhals.

Each step has the signature ``step(frame, engine, method, *, seed, roles) -> frame``: ``frame``
is a native frame carrying the row index (:data:`sdckit.engines._rows.ROW`), ``method`` the
in-memory method object (its parameters checked by the job loader), ``roles`` the column roles
(:meth:`sdckit.Microdata.roles`).  The result equals the in-memory method's on the same records:

* **global recoding**: the distinct values of each mapped column are read from the engine
  (small), recoded in memory by the in-memory code itself, and the value -> new value table is
  applied on the engine (``replace_strict`` over every distinct value);
* **top/bottom coding**: the thresholds and the tail means are aggregates on the engine, the
  coding a ``when/then`` (tail means are sums in another order: equal to the last bit or so);
  ``quantile=True`` needs exact quantiles and is refused;
* **local suppression** (missing values as wildcards, every key together, no fixed keys, no
  household-level or linked variables): from the key patterns
  (:mod:`sdckit.engines._suppress_patterns`): the greedy runs on the pattern table, the records
  it moved (a pattern's first ones in file order) and their households are read, and the
  decisions are joined back by row index.  Memory: the patterns and the records touched.
* **local suppression, other options** (``missing="category"``, ``combinations`` below the
  number of keys, ``fixed`` keys, release roles, keys that do not pack into 62 bits): the key
  (strata, household) columns and the row index are collected -- text keys as the ranks of
  their values (2 bytes) -- the in-memory :class:`~sdckit.masking.LocalSuppression` runs on
  them, and its decisions are joined back to the records on the engine.  Memory: those columns
  of every record and the in-memory method's own arrays (``O(records x keys)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit.engines._api import EngineError
from sdckit.engines._partitions import batched
from sdckit.engines._rows import ROW, collect, native_table
from sdckit.engines._suppress_patterns import pattern_path_reason, suppress_by_patterns
from sdckit.errors import DataError
from sdckit.masking.recoding import GlobalRecoding, TopBottomCoding, _per_column, _recode_series
from sdckit.masking.suppression import LocalSuppression
from sdckit.microdata import Microdata

__all__ = ["recode_on_engine", "suppress_on_engine", "top_bottom_on_engine", "with_columns"]


def _nw_dtype(dtype: Any) -> Any:
    """The narwhals type of a polars type (the result type of a recoded column)."""
    table = {
        pl.Int8: nw.Int8, pl.Int16: nw.Int16, pl.Int32: nw.Int32, pl.Int64: nw.Int64,
        pl.UInt8: nw.UInt8, pl.UInt16: nw.UInt16, pl.UInt32: nw.UInt32, pl.UInt64: nw.UInt64,
        pl.Float32: nw.Float32, pl.Float64: nw.Float64, pl.Boolean: nw.Boolean,
    }  # fmt: skip
    return table.get(dtype.base_type(), nw.String)


def _sample(frame: Any, engine: str, roles: Mapping[str, Any]) -> Microdata:
    """A few records with the roles: what the in-memory methods check their parameters on."""
    head = nw.from_native(frame).drop(ROW).head(50).collect()
    df = pl.DataFrame(pl.from_arrow(head.to_arrow()))
    return Microdata(df, **{k: v for k, v in roles.items() if v})


def _polars_part(
    part: Any, exprs: list[Any], decisions: Any, drop: list[str], on: str = ROW
) -> Any:
    """One Dask partition through the polars version of a step (the same narwhals
    expressions; pandas' conversions of nullable columns make Dask's own path unreliable)."""
    import pandas as pd

    df = pl.from_pandas(part)
    if decisions is not None:
        df = df.join(decisions, on=on, how="left", maintain_order="left")
    out = nw.from_native(df).with_columns(*exprs).drop(*drop).to_native()
    return out.to_arrow().to_pandas(types_mapper=pd.ArrowDtype)


def with_columns(
    frame: Any,
    engine: str,
    exprs: list[Any],
    decisions: pl.DataFrame | None = None,
    drop: list[str] | None = None,
    on: str = ROW,
) -> Any:
    """``frame`` with the columns ``exprs`` (narwhals expressions, or on polars native ones
    such as :func:`~sdckit.engines._partitions.batched` gives), after a left join of
    ``decisions`` on ``on`` (the row index) when given; the ``drop`` columns dropped at the
    end."""
    drop = drop or []
    if engine == "dask":
        if decisions is not None:  # the table's key in the partition's type
            decisions = decisions.with_columns(
                pl.col(on).cast(pl.from_pandas(frame._meta[on]).dtype)
            )
        meta = _polars_part(frame._meta, exprs, decisions, drop, on)
        return frame.map_partitions(_polars_part, exprs, decisions, drop, on, meta=meta)
    if decisions is not None and isinstance(frame, pl.LazyFrame | pl.DataFrame):
        # polars keeps the file order only when asked to (the release with order="original"
        # and the streaming writer's row ranges rely on it)
        frame = frame.join(decisions.lazy() if isinstance(frame, pl.LazyFrame) else decisions,
                           on=on, how="left", maintain_order="left")  # fmt: skip
        decisions = None
    out = nw.from_native(frame)
    if decisions is not None:
        out = out.join(nw.from_native(native_table(decisions, engine, frame)), on=on, how="left")
    native = [e for e in exprs if isinstance(e, pl.Expr)]  # (see _partitions.batched)
    plain = [e for e in exprs if not isinstance(e, pl.Expr)]
    if plain:
        out = out.with_columns(*plain)
    if native:
        out = nw.from_native(out.to_native().with_columns(native))
    return out.drop(*drop).to_native()


def _agg_part(part: Any, aggs: list[Any]) -> Any:
    out = nw.from_native(pl.from_pandas(part)).select(*aggs).to_native()
    return out.cast(pl.Float64).to_pandas()


def _sums(frame: Any, engine: str, aggs: list[Any]) -> dict[str, float]:
    """The sums ``aggs`` over every record (on Dask: per partition, then added up)."""
    if engine == "dask":
        meta = _agg_part(frame._meta, aggs)
        parts = frame.map_partitions(_agg_part, aggs, meta=meta).compute()
        return {name: float(parts[name].sum()) for name in parts.columns}
    row = nw.from_native(frame).select(*aggs).collect().to_arrow().to_pylist()[0]
    return {name: float(value or 0.0) for name, value in row.items()}


def _value_counts(frame: Any, column: str) -> pl.DataFrame:
    """The distinct values of ``column`` with their records (computed on the engine)."""
    counts = nw.from_native(frame).group_by(column).agg(nw.len().alias("__sdckit_n")).collect()
    return pl.from_arrow(counts.to_arrow())  # type: ignore[return-value]


def recode_on_engine(
    frame: Any, engine: str, method: GlobalRecoding, *, seed: Any, roles: Mapping[str, Any]
) -> Any:
    """:class:`~sdckit.masking.GlobalRecoding` on the engine (see the module docstring).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.engines._rows import read_with_row
    >>> lf = read_with_row(pl.LazyFrame({"r": ["a1", "a2", "b", None]}), "streaming")
    >>> m = GlobalRecoding(mapping={"r": [{"a1": "a", "a2": "a"}, {"a": "ab", "b": "ab"}]})
    >>> recode_on_engine(lf, "streaming", m, seed=None, roles={"keys": ["r"]}).collect()["r"]
    ... # doctest: +NORMALIZE_WHITESPACE
    shape: (4,)
    Series: 'r' [str]
    [
        "ab"
        "ab"
        "ab"
        null
    ]
    """
    sample = _sample(frame, engine, roles)
    hierarchies = method.hierarchy_levels(sample)
    tables = method._tables(sample, hierarchies)
    for name, (h, level) in hierarchies.items():
        if level == 0:  # kept as they are, but the hierarchy must cover them
            h.generalise(_value_counts(frame, name).get_column(name), 0)
    exprs = []
    for name, table in tables.items():
        counts = _value_counts(frame, name).filter(pl.col(name).is_not_null())
        values = counts.get_column(name)
        if name in hierarchies:  # the labels of the distinct values (an error if not covered)
            recoded = hierarchies[name][0].generalise(values, hierarchies[name][1])
        else:
            recoded = _recode_series(values, table, False)
        if method.strict and name not in hierarchies:
            old = pl.Series(list(table), strict=False)
            try:
                known = values.cast(pl.String).is_in(old.cast(pl.String).implode())
            except pl.exceptions.PolarsError:
                known = values.is_in(old.implode())
            unknown = int(counts.get_column("__sdckit_n").filter(~known).sum())
            if unknown:
                raise DataError(
                    f"The variable {name!r} has {unknown} value(s) not in its mapping; add "
                    "them to the mapping or use strict=False to keep them."
                )
        dtype = _nw_dtype(recoded.dtype)
        if values.len() == 0:
            exprs.append(nw.col(name).cast(dtype))
            continue
        expr = nw.col(name).replace_strict(
            values.to_list(), recoded.to_list(), default=None, return_dtype=dtype
        )
        exprs.append(batched(expr, engine, [name], name, recoded.dtype))
    return with_columns(frame, engine, exprs)


def top_bottom_on_engine(
    frame: Any, engine: str, method: TopBottomCoding, *, seed: Any, roles: Mapping[str, Any]
) -> Any:
    """:class:`~sdckit.masking.TopBottomCoding` on the engine (see the module docstring)."""
    if method.quantile:
        raise EngineError(
            "Top/bottom coding with quantile=True needs exact quantiles of every record, "
            "which the engines do not compute; give the thresholds as numbers (upper=..., "
            'lower=...), or run the job in memory (engine = "polars").'
        )
    md = _sample(frame, engine, roles)
    cols = method._plan(md)  # the checks of the in-memory method (types, thresholds)
    low_rep, up_rep = method._replacements()
    names = tuple(cols)
    uppers = _per_column(method.upper, names, "upper")
    lowers = _per_column(method.lower, names, "lower")
    weight = roles.get("weight") if method.weighted else None
    nw_frame = nw.from_native(frame)
    schema = nw_frame.collect_schema()
    sides: dict[str, list[tuple[str, float, nw.Expr]]] = {}
    aggs = []
    for name in names:
        x = nw.col(name).cast(nw.Float64)
        valid = ~x.is_null()
        if schema[name].is_float():
            valid = valid & ~x.is_nan()
        sides[name] = []
        for side, spec in (("upper", uppers[name]), ("lower", lowers[name])):
            if spec is None:
                continue
            t = float(spec)
            coded = valid & ((x > t) if side == "upper" else (x < t))
            sides[name].append((side, t, coded))
            tag = f"__sdckit_{name}_{side}"
            w = nw.col(weight).cast(nw.Float64) if weight else nw.lit(1.0)
            aggs += [
                nw.when(coded).then(nw.lit(1)).otherwise(nw.lit(0)).sum().alias(tag + "_n"),
                nw.when(coded).then(x * w).otherwise(nw.lit(0.0)).sum().alias(tag + "_xw"),
                nw.when(coded).then(w).otherwise(nw.lit(0.0)).sum().alias(tag + "_w"),
            ]
    totals = _sums(frame, engine, aggs) if aggs else {}
    exprs = []
    for name in names:
        expr = nw.col(name).cast(nw.Float64)
        values = []
        # the two tails are disjoint (a lower threshold above the upper one is refused)
        for side, t, coded in sides[name]:
            tag = f"__sdckit_{name}_{side}"
            n = int(totals[tag + "_n"] or 0)
            rep = up_rep if side == "upper" else low_rep
            if rep == "threshold":
                value = t
            elif rep == "mean":
                value = float(totals[tag + "_xw"] / totals[tag + "_w"]) if n else t
            else:
                value = float(rep)
            if n:
                values.append(value)
            expr = nw.when(coded).then(nw.lit(value)).otherwise(expr)
        if not sides[name]:
            continue
        out = expr
        dtype = schema[name]
        if (dtype.is_integer() and all(v % 1 == 0 for v in values)) or dtype.is_float():
            out = out.cast(dtype)
        exprs.append(out.alias(name))
    return with_columns(frame, engine, exprs) if exprs else frame


#: The roles local suppression reads (the other columns are not collected).
_SUPPRESSION_ROLES = ("keys", "strata", "household", "household_level", "linked")


def suppress_on_engine(
    frame: Any, engine: str, method: LocalSuppression, *, seed: Any, roles: Mapping[str, Any]
) -> Any:
    """:class:`~sdckit.masking.LocalSuppression` on the engine (see the module docstring)."""
    if pattern_path_reason(method, roles) is None:
        found = suppress_by_patterns(frame, engine, method, roles, with_columns)
        if found is not None:
            decisions, used = found
            if not used:
                return frame
            flags = [f"__sdckit_s{j}" for j in range(len(used))]
            exprs = [
                nw.when(~nw.col(flag).fill_null(False)).then(nw.col(name)).alias(name)
                for flag, name in zip(flags, used, strict=True)
            ]
            return with_columns(frame, engine, exprs, decisions, flags)
    kept = {r: roles.get(r) for r in _SUPPRESSION_ROLES if roles.get(r)}
    linked = kept.get("linked") or {}
    columns = list(
        dict.fromkeys(
            [
                *kept.get("keys", ()),
                *(kept[r] for r in ("strata", "household") if r in kept),
                *kept.get("household_level", ()),
                *linked,
                *(v for vs in linked.values() for v in ([vs] if isinstance(vs, str) else vs)),
            ]
        )
    )
    ids = {kept.get("household"), kept.get("strata")}  # many values, kept as they are
    coded = [c for c in columns if c not in ids]
    records = collect(_encoded(frame, engine, coded), engine, columns)
    md = Microdata(records.drop(ROW), **kept)
    after = method.apply(md).microdata.frame
    # every value the method (and the release roles: household-level and linked variables)
    # set to missing -- suppression only ever does that
    lost = {
        name: (~_missing(md.frame.get_column(name)) & _missing(after.get_column(name))).to_numpy()
        for name in columns
    }
    used = [name for name in columns if lost[name].any()]
    if not used:
        return frame
    hit = np.flatnonzero(np.logical_or.reduce([lost[name] for name in used]))
    flags = {f"__sdckit_s{j}": lost[name][hit] for j, name in enumerate(used)}
    decisions = pl.DataFrame(
        {ROW: records.get_column(ROW).to_numpy()[hit].astype(np.int64), **flags}
    )
    exprs = []
    for j, name in enumerate(used):
        flag = nw.col(f"__sdckit_s{j}").fill_null(False)
        exprs.append(nw.when(~flag).then(nw.col(name)).alias(name))
    return with_columns(frame, engine, exprs, decisions, list(flags))


def _missing(s: pl.Series) -> pl.Series:
    return (s.is_null() | s.is_nan()) if s.dtype.is_float() else s.is_null()


def _encoded(frame: Any, engine: str, columns: list[str]) -> Any:
    """``frame`` with its text columns among ``columns`` replaced by the rank of each value
    among the column's sorted values (the codes :class:`~sdckit.Microdata` gives them).

    Text takes 16 bytes a value and more in memory, a rank 2 or 4: local suppression reads
    only the codes (and the cardinalities, the same), so its decisions are the same.
    """
    schema = nw.from_native(frame).collect_schema()
    exprs = []
    for name in columns:
        dtype = schema[name]
        if dtype.is_numeric() or dtype == nw.Boolean:
            continue
        values = _value_counts(frame, name).get_column(name).drop_nulls()
        codes, levels = encode_column(values)
        small = pl.Int16 if len(levels) < (1 << 15) else pl.Int32
        expr = nw.col(name).replace_strict(
            values.to_list(), codes.tolist(), default=None, return_dtype=_nw_dtype(small)
        )
        exprs.append(batched(expr, engine, [name], name, small))
    return with_columns(frame, engine, exprs) if exprs else frame
