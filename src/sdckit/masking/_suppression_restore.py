"""Give back suppressed key values that k-anonymity does not need (after the greedy).

Works on the same lazily built maps as :mod:`sdckit.masking._suppression_kernel`: restoring a
value of key ``j`` in some records of a pattern is allowed when those records keep ``fk >= k``
and every record that stops matching them (non-missing in ``j`` with another value, matching
elsewhere, found through the maps' group lists) also keeps ``fk >= k``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

from sdckit.masking._suppression_kernel import (
    _INT_LIST,
    _KEY,
    _MAP,
    _code,
    _count,
    _get_map,
    _grow,
    _new_mask,
)

__all__ = ["restore_values"]

_KEY3 = types.UniTuple(types.int64, 3)


@njit(cache=True)
def restore_values(
    codes: np.ndarray,
    out: np.ndarray,
    k: int,
    priority: np.ndarray,
    radix: np.ndarray,
    words: np.ndarray,
) -> np.ndarray:
    """Give back suppressed values that k-anonymity does not need (wildcard semantics).

    A suppressed value of key ``j`` is restored, for all records of one pattern that had the
    same original value, when afterwards those records still have ``fk >= k`` and so does every
    record that stops matching them.  Most important keys are tried first.  Returns the new
    codes (``out`` is not modified).
    """
    n, m = out.shape
    full = (1 << m) - 1
    cur = out.copy()
    cap = 1024
    pat = np.empty((cap, m), dtype=np.int64)
    cnt = np.zeros(cap, dtype=np.int64)
    msk = np.zeros(cap, dtype=np.int64)
    gnext = np.full(cap, -1, dtype=np.int64)
    unused = np.full(cap, -1, dtype=np.int64)
    grp = np.empty(n, dtype=np.int64)
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
    n_groups = 0
    for r in range(n):
        c_full = _code(cur[r], 0, radix, words)
        if c_full in lookup:
            g = lookup[c_full]
        else:
            if n_groups == pat.shape[0]:
                pat, cnt, msk, gnext, unused = _grow(pat, cnt, msk, gnext, unused)
            g = n_groups
            n_groups += 1
            bits = 0
            for j in range(m):
                pat[g, j] = cur[r, j]
                if cur[r, j] < 0:
                    bits |= 1 << j
            msk[g] = bits
            lookup[c_full] = g
            mi = _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_maps)
            gnext[g] = mask_head[mi]
            mask_head[mi] = g
        cnt[g] += 1
        mask_total[mask_index[msk[g]]] += 1
        grp[r] = g
    fk = np.zeros(pat.shape[0], dtype=np.int64)
    for g in range(n_groups):
        fk[g] = _count(
            pat[g],
            msk[g],
            n + 1,
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

    # candidates: (group, key, original value) -> records, most important keys first
    cand_index = Dict.empty(key_type=_KEY3, value_type=types.int64)
    cand_of = np.full((n, m), -1, dtype=np.int64)
    n_cand = 0
    for r in range(n):
        for j in range(m):
            if cur[r, j] < 0 and codes[r, j] >= 0:
                key = (grp[r], j, codes[r, j])
                if key not in cand_index:
                    cand_index[key] = n_cand
                    n_cand += 1
                cand_of[r, j] = cand_index[key]
    if n_cand == 0:
        return cur
    cand_size = np.zeros(n_cand, dtype=np.int64)
    cand_key = np.zeros(n_cand, dtype=np.int64)
    cand_value = np.zeros(n_cand, dtype=np.int64)
    cand_first = np.zeros(n_cand, dtype=np.int64)
    for r in range(n - 1, -1, -1):
        for j in range(m):
            c = cand_of[r, j]
            if c >= 0:
                cand_size[c] += 1
                cand_key[c] = j
                cand_value[c] = codes[r, j]
                cand_first[c] = r
    start = np.zeros(n_cand + 1, dtype=np.int64)
    for c in range(n_cand):
        start[c + 1] = start[c] + cand_size[c]
    members = np.empty(start[n_cand], dtype=np.int64)
    fill = start[:-1].copy()
    for r in range(n):
        for j in range(m):
            c = cand_of[r, j]
            if c >= 0:
                members[fill[c]] = r
                fill[c] += 1
    rank = np.empty(n_cand, dtype=np.int64)
    for c in range(n_cand):
        rank[c] = priority[cand_key[c]] * (n + 1) - cand_size[c]
    row = np.empty(m, dtype=np.int64)
    for ci in np.argsort(rank, kind="mergesort"):
        j = cand_key[ci]
        v = cand_value[ci]
        g = grp[cand_first[ci]]
        t_move = cand_size[ci]
        same = True
        for q in range(start[ci], start[ci + 1]):
            if grp[members[q]] != g or cur[members[q], j] >= 0:
                same = False
                break
        if not same:
            continue
        for t in range(m):
            row[t] = pat[g, t]
        row[j] = v
        qbits = msk[g] & ~(1 << j)
        if (
            _count(
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
            < k
        ):
            continue
        # records that stop matching: non-missing at j with another value, matching elsewhere
        ok = True
        for mi in range(len(mask_value)):
            if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                continue
            skip = mask_value[mi] | msk[g]
            if skip == full:
                h = mask_head[mi]
                node = -1
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
                h = node_group[node] if node >= 0 else -1
            while h >= 0:
                if cnt[h] > 0 and pat[h, j] != v and fk[h] - t_move < k:
                    ok = False
                    break
                if skip == full:
                    h = gnext[h]
                else:
                    node = node_next[node]
                    h = node_group[node] if node >= 0 else -1
            if not ok:
                break
        if not ok:
            continue
        # apply: lost groups lose t_move matches; records move to the restored pattern
        for mi in range(len(mask_value)):
            if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                continue
            skip = mask_value[mi] | msk[g]
            if skip == full:
                h = mask_head[mi]
                node = -1
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
                node = lists[idx][c] if c in lists[idx] else -1  # noqa: SIM401
                h = node_group[node] if node >= 0 else -1
            while h >= 0:
                if cnt[h] > 0 and pat[h, j] != v:
                    fk[h] -= t_move
                if skip == full:
                    h = gnext[h]
                else:
                    node = node_next[node]
                    h = node_group[node] if node >= 0 else -1
        c_full = _code(row, 0, radix, words)
        created = False
        if c_full in lookup:
            h2 = lookup[c_full]
        else:
            if n_groups == pat.shape[0]:
                pat, cnt, msk, gnext, unused = _grow(pat, cnt, msk, gnext, unused)
                fk2 = np.zeros(pat.shape[0], dtype=np.int64)
                fk2[: fk.shape[0]] = fk
                fk = fk2
            h2 = n_groups
            n_groups += 1
            created = True
            for t in range(m):
                pat[h2, t] = row[t]
            msk[h2] = qbits
            lookup[c_full] = h2
            mi2 = _new_mask(qbits, mask_index, mask_value, mask_total, mask_head, mask_maps)
            gnext[h2] = mask_head[mi2]
            mask_head[mi2] = h2
            for idx in mask_maps[mi2]:
                c = _code(row, map_skip[idx], radix, words)
                node_group.append(h2)
                node_next.append(lists[idx][c] if c in lists[idx] else -1)  # noqa: SIM401
                lists[idx][c] = len(node_group) - 1
        mi = mask_index[msk[g]]
        for idx in mask_maps[mi]:
            c = _code(pat[g], map_skip[idx], radix, words)
            maps[idx][c] = maps[idx][c] - t_move
        mask_total[mi] -= t_move
        cnt[g] -= t_move
        mi2 = mask_index[msk[h2]]
        for idx in mask_maps[mi2]:
            c = _code(pat[h2], map_skip[idx], radix, words)
            maps[idx][c] = maps[idx].get(c, 0) + t_move
        mask_total[mi2] += t_move
        cnt[h2] += t_move
        if created:
            fk[h2] = _count(
                pat[h2],
                msk[h2],
                n + 1,
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
        for q in range(start[ci], start[ci + 1]):
            r = members[q]
            grp[r] = h2
            cur[r, j] = v
    return cur
