"""The hypercube (GHMITER) heuristic (methods.md M11.4).

Every suppressed cell of every non-hierarchical sub-table must be a corner of a hypercube of
suppressed cells (2^D corners) along which it can move by its protection levels: shifting the
cell by +d shifts the corners of odd parity by -d and the others by +d (a corner that is the
sub-table's marginal in a dimension keeps the parity).  For each cell not yet protected the cube
with the fewest new suppressions, then the smallest cost, is suppressed; sub-tables are
processed top-down and revisited until no new suppression appears.  If no cube meets the levels
they are relaxed stepwise (divided by 2 .. 10, then only a non-zero width is asked).  An LP
audit with repair (on by default for tables up to ``repair_limit`` cells) then guarantees the
pattern.  Zero-valued cells are corners only of cubes that need them (fewest zero corners
first); a primary that no pattern can protect raises an InfeasibleError.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, ClassVar

import numpy as np

from sdckit.protection import Boolean, Integer, Param
from sdckit.tables._method import TableMethod
from sdckit.tables.suppression._common import (
    COST_PARAM,
    SuppressionResult,
    candidates,
    capacities,
    cell_costs,
    contract_table,
    fix_singletons,
    make_result,
    repair_within_limit,
    requirements,
)
from sdckit.tables.suppression._subtables import subtables
from sdckit.tables.table import Table
from sdckit.twins import function_twin

__all__ = ["HypercubeSuppression", "suppress_hypercube"]


def _cubes(c: tuple[int, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Corner positions ``(n_cubes, 2^D)`` (flat, local) and their signs ``(n_cubes, 2^D)``."""
    alts = [np.array([i for i in range(s) if i != ci]) for ci, s in zip(c, shape, strict=True)]
    grid = np.stack(np.meshgrid(*alts, indexing="ij"), axis=-1).reshape(-1, len(shape))
    masks = np.array(list(itertools.product((0, 1), repeat=len(shape))), dtype=bool)
    carr = np.array(c)
    corners = np.where(masks[None, :, :], grid[:, None, :], carr[None, None, :])
    flat = np.ravel_multi_index(tuple(np.moveaxis(corners, -1, 0)), shape)
    flips = masks[None, :, :] & (grid[:, None, :] > 0) & (carr[None, None, :] > 0)
    signs = np.where(flips.sum(axis=-1) % 2 == 1, -1.0, 1.0)
    flat.setflags(write=False)
    signs.setflags(write=False)
    return flat, signs


def _best_cube(
    c: tuple[int, ...],
    shape: tuple[int, ...],
    usable: np.ndarray,
    supp: np.ndarray,
    ubcap: np.ndarray,
    lbcap: np.ndarray,
    cost: np.ndarray,
    levels: tuple[float, float, float],
    existing_only: bool,
    zero: np.ndarray,
) -> np.ndarray | None:
    flat, signs = _cubes(c, shape)
    ok = usable[flat].all(axis=1)
    if existing_only:
        ok &= supp[flat].all(axis=1)
    if not ok.any():
        return None
    flat, signs = flat[ok], signs[ok]
    neg = signs < 0
    lb_c, ub_c = lbcap[flat], ubcap[flat]
    up = np.minimum(
        np.where(neg, lb_c, np.inf).min(axis=1), np.where(~neg, ub_c, np.inf).min(axis=1)
    )
    down = np.minimum(
        np.where(~neg, lb_c, np.inf).min(axis=1), np.where(neg, ub_c, np.inf).min(axis=1)
    )
    upl, lpl, spl = levels
    tol = 1e-9
    feasible = (up >= upl - tol) & (down >= lpl - tol) & (up + down >= spl - tol) & (up + down > 0)
    if not feasible.any():
        return None
    flat = flat[feasible]
    new = ~supp[flat]
    n_new = new.sum(axis=1)
    n_zero = (new & zero[flat]).sum(axis=1)  # zero-valued corners only where nothing else works
    total_cost = np.where(new, cost[flat], 0.0).sum(axis=1)
    best = np.lexsort((total_cost, n_new, n_zero))[0]
    return flat[best]


def _protect_subtable(
    cells: np.ndarray,
    supp_all: np.ndarray,
    usable_all: np.ndarray,
    req: dict[int, tuple[float, float, float]],
    ubcap_all: np.ndarray,
    lbcap_all: np.ndarray,
    cost_all: np.ndarray,
    zero_all: np.ndarray,
) -> list[int]:
    shape = cells.shape
    flat_cells = cells.ravel()
    supp = supp_all[flat_cells].copy()
    usable = usable_all[flat_cells] | supp
    ubcap, lbcap = ubcap_all[flat_cells], lbcap_all[flat_cells]
    zero = zero_all[flat_cells] & ~supp
    marginal = np.zeros(shape, dtype=bool)
    for d in range(len(shape)):
        sl = [slice(None)] * len(shape)
        sl[d] = 0
        marginal[tuple(sl)] = True
    cost = cost_all[flat_cells] + 1e6 * marginal.ravel()
    added: list[int] = []
    for local in np.flatnonzero(supp):
        cell = int(flat_cells[local])
        levels = req.get(cell, (0.0, 0.0, 1e-9))
        c = tuple(int(i) for i in np.unravel_index(local, shape))
        if _best_cube(c, shape, usable, supp, ubcap, lbcap, cost, levels, True, zero) is not None:
            continue
        choice = None
        for factor in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, np.inf):
            relaxed = (levels[0] / factor, levels[1] / factor, max(levels[2] / factor, 1e-9))
            choice = _best_cube(c, shape, usable, supp, ubcap, lbcap, cost, relaxed, False, zero)
            if choice is not None:
                break
        if choice is None:
            continue
        fresh = choice[~supp[choice]]
        supp[fresh] = True
        added.extend(int(flat_cells[f]) for f in fresh)
    return added


