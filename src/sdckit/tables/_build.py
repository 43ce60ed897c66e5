"""Building the cells of a :class:`~sdckit.tables.Table`: from microdata and from a cell frame.

The functions here return plain arrays (values, contributors, largest contributions, weight
sums) over the full grid of a table; :class:`~sdckit.tables.Table` wraps them.

Weighted microdata (``weight=...``): a cell's value is the weighted total ``sum_i w_i x_i``, its
contributor count is the unweighted number of respondents, and its largest contributions are
the largest *expanded* contributions ``w_i x_i`` (see :mod:`sdckit.tables.rules` for what the
sensitivity rules make of them).

Error messages never quote a data value (no code, no cell value): polars errors, which do, are
caught and replaced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import to_polars
from sdckit._validation import check_choice, check_columns_exist, check_int, column_list
from sdckit.errors import DataError, ParameterError
from sdckit.microdata import as_microdata
from sdckit.tables._contributors import (
    Contributions,
    ancestor_cells,
    roll_up_units,
    unit_codes,
)
from sdckit.tables.hierarchy import Hierarchy

__all__ = [
    "MISSING_LABEL",
    "FrameCells",
    "MicrodataCells",
    "decimals_of",
    "frame_cells",
    "microdata_cells",
]

#: The code of the level that collects missing dimension values (``missing="category"``).
MISSING_LABEL = "(missing)"


def merge_top(ids: np.ndarray, values: np.ndarray, n: int, k: int) -> np.ndarray:
    """Largest ``k`` values per id (``ids`` in 0..n-1), zero-padded: an ``(n, k)`` array."""
    top = np.zeros((n, k), dtype=np.float64)
    keep = np.isfinite(values)
    ids, values = ids[keep], values[keep]
    if len(ids) == 0:
        return top
    # by id, largest value first: one float sort, then a stable sort of the (narrowed) ids;
    # twice as fast as a lexsort on millions of (unit, cell) pairs (ties are equal values)
    order = np.argsort(-values)
    narrow = ids[order].astype(np.int32) if n < 2**31 else ids[order]
    order = order[np.argsort(narrow, kind="stable")]
    ids_sorted = ids[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ids_sorted)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(ids_sorted)]))
    rank = np.arange(len(ids_sorted)) - first
    sel = rank < k
    top[ids_sorted[sel], rank[sel]] = values[order][sel]
    return top


def roll_up(
    ids: np.ndarray,
    count: np.ndarray,
    total: np.ndarray,
    wsum: np.ndarray,
    top: np.ndarray,
    hier: Sequence[Any],
    shape: tuple[int, ...],
    n_top: int,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every total and sub-total of the leaf cells ``ids`` (cell numbers in C order of ``shape``).

    ``count``, ``total``, ``wsum`` and ``top`` (largest contributions, zero-padded) are per leaf
    cell; each dimension in turn adds every cell to all its ancestors in that dimension's
    hierarchy (one vectorised pass per dimension).  Returns the three sums over all cells (keys
    ``count``, ``total``, ``wsum``) and the ``(n_cells, n_top)`` largest contributions.
    """
    strides = np.array([int(np.prod(shape[j + 1 :])) for j in range(len(shape))])
    for d, h in enumerate(hier):
        row, new_cell = ancestor_cells(ids, h, int(strides[d]), shape[d])
        ids, inverse = np.unique(new_cell, return_inverse=True)
        count = np.bincount(inverse, weights=count[row])
        total = np.bincount(inverse, weights=total[row])
        wsum = np.bincount(inverse, weights=wsum[row])
        k = top.shape[1]
        top_vals = top[row].ravel()
        top_vals[top_vals == 0] = np.nan  # padding, not a contribution
        top = merge_top(np.repeat(inverse, k), top_vals, len(ids), k)
    n_cells = int(np.prod(shape))
    full = {name: np.zeros(n_cells) for name in ("count", "total", "wsum")}
    full["count"][ids], full["total"][ids], full["wsum"][ids] = count, total, wsum
    full_top = np.zeros((n_cells, n_top))
    if n_top:
        full_top[ids] = top[:, :n_top]
    return full, full_top


