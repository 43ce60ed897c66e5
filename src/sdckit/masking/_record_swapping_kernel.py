"""Compiled kernels of targeted record swapping (numba; one loop over households, never records).

Donors are drawn with probability proportional to an integer weight from Fenwick trees (binary
indexed trees) of int64 weights, so that sums are exact and a drawn household always has a
positive weight.  For every similarity profile the households are laid out sorted by
(similarity group, area); a household's candidate donors are its group's range minus its own
area's segment, i.e. two contiguous ranges, so one draw costs ``O(log H)``.  A swapped household
gets weight 0 in every tree.

All random numbers come in as a pre-drawn array of uniforms (from the caller's
``numpy.random.Generator``) and a cursor; numba's own random state is never used.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["rate_stage", "risk_stage"]


@numba.njit(cache=True, nogil=True)
def _build(tree: np.ndarray, values: np.ndarray) -> None:  # pragma: no cover - jit
    """Fill ``tree`` (length n + 1) as the Fenwick tree of ``values`` in O(n)."""
    n = tree.shape[0]
    tree[0] = 0
    for i in range(1, n):
        tree[i] = values[i - 1]
    for i in range(1, n):
        j = i + (i & -i)
        if j < n:
            tree[j] += tree[i]


@numba.njit(cache=True, nogil=True)
def _add(tree: np.ndarray, i: int, delta: np.int64) -> None:  # pragma: no cover - jit
    i += 1
    n = tree.shape[0]
    while i < n:
        tree[i] += delta
        i += i & -i


@numba.njit(cache=True, nogil=True)
def _prefix(tree: np.ndarray, i: int) -> np.int64:  # pragma: no cover - jit
    """Sum of the first ``i`` elements."""
    s = np.int64(0)
    while i > 0:
        s += tree[i]
        i -= i & -i
    return s


@numba.njit(cache=True, nogil=True)
def _find(tree: np.ndarray, target: np.int64) -> int:  # pragma: no cover - jit
    """Element index ``j`` with ``prefix(j) <= target < prefix(j + 1)``."""
    n = tree.shape[0]
    step = 1
    while step * 2 < n:
        step *= 2
    pos = 0
    while step > 0:
        nxt = pos + step
        if nxt < n and tree[nxt] <= target:
            pos = nxt
            target -= tree[nxt]
        step //= 2
    return pos


@numba.njit(cache=True, nogil=True)
def _draw_outside(
    tree: np.ndarray, lo: int, hi: int, a0: int, a1: int, u: float
) -> int:  # pragma: no cover - jit
    """Draw an element of ``[lo, hi)`` minus ``[a0, a1)`` with probability ∝ weight (-1: none)."""
    p_lo = _prefix(tree, lo)
    p_a0 = _prefix(tree, a0)
    p_a1 = _prefix(tree, a1)
    p_hi = _prefix(tree, hi)
    left = p_a0 - p_lo
    total = left + (p_hi - p_a1)
    if total <= 0:
        return -1
    target = np.int64(u * total)
    if target >= total:
        target = total - 1
    if target < left:
        return _find(tree, p_lo + target)
    return _find(tree, p_a1 + target - left)


@numba.njit(cache=True, nogil=True)
def _record_pair(
    y: int,
    z: int,
    level: int,
    profile: int,
    partner: np.ndarray,
    swapped: np.ndarray,
    pairs: np.ndarray,
    n_pairs: int,
) -> int:  # pragma: no cover - jit
    partner[y] = z
    partner[z] = y
    swapped[y] = True
    swapped[z] = True
    pairs[n_pairs, 0] = y
    pairs[n_pairs, 1] = z
    pairs[n_pairs, 2] = level
    pairs[n_pairs, 3] = profile
    return n_pairs + 1


@numba.njit(cache=True, nogil=True)
def risk_stage(
    candidates: np.ndarray,
    order: np.ndarray,
    pos: np.ndarray,
    bounds: np.ndarray,
    weight: np.ndarray,
    level: int,
    partner: np.ndarray,
    swapped: np.ndarray,
    pairs: np.ndarray,
    n_pairs: int,
    no_donor: np.ndarray,
    uniforms: np.ndarray,
    cursor: int,
) -> tuple[int, int]:  # pragma: no cover - jit
    """Swap every risky household of one level with a donor from another area at that level.

    ``candidates`` are the risky households in processing order; ``order[q]`` lists the
    households sorted by (group of profile ``q``, area), ``pos[q, y]`` is the position of ``y``
    there and ``bounds[q, y]`` holds its group range and area segment (4 positions).  Households
    already swapped are skipped; ``no_donor[y]`` is set when no profile offers a donor.  Returns
    the new number of pairs and the new cursor into ``uniforms``.
    """
    n_profiles, n_hh = order.shape
    trees = np.zeros((n_profiles, n_hh + 1), dtype=np.int64)
    for q in range(n_profiles):
        values = np.zeros(n_hh, dtype=np.int64)
        for j in range(n_hh):
            h = order[q, j]
            if not swapped[h]:
                values[j] = weight[h]
        _build(trees[q], values)
    for c in range(candidates.shape[0]):
        y = candidates[c]
        if swapped[y]:
            continue
        donor = -1
        used = -1
        for q in range(n_profiles):
            b = bounds[q, y]
            j = _draw_outside(trees[q], b[0], b[1], b[2], b[3], uniforms[cursor])
            if j >= 0:
                cursor += 1
                donor = order[q, j]
                used = q
                break
        if donor < 0:
            no_donor[y] = True
            continue
        n_pairs = _record_pair(y, donor, level, used, partner, swapped, pairs, n_pairs)
        for q in range(n_profiles):
            _add(trees[q], pos[q, y], -weight[y])
            _add(trees[q], pos[q, donor], -weight[donor])
    return n_pairs, cursor


@numba.njit(cache=True, nogil=True)
def _remove(
    h: int,
    in_trees: bool,
    trees: np.ndarray,
    pos: np.ndarray,
    weight: np.ndarray,
) -> None:  # pragma: no cover - jit
    if in_trees:
        for q in range(trees.shape[0]):
            _add(trees[q], pos[q, h], -weight[h])


@numba.njit(cache=True, nogil=True)
def _count_swap(
    h: int,
    area: np.ndarray,
    area_start: np.ndarray,
    members: np.ndarray,
    n_swapped: np.ndarray,
    target_count: np.ndarray,
    target: np.ndarray,
    deficit_ok: np.ndarray,
    fallback_ok: np.ndarray,
    deficit: np.ndarray,
    fallback: np.ndarray,
    own: np.ndarray,
    own_pos: np.ndarray,
    skipped: np.ndarray,
    swapped: np.ndarray,
    pos: np.ndarray,
    weight: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Household ``h`` was just swapped: update the trees and the eligibility of its area."""
    a = area[h]
    _remove(h, deficit_ok[a], deficit, pos, weight)
    _remove(h, fallback_ok[a], fallback, pos, weight)
    if not skipped[h]:
        _add(own, own_pos[h], -weight[h])
    n_swapped[a] += 1
    close_deficit = deficit_ok[a] and n_swapped[a] >= target_count[a]
    close_fallback = fallback_ok[a] and n_swapped[a] > target[a] + 1e-9
    if close_deficit or close_fallback:
        for m in range(area_start[a], area_start[a + 1]):
            x = members[m]
            if swapped[x]:
                continue
            if close_deficit:
                _remove(x, True, deficit, pos, weight)
            if close_fallback:
                _remove(x, True, fallback, pos, weight)
        if close_deficit:
            deficit_ok[a] = False
        if close_fallback:
            fallback_ok[a] = False


