"""The pruned searches of the lattice: Flash (optimal) and a best-first heuristic.

Both share one state per node, kept in arrays indexed by node id (:mod:`._lattice`):

* ``anon``: 0 unknown, 1 anonymous (checked, or predicted), 2 not anonymous (checked or
  predicted);
* ``excluded``: cannot be the optimum, without being evaluated;
* ``evaluated``: its classes were computed and its loss is known.

Three sound rules resolve nodes without evaluating them (the order of nodes is (loss, id): a
node of equal loss and smaller id wins, the exhaustive search's tie rule):

1. *predictive tagging* (every model monotone for the suppression setting): the nodes above an
   anonymous node are anonymous, the nodes below a non-anonymous node are not;
2. *monotone measure*: the nodes strictly above an anonymous node lose at least as much and have
   larger ids, so none of them is the optimum;
3. *lower bound*: a node whose bound (covering it and every node above it) is worse than the
   best found, in (loss, id) order, is excluded with every node above it.

A node is *resolved* once evaluated, excluded or known not anonymous; the optimum is proven
when every node is resolved.  When a budget stops the search first, the bound on the optimum is
the least lower bound of the minimal unresolved nodes (every unresolved node is above one).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from sdckit.lattice._check import evaluate_node
from sdckit.lattice._data import LatticeData
from sdckit.lattice._lattice import Lattice
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel

__all__ = ["Search"]

UNKNOWN, ANONYMOUS, NOT_ANONYMOUS = 0, 1, 2
_CHUNK = 4096


def measure_is_monotone(measure: LossMeasure, suppression_limit: float) -> bool:
    """The measure's monotonicity for the suppression setting."""
    if suppression_limit > 0:
        return bool(getattr(measure, "monotone_with_suppression", measure.monotone))
    return bool(measure.monotone)


def models_are_monotone(models: Sequence[PrivacyModel], suppression_limit: float) -> bool:
    """Every model's monotonicity for the suppression setting."""
    flag = "monotone_with_suppression" if suppression_limit > 0 else "monotone"
    return all(bool(getattr(m, flag)) for m in models)


#: Evaluated nodes between two progress reports.
PROGRESS_EVERY = 32


