"""The table model: cells over hierarchical dimensions, their linear relations and status.

A :class:`Table` holds every cell of the cross product of its dimensions' hierarchies (totals and
sub-totals included), in C order over the dimensions.  Each cell has a value (a count or a
magnitude), its number of contributors, its largest contributions, the sum of its weights, a
status (safe, primary, secondary, empty, protected) and the protection levels the sensitivity
rules require.  The additivity relations (each total equals the sum of its parts) are a sparse
matrix ``M`` with ``M @ values == 0``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit._frames import to_polars
from sdckit._results import Summary
from sdckit._validation import check_choice, check_columns_exist, check_int, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import as_microdata
from sdckit.tables.hierarchy import Hierarchy

__all__ = ["CellStatus", "Table"]


class CellStatus(IntEnum):
    """Status of a cell: published (safe), suppressed (primary, secondary), empty, protected."""

    SAFE = 0
    PRIMARY = 1
    SECONDARY = 2
    EMPTY = 3
    PROTECTED = 4


STATUS_NAMES = np.array(["safe", "primary", "secondary", "empty", "protected"])


def _merge_top(ids: np.ndarray, values: np.ndarray, n: int, k: int) -> np.ndarray:
    """Largest ``k`` values per id (``ids`` in 0..n-1), zero-padded: an ``(n, k)`` array."""
    top = np.zeros((n, k), dtype=np.float64)
    keep = np.isfinite(values)
    ids, values = ids[keep], values[keep]
    if len(ids) == 0:
        return top
    order = np.lexsort((-values, ids))
    ids_sorted = ids[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ids_sorted)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(ids_sorted)]))
    rank = np.arange(len(ids_sorted)) - first
    sel = rank < k
    top[ids_sorted[sel], rank[sel]] = values[order][sel]
    return top


@dataclass(frozen=True, repr=False, eq=False)
class Table:
    """A statistical table with hierarchical dimensions (build it with a ``from_*`` method).

    Attributes
    ----------
    dimensions : tuple of str
        Names of the dimensions (the spanning variables).
    hierarchies : tuple of Hierarchy
        One tree of codes per dimension.
    values : numpy.ndarray
        Cell values in C order over the dimensions (node order of each hierarchy).
    n_contributors : numpy.ndarray
        Number of contributing records of each cell (-1 where unknown).
    top : numpy.ndarray
        ``(n_cells, k)`` largest contributions of each cell, in decreasing order (0-padded).
    weights : numpy.ndarray
        Sum of the sampling weights of each cell (the count when unweighted).
    status : numpy.ndarray
        :class:`CellStatus` code of each cell.
    upper, lower, sliding : numpy.ndarray
        Required upper, lower and sliding protection levels (0 for cells without a rule).
    lower_bounds, upper_bounds : numpy.ndarray
        A priori bounds an intruder knows for each cell (default ``[0, inf)`` when every value
        is non-negative, else unbounded).
    kind : {"count", "magnitude"}

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table
    >>> t = Table.from_array(np.array([[10, 6, 4], [7, 5, 2], [3, 1, 2]]),
    ...                      {"row": ["a", "b"], "col": ["x", "y"]})
    >>> t.n_cells, t.constraint_matrix.shape
    (9, (6, 9))
    """

    dimensions: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    values: np.ndarray
    n_contributors: np.ndarray
    top: np.ndarray
    weights: np.ndarray
    status: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    sliding: np.ndarray
    lower_bounds: np.ndarray
    upper_bounds: np.ndarray
    kind: str = "magnitude"

    # ------------------------------------------------------------------ construction
    @classmethod
    def _build(
        cls,
        dimensions: Sequence[str],
        hierarchies: Sequence[Hierarchy],
        values: np.ndarray,
        *,
        n_contributors: np.ndarray | None = None,
        top: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        kind: str = "magnitude",
    ) -> Table:
        values = np.asarray(values, dtype=np.float64).ravel()
        n = values.size
        known = n_contributors is not None
        contrib = (
            np.asarray(n_contributors, dtype=np.int64).ravel()
            if known
            else np.full(n, -1, dtype=np.int64)
        )
        if top is None:
            top = np.zeros((n, 0))
        empty = contrib == 0 if known else values == 0
        status = np.where(empty, CellStatus.EMPTY, CellStatus.SAFE).astype(np.int8)
        nonneg = bool(np.all(values >= 0))
        zeros = np.zeros(n)
        return cls(
            dimensions=tuple(dimensions),
            hierarchies=tuple(hierarchies),
            values=values,
            n_contributors=contrib,
            top=np.asarray(top, dtype=np.float64),
            weights=values.copy() if weights is None else np.asarray(weights, dtype=np.float64),
            status=status,
            upper=zeros,
            lower=zeros.copy(),
            sliding=zeros.copy(),
            lower_bounds=np.zeros(n) if nonneg else np.full(n, -np.inf),
            upper_bounds=np.full(n, np.inf),
            kind=kind,
        )

    @classmethod
    def from_array(
        cls,
        values: Any,
        hierarchies: Mapping[str, Any],
        *,
        n_contributors: Any = None,
        top: Any = None,
        kind: str | None = None,
        tolerance: float = 1e-6,
    ) -> Table:
        """A table from an array over the full grid (totals included) and its hierarchies.

        Parameters
        ----------
        values : array_like
            Shape ``(h_1.size, ..., h_D.size)``, indexed by the node numbers of each hierarchy
            (for a flat dimension: the total first, then the codes).
        hierarchies : dict
            ``dimension name -> Hierarchy``, dict ``parent -> children`` or list of codes.
        n_contributors, top : array_like, optional
            Contributors per cell (same shape as ``values``), largest contributions
            (shape ``values.shape + (k,)``).
        kind : {"count", "magnitude"}, optional
            Default: "count" when every value is an integer, else "magnitude".
        tolerance : float
            Relative tolerance of the additivity check.

        Raises
        ------
        DataError
            The shape does not match the hierarchies, or a total is not the sum of its parts.
        """
        dims = list(hierarchies)
        hier = [Hierarchy.coerce(hierarchies[d]) for d in dims]
        arr = np.asarray(values, dtype=np.float64)
        shape = tuple(h.size for h in hier)
        if arr.shape != shape:
            raise DataError(
                f"The values have shape {arr.shape} but the hierarchies need {shape} (every "
                "code of every dimension, totals included)."
            )
        if not np.all(np.isfinite(arr)):
            raise DataError("The table has missing or infinite values; give every cell a value.")
        if kind is None:
            kind = "count" if np.all(arr == np.round(arr)) and np.all(arr >= 0) else "magnitude"
        check_choice(kind, "kind", ("count", "magnitude"))
        topa = None
        if top is not None:
            topa = np.asarray(top, dtype=np.float64).reshape(arr.size, -1)
        table = cls._build(
            dims,
            hier,
            arr,
            n_contributors=None if n_contributors is None else np.asarray(n_contributors),
            top=topa,
            kind=kind,
        )
        table.check_additivity(tolerance)
        return table

    @classmethod
    def from_frame(
        cls,
        data: Any,
        dimensions: Sequence[str] | Mapping[str, Any],
        value: str,
        *,
        n_contributors: str | None = None,
        top: str | Sequence[str] | None = None,
        kind: str | None = None,
        tolerance: float = 1e-6,
    ) -> Table:
        """A table given as a frame with one row per cell, totals included.

        Cells absent from the frame are empty (value 0).  The totals must add up: a
        :class:`DataError` names the first total that does not equal the sum of its parts.

        Parameters
        ----------
        data : DataFrame
            One row per cell; the dimension columns hold the codes (total codes included).
        dimensions : list of str or dict
            The dimension columns, or ``column -> hierarchy`` (a flat hierarchy over the codes
            found, with total ``"Total"``, when not given).
        value : str
            The column of cell values.
        n_contributors, top : str, optional
            Column of contributor counts; column(s) of the largest contributions.
        """
        frame, _ = to_polars(data)
        spec = dict(dimensions) if isinstance(dimensions, Mapping) else dict.fromkeys(dimensions)
        dims = column_list(list(spec), "dimensions")
        tops = column_list(top, "top")
        extra = [c for c in (value, n_contributors) if c is not None]
        check_columns_exist([*dims, *extra, *tops], list(frame.columns), "table")
        hier = []
        for d in dims:
            codes = frame.get_column(d).cast(pl.String)
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
        vals[flat] = frame.get_column(value).cast(pl.Float64).to_numpy()
        contrib = None
        if n_contributors is not None:
            contrib = np.zeros(n, dtype=np.int64)
            contrib[flat] = frame.get_column(n_contributors).cast(pl.Int64).to_numpy()
        topa = None
        if tops:
            topa = np.zeros((n, len(tops)))
            topa[flat] = frame.select(tops).cast(pl.Float64).to_numpy()
        return cls.from_array(
            vals.reshape(shape),
            dict(zip(dims, hier, strict=True)),
            n_contributors=None if contrib is None else contrib.reshape(shape),
            top=topa,
            kind=kind,
            tolerance=tolerance,
        )

    @classmethod
    def from_microdata(
        cls,
        data: Any,
        dimensions: Sequence[str] | Mapping[str, Any],
        value: str | None = None,
        *,
        weight: str | None = None,
        n_top: int = 3,
    ) -> Table:
        """Aggregate microdata into a table with every total and sub-total.

        Parameters
        ----------
        data : DataFrame or Microdata
            One row per contributor (record).
        dimensions : list of str or dict
            The spanning variables, or ``column -> hierarchy`` (Hierarchy, dict parent ->
            children, or list of codes).  Record codes must be leaves of their hierarchy;
            without a hierarchy a flat one over the codes found is used.
        value : str, optional
            Numeric column to sum (a magnitude table); None gives a frequency table.
        weight : str, optional
            Sampling weight: cell values are weighted sums (weighted counts); the contributor
            counts and largest contributions stay unweighted.
        n_top : int, default 3
            How many largest contributions to keep per cell.

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"r": ["a", "a", "b"], "v": [5.0, 1.0, 2.0]})
        >>> t = Table.from_microdata(df, ["r"], "v")
        >>> t.values.tolist(), t.top[0].tolist()
        ([8.0, 6.0, 2.0], [5.0, 2.0, 1.0])
        """
        spec = dict(dimensions) if isinstance(dimensions, Mapping) else dict.fromkeys(dimensions)
        dims = column_list(list(spec), "dimensions")
        if not dims:
            raise ParameterError("The 'dimensions' parameter needs at least one column.")
        n_top = check_int(n_top, "n_top", minimum=1)
        md = as_microdata(data, keys=list(dims), numeric=value, weight=weight, max_levels=10**9)
        frame = md.frame
        hier: list[Hierarchy] = []
        leaf_pos: list[np.ndarray] = []
        for d in dims:
            codes = frame.get_column(d)
            if codes.null_count():
                raise DataError(
                    f"The dimension column {d!r} has missing values; every record needs a code."
                )
            codes = codes.cast(pl.String)
            h = Hierarchy.coerce(spec[d], codes.unique().sort().to_list())
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
        shape = tuple(h.size for h in hier)
        n_cells = int(np.prod(shape))
        x = (
            np.ones(frame.height)
            if value is None
            else frame.get_column(value).cast(pl.Float64).to_numpy()
        )
        if not np.all(np.isfinite(x)):
            raise DataError(
                f"The value column {value!r} has missing or infinite values; impute or drop them."
            )
        w = md.weights()
        w = np.ones(frame.height) if w is None else w
        cell = np.ravel_multi_index(tuple(leaf_pos), shape)
        ids, inverse = np.unique(cell, return_inverse=True)
        count = np.bincount(inverse).astype(np.float64)
        total = np.bincount(inverse, weights=w * x)
        wsum = np.bincount(inverse, weights=w)
        top = _merge_top(inverse, x, len(ids), n_top)
        strides = np.array([int(np.prod(shape[j + 1 :])) for j in range(len(shape))])
        for d, h in enumerate(hier):
            node = (ids // strides[d]) % shape[d]
            pair_node, pair_anc = h.ancestor_pairs
            n_anc = np.bincount(pair_node, minlength=h.size)
            start = np.r_[0, np.cumsum(n_anc)[:-1]]
            reps = n_anc[node]
            row = np.repeat(np.arange(len(ids)), reps)
            offset = np.arange(len(row)) - np.repeat(np.cumsum(reps) - reps, reps)
            anc = pair_anc[np.repeat(start[node], reps) + offset]
            new_cell = ids[row] + (anc - node[row]) * strides[d]
            ids, inverse = np.unique(new_cell, return_inverse=True)
            count = np.bincount(inverse, weights=count[row])
            total = np.bincount(inverse, weights=total[row])
            wsum = np.bincount(inverse, weights=wsum[row])
            k = top.shape[1]
            top_vals = top[row].ravel()
            top_vals[top_vals == 0] = np.nan  # padding, not a contribution
            top = _merge_top(np.repeat(inverse, k), top_vals, len(ids), k)
        full = {name: np.zeros(n_cells) for name in ("count", "total", "wsum")}
        full["count"][ids], full["total"][ids], full["wsum"][ids] = count, total, wsum
        full_top = np.zeros((n_cells, n_top))
        full_top[ids] = top
        return cls._build(
            dims,
            hier,
            full["wsum"] if value is None else full["total"],
            n_contributors=np.rint(full["count"]).astype(np.int64),
            top=full_top,
            weights=full["wsum"],
            kind="count" if value is None else "magnitude",
        )

    # ------------------------------------------------------------------ structure
    @property
    def shape(self) -> tuple[int, ...]:
        """Number of codes of each dimension (totals included)."""
        return tuple(h.size for h in self.hierarchies)

    @property
    def n_cells(self) -> int:
        """Number of cells (totals included)."""
        return int(self.values.size)

    @cached_property
    def node_index(self) -> np.ndarray:
        """``(n_cells, D)`` node number of each cell in each dimension."""
        return np.stack(np.unravel_index(np.arange(self.n_cells), self.shape), axis=1)

    @cached_property
    def is_total(self) -> np.ndarray:
        """True for cells that are a total or sub-total in at least one dimension."""
        out = np.zeros(self.n_cells, dtype=bool)
        for d, h in enumerate(self.hierarchies):
            internal = np.zeros(h.size, dtype=bool)
            internal[h.internal] = True
            out |= internal[self.node_index[:, d]]
        return out

    @cached_property
    def _relations(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        idx = np.arange(self.n_cells).reshape(self.shape)
        rows, cols, vals, totals, dims = [], [], [], [], []
        n_rows = 0
        for d, h in enumerate(self.hierarchies):
            moved = np.moveaxis(idx, d, 0).reshape(h.size, -1)
            other = moved.shape[1]
            for p in h.internal.tolist():
                r = n_rows + np.arange(other)
                rows.append(r)
                cols.append(moved[p])
                vals.append(np.ones(other))
                for c in h.children[p]:
                    rows.append(r)
                    cols.append(moved[c])
                    vals.append(-np.ones(other))
                totals.append(moved[p])
                dims.append(np.full(other, d))
                n_rows += other
        matrix = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n_rows, self.n_cells),
        )
        return matrix, np.concatenate(totals), np.concatenate(dims)

    @property
    def constraint_matrix(self) -> sp.csr_matrix:
        """Sparse ``M`` (one row per relation ``total - sum(parts) = 0``), ``M @ values == 0``."""
        return self._relations[0]

    @property
    def relation_totals(self) -> np.ndarray:
        """For each row of :attr:`constraint_matrix`, the cell number of its total."""
        return self._relations[1]

    @property
    def relation_dimensions(self) -> np.ndarray:
        """For each row of :attr:`constraint_matrix`, the dimension it adds up along."""
        return self._relations[2]

    def cell_label(self, cell: int) -> str:
        """A readable name of a cell, such as ``"region='A', industry='Total'"``."""
        nodes = self.node_index[cell]
        return ", ".join(
            f"{d}={h.codes[i]!r}"
            for d, h, i in zip(self.dimensions, self.hierarchies, nodes, strict=True)
        )

    def cell(self, **codes: str) -> int:
        """The cell number of the cell with the given code in every dimension."""
        if set(codes) != set(self.dimensions):
            raise ParameterError(f"Give a code for every dimension: {list(self.dimensions)}.")
        nodes = []
        for d, h in zip(self.dimensions, self.hierarchies, strict=True):
            code = str(codes[d])
            if code not in h.index:
                raise ParameterError(f"The code given for {d!r} is not in its hierarchy.")
            nodes.append(h.index[code])
        return int(np.ravel_multi_index(tuple(nodes), self.shape))

    def check_additivity(self, tolerance: float = 1e-6) -> None:
        """Raise :class:`DataError` naming the first total that is not the sum of its parts."""
        residual = self.constraint_matrix @ self.values
        scale = 1.0 + np.abs(self.values[self.relation_totals])
        bad = np.flatnonzero(np.abs(residual) > tolerance * scale)
        if len(bad):
            named = "; ".join(
                f"({self.cell_label(int(self.relation_totals[r]))}) along "
                f"{self.dimensions[int(self.relation_dimensions[r])]!r}"
                for r in bad[:3]
            )
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise DataError(
                f"A total is not the sum of its parts: {named}{more}; correct the table or its "
                "hierarchy."
            )

    # ------------------------------------------------------------------ status
    @property
    def suppressed(self) -> np.ndarray:
        """True for primary and secondary suppressions."""
        return (self.status == CellStatus.PRIMARY) | (self.status == CellStatus.SECONDARY)

    @property
    def primary(self) -> np.ndarray:
        """True for primary suppressions."""
        return self.status == CellStatus.PRIMARY

    @property
    def secondary(self) -> np.ndarray:
        """True for secondary suppressions."""
        return self.status == CellStatus.SECONDARY

    def with_status(self, **changes: Any) -> Table:
        """A copy with some attributes replaced (status, protection levels, bounds)."""
        allowed = {"status", "upper", "lower", "sliding", "lower_bounds", "upper_bounds"}
        unknown = set(changes) - allowed
        if unknown:
            raise ParameterError(f"with_status cannot change {sorted(unknown)}.")
        fixed = {}
        for name, val in changes.items():
            arr = np.asarray(val).ravel().copy()
            if arr.size != self.n_cells:
                raise ParameterError(f"The {name!r} array needs one entry per cell.")
            fixed[name] = arr.astype(np.int8 if name == "status" else np.float64)
        return replace(self, **fixed)

    def suppress(self, cells: Any, status: CellStatus = CellStatus.SECONDARY) -> Table:
        """A copy with ``cells`` (numbers or a boolean mask) given ``status``."""
        new = self.status.copy()
        new[np.asarray(cells)] = status
        return self.with_status(status=new)

    def mark_protected(self, cells: Any) -> Table:
        """A copy with ``cells`` frozen: always published, never chosen as secondaries."""
        return self.suppress(cells, CellStatus.PROTECTED)

    # ------------------------------------------------------------------ output
    def to_frame(self, *, status: bool = True) -> pl.DataFrame:
        """One row per cell: codes, value, contributors, largest contributions, status."""
        cols: dict[str, Any] = {}
        for d, (name, h) in enumerate(zip(self.dimensions, self.hierarchies, strict=True)):
            cols[name] = np.asarray(h.codes, dtype=object)[self.node_index[:, d]].astype(str)
        cols["value"] = self.values
        cols["n_contributors"] = self.n_contributors
        for j in range(self.top.shape[1]):
            cols[f"top_{j + 1}"] = self.top[:, j]
        cols["weight_sum"] = self.weights
        cols["is_total"] = self.is_total
        if status:
            cols["status"] = STATUS_NAMES[self.status]
            cols["upper_level"] = self.upper
            cols["lower_level"] = self.lower
            cols["sliding_level"] = self.sliding
        names = [c.lower() for c in cols]
        if len(set(names)) != len(names):
            raise ColumnError("A dimension name clashes with a result column; rename it.")
        return pl.DataFrame(cols)

    def to_published_frame(self) -> pl.DataFrame:
        """Codes, published value (null where suppressed) and status (for export)."""
        frame = self.to_frame().select([*self.dimensions, "value", "status"])
        return frame.with_columns(
            pl.when(pl.Series(self.suppressed)).then(None).otherwise(pl.col("value")).alias("value")
        )

    def write(self, path: str | os.PathLike[str], *, published: bool = True) -> Path:
        """Write the table with its status flags as CSV or Parquet (by suffix), atomically.

        With ``published=True`` suppressed values are written as missing.
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix not in (".csv", ".parquet"):
            raise ParameterError("The 'path' must end in .csv or .parquet.")
        frame = self.to_published_frame() if published else self.to_frame()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        try:
            if suffix == ".csv":
                frame.write_csv(tmp)
            else:
                frame.write_parquet(tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def summary(self) -> Summary:
        """Cells, suppressions and their value."""
        interior = ~self.is_total
        rows = [
            ("dimensions", ", ".join(self.dimensions)),
            ("cells", self.n_cells),
            ("interior cells", int(interior.sum())),
            ("relations", self.constraint_matrix.shape[0]),
            ("empty cells", int(np.sum(self.status == CellStatus.EMPTY))),
            ("primary suppressions", int(self.primary.sum())),
            ("secondary suppressions", int(self.secondary.sum())),
            ("value suppressed (secondary)", float(self.values[self.secondary].sum())),
        ]
        return Summary(f"{self.kind.capitalize()} table", rows)

    def __repr__(self) -> str:
        dims = " x ".join(
            f"{d}[{h.size}]" for d, h in zip(self.dimensions, self.hierarchies, strict=True)
        )
        return (
            f"Table({dims}, kind={self.kind!r}, primary={int(self.primary.sum())}, "
            f"secondary={int(self.secondary.sum())})"
        )