def _dimension_spec(dimensions: Sequence[str] | Mapping[str, Any]) -> tuple[list[str], dict]:
    spec = dict(dimensions) if isinstance(dimensions, Mapping) else dict.fromkeys(dimensions)
    dims = list(column_list(list(spec), "dimensions"))
    if not dims:
        raise ParameterError("The 'dimensions' parameter needs at least one column.")
    return dims, spec


def _numeric(frame: pl.DataFrame, column: str, role: str, dtype: Any = pl.Float64) -> np.ndarray:
    """A column as numbers; text that is not a number gives a DataError without the value."""
    try:
        series = frame.get_column(column).cast(dtype, strict=True)
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        raise DataError(
            f"The {role} column {column!r} has entries that are not numbers; convert the "
            "column to numbers (or fix those rows) first."
        ) from None
    return series.to_numpy()


def _with_missing_leaf(h: Hierarchy, label: str) -> Hierarchy:
    """``h`` with one more leaf ``label`` directly under its total."""
    if label in h.index:
        return h
    tree: dict[str, list[str]] = {}
    for i, p in enumerate(h.parent.tolist()):
        if p >= 0:
            tree.setdefault(h.codes[p], []).append(h.codes[i])
    tree.setdefault(h.total, []).append(label)
    return Hierarchy.from_dict(tree)


def dimension_positions(
    frame: pl.DataFrame, dims: Sequence[str], spec: Mapping[str, Any], missing: str
) -> tuple[list[Hierarchy], list[np.ndarray]]:
    """The hierarchy of each dimension and the position of each row's code in it.

    The codes are read as text; with ``missing = "category"`` the missing label (already filled
    in) becomes a leaf directly under the total of a given hierarchy.  Codes that are not
    leaves of their hierarchy are a :class:`DataError` naming the column.
    """
    hier: list[Hierarchy] = []
    leaf_pos: list[np.ndarray] = []
    for d in dims:
        codes = frame.get_column(d).cast(pl.String)
        h = Hierarchy.coerce(spec[d], codes.unique().sort().to_list())
        if missing == "category" and spec[d] is not None and bool((codes == MISSING_LABEL).any()):
            h = _with_missing_leaf(h, MISSING_LABEL)
        mapped = codes.replace_strict(h.index, default=-1, return_dtype=pl.Int64).to_numpy()
        leaves = np.zeros(h.size, dtype=bool)
        leaves[h.leaves] = True
        if np.any(mapped < 0) or not np.all(leaves[np.maximum(mapped, 0)]):
            raise DataError(
                f"The dimension column {d!r} has codes that are not leaves of its "
                "hierarchy; add them to the hierarchy (as leaves) or recode them."
            )
        hier.append(h)
        leaf_pos.append(mapped)
    return hier, leaf_pos


@dataclass(frozen=True)
class MicrodataCells:
    """The aggregated cells of a table built from microdata."""

    dimensions: list[str]
    hierarchies: list[Hierarchy]
    values: np.ndarray
    n_contributors: np.ndarray
    top: np.ndarray
    weights: np.ndarray
    kind: str
    weighted: bool
    records_dropped: int
    value_decimals: int
    contributions: Contributions | None = None
    respondent_contributors: np.ndarray | None = None
    respondent_top: np.ndarray | None = None


