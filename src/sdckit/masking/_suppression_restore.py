"""After the greedy: give back values k-anonymity does not need, block values read back.

:func:`restore_values` works on the same lazily built maps as
:mod:`sdckit.masking._suppression_kernel`: restoring a value of key ``j`` in some records of a
pattern is allowed when those records keep ``fk >= k`` and every record that stops matching
them (non-missing in ``j`` with another value, matching elsewhere, found through the maps' group
lists) also keeps ``fk >= k``.  It makes up to ``rounds`` rounds over the candidates on the same
maps (a round sees the groups the previous one formed), which is what calling it again on its
own output did, without building everything again.

:func:`close_inferences_kernel` and :func:`structural_dependencies` are the loops of
:func:`sdckit.masking.suppression.close_inferences` (one pass over the records per pair of keys).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

from sdckit.masking._suppression_kernel import (
    _CAP,
    _HEAD,
    _OFF,
    _VAL,
    INDEX,
    INFO,
    NODES,
    POOL,
    _build_map,
    _code,
    _count,
    _find,
    _grow,
    _map_of,
    _move_counts,
    _new_mask,
    _register,
    _upsert,
    count_all,
    greedy,
    group_records,
    new_store,
    records_of,
)

__all__ = [
    "close_inferences_kernel",
    "restore_rounds",
    "restore_values",
    "structural_dependencies",
    "suppress_and_restore",
]

_KEY3 = types.UniTuple(types.int64, 3)


@njit(cache=True)
def _pattern_list(mi, skip, g, full, pat, cnt, gnext, mask_head, mask_first, store, ctr, radix,
                  words, need_count):  # fmt: skip
    """First group and list node of the groups of missing pattern ``mi`` sharing ``g``'s code
    outside ``skip`` (all groups of ``mi`` when ``skip`` covers every key); ``(-1, -1)`` if
    none (or, with ``need_count``, if they hold no record)."""
    if skip == full:
        return mask_head[mi], -1
    idx = _map_of(store[INDEX], mi, skip)
    if idx < 0:
        idx = _build_map(mi, skip, pat, cnt, gnext, mask_head, mask_first, store, ctr, radix, words)
    pool, info = store[POOL], store[INFO]
    c = _code(pat[g], skip, radix, words)
    s = _find(pool, info[idx, _OFF], info[idx, _CAP], c[0], c[1])
    if s < 0 or (need_count and pool[s, _VAL] == 0):
        return -1, -1
    node = pool[s, _HEAD]
    return (store[NODES][node, 0] if node >= 0 else -1), node


@njit(cache=True)
def restore_values(
    codes: np.ndarray,
    out: np.ndarray,
    k: int,
    priority: np.ndarray,
    radix: np.ndarray,
    words: np.ndarray,
    rounds: int = 1,
) -> np.ndarray:
    """Give back suppressed values that k-anonymity does not need (wildcard semantics).

    A suppressed value of key ``j`` is restored, for all records of one pattern that had the
    same original value, when afterwards those records still have ``fk >= k`` and so does every
    record that stops matching them.  Most important keys are tried first.  Up to ``rounds``
    rounds are made, each over the candidates of the patterns the previous one left, until one
    restores nothing.  Returns the new codes (``out`` is not modified).
    """
    cur = out.copy()
    (
        n_groups, pat, cnt, msk, gnext, rhead, _, grp, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks,
    ) = group_records(cur, radix, words, False, np.empty(0, dtype=np.int64))  # fmt: skip
    store, ctr = new_store()
    restore_rounds(
        codes, cur, grp, cur.shape[0], k, priority, radix, words, rounds, n_groups, pat, cnt,
        msk, gnext,
        rhead, lookup, lookup_fill, mask_index, mask_value, mask_total, mask_head, mask_first,
        n_masks, store, ctr,
    )  # fmt: skip
    return cur


@njit(cache=True)
def suppress_and_restore(
    codes: np.ndarray,
    k: int,
    priority: np.ndarray,
    radix: np.ndarray,
    words: np.ndarray,
    rounds: int,
) -> np.ndarray:
    """:func:`~sdckit.masking._suppression_kernel.suppress_to_k` (wildcards, pulling) followed
    by :func:`restore_values` on the greedy's own groups and maps (none is built twice)."""
    (
        n_groups, pat, cnt, msk, gnext, rhead, rnext, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks, store, ctr,
    ) = greedy(codes, k, priority, radix, words, True, True)  # fmt: skip
    cur, grp = records_of(codes.shape[0], n_groups, pat, rhead, rnext)
    restore_rounds(
        codes, cur, grp, cur.shape[0], k, priority, radix, words, rounds, n_groups, pat, cnt,
        msk, gnext,
        rhead, lookup, lookup_fill, mask_index, mask_value, mask_total, mask_head, mask_first,
        n_masks, store, ctr,
    )  # fmt: skip
    return cur


