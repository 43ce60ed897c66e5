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

__all__ = ["local_relations", "shared_upward", "subtables"]


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
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n)
    )


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
