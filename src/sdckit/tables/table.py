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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit._results import Summary
from sdckit._validation import check_choice
from sdckit.errors import DataError, ParameterError
from sdckit.tables._build import frame_cells, microdata_cells
from sdckit.tables._contributors import Contributions
from sdckit.tables._output import internal_frame, published_frame, write_table
from sdckit.tables._status import CellStatus
from sdckit.tables.hierarchy import Hierarchy

__all__ = ["CellStatus", "Table"]


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
        Number of contributors of each cell (-1 where unknown): records, respondents (built
        with ``respondent=``) or holdings (built with ``holding=``).
    top : numpy.ndarray
        ``(n_cells, k)`` largest contributions of each cell, in decreasing order (0-padded):
        of records, respondents or holdings, as ``n_contributors`` counts them.
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
    weighted : bool
        Built from weighted microdata (values are weighted totals, ``top`` holds the largest
        expanded contributions ``w_i x_i``, ``n_contributors`` counts respondents).
    records_dropped : int
        Records left out for a missing dimension code (``missing="drop"``) or a missing
        value (``missing_value="drop"``).
    value_decimals : int or None
        The fewest decimals (0 to 9) that write every contribution summed into the cells
        exactly; -1 when some have more; None when not known (a table given by its cells:
        read from its leaf cells).  Written tables round their values to it, dropping the
        noise of binary addition and no digit of the data.
    protected : bool or None
        The verdict on the suppression pattern: True when an audit (or the method's own
        guarantee) found every primary protected, False when it found one that is not, None
        when unknown (any change of status resets it).  A published export is written only
        for a protected pattern (an unknown one is audited first).

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
    weighted: bool = False
    records_dropped: int = 0
    protected: bool | None = None
    value_decimals: int | None = None
    #: The units behind the cells (respondents or holdings), when built from microdata
    #: with a respondent or holding column (None: one record, one contributor).
    contributions: Contributions | None = None
    #: With a holding column, ``n_contributors``/``top`` count and rank holdings; these keep
    #: the respondents' (records' without a respondent column), for rules asking for the
    #: respondent level (``level="respondent"``).  None otherwise.
    respondent_contributors: np.ndarray | None = None
    respondent_top: np.ndarray | None = None
    #: The sensitivity rules that marked the primaries (:func:`~sdckit.tables.apply_rules`),
    #: in order; the union audit judges unions of cells by them (empty: not known).
    rules: tuple[Any, ...] = ()

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
        :class:`DataError` names the first total that does not equal the sum of its parts (by
        its cell number and positions, never by its codes or value).

        Parameters
        ----------
        data : DataFrame
            One row per cell; the dimension columns hold the codes (total codes included).
        dimensions : list of str or dict
            The dimension columns, or ``column -> hierarchy`` (a flat hierarchy over the codes
            found, with total ``"Total"``, when not given).
        value : str
            The column of cell values (numbers; text gives a :class:`DataError`).
        n_contributors, top : str, optional
            Column of contributor counts; column(s) of the largest contributions (for a
            weighted table: the largest weighted contributions ``w_i x_i``).
        """
        cells = frame_cells(data, dimensions, value, n_contributors=n_contributors, top=top)
        return cls.from_array(
            cells.values,
            dict(zip(cells.dimensions, cells.hierarchies, strict=True)),
            n_contributors=cells.n_contributors,
            top=cells.top,
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
        missing: str = "error",
        missing_value: str = "error",
        respondent: str | None = None,
        holding: str | None = None,
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
            Sampling weight.  Cell values are weighted totals ``sum_i w_i x_i`` (weighted
            counts); the contributor counts stay unweighted (respondents, as the minimum
            frequency rule counts them); the largest contributions are the largest expanded
            contributions ``w_i x_i``, which the dominance, p% and pq rules compare with the
            weighted cell total (see :mod:`sdckit.tables.rules`).
        n_top : int, default 3
            How many largest contributions to keep per cell.
        missing : {"error", "category", "drop"}, default "error"
            Records with a missing code in a dimension: an error; a level of its own, coded
            ``"(missing)"`` (a leaf directly under the total of a given hierarchy); or left out
            (their number is in :meth:`summary` as "records dropped").
        missing_value : {"error", "drop"}, default "error"
            Records without a value (null or NaN; item nonresponse) in a magnitude table: an
            error, or left out (counted in "records dropped" too).  Impute them beforehand
            where leaving them out would bias the published totals.
        respondent : str, optional
            Column of respondent (enterprise) ids: a respondent's records (its employees or
            local units) are summed into one contribution per cell, totals included, before
            anything is counted or ranked, so ``n_contributors`` counts respondents and
            ``top`` holds their largest summed contributions (``sum_i w_i x_i`` over the
            respondent's records in the cell when weighted).  A missing id is a
            :class:`~sdckit.errors.DataError`.  Fills :attr:`contributions`.
        holding : str, optional
            Column of holding (enterprise group) ids: the respondents (records, without a
            ``respondent`` column) of one holding are summed into one contributor, and
            ``n_contributors``/``top``/:attr:`contributions` are at the holding level; the
            respondent level is kept in :attr:`respondent_contributors` and
            :attr:`respondent_top` for rules with ``level="respondent"``.  A missing id makes
            its respondent a holding of its own (an independent enterprise); an id that is
            not the same in all records of a respondent is a :class:`DataError`.  See
            :mod:`sdckit.tables._contributors` for the definitions against tau-ARGUS's and
            GaussSuppression's.

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"r": ["a", "a", "b"], "v": [5.0, 1.0, 2.0]})
        >>> t = Table.from_microdata(df, ["r"], "v")
        >>> t.values.tolist(), t.top[0].tolist()
        ([8.0, 6.0, 2.0], [5.0, 2.0, 1.0])
        >>> w = df.with_columns(w=pl.Series([1.0, 4.0, 2.0]))
        >>> tw = Table.from_microdata(w, ["r"], "v", weight="w")
        >>> tw.values.tolist(), tw.top[0].tolist(), tw.n_contributors.tolist()
        ([13.0, 9.0, 4.0], [5.0, 4.0, 4.0], [3, 2, 1])

        Two records of one enterprise are one contributor:

        >>> e = df.with_columns(ent=pl.Series(["e1", "e1", "e2"]))
        >>> te = Table.from_microdata(e, ["r"], "v", respondent="ent")
        >>> te.n_contributors.tolist(), te.top[0].tolist()
        ([2, 1, 1], [6.0, 2.0, 0.0])
        """
        cells = microdata_cells(
            data, dimensions, value, weight=weight, n_top=n_top, missing=missing,
            missing_value=missing_value, respondent=respondent, holding=holding,
        )  # fmt: skip
        table = cls._build(
            cells.dimensions,
            cells.hierarchies,
            cells.values,
            n_contributors=cells.n_contributors,
            top=cells.top,
            weights=cells.weights,
            kind=cells.kind,
        )
        return replace(
            table, weighted=cells.weighted, records_dropped=cells.records_dropped,
            value_decimals=cells.value_decimals, contributions=cells.contributions,
            respondent_contributors=cells.respondent_contributors,
            respondent_top=cells.respondent_top,
        )  # fmt: skip

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
        """A readable name of a cell, such as ``"region='A', industry='Total'"``.

        The codes are data: use this to look a cell up, never in messages or logs that leave
        the agency (:meth:`cell_position` names a cell without its codes).
        """
        nodes = self.node_index[cell]
        return ", ".join(
            f"{d}={h.codes[i]!r}"
            for d, h, i in zip(self.dimensions, self.hierarchies, nodes, strict=True)
        )

    def cell_position(self, cell: int) -> str:
        """A name of a cell without its codes: its number and its position in each dimension.

        Positions count the nodes of each hierarchy in depth-first order, the total first (0).

        Examples
        --------
        >>> import numpy as np
        >>> from sdckit.tables import Table
        >>> t = Table.from_array(np.array([[10, 6, 4], [7, 5, 2], [3, 1, 2]]),
        ...                      {"row": ["a", "b"], "col": ["x", "y"]})
        >>> t.cell_position(5)
        "cell 5 (position 1 in 'row', 2 in 'col')"
        """
        nodes = self.node_index[int(cell)]
        where = ", ".join(f"{int(i)} in {d!r}" for d, i in zip(self.dimensions, nodes, strict=True))
        return f"cell {int(cell)} (position {where})"

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
        """Raise :class:`DataError` naming the first totals that are not the sum of their parts.

        A total is named by its cell number and positions (:meth:`cell_position`), never by
        its codes or value.
        """
        residual = self.constraint_matrix @ self.values
        scale = 1.0 + np.abs(self.values[self.relation_totals])
        bad = np.flatnonzero(np.abs(residual) > tolerance * scale)
        if len(bad):
            named = "; ".join(
                f"{self.cell_position(int(self.relation_totals[r]))} along "
                f"{self.dimensions[int(self.relation_dimensions[r])]!r}"
                for r in bad[:3]
            )
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise DataError(
                f"A total is not the sum of its parts: {named}{more}; correct the table or its "
                "hierarchy (Table.cell_label gives the codes of a cell number)."
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
        """A copy with some attributes replaced (status, protection levels, bounds).

        The copy's :attr:`protected` verdict is reset to None (unknown).
        """
        allowed = {"status", "upper", "lower", "sliding", "lower_bounds", "upper_bounds"}
        unknown = set(changes) - allowed
        if unknown:
            raise ParameterError(f"with_status cannot change {sorted(unknown)}.")
        fixed = {}
        for name, val in changes.items():
            arr = np.asarray(val).ravel().copy()
            if arr.size != self.n_cells:
                raise ParameterError(f"The {name!r} array needs one entry per cell.")
            if name == "status" and not np.isin(arr, list(CellStatus)).all():
                raise ParameterError("The 'status' array must hold CellStatus codes.")
            fixed[name] = arr.astype(np.int8 if name == "status" else np.float64)
        return replace(self, **fixed, protected=None)

    def with_verdict(self, protected: bool | None) -> Table:
        """A copy recording whether the suppression pattern is protected (see :attr:`protected`).

        Set by the suppression methods and by :func:`~sdckit.tables.audit` (on the table of
        its result); a published export refuses a pattern recorded as unprotected.
        """
        if protected is not None and not isinstance(protected, bool | np.bool_):
            raise ParameterError("The 'protected' verdict must be True, False or None.")
        return replace(self, protected=None if protected is None else bool(protected))

    def _cells_mask(self, cells: Any, name: str = "cells") -> np.ndarray:
        arr = np.asarray(cells)
        if arr.dtype == bool:
            if arr.size != self.n_cells:
                raise ParameterError(
                    f"A boolean {name!r} mask needs one entry per cell ({self.n_cells})."
                )
            return arr.ravel().copy()
        if arr.size == 0:
            return np.zeros(self.n_cells, dtype=bool)
        if not np.issubdtype(arr.dtype, np.integer):
            if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
                raise ParameterError(
                    f"The {name!r} must be cell numbers (integers) or a boolean mask."
                )
            arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= self.n_cells:
            raise ParameterError(
                f"The {name!r} must be cell numbers from 0 to {self.n_cells - 1} (the table "
                f"has {self.n_cells} cells); a number outside that range was given."
            )
        mask = np.zeros(self.n_cells, dtype=bool)
        mask[arr.ravel()] = True
        return mask

    def suppress(self, cells: Any, status: CellStatus = CellStatus.SECONDARY) -> Table:
        """A copy with ``cells`` (numbers or a boolean mask) given ``status``.

        Raises
        ------
        ParameterError
            A cell number outside ``0 .. n_cells - 1``, or a mask of the wrong size.
        """
        if status not in list(CellStatus):
            raise ParameterError("The 'status' must be a CellStatus (e.g. CellStatus.SECONDARY).")
        new = self.status.copy()
        new[self._cells_mask(cells)] = status
        return self.with_status(status=new)

    def mark_protected(self, cells: Any) -> Table:
        """A copy with ``cells`` frozen: always published, never chosen as secondaries."""
        return self.suppress(cells, CellStatus.PROTECTED)

    # ------------------------------------------------------------------ output
    def to_frame(self, *, status: bool = True) -> pl.DataFrame:
        """One row per cell: codes, value, contributors, largest contributions, status.

        The internal export: it shows which cells are primary.
        """
        return internal_frame(self, status=status)

    def to_published_frame(self, *, empty: str = "symbol") -> pl.DataFrame:
        """Codes, published value, the flag ``suppressed`` and the published ``symbol``.

        Every suppressed cell carries the same symbol (``x``): the frame does not tell primary
        from secondary suppressions.  An empty cell (no contributor) has the symbol ``-`` and
        no value; ``empty="zero"`` publishes it as 0, ``empty="omit"`` leaves it out.
        """
        return published_frame(self, empty=empty)

    def write(
        self,
        path: str | os.PathLike[str],
        *,
        published: bool = True,
        empty: str = "symbol",
        verdict: Any = None,
    ) -> Path:
        """Write the table as CSV or Parquet (by suffix), atomically; create the directory.

        With ``published=True`` (default) the published export is written (suppressed values
        missing with the symbol ``x``, empty cells as ``empty`` says: see
        :meth:`to_published_frame`); it is refused with a
        :class:`~sdckit.errors.VerificationError` unless the pattern is known to be protected:
        by ``verdict`` (the :class:`~sdckit.tables.AuditResult` of an audit of this pattern)
        or by :attr:`protected` (a suppression method's verdict, or the table of an audit's
        result).  A pattern of unknown status is refused, not audited again: audit it once
        (:func:`sdckit.tables.audit`) and give the result.  ``published=False`` writes the
        internal export with every value and status.
        """
        return write_table(self, path, published=published, empty=empty, verdict=verdict)

    def summary(self) -> Summary:
        """Cells, suppressions and their value."""
        interior = ~self.is_total
        rows = [
            ("dimensions", ", ".join(self.dimensions)),
            ("cells", self.n_cells),
            ("interior cells", int(interior.sum())),
            ("relations", self.constraint_matrix.shape[0]),
            ("weighted", self.weighted),
            ("empty cells", int(np.sum(self.status == CellStatus.EMPTY))),
            ("primary suppressions", int(self.primary.sum())),
            ("secondary suppressions", int(self.secondary.sum())),
            ("value suppressed (secondary)", float(self.values[self.secondary].sum())),
        ]
        if self.records_dropped:
            rows.insert(4, ("records dropped (missing codes or values)", self.records_dropped))
        if self.protected is not None:
            rows.append(("pattern protected", self.protected))
        return Summary(f"{self.kind.capitalize()} table", rows)

    def __repr__(self) -> str:
        dims = " x ".join(
            f"{d}[{h.size}]" for d, h in zip(self.dimensions, self.hierarchies, strict=True)
        )
        return (
            f"Table({dims}, kind={self.kind!r}, primary={int(self.primary.sum())}, "
            f"secondary={int(self.secondary.sum())})"
        )
