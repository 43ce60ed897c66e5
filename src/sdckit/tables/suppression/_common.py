"""Shared pieces of the secondary-suppression methods.

* costs per cell (1, contributors, value or a user vector);
* the attacker LP of one primary and the Benders ("capacity") cut from its dual (M11.3);
* the protection LP: the cheapest additional cells through which a primary can move by its
  protection level (the attacker-LP-driven heuristic), used to build and to repair patterns;
* the result object every method returns;
* the declaration of the ``cost`` parameter and the contract example shared by the methods.

Zero-valued cells (with contributors) may be secondary suppressions: a zero primary often
needs one (a zero total above it).  Their search cost carries a penalty, so that non-zero cells
are chosen wherever they protect the primaries.  Empty cells (no contributors) and frozen cells
are never suppressed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import highspy
import numpy as np
import polars as pl
import scipy.sparse as sp

from sdckit._results import Summary
from sdckit._validation import check_choice
from sdckit.errors import ParameterError, SdcWarning
from sdckit.protection import Instance, Options, Param, clone
from sdckit.tables._lp import lp_scale, new_highs, solve
from sdckit.tables.audit._core import AuditResult, lp_audit
from sdckit.tables.audit._entry import audit
from sdckit.tables.audit._grid import subtables
from sdckit.tables.table import CellStatus, Table

if TYPE_CHECKING:
    from sdckit.tables._method import TableMethod

__all__ = [
    "COST_PARAM",
    "SuppressionResult",
    "candidates",
    "cell_costs",
    "contract_table",
    "protect_paths",
    "protect_with_lp",
    "repair",
    "requirements",
    "search_costs",
    "under_protected",
]

_OPTIMAL = highspy.HighsModelStatus.kOptimal


@dataclass(frozen=True, eq=False)
class SuppressionResult:
    """A protected table and figures on the secondary suppressions.

    Attributes
    ----------
    table : Table
        The table with primary and secondary suppressions.
    method : str
        The alias of the method that made it (``"gauss"``, as in a job file).
    n_secondary : int
        Number of secondary suppressions.
    secondary_value : float
        Sum of the values of the secondary suppressions.
    cost : float
        Total cost of the secondary suppressions under the cost used.
    optimal : bool
        True when the pattern is proven optimal for its cost.
    protected : bool
        True when every primary is protected, as an LP audit of the whole pattern (or the
        optimal method's own proof) found; False when the audit found an under-protected
        primary or the pattern was not audited (a table above ``repair_limit``; audit it with
        :func:`~sdckit.tables.audit`).  ``table.protected`` holds the same verdict (None when
        not audited), and a published export refuses a pattern known to be unprotected.
    seconds : float
        Wall-clock time.
    details : dict
        Method-specific figures (iterations, cuts, sub-tables, repairs ...).
    time_limited : str, optional
        The parameter (e.g. ``"subtable_time_limit"``) whose wall-clock limit cut the search
        short; None when only counts (rounds, nodes) bounded it.  A pattern shaped by the
        clock depends on the machine and its load: the same job may give another pattern on
        another run.
    protection : TableMethod or None
        The method object that made the result (a clone, so later changes to the caller's
        object do not alter the record), as :class:`sdckit.protection.Protected` keeps its
        method; ``params`` are its parameters.
    """

    table: Table
    method: str
    n_secondary: int
    secondary_value: float
    cost: float
    optimal: bool
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)
    protected: bool = False
    time_limited: str | None = None
    protection: TableMethod | None = field(default=None, compare=False)

    @property
    def params(self) -> dict[str, Any]:
        """The parameters of the method that made the result (empty when it is not known)."""
        return {} if self.protection is None else self.protection.get_params()

    def with_details(self, **details: Any) -> SuppressionResult:
        """The same result with more figures in ``details`` (say, what a job adds: the
        tables it was protected with)."""
        return replace(self, details={**self.details, **details})

    def to_frame(self) -> pl.DataFrame:
        """The cells of the protected table with their status."""
        return self.table.to_frame()

    def audit(self, **kwargs: Any) -> AuditResult:
        """The audit of the pattern (see :func:`sdckit.tables.audit.audit`)."""
        return audit(self.table, **kwargs)

    def summary(self) -> Summary:
        """Numbers of primary and secondary suppressions, their value and cost."""
        rows: list[tuple[str, Any]] = [
            ("method", self.method),
            *((f"parameter {k}", v) for k, v in self.params.items() if _shown(v)),
            ("primary suppressions", int(self.table.primary.sum())),
            ("secondary suppressions", self.n_secondary),
            ("value of secondaries", self.secondary_value),
            ("cost", self.cost),
            ("proven optimal", self.optimal),
            ("protected (audited)", self.protected),
            ("seconds", self.seconds),
            ("cut short by (wall clock)", self.time_limited or "nothing"),
        ]
        rows += [(k, v) for k, v in self.details.items() if np.isscalar(v)]
        return Summary("Secondary cell suppression", rows)


def _shown(value: Any) -> bool:
    """A parameter value a summary shows: a scalar or a string, not a per-cell array."""
    return value is None or isinstance(value, (bool, int, float, str))


def make_result(
    table: Table,
    original: Table,
    method: str | TableMethod,
    cost: np.ndarray,
    optimal: bool,
    seconds: float,
    protected: bool | None = None,
    time_limited: str | None = None,
    **details: Any,
) -> SuppressionResult:
    """The result of a method; ``protected`` is the verdict (None: not audited);
    ``time_limited`` names the parameter whose wall-clock limit cut the search short.

    ``method`` is the method object that made it (kept, cloned, in ``protection``; its alias
    names it), or only its alias.
    """
    new = table.secondary & ~original.suppressed
    table = table.with_verdict(protected)
    protection = None if isinstance(method, str) else clone(method)
    return SuppressionResult(
        table=table,
        method=method if protection is None else protection.alias,
        n_secondary=int(table.secondary.sum()),
        secondary_value=float(table.values[table.secondary].sum()),
        cost=float(cost[new].sum() + cost[original.secondary].sum()),
        optimal=optimal,
        seconds=seconds,
        details=details,
        protected=protected is True,
        time_limited=time_limited,
        protection=protection,
    )


def warn_time_limited(parameter: str, what: str) -> None:
    """Warn that the wall-clock limit ``parameter`` cut ``what`` short (the pattern may then
    differ from run to run)."""
    warnings.warn(
        f"'{parameter}' (a wall-clock limit) cut {what} short: the pattern depends on the "
        "machine's speed and load and may differ on another run.  Leave it unset (the "
        "limits by rounds and nodes give the same pattern on any machine) or raise it.",
        SdcWarning,
        stacklevel=3,
    )


def cell_costs(table: Table, cost: str | Any) -> np.ndarray:
    """Cost of suppressing each cell: "unity", "contributors", "value" or a user array."""
    if isinstance(cost, str):
        check_choice(cost, "cost", ("unity", "contributors", "value"))
        if cost == "unity":
            return np.ones(table.n_cells)
        if cost == "contributors":
            if np.any(table.n_contributors < 0):
                raise ParameterError(
                    "cost='contributors' needs the number of contributors of each cell; build "
                    "the table from microdata or give n_contributors=..."
                )
            return table.n_contributors.astype(float) + 1e-3
        return np.abs(table.values) + 1e-3
    arr = np.asarray(cost, dtype=float).ravel()
    if arr.size != table.n_cells or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(
            "A user 'cost' must be an array of non-negative finite numbers, one per cell."
        )
    return arr


#: The ``cost`` parameter of every secondary-suppression method (checked by :func:`cell_costs`).
COST_PARAM = Param(
    Options("value", "contributors", "unity"),
    Instance((np.ndarray, pl.Series, list, tuple), "an array of non-negative costs, one per cell"),
    help="cost of suppressing a cell: its value, its contributors, 1, or one cost per cell",
)


def contract_table() -> Table:
    """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries (contract examples)."""
    from sdckit.tables.examples import A4_PRIMARIES, a4_table
    from sdckit.tables.rules import MarkedCells, apply_rules

    t = a4_table()
    cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
    return apply_rules(t, MarkedCells(cells=cells, upper=3))


def candidates(table: Table, *, zeros: bool = True) -> np.ndarray:
    """Cells that may become secondary suppressions: safe (non-empty, not frozen) cells.

    ``zeros=False`` leaves out the zero-valued ones.
    """
    safe = table.status == CellStatus.SAFE
    return safe if zeros else safe & (table.values != 0)


def search_costs(table: Table, cost: np.ndarray) -> np.ndarray:
    """The costs a method minimises: ``cost`` plus a penalty on zero-valued candidates.

    The penalty exceeds the cost of all non-zero candidates together, so a zero-valued cell
    is chosen only where no pattern of non-zero cells protects (the reported cost of a result
    stays ``cost``).
    """
    zero = candidates(table) & (table.values == 0)
    if not zero.any():
        return cost
    others = candidates(table, zeros=False)
    penalty = float(cost[others].sum()) + float(cost.max(initial=0.0)) + 1.0
    return np.where(zero, cost + penalty, cost)


def requirements(table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Primaries and their effective (upper, lower, sliding) levels.

    A primary with all levels zero must still not be disclosed exactly: it gets a small sliding
    level.
    """
    prim = np.flatnonzero(table.primary)
    up, low, sl = table.upper[prim], table.lower[prim], table.sliding[prim]
    tiny = 1e-3 * (1.0 + np.abs(table.values[prim]))
    sl = np.where((up <= 0) & (low <= 0) & (sl <= 0), tiny, sl)
    return prim, up, low, sl


def capacities(table: Table) -> tuple[np.ndarray, np.ndarray]:
    """How far each cell can move up (``ub``) and down (``lb``) within its a priori bounds."""
    ub = table.upper_bounds - table.values
    lb = table.values - table.lower_bounds
    return np.maximum(ub, 0.0), np.maximum(lb, 0.0)


def protect_with_lp(
    table: Table,
    matrix: sp.csr_matrix,
    cells: np.ndarray,
    suppressed: np.ndarray,
    allowed: np.ndarray,
    cost: np.ndarray,
    targets: list[tuple[int, float]],
    moves: np.ndarray | None = None,
    found: list[bool] | None = None,
) -> np.ndarray:
    """Cheapest cells (among ``allowed``) through which cells can move by given amounts.

    ``matrix`` holds the relations among ``cells`` (columns = positions in ``cells``).  For each
    ``(position, amount)`` in ``targets`` an LP finds deviations ``d`` with ``matrix @ d = 0``,
    ``d[position] = amount`` and every other cell within its capacity, minimising the cost of
    the cells it moves (suppressed cells are free, and so are the cells suppressed for an
    earlier target; zero-valued cells are allowed only when the
    LP without them has no solution).  Returns the updated boolean
    ``suppressed`` (positions in ``cells``); ``moves`` (if given) receives, per position, the
    largest absolute deviation any of the protecting moves uses.
    """
    ub_all, lb_all = capacities(table)
    return protect_paths(
        matrix,
        ub_all[cells],
        lb_all[cells],
        cost[cells].astype(float),
        suppressed,
        allowed,
        table.values[cells] == 0,
        targets,
        moves,
        found,
    )


#: Tables with at least this many cells protect each target on a sub-table's model first.
LOCAL_PROTECTION_FROM = 2_000


def protect_in_subtables(
    table: Table,
    suppressed: np.ndarray,
    allowed: np.ndarray,
    cost: np.ndarray,
    targets: list[tuple[int, float]],
) -> np.ndarray:
    """:func:`protect_with_lp` on the whole table, each target first tried on small models.

    ``targets`` are ``(cell, amount)`` with cell numbers of the table.  A target is first
    protected on the model of the lowest sub-table holding its cell (the sub-table's cells
    free, every relation through them, every other cell at its value): a move found there is
    a move of the whole table, so the cells it uses protect the target.  A target that model
    cannot protect is tried on the sub-table together with every sub-table sharing a cell with
    it, and the rest get the LP of the whole table.  Returns the updated ``suppressed``.
    """
    suppressed = suppressed.copy()
    if not targets:
        return suppressed
    m = table.constraint_matrix
    everything = np.arange(table.n_cells)
    if table.n_cells < LOCAL_PROTECTION_FROM:
        return protect_with_lp(table, m, everything, suppressed, allowed, cost, targets)
    csc = m.tocsc()
    subs = [np.sort(c.ravel()) for c in subtables(table)]
    home = np.full(table.n_cells, -1, dtype=np.int64)
    for s_id, flat in enumerate(subs):
        home[flat] = s_id  # the last (lowest) sub-table holding the cell
    member_cell = np.concatenate(subs)
    member_sub = np.repeat(np.arange(len(subs)), [len(f) for f in subs])

    def ring(s_id: int) -> np.ndarray:
        near = np.unique(member_sub[np.isin(member_cell, subs[s_id])])
        return np.unique(np.concatenate([subs[k] for k in near.tolist()]))

    def attempt(flat: np.ndarray, group: list[tuple[int, float]]) -> list[tuple[int, float]]:
        sub = csc[:, flat]
        local = sub[np.unique(sub.indices)].tocsr()
        where = np.searchsorted(flat, [c for c, _ in group])
        found: list[bool] = []
        new = protect_with_lp(
            table,
            local,
            flat,
            suppressed[flat],
            allowed[flat],
            cost,
            [(int(w), a) for w, (_, a) in zip(where, group, strict=True)],
            found=found,
        )
        suppressed[flat] |= new
        return [t for t, ok in zip(group, found, strict=True) if not ok]

    by_home: dict[int, list[tuple[int, float]]] = {}
    for cell, amount in targets:
        by_home.setdefault(int(home[cell]), []).append((int(cell), float(amount)))
    left: list[tuple[int, float]] = []
    for s_id, group in by_home.items():
        if s_id < 0:
            left.extend(group)
            continue
        rest = attempt(subs[s_id], group)
        if rest:
            wider = ring(s_id)
            rest = attempt(wider, rest) if len(wider) < table.n_cells // 2 else rest
        left.extend(rest)
    if left:
        suppressed = protect_with_lp(table, m, everything, suppressed, allowed, cost, left)
    return suppressed


def protect_paths(
    matrix: sp.csr_matrix,
    ub: np.ndarray,
    lb: np.ndarray,
    c_cells: np.ndarray,
    suppressed: np.ndarray,
    allowed: np.ndarray,
    zero: np.ndarray,
    targets: list[tuple[int, float]],
    moves: np.ndarray | None = None,
    found: list[bool] | None = None,
) -> np.ndarray:
    """:func:`protect_with_lp` on arrays: room up ``ub`` and down ``lb``, costs ``c_cells``.

    ``zero`` marks the zero-valued cells (used only where nothing else protects); ``found``
    (if given) receives, per target, whether a protecting move was found.
    """
    suppressed = suppressed.copy()
    n = len(c_cells)
    if not targets:
        return suppressed
    # scaled units: the largest move is about 1000 (HiGHS tolerances are absolute)
    s = lp_scale(np.array([amount for _, amount in targets]))
    room = 1e6  # no cell needs to move more than 1000 times the largest protecting move
    usable = suppressed | allowed
    plus_hi = np.where(usable, np.minimum(ub / s, room), 0.0)
    minus_hi = np.where(usable, np.minimum(lb / s, room), 0.0)
    a = sp.hstack([matrix, -matrix]).tocsr()
    zeros = np.zeros(matrix.shape[0])
    top = float(c_cells[usable & ~suppressed].max(initial=0.0))
    unit_cost = c_cells / top if top > 0 else np.ones(n)
    positive = unit_cost[(unit_cost > 0) & usable & ~suppressed]
    free = 1e-6 * (float(positive.min()) if positive.size else 1.0)
    unit = np.where(suppressed, free, unit_cost)
    c = np.r_[unit, unit]
    zero_new = allowed & ~suppressed & zero
    every = np.arange(2 * n, dtype=np.int32)
    h = None
    for pos, amount in targets:
        step = amount / s
        lo = np.zeros(2 * n)
        hi = np.r_[plus_hi, minus_hi]
        if step >= 0:
            lo[pos], hi[pos] = step, max(step, hi[pos])
            hi[n + pos] = 0.0
        else:
            lo[n + pos], hi[n + pos] = -step, max(-step, hi[n + pos])
            hi[pos] = 0.0
        if h is None:
            # without presolve (run at every solve): the first solve of a 56,291-cell table's
            # model took 0.43 s with it, 0.03 s without, the later ones the same
            h = new_highs(a, zeros, zeros, lo, hi, c, presolve=False)
        status = None
        if zero_new.any():
            # first without the zero-valued cells: they are used only where nothing else works
            h.changeColsBounds(2 * n, every, lo, np.where(np.r_[zero_new, zero_new], 0.0, hi))
            status = solve(h)
        if status != _OPTIMAL:
            h.changeColsBounds(2 * n, every, lo, hi)
            status = solve(h)
        if found is not None:
            found.append(status == _OPTIMAL)
        if status != _OPTIMAL:
            continue  # cannot be protected this way (too little room): leave it to the audit
        x = np.asarray(h.getSolution().col_value)
        size = np.abs(x[:n] - x[n:]) * s
        moved = (x[:n] + x[n:]) > 1e-7 * (1.0 + abs(step))
        fresh = np.flatnonzero(moved & allowed & ~suppressed)
        suppressed |= moved & allowed
        if len(fresh):
            # the cells just suppressed are free for the next targets (one cycle can serve a
            # primary's move up and its move down)
            both = np.r_[fresh, n + fresh].astype(np.int32)
            h.changeColsCost(len(both), both, np.full(len(both), free))
        if moves is not None:
            np.maximum(moves, np.where(moved, size, 0.0), out=moves)
    return suppressed


def _targets(
    table: Table,
    prim: np.ndarray,
    up: np.ndarray,
    low: np.ndarray,
    sl: np.ndarray,
    where: np.ndarray,
) -> list[tuple[int, float]]:
    out: list[tuple[int, float]] = []
    ub, lb = capacities(table)
    for k, cell in enumerate(prim):
        pos = int(where[cell])
        need_up = max(up[k], sl[k] - min(low[k], lb[cell]))
        need_up = min(need_up, ub[cell])
        if need_up > 0:
            out.append((pos, float(need_up)))
        if low[k] > 0:
            out.append((pos, -float(min(low[k], lb[cell]))))
    return out


def protecting_cells(
    table: Table, cost: np.ndarray, bad: np.ndarray, *, local: bool = False
) -> np.ndarray:
    """The cheapest cells (not yet suppressed) through which the primaries ``bad`` can move
    by their levels: one attacker LP per primary and direction (see :func:`repair`)."""
    cells = np.arange(table.n_cells)
    search = search_costs(table, cost)
    prim, up, low, sl = requirements(table)
    keep = np.isin(prim, bad)
    targets = _targets(table, prim[keep], up[keep], low[keep], sl[keep], cells)
    if local:
        new = protect_in_subtables(table, table.suppressed, candidates(table), search, targets)
    else:
        new = protect_with_lp(
            table, table.constraint_matrix, cells, table.suppressed, candidates(table), search,
            targets,
        )  # fmt: skip
    return new & ~table.suppressed


def repair(
    table: Table,
    cost: np.ndarray,
    *,
    max_rounds: int = 5,
    method: str = "repair",
    local: bool = False,
    bad: np.ndarray | None = None,
) -> tuple[Table, int, bool]:
    """Audit ``table`` and protect every under-protected primary with the full-table LP.

    Returns the repaired table, the number of cells added and the verdict of the last audit
    (True: every primary protected).  ``bad``, when given, are the under-protected primaries
    of ``table`` already known from an audit (the first audit is then skipped).  With
    ``local`` each protecting LP is first tried on a
    sub-table's model (:func:`protect_in_subtables`): much faster where one LP over the whole
    table takes seconds (tables of three or more dimensions), but the cells found there can
    cost more than the whole table's cheapest (on a 56,291-cell 2-D table, twice the value).

    Raises
    ------
    InfeasibleError
        Some primary cannot be protected by any pattern (named by cell number and position,
        with the reason and the parameters to change).

    If primaries stay under-protected although a pattern exists (the rounds ran out), a
    :class:`~sdckit.errors.SdcWarning` says how many and the verdict is False: the pattern
    must not be published as it is.
    """
    from sdckit.tables.suppression._diagnose import infeasible_error, unprotectable

    added = 0
    if bad is None:
        bad = lp_audit(table, intervals="check").under_protected
    for _ in range(max_rounds):
        if not len(bad):
            return table, added, True
        fresh = protecting_cells(table, cost, bad, local=local)
        if not fresh.any():
            break
        added += int(fresh.sum())
        table = table.suppress(fresh)
        # more suppressions never narrow an interval: only the primaries short before can be
        bad = under_protected(table, bad)
    if not len(bad):
        return table, added, True
    impossible = unprotectable(table, candidates(table))
    if len(impossible):
        raise infeasible_error(table, impossible, candidates(table), method)
    warnings.warn(
        f"{len(bad)} primary cell(s) remain under-protected after the repair although a "
        "protecting pattern exists; the result is marked protected=False. Do not publish this "
        "pattern: run repair_suppression on it, or use the optimal method.",
        SdcWarning,
        stacklevel=3,
    )
    return table, added, False


def under_protected(table: Table, among: np.ndarray) -> np.ndarray:
    """The primaries of ``among`` that the LP audit finds under-protected (as ``audit``).

    The audit's linear programs (in deviations, scaled, each requirement decided exactly),
    restricted to the given primaries: after suppressing more cells only the primaries that
    were short before can still be, since more suppressions never narrow an interval.
    """
    checked = lp_audit(table, intervals="check", among=among)
    asked = np.isin(checked.cells, among) & table.primary[checked.cells]
    return checked.cells[asked & ~checked.protected]


def repair_within_limit(
    table: Table, original: Table, cost: np.ndarray, repair_limit: int, method: str
) -> tuple[Table, int, bool | None]:
    """Repair a heuristic pattern by the full-table audit when the table is small enough.

    Returns the table, the cells added and the verdict (None when the pattern was not audited).
    Above ``repair_limit`` cells a :class:`~sdckit.errors.SdcWarning` says the pattern was not
    audited as a whole; ``repair_limit=0`` switches the repair off silently (the caller audits).
    """
    if repair_limit and original.n_cells <= repair_limit:
        return repair(table, cost, method=method)
    if repair_limit:
        warnings.warn(
            f"The table has {original.n_cells} cells, more than repair_limit={repair_limit}: "
            "the pattern was not audited as a whole and may leave primaries under-protected "
            "(protected=False). Audit it (sdckit.tables.audit; a published export audits it "
            "first), or raise repair_limit.",
            SdcWarning,
            stacklevel=3,
        )
    return table, 0, None


def fix_singletons(table: Table, cost: np.ndarray) -> Table:
    """Add the cheapest cell to each relation where a singleton is protected by one cell only."""
    from sdckit.tables.audit._core import singleton_violations

    cost = search_costs(table, cost)
    for _ in range(10):
        rows = singleton_violations(table)
        if not len(rows):
            return table
        m = table.constraint_matrix.tocsr()
        allowed = candidates(table)
        add = []
        for r in rows.tolist():
            cols = m.indices[m.indptr[r] : m.indptr[r + 1]]
            free = cols[allowed[cols]]
            if len(free):
                add.append(int(free[np.argmin(cost[free])]))
        if not add:
            return table
        table = table.suppress(np.unique(add))
    return table