@numba.njit(cache=True, nogil=True)
def rate_stage(
    area: np.ndarray,
    area_start: np.ndarray,
    members: np.ndarray,
    area_order: np.ndarray,
    target_count: np.ndarray,
    target: np.ndarray,
    n_swapped: np.ndarray,
    order: np.ndarray,
    pos: np.ndarray,
    bounds: np.ndarray,
    weight: np.ndarray,
    level: int,
    partner: np.ndarray,
    swapped: np.ndarray,
    pairs: np.ndarray,
    n_pairs: int,
    no_donor: np.ndarray,
    short: np.ndarray,
    uniforms: np.ndarray,
    cursor: int,
) -> tuple[int, int]:  # pragma: no cover - jit
    """Swap extra households at the lowest level until each area reaches its target count.

    ``members[area_start[a]:area_start[a + 1]]`` are the households of area ``a``.  A household
    of an area below ``target_count`` is drawn (∝ weight among its unswapped households) and
    swapped with a donor from another area, for the first profile that offers one: first among
    areas still below their target count, else among areas whose count does not exceed
    ``target`` (so they end at most one household above it).  ``n_swapped`` holds the counts
    per area (in and out).  Households without a donor are flagged in ``no_donor``.
    """
    n_profiles, n_hh = order.shape
    n_areas = area_start.shape[0] - 1
    deficit_ok = np.empty(n_areas, dtype=np.bool_)
    fallback_ok = np.empty(n_areas, dtype=np.bool_)
    for a in range(n_areas):
        deficit_ok[a] = n_swapped[a] < target_count[a]
        fallback_ok[a] = n_swapped[a] <= target[a] + 1e-9
    deficit = np.zeros((n_profiles, n_hh + 1), dtype=np.int64)
    fallback = np.zeros((n_profiles, n_hh + 1), dtype=np.int64)
    values = np.zeros(n_hh, dtype=np.int64)
    for q in range(n_profiles):
        for j in range(n_hh):
            h = order[q, j]
            values[j] = weight[h] if (not swapped[h] and deficit_ok[area[h]]) else 0
        _build(deficit[q], values)
        for j in range(n_hh):
            h = order[q, j]
            values[j] = weight[h] if (not swapped[h] and fallback_ok[area[h]]) else 0
        _build(fallback[q], values)
    own = np.zeros(n_hh + 1, dtype=np.int64)
    own_pos = np.empty(n_hh, dtype=np.int64)
    for m in range(n_hh):
        h = members[m]
        own_pos[h] = m
        values[m] = 0 if swapped[h] else weight[h]
    _build(own, values)
    skipped = np.zeros(n_hh, dtype=np.bool_)
    for k in range(area_order.shape[0]):
        a = area_order[k]
        lo, hi = area_start[a], area_start[a + 1]
        while n_swapped[a] < target_count[a]:
            j = _draw_outside(own, lo, hi, hi, hi, uniforms[cursor])
            if j < 0:
                short[a] = True  # every unswapped household of the area found no donor
                break
            cursor += 1
            y = members[j]
            donor = -1
            used = -1
            for q in range(n_profiles):
                b = bounds[q, y]
                for trees in (deficit, fallback):
                    jj = _draw_outside(trees[q], b[0], b[1], b[2], b[3], uniforms[cursor])
                    if jj >= 0:
                        cursor += 1
                        donor = order[q, jj]
                        used = q
                        break
                if donor >= 0:
                    break
            if donor < 0:
                no_donor[y] = True
                skipped[y] = True
                _add(own, own_pos[y], -weight[y])
                continue
            n_pairs = _record_pair(y, donor, level, used, partner, swapped, pairs, n_pairs)
            for h in (y, donor):
                _count_swap(
                    h,
                    area,
                    area_start,
                    members,
                    n_swapped,
                    target_count,
                    target,
                    deficit_ok,
                    fallback_ok,
                    deficit,
                    fallback,
                    own,
                    own_pos,
                    skipped,
                    swapped,
                    pos,
                    weight,
                )
    return n_pairs, cursor