@njit(cache=True)
def restore_rounds(codes, cur, grp, n, k, priority, radix, words, rounds, n_groups, pat, cnt,
                   msk, gnext, rhead, lookup, lookup_fill, mask_index, mask_value, mask_total,
                   mask_head, mask_first, n_masks, store, ctr):  # fmt: skip
    """The rounds of :func:`restore_values` on given groups and maps (``cur`` and ``grp``, the
    codes and group of each record, are updated in place).

    ``n`` is the number of records of the groups.  The rows of ``codes`` may be only the
    records with a suppressed value (in file order): the others are never candidates, and
    the counts come from the groups.  The result does not depend on how the groups are
    numbered or listed (every check goes over all the groups concerned), so the greedy's own
    groups and maps serve as well as new ones.
    """
    n_rows, m = cur.shape
    full = (1 << m) - 1
    fk = np.zeros(pat.shape[0], dtype=np.int64)
    fk[:n_groups] = count_all(
        n + 1, full, n_groups, pat, cnt, msk, gnext, mask_value, mask_total, mask_head,
        mask_first, n_masks, mask_index, store, ctr, radix, words,
    )  # fmt: skip

    row = np.empty(m, dtype=np.int64)
    for _ in range(rounds):
        # candidates: (group, key, original value) -> records, most important keys first
        cand_index = Dict.empty(key_type=_KEY3, value_type=types.int64)
        cand_of = np.full((n_rows, m), -1, dtype=np.int64)
        n_cand = 0
        for r in range(n_rows):
            for j in range(m):
                if cur[r, j] < 0 and codes[r, j] >= 0:
                    key = (grp[r], j, codes[r, j])
                    if key not in cand_index:
                        cand_index[key] = n_cand
                        n_cand += 1
                    cand_of[r, j] = cand_index[key]
        if n_cand == 0:
            break
        cand_size = np.zeros(n_cand, dtype=np.int64)
        cand_key = np.zeros(n_cand, dtype=np.int64)
        cand_value = np.zeros(n_cand, dtype=np.int64)
        cand_first = np.zeros(n_cand, dtype=np.int64)
        for r in range(n_rows - 1, -1, -1):
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
        for r in range(n_rows):
            for j in range(m):
                c = cand_of[r, j]
                if c >= 0:
                    members[fill[c]] = r
                    fill[c] += 1
        rank = np.empty(n_cand, dtype=np.int64)
        for c in range(n_cand):
            rank[c] = priority[cand_key[c]] * (n + 1) - cand_size[c]
        restored_any = False
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
            for q in range(m):
                row[q] = pat[g, q]
            row[j] = v
            qbits = msk[g] & ~(1 << j)
            restored = _count(
                row, qbits, k, full, pat, cnt, gnext, mask_value, mask_total, mask_head,
                mask_first, n_masks, store, ctr, radix, words,
            )  # fmt: skip
            if restored < k:
                continue
            # records that stop matching: non-missing at j with another value, matching elsewhere
            ok = True
            for mi in range(n_masks):
                if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                    continue
                skip = mask_value[mi] | msk[g]
                h, node = _pattern_list(
                    mi, skip, g, full, pat, cnt, gnext, mask_head, mask_first, store, ctr, radix,
                    words, True,
                )  # fmt: skip
                nodes = store[NODES]
                while h >= 0:
                    if cnt[h] > 0 and pat[h, j] != v and fk[h] - t_move < k:
                        ok = False
                        break
                    if skip == full:
                        h = gnext[h]
                    else:
                        node = nodes[node, 1]
                        h = nodes[node, 0] if node >= 0 else -1
                if not ok:
                    break
            if not ok:
                continue
            # apply: lost groups lose t_move matches; records move to the restored pattern
            for mi in range(n_masks):
                if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                    continue
                skip = mask_value[mi] | msk[g]
                h, node = _pattern_list(
                    mi, skip, g, full, pat, cnt, gnext, mask_head, mask_first, store, ctr, radix,
                    words, False,
                )  # fmt: skip
                nodes = store[NODES]
                while h >= 0:
                    if cnt[h] > 0 and pat[h, j] != v:
                        fk[h] -= t_move
                    if skip == full:
                        h = gnext[h]
                    else:
                        node = nodes[node, 1]
                        h = nodes[node, 0] if node >= 0 else -1
            c_full = _code(row, 0, radix, words)
            lookup, s, new = _upsert(lookup, lookup_fill, c_full[0], c_full[1])
            if not new:
                h2 = lookup[s, _VAL]
                # an emptied group's fk was not kept up to date: count it again
                created = cnt[h2] == 0
            else:
                lookup_fill += 1
                if n_groups == pat.shape[0]:
                    pat, cnt, msk, gnext, rhead = _grow(pat, cnt, msk, gnext, rhead)
                    fk2 = np.zeros(pat.shape[0], dtype=np.int64)
                    fk2[: fk.shape[0]] = fk
                    fk = fk2
                h2 = n_groups
                n_groups += 1
                created = True
                for q in range(m):
                    pat[h2, q] = row[q]
                msk[h2] = qbits
                lookup[s, _VAL] = h2
                mi2, mask_value, mask_total, mask_head, mask_first, n_masks = _new_mask(
                    qbits, mask_index, mask_value, mask_total, mask_head, mask_first, n_masks
                )
                gnext[h2] = mask_head[mi2]
                mask_head[mi2] = h2
                _register(h2, row, mi2, mask_first, store, ctr, radix, words)
            _move_counts(
                g, h2, t_move, pat, msk, mask_index, mask_total, mask_first, store, ctr, radix,
                words,
            )  # fmt: skip
            cnt[g] -= t_move
            cnt[h2] += t_move
            if created:
                fk[h2] = _count(
                    pat[h2], msk[h2], n + 1, full, pat, cnt, gnext, mask_value, mask_total,
                    mask_head, mask_first, n_masks, store, ctr, radix, words,
                )  # fmt: skip
            for q in range(start[ci], start[ci + 1]):
                r = members[q]
                grp[r] = h2
                cur[r, j] = v
            restored_any = True
        if not restored_any:
            break


