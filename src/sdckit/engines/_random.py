"""PRAM and additive noise on an engine: the same bytes as in memory for the same seed.

The in-memory methods draw their random numbers keyed by the seed and the record's global row
index (:mod:`sdckit._keyed_random`), so a slice draws what the whole file draws for its rows.
What needs the whole file is small and computed first, where the records are
(:func:`~sdckit.engines._partitions.reduce_slices`): PRAM's category counts per stratum (and
the combinations of its ``must_exist`` groups), the exact moments of the noise variables per
stratum (:mod:`sdckit._exact_sums`, so that the noise scale is the in-memory one to the bit).
A plan (:mod:`sdckit.masking.keyed`) is then applied to every slice
(:func:`~sdckit.engines._partitions.map_columns`: on polars an expression over the columns
it reads, so that a later pass reads from the file only what it needs).

``frame`` must carry the global row index ``__sdckit_row`` (int64, ``0 .. n - 1`` in file
order); ``roles`` are the :class:`~sdckit.microdata.Microdata` roles.  What runs in memory on
the driver: the plan (levels and matrices; the noise scale per stratum and variable).  Not on
an engine (an :class:`~sdckit.engines.EngineError` says so): household-level variables (drawn
once per household), noise methods other than ``"additive"``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from sdckit._codes import encode_column
from sdckit._exact_sums import Moments, partial_moments
from sdckit.engines._api import EngineError
from sdckit.engines._partitions import ROW, map_columns, reduce_slices
from sdckit.errors import ColumnError, DataError
from sdckit.masking import AddNoise, Pram
from sdckit.masking.keyed import edits_hold, noise_matrix, noise_plan, pram_plan, stratum_codes
from sdckit.microdata import Microdata

__all__ = ["noise_on_engine", "pram_on_engine", "schema_microdata"]

_ENGINES = ("polars", "streaming", "dask", "spark")


def schema_microdata(frame: Any, engine: str, roles: Mapping[str, Any], rows: int = 2) -> Microdata:
    """A Microdata of ``rows`` made-up records with the frame's columns, types and ``roles``:
    the methods' own checks of columns and parameters run on it, not on the records."""
    if engine not in _ENGINES:
        raise EngineError(f"Unknown engine {engine!r}; use one of {', '.join(_ENGINES)}.")
    if engine in ("polars", "streaming"):
        schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
        empty = pl.DataFrame(schema=schema)
    elif engine == "dask":
        empty = pl.from_pandas(frame._meta)
    else:
        empty = pl.from_arrow(frame.limit(0).toArrow())
    if ROW not in empty.columns:
        raise ColumnError(
            f"The frame has no row index column {ROW!r}; the random draws are keyed by it "
            "(add it when reading the records: 0 .. n - 1 in file order)."
        )
    given = dict(roles)
    if given.get("household_level") in (None, "auto"):
        given["household_level"] = []  # (detecting them needs the records)
    return Microdata(empty.clear(max(rows, 2)).with_columns(_filler(empty.schema)), **given)


def _filler(schema: Mapping[str, Any]) -> list[pl.Expr]:
    """A valid value for every column of a simple type (roles such as strata, weights and
    household ids must not be missing)."""
    out = []
    for name, dtype in schema.items():
        if dtype.is_numeric():
            out.append(pl.lit(1).cast(dtype).alias(name))
        elif dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Categorical):
            out.append(pl.lit("a").cast(dtype).alias(name))
        elif dtype == pl.Boolean:
            out.append(pl.lit(True).alias(name))
    return out


# ------------------------------------------------------------------------------ PRAM
def pram_on_engine(frame: Any, engine: str, method: Pram, *, seed: Any, roles: dict) -> Any:
    """:class:`~sdckit.masking.Pram` on the engine: per record, the in-memory output.

    ``seed`` (None: the method's) must be what the in-memory run is given, an integer for the
    same output.  Passes over the records: one for the counts (and ``must_exist``
    combinations), one for the draws (lazy: run when the result is written).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import Pram
    >>> df = pl.DataFrame({"reg": [1, 2, 3, 4] * 25}).with_row_index("__sdckit_row")
    >>> df = df.with_columns(pl.col("__sdckit_row").cast(pl.Int64))
    >>> out = pram_on_engine(df, "polars", Pram(variables=["reg"]), seed=3, roles={})
    >>> out.equals(Pram(variables=["reg"], seed=3).apply(df).data)
    True
    """
    md = schema_microdata(frame, engine, roles)
    cols = method._variables(md)
    house = set(cols) & set(md.household_level)
    if house:
        raise EngineError(
            f"The PRAM variable {sorted(house)[0]!r} is household-level (drawn once per "
            "household); run this PRAM in memory, or declare it person-level."
        )
    for combo in method.forbidden if isinstance(method.forbidden, list) else [method.forbidden]:
        for c in combo or {}:
            if c not in md.frame.columns:
                raise ColumnError(f"The forbidden combination names an unknown column {c!r}.")
    groups = [tuple(g) for g in (method.must_exist or [])]
    for group in groups:
        for c in group:
            if c not in md.frame.columns:
                raise ColumnError(f"The must_exist group names an unknown column {c!r}.")
    strata = md.strata if method.by_strata else None
    used = sorted({*cols, *(c for g in groups for c in g), *([strata] if strata else [])})
    counted = reduce_slices(
        frame,
        engine,
        used,
        functools.partial(_count, cols=cols, strata=strata, groups=groups),
        _merge_counts,
    )
    counts, present = (
        counted if counted is not None else _count(md.frame.clear(0), cols, strata, groups)
    )
    plan = pram_plan(method, counts, strata=strata, present=present, seed=seed)
    forbidden = {c for combo in plan.forbidden for c in combo}
    return map_columns(frame, engine, plan.apply, [ROW, *used, *sorted(forbidden)], cols)


