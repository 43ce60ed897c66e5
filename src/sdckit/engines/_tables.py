"""Table cells from an engine: leaf cells aggregated on the engine, every margin in numpy.

The engine groups the records by the dimension codes (one row per leaf cell: records, values
present, weighted value sum, weight sum, smallest weight, and the largest expanded contributions
``w_i x_i`` in long form).  The leaf cells are few, so the totals and sub-totals of every
hierarchy are added here, in the same way as :meth:`sdckit.tables.Table.from_microdata`
builds them from records, and the result builds the same :class:`~sdckit.tables.Table`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from sdckit.engines._classes import NW, WMIN, N, W
from sdckit.errors import DataError
from sdckit.tables import Hierarchy, Table
from sdckit.tables._build import MISSING_LABEL, dimension_positions, merge_top, roll_up

__all__ = ["AGGS", "TOPV", "EngineTable", "build_table", "reduce_partials"]

#: Names of the leaf aggregates besides those of the finest risk table.
AGGS = {"nx": "__sdc_nx", "sx": "__sdc_sx"}
#: The column of the largest contributions in long form.
TOPV = "__sdc_top"


def reduce_partials(
    cells: list[pl.DataFrame], tops: list[pl.DataFrame] | None, dims: Sequence[str], n_top: int
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Merge partial leaf aggregates (of batches or partitions) into one row per leaf cell."""
    all_cells = pl.concat(cells, how="vertical_relaxed")
    merged = all_cells.group_by(dims).agg(
        pl.col(N).sum(),
        pl.col(AGGS["nx"]).sum(),
        pl.col(AGGS["sx"]).sum(),
        pl.col(W).sum(),
        pl.col(NW).sum(),
        pl.col(WMIN).min(),
    )
    if tops is None or n_top == 0:
        return merged, None
    all_tops = pl.concat(tops, how="vertical_relaxed")
    best = all_tops.group_by(dims).agg(pl.col(TOPV).top_k(n_top)).explode(TOPV)
    return merged, best


@dataclass(frozen=True, repr=False)
class EngineTable:
    """Every cell of a table built on an engine (totals and sub-totals included).

    Attributes
    ----------
    dimensions : tuple of str
    hierarchies : tuple of Hierarchy
    values, n_contributors, weights : numpy.ndarray
        Cell values (weighted totals, or weighted counts without ``value``), respondents and
        weight sums, in C order over the dimensions (node order of each hierarchy).
    top : numpy.ndarray
        ``(n_cells, n_top)`` largest expanded contributions ``w_i x_i``.
    kind : {"count", "magnitude"}
    weighted : bool
    records_dropped : int
    engine : str
    """

    dimensions: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    values: np.ndarray
    n_contributors: np.ndarray
    top: np.ndarray
    weights: np.ndarray
    kind: str
    weighted: bool
    records_dropped: int
    engine: str

    @property
    def shape(self) -> tuple[int, ...]:
        """Number of codes of each dimension (totals included)."""
        return tuple(h.size for h in self.hierarchies)

    @property
    def cells(self) -> pl.DataFrame:
        """One row per cell: the code of each dimension, ``value``, ``n_contributors``,
        ``weight`` and ``top_1..top_k`` (a frame :meth:`Table.from_frame` reads)."""
        index = np.unravel_index(np.arange(self.values.size), self.shape)
        cols: dict[str, Any] = {
            d: np.asarray(h.codes, dtype=object)[index[j]]
            for j, (d, h) in enumerate(zip(self.dimensions, self.hierarchies, strict=True))
        }
        cols["value"] = self.values
        cols["n_contributors"] = self.n_contributors
        cols["weight"] = self.weights
        for i in range(self.top.shape[1]):
            cols[f"top_{i + 1}"] = self.top[:, i]
        return pl.DataFrame(
            {k: (pl.Series(k, v.tolist(), dtype=pl.String) if v.dtype == object else v)
             for k, v in cols.items()}
        )  # fmt: skip

    def to_table(self) -> Table:
        """The :class:`~sdckit.tables.Table` (the one ``Table.from_microdata`` builds)."""
        table = Table.from_array(
            self.values.reshape(self.shape),
            dict(zip(self.dimensions, self.hierarchies, strict=True)),
            n_contributors=self.n_contributors.reshape(self.shape),
            top=self.top,
            kind=self.kind,
        )
        return replace(
            table,
            weights=self.weights.copy(),
            weighted=self.weighted,
            records_dropped=self.records_dropped,
        )

    def __repr__(self) -> str:
        return (
            f"EngineTable(dimensions={list(self.dimensions)}, cells={self.values.size}, "
            f"kind={self.kind!r}, engine={self.engine!r})"
        )