@njit(cache=True)
def structural_dependencies(codes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``out[c, j]``: key ``c`` determines key ``j`` in the whole file.

    Each value of ``c`` goes with one value of ``j`` (over the records where both are present),
    ``c`` has at most one value per two such records, and ``j`` takes at least two values.
    ``weights``: the records each row stands for (empty: one each).
    """
    n, m = codes.shape
    out = np.zeros((m, m), dtype=np.bool_)
    for c in range(m):
        size = 0
        for r in range(n):
            if codes[r, c] + 1 > size:
                size = codes[r, c] + 1
        if size == 0:
            continue
        low = np.empty(size, dtype=np.int64)
        high = np.empty(size, dtype=np.int64)
        for j in range(m):
            if c == j:
                continue
            low[:] = np.iinfo(np.int64).max
            high[:] = -1
            both = 0
            n_present = 0
            first_j = -1
            varies = False
            for r in range(n):
                cv = codes[r, c]
                jv = codes[r, j]
                if cv < 0 or jv < 0:
                    continue
                both += weights[r] if weights.shape[0] else 1
                if high[cv] < 0:
                    n_present += 1
                if jv < low[cv]:
                    low[cv] = jv
                if jv > high[cv]:
                    high[cv] = jv
                if first_j < 0:
                    first_j = jv
                elif jv != first_j:
                    varies = True
            if both < 2 or n_present > 0.5 * both or not varies:
                continue
            same = True
            for v in range(size):
                if high[v] >= 0 and low[v] != high[v]:
                    same = False
                    break
            out[c, j] = same
    return out


@njit(cache=True)
def close_inferences_kernel(
    codes: np.ndarray,
    supp: np.ndarray,
    witnesses: int,
    determines: np.ndarray,
    weights: np.ndarray,
) -> int:
    """Add suppressions to ``supp`` (in place) until no suppressed value is read back.

    ``weights``: the records each row stands for (empty: one each; rows of equal codes and
    flags are treated alike, so a row may stand for many records).  Returns the number of
    values added; see :func:`sdckit.masking.suppression.close_inferences` for the rule.
    """
    n, m = codes.shape
    added = 0
    released = np.empty((n, m), dtype=np.int64)
    for r in range(n):
        for t in range(m):
            released[r, t] = -1 if supp[r, t] else codes[r, t]
    size_of = np.zeros(m, dtype=np.int64)
    for t in range(m):
        for r in range(n):
            if codes[r, t] + 1 > size_of[t]:
                size_of[t] = codes[r, t] + 1
    big = np.iinfo(np.int64).max
    for _ in range(2 * m + 2):
        changed = False
        for j in range(m):
            n_cells = 0
            for r in range(n):
                if supp[r, j] and codes[r, j] >= 0:
                    n_cells += 1
            if n_cells == 0:
                continue
            cells = np.empty(n_cells, dtype=np.int64)
            q = 0
            for r in range(n):
                if supp[r, j] and codes[r, j] >= 0:
                    cells[q] = r
                    q += 1
            for c in range(m):
                if c == j:
                    continue
                size = size_of[c]
                if size == 0:
                    continue
                count = np.zeros(size, dtype=np.int64)
                low = np.full(size, big, dtype=np.int64)
                high = np.full(size, -1, dtype=np.int64)
                visible = False
                for r in range(n):
                    rc = released[r, c]
                    rj = released[r, j]
                    if rc >= 0 and rj >= 0:
                        visible = True
                        count[rc] += weights[r] if weights.shape[0] else 1
                        if rj < low[rc]:
                            low[rc] = rj
                        if rj > high[rc]:
                            high[rc] = rj
                if not visible:
                    continue
                # the value read back may be the true one even when this file's value is not
                # (an earlier perturbation): any homogeneous group counts
                for q in range(n_cells):
                    r = cells[q]
                    rc = released[r, c]
                    if rc < 0:
                        continue
                    if determines[c, j] or (count[rc] >= witnesses and low[rc] == high[rc]):
                        supp[r, c] = True
                        added += weights[r] if weights.shape[0] else 1
                        changed = True
                # (hits are applied after the whole pair was looked at, as one vector step)
                for q in range(n_cells):
                    r = cells[q]
                    if supp[r, c]:
                        released[r, c] = -1
        if not changed:
            break
    return added