def _missing_codes(
    frame: pl.DataFrame, dims: list[str], missing: str
) -> tuple[pl.DataFrame, np.ndarray | None, int]:
    """Apply the ``missing`` rule; return the frame, the kept-record mask and the drop count."""
    nulls = {d: frame.get_column(d).null_count() for d in dims}
    if not any(nulls.values()):
        return frame, None, 0
    if missing == "error":
        first = next(d for d in dims if nulls[d])
        raise DataError(
            f"The dimension column {first!r} has missing values; every record needs a code. "
            'Set missing = "category" (a level of its own, labelled '
            f'{MISSING_LABEL!r}) or missing = "drop" (leave those records out).'
        )
    if missing == "drop":
        mask = ~frame.select(pl.any_horizontal([pl.col(d).is_null() for d in dims])).to_series()
        keep = mask.to_numpy()
        dropped = int((~keep).sum())
        if dropped == frame.height:
            raise DataError(
                "Every record has a missing code in some dimension; nothing is left to tabulate "
                'with missing = "drop". Use missing = "category" instead.'
            )
        return frame.filter(mask), keep, dropped
    out = frame
    for d in dims:
        if not nulls[d]:
            continue
        codes = frame.get_column(d).cast(pl.String)
        if (codes == MISSING_LABEL).any():
            raise DataError(
                f"The dimension column {d!r} already has the code {MISSING_LABEL!r}, which "
                'missing = "category" would use for its missing values; rename that code.'
            )
        out = out.with_columns(codes.fill_null(MISSING_LABEL).alias(d))
    return out, None, 0


def _missing_values(
    frame: pl.DataFrame, keep: np.ndarray | None, dropped: int, value: str, n_records: int
) -> tuple[pl.DataFrame, np.ndarray | None, int]:
    """Leave out the records without a value (``missing_value="drop"``); ``keep`` is the
    kept-record mask of the dimension rule (over all ``n_records``), updated."""
    column = frame.get_column(value)
    absent = column.is_null()
    if column.dtype.is_float():
        absent = absent | column.is_nan().fill_null(True)
    n = int(absent.sum())
    if n == 0:
        return frame, keep, dropped
    if n == frame.height:
        raise DataError(
            f"The value column {value!r} is missing in every record; nothing is left to "
            "tabulate. Check the column (or its missing-value codes)."
        )
    present = (~absent).to_numpy()
    kept = np.ones(n_records, dtype=bool) if keep is None else keep.copy()
    kept[np.flatnonzero(kept)[~present]] = False
    return frame.filter(pl.Series(present)), kept, dropped + n


def decimals_of(inputs: np.ndarray) -> int | None:
    """The fewest decimals (0 to 9) that write every input value exactly (None: more)."""
    x = np.asarray(inputs, dtype=np.float64).ravel()
    x = x[np.isfinite(x) & (x != 0)]
    if x.size == 0:
        return None
    ulps = 2 * np.spacing(np.abs(x))  # a decimal read into a float is within half an ulp
    for decimals in range(10):
        if np.all(np.abs(x - np.round(x, decimals)) <= ulps):
            return decimals
    return None


def microdata_cells(
    data: Any,
    dimensions: Sequence[str] | Mapping[str, Any],
    value: str | None,
    *,
    weight: str | None,
    n_top: int,
    missing: str,
    missing_value: str = "error",
    respondent: str | None = None,
    holding: str | None = None,
) -> MicrodataCells:
    """Aggregate microdata into every cell of the table (totals and sub-totals included).

    With ``respondent`` and/or ``holding``, the contributor counts and largest contributions
    are those of the units (see :func:`_unit_level`).
    """
    dims, spec = _dimension_spec(dimensions)
    n_top = check_int(n_top, "n_top", minimum=1)
    check_choice(missing, "missing", ("error", "category", "drop"))
    check_choice(missing_value, "missing_value", ("error", "drop"))
    md = as_microdata(data, keys=list(dims), numeric=value, weight=weight, max_levels=10**9)
    _check_unit_columns(md.frame.columns, dims, value, weight, respondent, holding)
    frame, keep, dropped = _missing_codes(md.frame, dims, missing)
    if value is not None and missing_value == "drop":
        frame, keep, dropped = _missing_values(frame, keep, dropped, value, md.frame.height)
    hier, leaf_pos = dimension_positions(frame, dims, spec, missing)
    shape = tuple(h.size for h in hier)
    x = np.ones(frame.height) if value is None else _numeric(frame, value, "value")
    if not np.all(np.isfinite(x)):
        raise DataError(
            f"The value column {value!r} has missing or infinite values; impute them, or set "
            'missing_value = "drop" (leave the records without a value out).'
        )
    w = md.weights()
    if w is not None and keep is not None:
        w = w[keep]
    weighted = w is not None
    w = np.ones(frame.height) if w is None else w
    # the precision of every contribution summed (the published sums are rounded to it)
    decimals = decimals_of(w * x)
    cell = np.ravel_multi_index(tuple(leaf_pos), shape)
    ids, inverse = np.unique(cell, return_inverse=True)
    count = np.bincount(inverse).astype(np.float64)
    total = np.bincount(inverse, weights=w * x)
    wsum = np.bincount(inverse, weights=w)
    # expanded contributions: with weights, each respondent contributes w_i * x_i to the cell
    top = merge_top(inverse, w * x, len(ids), n_top)
    full, full_top = roll_up(ids, count, total, wsum, top, hier, shape, n_top)
    n_contrib = np.rint(full["count"]).astype(np.int64)
    units: dict[str, Any] = {}
    if respondent is not None or holding is not None:
        units = _unit_level(frame, respondent, holding, cell, w * x, hier, shape, n_top)
        if "respondent_contributors" not in units and holding is not None:
            # holdings of records: the record level is the individual level
            units["respondent_contributors"], units["respondent_top"] = n_contrib, full_top
        n_contrib, full_top = units.pop("n_contributors"), units.pop("top")
    return MicrodataCells(
        dimensions=dims,
        hierarchies=hier,
        values=full["wsum"] if value is None else full["total"],
        n_contributors=n_contrib,
        top=full_top,
        weights=full["wsum"],
        kind="count" if value is None else "magnitude",
        weighted=weighted,
        records_dropped=dropped,
        value_decimals=-1 if decimals is None else decimals,
        **units,
    )


