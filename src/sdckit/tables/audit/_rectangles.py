"""Moves along 4-cell cycles of suppressed cells in two-way tables: LP-free proofs.

A cycle is a rectangle of suppressed cells: rows ``i, k`` and columns ``j, l`` of a flat
two-way (sub-)table whose row 0 and column 0 are the marginals.  Moving ``(i, j)`` by ``t``
moves ``(k, j)`` by ``rho t``, ``(i, l)`` by ``gamma t`` and ``(k, l)`` by ``rho gamma t``, where
``rho`` is -1 when both rows are inner rows (their column sum stays put) and +1 when one of them
is the marginal row 0 (it moves with the other), and ``gamma`` likewise for the columns; every
relation of the flat table then still holds.  Each such move within every cell's room is a
feasible point of the attacker's LP over that table, so the LP's interval holds it: a
requirement it meets passes without the LP.

Used by the modular method (its sub-table audits and the separation of its sub-table MILPs)
and by the LP audit of two-way hierarchical tables (:func:`rectangle_proofs`: rectangles of
suppressed inner cells, which are moves of the whole table).  The search is a numba kernel,
``O(sum over positions of |suppressed in its column| * |suppressed in its row|)``, imported on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["rectangle_moves", "rectangle_proofs"]

#: No rectangle is sought among more suppressed positions than this (0: never; the tests
#: switch the proofs off with it to compare the verdicts with the LPs').
MAX_POSITIONS = 50_000_000


def rectangle_moves(
    shape: tuple[int, ...], pos: np.ndarray, room_lo: np.ndarray, room_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """How far each suppressed position of a two-way table moves along 4-cell cycles.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, columns)`` of the flat table (row 0 and column 0 the marginals).
    pos : numpy.ndarray
        Sorted flat positions of the suppressed cells.
    room_lo, room_hi : numpy.ndarray
        Each position's room: deviations ``room_lo <= d <= room_hi`` (``room_lo <= 0 <=
        room_hi``, infinite allowed).

    Returns
    -------
    (lowest, highest) : tuple of numpy.ndarray
        The lowest and the highest deviation of each position that one cycle reaches with every
        cell within its room (0 where no cycle holds it).

    Examples
    --------
    >>> lo, hi = rectangle_moves((3, 3), np.array([4, 5, 7, 8]), -np.array([2.0, 3, 5, 1]),
    ...                          np.array([9.0, 9, 9, 9]))
    >>> lo.tolist(), hi.tolist()
    ([-1.0, -3.0, -3.0, -1.0], [3.0, 1.0, 1.0, 3.0])
    """
    k = len(pos)
    lo = np.zeros(k)
    hi = np.zeros(k)
    if len(shape) != 2 or k < 4 or k > MAX_POSITIONS:
        return lo, hi
    from sdckit.tables.audit._rectangles_kernel import cycle_moves

    pos = np.asarray(pos, dtype=np.int64)
    cycle_moves(
        int(shape[0]),
        int(shape[1]),
        pos,
        np.asarray(room_lo, dtype=np.float64),
        np.asarray(room_hi, dtype=np.float64),
        lo,
        hi,
    )
    return lo, hi


def rectangle_proofs(
    table: Table, cells: np.ndarray, room_lo: np.ndarray, room_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Moves of the whole two-way table along cycles of suppressed inner cells.

    ``cells`` are the table's suppressed cells (sorted cell numbers) and ``room_lo``,
    ``room_hi`` their rooms (deviations).  A cell that is no total (a leaf in both dimensions)
    lies in two relations only, both of the sub-table of its two parents; a cycle of four such
    cells of one sub-table keeps every relation of the table, so it is a feasible point of the
    attacker's LP over the whole table.  Returns per position of ``cells`` the lowest and the
    highest deviation such cycles reach (0 for totals, in tables of other dimensions and where
    no cycle holds the cell).
    """
    from sdckit.tables.audit._grid import subtables

    lo = np.zeros(len(cells))
    hi = np.zeros(len(cells))
    if len(table.shape) != 2 or len(cells) < 4:
        return lo, hi
    at = np.full(table.n_cells, -1, dtype=np.int64)
    at[cells] = np.arange(len(cells))
    leaf = ~table.is_total
    for sub in subtables(table):
        inner = sub[1:, 1:]
        which = at[inner.ravel()]
        use = (which >= 0) & leaf[inner.ravel()]
        if use.sum() < 4:
            continue
        # positions in the flat sub-table (rows and columns >= 1: every cycle is of inner
        # cells, so every sign is -1 and the marginals stay put)
        flat = np.flatnonzero(use)
        r, c = np.divmod(flat, inner.shape[1])
        pos = (r + 1) * sub.shape[1] + (c + 1)
        idx = which[use]
        sub_lo, sub_hi = rectangle_moves(sub.shape, pos, room_lo[idx], room_hi[idx])
        lo[idx], hi[idx] = sub_lo, sub_hi
    return lo, hi
