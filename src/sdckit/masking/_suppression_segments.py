"""Where the greedy's moves take the records, replayed on ranges of records, not records.

The greedy of :mod:`sdckit.masking._suppression_kernel` moves "the first ``t`` records" of a
group's list to the front of another group's list, one at a time (so they arrive in reverse).
A group that starts as one key pattern of the file holds its records in file order; the moved
records of a pattern are therefore always the first ones of that pattern in file order, and a
group's list is a sequence of *segments*: ranges of ranks within one original pattern, read
upwards or downwards.  :func:`replay_segments` replays the move log on such segments, so the
group every moved record ends in is known from its pattern and its rank within the pattern,
in memory proportional to the moves (each moves fewer than ``k`` records), not the records.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["replay_segments"]


@njit(cache=True)
def replay_segments(counts, moves, n_moves, n_groups):  # pragma: no cover - jit
    """Replay the greedy's move log on segments of the original patterns.

    Parameters
    ----------
    counts : (p,) int64
        Records of each original pattern (groups ``0..p-1``, in the greedy's numbering).
    moves : (>= n_moves, 3) int64
        The log of :func:`~sdckit.masking._suppression_kernel.greedy_groups`.
    n_moves, n_groups : int
        Its length, and the number of groups at the end.

    Returns
    -------
    taken : (p,) int64
        Records moved out of each pattern: its first ``taken`` records in file order.
    pattern, rank, group : (sum(taken),) int64
        Each moved record's pattern, rank within the pattern (file order) and final group.
    """
    p = counts.shape[0]
    cap = p + 1  # each piece holds at least one record: a segment per record moved at most
    for i in range(n_moves):
        cap += moves[i, 2]
    orig = np.empty(cap, dtype=np.int64)
    lo = np.empty(cap, dtype=np.int64)
    hi = np.empty(cap, dtype=np.int64)
    up = np.empty(cap, dtype=np.bool_)
    nxt = np.full(cap, -1, dtype=np.int64)
    head = np.full(max(n_groups, p), -1, dtype=np.int64)
    for g in range(p):
        orig[g], lo[g], hi[g], up[g] = g, 0, counts[g], True
        if counts[g] > 0:
            head[g] = g
    n_seg = p
    for i in range(n_moves):
        h, h2, t = moves[i, 0], moves[i, 1], moves[i, 2]
        while t > 0:
            s = head[h]
            take = min(t, hi[s] - lo[s])
            if up[s]:
                a, b = lo[s], lo[s] + take
                lo[s] += take
            else:
                a, b = hi[s] - take, hi[s]
                hi[s] -= take
            # pushed one by one to the front of h2: the piece arrives reversed
            orig[n_seg], lo[n_seg], hi[n_seg], up[n_seg] = orig[s], a, b, not up[s]
            nxt[n_seg] = head[h2]
            head[h2] = n_seg
            n_seg += 1
            if lo[s] == hi[s]:
                head[h] = nxt[s]
            t -= take
    taken = np.zeros(p, dtype=np.int64)
    for g in range(p):
        taken[g] = lo[g]
    total = int(taken.sum())
    pattern = np.empty(total, dtype=np.int64)
    rank = np.empty(total, dtype=np.int64)
    group = np.empty(total, dtype=np.int64)
    q = 0
    for g in range(head.shape[0]):
        s = head[g]
        while s >= 0:
            if s >= p:  # a moved piece (an original pattern's own segment stays in place)
                for r in range(lo[s], hi[s]):
                    pattern[q], rank[q], group[q] = orig[s], r, g
                    q += 1
            s = nxt[s]
    return taken, pattern, rank, group
