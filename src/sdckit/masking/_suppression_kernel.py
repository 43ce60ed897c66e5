"""The numba kernel of local suppression to k-anonymity (missing values match any value).

The kernel works on *groups* (distinct key patterns, missing included), never on records.  It
keeps, for every missing-value pattern ``M`` present in the data and every query pattern ``U``
(``U`` a superset of ``M``), a hash map from the projection of a group's codes onto the keys
outside ``U`` to the number of records.  The number of records compatible with a pattern ``P``
whose missing set is ``Q`` (sdcMicro's ``fk`` with ``alpha = 1``) is then a sum, over the
missing patterns ``M`` present, of one look-up in map ``(M, M | Q)``.  Maps are built lazily and
updated when a group's records are moved to a pattern with one more missing value.

The greedy (methods: our own design, compared with sdcMicro's ``localSuppression``): unsafe
groups are handled one by one, rarest first.  For each, ``fk`` is recomputed (earlier
suppressions may already have made it safe); while it is below ``k``, the key whose suppression
gives the largest ``fk`` (capped at ``k``) is suppressed in all records of the group, ties going
to the least important key.  Suppression never lowers any ``fk``, so the result is k-anonymous.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

__all__ = ["key_words", "suppress_to_k"]

_KEY = types.UniTuple(types.int64, 2)
_LIMIT = 1 << 62


def key_words(radix: np.ndarray) -> np.ndarray:
    """Assign each key to one of two 62-bit words of the mixed-radix pattern code.

    ``radix[j]`` is the number of levels of key ``j`` plus one (for the missing value).  Returns
    the word (0 or 1) of each key, or raises OverflowError if two words are not enough.
    """
    words = np.zeros(len(radix), dtype=np.int64)
    word, product = 0, 1
    for j, r in enumerate(radix.tolist()):
        if product * r >= _LIMIT:
            word, product = word + 1, 1
            if word > 1 or r >= _LIMIT:
                raise OverflowError("key code space too large")
        product *= r
        words[j] = word
    return words


@njit(cache=True)
def _code(row: np.ndarray, skip: int, radix: np.ndarray, words: np.ndarray) -> tuple[int, int]:
    """Two-word code of the values of ``row`` outside the bit set ``skip`` (missing = 0)."""
    a = 0
    b = 0
    for j in range(row.shape[0]):
        if (skip >> j) & 1:
            continue
        if words[j] == 0:
            a = a * radix[j] + row[j] + 1
        else:
            b = b * radix[j] + row[j] + 1
    return (a, b)


_MAP = types.DictType(_KEY, types.int64)
_INT_LIST = types.ListType(types.int64)


@njit(cache=True)
def _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_maps):
    if bits not in mask_index:
        mask_index[bits] = len(mask_value)
        mask_value.append(bits)
        mask_total.append(0)
        mask_head.append(-1)
        mask_maps.append(List.empty_list(types.int64))
    return mask_index[bits]


@njit(cache=True)
def _get_map(mi, skip, pat, cnt, nxt, mask_head, mask_maps, maps, map_index, map_skip, radix, words):
    """Id of the map of missing pattern ``mi`` over the keys outside ``skip`` (built lazily)."""
    key = (mi, skip)
    if key in map_index:
        return map_index[key]
    d = Dict.empty(key_type=_KEY, value_type=types.int64)
    g = mask_head[mi]
    while g >= 0:
        if cnt[g] > 0:
            c = _code(pat[g], skip, radix, words)
            d[c] = d.get(c, 0) + cnt[g]
        g = nxt[g]
    idx = len(maps)
    maps.append(d)
    map_skip.append(skip)
    map_index[key] = idx
    mask_maps[mi].append(idx)
    return idx


@njit(cache=True)
def _compatible(row, qbits, full, pat, cnt, nxt, mask_value, mask_total, mask_head, mask_maps,
                maps, map_index, map_skip, radix, words):
    """Number of records compatible with ``row`` (missing set ``qbits``)."""
    total = 0
    for mi in range(len(mask_value)):
        if mask_total[mi] == 0:
            continue
        skip = mask_value[mi] | qbits
        if skip == full:
            total += mask_total[mi]
            continue
        idx = _get_map(mi, skip, pat, cnt, nxt, mask_head, mask_maps, maps, map_index, map_skip,
                       radix, words)
        total += maps[idx].get(_code(row, skip, radix, words), 0)
    return total


@njit(cache=True)
def _grow(pat, cnt, msk, fwd, nxt):
    cap = pat.shape[0] * 2
    pat2 = np.empty((cap, pat.shape[1]), dtype=np.int64)
    pat2[: pat.shape[0]] = pat
    cnt2 = np.zeros(cap, dtype=np.int64)
    cnt2[: cnt.shape[0]] = cnt
    msk2 = np.zeros(cap, dtype=np.int64)
    msk2[: msk.shape[0]] = msk
    fwd2 = np.full(cap, -1, dtype=np.int64)
    fwd2[: fwd.shape[0]] = fwd
    nxt2 = np.full(cap, -1, dtype=np.int64)
    nxt2[: nxt.shape[0]] = nxt
    return pat2, cnt2, msk2, fwd2, nxt2


@njit(cache=True)
def suppress_to_k(
    rep: np.ndarray,
    counts: np.ndarray,
    k: int,
    priority: np.ndarray,
    radix: np.ndarray,
    words: np.ndarray,
    wildcard: bool,
) -> np.ndarray:
    """Patterns of the groups after suppression (``-1`` = missing), one row per input group.

    Parameters
    ----------
    rep : (G, m) int64
        Distinct key patterns (codes ``0..L-1``, ``-1`` missing).
    counts : (G,) int64
        Records per pattern.
    k : int
    priority : (m,) int64
        Higher = suppressed first (the least important key has the highest priority).
    radix, words :
        Mixed-radix code layout (see :func:`key_words`).
    wildcard : bool
        Missing values match any value (True) or form a category of their own (False).
    """
    n_groups, m = rep.shape
    full = (1 << m) - 1
    cap = max(16, 2 * n_groups)
    pat = np.empty((cap, m), dtype=np.int64)
    cnt = np.zeros(cap, dtype=np.int64)
    msk = np.zeros(cap, dtype=np.int64)
    fwd = np.full(cap, -1, dtype=np.int64)
    nxt = np.full(cap, -1, dtype=np.int64)  # next group with the same missing pattern
    lookup = Dict.empty(key_type=_KEY, value_type=types.int64)
    mask_index = Dict.empty(key_type=types.int64, value_type=types.int64)
    mask_value = List.empty_list(types.int64)
    mask_total = List.empty_list(types.int64)
    mask_head = List.empty_list(types.int64)
    mask_maps = List.empty_list(_INT_LIST)
    maps = List.empty_list(_MAP)
    map_index = Dict.empty(key_type=_KEY, value_type=types.int64)
    map_skip = List.empty_list(types.int64)

    for g in range(n_groups):
        bits = 0
        for j in range(m):
            pat[g, j] = rep[g, j]
            if rep[g, j] < 0:
                bits |= 1 << j
        cnt[g] = counts[g]
        msk[g] = bits
        lookup[_code(pat[g], 0, radix, words)] = g
        mi = _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_maps)
        mask_total[mi] += counts[g]
        nxt[g] = mask_head[mi]
        mask_head[mi] = g
    n = n_groups

    order_fk = np.empty(n_groups, dtype=np.int64)
    for g in range(n_groups):
        if wildcard:
            order_fk[g] = _compatible(pat[g], msk[g], full, pat, cnt, nxt, mask_value, mask_total,
                                      mask_head, mask_maps, maps, map_index, map_skip, radix,
                                      words)
        else:
            order_fk[g] = cnt[g]
    order = np.argsort(order_fk, kind="mergesort")
    row = np.empty(m, dtype=np.int64)

    for oi in range(n_groups):
        g0 = order[oi]
        if order_fk[g0] >= k:
            break
        g = g0
        while fwd[g] >= 0:
            g = fwd[g]
        while True:
            if wildcard:
                fk = _compatible(pat[g], msk[g], full, pat, cnt, nxt, mask_value, mask_total,
                                 mask_head, mask_maps, maps, map_index, map_skip, radix, words)
            else:
                fk = cnt[g]
            if fk >= k:
                break
            best_j = -1
            best_cap = -1
            best_prio = -1
            best_val = -1
            for j in range(m):
                if pat[g, j] < 0:
                    continue
                for t in range(m):
                    row[t] = pat[g, t]
                row[j] = -1
                if wildcard:
                    val = _compatible(row, msk[g] | (1 << j), full, pat, cnt, nxt, mask_value,
                                      mask_total, mask_head, mask_maps, maps, map_index, map_skip,
                                      radix, words)
                else:
                    val = lookup.get(_code(row, 0, radix, words), -1)
                    val = (cnt[val] if val >= 0 else 0) + cnt[g]
                capped = min(val, k)
                better = capped > best_cap or (
                    capped == best_cap
                    and (priority[j] > best_prio or (priority[j] == best_prio and val > best_val))
                )
                if better:
                    best_j, best_cap, best_prio, best_val = j, capped, priority[j], val
            if best_j < 0:  # every key already missing: cannot happen when k <= n
                break
            # move all records of g to the pattern with best_j missing
            t_move = cnt[g]
            mi = mask_index[msk[g]]
            for idx in mask_maps[mi]:
                c = _code(pat[g], map_skip[idx], radix, words)
                maps[idx][c] = maps[idx][c] - t_move
            mask_total[mi] -= t_move
            cnt[g] = 0
            del lookup[_code(pat[g], 0, radix, words)]
            for t in range(m):
                row[t] = pat[g, t]
            row[best_j] = -1
            bits = msk[g] | (1 << best_j)
            c_full = _code(row, 0, radix, words)
            if c_full in lookup:
                g2 = lookup[c_full]
            else:
                if n == pat.shape[0]:
                    pat, cnt, msk, fwd, nxt = _grow(pat, cnt, msk, fwd, nxt)
                g2 = n
                n += 1
                for t in range(m):
                    pat[g2, t] = row[t]
                msk[g2] = bits
                lookup[c_full] = g2
                mi2 = _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_maps)
                nxt[g2] = mask_head[mi2]
                mask_head[mi2] = g2
            mi2 = mask_index[bits]
            for idx in mask_maps[mi2]:
                c = _code(pat[g2], map_skip[idx], radix, words)
                maps[idx][c] = maps[idx].get(c, 0) + t_move
            mask_total[mi2] += t_move
            cnt[g2] += t_move
            fwd[g] = g2
            g = g2

    out = np.empty((n_groups, m), dtype=np.int64)
    for g0 in range(n_groups):
        g = g0
        while fwd[g] >= 0:
            g = fwd[g]
        for t in range(m):
            out[g0, t] = pat[g, t]
    return out
