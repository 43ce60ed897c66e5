"""The numba kernel of :func:`sdckit.tables.audit._rectangles.rectangle_moves` (imported on use)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cycle_moves"]


@njit(cache=True, inline="always")
def _room(sign, lo, hi):
    """How far a cell moving ``sign`` times the target lets the target go up."""
    return hi if sign > 0 else -lo


@njit(cache=True)
def cycle_moves(n_rows, n_cols, pos, room_lo, room_hi, out_lo, out_hi):  # pragma: no cover
    """Fill ``out_lo`` / ``out_hi`` with each position's reach along 4-cell cycles.

    ``pos`` are sorted flat positions of a ``n_rows x n_cols`` table; for a position ``(i, j)``
    the cycles through it are the suppressed ``(k, j)`` and ``(i, l)`` whose corner ``(k, l)``
    is suppressed too (looked up in a dense grid of position numbers).
    """
    k = pos.shape[0]
    grid = np.full(n_rows * n_cols, -1, dtype=np.int64)
    for p in range(k):
        grid[pos[p]] = p
    # suppressed positions of each column and of each row (CSC / CSR of the positions)
    col_cnt = np.zeros(n_cols + 1, dtype=np.int64)
    row_cnt = np.zeros(n_rows + 1, dtype=np.int64)
    for p in range(k):
        col_cnt[pos[p] % n_cols + 1] += 1
        row_cnt[pos[p] // n_cols + 1] += 1
    for c in range(n_cols):
        col_cnt[c + 1] += col_cnt[c]
    for r in range(n_rows):
        row_cnt[r + 1] += row_cnt[r]
    col_rows = np.empty(k, dtype=np.int64)
    row_cols = np.empty(k, dtype=np.int64)
    col_fill = col_cnt[:-1].copy()
    row_fill = row_cnt[:-1].copy()
    for p in range(k):
        i = pos[p] // n_cols
        j = pos[p] % n_cols
        col_rows[col_fill[j]] = i
        col_fill[j] += 1
        row_cols[row_fill[i]] = j
        row_fill[i] += 1
    for t in range(k):
        i = pos[t] // n_cols
        j = pos[t] % n_cols
        best_up = 0.0
        best_dn = 0.0
        for a_at in range(col_cnt[j], col_cnt[j + 1]):
            kk = col_rows[a_at]
            if kk == i:
                continue
            a = grid[kk * n_cols + j]
            rho = -1.0 if (i > 0 and kk > 0) else 1.0
            for b_at in range(row_cnt[i], row_cnt[i + 1]):
                ll = row_cols[b_at]
                if ll == j:
                    continue
                c = grid[kk * n_cols + ll]
                if c < 0:
                    continue
                b = grid[i * n_cols + ll]
                gamma = -1.0 if (j > 0 and ll > 0) else 1.0
                corner = rho * gamma
                up = room_hi[t]
                up = min(up, _room(rho, room_lo[a], room_hi[a]))
                up = min(up, _room(gamma, room_lo[b], room_hi[b]))
                up = min(up, _room(corner, room_lo[c], room_hi[c]))
                # down: the same cycle the other way (the rooms mirrored)
                dn = -room_lo[t]
                dn = min(dn, _room(rho, -room_hi[a], -room_lo[a]))
                dn = min(dn, _room(gamma, -room_hi[b], -room_lo[b]))
                dn = min(dn, _room(corner, -room_hi[c], -room_lo[c]))
                if up > best_up:
                    best_up = up
                if dn > best_dn:
                    best_dn = dn
        out_hi[t] = best_up
        out_lo[t] = -best_dn
