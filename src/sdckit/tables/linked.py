"""Linked tables: several tables from one microdata file, protected and audited together.

Tables built from the same records share cells: region x sex and region x age both hold the
region margin (every region at the total of the other variable) and the grand total.  A cell of
one table is *common* with a cell of another when both have the same code in every variable the
two tables share and the total in every other variable; common cells have the same value and
contributions, so they are one cell of the linked problem.

:class:`LinkedTables` numbers the distinct cells, maps each table's cells onto them and builds
the combined relation system (the union of the tables' additivity relations, as a sparse matrix
over the distinct cells, duplicate relations removed).  Then:

* :meth:`LinkedTables.apply_rules` marks the primaries of every table and makes the common
  cells agree (a cell primary in one table is primary in all, with the largest levels);
* :meth:`LinkedTables.protect` runs a secondary-suppression method (any of sdckit's, which
  work on one :class:`Table`) by the iterative scheme tau-ARGUS uses for linked tables: protect
  each table in turn with every suppression found so far forced on it (a common cell suppressed
  in one table is suppressed in all), repeat until a pass adds nothing; then audit the combined
  system, and when a primary is under-protected there (the tables leak through their common
  cells) add the cheapest cells that protect it on the combined system (the LP heuristic of the
  repair) and iterate again;
* :meth:`LinkedTables.audit` is the LP audit over the combined system: an intruder who sees all
  the published tables at once;
* ``protect(..., joint_elimination=True)`` first runs one Gaussian elimination over the joint
  model of all the tables (rows: the distinct code combinations of the records, the *atoms*;
  :mod:`sdckit.tables.suppression._gauss_linked`), GaussSuppression's "global" protection.

A pattern can pass each table's audit and fail the joint one: a common margin cell suppressed
in table 1 to protect a primary may be the sum of published cells in table 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit._results import Summary
from sdckit._validation import check_choice, check_real
from sdckit._workers import available_cores
from sdckit.errors import DataError, ParameterError
from sdckit.tables._linked_protect import LinkedProtection
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables.audit._atoms import atom_intervals
from sdckit.tables.table import CellStatus, Table

__all__ = ["LinkedAudit", "LinkedProtection", "LinkedTables"]

_TOTAL = -1  # the code id of "at the total" (or "not a dimension of this table")


@dataclass(frozen=True, eq=False)
class LinkedAudit:
    """The joint LP audit of linked tables.

    Attributes
    ----------
    cells : numpy.ndarray
        Distinct cell numbers (see :attr:`LinkedTables.cell_map`) of the suppressed cells.
    minimum, maximum : numpy.ndarray
        Feasibility interval of each, from every table's published cells at once.
    protected : numpy.ndarray
        True where the requirement of a primary is met (always True for secondaries unless
        ``check_secondary``).
    exact : numpy.ndarray
        True where the interval has zero width.
    locations : tuple of list
        For each audited cell, its ``(table index, cell number)`` in every table holding it.
    """

    cells: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    protected: np.ndarray
    exact: np.ndarray
    locations: tuple[list[tuple[int, int]], ...]

    @property
    def ok(self) -> bool:
        """True when every primary is protected in the combined system."""
        return bool(self.protected.all())

    @property
    def under_protected(self) -> list[tuple[int, int]]:
        """``(table index, cell number)`` of each under-protected cell (its first table)."""
        return [self.locations[k][0] for k in np.flatnonzero(~self.protected)]

    def interval(self, table: int, cell: int, linked: LinkedTables) -> tuple[float, float]:
        """The joint interval of ``cell`` of table ``table``."""
        gid = int(linked.cell_map[table][cell])
        pos = np.flatnonzero(self.cells == gid)
        if not len(pos):
            raise KeyError("that cell is not suppressed")
        return float(self.minimum[pos[0]]), float(self.maximum[pos[0]])

    def summary(self) -> Summary:
        """Counts of audited, exactly disclosed and under-protected distinct cells."""
        return Summary(
            "Joint audit of linked tables",
            [
                ("suppressed distinct cells", len(self.cells)),
                ("disclosed exactly", int(self.exact.sum())),
                ("under-protected cells", int((~self.protected).sum())),
            ],
        )


def _rank(status: np.ndarray) -> np.ndarray:
    """Priority of a status when the tables' copies of a cell are merged."""
    order = np.zeros(max(CellStatus) + 1, dtype=np.int64)
    order[CellStatus.SAFE] = 0
    order[CellStatus.EMPTY] = 1
    order[CellStatus.PROTECTED] = 2
    order[CellStatus.SECONDARY] = 3
    order[CellStatus.PRIMARY] = 4
    return order[status]


