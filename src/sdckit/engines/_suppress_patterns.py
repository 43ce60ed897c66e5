"""Local suppression on an engine from the key patterns, in memory bounded by the patterns.

:class:`~sdckit.masking.LocalSuppression` (missing values as wildcards) decides on key
patterns but moves "the first records" of a pattern and gives values back in file order.  Its
output is reproduced record for record without holding the records:

1. each key (and the stratum, with ``by_strata``) is coded on the engine as the in-memory
   method codes it (the rank of its value among the column's values; missing -1), and the
   codes pack into one 64-bit *pattern code*;
2. the pattern table -- per pattern code, its records and its last row -- is a group-by on the
   engine; the greedy runs on it (:func:`sdckit.masking.pattern_suppression.greedy_on_patterns`),
   per stratum, and says how many of each pattern's first records (file order) it moved;
3. the rows of those records are read from the engine (the records of the touched patterns,
   two integers each, ranked in file order), and the restore rounds run on them;
4. with a household id, the records of the households holding a suppressed value are read
   (two integers and the id each), and the closures against inferences and within households
   run on units: those records one by one, every other record as one weighted row per pattern;
5. the decisions (row -> keys suppressed) are joined back to the records on the engine.

Memory: the pattern table, the moved records and their households, and the records of the
patterns the greedy took records from (step 3: two int64 each; on a census these are a share
of the file, not all of it) -- not the key columns of every record.

Household-level keys (a release role): a value suppressed in one member is suppressed in all,
as the in-memory release rule does; that each household shows one value of them (or none), as
:class:`~sdckit.Microdata` requires, is checked by a group-by on the engine.

Not done here (the caller keeps the path that collects the key columns): ``missing =
"category"``, ``combinations`` below the number of keys, ``fixed`` keys, linked variables, and
keys whose levels do not pack into 62 bits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._validation import check_int
from sdckit.engines._partitions import batched
from sdckit.engines._rows import ROW, collect
from sdckit.errors import ColumnError, DataError, InfeasibleError
from sdckit.masking.pattern_suppression import close_on_units, greedy_on_patterns
from sdckit.masking.suppression import LocalSuppression, key_priority
from sdckit.microdata import Microdata

__all__ = ["pattern_path_reason", "suppress_by_patterns"]

#: The pattern code column added on the engine (dropped with the decisions).
CODE = "__sdckit_pattern"
_LIMIT = 1 << 62


def pattern_path_reason(method: LocalSuppression, roles: Mapping[str, Any]) -> str | None:
    """Why ``method`` needs the collecting path (None: the pattern path reproduces it)."""
    keys = list(roles.get("keys") or ())
    if method.missing != "wildcard":
        return "missing values as a category"
    if method.combinations is not None and int(method.combinations) < len(keys):
        return "combinations of fewer keys than all"
    if method.key_combinations is not None or method.identification_levels is not None:
        return "own key combinations"
    if method.fixed:
        return "fixed keys"
    if roles.get("linked"):
        return "linked variables"
    if isinstance(roles.get("household_level"), str):
        return "household-level variables to detect"
    return None


def _normalised(name: str, dtype: Any) -> Any:
    """The key as the in-memory codes see it: NaN missing, -0.0 equal to 0.0."""
    col = nw.col(name)
    if dtype.is_float():
        col = nw.when(col.is_nan()).then(None).otherwise(col)
        col = nw.when(col == 0).then(nw.lit(0.0, dtype)).otherwise(col)
    return col.alias(name)


def _distinct(frame: Any, engine: str, expr: Any, name: str) -> pl.Series:
    """The distinct non-missing values of ``expr`` (a group-by on the engine)."""
    out = nw.from_native(frame).select(expr).group_by(name).agg(nw.len().alias("__sdckit_n"))
    native = out.to_native()
    if engine == "streaming":
        table = native.collect(engine="streaming")
    else:
        table = pl.DataFrame(pl.from_arrow(out.collect().to_arrow()))
    return table.get_column(name).drop_nulls()


#: Up to this many values a key's digit is a chain of comparisons, beyond a ``replace_strict``
#: (on polars the whole code is evaluated batch by batch: :func:`batched`).
_CHAIN = 64


def _digit(expr: Any, values: list[Any], digits: list[int]) -> Any:
    """``digits[i]`` where ``expr`` is ``values[i]``, else 0 (missing, NaN)."""
    if not values:
        return nw.lit(0, nw.Int64)
    if len(values) > _CHAIN:
        return expr.replace_strict(values, digits, default=0, return_dtype=nw.Int64).fill_null(0)
    out = nw.lit(0, nw.Int64)
    for value, d in zip(values, digits, strict=True):
        if d > 0:
            out = nw.when(expr == nw.lit(value)).then(nw.lit(d, nw.Int64)).otherwise(out)
    return out


def _pattern_code(frame: Any, engine: str, columns: list[str]) -> tuple[Any, list[int]] | None:
    """The expression of the packed code of ``columns`` and each column's levels, or None
    when the levels do not pack into 62 bits.  Digit ``j`` is ``code_j + 1`` (0: missing)."""
    schema = nw.from_native(frame).collect_schema()
    levels, parts, mult = [], [], 1
    for name in columns:
        expr = _normalised(name, schema[name])
        values = _distinct(frame, engine, expr, name)
        codes, lv = encode_column(values)
        levels.append(len(lv))
        digit = _digit(expr, values.to_list(), (codes.astype(np.int64) + 1).tolist())
        parts.append(digit * mult)
        mult *= len(lv) + 1
        if mult >= _LIMIT:
            return None
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return batched(total.alias(CODE), engine, columns, CODE, pl.Int64), levels


def _digits(codes: np.ndarray, levels: list[int]) -> np.ndarray:
    """The per-column codes (``-1`` missing) of packed pattern codes."""
    out = np.empty((len(codes), len(levels)), dtype=np.int64)
    rest = codes.astype(np.int64)
    for j, lv in enumerate(levels):
        out[:, j] = rest % (lv + 1) - 1
        rest = rest // (lv + 1)
    return out


def _table(frame: Any, engine: str, with_code: Any) -> pl.DataFrame:
    """Per pattern code: its records and last row (a group-by on the engine)."""
    out = (
        nw.from_native(with_code)
        .group_by(CODE)
        .agg(nw.len().alias("n"), nw.col(ROW).max().alias("last"))
    )
    if engine == "streaming":
        table = out.to_native().collect(engine="streaming")
    else:
        table = pl.DataFrame(pl.from_arrow(out.collect().to_arrow()))
    return table.with_columns(pl.col("n").cast(pl.Int64), pl.col("last").cast(pl.Int64))


def _where(
    frame: Any, engine: str, column: str, values: np.ndarray, take: list[str]
) -> pl.DataFrame:
    """``take`` and the row index of the records whose ``column`` is in ``values``, in file
    order (the filter runs on the engine; only those records are collected)."""
    chosen = nw.from_native(frame).filter(nw.col(column).is_in(values.tolist()))
    return collect(chosen.to_native(), engine, take)


def _check_households(frame: Any, engine: str, household: str, columns: list[str]) -> None:
    """The check :class:`~sdckit.Microdata` makes of household-level variables (one value in
    every household, or none), by a group-by on the engine; :class:`DataError` otherwise."""
    schema = nw.from_native(frame).collect_schema()
    cols, aggs = [nw.col(household)], []
    for i, name in enumerate(columns):
        value = _normalised(name, schema[name])
        # (elementary aggregations only, as Dask's group-by wants them)
        cols += [value.alias(f"v{i}"), value.is_null().cast(nw.Int64).alias(f"m{i}")]
        aggs += [
            nw.col(f"v{i}").min().alias(f"lo{i}"), nw.col(f"v{i}").max().alias(f"hi{i}"),
            nw.col(f"m{i}").sum().alias(f"nc{i}"),
        ]  # fmt: skip
    out = nw.from_native(frame).select(*cols).group_by(household).agg(nw.len().alias("n"), *aggs)
    bad = []
    for i in range(len(columns)):
        one = (nw.col(f"lo{i}") == nw.col(f"hi{i}")) & (nw.col(f"nc{i}") == 0)
        cond = ~(one | (nw.col(f"nc{i}") == nw.col("n")))
        bad.append(cond.fill_null(True).cast(nw.Int64).sum().alias(f"b{i}"))
    counts = out.select(*bad)
    if engine == "streaming":
        table = counts.to_native().collect(engine="streaming")
    else:
        table = pl.DataFrame(pl.from_arrow(counts.collect().to_arrow()))
    for i, col in enumerate(columns):
        n_bad = int(table.item(0, i) or 0)
        if n_bad:
            raise DataError(
                f"The household-level variable {col!r} takes more than one value in "
                f"{n_bad} household(s); a household-level variable must be constant within "
                "each household (correct the data or do not declare it household-level)."
            )


def _check(method: LocalSuppression, n: int, strata: np.ndarray | None, sizes: np.ndarray,
           strata_name: str | None) -> int:  # fmt: skip
    """``k``, with the in-memory method's infeasibility checks on the counts."""
    k = check_int(method.k, "k", minimum=1)
    if k > n:
        raise InfeasibleError(
            f"k-anonymity with k={k} is impossible with {n} records; choose k <= the number "
            "of records."
        )
    if strata is not None:
        small = int(np.count_nonzero(sizes < k))
        if small:
            raise InfeasibleError(
                f"{small} stratum/strata of {strata_name!r} have fewer than k={k} records, so "
                "k-anonymity within them is impossible; merge small strata or lower k."
            )
    return k