class HypercubeSuppression(TableMethod):
    """Secondary suppression by the hypercube method (GHMITER, M11.4).

    Every suppressed cell of every non-hierarchical sub-table becomes a corner of a hypercube
    of suppressed cells along which it can move by its protection levels; an LP audit with
    repair then guarantees the pattern on tables up to ``repair_limit`` cells.

    Parameters
    ----------
    cost : {"value", "contributors", "unity"} or array
        Cost of suppressing a cell (ties between cubes with equally many new suppressions).
    max_passes : int, default 10
        Passes over all sub-tables.
    singletons : bool, default True
        Add a third suppression to relations where a one-contributor primary is protected by
        one other primary only.
    repair_limit : int, default 20000
        Tables with at most this many cells are audited afterwards and every under-protected
        primary is repaired with the LP heuristic (0 switches the repair off).

    Returns a :class:`SuppressionResult` whose ``protected`` is the verdict of the final
    audit (False above ``repair_limit``: not audited).  Raises
    :class:`~sdckit.errors.InfeasibleError` for primaries no pattern can protect.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, HypercubeSuppression, MarkedCells, apply_rules
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> HypercubeSuppression().apply(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """

    name: ClassVar[str] = "hypercube suppression"
    alias: ClassVar[str] = "hypercube"
    kind: ClassVar[str] = "suppression"
    description: ClassVar[str] = (
        "Protects every primary cell by suppressing further cells that form hypercubes with it "
        "in each sub-table (hypercube method)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cost": COST_PARAM,
        "max_passes": Param(Integer(minimum=1), help="passes over all sub-tables"),
        "singletons": Param(
            Boolean(),
            help="a relation with a one-contributor primary and one other primary needs a third",
        ),
        "repair_limit": Param(
            Integer(minimum=0),
            help="tables with at most this many cells are audited and repaired (0: never)",
        ),
    }

    def __init__(
        self,
        *,
        cost: str | Any = "value",
        max_passes: int = 10,
        singletons: bool = True,
        repair_limit: int = 20_000,
    ) -> None:
        self.cost = cost
        self.max_passes = max_passes
        self.singletons = singletons
        self.repair_limit = repair_limit

    def apply(self, table: Table) -> SuppressionResult:
        """Protect the primaries of ``table`` by the hypercube method."""
        self.validate_params()
        start = time.perf_counter()
        max_passes = self.max_passes
        w = cell_costs(table, self.cost)
        prim, up, low, sl = requirements(table)
        req = {
            int(p): (float(u), float(lo), float(s))
            for p, u, lo, s in zip(prim, up, low, sl, strict=True)
        }
        ubcap, lbcap = capacities(table)
        usable = candidates(table)
        zero = usable & (table.values == 0)
        supp = table.suppressed.copy()
        subs = subtables(table)
        passes = 0
        for _ in range(max_passes):
            passes += 1
            changed = False
            for cells in subs:
                if not supp[cells.ravel()].any():
                    continue
                added = _protect_subtable(cells, supp, usable, req, ubcap, lbcap, w, zero)
                if added:
                    supp[added] = True
                    changed = True
            if not changed:
                break
        out = table.suppress(supp & ~table.suppressed)
        if self.singletons:
            out = fix_singletons(out, w)
        out, repaired, verdict = repair_within_limit(out, table, w, self.repair_limit, "hypercube")
        return make_result(
            out,
            table,
            self,
            w,
            False,
            time.perf_counter() - start,
            verdict,
            passes=passes,
            subtables=len(subs),
            repaired=repaired,
        )

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """sdcTable's 4 x 4 table (benchmarks.md A4) with its nine primaries."""
        return cls(), contract_table()


@function_twin(HypercubeSuppression, roles=False)
def suppress_hypercube(table: Table, **params: Any) -> SuppressionResult:
    """Secondary suppression by the hypercube method (GHMITER, M11.4).

    The function form of :class:`HypercubeSuppression`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    cost, max_passes, singletons, repair_limit
        The parameters of :class:`HypercubeSuppression`, by name (keyword arguments only).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_hypercube
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> suppress_hypercube(apply_rules(t, MarkedCells(cells=[4], upper=1))).n_secondary
    3
    """
