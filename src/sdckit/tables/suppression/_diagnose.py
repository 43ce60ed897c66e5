"""Which primaries no suppression pattern can protect, and why (the InfeasibleError text).

Suppressing more cells never narrows a feasibility interval, so the pattern that suppresses
every cell a method may use is the most protective one: a primary it leaves under-protected
cannot be protected at all.  The message names such cells by number and position (never by
their codes or values, which are data), says why, and which parameter to change.
"""

from __future__ import annotations

import numpy as np

from sdckit.errors import InfeasibleError
from sdckit.tables.audit._core import lp_audit
from sdckit.tables.table import Table

__all__ = ["infeasible_error", "unprotectable"]

_SHOWN = 5


def unprotectable(table: Table, allowed: np.ndarray) -> np.ndarray:
    """Primaries that stay under-protected when every ``allowed`` cell is suppressed too."""
    if not table.primary.any():
        return np.zeros(0, dtype=np.int64)
    widest = table.suppress(allowed & ~table.suppressed)
    return lp_audit(widest, intervals="check").under_protected


def _reason(table: Table, cell: int, usable: np.ndarray, lo: float, hi: float) -> str:
    m = table.constraint_matrix.tocsc()
    rows = m.indices[m.indptr[cell] : m.indptr[cell + 1]]
    mr = table.constraint_matrix.tocsr()
    blocked: list[str] = []
    for r in rows.tolist():
        others = mr.indices[mr.indptr[r] : mr.indptr[r + 1]]
        others = others[others != cell]
        if not usable[others].any():
            dim = repr(table.dimensions[int(table.relation_dimensions[r])])
            if dim not in blocked:
                blocked.append(dim)
    if blocked:
        along = " and ".join(blocked)
        return (
            f"its relation along {along} has no other cell that may be suppressed (the "
            "other cells are empty or frozen), so it can be computed from published cells"
        )
    a = float(table.values[cell])
    tol = 1e-6 * (1.0 + abs(a))
    if hi - lo <= tol:
        return (
            "the cells it could move with are held by published, empty or frozen cells, so it "
            "can be computed exactly"
        )
    short = []
    if hi < a + table.upper[cell] - tol:
        short.append("upward")
    if lo > a - table.lower[cell] + tol:
        short.append("downward")
    if not short:
        short.append("in width (sliding level)")
    return (
        "its protection level asks for more room "
        + " and ".join(short)
        + " than the a priori bounds and the other cells leave"
    )


def infeasible_error(
    table: Table, cells: np.ndarray, allowed: np.ndarray, method: str
) -> InfeasibleError:
    """The :class:`InfeasibleError` for primaries ``cells`` that no pattern can protect."""
    cells = np.asarray(cells, dtype=np.int64)
    usable = allowed | table.suppressed
    widest = table.suppress(allowed & ~table.suppressed)
    check = lp_audit(widest, intervals="exact", primaries_only=True)
    parts = []
    for c in cells[:_SHOWN].tolist():
        lo, hi = check.interval(c)
        parts.append(f"{table.cell_position(c)}: {_reason(table, c, usable, lo, hi)}")
    more = f"; and {len(cells) - _SHOWN} more" if len(cells) > _SHOWN else ""
    empty_primary = bool(np.any(table.n_contributors[cells] == 0))
    hint = (
        " Empty cells marked by zero_cells or marked_cells can only be protected through "
        "cells with contributors; mark fewer of them."
        if empty_primary
        else ""
    )
    return InfeasibleError(
        f"The {method} method cannot protect {len(cells)} primary cell(s), and no suppression "
        f"pattern can: {'; '.join(parts)}{more}. Lower the protection levels of the rules "
        "(min_frequency 'safety_range' and 'minimum_level', p_percent 'p', pq 'p', dominance "
        "'k', marked_cells 'upper'/'lower'/'sliding'), freeze fewer cells (mark_protected), or "
        "widen the a priori bounds (Table.with_status(lower_bounds=..., upper_bounds=...))."
        f"{hint} Table.cell_label(number) gives the codes of a cell."
    )