def suppress_by_patterns(
    frame: Any,
    engine: str,
    method: LocalSuppression,
    roles: Mapping[str, Any],
    add_columns: Callable[[Any, str, list[Any]], Any],
) -> tuple[pl.DataFrame, list[str]] | None:
    """The decisions of ``method`` on ``frame``: a table of the row index and one flag column
    per key in the list (True: suppressed), only rows with a flag; None when the keys do not
    pack into one code (the caller collects instead).  ``add_columns(frame, engine, exprs)``
    adds narwhals expressions on the engine (:func:`sdckit.engines._steps.with_columns`).
    See the module docstring."""
    keys = list(roles["keys"])
    strata = roles.get("strata") if method.by_strata else None
    if method.by_strata and not strata:
        raise ColumnError(
            "Local suppression with by_strata=True needs the strata column: give the data "
            "a strata role (strata=...)."
        )
    household = roles.get("household")
    spread = [k for k in keys if k in (roles.get("household_level") or ())]
    if spread:
        _check_households(frame, engine, household, spread)
    if not (method.block_households or spread):
        household = None
    packed = _pattern_code(frame, engine, [*keys, *([strata] if strata else [])])
    if packed is None:
        return None
    code_expr, levels = packed
    with_code = add_columns(frame, engine, [code_expr])
    table = _table(frame, engine, with_code)
    digits = _digits(table.get_column(CODE).to_numpy(), levels)
    m = len(keys)
    codes = np.ascontiguousarray(digits[:, :m])
    counts = table.get_column("n").to_numpy()
    last = table.get_column("last").to_numpy()
    stratum = digits[:, m] if strata else np.zeros(len(counts), dtype=np.int64)
    if strata and (stratum < 0).any():
        raise DataError(
            f"The strata column {strata!r} has missing values; every record needs a stratum."
        )
    sizes = np.bincount(stratum, weights=counts).astype(np.int64)
    k = _check(method, int(counts.sum()), stratum if strata else None, sizes, strata)
    shape = pl.DataFrame({name: codes[:, j] for j, name in enumerate(keys)})
    shape = shape.with_columns(pl.when(pl.col(c) >= 0).then(pl.col(c)) for c in keys)
    priority = key_priority(Microdata(shape, keys=keys), method.importance)
    cards = np.asarray(levels[:m], dtype=np.int64)
    # the greedy per stratum (each a file of its own, as in memory)
    runs = []
    for s in np.unique(stratum):
        idx = np.flatnonzero(stratum == s)
        g = greedy_on_patterns(codes[idx], counts[idx], last[idx], cards, k, priority)
        runs.append((idx, g))
    taken = np.zeros(len(counts), dtype=np.int64)
    for idx, g in runs:
        taken[idx] = g.taken
    touched = np.flatnonzero(taken > 0)
    if not len(touched):
        return pl.DataFrame({ROW: np.zeros(0, np.int64)}), []
    take = [CODE, *([household] if household else [])]
    pattern_codes = table.get_column(CODE).to_numpy()
    found = _where(with_code, engine, CODE, pattern_codes[touched], take)
    # each touched pattern's first `taken` records in file order (collected in file order)
    by_code = np.argsort(pattern_codes)
    which = by_code[np.searchsorted(pattern_codes[by_code], found.get_column(CODE))]
    found = found.with_columns(pl.Series("p", which)).with_columns(
        pl.int_range(pl.len()).over("p").alias("r")
    )
    moved = found.filter(pl.col("r") < pl.Series(taken[which])).sort("p", "r")
    del found
    # moved record (pattern p, rank r) sits at start[p] + r: exactly `taken` of each pattern
    start = np.concatenate(([0], np.cumsum(taken)[:-1]))
    rows_all = moved.get_column(ROW).to_numpy()
    after = np.empty((moved.height, m), dtype=np.int64)
    for idx, g in runs:
        if len(g.moved_pattern):
            at = start[idx[g.moved_pattern]] + g.moved_rank
            after[at] = g.finish(rows_all[at])
    return _close(
        with_code,
        engine,
        method,
        household,
        keys,
        codes,
        counts,
        moved,
        after,
        pattern_codes,
        spread,
    )