def _check_unit_columns(
    columns: Sequence[str],
    dims: Sequence[str],
    value: str | None,
    weight: str | None,
    respondent: str | None,
    holding: str | None,
) -> None:
    """The respondent and holding columns exist and play no other role."""
    for role, col in (("respondent", respondent), ("holding", holding)):
        if col is None:
            continue
        if not isinstance(col, str):
            raise ParameterError(f"The {role!r} parameter must be a column name.")
        check_columns_exist([col], list(columns), "data")
        if col in dims or col in (value, weight):
            raise ParameterError(
                f"The {role} column {col!r} is also a dimension, the value or the weight; "
                f"give the column of {role} ids (one id per {role}) instead."
            )
    if respondent is not None and respondent == holding:
        raise ParameterError(
            f"The respondent and holding columns are the same ({respondent!r}); the holding "
            "column groups respondents into enterprise groups. Give one of them only."
        )


def _unit_level(
    frame: pl.DataFrame,
    respondent: str | None,
    holding: str | None,
    leaf: np.ndarray,
    contribution: np.ndarray,
    hier: Sequence[Hierarchy],
    shape: tuple[int, ...],
    n_top: int,
) -> dict[str, Any]:
    """Contributor counts and largest contributions of respondents and holdings.

    A unit's contribution to a cell is the sum of its records' contributions (``w_i x_i``)
    there, totals included.  The table's ``n_contributors``/``top`` and ``contributions`` are at
    the holding level when ``holding`` is given, else at the respondent level; with both, the
    respondent level is kept as ``respondent_contributors``/``respondent_top``.
    """
    codes = unit_codes(frame, respondent, holding)
    n_cells = int(np.prod(shape))
    out: dict[str, Any] = {}
    level: Contributions | None = None
    if codes.respondent is not None:
        u, c, v = roll_up_units(codes.respondent, leaf, contribution, hier, shape)
        n_resp = int(codes.respondent.max()) + 1 if len(u) else 0
        level = Contributions("respondent", u, c, v, n_resp)
        if codes.respondent_of_holding is not None:
            # the holding level, from the respondent level: a holding's respondents summed
            hu, hc, hv = roll_up_units(codes.respondent_of_holding[u], c, v, [], (n_cells,))
            out["respondent_contributors"] = np.bincount(c, minlength=n_cells).astype(np.int64)
            out["respondent_top"] = merge_top(c, v, n_cells, n_top)
            n_hold = int(codes.respondent_of_holding.max()) + 1 if n_resp else 0
            level = Contributions(
                "holding", hu, hc, hv, n_hold, respondent_of_holding=codes.respondent_of_holding
            )
    elif codes.holding is not None:
        u, c, v = roll_up_units(codes.holding, leaf, contribution, hier, shape)
        n_hold = int(codes.holding.max()) + 1 if len(u) else 0
        level = Contributions("holding", u, c, v, n_hold)
    if level is None:  # pragma: no cover - the caller gives a respondent or a holding
        raise ParameterError("Give a respondent or a holding column.")
    out["contributions"] = level
    out["n_contributors"] = np.bincount(level.cell, minlength=n_cells).astype(np.int64)
    out["top"] = merge_top(level.cell, level.value, n_cells, n_top)
    return out