class LinkedTables:
    """Tables from one microdata file with their common cells identified.

    Parameters
    ----------
    tables : sequence of Table
        Tables built from the same records (:meth:`from_microdata` builds them).  A variable
        that appears in several tables must have the same hierarchy in each.

    Raises
    ------
    DataError
        Common cells (same codes on the shared variables, totals elsewhere) differ in value:
        the tables do not come from the same records.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"region": ["a", "a", "b", "b", "b"], "sex": ["m", "f", "m", "f", "f"],
    ...                    "age": ["y", "o", "o", "y", "y"]})
    >>> lk = LinkedTables.from_microdata(df, [["region", "sex"], ["region", "age"]])
    >>> lk.n_distinct, len(lk.common_cells)  # 9 + 9 cells, the region margin (3) shared
    (15, 3)
    """

    def __init__(self, tables: Sequence[Table]) -> None:
        tables = tuple(tables)
        if len(tables) < 2 or not all(isinstance(t, Table) for t in tables):
            raise ParameterError("LinkedTables needs at least two Table objects.")
        self.tables: tuple[Table, ...] = tables
        #: leaf node of each variable (columns in :attr:`variables` order) of each atom, the
        #: distinct code combinations of the records (set by :meth:`from_microdata`)
        self.atoms: np.ndarray | None = None
        #: the value of each atom (the weighted response or count of its records)
        self.atom_values: np.ndarray | None = None
        self._index()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_microdata(
        cls,
        data: Any,
        dimensions: Sequence[Sequence[str]],
        value: str | None = None,
        *,
        hierarchies: Mapping[str, Any] | None = None,
        weight: str | None = None,
        n_top: int = 3,
        missing: str = "error",
        respondent: str | None = None,
        holding: str | None = None,
    ) -> LinkedTables:
        """Build one table per list of dimensions from the same records.

        Parameters
        ----------
        data : DataFrame or Microdata
        dimensions : list of lists of str
            The spanning variables of each table.
        value, weight, n_top, respondent, holding : as for :meth:`Table.from_microdata`
            (with ``respondent`` or ``holding`` every table counts and ranks the same units,
            and each table's insider audit knows their contributions)
        hierarchies : dict, optional
            ``variable -> hierarchy``, used for that variable in every table.
        missing : {"error", "category"}
            Missing codes (``"drop"`` would leave different records out of different tables,
            so that their common cells would differ).
        """
        if missing == "drop":
            raise ParameterError(
                'LinkedTables cannot use missing = "drop": each table would leave out other '
                'records and the common cells would differ; use "category" or "error".'
            )
        if isinstance(dimensions, str) or not dimensions:
            raise ParameterError(
                "The 'dimensions' parameter needs one list of variables per table."
            )
        hier = dict(hierarchies or {})
        tables = []
        for dims in dimensions:
            if isinstance(dims, str):
                raise ParameterError(
                    "Each entry of 'dimensions' must be a list of variables (one table)."
                )
            spec = {d: hier.get(d) for d in dims}
            ids = {"respondent": respondent, "holding": holding}
            built = Table.from_microdata(
                data, spec, value, weight=weight, n_top=n_top, missing=missing, **ids
            )
            tables.append(built)
        linked = cls(tables)
        found = _atoms(data, linked, hier, value, weight, missing)
        if found is not None:
            linked.atoms, linked.atom_values = found
        return linked

    def with_records(
        self,
        data: Any,
        value: str | None = None,
        *,
        hierarchies: Mapping[str, Any] | None = None,
        weight: str | None = None,
        missing: str = "error",
    ) -> LinkedTables:
        """A copy that knows the records the tables were built from (their :attr:`atoms`).

        For tables built one by one (a batch of table jobs on one file), so that
        :meth:`protect` can run ``joint_elimination`` and :meth:`audit` the ``"atoms"``
        model.  The arguments are those the tables were built with (:meth:`from_microdata`).

        Raises
        ------
        DataError
            The records do not give the tables: a variable's hierarchy read from them
            differs, or a table's non-empty inner cells or their values are not those of
            the records.

        Examples
        --------
        >>> import polars as pl
        >>> from sdckit.tables import Table
        >>> df = pl.DataFrame({"region": ["a", "a", "b"], "sex": ["m", "f", "m"],
        ...                    "age": ["y", "o", "o"]})
        >>> tables = [Table.from_microdata(df, ["region", "sex"]),
        ...           Table.from_microdata(df, ["region", "age"])]
        >>> LinkedTables(tables).with_records(df).atoms.shape  # 3 combinations of 3 variables
        (3, 3)
        """
        if missing == "drop":
            raise ParameterError(
                'with_records cannot use missing = "drop": linked tables need every record '
                'in every table; use "category" or "error".'
            )
        found = _atoms(data, self, dict(hierarchies or {}), value, weight, missing)
        if found is None:
            raise DataError(
                "The records give a variable another hierarchy than its tables have; pass the "
                "hierarchies the tables were built with."
            )
        atoms, values = found
        for k, t in enumerate(self.tables):
            pos = tuple(atoms[:, self.variables.index(d)] for d in t.dimensions)
            inner = np.ravel_multi_index(pos, t.shape)
            hit = np.zeros(t.n_cells, dtype=bool)
            hit[inner] = True
            sums = np.bincount(inner, weights=values, minlength=t.n_cells)
            bottom = ~t.is_total
            if not np.array_equal(hit, (t.n_contributors > 0) & bottom) or not np.allclose(
                sums[bottom], t.values[bottom], rtol=1e-9, atol=1e-9
            ):
                raise DataError(
                    f"The records do not give table {k}: its non-empty inner cells or their "
                    "values are not those of the records; pass the records (value, weight) the "
                    "tables were built from."
                )
        new = self.with_tables(self.tables)
        new.atoms, new.atom_values = atoms, values
        return new

    def _index(self) -> None:
        variables: list[str] = []
        hier: dict[str, Any] = {}
        for k, t in enumerate(self.tables):
            for d, h in zip(t.dimensions, t.hierarchies, strict=True):
                if d in hier:
                    if hier[d].codes != h.codes or not np.array_equal(hier[d].parent, h.parent):
                        raise ParameterError(
                            f"The variable {d!r} has different hierarchies in table {k} and an "
                            "earlier table; linked tables need one hierarchy per variable."
                        )
                else:
                    hier[d] = h
                    variables.append(d)
        self.variables: tuple[str, ...] = tuple(variables)
        keys = []
        for t in self.tables:
            key = np.full((t.n_cells, len(variables)), _TOTAL, dtype=np.int64)
            for d in t.dimensions:
                nodes = t.node_index[:, t.dimensions.index(d)]
                key[:, variables.index(d)] = np.where(nodes == 0, _TOTAL, nodes)
            keys.append(key)
        stacked = np.vstack(keys)
        _, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        self.n_distinct: int = int(inverse.max()) + 1
        bounds = np.cumsum([0] + [t.n_cells for t in self.tables])
        self.cell_map: tuple[np.ndarray, ...] = tuple(
            inverse[bounds[k] : bounds[k + 1]] for k in range(len(self.tables))
        )
        # the distinct cells' values, bounds and contributors (checked to agree)
        values = np.full(self.n_distinct, np.nan)
        lower = np.full(self.n_distinct, -np.inf)
        upper = np.full(self.n_distinct, np.inf)
        contrib = np.full(self.n_distinct, -1, dtype=np.int64)
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            seen = ~np.isnan(values[ids])
            scale = 1e-6 * (1.0 + np.abs(t.values))
            if np.any(seen & (np.abs(values[ids] - t.values) > scale)):
                raise DataError(
                    "Two linked tables disagree on a common cell (same codes on the shared "
                    "variables, totals elsewhere); build them from the same records "
                    "(LinkedTables.from_microdata)."
                )
            values[ids] = t.values
            np.maximum.at(lower, ids, t.lower_bounds)
            np.minimum.at(upper, ids, t.upper_bounds)
            np.maximum.at(contrib, ids, t.n_contributors)
        self.values: np.ndarray = values
        self.lower_bounds: np.ndarray = lower
        self.upper_bounds: np.ndarray = upper
        self.n_contributors: np.ndarray = contrib
        counts = np.bincount(np.concatenate(self.cell_map), minlength=self.n_distinct)
        self._copies = counts

    # ------------------------------------------------------------------ structure
    @property
    def common_cells(self) -> list[list[tuple[int, int]]]:
        """Every distinct cell held by two or more tables, as ``(table, cell)`` pairs."""
        where: dict[int, list[tuple[int, int]]] = {}
        for k, ids in enumerate(self.cell_map):
            for c in np.flatnonzero(self._copies[ids] > 1).tolist():
                where.setdefault(int(ids[c]), []).append((k, c))
        return [where[g] for g in sorted(where)]

    @property
    def constraint_matrix(self) -> sp.csr_matrix:
        """The combined relations over the distinct cells (duplicates removed)."""
        blocks = []
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            m = t.constraint_matrix.tocoo()
            blocks.append(
                sp.csr_matrix((m.data, (m.row, ids[m.col])), shape=(m.shape[0], self.n_distinct))
            )
        combined = sp.vstack(blocks).tocsr()
        combined.sort_indices()
        seen: set[tuple[bytes, bytes]] = set()
        keep = []
        for r in range(combined.shape[0]):
            lo, hi = combined.indptr[r], combined.indptr[r + 1]
            key = (combined.indices[lo:hi].tobytes(), combined.data[lo:hi].tobytes())
            if key not in seen:
                seen.add(key)
                keep.append(r)
        return combined[keep]

    def _merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Status and levels of the distinct cells, merged over the tables."""
        n = self.n_distinct
        rank = np.full(n, -1, dtype=np.int64)
        status = np.zeros(n, dtype=np.int8)
        up, low, sl = np.zeros(n), np.zeros(n), np.zeros(n)
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            r = _rank(t.status)
            better = r > rank[ids]
            # several copies in one table cannot differ (they are one cell of that table)
            rank[ids[better]] = r[better]
            status[ids[better]] = t.status[better]
            np.maximum.at(up, ids, t.upper)
            np.maximum.at(low, ids, t.lower)
            np.maximum.at(sl, ids, t.sliding)
        prot = np.zeros(n, dtype=bool)
        supp = np.zeros(n, dtype=bool)
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            prot[ids[t.status == CellStatus.PROTECTED]] = True
            supp[ids[t.suppressed]] = True
        if np.any(prot & supp):
            raise ParameterError(
                "A common cell is frozen (protected) in one linked table and suppressed in "
                "another; unfreeze it (or give it a high cost instead of freezing it)."
            )
        return status, up, low, sl

    @property
    def status(self) -> np.ndarray:
        """:class:`CellStatus` of each distinct cell (primary if primary in any table, ...)."""
        return self._merged()[0]

    @property
    def consistent(self) -> bool:
        """True when every common cell is suppressed in all its tables or in none."""
        supp = self._suppressed_copies()
        return bool(np.all((supp == 0) | (supp == self._copies)))

    @property
    def hidden(self) -> np.ndarray:
        """Per distinct cell: suppressed in every table that holds it (an intruder reading
        all the tables does not see its value)."""
        return self._suppressed_copies() == self._copies

    def _suppressed_copies(self) -> np.ndarray:
        """Per distinct cell, the number of tables that suppress it."""
        supp = np.zeros(self.n_distinct, dtype=np.int64)
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            np.add.at(supp, ids, t.suppressed.astype(np.int64))
        return supp

    def synced(self) -> LinkedTables:
        """The tables with the merged status and levels of every common cell."""
        status, up, low, sl = self._merged()
        tables = []
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            tables.append(
                t.with_status(status=status[ids], upper=up[ids], lower=low[ids], sliding=sl[ids])
            )
        return self.with_tables(tables)

    def with_tables(self, tables: Sequence[Table]) -> LinkedTables:
        """The same linked structure with other versions (status) of the same tables."""
        tables = tuple(tables)
        if len(tables) != len(self.tables) or any(
            a.shape != b.shape or a.dimensions != b.dimensions
            for a, b in zip(tables, self.tables, strict=True)
        ):
            raise ParameterError("with_tables needs the same tables (same dimensions and shapes).")
        new = object.__new__(LinkedTables)
        new.__dict__.update(self.__dict__)
        new.tables = tables
        return new

    # ------------------------------------------------------------------ protection
    def apply_rules(self, rules: Any) -> LinkedTables:
        """Mark the primaries of every table by ``rules`` and make common cells agree."""
        from sdckit.tables.rules import apply_rules

        return self.with_tables([apply_rules(t, rules) for t in self.tables]).synced()

    def audit(
        self,
        *,
        tolerance: float = 1e-6,
        check_secondary: bool = False,
        intervals: str = "exact",
        model: str = "tables",
    ) -> LinkedAudit:
        """The LP audit over the combined relation system (all tables published at once).

        A cell counts as hidden only when every table holding it suppresses it; a copy
        published in another table gives its value away (``exact``, and a primary so
        published is under-protected).  ``intervals="check"`` decides each requirement
        exactly from as few LPs as possible (the intervals of cells whose requirement the
        points of earlier LPs prove are then inner ones; without ``check_secondary`` the
        secondaries' are not computed, NaN), as :func:`sdckit.tables.audit` does.

        ``model="tables"`` uses the tables' own relations (every cell the sum of its parts
        in its table, a common cell one unknown).  ``model="atoms"`` uses the records' code
        combinations (needs :attr:`atoms`): the unknowns are the atoms, every cell the sum
        of the atoms under it, each atom non-negative when the cells are.  That is the
        intruder who reads the tables as margins of one array over all the variables, and
        knows which combinations are empty; its intervals are never wider than the tables'
        ones, nor than those of the array over every combination, so a pattern that passes
        it is safe for either intruder (:mod:`sdckit.tables.audit._atoms`).  It matters
        when the tables' variables overlap in a cycle (age x sex, sex x region, region x
        age); the joint elimination's patterns are made for it.  Its LPs grow with the
        atoms: the 1,241 atoms of GaussSuppression's d53 data take 1 to 2 s in check mode,
        while 18,332 atoms (three tables of 20,000 records) did not finish in 15 minutes;
        :meth:`computable_primaries` is its rank test alone, which scales.

        Examples
        --------
        >>> import polars as pl
        >>> from sdckit.tables import MinFrequency
        >>> df = pl.DataFrame({"r": list("aaaabbbb"), "s": list("mfmfmfff"),
        ...                    "g": list("xyxyyxyx")})
        >>> lk = LinkedTables.from_microdata(df, [["r", "s"], ["r", "g"]])
        >>> lk.audit().ok  # nothing suppressed
        True
        """
        tol = check_real(tolerance, "tolerance", minimum=0)
        check_choice(intervals, "intervals", ("exact", "check"))
        check_choice(model, "model", ("tables", "atoms"))
        if model == "atoms" and (self.atoms is None or self.atom_values is None):
            raise ParameterError(
                'The audit with model="atoms" needs the records: build the linked tables with '
                "LinkedTables.from_microdata (or give them with with_records)."
            )
        status, up, low, sl = self._merged()
        # a cell is hidden only where every table holding it suppresses it: a copy published
        # in one table gives its value (an inconsistent pattern discloses that cell)
        n_supp = self._suppressed_copies()
        cells = np.flatnonzero(n_supp > 0)
        locations = self._locations(cells)
        if not len(cells):
            empty = np.zeros(0)
            no = np.zeros(0, dtype=bool)
            return LinkedAudit(cells, empty, empty, no, no, locations)
        hidden = n_supp[cells] == self._copies[cells]
        unknown = cells[hidden]
        a = self.values[cells]
        lo, hi = a.copy(), a.copy()
        if len(unknown):
            m = self.constraint_matrix[:, unknown]
            au = self.values[unknown]
            lb = np.minimum(self.lower_bounds[unknown], au)
            ub = np.maximum(self.upper_bounds[unknown], au)
            zeros = np.zeros(m.shape[0])
            requirement = targets = None
            if intervals == "check":
                pu = status[unknown] == CellStatus.PRIMARY
                tiny = tol * (1.0 + np.abs(au)) * 2.0
                requirement = (
                    np.where(pu, -low[unknown], np.inf),
                    np.where(pu, up[unknown], -np.inf),
                    np.where(pu, np.maximum(sl[unknown], tiny), tiny),
                    np.zeros(len(unknown)),
                )
                if not check_secondary:
                    targets = np.flatnonzero(pu)
            if model == "atoms":
                d_lo, d_hi = atom_intervals(
                    self, unknown, requirement, targets, threads=available_cores()
                )
            else:
                d_lo, d_hi = feasibility_intervals(
                    m,
                    zeros,
                    zeros,
                    lb - au,
                    ub - au,
                    targets=targets,
                    need=requirement,
                    threads=available_cores(),
                )
            lo[hidden], hi[hidden] = au + d_lo, au + d_hi
        eps = tol * (1.0 + np.abs(a))
        exact = (hi - lo) <= eps
        prim = status[cells] == CellStatus.PRIMARY
        need = (
            (hi >= a + up[cells] - eps)
            & (lo <= a - low[cells] + eps)
            & (hi - lo >= sl[cells] - eps)
            & ~exact
        )
        protected = np.where(prim, need, ~exact if check_secondary else True)
        return LinkedAudit(cells, lo, hi, protected, exact, locations)

    def _locations(self, cells: np.ndarray) -> tuple[list[tuple[int, int]], ...]:
        where: dict[int, list[tuple[int, int]]] = {int(c): [] for c in cells}
        for k, ids in enumerate(self.cell_map):
            mask = np.isin(ids, cells)
            for c in np.flatnonzero(mask).tolist():
                where[int(ids[c])].append((k, c))
        return tuple(where[int(c)] for c in cells)

    def computable_primaries(self) -> np.ndarray:
        """Distinct primary cells an intruder computes exactly from all the published tables.

        The rank test of the atom model (:meth:`audit` with ``model="atoms"`` without the
        intervals): a primary is computable when a copy of it is published in some table, or
        when its column of :meth:`joint_model` is a combination of the columns of the cells
        published in some table (its value is then one number whatever the bounds).  This is
        the protection the joint elimination gives (no primary exactly computable, even by an
        intruder who knows which code combinations are empty); it says nothing of protection
        levels.  It is an elimination in integer arithmetic, not an LP, so it scales with the
        Gauss method: 20 s on 368,294 atoms, where :meth:`audit` over the atoms does not
        finish (a primary computable here also fails that audit).

        The a priori bounds are taken into account conservatively, so that a primary it
        passes is not exact in :meth:`audit` over the atoms either: in non-negative tables
        an atom of value 0 is taken as known to the intruder (it may be pinned at its
        bound; a primary of value 0 is then computable), and a hidden cell on one of its
        bounds as known (a primary there counts as computable).

        Examples
        --------
        >>> import polars as pl
        >>> from sdckit.tables import MinFrequency
        >>> df = pl.DataFrame({"r": list("aaaabbbbb"), "s": list("mfmfmfffm"),
        ...                    "g": list("xyxyyxyxx")})
        >>> lk = LinkedTables.from_microdata(df, [["r", "s"], ["r", "g"]])
        >>> lk.computable_primaries().tolist()  # nothing suppressed, nothing primary
        []
        """
        from sdckit.tables.audit._atoms import exact_in_atoms
        from sdckit.tables.audit._core import on_bounds

        if self.atoms is None:
            raise ParameterError(
                "The rank test over the atoms needs the records: build the linked tables "
                "with LinkedTables.from_microdata (or give them with with_records)."
            )
        status, *_ = self._merged()
        primary = np.flatnonzero(status == CellStatus.PRIMARY)
        n_supp = self._suppressed_copies()
        hidden = n_supp == self._copies
        hidden &= n_supp > 0
        unknown = np.flatnonzero(hidden)
        shown = primary[~hidden[primary]]  # a copy published somewhere
        # the bounds (docstring): hidden cells on one taken as known, the zero atoms too
        on_bound, _ = on_bounds(
            self.values[unknown], self.lower_bounds[unknown], self.upper_bounds[unknown]
        )
        targeted = status[unknown] == CellStatus.PRIMARY
        n_atoms, atom, cell = self.joint_model()
        if self.atom_values is not None and np.all(self.lower_bounds >= 0):
            zero, _ = on_bounds(self.atom_values, 0.0, np.inf)
            atom, cell = atom[~zero[atom]], cell[~zero[atom]]
        inside = unknown[~on_bound]
        exact = exact_in_atoms(self, inside, targeted[~on_bound], (n_atoms, atom, cell))
        return np.union1d(np.union1d(shown, inside[exact]), unknown[on_bound & targeted])

    def joint_model(self) -> tuple[int, np.ndarray, np.ndarray]:
        """The model matrix of all the tables at once: ``(n_atoms, atom, cell)`` entries.

        Row ``a`` is atom ``a`` (see :attr:`atoms`), and it has an entry in the column of
        every distinct cell that holds it, in any table; entries are grouped by atom and
        increasing in cell.  Only tables built by :meth:`from_microdata` have atoms.
        """
        from sdckit.tables.suppression.elimination import model_entries

        if self.atoms is None:
            raise ParameterError(
                "The joint model needs the records: build the linked tables with "
                "LinkedTables.from_microdata."
            )
        n_atoms = len(self.atoms)
        keys = []
        for t, ids in zip(self.tables, self.cell_map, strict=True):
            pos = tuple(self.atoms[:, self.variables.index(d)] for d in t.dimensions)
            inner = np.ravel_multi_index(pos, t.shape)
            pr, acc = model_entries(t, inner)
            keys.append(pr * self.n_distinct + ids[acc])
        key = np.concatenate(keys)
        key.sort()  # a sort and a neighbour test: np.unique hashes first (6 times slower)
        key = key[np.r_[True, key[1:] != key[:-1]]]
        atom, cell = np.divmod(key, self.n_distinct)
        return n_atoms, atom, cell

    def protect(
        self,
        method: Any = None,
        *,
        max_rounds: int = 10,
        cost: Any = "value",
        joint_elimination: bool = False,
        secondaries_as_primary: bool = False,
        progress: Any = None,
    ) -> LinkedProtection:
        """Secondary suppression of the linked tables by the iterative scheme (module doc).

        Parameters
        ----------
        method : TableMethod or sequence of TableMethod, optional
            A secondary-suppression method (default :class:`HypercubeSuppression`), applied to
            each table in turn with the suppressions found so far forced on it; or one method
            per table (a tau-ARGUS batch may name another method for each table).
        max_rounds : int, default 10
            Rounds of (protect every table, audit jointly, repair jointly).
        cost : {"value", "unity", "contributors"}
            Cost of a cell in the joint repair (and in the joint elimination).
        joint_elimination : bool, default False
            Start with one Gaussian elimination over all the tables at once (their joint
            model, :meth:`joint_model`; GaussSuppression's "global" protection, whose
            published pattern it reproduces): each distinct cell is decided once, and no
            primary can be computed exactly from the published cells of all the tables
            together, even by an intruder who knows which combinations of all the variables
            have no records.  With the method's ``singletons`` (on by default; methods
            without that parameter count as on) the singleton rules hold over all the tables
            as well: a respondent alone in a cell of one table, reading every table, computes
            no other primary (``sdckit.tables.suppression._gauss_linked``).  That is stricter
            than the joint LP audit (which does not assume that knowledge) and costs more
            suppressions: on the four tables of GaussSuppression's d53 test data, 1,698
            secondaries against 1,438 without it (1,635 without the singleton rules; all
            passing the joint audit, each in under a second; ``bench/bench_linked.py``).
            Needs tables built by :meth:`from_microdata` (or given their records by
            :meth:`with_records`); ``details["joint_elimination"]`` holds its counts.
        secondaries_as_primary : bool, default False
            Each table is protected with the cells suppressed so far (in any table, its own
            earlier secondaries included) as primaries with no protection levels: none may
            be computable from that table's published cells (they stay secondary in the
            result).  This is GaussSuppression's "back-tracking" for linked tables, whose
            published pattern it reproduces with the Gauss method; it suppresses more, and
            leaves less to the joint repair.  By default they are only forced (suppressed),
            and the joint LP audit finds what the other tables reveal.
        progress : callable, optional
            ``progress(stage, done, total)``, passed to the ``apply`` of a method that takes
            one (``GaussSuppression``: its model and elimination) each time a table is
            protected.

        Raises
        ------
        InfeasibleError
            The joint audit still finds an under-protected primary after ``max_rounds`` (or
            the repair finds nothing to add).
        """
        from sdckit.tables._linked_protect import protect_linked

        return protect_linked(
            self,
            method,
            max_rounds=max_rounds,
            cost=cost,
            joint_elimination=joint_elimination,
            secondaries_as_primary=secondaries_as_primary,
            progress=progress,
        )

    def _costs(self, cost: Any, status: np.ndarray) -> np.ndarray:
        """Cost of each distinct cell (with the penalty on zero-valued candidates)."""
        from sdckit.tables.suppression._common import search_costs

        n = self.n_distinct
        if not isinstance(cost, str) or cost not in ("value", "unity", "contributors"):
            raise ParameterError('The \'cost\' must be "value", "unity" or "contributors".')
        if cost == "unity":
            w = np.ones(n)
        elif cost == "contributors":
            w = np.maximum(self.n_contributors, 0).astype(float) + 1e-3
        else:
            w = np.abs(self.values) + 1e-3
        return search_costs(self._as_table(status), w)  # type: ignore[arg-type]

    def _as_table(self, status: np.ndarray) -> SimpleNamespace:
        """The distinct cells as the one-table helpers of the methods read them."""
        return SimpleNamespace(
            values=self.values,
            status=status,
            upper_bounds=self.upper_bounds,
            lower_bounds=self.lower_bounds,
        )

    def to_frame(self) -> pl.DataFrame:
        """One row per (table, cell): table index, cell number, distinct cell, status."""
        parts = []
        for k, (t, ids) in enumerate(zip(self.tables, self.cell_map, strict=True)):
            parts.append(
                pl.DataFrame(
                    {
                        "table": np.full(t.n_cells, k),
                        "cell": np.arange(t.n_cells),
                        "distinct_cell": ids,
                        "common": self._copies[ids] > 1,
                        "status": t.status,
                    }
                )
            )
        return pl.concat(parts)

    def __repr__(self) -> str:
        return (
            f"LinkedTables(tables={len(self.tables)}, distinct_cells={self.n_distinct}, "
            f"common_cells={int((self._copies > 1).sum())})"
        )


def _atoms(
    data: Any,
    linked: LinkedTables,
    hierarchies: Mapping[str, Any],
    value: str | None,
    weight: str | None,
    missing: str,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct leaf combinations of every linked variable in the records, and the value
    of each (as the tables add up: the weighted response, or the weighted count); None when
    a variable's hierarchy read again differs from the tables'."""
    from sdckit.microdata import as_microdata
    from sdckit.tables._build import _missing_codes, _numeric, dimension_positions

    variables = list(linked.variables)
    md = as_microdata(data, keys=variables, numeric=value, weight=weight, max_levels=10**9)
    frame, keep, _ = _missing_codes(md.frame, variables, missing)
    spec = {d: hierarchies.get(d) for d in variables}
    hier, leaf_pos = dimension_positions(frame, variables, spec, missing)
    for d, h in zip(variables, hier, strict=True):
        k = next(i for i, t in enumerate(linked.tables) if d in t.dimensions)
        mine = linked.tables[k].hierarchies[linked.tables[k].dimensions.index(d)]
        if h.codes != mine.codes or not np.array_equal(h.parent, mine.parent):
            return None
    atoms, inverse = np.unique(np.stack(leaf_pos, axis=1), axis=0, return_inverse=True)
    x = np.ones(frame.height) if value is None else _numeric(frame, value, "value")
    w = md.weights()
    if w is not None and keep is not None:
        w = w[keep]
    w = np.ones(frame.height) if w is None else w
    values = np.bincount(inverse.ravel(), weights=w * x, minlength=len(atoms))
    return atoms.astype(np.int64), values
