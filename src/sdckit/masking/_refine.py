"""Local search that lowers the within-group sum of squares of a k-partition (``mdav_refined``).

Starting from a partition whose groups have ``k .. 2k-1`` records (MDAV), three moves are tried
until none improves the SSE by more than a relative tolerance:

* **move** a record to another group (sizes stay in ``[k, 2k-1]``); with group sums the change is
  exact: ``|B|/(|B|+1) |x-c_B|^2 - |A|/(|A|-1) |x-c_A|^2``;
* **swap** two records of different groups: ``2 (x-y).(c_A-c_B) - |x-y|^2 (1/|A| + 1/|B|)``;
* **dissolve** a group: insert each of its records into the best group with room; kept only if
  the SSE decreases.

Candidate groups of a record are its ``L`` nearest group centroids (a k-d tree on the centroids,
rebuilt every round).  Every accepted move strictly lowers the SSE, so the search terminates.

An iterated local search follows: a random group and its nearest groups are pooled and
re-formed with MDAV, the neighbourhood is re-optimised with the moves above, and the change is
kept only if the total SSE decreased.  The random choices come from a seeded generator, so the
result is reproducible.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from sdckit.masking._mdav import mdav_labels

__all__ = ["refine_partition"]


@njit(cache=True)
def _setup(z: np.ndarray, labels_in: np.ndarray, n_groups: int, cap: int) -> tuple:
    n, p = z.shape
    labels = labels_in.copy()
    size = np.zeros(n_groups, dtype=np.int64)
    sums = np.zeros((n_groups, p))
    members = np.full((n_groups, cap), -1, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = labels[i]
        members[g, size[g]] = i
        slot[i] = size[g]
        size[g] += 1
        for j in range(p):
            sums[g, j] += z[i, j]
    return labels, size, sums, members, slot


@njit(cache=True)
def _sq_to_centroid(z: np.ndarray, i: int, sums: np.ndarray, g: int, size_g: int) -> float:
    s = 0.0
    for j in range(z.shape[1]):
        t = z[i, j] - sums[g, j] / size_g
        s += t * t
    return s


@njit(cache=True)
def _detach(
    i: int,
    g: int,
    z: np.ndarray,
    labels: np.ndarray,
    size: np.ndarray,
    sums: np.ndarray,
    members: np.ndarray,
    slot: np.ndarray,
) -> None:
    last = size[g] - 1
    pos = slot[i]
    other = members[g, last]
    members[g, pos] = other
    slot[other] = pos
    members[g, last] = -1
    size[g] = last
    for j in range(z.shape[1]):
        sums[g, j] -= z[i, j]
    labels[i] = -1


@njit(cache=True)
def _attach(
    i: int,
    g: int,
    z: np.ndarray,
    labels: np.ndarray,
    size: np.ndarray,
    sums: np.ndarray,
    members: np.ndarray,
    slot: np.ndarray,
) -> None:
    members[g, size[g]] = i
    slot[i] = size[g]
    size[g] += 1
    for j in range(z.shape[1]):
        sums[g, j] += z[i, j]
    labels[i] = g


@njit(cache=True)
def _group_sse(
    z: np.ndarray, g: int, size: np.ndarray, sums: np.ndarray, members: np.ndarray
) -> float:
    s = 0.0
    for t in range(size[g]):
        s += _sq_to_centroid(z, members[g, t], sums, g, size[g])
    return s


@njit(cache=True)
def _sweep_moves(
    z: np.ndarray,
    state: tuple,
    records: np.ndarray,
    cand: np.ndarray,
    k: int,
    cap: int,
    tol: float,
) -> float:
    """Best-improvement move or swap for each of ``records``; returns the SSE change."""
    labels, size, sums, members, slot = state
    p = z.shape[1]
    total = 0.0
    for r in range(records.shape[0]):
        i = records[r]
        a = labels[i]
        na = size[a]
        da = _sq_to_centroid(z, i, sums, a, na)
        best = -tol
        kind = 0
        best_b = -1
        best_y = -1
        for c in range(cand.shape[1]):
            b = cand[r, c]
            if b < 0 or b == a or size[b] == 0:
                continue
            nb = size[b]
            db = _sq_to_centroid(z, i, sums, b, nb)
            if na > k and nb < cap:
                delta = nb / (nb + 1.0) * db - na / (na - 1.0) * da
                if delta < best:
                    best = delta
                    kind = 1
                    best_b = b
            inv = 1.0 / na + 1.0 / nb
            for t in range(nb):
                y = members[b, t]
                dot = 0.0
                dd = 0.0
                for j in range(p):
                    diff = z[i, j] - z[y, j]
                    dot += diff * (sums[a, j] / na - sums[b, j] / nb)
                    dd += diff * diff
                delta = 2.0 * dot - dd * inv
                if delta < best:
                    best = delta
                    kind = 2
                    best_b = b
                    best_y = y
        if kind == 1:
            _detach(i, a, z, labels, size, sums, members, slot)
            _attach(i, best_b, z, labels, size, sums, members, slot)
            total += best
        elif kind == 2:
            _detach(i, a, z, labels, size, sums, members, slot)
            _detach(best_y, best_b, z, labels, size, sums, members, slot)
            _attach(i, best_b, z, labels, size, sums, members, slot)
            _attach(best_y, a, z, labels, size, sums, members, slot)
            total += best
    return total


@njit(cache=True)
def _sweep_dissolve(
    z: np.ndarray,
    state: tuple,
    groups: np.ndarray,
    cand_of: np.ndarray,
    cand: np.ndarray,
    cap: int,
    tol: float,
) -> float:
    """Try to dissolve each of ``groups``; keep a dissolution only if it lowers the SSE.

    ``cand[cand_of[i]]`` are the candidate groups of record ``i`` (``cand_of[i] < 0``: none).
    """
    labels, size, sums, members, slot = state
    total = 0.0
    moved = np.empty(cap, dtype=np.int64)
    target = np.empty(cap, dtype=np.int64)
    for ga in range(groups.shape[0]):
        a = groups[ga]
        na = size[a]
        if na == 0:
            continue
        before = _group_sse(z, a, size, sums, members)
        for t in range(na):
            moved[t] = members[a, t]
        gain = 0.0
        ok = True
        done = 0
        for t in range(na):
            i = moved[t]
            row = cand_of[i]
            best = np.inf
            best_b = -1
            if row >= 0:
                for c in range(cand.shape[1]):
                    b = cand[row, c]
                    if b < 0 or b == a or size[b] == 0 or size[b] >= cap:
                        continue
                    nb = size[b]
                    delta = nb / (nb + 1.0) * _sq_to_centroid(z, i, sums, b, nb)
                    if delta < best:
                        best = delta
                        best_b = b
            if best_b < 0:
                ok = False
                break
            _detach(i, a, z, labels, size, sums, members, slot)
            _attach(i, best_b, z, labels, size, sums, members, slot)
            target[t] = best_b
            gain += best
            done += 1
        if ok and gain - before < -tol:
            total += gain - before
            continue
        for t in range(done - 1, -1, -1):  # undo
            i = moved[t]
            _detach(i, target[t], z, labels, size, sums, members, slot)
            _attach(i, a, z, labels, size, sums, members, slot)
    return total


def _candidates(
    z: np.ndarray, records: np.ndarray, size: np.ndarray, sums: np.ndarray, n_cand: int
) -> np.ndarray:
    """The ``n_cand`` nearest live group centroids of each of ``records`` (-1 pads)."""
    live = np.flatnonzero(size > 0)
    centroids = sums[live] / size[live, None]
    n_cand = min(n_cand, len(live))
    _, nearest = cKDTree(centroids).query(z[records], k=n_cand)
    nearest = np.asarray(nearest, dtype=np.int64).reshape(len(records), n_cand)
    return live[nearest]


class _Search:
    """The partition as group sums and member lists, with local search on parts of it."""

    def __init__(self, z: np.ndarray, labels: np.ndarray, k: int, n_candidates: int) -> None:
        self.z = z
        self.k = k
        self.cap = 2 * k - 1
        self.n_candidates = n_candidates
        n_slots = len(z) // k + 1  # no k-partition has more groups
        self.state = _setup(z, labels, n_slots, self.cap)
        self.tol = 1e-12 * max(float(np.sum((z - z.mean(axis=0)) ** 2)), 1e-300)

    @property
    def labels(self) -> np.ndarray:
        return self.state[0]

    def snapshot(self) -> tuple:
        return tuple(a.copy() for a in self.state)

    def restore(self, saved: tuple) -> None:
        for a, b in zip(self.state, saved, strict=True):
            a[...] = b

    def local_search(self, groups: np.ndarray | None = None, max_rounds: int = 100) -> float:
        """Moves, swaps and dissolutions on the records of ``groups`` (default all)."""
        _, size, sums, members, _ = self.state
        total = 0.0
        for _ in range(max_rounds):
            if groups is None:
                records = np.arange(len(self.z))
                group_list = np.flatnonzero(size > 0)
            else:
                group_list = groups[size[groups] > 0]
                records = members[group_list].ravel()
                records = records[records >= 0]
            cand = _candidates(self.z, records, size, sums, self.n_candidates)
            gain = _sweep_moves(self.z, self.state, records, cand, self.k, self.cap, self.tol)
            cand_of = np.full(len(self.z), -1, dtype=np.int64)
            cand_of[records] = np.arange(len(records))
            gain += _sweep_dissolve(
                self.z, self.state, group_list, cand_of, cand, self.cap, self.tol
            )
            total += gain
            if gain > -self.tol:
                break
        return total

    def perturb(self, rng: np.random.Generator, n_pool: int) -> tuple[float, np.ndarray]:
        """Re-form a random group and its nearest groups with MDAV; the SSE change, groups."""
        labels, size, sums, members, slot = self.state
        live = np.flatnonzero(size > 0)
        centroids = sums[live] / size[live, None]
        tree = cKDTree(centroids)
        g = int(rng.integers(len(live)))
        _, near = tree.query(centroids[g], k=min(n_pool, len(live)))
        pool_groups = live[np.atleast_1d(near)]
        records = members[pool_groups].ravel()
        records = np.sort(records[records >= 0])
        before = sum(_group_sse(self.z, a, size, sums, members) for a in pool_groups)
        sub = mdav_labels(self.z[records], self.k)
        free = np.concatenate((pool_groups, np.flatnonzero(size == 0)))
        for i in records:
            _detach(i, labels[i], self.z, labels, size, sums, members, slot)
        new_ids = free[: sub.max() + 1]
        for i, s in zip(records, sub, strict=True):
            _attach(i, new_ids[s], self.z, labels, size, sums, members, slot)
        after = sum(_group_sse(self.z, a, size, sums, members) for a in new_ids)
        _, around = tree.query(centroids[g], k=min(4 * n_pool, len(live)))
        region = np.unique(np.concatenate((new_ids, live[np.atleast_1d(around)])))
        return after - before, region


def refine_partition(
    z: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    iterations: int = 0,
    seed: int | np.random.Generator = 0,
    n_candidates: int = 8,
    n_pool: int = 3,
) -> np.ndarray:
    """Lower the SSE of the k-partition ``labels`` of the rows of ``z`` by local search.

    ``labels`` must have groups of ``k .. 2k-1`` records; the result has the same property and
    an SSE no larger than the input's.  With ``iterations > 0`` an iterated local search
    follows: ``iterations`` times, a random group and its ``n_pool - 1`` nearest groups are
    re-formed with MDAV, the neighbourhood is re-optimised, and the change is kept only if the
    SSE decreased.  Labels of the result are renumbered ``0 .. G-1`` in order of first record.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64).copy()
    n_groups = int(labels.max()) + 1
    if n_groups < 2 or np.bincount(labels).max() > 2 * k - 1:
        return labels
    search = _Search(z, labels, k, n_candidates)
    search.local_search()
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    for _ in range(iterations):
        saved = search.snapshot()
        delta, region = search.perturb(rng, n_pool)
        delta += search.local_search(region)
        if delta >= -search.tol:
            search.restore(saved)
    _, first = np.unique(search.labels, return_index=True)
    rank = np.empty(search.labels.max() + 1, dtype=np.int64)
    rank[search.labels[np.sort(first)]] = np.arange(len(first))
    return rank[search.labels]
