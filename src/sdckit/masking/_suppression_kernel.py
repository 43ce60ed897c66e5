"""The numba kernel of local suppression to k-anonymity (missing values match any value).

The kernel works on *groups* (distinct key patterns, missing included), never on records.  It
keeps, for every missing-value pattern ``M`` present in the data and every query pattern ``U``
(``U`` a superset of ``M``), a hash map from the projection of a group's codes onto the keys
outside ``U`` to the number of records.  The number of records compatible with a pattern ``P``
whose missing set is ``Q`` (sdcMicro's ``fk`` with ``alpha = 1``) is then a sum, over the
missing patterns ``M`` present, of one look-up in map ``(M, M | Q)``.  Maps are built lazily and
updated when records are moved to a pattern with one more missing value; each map also links
the groups sharing a code, which is how records that differ from a group in one key are found.

Storage (:func:`new_store`: a typed list ``store`` of four int64 tables, and the counters
``ctr``): every map is an open-addressing hash table, a region of the shared ``store[POOL]``
whose rows hold the two code words, the record count and the head of the list of groups with
that code; ``store[INFO]`` holds per map its region, fill, skipped keys and the next map of the
same missing pattern; ``store[INDEX]`` maps (missing pattern, skipped keys) to the map;
``store[NODES]`` holds the linked lists of groups.  A table that grows is replaced in
``store``, so code holding one fetches it again after a call that may build or grow.  Plain
arrays rather than numba's typed dictionaries and lists, each access of which is a call: the
kernel is about three times faster (the choices, and so the output, are the same).

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
keeps what earlier ones reached, and the result is k-anonymous; it is also why a pass only
recounts the groups that were below ``k`` in the previous one (and the groups it created), and
why a count of ``k`` or more found on the way is remembered.
:func:`sdckit.masking._suppression_restore.restore_values` then gives back suppressed values
that k-anonymity turns out not to need.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

__all__ = ["greedy_groups", "group_records", "key_words", "suppress_to_k"]

_LIMIT = 1 << 62
_VISIT_LIMIT = 2000  # neighbour groups examined at most when looking for records to pull
_TABLE = types.Array(types.int64, 2, "C")

# hash table rows: the two words of the code (KA = -1: an empty slot), the value, a list head
_KA, _KB, _VAL, _HEAD = 0, 1, 2, 3
# the tables of a store, and its counters
POOL, INFO, INDEX, NODES = 0, 1, 2, 3
_N_MAPS, _POOL_USED, _INDEX_FILL, _N_NODES = 0, 1, 2, 3
# columns of INFO: region start and size in POOL, codes held, keys skipped, next map of the mask
_OFF, _CAP, _FILL, _SKIP, _NEXT = 0, 1, 2, 3, 4


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


@njit(cache=True, inline="always")
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


# ------------------------------------------------------------------------------ hash tables
@njit(cache=True, inline="always")
def _first_slot(a: int, b: int, mask: int) -> int:
    """First slot of the code ``(a, b)`` in a table of ``mask + 1`` slots (a 64-bit mix)."""
    x = a * np.int64(-7046029254386353131) ^ (b + np.int64(-880753656798294142))
    x ^= (x >> 31) & np.int64(0x1FFFFFFFF)
    x = x * np.int64(-4658895280553007687)
    x ^= (x >> 29) & np.int64(0x7FFFFFFFF)
    return x & mask


@njit(cache=True, inline="always")
def _find(t: np.ndarray, off: int, cap: int, a: int, b: int) -> int:
    """Row of the code ``(a, b)`` in the table ``t[off : off + cap]``, or -1 if absent."""
    mask = cap - 1
    s = _first_slot(a, b, mask)
    while True:
        ka = t[off + s, _KA]
        if ka == -1:
            return -1
        if ka == a and t[off + s, _KB] == b:
            return off + s
        s = (s + 1) & mask


@njit(cache=True, inline="always")
def _place(t: np.ndarray, off: int, cap: int, a: int, b: int) -> tuple[int, bool]:
    """Row of ``(a, b)`` in ``t[off : off + cap]``, claimed if absent (a slot must be free)."""
    mask = cap - 1
    s = _first_slot(a, b, mask)
    while True:
        ka = t[off + s, _KA]
        if ka == -1:
            t[off + s, _KA] = a
            t[off + s, _KB] = b
            return off + s, True
        if ka == a and t[off + s, _KB] == b:
            return off + s, False
        s = (s + 1) & mask


@njit(cache=True)
def _clear(t: np.ndarray, off: int, cap: int) -> None:
    for s in range(off, off + cap):
        t[s, _KA] = -1
        t[s, _KB] = 0
        t[s, _VAL] = 0
        t[s, _HEAD] = -1


@njit(cache=True)
def _new_table(expected: int) -> np.ndarray:
    """A stand-alone empty table with room for ``expected`` codes."""
    cap = 16
    while cap < 2 * expected:
        cap *= 2
    t = np.empty((cap, 4), dtype=np.int64)
    _clear(t, 0, cap)
    return t


@njit(cache=True)
def _rehash(src: np.ndarray, soff: int, scap: int, dst: np.ndarray, doff: int, dcap: int) -> None:
    """Copy the codes of ``src[soff : soff + scap]`` into the empty ``dst[doff : doff + dcap]``."""
    for s in range(soff, soff + scap):
        if src[s, _KA] != -1:
            d, _ = _place(dst, doff, dcap, src[s, _KA], src[s, _KB])
            dst[d, _VAL] = src[s, _VAL]
            dst[d, _HEAD] = src[s, _HEAD]


@njit(cache=True)
def _upsert(t: np.ndarray, fill: int, a: int, b: int) -> tuple[np.ndarray, int, bool]:
    """Stand-alone table ``t`` (doubled when half full), the row of ``(a, b)``, and if new."""
    s = _find(t, 0, t.shape[0], a, b)
    if s >= 0:
        return t, s, False
    if 2 * (fill + 1) > t.shape[0]:
        new = np.empty((2 * t.shape[0], 4), dtype=np.int64)
        _clear(new, 0, new.shape[0])
        _rehash(t, 0, t.shape[0], new, 0, new.shape[0])
        t = new
    s, _ = _place(t, 0, t.shape[0], a, b)
    return t, s, True


# ------------------------------------------------------------------------------ the store
@njit(cache=True)
def new_store():
    """The tables of the maps (see the module docstring) and their counters."""
    store = List.empty_list(_TABLE)
    pool = np.empty((1 << 12, 4), dtype=np.int64)
    store.append(pool)
    store.append(np.zeros((64, 5), dtype=np.int64))
    store.append(_new_table(64))
    store.append(np.empty((1 << 12, 2), dtype=np.int64))
    return store, np.zeros(4, dtype=np.int64)


@njit(cache=True)
def _alloc(store, ctr, cap: int) -> int:
    """Start of a new cleared region of ``cap`` rows in the pool (grown as needed)."""
    pool = store[POOL]
    used = ctr[_POOL_USED]
    if used + cap > pool.shape[0]:
        size = pool.shape[0]
        while used + cap > size:
            size += size // 2
        bigger = np.empty((size, 4), dtype=np.int64)
        bigger[:used] = pool[:used]
        store[POOL] = bigger
        pool = bigger
    _clear(pool, used, cap)
    ctr[_POOL_USED] = used + cap
    return used


@njit(cache=True)
def _map_slot(store, ctr, idx: int, a: int, b: int) -> int:
    """Row in the pool of the code ``(a, b)`` in map ``idx``, added (count 0) if absent.

    The map's region is moved to one twice as large when half full, so fetch ``store[POOL]``
    again after the call.
    """
    info = store[INFO]
    off, cap = info[idx, _OFF], info[idx, _CAP]
    s = _find(store[POOL], off, cap, a, b)
    if s >= 0:
        return s
    if 2 * (info[idx, _FILL] + 1) > cap:
        new_off = _alloc(store, ctr, 2 * cap)
        pool = store[POOL]
        _rehash(pool, off, cap, pool, new_off, 2 * cap)
        off, cap = new_off, 2 * cap
        info[idx, _OFF], info[idx, _CAP] = off, cap
    s, _ = _place(store[POOL], off, cap, a, b)
    info[idx, _FILL] += 1
    return s


@njit(cache=True)
def _add_node(store, ctr, group: int, head: int) -> int:
    """A new list node of ``group`` in front of ``head``; returns its id."""
    nodes = store[NODES]
    n = ctr[_N_NODES]
    if n == nodes.shape[0]:
        bigger = np.empty((n + n // 2, 2), dtype=np.int64)
        bigger[:n] = nodes
        store[NODES] = bigger
        nodes = bigger
    nodes[n, 0] = group
    nodes[n, 1] = head
    ctr[_N_NODES] = n + 1
    return n


@njit(cache=True)
def _new_mask(bits, mask_index, mask_value, mask_total, mask_head, mask_first, n_masks):
    """Index of the missing pattern ``bits`` (added if new) and the mask arrays (grown)."""
    if bits in mask_index:
        return mask_index[bits], mask_value, mask_total, mask_head, mask_first, n_masks
    if n_masks == mask_value.shape[0]:
        size = 2 * n_masks
        v, t, h, f = (
            np.zeros(size, np.int64), np.zeros(size, np.int64),
            np.full(size, -1, np.int64), np.full(size, -1, np.int64),
        )  # fmt: skip
        v[:n_masks], t[:n_masks] = mask_value[:n_masks], mask_total[:n_masks]
        h[:n_masks], f[:n_masks] = mask_head[:n_masks], mask_first[:n_masks]
        mask_value, mask_total, mask_head, mask_first = v, t, h, f
    mask_index[bits] = n_masks
    mask_value[n_masks] = bits
    mask_total[n_masks] = 0
    mask_head[n_masks] = -1
    mask_first[n_masks] = -1
    return n_masks, mask_value, mask_total, mask_head, mask_first, n_masks + 1


@njit(cache=True)
def _build_map(mi, skip, st_pat, st_cnt, st_gnext, mask_head, mask_first, store, ctr, radix,
               words):  # fmt: skip
    """Build the map of missing pattern ``mi`` over the keys outside ``skip``; its id.

    The arrays of ``store`` may be replaced: fetch them again after the call.
    """
    n_g = 0
    g = mask_head[mi]
    while g >= 0:
        n_g += 1
        g = st_gnext[g]
    # room for the distinct codes, at most one per group (half full at most)
    cap = 16
    while cap < 2 * n_g:
        cap *= 2
    idx = ctr[_N_MAPS]
    info = store[INFO]
    if idx == info.shape[0]:
        bigger = np.zeros((2 * idx, 5), dtype=np.int64)
        bigger[:idx] = info
        store[INFO] = bigger
        info = bigger
    off = _alloc(store, ctr, cap)
    ctr[_N_MAPS] = idx + 1
    pool = store[POOL]
    fill = 0
    g = mask_head[mi]
    while g >= 0:
        c = _code(st_pat[g], skip, radix, words)
        s, new = _place(pool, off, cap, c[0], c[1])
        if new:
            fill += 1
        if st_cnt[g] > 0:
            pool[s, _VAL] += st_cnt[g]
        pool[s, _HEAD] = _add_node(store, ctr, g, pool[s, _HEAD])
        g = st_gnext[g]
    # shrink an oversized region (few distinct codes): rehash into a smaller one at the end
    small = 16
    while small < 2 * fill:
        small *= 2
    if small < cap and off + cap == ctr[_POOL_USED]:
        ctr[_POOL_USED] = off  # reuse the space just used
        # copy aside first: the new region overlaps the old one
        aside = pool[off : off + cap].copy()
        off2 = _alloc(store, ctr, small)
        pool = store[POOL]
        _rehash(aside, 0, cap, pool, off2, small)
        off, cap = off2, small
    info[idx, _OFF] = off
    info[idx, _CAP] = cap
    info[idx, _FILL] = fill
    info[idx, _SKIP] = skip
    info[idx, _NEXT] = mask_first[mi]
    mask_first[mi] = idx
    index = store[INDEX]
    index, s, _ = _upsert(index, ctr[_INDEX_FILL], mi, skip)
    store[INDEX] = index
    index[s, _VAL] = idx
    ctr[_INDEX_FILL] += 1
    return idx


@njit(cache=True, inline="always")
def _map_of(index, mi, skip) -> int:
    """Id of the map ``(mi, skip)`` if built, else -1."""
    s = _find(index, 0, index.shape[0], mi, skip)
    return index[s, _VAL] if s >= 0 else -1


@njit(cache=True)
def _count(row, qbits, limit, full, st_pat, st_cnt, st_gnext, mask_value, mask_total, mask_head,
           mask_first, n_masks, store, ctr, radix, words):  # fmt: skip
    """Records compatible with ``row`` (missing set ``qbits``), counted up to ``limit``."""
    total = 0
    pool, info, index = store[POOL], store[INFO], store[INDEX]
    for mi in range(n_masks):
        if mask_total[mi] == 0:
            continue
        skip = mask_value[mi] | qbits
        if skip == full:
            total += mask_total[mi]
        else:
            idx = _map_of(index, mi, skip)
            if idx < 0:
                idx = _build_map(
                    mi, skip, st_pat, st_cnt, st_gnext, mask_head, mask_first, store, ctr, radix,
                    words,
                )  # fmt: skip
                pool, info, index = store[POOL], store[INFO], store[INDEX]
            c = _code(row, skip, radix, words)
            s = _find(pool, info[idx, _OFF], info[idx, _CAP], c[0], c[1])
            if s >= 0:
                total += pool[s, _VAL]
        if total >= limit:
            return limit
    return total


@njit(cache=True)
def count_all(limit, full, n_groups, st_pat, st_cnt, st_msk, st_gnext, mask_value, mask_total,
              mask_head, mask_first, n_masks, mask_index, store, ctr, radix, words):  # fmt: skip
    """:func:`_count` of every non-empty group's own pattern (0 for empty groups).

    Done per pair (missing pattern of the groups, missing pattern counted) so that each map is
    found once.
    """
    out = np.zeros(n_groups, dtype=np.int64)
    for qi in range(n_masks):
        qbits = mask_value[qi]
        if mask_total[qi] == 0:
            continue
        for mi in range(n_masks):
            if mask_total[mi] == 0:
                continue
            skip = mask_value[mi] | qbits
            if skip == full:
                g = mask_head[qi]
                while g >= 0:
                    if st_cnt[g] > 0 and g < n_groups:
                        out[g] += mask_total[mi]
                    g = st_gnext[g]
                continue
            idx = _map_of(store[INDEX], mi, skip)
            if idx < 0:
                idx = _build_map(
                    mi, skip, st_pat, st_cnt, st_gnext, mask_head, mask_first, store, ctr, radix,
                    words,
                )  # fmt: skip
            pool, info = store[POOL], store[INFO]
            off, cap = info[idx, _OFF], info[idx, _CAP]
            g = mask_head[qi]
            while g >= 0:
                if st_cnt[g] > 0 and g < n_groups:
                    c = _code(st_pat[g], skip, radix, words)
                    s = _find(pool, off, cap, c[0], c[1])
                    if s >= 0:
                        out[g] += pool[s, _VAL]
                g = st_gnext[g]
    for g in range(n_groups):
        if out[g] > limit:
            out[g] = limit
    return out


@njit(cache=True)
def _helps(g, j, k, full, fk_of, st_pat, st_cnt, st_msk, st_gnext, mask_value, mask_total,
           mask_head, mask_first, n_masks, store, ctr, radix, words):  # fmt: skip
    """Whether suppressing key ``j`` in group ``g`` makes it match a group still below ``k``.

    The groups that newly match are those differing from ``g`` only in key ``j``.  A group
    found at ``k`` or more is marked so in ``fk_of`` (counts never fall), so it is not counted
    again.
    """
    qj = st_msk[g] | (1 << j)
    visits = 0
    for mi in range(n_masks):
        if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
            continue
        skip = mask_value[mi] | qj
        node = -1
        if skip == full:
            h = mask_head[mi]
        else:
            idx = _map_of(store[INDEX], mi, skip)
            if idx < 0:
                idx = _build_map(
                    mi, skip, st_pat, st_cnt, st_gnext, mask_head, mask_first, store, ctr, radix,
                    words,
                )  # fmt: skip
            pool, info = store[POOL], store[INFO]
            c = _code(st_pat[g], skip, radix, words)
            s = _find(pool, info[idx, _OFF], info[idx, _CAP], c[0], c[1])
            if s < 0 or pool[s, _VAL] == 0:
                continue
            node = pool[s, _HEAD]
            h = store[NODES][node, 0] if node >= 0 else -1
        nodes = store[NODES]
        while h >= 0 and visits < _VISIT_LIMIT:
            visits += 1
            if st_cnt[h] > 0 and st_pat[h, j] != st_pat[g, j]:
                known = h < fk_of.shape[0]
                stale = fk_of[h] if known else 0
                if stale < k:
                    fresh = _count(
                        st_pat[h], st_msk[h], k, full, st_pat, st_cnt, st_gnext, mask_value,
                        mask_total, mask_head, mask_first, n_masks, store, ctr, radix, words,
                    )  # fmt: skip
                    if fresh < k:
                        return True
                    if known:
                        fk_of[h] = k
                    nodes = store[NODES]  # (counting may have built a map)
            if skip == full:
                h = st_gnext[h]
            else:
                node = nodes[node, 1]
                h = nodes[node, 0] if node >= 0 else -1
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
def _register(h2, row, mi2, mask_first, store, ctr, radix, words):
    """Link a new group into the lists of the maps of its missing pattern."""
    idx = mask_first[mi2]
    while idx >= 0:
        c = _code(row, store[INFO][idx, _SKIP], radix, words)
        s = _map_slot(store, ctr, idx, c[0], c[1])
        pool = store[POOL]
        pool[s, _HEAD] = _add_node(store, ctr, h2, pool[s, _HEAD])
        idx = store[INFO][idx, _NEXT]


@njit(cache=True)
def _move_counts(h, h2, t_move, pat, msk, mask_index, mask_total, mask_first, store, ctr, radix,
                 words):  # fmt: skip
    """Update the maps and totals for ``t_move`` records moving from group ``h`` to ``h2``."""
    mi = mask_index[msk[h]]
    pool, info = store[POOL], store[INFO]
    idx = mask_first[mi]
    while idx >= 0:
        c = _code(pat[h], info[idx, _SKIP], radix, words)
        s = _find(pool, info[idx, _OFF], info[idx, _CAP], c[0], c[1])
        pool[s, _VAL] -= t_move
        idx = info[idx, _NEXT]
    mask_total[mi] -= t_move
    mi2 = mask_index[msk[h2]]
    idx = mask_first[mi2]
    while idx >= 0:
        c = _code(pat[h2], store[INFO][idx, _SKIP], radix, words)
        s = _map_slot(store, ctr, idx, c[0], c[1])
        store[POOL][s, _VAL] += t_move
        idx = store[INFO][idx, _NEXT]
    mask_total[mi2] += t_move


@njit(cache=True)
def group_records(codes, radix, words, reverse, counts):
    """Groups of the records (distinct patterns) and the mask and lookup structures.

    Records are taken last to first when ``reverse`` (the greedy's order), first to last
    otherwise.  ``counts``: the records each row stands for (a pattern table, rows in the
    greedy's order); empty: one each.  Returns ``(n_groups, pat, cnt, msk, gnext, rhead, rnext,
    grp, lookup, lookup_fill, mask_index, mask_value, mask_total, mask_head, mask_first,
    n_masks)``.
    """
    n, m = codes.shape
    cap = 1024
    pat = np.empty((cap, m), dtype=np.int64)
    cnt = np.zeros(cap, dtype=np.int64)
    msk = np.zeros(cap, dtype=np.int64)
    gnext = np.full(cap, -1, dtype=np.int64)  # next group with the same missing pattern
    rhead = np.full(cap, -1, dtype=np.int64)  # first record of each group
    rnext = np.full(n, -1, dtype=np.int64)  # next record of the same group
    grp = np.empty(n, dtype=np.int64)
    lookup = _new_table(1024)  # full pattern code -> group
    lookup_fill = 0
    mask_index = Dict.empty(key_type=types.int64, value_type=types.int64)
    mask_value = np.zeros(16, dtype=np.int64)
    mask_total = np.zeros(16, dtype=np.int64)
    mask_head = np.full(16, -1, dtype=np.int64)
    mask_first = np.full(16, -1, dtype=np.int64)
    n_masks = 0
    n_groups = 0
    for i in range(n):
        r = n - 1 - i if reverse else i
        c_full = _code(codes[r], 0, radix, words)
        lookup, s, new = _upsert(lookup, lookup_fill, c_full[0], c_full[1])
        if not new:
            g = lookup[s, _VAL]
        else:
            lookup_fill += 1
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
            lookup[s, _VAL] = g
            mi, mask_value, mask_total, mask_head, mask_first, n_masks = _new_mask(
                bits, mask_index, mask_value, mask_total, mask_head, mask_first, n_masks
            )
            gnext[g] = mask_head[mi]
            mask_head[mi] = g
        weight = counts[r] if counts.shape[0] else 1
        cnt[g] += weight
        mask_total[mask_index[msk[g]]] += weight
        rnext[r] = rhead[g]
        rhead[g] = r
        grp[r] = g
    return (
        n_groups, pat, cnt, msk, gnext, rhead, rnext, grp, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks,
    )  # fmt: skip


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
    state = greedy(codes, k, priority, radix, words, wildcard, pull)
    out, _ = records_of(codes.shape[0], state[0], state[1], state[5], state[6])
    return out


@njit(cache=True)
def records_of(n, n_groups, pat, rhead, rnext):
    """Codes and group of every record, from the groups' record lists."""
    out = np.empty((n, pat.shape[1]), dtype=np.int64)
    grp = np.empty(n, dtype=np.int64)
    for g in range(n_groups):
        r = rhead[g]
        while r >= 0:
            out[r] = pat[g]
            grp[r] = g
            r = rnext[r]
    return out, grp


@njit(cache=True)
def greedy(codes, k, priority, radix, words, wildcard, pull):
    """The greedy of :func:`suppress_to_k`; returns its groups and maps.

    ``(n_groups, pat, cnt, msk, gnext, rhead, rnext, lookup, lookup_fill, mask_index,
    mask_value, mask_total, mask_head, mask_first, n_masks, store, ctr)``.
    """
    (
        n_groups, pat, cnt, msk, gnext, rhead, rnext, _, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks,
    ) = group_records(codes, radix, words, True, np.empty(0, dtype=np.int64))  # fmt: skip
    (
        n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill, mask_index, mask_value,
        mask_total, mask_head, mask_first, n_masks, store, ctr, moves, n_moves,
    ) = greedy_groups(
        n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill, mask_index, mask_value,
        mask_total, mask_head, mask_first, n_masks, k, priority, radix, words, wildcard, pull,
    )  # fmt: skip
    # records: each move takes the first records of its group's list to the front of the
    # other's (the greedy's decisions never read the lists, so they are replayed afterwards)
    for i in range(n_moves):
        h, h2 = moves[i, 0], moves[i, 1]
        for _ in range(moves[i, 2]):
            r = rhead[h]
            rhead[h] = rnext[r]
            rnext[r] = rhead[h2]
            rhead[h2] = r
    return (
        n_groups, pat, cnt, msk, gnext, rhead, rnext, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks, store, ctr,
    )  # fmt: skip


@njit(cache=True)
def greedy_groups(n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill, mask_index,
                  mask_value, mask_total, mask_head, mask_first, n_masks, k, priority, radix,
                  words, wildcard, pull):  # fmt: skip
    """The greedy on groups (from :func:`group_records`), without records: its moves are
    logged as rows ``(from group, to group, records)`` -- the first records of the one's list
    go to the front of the other's.  Returns the groups and maps, the log and its length."""
    m = pat.shape[1]
    full = (1 << m) - 1
    store, ctr = new_store()
    moves = np.empty((64, 3), dtype=np.int64)
    n_logged = 0
    by_priority = np.argsort(-priority, kind="mergesort")
    row = np.empty(m, dtype=np.int64)

    fk_of = np.zeros(pat.shape[0], dtype=np.int64)
    counted = 0  # groups below this number whose fk_of is up to date where it is >= k
    cand_group = np.empty(64, dtype=np.int64)
    cand_key = np.empty(64, dtype=np.int64)
    while True:
        # ---- fk (capped at k) of every non-empty group; unsafe ones rarest first.  A group
        # at k stays there (fk never falls), so only the others and new groups are counted.
        if fk_of.shape[0] < n_groups:
            grown = np.zeros(pat.shape[0], dtype=np.int64)
            grown[: fk_of.shape[0]] = fk_of
            fk_of = grown
        n_unsafe = 0
        for g in range(n_groups):
            if cnt[g] == 0:
                fk_of[g] = k
                continue
            if g < counted and fk_of[g] >= k:
                continue
            if wildcard:
                fk_of[g] = _count(
                    pat[g], msk[g], k, full, pat, cnt, gnext, mask_value, mask_total, mask_head,
                    mask_first, n_masks, store, ctr, radix, words,
                )  # fmt: skip
            else:
                fk_of[g] = min(cnt[g], k)
            if fk_of[g] < k:
                n_unsafe += 1
        counted = n_groups
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
                    pat[g], msk[g], k, full, pat, cnt, gnext, mask_value, mask_total, mask_head,
                    mask_first, n_masks, store, ctr, radix, words,
                )  # fmt: skip
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
                    for mi in range(n_masks):
                        if mask_total[mi] == 0 or (mask_value[mi] >> j) & 1:
                            continue
                        skip = mask_value[mi] | qj
                        node = -1
                        if skip == full:
                            h = mask_head[mi]
                            via_nodes = False
                        else:
                            idx = _map_of(store[INDEX], mi, skip)
                            if idx < 0:
                                idx = _build_map(
                                    mi, skip, pat, cnt, gnext, mask_head, mask_first, store,
                                    ctr, radix, words,
                                )  # fmt: skip
                            pool, info = store[POOL], store[INFO]
                            c = _code(pat[g], skip, radix, words)
                            s = _find(pool, info[idx, _OFF], info[idx, _CAP], c[0], c[1])
                            if s < 0 or pool[s, _VAL] == 0:
                                continue
                            node = pool[s, _HEAD]
                            h = -1
                            if node >= 0:
                                h = store[NODES][node, 0]
                            via_nodes = True
                        nodes = store[NODES]
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
                                node = nodes[node, 1]
                                h = -1
                                if node >= 0:
                                    h = nodes[node, 0]
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
                    for q in range(m):
                        row[q] = pat[g, q]
                    row[j] = -1
                    qbits = msk[g] | (1 << j)
                    if wildcard:
                        val = _count(
                            row, qbits, k, full, pat, cnt, gnext, mask_value, mask_total,
                            mask_head, mask_first, n_masks, store, ctr, radix, words,
                        )  # fmt: skip
                    else:
                        val = cnt[g]
                        c_row = _code(row, 0, radix, words)
                        s = _find(lookup, 0, lookup.shape[0], c_row[0], c_row[1])
                        if s >= 0:
                            val += cnt[lookup[s, _VAL]]
                    val = min(val, k)
                    if val < best_val:
                        continue
                    # ties: prefer a key whose suppression also helps another unsafe group
                    helps = 0
                    if wildcard and _helps(
                        g, j, k, full, fk_of, pat, cnt, msk, gnext, mask_value, mask_total,
                        mask_head, mask_first, n_masks, store, ctr, radix, words,
                    ):  # fmt: skip
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
                for q in range(m):
                    row[q] = pat[h, q]
                row[j] = -1
                c_full = _code(row, 0, radix, words)
                lookup, s, new = _upsert(lookup, lookup_fill, c_full[0], c_full[1])
                if not new:
                    h2 = lookup[s, _VAL]
                    if cnt[h2] == 0 and h2 < fk_of.shape[0]:
                        # an emptied group taken up again: its fk_of (k while it was empty)
                        # says nothing, so it is counted again in the next pass
                        fk_of[h2] = 0
                else:
                    lookup_fill += 1
                    if n_groups == pat.shape[0]:
                        pat, cnt, msk, gnext, rhead = _grow(pat, cnt, msk, gnext, rhead)
                    h2 = n_groups
                    n_groups += 1
                    for q in range(m):
                        pat[h2, q] = row[q]
                    msk[h2] = msk[h] | (1 << j)
                    lookup[s, _VAL] = h2
                    mi2, mask_value, mask_total, mask_head, mask_first, n_masks = _new_mask(
                        msk[h2], mask_index, mask_value, mask_total, mask_head, mask_first,
                        n_masks,
                    )  # fmt: skip
                    gnext[h2] = mask_head[mi2]
                    mask_head[mi2] = h2
                    _register(h2, row, mi2, mask_first, store, ctr, radix, words)
                _move_counts(
                    h, h2, t_move, pat, msk, mask_index, mask_total, mask_first, store, ctr,
                    radix, words,
                )  # fmt: skip
                cnt[h] -= t_move
                cnt[h2] += t_move
                # records: the first t_move records of h go to h2
                if n_logged == moves.shape[0]:
                    moves = np.concatenate((moves, moves))
                moves[n_logged, 0] = h
                moves[n_logged, 1] = h2
                moves[n_logged, 2] = t_move
                n_logged += 1

        if not moved_any:  # nothing left to do (only with missing values as a category)
            break
    return (
        n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill, mask_index, mask_value,
        mask_total, mask_head, mask_first, n_masks, store, ctr, moves, n_logged,
    )  # fmt: skip