def build_table(
    leaf: pl.DataFrame,
    tops: pl.DataFrame | None,
    dims: Sequence[str],
    spec: Mapping[str, Any],
    *,
    value: str | None,
    weight: str | None,
    n_top: int,
    missing: str,
    engine: str,
) -> EngineTable:
    """Every cell of the table from the leaf aggregates (see the module docstring)."""
    records = int(leaf.get_column(N).sum()) if leaf.height else 0
    if records < 2:
        raise DataError(
            "The data has fewer than two records; a table for disclosure control needs records."
        )
    if weight is not None:
        if int(leaf.get_column(NW).sum()) != records:
            raise DataError(
                f"The weight column {weight!r} has missing values; every record needs a "
                "positive sampling weight (impute or drop those records)."
            )
        if not np.all(np.isfinite(leaf.get_column(W).to_numpy())):
            raise DataError(
                f"The weight column {weight!r} has infinite or NaN values; weights must be finite."
            )
        if float(leaf.get_column(WMIN).min()) <= 0:  # type: ignore[arg-type]
            raise DataError(
                f"The weight column {weight!r} has zero or negative values; sampling weights "
                "must be positive."
            )
    # the missing-code rule, on the leaf cells
    dropped = 0
    null_any = pl.any_horizontal([pl.col(d).is_null() for d in dims])
    has_null = {d: leaf.get_column(d).null_count() > 0 for d in dims}
    if any(has_null.values()):
        if missing == "error":
            first = next(d for d in dims if has_null[d])
            raise DataError(
                f"The dimension column {first!r} has missing values; every record needs a code. "
                'Set missing = "category" (a level of its own, labelled '
                f'{MISSING_LABEL!r}) or missing = "drop" (leave those records out).'
            )
        if missing == "drop":
            dropped = int(leaf.filter(null_any).get_column(N).sum())
            if dropped == records:
                raise DataError(
                    "Every record has a missing code in some dimension; nothing is left to "
                    'tabulate with missing = "drop". Use missing = "category" instead.'
                )
            leaf = leaf.filter(~null_any)
            if tops is not None:
                tops = tops.filter(~pl.any_horizontal([pl.col(d).is_null() for d in dims]))
    present = int(leaf.get_column(AGGS["nx"]).sum())
    finite = bool(np.all(np.isfinite(leaf.get_column(AGGS["sx"]).to_numpy())))
    if value is not None and (present != int(leaf.get_column(N).sum()) or not finite):
        raise DataError(
            f"The value column {value!r} has missing or infinite values; impute or drop them."
        )
    cast = [pl.col(d).cast(pl.String) for d in dims]
    leaf = leaf.with_columns(cast)
    if missing == "category":
        for d in dims:
            codes = leaf.get_column(d)
            if has_null[d] and bool((codes == MISSING_LABEL).any()):
                raise DataError(
                    f"The dimension column {d!r} already has the code {MISSING_LABEL!r}, which "
                    'missing = "category" would use for its missing values; rename that code.'
                )
        leaf = leaf.with_columns(pl.col(d).fill_null(MISSING_LABEL) for d in dims)
    hier, leaf_pos = dimension_positions(leaf, dims, spec, missing)
    shape = tuple(h.size for h in hier)
    cell = np.ravel_multi_index(tuple(leaf_pos), shape) if leaf.height else np.zeros(0, int)
    ids, inverse = np.unique(cell, return_inverse=True)
    count = np.bincount(inverse, weights=leaf.get_column(N).cast(pl.Float64).to_numpy())
    total = np.bincount(inverse, weights=leaf.get_column(AGGS["sx"]).to_numpy())
    wsum = np.bincount(inverse, weights=leaf.get_column(W).to_numpy())
    k = max(n_top, 1)
    if tops is not None and tops.height:
        tcodes = tops.with_columns(cast)
        if missing == "category":
            tcodes = tcodes.with_columns(pl.col(d).fill_null(MISSING_LABEL) for d in dims)
        tpos = [
            tcodes.get_column(d).replace_strict(h.index, default=-1, return_dtype=pl.Int64)
            for d, h in zip(dims, hier, strict=True)
        ]
        tcell = np.ravel_multi_index(tuple(p.to_numpy() for p in tpos), shape)
        tvals = tcodes.get_column(TOPV).to_numpy().astype(np.float64)
        top = merge_top(np.searchsorted(ids, tcell), tvals, len(ids), n_top)
    else:
        top = np.zeros((len(ids), k))
    full, full_top = roll_up(ids, count, total, wsum, top, hier, shape, n_top)
    return EngineTable(
        dimensions=tuple(dims),
        hierarchies=tuple(hier),
        values=full["wsum"] if value is None else full["total"],
        n_contributors=np.rint(full["count"]).astype(np.int64),
        top=full_top,
        weights=full["wsum"],
        kind="count" if value is None else "magnitude",
        weighted=weight is not None,
        records_dropped=dropped,
        engine=engine,
    )