def _count(
    batch: pl.DataFrame, cols: Sequence[str], strata: str | None, groups: Sequence[tuple[str, ...]]
) -> tuple[dict[str, pl.DataFrame], dict[tuple[str, ...], pl.DataFrame]]:
    """The counts of every PRAM variable's values (per stratum value) and the combinations of
    every ``must_exist`` group, in one slice."""
    by = [strata] if strata else []
    counts = {c: batch.group_by([*by, c]).agg(pl.len().cast(pl.Int64).alias("__n")) for c in cols}
    present = {g: batch.select(list(g)).unique() for g in groups}
    return counts, present


def _merge_counts(a: tuple, b: tuple) -> tuple:
    counts = {
        c: pl.concat([a[0][c], b[0][c]], how="vertical_relaxed")
        .group_by([n for n in a[0][c].columns if n != "__n"])
        .agg(pl.col("__n").sum())
        for c in a[0]
    }
    present = {g: pl.concat([a[1][g], b[1][g]], how="vertical_relaxed").unique() for g in a[1]}
    return counts, present


# ------------------------------------------------------------------------------ noise
def noise_on_engine(frame: Any, engine: str, method: AddNoise, *, seed: Any, roles: dict) -> Any:
    """:class:`~sdckit.masking.AddNoise` (``method="additive"``) on the engine: per record, the
    in-memory output.

    Passes over the records: the strata levels (within strata), the exact moments and the
    balance edits' check, then the noise (lazy).  The perturbed variables come out as float64.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import AddNoise
    >>> df = pl.DataFrame({"x": [float(i % 7) for i in range(50)]})
    >>> df = df.with_row_index("__sdckit_row").with_columns(pl.col("__sdckit_row").cast(pl.Int64))
    >>> out = noise_on_engine(df, "polars", AddNoise(), seed=1, roles={"numeric": ["x"]})
    >>> out.equals(AddNoise(seed=1).apply(df, numeric=["x"]).data)
    True
    """
    md = schema_microdata(frame, engine, roles)
    kind = method._check_params()[0]
    if kind != "additive":
        raise EngineError(
            f"Noise method {kind!r} needs every record in memory (covariances, outliers or "
            "the exact moments); on an engine use method='additive', or run it in memory."
        )
    free, edits = method._columns(md)
    house = set(free) & set(md.household_level)
    if house:
        raise EngineError(
            f"The noise variable {sorted(house)[0]!r} is household-level (one draw per "
            "household); run this noise in memory, or declare it person-level."
        )
    strata, levels = None, None
    if method.by_strata:
        if md.strata is None:
            raise ColumnError(
                "Noise with by_strata=True needs the strata column: give the data a strata "
                "role (strata=...)."
            )
        strata = md.strata
        values = reduce_slices(frame, engine, [strata], _unique, _merge_unique)
        values = values if values is not None else pl.Series(strata, [])
        if values.null_count():
            raise DataError(
                f"The strata column {strata!r} has missing values; every record needs a stratum."
            )
        levels = encode_column(values)[1]
    edit_cols = sorted({c for t, comps in edits for c in (t, *comps)})
    used = sorted({*free, *edit_cols, *([strata] if strata else [])})
    n_groups = 1 if levels is None else len(levels) + 1
    found = reduce_slices(
        frame,
        engine,
        used,
        functools.partial(
            _moments, free=free, strata=strata, levels=levels, n_groups=n_groups, edits=edits
        ),
        _merge_moments,
    )
    if found is None:
        raise DataError("The data has no records; a disclosure assessment needs records.")
    moments, edits_hold = found
    if not edits_hold:
        raise DataError(
            "A balance edit does not hold in some records of the original data (or a record "
            "has the total but misses a component); correct them or drop the edit."
        )
    plan = noise_plan(
        method, moments, free, strata=strata, strata_levels=levels, balance=edits, seed=seed
    )
    changed = [*free, *(t for t, _ in edits)]
    return map_columns(frame, engine, plan.apply, [ROW, *used], changed, floats=changed)


def _unique(batch: pl.DataFrame) -> pl.Series:
    return batch.to_series(0).unique()


def _merge_unique(a: pl.Series, b: pl.Series) -> pl.Series:
    return pl.concat([a, b.cast(a.dtype, strict=False)]).unique()


def _moments(
    batch: pl.DataFrame,
    free: Sequence[str],
    strata: str | None,
    levels: pl.Series | None,
    n_groups: int,
    edits: Sequence[tuple[str, tuple[str, ...]]],
) -> tuple[Moments, bool]:
    """The exact moments of the noise variables per stratum in one slice, and whether its
    balance edits hold."""
    x = noise_matrix(batch, free)
    group = stratum_codes(batch.get_column(strata) if strata else None, levels, batch.height)
    return partial_moments(x, group, n_groups), edits_hold(batch, edits)


def _merge_moments(a: tuple[Moments, bool], b: tuple[Moments, bool]) -> tuple[Moments, bool]:
    return a[0].add(b[0]), a[1] and b[1]
