"""Non-hierarchical sub-tables of a hierarchical table (as in tau-ARGUS's GHMITER and HiTaS).

A sub-table chooses one total or sub-total ``p_d`` per dimension and holds the cross product of
``{p_d} + children(p_d)``: a flat table whose position 0 in each dimension is the marginal.
This module sits below :class:`~sdckit.tables.Table` (the LP audit groups its work by
sub-table); the suppression methods use it through :mod:`sdckit.tables.suppression._subtables`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["subtables"]


def subtables(table: Table) -> list[np.ndarray]:
    """Cell numbers of every sub-table, shaped ``(1 + n_1, ..., 1 + n_D)``, top-down."""
    grid = np.arange(table.n_cells).reshape(table.shape)
    per_dim = [
        [(int(h.depth[p]), [p, *h.children[p]]) for p in h.internal.tolist()]
        for h in table.hierarchies
    ]
    out = []
    for combo in itertools.product(*per_dim):
        depth = sum(c[0] for c in combo)
        out.append((depth, grid[np.ix_(*[c[1] for c in combo])]))
    out.sort(key=lambda x: x[0])
    return [cells for _, cells in out]
