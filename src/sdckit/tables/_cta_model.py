"""The model of controlled tabular adjustment (Castro 2006) and its solve (HiGHS).

The variables are ``[z+ (n), z- (n), y (k)]``: each cell's move up and down, and a binary per
primary (1: up); :mod:`sdckit.tables.cta` states the model and uses these pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from sdckit.errors import ParameterError
from sdckit.tables.rounding import _readd as readd  # the totals added up from the interior
from sdckit.tables.table import CellStatus, Table

__all__ = [
    "NOISE",
    "Model",
    "build_model",
    "capacities",
    "cell_weights",
    "dive",
    "fixed_cells",
    "levels",
    "readd",
    "solve",
]

#: Deviations below this are solver noise (HiGHS works to about 1e-7 on scaled rows).
NOISE = 1e-9


def levels(table: Table, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """The (upper, lower) level of each cell a primary must clear (0 elsewhere).

    A sliding level counts both ways.  A primary without any level must still move: by one
    unit when the deviations are whole units, else by a thousandth of its size (as the
    suppression methods ask such a primary not to be disclosed exactly).
    """
    prim = table.primary
    up = np.where(prim, np.maximum(table.upper, table.sliding), 0.0)
    down = np.where(prim, np.maximum(table.lower, table.sliding), 0.0)
    none = prim & (up <= 0) & (down <= 0)
    tiny = 1.0 if integer else 1e-3
    up = np.where(none, tiny * (1.0 if integer else 1.0 + np.abs(table.values)), up)
    down = np.where(none, up, down)
    if integer:  # whole-unit moves: a level of 2.5 needs a move of 3
        up, down = np.ceil(up - NOISE), np.ceil(down - NOISE)
    return up, down


def fixed_cells(table: Table, totals: str = "free") -> np.ndarray:
    """Cells that never move: empty cells (no contributor, nothing to publish), cells
    marked protected (frozen by the user) and the totals the ``totals`` option fixes
    (``"fixed"``: every total that is not primary; ``"grand"``: the grand total unless
    primary)."""
    frozen = (table.status == CellStatus.EMPTY) | (table.status == CellStatus.PROTECTED)
    other = ~table.primary
    if totals == "fixed":
        frozen = frozen | (table.is_total & other)
    elif totals == "grand" and table.is_total[0]:  # cell 0: every dimension at its root
        frozen[0] = frozen[0] or bool(other[0])
    return frozen


def cell_weights(table: Table, weights: Any) -> np.ndarray:
    """The weight of each cell's change: "inverse" (1 / value), "unity", "value" or given."""
    if isinstance(weights, str):
        if weights == "unity":
            return np.ones(table.n_cells)
        size = np.abs(table.values)
        # a zero cell counts as the smallest non-zero one: with 1 / value it is then the
        # dearest to move (zeros stay zero where a non-zero cell can take the change)
        smallest = float(size[size > 0].min()) if np.any(size > 0) else 1.0
        size = np.where(size > 0, size, smallest)
        return size if weights == "value" else 1.0 / size
    arr = np.asarray(weights, dtype=float).ravel()
    if arr.size != table.n_cells or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(
            "The 'weights' parameter of ControlledAdjustment must be 'inverse', 'unity', "
            "'value' or an array of non-negative finite numbers, one per cell."
        )
    return arr