class Search:
    """One search: the data, the target, the per-node state and the best node found."""

    def __init__(
        self,
        data: LatticeData,
        models: Sequence[PrivacyModel],
        measure: LossMeasure,
        *,
        suppression_limit: float,
        max_nodes: int | None,
        time_limit: float | None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.data = data
        self.progress = progress
        self.models = list(models)
        self.measure = measure
        self.suppression_limit = suppression_limit
        self.lattice = Lattice(data.heights)
        size = self.lattice.size
        self.anon = np.zeros(size, dtype=np.int8)
        self.excluded = np.zeros(size, dtype=bool)
        self.evaluated = np.zeros(size, dtype=bool)
        self.predict = models_are_monotone(models, suppression_limit)
        self.monotone = measure_is_monotone(measure, suppression_limit)
        self.has_bound = type(measure).lower_bound is not LossMeasure.lower_bound
        self.rank = self._strategy()
        self._bounds: dict[int, float] = {}
        self.rows: list[tuple[int, bool, int, float]] = []
        self.losses: dict[int, float] = {}
        self.best: tuple[float, int, int] | None = None  # (loss, id, n_suppressed)
        self.max_nodes = max_nodes
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.stopped: str | None = None

    def _strategy(self) -> np.ndarray:
        """Each node's rank in the traversal: by level, then the least share of each key's
        hierarchy climbed, then the most distinct values kept, then id (a stable order in
        the spirit of ARX's Flash strategy)."""
        heights = self.data.heights
        climbed = [np.arange(h + 1, dtype=np.float64) / max(h, 1) for h in heights]
        kept = [
            -np.array([m[lv].max() + 1 for lv in range(m.shape[0])], dtype=np.float64)
            / (m[0].max() + 1)
            for m in self.data.maps
        ]
        order = np.lexsort(
            (
                np.arange(self.lattice.size),
                self.lattice.sums(kept),
                self.lattice.sums(climbed),
                self.lattice.level_sums(),
            )
        )
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size, dtype=np.int64)
        return rank

    # -- state -----------------------------------------------------------------------------

    def resolved(self, node: int) -> bool:
        return bool(self.evaluated[node] or self.excluded[node] or self.anon[node] == NOT_ANONYMOUS)

    def unresolved(self, nodes: np.ndarray | slice = slice(None)) -> np.ndarray:
        return ~(self.evaluated[nodes] | self.excluded[nodes] | (self.anon[nodes] == NOT_ANONYMOUS))

    def must_stop(self) -> bool:
        if self.stopped is None:
            if self.max_nodes is not None and len(self.rows) >= self.max_nodes:
                self.stopped = "max_nodes"
            elif self.deadline is not None and time.perf_counter() >= self.deadline:
                self.stopped = "time_limit"
        return self.stopped is not None

    def bound(self, node: int) -> float:
        """The measure's lower bound of ``node`` and every node above it (cached)."""
        if not self.has_bound:
            return -math.inf
        value = self._bounds.get(node)
        if value is None:
            value = float(self.measure.lower_bound(self.lattice.levels_of(node), self.data))
            self._bounds[node] = value
        return value

    def beaten(self, node: int) -> bool:
        """The best found beats ``node`` and every node above it, in (loss, id) order."""
        if self.best is None or not self.has_bound:
            return False
        bound = self.bound(node)
        return bound > self.best[0] or (bound == self.best[0] and node > self.best[1])

    # -- one node --------------------------------------------------------------------------

    def evaluate(self, node: int) -> bool | None:
        """Prune or evaluate ``node`` and tag the lattice; its anonymity (None when pruned)."""
        levels = self.lattice.levels_of(node)
        if self.beaten(node):
            self.excluded[self.lattice.up_cone(levels)] = True
            return None
        result = evaluate_node(
            self.data,
            levels,
            self.models,
            suppression_limit=self.suppression_limit,
            measure=self.measure,
        )
        self.evaluated[node] = True
        self.rows.append((node, result.anonymous, result.n_suppressed, result.loss))
        if self.progress is not None and len(self.rows) % PROGRESS_EVERY == 0:
            # nodes decided (evaluated, tagged or pruned) out of the lattice
            size = self.lattice.size
            self.progress(size - int(np.count_nonzero(self.unresolved())), size)
        self.losses[node] = result.loss
        if result.anonymous:
            self.anon[node] = ANONYMOUS
            key = (result.loss, node)
            if self.best is None or key < self.best[:2]:
                self.best = (result.loss, node, result.n_suppressed)
            if self.predict or self.monotone:
                cone = self.lattice.up_cone(levels)
                if self.predict:
                    self.anon[cone] = ANONYMOUS
                if self.monotone:
                    self.excluded[cone[1:]] = True  # the cone's first id is the node itself
        else:
            self.anon[node] = NOT_ANONYMOUS
            if self.predict:
                self.anon[self.lattice.down_cone(levels)] = NOT_ANONYMOUS
        return result.anonymous

    # -- Flash -----------------------------------------------------------------------------

    def _path(self, node: int) -> list[int]:
        """A greedy path up from ``node`` through nodes of unknown anonymity."""
        path = [node]
        current = node
        while True:
            levels = self.lattice.levels_of(current)
            candidates = [
                s
                for s in self.lattice.successors(current, levels)
                if self.anon[s] == UNKNOWN and not self.resolved(s)
            ]
            if not candidates:
                return path
            # the least bound first, then the traversal's order
            current = min(candidates, key=lambda s: (self.bound(s), self.rank[s]))
            path.append(current)

    def _check_path(self, path: list[int], queue: list[tuple[int, int]]) -> None:
        """Binary search of the path for its lowest anonymous node (anonymity is monotone);
        the successors of the non-anonymous nodes checked go on the queue (Flash's branches)."""
        low, high = 0, len(path) - 1
        while low <= high and not self.must_stop():
            mid = (low + high) // 2
            node = path[mid]
            if self.anon[node] == NOT_ANONYMOUS:
                low = mid + 1
                continue
            if self.anon[node] == ANONYMOUS or self.excluded[node] or self.evaluated[node]:
                high = mid - 1
                continue
            anonymous = self.evaluate(node)
            if anonymous is False:
                for s in self.lattice.successors(node, self.lattice.levels_of(node)):
                    if self.anon[s] == UNKNOWN and not self.resolved(s):
                        heapq.heappush(queue, (int(self.rank[s]), s))
                low = mid + 1
            else:
                high = mid - 1

    def flash(self) -> None:
        """Level by level through the lattice (in the traversal's order); from each node left
        unresolved, paths searched binary where tagging holds, else the node evaluated."""
        order = np.argsort(self.rank)
        queue: list[tuple[int, int]] = []
        for start in range(0, order.size, _CHUNK):
            chunk = order[start : start + _CHUNK]
            for node in chunk[self.unresolved(chunk)].tolist():
                heapq.heappush(queue, (int(self.rank[node]), node))
                while queue:
                    if self.must_stop():
                        return
                    _, head = heapq.heappop(queue)
                    if self.resolved(head):
                        continue
                    if self.predict and self.anon[head] == UNKNOWN:
                        self._check_path(self._path(head), queue)
                    else:
                        self.evaluate(head)
                    if not self.resolved(head):
                        heapq.heappush(queue, (int(self.rank[head]), head))

    # -- heuristic ---------------------------------------------------------------------------

    def _dive(self) -> None:
        """Find an anonymous node fast: a binary search of a greedy path up from the bottom
        where tagging holds, else a greedy ascent to the least-loss successor."""
        if self.predict:
            self._check_path(self._path(0), [])
            return
        node = 0
        while not self.must_stop():
            if not self.resolved(node) and self.evaluate(node) is not False:
                return  # anonymous, or pruned by the bound
            options = []
            for s in self.lattice.successors(node, self.lattice.levels_of(node)):
                if self.must_stop():
                    return
                if not self.resolved(s):
                    self.evaluate(s)
                if self.evaluated[s]:
                    options.append((self.anon[s] != ANONYMOUS, self.losses[s], s))
            if not options:
                return
            anonymous_first, _, node = min(options)
            if not anonymous_first:
                return

    def _descend(self) -> None:
        """From the best node found, step to its least-loss anonymous predecessor until
        none is anonymous (a minimal anonymous node: a local optimum)."""
        while self.best is not None and not self.must_stop():
            node = self.best[1]
            levels = self.lattice.levels_of(node)
            for j, level in enumerate(levels):
                pred = node - int(self.lattice.strides[j])
                if level > 0 and not self.resolved(pred):
                    if self.must_stop():
                        return
                    self.evaluate(pred)
            if self.best[1] == node:
                return  # no predecessor improved on it

    def heuristic(self) -> None:
        """A dive to a first anonymous node and a descent to a local optimum, then Flash's
        traversal for the rest of the budget (pruning by the bound of the best found)."""
        self._dive()
        self._descend()
        if not self.must_stop():
            self.flash()

    # -- outcome -----------------------------------------------------------------------------

    def lower_bound(self) -> float:
        """No node that meets the target loses less than this."""
        best = math.inf if self.best is None else self.best[0]
        remaining = self.unresolved()
        if not remaining.any():
            return best
        if not self.has_bound:
            return -math.inf
        minimal = self.lattice.minimal(remaining)
        return min(best, min(self.bound(int(n)) for n in minimal))

    def run(self, traverse: Callable[[], None]) -> None:
        for model in self.models:
            model.prepare(self.data)
        self.measure.prepare(self.data)
        traverse()
        if self.progress is not None:
            self.progress(self.lattice.size, self.lattice.size)
