"""The numba kernel of local suppression to k-anonymity (missing values match any value).

The kernel works on *groups* (distinct key patterns, missing included), never on records.  It
keeps, for every missing-value pattern ``M`` present in the data and every query pattern ``U``
(``U`` a superset of ``M``), a hash map from the projection of a group's codes onto the keys
outside ``U`` to the number of records.  The number of records compatible with a pattern ``P``
whose missing set is ``Q`` (sdcMicro's ``fk`` with ``alpha = 1``) is then a sum, over the
missing patterns ``M`` present, of one look-up in map ``(M, M | Q)``.  Maps are built lazily and
updated when records are moved to a pattern with one more missing value; each map also links
the groups sharing a code, which is how records that differ from a group in one key are found.

The greedy (our own design, compared with sdcMicro's ``localSuppression``) makes passes over the
unsafe groups, rarest first, recomputing ``fk`` before each (earlier suppressions may already
have made it safe).  A group of ``c`` records that lacks ``d = k - fk`` matches is fixed either

* by *pulling*: when ``d < c``, suppressing one key in ``d`` records of neighbouring groups
  (records that differ from the group in exactly one key; least important keys first) makes
  them match the group, at a cost of ``d`` suppressions; or
* by suppressing one key in all ``c`` records of the group: the key whose suppression gives
  the largest ``fk`` (capped at ``k``); among ties, a key whose suppression also makes the group
  match another group below ``k``, then the least important key.

Suppression never lowers any ``fk`` (a missing value matches more, never less), so every pass
keeps what earlier ones reached, and the result is k-anonymous.
:func:`sdckit.masking._suppression_restore.restore_values` then gives back suppressed values
that k-anonymity turns out not to need.
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
_VISIT_LIMIT = 2000  # neighbour groups examined at most when looking for records to pull


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
def _get_map(
    mi,
    skip,
    st_pat,
    st_cnt,
    st_gnext,
    mask_head,
    mask_maps,
    maps,
    lists,
    map_index,
    map_skip,
    node_group,
    node_next,
    radix,
    words,
):
    """Id of the map of missing pattern ``mi`` over the keys outside ``skip`` (built lazily).

    ``maps[id]`` holds record counts per code, ``lists[id]`` the head of a linked list (through
    ``node_group`` / ``node_next``) of the groups with that code.
    """
    key = (mi, skip)
    if key in map_index:
        return map_index[key]
    d = Dict.empty(key_type=_KEY, value_type=types.int64)
    heads = Dict.empty(key_type=_KEY, value_type=types.int64)
    g = mask_head[mi]
    while g >= 0:
        c = _code(st_pat[g], skip, radix, words)
        if st_cnt[g] > 0:
            d[c] = d.get(c, 0) + st_cnt[g]
        node_group.append(g)
        node_next.append(heads[c] if c in heads else -1)  # noqa: SIM401 (numba)
        heads[c] = len(node_group) - 1
        g = st_gnext[g]
    idx = len(maps)
    maps.append(d)
    lists.append(heads)
    map_skip.append(skip)
    map_index[key] = idx
    mask_maps[mi].append(idx)
    return idx


@njit(cache=True)
def _count(
    row,
    qbits,
    limit,
    full,
    st_pat,
    st_cnt,
    st_gnext,
    mask_value,
    mask_total,
    mask_head,
    mask_maps,
    maps,
    lists,
    map_index,
    map_skip,
    node_group,
    node_next,
    radix,
    words,
):
    """Records compatible with ``row`` (missing set ``qbits``), counted up to ``limit``."""
    total = 0
    for mi in range(len(mask_value)):
        if mask_total[mi] == 0:
            continue
        skip = mask_value[mi] | qbits
        if skip == full:
            total += mask_total[mi]
        else:
            idx = _get_map(
                mi,
                skip,
                st_pat,
                st_cnt,
                st_gnext,
                mask_head,
                mask_maps,
                maps,
                lists,
                map_index,
                map_skip,
                node_group,
                node_next,
                radix,
                words,
            )
            total += maps[idx].get(_code(row, skip, radix, words), 0)
        if total >= limit:
            return limit
    return total


@njit(cache=True)
def _helps(
    g,
    j,
    k,
    full,
    fk_of,
    st_pat,
    st_cnt,
    st_msk,
    st_gnext,
    mask_value,
    mask_total,
    mask_head,
    mask_maps,
    maps,
    lists,
    map_index,
    map_skip,
    node_group,
    node_next,
    radix,
    words,
):
    """Whether suppressing key ``j`` in group ``g`` makes it match a group still below ``k``.

    The groups that newly match are those differing from ``g`` only in key ``j``.
    """
    qj = st_msk[g] | (1 << j)
    visits = 0
    for mi in range(len(mask_value)):
        if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
            continue
        skip = mask_value[mi] | qj
        node = -1
        if skip == full:
            h = mask_head[mi]
        else:
            idx = _get_map(
                mi,
                skip,
                st_pat,
                st_cnt,
                st_gnext,
                mask_head,
                mask_maps,
                maps,
                lists,
                map_index,
                map_skip,
                node_group,
                node_next,
                radix,
                words,
            )
            c = _code(st_pat[g], skip, radix, words)
            if maps[idx].get(c, 0) == 0:
                continue
            node = lists[idx][c] if c in lists[idx] else -1  # noqa: SIM401
            h = node_group[node] if node >= 0 else -1
        while h >= 0 and visits < _VISIT_LIMIT:
            visits += 1
            if st_cnt[h] > 0 and st_pat[h, j] != st_pat[g, j]:
                stale = fk_of[h] if h < fk_of.shape[0] else 0
                if stale < k:
                    fresh = _count(
                        st_pat[h],
                        st_msk[h],
                        k,
                        full,
                        st_pat,
                        st_cnt,
                        st_gnext,
                        mask_value,
                        mask_total,
                        mask_head,
                        mask_maps,
                        maps,
                        lists,
                        map_index,
                        map_skip,
                        node_group,
                        node_next,
                        radix,
                        words,
                    )
                    if fresh < k:
                        return True
            if skip == full:
                h = st_gnext[h]
            else:
                node = node_next[node]
                h = node_group[node] if node >= 0 else -1
        if visits >= _VISIT_LIMIT:
            return False
    return False


@njit(cache=True)
def _grow(pat, cnt, msk, gnext, rhead):
    cap = pat.shape[0] * 2
    pat2 = np.empty((cap, pat.shape[1]), dtype=np.int64)
    pat2[: pat.shape[0]] = pat
    cnt2 = np.zeros(cap, dtype=np.int64)
    cnt2[: cnt.shape[0]] = cnt
    msk2 = np.zeros(cap, dtype=np.int64)
    msk2[: msk.shape[0]] = msk
    gnext2 = np.full(cap, -1, dtype=np.int64)
    gnext2[: gnext.shape[0]] = gnext
    rhead2 = np.full(cap, -1, dtype=np.int64)
    rhead2[: rhead.shape[0]] = rhead
    return pat2, cnt2, msk2, gnext2, rhead2


@njit(cache=True)
def suppress_to_k(
    codes: np.ndarray,
    k: int,
    priority: np.ndarray,
    radix: np.ndarray,
    words: np.ndarray,
    wildcard: bool,
    pull: bool,
) -> np.ndarray:
    """Key codes after suppression (``-1`` = missing), one row per record.

    Parameters
    ----------
    codes : (n, m) int64
        Key codes ``0..L-1``, ``-1`` missing.
    k : int
    priority : (m,) int64
        Higher = suppressed first (the least important key has the highest priority).
    radix, words :
        Mixed-radix code layout (see :func:`key_words`).
    wildcard : bool
        Missing values match any value (True) or form a category of their own (False).
    pull : bool
        Also fix groups by suppressing values in neighbouring records (wildcard only).
    """
    n, m = codes.shape
    full = (1 << m) - 1
    cap = 1024
    pat = np.empty((cap, m), dtype=np.int64)
    cnt = np.zeros(cap, dtype=np.int64)
    msk = np.zeros(cap, dtype=np.int64)
    gnext = np.full(cap, -1, dtype=np.int64)  # next group with the same missing pattern
    rhead = np.full(cap, -1, dtype=np.int64)  # first record of each group
    rnext = np.full(n, -1, dtype=np.int64)  # next record of the same group
    lookup = Dict.empty(key_type=_KEY, value_type=types.int64)
    mask_index = Dict.empty(key_type=types.int64, value_type=types.int64)
    mask_value = List.empty_list(types.int64)
    mask_total = List.empty_list(types.int64)
    mask_head = List.empty_list(types.int64)
    mask_maps = List.empty_list(_INT_LIST)
    maps = List.empty_list(_MAP)
    lists = List.empty_list(_MAP)
    map_index = Dict.empty(key_type=_KEY, value_type=types.int64)
    map_skip = List.empty_list(types.int64)
    node_group = List.empty_list(types.int64)
    node_next = List.empty_list(types.int64)
    by_priority = np.argsort(-priority, kind="mergesort")
    row = np.empty(m, dtype=np.int64)
    n_groups = 0

    # ---- records into groups (no maps exist yet)
    for r in range(n - 1, -1, -1):
        c_full = _code(codes[r], 0, radix, words)
        if c_full in lookup:
            g = lookup[c_full]
        else:
            if n_groups == pat.shape[0]:
                pat, cnt, msk, gnext, rhead = _grow(pat, cnt, msk, gnext, rhead)
            g = n_groups
            n_groups += 1
            bits = 0
            for j in range(m):
                pat[g, j] = codes[r, j]
                if codes[r, j] < 0:
                    bits |= 1 << j
            msk[g] = bits
            lookup[c_full] = g
            mi = _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_maps)
            gnext[g] = mask_head[mi]
            mask_head[mi] = g
        cnt[g] += 1
        mask_total[mask_index[msk[g]]] += 1
        rnext[r] = rhead[g]
        rhead[g] = r

    fk_of = np.zeros(cap, dtype=np.int64)
    cand_group = np.empty(64, dtype=np.int64)
    cand_key = np.empty(64, dtype=np.int64)
    while True:
        # ---- fk (capped at k) of every non-empty group; unsafe ones rarest first
        if fk_of.shape[0] < n_groups:
            fk_of = np.zeros(pat.shape[0], dtype=np.int64)
        n_unsafe = 0
        for g in range(n_groups):
            if cnt[g] == 0:
                fk_of[g] = k
                continue
            if wildcard:
                fk_of[g] = _count(
                    pat[g],
                    msk[g],
                    k,
                    full,
                    pat,
                    cnt,
                    gnext,
                    mask_value,
                    mask_total,
                    mask_head,
                    mask_maps,
                    maps,
                    lists,
                    map_index,
                    map_skip,
                    node_group,
                    node_next,
                    radix,
                    words,
                )
            else:
                fk_of[g] = min(cnt[g], k)
            if fk_of[g] < k:
                n_unsafe += 1
        if n_unsafe == 0:
            break
        unsafe = np.empty(n_unsafe, dtype=np.int64)
        u = 0
        for g in range(n_groups):
            if fk_of[g] < k:
                unsafe[u] = g
                u += 1
        unsafe = unsafe[np.argsort(fk_of[unsafe], kind="mergesort")]

        # ---- one action per unsafe group
        moved_any = False
        for ui in range(n_unsafe):
            g = unsafe[ui]
            if cnt[g] == 0:
                continue
            # current fk (capped)
            if wildcard:
                fk = _count(
                    pat[g],
                    msk[g],
                    k,
                    full,
                    pat,
                    cnt,
                    gnext,
                    mask_value,
                    mask_total,
                    mask_head,
                    mask_maps,
                    maps,
                    lists,
                    map_index,
                    map_skip,
                    node_group,
                    node_next,
                    radix,
                    words,
                )
            else:
                fk = min(cnt[g], k)
            if fk >= k:
                continue
            need = k - fk
            n_moves = 0  # planned moves: (group, key) pairs, all records of the group unless
            # the last one (pull) or the group itself (own suppression)
            if pull and wildcard and need < cnt[g]:
                avail = 0
                visits = 0
                for jj in range(m):
                    j = by_priority[jj]
                    if pat[g, j] < 0:
                        continue
                    qj = msk[g] | (1 << j)
                    for mi in range(len(mask_value)):
                        if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                            continue
                        skip = mask_value[mi] | qj
                        if skip == full:
                            h = mask_head[mi]
                            via_nodes = False
                        else:
                            idx = _get_map(
                                mi,
                                skip,
                                pat,
                                cnt,
                                gnext,
                                mask_head,
                                mask_maps,
                                maps,
                                lists,
                                map_index,
                                map_skip,
                                node_group,
                                node_next,
                                radix,
                                words,
                            )
                            c = _code(pat[g], skip, radix, words)
                            if maps[idx].get(c, 0) == 0:
                                continue
                            node = lists[idx][c] if c in lists[idx] else -1  # noqa: SIM401
                            h = -1
                            if node >= 0:
                                h = node_group[node]
                            via_nodes = True
                        while h >= 0 and avail < need and visits < _VISIT_LIMIT:
                            visits += 1
                            if cnt[h] > 0 and pat[h, j] != pat[g, j]:
                                if n_moves == cand_group.shape[0]:
                                    cand_group = np.concatenate((cand_group, cand_group))
                                    cand_key = np.concatenate((cand_key, cand_key))
                                cand_group[n_moves] = h
                                cand_key[n_moves] = j
                                n_moves += 1
                                avail += cnt[h]
                            if via_nodes:
                                node = node_next[node]
                                h = -1
                                if node >= 0:
                                    h = node_group[node]
                            else:
                                h = gnext[h]
                        if avail >= need or visits >= _VISIT_LIMIT:
                            break
                    if avail >= need or visits >= _VISIT_LIMIT:
                        break
                if avail < need:
                    n_moves = 0
            if n_moves == 0:
                # own suppression: the key giving the largest fk, then the least important
                best_j = -1
                best_val = -1
                best_help = -1
                best_prio = -1
                for j in range(m):
                    if pat[g, j] < 0:
                        continue
                    for t in range(m):
                        row[t] = pat[g, t]
                    row[j] = -1
                    qbits = msk[g] | (1 << j)
                    if wildcard:
                        val = _count(
                            row,
                            qbits,
                            k,
                            full,
                            pat,
                            cnt,
                            gnext,
                            mask_value,
                            mask_total,
                            mask_head,
                            mask_maps,
                            maps,
                            lists,
                            map_index,
                            map_skip,
                            node_group,
                            node_next,
                            radix,
                            words,
                        )
                    else:
                        val = cnt[g]
                        c_row = _code(row, 0, radix, words)
                        if c_row in lookup:
                            val += cnt[lookup[c_row]]
                    val = min(val, k)
                    if val < best_val:
                        continue
                    # ties: prefer a key whose suppression also helps another unsafe group
                    helps = 0
                    if wildcard and _helps(
                        g,
                        j,
                        k,
                        full,
                        fk_of,
                        pat,
                        cnt,
                        msk,
                        gnext,
                        mask_value,
                        mask_total,
                        mask_head,
                        mask_maps,
                        maps,
                        lists,
                        map_index,
                        map_skip,
                        node_group,
                        node_next,
                        radix,
                        words,
                    ):
                        helps = 1
                    if (
                        val > best_val
                        or (val == best_val and helps > best_help)
                        or (val == best_val and helps == best_help and priority[j] > best_prio)
                    ):
                        best_j, best_val, best_help, best_prio = j, val, helps, priority[j]
                if best_j < 0:  # every key already missing (only with missing as a category)
                    continue
                cand_group[0] = g
                cand_key[0] = best_j
                n_moves = 1
                need = cnt[g]
            # ---- carry out the moves
            for mv in range(n_moves):
                h = cand_group[mv]
                j = cand_key[mv]
                t_move = min(cnt[h], need)
                need -= t_move
                if t_move == 0:
                    break
                moved_any = True
                for t in range(m):
                    row[t] = pat[h, t]
                row[j] = -1
                c_full = _code(row, 0, radix, words)
                if c_full in lookup:
                    h2 = lookup[c_full]
                else:
                    if n_groups == pat.shape[0]:
                        pat, cnt, msk, gnext, rhead = _grow(pat, cnt, msk, gnext, rhead)
                    h2 = n_groups
                    n_groups += 1
                    for t in range(m):
                        pat[h2, t] = row[t]
                    msk[h2] = msk[h] | (1 << j)
                    lookup[c_full] = h2
                    mi2 = _new_mask(
                        msk[h2], mask_index, mask_value, mask_total, mask_head, mask_maps
                    )
                    gnext[h2] = mask_head[mi2]
                    mask_head[mi2] = h2
                    for idx in mask_maps[mi2]:  # register the new group in the lists
                        c = _code(row, map_skip[idx], radix, words)
                        node_group.append(h2)
                        node_next.append(lists[idx][c] if c in lists[idx] else -1)  # noqa: SIM401
                        lists[idx][c] = len(node_group) - 1
                # counts
                mi = mask_index[msk[h]]
                for idx in mask_maps[mi]:
                    c = _code(pat[h], map_skip[idx], radix, words)
                    maps[idx][c] = maps[idx][c] - t_move
                mask_total[mi] -= t_move
                cnt[h] -= t_move
                mi2 = mask_index[msk[h2]]
                for idx in mask_maps[mi2]:
                    c = _code(pat[h2], map_skip[idx], radix, words)
                    maps[idx][c] = maps[idx].get(c, 0) + t_move
                mask_total[mi2] += t_move
                cnt[h2] += t_move
                # records: the first t_move records of h go to h2
                for _ in range(t_move):
                    r = rhead[h]
                    rhead[h] = rnext[r]
                    rnext[r] = rhead[h2]
                    rhead[h2] = r

        if not moved_any:  # nothing left to do (only with missing values as a category)
            break

    out = np.empty((n, m), dtype=np.int64)
    for g in range(n_groups):
        r = rhead[g]
        while r >= 0:
            for t in range(m):
                out[r, t] = pat[g, t]
            r = rnext[r]
    return out