@dataclass(frozen=True)
class FrameCells:
    """The cells of a table given one row per cell."""

    dimensions: list[str]
    hierarchies: list[Hierarchy]
    values: np.ndarray
    n_contributors: np.ndarray | None
    top: np.ndarray | None


def frame_cells(
    data: Any,
    dimensions: Sequence[str] | Mapping[str, Any],
    value: str,
    *,
    n_contributors: str | None,
    top: str | Sequence[str] | None,
) -> FrameCells:
    """Place the rows of a cell frame (totals included) on the full grid of the table."""
    frame, _ = to_polars(data)
    dims, spec = _dimension_spec(dimensions)
    tops = column_list(top, "top")
    if not isinstance(value, str):
        raise ParameterError("The 'value' parameter must be a column name.")
    extra = [c for c in (value, n_contributors) if c is not None]
    check_columns_exist([*dims, *extra, *tops], list(frame.columns), "table")
    hier = []
    for d in dims:
        codes = frame.get_column(d).cast(pl.String)
        if codes.null_count():
            raise DataError(
                f"The dimension column {d!r} has missing codes; every cell needs a code in "
                "every dimension (totals included)."
            )
        if spec[d] is None:
            found = [c for c in codes.unique().sort().to_list() if c != "Total"]
            hier.append(Hierarchy.flat(found))
        else:
            hier.append(Hierarchy.coerce(spec[d]))
    shape = tuple(h.size for h in hier)
    pos = []
    for d, h in zip(dims, hier, strict=True):
        codes = frame.get_column(d).cast(pl.String)
        mapped = codes.replace_strict(h.index, default=-1, return_dtype=pl.Int64).to_numpy()
        if np.any(mapped < 0):
            raise DataError(
                f"The dimension column {d!r} has codes that are not in its hierarchy; add "
                "them to the hierarchy or drop those rows."
            )
        pos.append(mapped)
    flat = np.ravel_multi_index(tuple(pos), shape)
    if len(np.unique(flat)) != len(flat):
        raise DataError("The table lists a cell twice; give each combination of codes once.")
    n = int(np.prod(shape))
    vals = np.zeros(n)
    given = _numeric(frame, value, "value")
    if not np.all(np.isfinite(given)):
        raise DataError(
            f"The value column {value!r} has missing or infinite values; give every cell a value."
        )
    vals[flat] = given
    contrib = None
    if n_contributors is not None:
        counts = _numeric(frame, n_contributors, "contributor-count")
        if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts % 1 != 0):
            raise DataError(
                f"The contributor-count column {n_contributors!r} must hold whole numbers >= 0 "
                "in every row."
            )
        contrib = np.zeros(n, dtype=np.int64)
        contrib[flat] = counts.astype(np.int64)
        contrib = contrib.reshape(shape)
    topa = None
    if tops:
        topa = np.zeros((n, len(tops)))
        for j, c in enumerate(tops):
            col = _numeric(frame, c, "largest-contribution")
            if not np.all(np.isfinite(col)):
                raise DataError(
                    f"The largest-contribution column {c!r} has missing or infinite values; "
                    "give 0 where a cell has fewer contributors."
                )
            topa[flat, j] = col
    return FrameCells(dims, hier, vals.reshape(shape), contrib, topa)