def capacities(
    table: Table, totals: str, max_change: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """How far each cell may move up and down (0 for cells that may not move)."""
    x = table.values
    up = np.maximum(table.upper_bounds - x, 0.0)
    down = np.maximum(x - table.lower_bounds, 0.0)
    frozen = fixed_cells(table, totals)
    other = ~table.primary
    if max_change is not None:
        share = float(max_change) * np.abs(x)
        up = np.where(other, np.minimum(up, share), up)
        down = np.where(other, np.minimum(down, share), down)
    return np.where(frozen, 0.0, up), np.where(frozen, 0.0, down)


@dataclass
class Model:
    """The matrices of Castro's model over ``[z+ (n), z- (n), y (k)]``."""

    cost: np.ndarray
    rows: sp.csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    integrality: np.ndarray
    n_cells: int


def build_model(
    table: Table,
    w: np.ndarray,
    cap_up: np.ndarray,
    cap_down: np.ndarray,
    lvl_up: np.ndarray,
    lvl_down: np.ndarray,
    prim: np.ndarray,
    integer: bool,
) -> Model:
    n, k = table.n_cells, prim.size
    m = table.constraint_matrix
    # a primary's move is bounded by its bounds; where those are infinite, by the whole
    # table plus every level (no least adjustment moves one cell further than that)
    big = float(np.abs(table.values).sum()) + float(lvl_up.sum() + lvl_down.sum()) + 1.0
    big_up = np.minimum(cap_up[prim], big)
    big_down = np.minimum(cap_down[prim], big)
    sel = sp.csr_matrix((np.ones(k), (np.arange(k), prim)), shape=(k, n))
    ydiag = sp.diags_array
    eq = sp.hstack([m, -m, sp.csr_matrix((m.shape[0], k))])
    blocks = [
        eq,  # the relations
        sp.hstack([sel, sp.csr_matrix((k, n)), -ydiag(lvl_up[prim])]),  # z+ >= upl y
        sp.hstack([sel, sp.csr_matrix((k, n)), -ydiag(big_up)]),  # z+ <= U y
        sp.hstack([sp.csr_matrix((k, n)), sel, ydiag(lvl_down[prim])]),  # z- >= lpl (1-y)
        sp.hstack([sp.csr_matrix((k, n)), sel, ydiag(big_down)]),  # z- <= L (1-y)
    ]
    r = m.shape[0]
    inf = np.full(k, np.inf)
    row_lo = np.r_[np.zeros(r), np.zeros(k), -inf, lvl_down[prim], -inf]
    row_hi = np.r_[np.zeros(r), inf, np.zeros(k), inf, big_down]
    hi_up, hi_down = cap_up.copy(), cap_down.copy()
    hi_up[prim], hi_down[prim] = big_up, big_down
    # a direction the bounds leave too little room for is closed: fix the binary
    y_lo = (lvl_down[prim] > big_down).astype(float)
    y_hi = (lvl_up[prim] <= big_up).astype(float)
    return Model(
        cost=np.r_[w, w, np.zeros(k)],
        rows=sp.vstack(blocks).tocsr(),
        row_lo=row_lo,
        row_hi=row_hi,
        lo=np.r_[np.zeros(2 * n), y_lo],
        hi=np.r_[hi_up, hi_down, y_hi],
        n_cells=n,
        integrality=np.r_[np.full(2 * n, 1 if integer else 0), np.ones(k)].astype(np.int8),
    )


def solve(
    model: Model,
    options: dict[str, Any],
    y_fixed: np.ndarray | None = None,
    *,
    relaxed: bool = False,
    y_lo: np.ndarray | None = None,
    y_hi: np.ndarray | None = None,
) -> Any:
    """HiGHS on the model: with the directions ``y_fixed`` given (no binaries left), with
    ``relaxed`` (every variable continuous), or with the binaries' bounds ``y_lo``, ``y_hi``."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # (on first use)

    k = model.lo.size - 2 * model.n_cells
    lo, hi, integrality = model.lo.copy(), model.hi.copy(), model.integrality.copy()
    if y_fixed is not None:
        y_lo = y_hi = y_fixed
    if y_lo is not None and y_hi is not None:
        lo[lo.size - k :], hi[hi.size - k :] = y_lo, y_hi
    if y_fixed is not None:  # the directions are given: no binaries left
        integrality[integrality.size - k :] = 0
    if relaxed:
        integrality[:] = 0
    return milp(
        model.cost,
        constraints=[LinearConstraint(model.rows, model.row_lo, model.row_hi)],
        bounds=Bounds(lo, hi),
        integrality=integrality,
        options=options,
    )


def dive(model: Model, order: np.ndarray) -> np.ndarray | None:
    """Directions for every primary by diving on the linear relaxation (Castro's heuristic of
    fixing the binaries, made safe): the primaries, in ``order``, each get the direction whose
    relaxation (the earlier directions fixed) is cheaper; a direction the relaxation already
    takes is kept without a solve.  Every step keeps the relaxation feasible, so the last
    one is an adjustment.  None when both directions of a primary leave none (the exact
    model decides then).

    The relaxation of CTA alone is no guide (``y = 1/2`` lets a primary's two moves cancel),
    hence one or two linear programs per primary, each warm-started from the last basis by
    HiGHS (one model, its bounds changed): cheap next to the mixed-integer search.
    """
    import highspy

    from sdckit.tables._lp import new_highs
    from sdckit.tables._lp import solve as run

    optimal = highspy.HighsModelStatus.kOptimal
    base = 2 * model.n_cells
    k = model.lo.size - base
    y_lo, y_hi = model.lo[-k:].copy(), model.hi[-k:].copy()
    h = new_highs(model.rows, model.row_lo, model.row_hi, model.lo, model.hi, model.cost)

    def fix(j: int, value: float) -> bool:
        col = np.array([base + j], dtype=np.int32)
        h.changeColsBounds(1, col, np.array([value]), np.array([value]))
        return run(h) == optimal

    if run(h) != optimal:
        return None
    x = np.asarray(h.getSolution().col_value)
    for j in order.tolist():
        if y_lo[j] == y_hi[j]:
            continue
        y = float(x[base + j])
        if abs(y - round(y)) < NOISE:  # the relaxation already chose: keep it (no solve)
            y_lo[j] = y_hi[j] = round(y)
            col = np.array([base + j], dtype=np.int32)
            h.changeColsBounds(1, col, np.array([y_lo[j]]), np.array([y_hi[j]]))
            continue
        costs = {}
        for choice in (1.0, 0.0):
            if fix(j, choice):
                costs[choice] = float(h.getInfo().objective_function_value)
        if not costs:
            return None
        best = min(costs, key=lambda c: (costs[c], -c))  # a tie goes up
        if best != 0.0 and not fix(j, best):  # the last solve was the other direction
            return None
        y_lo[j] = y_hi[j] = best
        x = np.asarray(h.getSolution().col_value)
    return y_lo
