"""Non-hierarchical sub-tables of a hierarchical table (as in tau-ARGUS's GHMITER and HiTaS).

A sub-table chooses one total or sub-total ``p_d`` per dimension and holds the cross product of
``{p_d} + children(p_d)``: a flat table whose position 0 in each dimension is the marginal.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from sdckit.tables._subtables import subtables
from sdckit.tables.table import Table

__all__ = ["local_relations", "rectangle_moves", "shared_upward", "subtables", "waves"]


@lru_cache(maxsize=256)
def local_relations(shape: tuple[int, ...]) -> sp.csr_matrix:
    """Relations of a flat table of ``shape`` (position 0 = marginal in each dimension)."""
    n = int(np.prod(shape))
    idx = np.arange(n).reshape(shape)
    rows, cols, vals = [], [], []
    n_rows = 0
    for d in range(len(shape)):
        moved = np.moveaxis(idx, d, 0).reshape(shape[d], -1)
        other = moved.shape[1]
        r = n_rows + np.arange(other)
        rows.append(np.tile(r, shape[d]))
        cols.append(moved.ravel())
        vals.append(np.r_[np.ones(other), -np.ones(other * (shape[d] - 1))])
        n_rows += other
    out = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n)
    )
    # canonical now, so that no later operation sorts the shared (cached) matrix in place
    out.sum_duplicates()
    out.sort_indices()
    return out


def waves(subs: list[np.ndarray], n_cells: int) -> list[list[int]]:
    """The sub-tables in waves: none shares a cell with another of its wave.

    A sub-table's wave is one after the last wave of an earlier sub-table (in ``subs``' order)
    that shares a cell with it.  Processing the waves in order, each wave's sub-tables in any
    order or at the same time, gives what processing ``subs`` one by one gives: a sub-table's
    work reads and changes its own cells only, and every earlier sub-table that shares one of
    them is done before it, every later one after it.

    Examples
    --------
    >>> cells = np.arange(9).reshape(3, 3)
    >>> waves([cells[:2, :2], cells[2:, 2:], cells[1:, 1:]], 9)
    [[0, 1], [2]]
    """
    last = np.zeros(n_cells, dtype=np.int64)
    out: list[list[int]] = []
    for s_id, cells in enumerate(subs):
        flat = cells.ravel()
        wave = int(last[flat].max(initial=0))
        last[flat] = wave + 1
        if wave == len(out):
            out.append([])
        out[wave].append(s_id)
    return out


def shared_upward(table: Table, cells: np.ndarray) -> np.ndarray:
    """Cells of a sub-table that also lie in a sub-table above it (processed before it).

    Position 0 in dimension ``d`` is the sub-table's parent ``p_d``; unless ``p_d`` is the
    root, those cells are children of ``parent(p_d)`` in a sub-table higher up.  Shaped like
    ``cells``.
    """
    top = table.node_index[int(cells.flat[0])]
    mask = np.zeros(cells.shape, dtype=bool)
    for d in range(cells.ndim):
        if top[d] != 0:
            index = [slice(None)] * cells.ndim
            index[d] = 0
            mask[tuple(index)] = True
    return mask


#: Two-way sub-tables up to this many (positions x cells) look for cycles of four cells.
_RECTANGLES_UP_TO = 2_000_000


def rectangle_moves(
    shape: tuple[int, ...], pos: np.ndarray, room_lo: np.ndarray, room_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """How far each suppressed position of a two-way sub-table moves along 4-cell cycles.

    A cycle is a rectangle of suppressed cells: rows ``i, k`` and columns ``j, l``.  Moving
    ``(i, j)`` by ``t`` moves ``(k, j)`` by ``rho t``, ``(i, l)`` by ``gamma t`` and ``(k, l)`` by
    ``rho gamma t``, where ``rho`` is -1 when both rows are inner rows (their column sum stays
    put) and +1 when one of them is the marginal row 0 (it moves with the other), and ``gamma``
    likewise for the columns; every relation of the sub-table then still holds.  Each such
    move within every cell's room (``room_lo <= move <= room_hi``, deviations of the suppressed
    positions) is a feasible point of the sub-table's attacker model, so the largest and the
    smallest reach a position's interval (0 where no rectangle holds it).  Returns those
    (lowest, highest) deviations per position.

    Examples
    --------
    >>> lo, hi = rectangle_moves((3, 3), np.array([4, 5, 7, 8]), -np.array([2.0, 3, 5, 1]),
    ...                           np.array([9.0, 9, 9, 9]))
    >>> lo.tolist(), hi.tolist()
    ([-1.0, -3.0, -3.0, -1.0], [3.0, 1.0, 1.0, 3.0])
    """
    n_rows, n_cols = shape[0], shape[1]
    k = len(pos)
    if k < 4 or k * n_rows * n_cols > _RECTANGLES_UP_TO:
        return np.zeros(k), np.zeros(k)
    on = np.zeros((n_rows, n_cols), dtype=bool)
    on.flat[pos] = True
    ti, tj = np.divmod(pos, n_cols)
    rows, cols = np.arange(n_rows), np.arange(n_cols)
    rho = np.where((ti[:, None] > 0) & (rows[None, :] > 0), -1.0, 1.0)  # (k, rows)
    gamma = np.where((tj[:, None] > 0) & (cols[None, :] > 0), -1.0, 1.0)  # (k, cols)
    corner = rho[:, :, None] * gamma[:, None, :]  # sign of (k, l) per position
    valid = (
        (on[:, tj].T & (rows[None, :] != ti[:, None]))[:, :, None]
        & (on[ti, :] & (cols[None, :] != tj[:, None]))[:, None, :]
        & on[None, :, :]
    )

    def highest(below: np.ndarray, above: np.ndarray) -> np.ndarray:
        """The largest move up of each position, each cell within ``below <= d <= above``."""
        grid_lo = np.zeros((n_rows, n_cols))
        grid_hi = np.zeros((n_rows, n_cols))
        grid_lo.flat[pos], grid_hi.flat[pos] = below, above

        def room(sign: np.ndarray, cell_lo: np.ndarray, cell_hi: np.ndarray) -> np.ndarray:
            return np.where(sign > 0, cell_hi, -cell_lo)  # how far the target may go up

        column = room(rho, grid_lo[:, tj].T, grid_hi[:, tj].T)  # (k, rows)
        row = room(gamma, grid_lo[ti, :], grid_hi[ti, :])  # (k, cols)
        step = np.minimum(column[:, :, None], row[:, None, :])
        step = np.minimum(step, room(corner, grid_lo[None], grid_hi[None]))
        step = np.minimum(step, above[:, None, None])
        return np.max(np.where(valid, step, 0.0), axis=(1, 2))

    # a move down is a move up with the rooms mirrored
    return -highest(-room_hi, -room_lo), highest(room_lo, room_hi)