def _close(with_code, engine, method, household, keys, codes, counts, moved, after,
           pattern_codes, spread):  # fmt: skip
    """The closures on units and the decision table (see :func:`suppress_by_patterns`)."""
    m = len(keys)
    orig = codes[moved.get_column("p").to_numpy()]
    supp = (after < 0) & (orig >= 0)
    single = moved.select(ROW, "p", *([household] if household else []))
    flags = supp
    if household is not None:
        hit = single.filter(pl.Series(supp.any(axis=1))).get_column(household).unique()
        if hit.len():
            mates = _where(with_code, engine, household, hit.to_numpy(), [CODE, household])
            order = np.argsort(pattern_codes)
            p = order[np.searchsorted(pattern_codes[order], mates.get_column(CODE))]
            mates = mates.with_columns(pl.Series("p", p)).filter(
                ~pl.col(ROW).is_in(single.get_column(ROW).implode())
            )
            single = pl.concat([single, mates.select(ROW, "p", household)])
            flags = np.vstack([supp, np.zeros((mates.height, m), dtype=bool)])
    p_single = single.get_column("p").to_numpy()
    rest = counts - np.bincount(p_single, minlength=len(counts))
    others = np.flatnonzero(rest > 0)
    unit_codes = np.vstack([codes[p_single], codes[others]])
    unit_flags = np.vstack([flags, np.zeros((len(others), m), dtype=bool)])
    weights = np.concatenate([np.ones(len(p_single), np.int64), rest[others]])
    households = None
    if household is not None and method.block_households:
        ids = single.get_column(household)
        households = ids.append(pl.Series(household, [None] * len(others), dtype=ids.dtype))
    if method.block_inference or households is not None:
        unit_flags = close_on_units(
            unit_codes, unit_flags, weights, households, bool(method.block_inference)
        )
    final = unit_flags[: len(p_single)]
    # the release rule of household-level keys: a value lost by one member is lost by all
    # (every member of such a household is among the single records)
    for j in (keys.index(name) for name in spread):
        ids = single.get_column(household)
        lost = ids.filter(pl.Series(final[:, j])).unique().implode()
        final[:, j] |= ids.is_in(lost).to_numpy() & (codes[p_single, j] >= 0)
    used = [j for j in range(m) if final[:, j].any()]
    hit_rows = final.any(axis=1)
    decisions = pl.DataFrame(
        {
            ROW: single.get_column(ROW).to_numpy()[hit_rows].astype(np.int64),
            **{f"__sdckit_s{i}": final[hit_rows, j] for i, j in enumerate(used)},
        }
    )
    return decisions, [keys[j] for j in used]
