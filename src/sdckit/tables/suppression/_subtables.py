"""Non-hierarchical sub-tables of a hierarchical table (as in tau-ARGUS's GHMITER and HiTaS).

A sub-table chooses one total or sub-total ``p_d`` per dimension and holds the cross product of
``{p_d} + children(p_d)``: a flat table whose position 0 in each dimension is the marginal.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from sdckit.tables.audit._grid import subtables
from sdckit.tables.audit._rectangles import rectangle_moves
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
