"""Microaggregation within strata and targeted record swapping within geography, on an engine.

Both work on groups that fit in memory: a stratum (microaggregation) or a top-level area
(record swapping).  The engine finds the groups (one pass: the group column's values), then,
one group at a time, collects that group's records (one filtered pass each: the engine reads
only the columns the method needs), runs the in-memory method on them with the seed the
in-memory per-stratum run gives that group (stream ``(0, s)`` of the seed for the ``s``-th group
in sorted order, :func:`sdckit.masking._strata.stratum_seeds`), and keeps the changed columns
with the row index.  The changed columns are then written back in place, record by record
(a join on ``__sdckit_row`` in every slice).

What must fit in memory: the largest group's records (the method's columns), and on the
driver the changed columns of every record with its row index (``8 * (1 + columns)`` bytes a
record; they are sent to every worker, so this suits files up to a few tens of millions of
records on Dask and Spark).  Microaggregation of household-level variables (households may
straddle strata) stays in memory.

Targeted record swapping works on the whole file (a household can be swapped with one of
another top-level area): :func:`swapping_on_engine` collects the columns it reads from every
record and gives the in-memory output.  :func:`swapping_within_areas_on_engine` runs it within
each top-level area instead, on the lower levels of the hierarchy -- what the in-memory method
gives on each area alone with that area's seed (tested so), another release, which holds only
one area's records at a time; a job never uses it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit.engines._api import EngineError
from sdckit.engines._partitions import ROW, map_slices, reduce_slices
from sdckit.engines._random import schema_microdata
from sdckit.engines._rows import collect
from sdckit.errors import DataError
from sdckit.masking import Microaggregation, TargetedRecordSwapping
from sdckit.masking.keyed import group_seeds, normalise

__all__ = [
    "microaggregation_on_engine",
    "swapping_on_engine",
    "swapping_within_areas_on_engine",
]


def _with(method: Any, **params: Any) -> Any:
    """A new method with ``params`` in place of its own."""
    return type(method)(**{**method.get_params(), **params})


def microaggregation_on_engine(
    frame: Any, engine: str, method: Microaggregation, *, seed: Any, roles: dict
) -> Any:
    """:class:`~sdckit.masking.Microaggregation` within strata on the engine: per record, the
    in-memory output (the aggregated variables as float64).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import Microaggregation
    >>> df = pl.DataFrame({"s": [1, 2] * 10, "x": [float(i * i % 7) for i in range(20)]})
    >>> df = df.with_row_index("__sdckit_row").with_columns(pl.col("__sdckit_row").cast(pl.Int64))
    >>> m = Microaggregation(k=3, variables=["x"])
    >>> out = microaggregation_on_engine(df, "polars", m, seed=1, roles={"strata": "s"})
    >>> out.equals(Microaggregation(k=3, variables=["x"], seed=1).apply(df, strata="s").data)
    True
    """
    k = method.k if isinstance(method.k, int) else 2  # (checked by _resolve)
    md = schema_microdata(frame, engine, roles, rows=min(max(k, 2), 1 << 20))
    _, variables, strata = method._resolve(md)
    if set(variables) & set(md.household_level):
        raise EngineError(
            "Household-level variables are microaggregated per household, and households may "
            "straddle strata: run this microaggregation in memory."
        )
    chosen = method.seed if seed is None else seed
    chosen = 0 if chosen is None else chosen  # (the method's default: the fixed seed 0)
    sub_roles = {"numeric": list(variables)}
    sub = _with(method, strata=None, variables=list(variables))

    def run(records: pl.DataFrame, stream: np.random.SeedSequence) -> pl.DataFrame:
        # a Generator of the stratum's stream gives what the per-stratum run draws
        one = _with(sub, seed=np.random.default_rng(stream))
        out = one.apply(records.drop(ROW), **sub_roles).data
        return out.select(variables).with_columns(records.get_column(ROW))

    if strata is None:  # one group: the whole file, with the method's own seed
        records = _collect(frame, engine, None, None, [ROW, *variables])
        out = _with(sub, seed=chosen)
        done = out.apply(records.drop(ROW), **sub_roles).data.select(variables)
        return _write_back(frame, engine, done.with_columns(records.get_column(ROW)), variables)
    columns = [ROW, *variables, strata]
    results = _by_group(frame, engine, strata, columns, chosen, run)
    return _write_back(frame, engine, results, variables)


def swapping_on_engine(
    frame: Any, engine: str, method: TargetedRecordSwapping, *, seed: Any, roles: dict
) -> Any:
    """:class:`~sdckit.masking.TargetedRecordSwapping` on the engine: per record, the
    in-memory output (households swapped across the whole file, as in memory).

    The swap compares every household with every other of the file (the risk counts, the
    donors of any area), so the columns it reads -- the hierarchy, the risk variables, the
    similarity profiles, the carried columns and the household id, with the row index -- are
    collected from every record in one pass, the in-memory method runs on them with the
    seed of the in-memory run, and the moved columns are written back by row index.  Memory:
    those columns of every record (not the others), then the moved ones with the row index.

    Examples
    --------
    >>> from sdckit.masking import TargetedRecordSwapping
    >>> from sdckit.datasets import generate_census
    >>> import polars as pl
    >>> df = generate_census(3000, seed=1).with_row_index("__sdckit_row")
    >>> df = df.with_columns(pl.col("__sdckit_row").cast(pl.Int64))
    >>> m = TargetedRecordSwapping(hierarchy=["region", "district"],
    ...     risk_variables=["sex", "age_group"], k=3, swap_rate=0.05)
    >>> out = swapping_on_engine(df.lazy(), "streaming", m, seed=2,
    ...                          roles={"household": "household_id"}).collect()
    >>> ref = TargetedRecordSwapping(hierarchy=["region", "district"],
    ...     risk_variables=["sex", "age_group"], k=3, swap_rate=0.05, seed=2)
    >>> out.equals(ref.apply(df, household="household_id").data)
    True
    """
    md = schema_microdata(frame, engine, roles)
    hierarchy, risk, carry, profiles = method._settings(md)
    chosen = method.seed if seed is None else seed
    changed = [*hierarchy, *carry]
    used = _swap_columns(md.household, hierarchy, risk, carry, profiles)
    records = collect(frame, engine, [c for c in used if c != ROW])  # (in file order)
    one = _with(method, risk_variables=list(risk), seed=chosen)
    out = one.apply(records.drop(ROW), household=md.household).data
    done = out.select(changed).with_columns(records.get_column(ROW))
    return _write_back(frame, engine, done, changed, floats=False)


def swapping_within_areas_on_engine(
    frame: Any, engine: str, method: TargetedRecordSwapping, *, seed: Any, roles: dict
) -> Any:
    """:class:`~sdckit.masking.TargetedRecordSwapping` within each top-level area on the
    engine, on the lower levels of the hierarchy (see the module docstring).

    Examples
    --------
    >>> from sdckit.masking import TargetedRecordSwapping
    >>> from sdckit.datasets import generate_census
    >>> import polars as pl
    >>> df = generate_census(3000, seed=1).with_row_index("__sdckit_row")
    >>> df = df.with_columns(pl.col("__sdckit_row").cast(pl.Int64))
    >>> m = TargetedRecordSwapping(hierarchy=["region", "district"],
    ...     risk_variables=["sex", "age_group"], k=3, swap_rate=0.05)
    >>> out = swapping_within_areas_on_engine(df, "polars", m, seed=2,
    ...                                       roles={"household": "household_id"})
    >>> out.height
    3000
    """
    md = schema_microdata(frame, engine, roles)
    hierarchy, risk, carry, profiles = method._settings(md)
    if len(hierarchy) < 2:
        raise EngineError(
            "Record swapping within each top-level area needs a hierarchy of two levels or "
            "more (the lower levels are swapped); with one level, run it in memory."
        )
    top = hierarchy[0]
    chosen = method.seed if seed is None else seed
    changed = [*hierarchy[1:], *carry]
    columns = _swap_columns(md.household, hierarchy, risk, carry, profiles)
    sub_roles = {"household": md.household}
    sub = _with(method, hierarchy=list(hierarchy[1:]), risk_variables=list(risk))

    def run(records: pl.DataFrame, stream: np.random.SeedSequence) -> pl.DataFrame:
        one = _with(sub, seed=np.random.default_rng(stream))
        out = one.apply(records.drop(ROW), **sub_roles).data
        return out.select(changed).with_columns(records.get_column(ROW))

    results = _by_group(frame, engine, top, columns, chosen, run)
    return _write_back(frame, engine, results, changed, floats=False)


def _swap_columns(
    household: str | None,
    hierarchy: Sequence[str],
    risk: Sequence[str],
    carry: Sequence[str],
    profiles: Sequence[Sequence[str]],
) -> list[str]:
    """The columns record swapping reads, with the row index."""
    used = {ROW, *hierarchy, *risk, *carry, *(c for p in profiles for c in p)}
    return sorted(used | ({household} if household else set()))


# ------------------------------------------------------------------------------ groups
def _by_group(
    frame: Any,
    engine: str,
    column: str,
    columns: Sequence[str],
    seed: Any,
    run: Callable[[pl.DataFrame, np.random.SeedSequence], pl.DataFrame],
) -> pl.DataFrame:
    """``run`` on the records of each value of ``column`` (in file order) with the seed
    sequence of its position among the sorted values; the results stacked."""
    values = reduce_slices(frame, engine, [column], _unique, _merge_unique)
    if values is None:
        raise DataError("The data has no records; a disclosure assessment needs records.")
    if normalise(values).null_count():
        raise DataError(
            f"The strata column {column!r} has missing values; every record needs a stratum."
        )
    levels = encode_column(values)[1]
    seeds = group_seeds(seed, len(levels))
    parts = []
    for s, level in enumerate(levels.to_list()):
        records = _collect(frame, engine, column, level, list(columns)).sort(ROW)
        parts.append(run(records, seeds[s]))
    return pl.concat(parts, how="vertical_relaxed")


def _collect(
    frame: Any, engine: str, column: str | None, level: Any, columns: list[str]
) -> pl.DataFrame:
    """The records whose ``column`` equals ``level`` (all without a column), in memory."""
    if engine in ("polars", "streaming"):
        lazy = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
        if column is not None:
            lazy = lazy.filter(pl.col(column) == level)
        return lazy.select(columns).collect(engine="streaming")
    if engine == "dask":
        part = frame if column is None else frame[frame[column] == level]
        return pl.from_pandas(part[columns].compute())
    if column is None:
        return pl.from_arrow(frame.select(*columns).toArrow())
    from pyspark.sql import functions as F

    return pl.from_arrow(frame.filter(F.col(column) == level).select(*columns).toArrow())


def _write_back(
    frame: Any, engine: str, results: pl.DataFrame, changed: Sequence[str], *, floats: bool = True
) -> Any:
    """``frame`` with the ``changed`` columns of ``results`` put back by row index."""
    fn = functools.partial(_replace, results=results, changed=tuple(changed))
    return map_slices(frame, engine, fn, floats=list(changed) if floats else [])


def _replace(batch: pl.DataFrame, results: pl.DataFrame, changed: tuple[str, ...]) -> pl.DataFrame:
    new = batch.select(ROW).join(results, on=ROW, how="left", maintain_order="left")
    return batch.with_columns(
        new.get_column(c).cast(batch.schema[c] if batch.schema[c] != pl.Null else pl.Float64)
        if not new.schema[c].is_float()
        else new.get_column(c)
        for c in changed
    )


def _unique(batch: pl.DataFrame) -> pl.Series:
    return batch.to_series(0).unique()


def _merge_unique(a: pl.Series, b: pl.Series) -> pl.Series:
    return pl.concat([a, b.cast(a.dtype, strict=False)]).unique()
