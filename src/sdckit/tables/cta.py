"""Controlled tabular adjustment (CTA): publish every cell, move the sensitive ones.

Instead of suppressing, CTA (Dandekar and Cox 2002; Castro 2006; "CTA" in tau-ARGUS) publishes
every cell of the table.  Each primary cell is moved away from its true value by at least its
protection level, up (by its upper level) or down (by its lower level): one binary choice per
primary.  The other cells absorb the change so that every additivity relation still holds, and
they move as little as possible: the weighted L1 distance ``sum_i w_i |z_i - a_i|`` is minimal.

With deviations ``z+ , z- >= 0`` and a binary ``y_p`` per primary (1: up), Castro's model is::

    min   sum_i w_i (z+_i + z-_i)
    s.t.  M (z+ - z-) = 0                       (the table still adds up: M a = 0)
          upl_p y_p <= z+_p <= U_p y_p          (a primary goes up by its upper level ...)
          lpl_p (1 - y_p) <= z-_p <= L_p (1 - y_p)   (... or down by its lower level)
          0 <= z+_i <= u_i,  0 <= z-_i <= l_i   (the other cells, within their bounds)

``u_i`` and ``l_i`` keep every cell within its a priori bounds (``Table.lower_bounds``,
``upper_bounds``: a non-negative table stays non-negative), at zero for cells that may not move
(empty cells, cells marked protected, fixed totals) and, with ``max_change``, within a share of
the cell's value.  ``direction="optimal"`` solves this mixed-integer model (HiGHS through
:func:`scipy.optimize.milp`); ``direction="relaxed"`` is the fast heuristic Castro describes, fixing
the directions first: a dive on the linear relaxation gives each primary in turn the cheaper
direction (the relaxation alone is no guide: at ``y_p = 1/2`` a primary's two moves cancel),
then one linear program (or, with integer deviations, one model without binaries) gives the
rest.  The work is bounded by counts,
never by the clock (``node_limit``), so a rerun gives the same table.

:func:`audit_adjustment` checks a published table after the fact: every primary at least its
protection level away from its true value, every relation holding, every cell within its
bounds and every fixed cell unchanged.

Examples
--------
>>> import numpy as np
>>> from sdckit.tables import MarkedCells, Table, apply_rules
>>> from sdckit.tables.cta import ControlledAdjustment
>>> t = Table.from_array([[20, 12, 8], [10, 6, 4], [10, 6, 4]],
...                      {"row": ["a", "b"], "col": ["x", "y"]})
>>> marked = apply_rules(t, MarkedCells(cells=[t.cell(row="a", col="x")], upper=2, lower=2))
>>> res = ControlledAdjustment(weights="unity").apply(marked)
>>> res.distance, bool(res.audit().ok)
(8.0, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_choice
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.protection import Boolean, Instance, Integer, Options, Param, Real
from sdckit.tables._cta_model import (
    NOISE,
    build_model,
    capacities,
    cell_weights,
    dive,
    fixed_cells,
    levels,
    readd,
    solve,
)
from sdckit.tables._method import TableMethod
from sdckit.tables.table import CellStatus, Table
from sdckit.twins import function_twin

__all__ = [
    "AdjustmentAudit",
    "AdjustmentResult",
    "ControlledAdjustment",
    "adjust_controlled",
    "audit_adjustment",
]


# ----------------------------------------------------------------------------- the audit
@dataclass(frozen=True, eq=False)
class AdjustmentAudit:
    """The after-the-fact check of an adjusted table (see :func:`audit_adjustment`).

    Attributes
    ----------
    table : Table
        The original table with its primaries and protection levels.
    adjusted : numpy.ndarray
        The published value of each cell.
    shortfall : numpy.ndarray
        For each cell, how far its move falls short of its protection level in the direction
        it moved (0 for cells that are not primary and for primaries moved far enough).
    failed : numpy.ndarray
        True for the primaries whose shortfall exceeds the tolerance.
    additivity : float
        The largest ``|M @ adjusted|`` over the relations.
    outside_bounds : int
        Cells outside their a priori bounds.
    fixed_moved : int
        Empty or protected cells whose value changed.
    tolerance : float
        Relative tolerance of the checks.
    """

    table: Table
    adjusted: np.ndarray
    shortfall: np.ndarray
    failed: np.ndarray
    additivity: float
    outside_bounds: int
    fixed_moved: int
    tolerance: float

    @property
    def under_protected(self) -> np.ndarray:
        """Cell numbers of the primaries that moved less than their protection level."""
        return np.flatnonzero(self.failed)

    @property
    def additive(self) -> bool:
        """True when every relation holds (to the tolerance, relative to the grand total)."""
        scale = max(1.0, float(np.abs(self.table.values).max(initial=0.0)))
        return self.additivity <= self.tolerance * scale

    @property
    def ok(self) -> bool:
        """True when every check passes."""
        return (
            self.under_protected.size == 0
            and self.additive
            and self.outside_bounds == 0
            and self.fixed_moved == 0
        )

    def to_frame(self) -> pl.DataFrame:
        """The primaries: codes, true and published value, move, levels, shortfall."""
        t = self.table
        prim = t.primary
        frame = t.to_frame(status=False).select(list(t.dimensions)).filter(pl.Series(prim))
        move = (self.adjusted - t.values)[prim]
        return frame.with_columns(
            pl.Series("original", t.values[prim]),
            pl.Series("published", self.adjusted[prim]),
            pl.Series("move", move),
            pl.Series("upper_level", np.maximum(t.upper, t.sliding)[prim]),
            pl.Series("lower_level", np.maximum(t.lower, t.sliding)[prim]),
            pl.Series("shortfall", self.shortfall[prim]),
        )

    def summary(self) -> Summary:
        """Primaries moved too little, additivity, bounds, fixed cells."""
        rows = [
            ("primaries", int(self.table.primary.sum())),
            ("primaries moved less than their level", int(self.under_protected.size)),
            ("largest relation residual", self.additivity),
            ("cells outside their bounds", self.outside_bounds),
            ("fixed cells moved", self.fixed_moved),
            ("protected", self.ok),
        ]
        return Summary("Audit of an adjusted table", rows)


def audit_adjustment(
    table: Table,
    adjusted: Any,
    *,
    tolerance: float = 1e-6,
    integer: bool = False,
    totals: str = "free",
) -> AdjustmentAudit:
    """Check a published adjusted table against the true one.

    Parameters
    ----------
    table : Table
        The true table with its primaries and protection levels.
    adjusted : array_like
        The published value of each cell.
    tolerance : float, default 1e-6
        Relative tolerance (of a level, of the largest cell for the relations).
    integer : bool, default False
        The adjustment moved cells by whole units (a level of 2.5 needs a move of 3).
    totals : {"free", "fixed", "grand"}, default "free"
        The totals the adjustment promised to keep (``ControlledAdjustment``'s option): they
        count as fixed cells, which must equal their true values.

    Returns
    -------
    AdjustmentAudit

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import MarkedCells, Table, apply_rules
    >>> from sdckit.tables.cta import audit_adjustment
    >>> t = Table.from_array([7, 4, 3], {"x": ["a", "b"]})
    >>> m = apply_rules(t, MarkedCells(cells=[1], upper=2, lower=2))
    >>> audit_adjustment(m, [7, 6, 1]).ok, audit_adjustment(m, [8, 5, 3]).ok
    (True, False)
    >>> audit_adjustment(m, [8, 5, 3]).shortfall.tolist()
    [0.0, 1.0, 0.0]
    """
    adj = np.asarray(adjusted, dtype=float).ravel()
    if adj.size != table.n_cells:
        raise ParameterError("The 'adjusted' values need one entry per cell.")
    if not np.all(np.isfinite(adj)):
        raise ParameterError("The 'adjusted' values must be finite numbers.")
    up, down = levels(table, integer)
    move = adj - table.values
    level = np.where(move > 0, up, down)
    short = np.where(move > 0, up - move, down + move)
    # a primary that did not move at all falls short by its smaller level
    short = np.where(move == 0, np.minimum(up, down), short)
    short = np.where(table.primary, np.maximum(short, 0.0), 0.0)
    failed = table.primary & (short > tolerance * np.maximum(1.0, level))
    residual = table.constraint_matrix @ adj
    scale = tolerance * np.maximum(1.0, np.abs(table.values))
    below = adj < table.lower_bounds - scale
    above = adj > table.upper_bounds + scale
    check_choice(totals, "totals", ("free", "fixed", "grand"))
    fixed_moved = fixed_cells(table, totals) & (np.abs(move) > scale)
    return AdjustmentAudit(
        table=table,
        adjusted=adj,
        shortfall=short,
        failed=failed,
        additivity=float(np.abs(residual).max(initial=0.0)),
        outside_bounds=int(np.sum(below | above)),
        fixed_moved=int(fixed_moved.sum()),
        tolerance=float(tolerance),
    )


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True, eq=False)
class AdjustmentResult:
    """An adjusted table: every cell published, the primaries moved by their levels.

    Attributes
    ----------
    table : Table
        The true table with its primaries and protection levels.
    adjusted : numpy.ndarray
        The published value of each cell (the relations hold).
    direction : numpy.ndarray
        ``+1`` for a primary moved up, ``-1`` for one moved down, 0 for the other cells.
    weights : numpy.ndarray
        The weight of each cell in the distance.
    distance : float
        The weighted L1 distance ``sum_i w_i |adjusted_i - value_i|``.
    optimal : bool
        True when the solver proved the distance optimal (within the relative ``gap``) for
        the directions it was free to choose (all of them with ``direction="optimal"``).
    protection : ControlledAdjustment
        The method (with its parameters) that made the result.
    stopped : str or None
        ``"node_limit"`` when the node limit cut the search short (the table is still
        protected and additive, the distance maybe not the least); None otherwise.
    details : dict
        Figures of the run (variables, relations, nodes, whether a heuristic fell back).
    """

    table: Table
    adjusted: np.ndarray
    direction: np.ndarray
    weights: np.ndarray
    distance: float
    optimal: bool
    protection: ControlledAdjustment
    stopped: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> str:
        """The method's name in job files (``"cta"``)."""
        return ControlledAdjustment.alias

    @property
    def integer(self) -> bool:
        """True when the cells moved by whole units."""
        return bool(self.details.get("integer", False))

    def audit(self, *, tolerance: float = 1e-6) -> AdjustmentAudit:
        """The after-the-fact check of the adjusted table (:func:`audit_adjustment`)."""
        totals = getattr(self.protection, "totals", "free")
        return audit_adjustment(
            self.table, self.adjusted, tolerance=tolerance, integer=self.integer, totals=totals
        )

    @property
    def adjusted_table(self) -> Table:
        """The table to publish: the adjusted values, every cell published (no primary or
        secondary status left), with the audit's verdict."""
        t = self.table
        status = np.where(t.suppressed, CellStatus.SAFE, t.status).astype(np.int8)
        zeros = np.zeros(t.n_cells)
        out = t.with_status(status=status, upper=zeros, lower=zeros, sliding=zeros)
        # whole-unit moves keep the table's precision; others are written as computed
        decimals = t.value_decimals if self.integer else -1
        out = replace(out, values=self.adjusted.copy(), value_decimals=decimals)
        return out.with_verdict(bool(self.audit().ok))

    def to_frame(self) -> pl.DataFrame:
        """Codes, true and published value, the move and the direction of each cell."""
        t = self.table
        frame = t.to_frame(status=False).select([*t.dimensions, "is_total"])
        return frame.with_columns(
            pl.Series("primary", t.primary),
            pl.Series("original", t.values),
            pl.Series("published", self.adjusted),
            pl.Series("difference", self.adjusted - t.values),
            pl.Series("direction", self.direction.astype(np.int8)),
        )

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the internal export (:meth:`to_frame`: true and published values, the moves
        and directions) as CSV or Parquet (by suffix), atomically; for the methodologist only.
        The table to publish is written by ``adjusted_table.write(path)``."""
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix not in (".csv", ".parquet"):
            raise ParameterError("The 'path' must end in .csv or .parquet.")
        if target.is_dir():
            raise ParameterError(f"The 'path' {str(target)!r} is a directory; give a file name.")
        target.parent.mkdir(parents=True, exist_ok=True)
        from sdckit.io import atomic_path

        frame = self.to_frame()
        with atomic_path(target) as tmp:
            if suffix == ".csv":
                frame.write_csv(tmp)
            else:
                frame.write_parquet(tmp)
        return target

    def summary(self) -> Summary:
        """Primaries moved up and down, cells changed, the distance, the audit."""
        diff = self.adjusted - self.table.values
        rows: list[tuple[str, Any]] = [
            ("method", "controlled tabular adjustment"),
            ("cells", self.table.n_cells),
            ("primaries moved up", int(np.sum(self.direction > 0))),
            ("primaries moved down", int(np.sum(self.direction < 0))),
            ("cells changed", int(np.sum(np.abs(diff) > NOISE))),
            ("weighted distance", self.distance),
            ("total absolute change", float(np.abs(diff).sum())),
            ("proven optimal", self.optimal),
            ("protected and additive (audited)", bool(self.audit().ok)),
        ]
        notes = []
        if self.stopped == "node_limit":
            notes.append(
                "The node limit (node_limit) cut the search short: the distance may not be "
                "the least; raise node_limit for a closer table."
            )
        if self.details.get("fallback"):
            notes.append(
                "The relaxed directions left no feasible adjustment; the directions were "
                "chosen by the exact model instead."
            )
        return Summary("Controlled tabular adjustment", rows, notes)


# ----------------------------------------------------------------------------- the method
def _dive_solve(model: Any, options: dict[str, Any], order: np.ndarray) -> Any:
    """The adjustment with the directions of the dive (:func:`dive`), or None."""
    y = dive(model, order)
    if y is None:
        return None
    res = solve(model, options, y_fixed=y)
    return res if res.x is not None else None


class ControlledAdjustment(TableMethod):
    """Controlled tabular adjustment (CTA): every cell published, the primaries moved.

    Each primary moves up by at least its upper protection level or down by at least its
    lower one (a sliding level counts both ways); the other cells move as little as possible
    in weighted L1 distance so that every relation of the table still holds and every cell
    stays within its a priori bounds (a non-negative table stays non-negative).  Castro's
    mixed-integer model, solved by HiGHS; see :mod:`sdckit.tables.cta`.

    Parameters
    ----------
    weights : {"inverse", "unity", "value"} or array_like, default "inverse"
        The weight of a cell's change in the distance: ``1 / |value|`` (relative changes),
        1, ``|value|`` (tau-ARGUS's default cost, the response variable: small cells move
        first), or one weight per cell; a zero cell counts as the smallest non-zero one.
    totals : {"free", "fixed", "grand"}, default "free"
        Whether the totals that are not primary may move, keep their values, or only the
        grand total keeps its value.
    max_change : float, optional
        A cell that is not primary moves by at most this share of its value (0 keeps zeros
        at zero); None: no limit besides its bounds.
    direction : {"relaxed", "optimal"}, default "relaxed"
        Fix the primaries' directions by a dive on the linear relaxation (each primary in
        turn, the dearest first, takes the cheaper direction) and solve once without binaries
        (fast, not always the least distance; falls back on the exact model when the dive
        finds no adjustment), or choose them in the mixed-integer model (least distance; the
        exact search can take hours on tables with more than a few dozen primaries: 1.7 s
        against 185 s for 3 % less distance on a 1,183-cell table with 107 primaries, see
        docs/benchmarks.md).
    integer : bool, optional
        Move cells by whole units (the published table keeps integer values; levels are
        rounded up).  Default: for count tables.
    node_limit : int, optional
        Branch-and-bound nodes allowed (a count, so a rerun gives the same table); the
        result says when it cut the search, and the dive of ``"relaxed"`` then runs too
        and its table is taken when it is closer.  None: no limit (on tables with more than
        a few dozen primaries the exact search can take hours: set a limit, or use
        ``"relaxed"``).
    gap : float, default 1e-4
        Relative optimality gap at which the search stops.

    Examples
    --------
    >>> from sdckit.tables import MarkedCells, Table, apply_rules
    >>> from sdckit.tables.cta import ControlledAdjustment
    >>> t = Table.from_array([7, 4, 3], {"x": ["a", "b"]})
    >>> m = apply_rules(t, MarkedCells(cells=[t.cell(x="a")], upper=2, lower=3))
    >>> res = ControlledAdjustment(weights="unity", totals="fixed").apply(m)
    >>> res.adjusted.tolist(), res.direction.tolist()
    ([7.0, 6.0, 1.0], [0, 1, 0])
    """

    name: ClassVar[str] = "controlled tabular adjustment"
    alias: ClassVar[str] = "cta"
    kind: ClassVar[str] = "adjustment"
    description: ClassVar[str] = (
        "Publishes every cell: moves each sensitive cell up or down by at least its protection "
        "level and the other cells as little as possible, so that the table still adds up."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "weights": Param(
            Options("inverse", "unity", "value"),
            Instance((np.ndarray, pl.Series, list, tuple), "an array of weights, one per cell"),
            help="weight of a cell's change: 1 / value, 1, the value, or one weight per cell",
        ),
        "totals": Param(
            Options("free", "fixed", "grand"),
            help="totals that are not primary move freely, keep their values, or only the "
            "grand total does",
        ),
        "max_change": Param(
            Real(minimum=0.0), None, help="largest change of a non-primary cell, as a share of it"
        ),
        "direction": Param(
            Options("relaxed", "optimal"),
            help="choose the primaries' directions one by one on the LP relaxation (fast) or "
            "exactly (MILP; slow on large tables)",
        ),
        "integer": Param(
            Boolean(), None, help="move cells by whole units (default: for count tables)"
        ),
        "node_limit": Param(
            Integer(minimum=1), None, help="branch-and-bound nodes allowed (None: no limit)"
        ),
        "gap": Param(
            Real(minimum=0.0, maximum=1.0, max_open=True),
            help="relative optimality gap at which the search stops",
        ),
    }

    def __init__(
        self,
        *,
        weights: Any = "inverse",
        totals: str = "free",
        max_change: float | None = None,
        direction: str = "relaxed",
        integer: bool | None = None,
        node_limit: int | None = None,
        gap: float = 1e-4,
    ) -> None:
        self.weights = weights
        self.totals = totals
        self.max_change = max_change
        self.direction = direction
        self.integer = integer
        self.node_limit = node_limit
        self.gap = gap

    def apply(self, table: Table) -> AdjustmentResult:
        """Adjust ``table`` (its primaries marked, e.g. by :func:`apply_rules`).

        Raises
        ------
        InfeasibleError
            A primary cannot move by its level within its bounds, no adjustment keeps every
            relation, or the node limit ended the search before any adjustment was found.
        """
        self.validate_params()
        integer = table.kind == "count" if self.integer is None else bool(self.integer)
        w = cell_weights(table, self.weights)
        cap_up, cap_down = capacities(table, self.totals, self.max_change)
        lvl_up, lvl_down = levels(table, integer)
        prim = np.flatnonzero(table.primary)
        model = build_model(table, w, cap_up, cap_down, lvl_up, lvl_down, prim, integer)
        k = prim.size
        closed = model.lo[-k:] > model.hi[-k:] if k else np.zeros(0, dtype=bool)
        if closed.any():
            where = table.cell_position(int(prim[np.flatnonzero(closed)[0]]))
            raise InfeasibleError(
                f"The primary cell at {where} cannot move by its protection level in either "
                "direction within its bounds; lower its levels or widen its bounds."
            )
        options: dict[str, Any] = {"mip_rel_gap": float(self.gap)}
        if self.node_limit is not None:
            options["node_limit"] = int(self.node_limit)
        details: dict[str, Any] = {
            "integer": integer,
            "variables": 2 * table.n_cells + k,
            "relations": table.constraint_matrix.shape[0],
            "fallback": False,
        }
        # the dearest primaries choose their direction first in the dive
        order = np.argsort(-w[prim] * np.minimum(lvl_up[prim], lvl_down[prim]), kind="stable")
        res = None
        heuristic = False
        if self.direction == "relaxed" and k:
            res = _dive_solve(model, options, order)
            heuristic = res is not None
            details["fallback"] = res is None
        if res is None:
            res = solve(model, options)
        # HiGHS's node limit comes back as scipy's status 4 ("not recognised"), with or
        # without a solution: the node limit is what stopped a run that ended otherwise
        cut = res.status != 0 and self.node_limit is not None and not heuristic
        if cut and k:  # the search was cut short: the dive's table if it is closer
            dived = _dive_solve(model, options, order)
            better = dived is not None and (res.x is None or dived.fun < res.fun - NOISE)
            details["dive_closer"] = bool(better)
            res = dived if better else res
        if res.x is None:
            if cut and res.status not in (2, 3):
                raise InfeasibleError(
                    "The node limit ('node_limit') ended the search before any adjustment was "
                    "found; raise it or use direction='relaxed'."
                )
            raise InfeasibleError(
                "No adjustment moves every primary by its level while the table adds up and "
                "every cell stays within its bounds; free the totals (totals='free'), raise "
                "'max_change' or lower the protection levels."
            )
        n = table.n_cells
        dev = res.x[:n] - res.x[n : 2 * n]
        # the solver's noise (about 1e-12) is not published: moves to the 9th decimal
        dev = np.round(dev) if integer else np.where(np.abs(dev) < NOISE, 0.0, np.round(dev, 9))
        adjusted = readd(table, table.values + dev)
        y = np.round(res.x[2 * n :])
        direction = np.zeros(n, dtype=np.int8)
        direction[prim] = np.where(y > 0.5, 1, -1)
        stopped = "node_limit" if cut else None
        details["nodes"] = int(getattr(res, "mip_node_count", 0) or 0)
        optimal = res.status == 0 and not heuristic and not details.get("dive_closer")
        return AdjustmentResult(
            table=table,
            adjusted=adjusted,
            direction=direction,
            weights=w,
            distance=float(np.sum(w * np.abs(adjusted - table.values))),
            optimal=optimal,
            protection=self,
            stopped=stopped,
            details=details,
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries, levels 3."""
        from sdckit.tables.examples import A4_PRIMARIES, a4_table
        from sdckit.tables.rules import MarkedCells, apply_rules

        t = a4_table()
        cells = [t.cell(row=r, col=c) for r, c in A4_PRIMARIES]
        return cls(), apply_rules(t, MarkedCells(cells=cells, upper=3, lower=3))


@function_twin(ControlledAdjustment, roles=False)
def adjust_controlled(table: Table, **params: Any) -> AdjustmentResult:
    """Controlled tabular adjustment (CTA): every cell published, the primaries moved.

    The function form of :class:`ControlledAdjustment`.

    Parameters
    ----------
    table : Table
        The table with its primaries marked (it is not modified).
    weights, totals, max_change, direction, integer, node_limit, gap
        The parameters of :class:`ControlledAdjustment`, by name (keyword arguments only).

    Examples
    --------
    >>> from sdckit.tables import MarkedCells, Table, apply_rules
    >>> from sdckit.tables.cta import adjust_controlled
    >>> t = Table.from_array([7, 4, 3], {"x": ["a", "b"]})
    >>> m = apply_rules(t, MarkedCells(cells=[t.cell(x="a")], upper=2, lower=3))
    >>> res = adjust_controlled(m)  # weights 1 / value: moving the total is cheapest
    >>> res.adjusted.tolist(), res.direction.tolist()
    ([9.0, 6.0, 3.0], [0, 1, 0])
    """
