"""The search of the generalisation lattice for the least-loss node that meets the target.

:func:`search_lattice` is the entry point: ``algorithm="flash"`` (the default) is ARX's optimal
search with predictive tagging and bound pruning (:mod:`sdckit.lattice._flash`),
``"heuristic"`` a best-first ascent for lattices too large to search whole, within a budget,
and ``"exhaustive"`` evaluates every node: the reference the others are tested against.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.lattice._check import evaluate_node, suppression_budget
from sdckit.lattice._data import LatticeData
from sdckit.lattice._flash import PROGRESS_EVERY, Search
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel

__all__ = ["SearchResult", "search_lattice"]

ALGORITHMS = ("flash", "heuristic", "exhaustive")


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The outcome of a lattice search.

    Attributes
    ----------
    keys : tuple of str
        The keys, in the order of a node's levels.
    heights : tuple of int
        The most general level of each key.
    optimum : tuple of int or None
        The least-loss node that meets the target (None when no node does).
    loss : float
        Its loss (NaN without an optimum).
    n_suppressed : int
        Records suppressed at the optimum.
    proven_optimal : bool
        No node of lower loss meets the target (every node was evaluated or pruned by a
        property that holds for the models and the measure).
    nodes : polars.DataFrame
        One row per evaluated node: its levels (a column per key), ``anonymous``,
        ``n_suppressed``, ``loss``.
    n_evaluated : int
        Nodes whose classes were computed.
    algorithm, models, measure : str
        What was searched, and how.
    suppression_limit : float
        The share of records that may be suppressed.
    seconds : float
        Wall-clock time of the search.
    lower_bound : float
        No node that meets the target loses less: the optimum's loss when proven optimal
        (``inf`` when proven that no node meets it), else the least lower bound of the nodes
        left unresolved (``-inf`` when the measure gives no bound).
    stopped : str or None
        ``"max_nodes"`` or ``"time_limit"`` when a budget cut the search, else None.
    """

    keys: tuple[str, ...]
    heights: tuple[int, ...]
    optimum: tuple[int, ...] | None
    loss: float
    n_suppressed: int
    proven_optimal: bool
    nodes: pl.DataFrame
    n_evaluated: int
    algorithm: str
    models: tuple[str, ...]
    measure: str
    suppression_limit: float
    seconds: float
    lower_bound: float = math.nan
    stopped: str | None = None

    @property
    def n_nodes(self) -> int:
        """Nodes of the lattice."""
        return math.prod(h + 1 for h in self.heights)

    def to_frame(self) -> pl.DataFrame:
        """The evaluated nodes (see ``nodes``)."""
        return self.nodes

    def summary(self) -> Summary:
        """The search in a few rows."""
        optimum = (
            "none meets the target"
            if self.optimum is None
            else ", ".join(f"{k}={v}" for k, v in zip(self.keys, self.optimum, strict=True))
        )
        return Summary(
            title="Lattice search",
            rows=(
                ("target", " and ".join(self.models)),
                ("suppression limit", f"{self.suppression_limit:.2%}"),
                ("loss measure", self.measure),
                ("optimum", optimum),
                ("loss", self.loss),
                ("records suppressed", self.n_suppressed),
                ("proven optimal", self.proven_optimal),
                ("lower bound", self.lower_bound),
                ("nodes evaluated", f"{self.n_evaluated} of {self.n_nodes}"),
                ("algorithm", self.algorithm),
                ("seconds", round(self.seconds, 3)),
            ),
        )


def search_lattice(
    data: LatticeData,
    models: Sequence[PrivacyModel],
    measure: LossMeasure,
    *,
    suppression_limit: float = 0.0,
    algorithm: str = "flash",
    max_nodes: int | None = None,
    time_limit: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """The least-loss node of ``data``'s lattice that meets every model.

    Ties in loss go to the node first in lexicographic order of levels, whatever the algorithm.
    ``"flash"`` prunes by predictive tagging where every model is monotone for the suppression
    setting (``monotone`` without suppression, ``monotone_with_suppression`` with a limit), by
    the measure's monotonicity and by its ``lower_bound``; the nodes it cannot prune it
    evaluates, so its result is the exhaustive search's.  ``max_nodes`` (nodes evaluated) and
    ``time_limit`` (seconds) cut ``"flash"`` and ``"heuristic"``: the best node found is
    returned, ``proven_optimal`` False, with ``lower_bound``.  ``progress(done, total)`` is
    called every few evaluated nodes with the nodes decided so far (evaluated, tagged or
    pruned) out of the lattice's, and once at the end with ``done == total``.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import Height, KAnonymity, LatticeData
    >>> df = pl.DataFrame({"age": [31, 35, 47, 48], "sex": ["f", "m", "f", "f"]})
    >>> age = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"),
    ...        ("48", "40-49", "*")]
    >>> data = LatticeData.build(df, {"age": age, "sex": [("f", "*"), ("m", "*")]})
    >>> result = search_lattice(data, [KAnonymity(2)], Height())
    >>> result.optimum, result.proven_optimal, result.n_evaluated < data.n_nodes
    ((1, 1), True, True)
    """
    if algorithm not in ALGORITHMS:
        raise ParameterError(f"algorithm must be one of {ALGORITHMS}.")
    if not models:
        raise ParameterError("give at least one privacy model.")
    suppression_budget(suppression_limit, data.n_records)  # checks the limit
    for name, value in (("max_nodes", max_nodes), ("time_limit", time_limit)):
        if value is None:
            continue
        if algorithm == "exhaustive":
            raise ParameterError(
                f"{name} applies to the flash and heuristic searches; the exhaustive search "
                "evaluates every node."
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ParameterError(f"{name} must be a positive number (or None for no limit).")
    if algorithm == "exhaustive":
        return _exhaustive(
            data, models, measure, suppression_limit=suppression_limit, progress=progress
        )
    start = time.perf_counter()
    search = Search(
        data,
        models,
        measure,
        suppression_limit=suppression_limit,
        max_nodes=None if max_nodes is None else int(max_nodes),
        time_limit=time_limit,
        progress=progress,
    )
    search.run(search.flash if algorithm == "flash" else search.heuristic)
    proven = not search.unresolved().any()
    lattice = search.lattice
    rows = sorted(search.rows)  # by id: lexicographic order of levels, as the exhaustive search
    levels = lattice.levels_of_many(np.array([r[0] for r in rows], dtype=np.int64))
    nodes = _node_frame(
        data.keys, levels, [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
    )
    best = search.best
    return SearchResult(
        keys=data.keys,
        heights=data.heights,
        optimum=None if best is None else lattice.levels_of(best[1]),
        loss=math.nan if best is None else best[0],
        n_suppressed=0 if best is None else best[2],
        proven_optimal=proven,
        nodes=nodes,
        n_evaluated=len(rows),
        algorithm=algorithm,
        models=tuple(m.describe() for m in models),
        measure=measure.describe(),
        suppression_limit=suppression_limit,
        seconds=time.perf_counter() - start,
        lower_bound=search.lower_bound(),
        stopped=None if proven else search.stopped,
    )


def _node_frame(
    keys: tuple[str, ...],
    levels: np.ndarray,
    anonymous: list[bool],
    n_suppressed: list[int],
    loss: list[float],
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **{k: levels[:, j].astype(np.int32) for j, k in enumerate(keys)},
            "anonymous": pl.Series(anonymous, dtype=pl.Boolean),
            "n_suppressed": pl.Series(n_suppressed, dtype=pl.Int64),
            "loss": pl.Series(loss, dtype=pl.Float64),
        }
    )


def _exhaustive(
    data: LatticeData,
    models: Sequence[PrivacyModel],
    measure: LossMeasure,
    *,
    suppression_limit: float,
    progress: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """Every node evaluated, in lexicographic order; the first least-loss node wins."""
    start = time.perf_counter()
    for model in models:
        model.prepare(data)
    measure.prepare(data)
    rows: list[tuple[tuple[int, ...], bool, int, float]] = []
    best: tuple[float, tuple[int, ...], int] | None = None
    for levels in itertools.product(*(range(h + 1) for h in data.heights)):
        result = evaluate_node(
            data, levels, models, suppression_limit=suppression_limit, measure=measure
        )
        rows.append((levels, result.anonymous, result.n_suppressed, result.loss))
        if result.anonymous and (best is None or result.loss < best[0]):
            best = (result.loss, levels, result.n_suppressed)
        if progress is not None and len(rows) % PROGRESS_EVERY == 0:
            progress(len(rows), data.n_nodes)
    if progress is not None:
        progress(data.n_nodes, data.n_nodes)
    nodes = _node_frame(
        data.keys,
        np.array([r[0] for r in rows], dtype=np.int64).reshape(len(rows), len(data.keys)),
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
    )
    return SearchResult(
        keys=data.keys,
        heights=data.heights,
        optimum=None if best is None else best[1],
        loss=math.nan if best is None else best[0],
        n_suppressed=0 if best is None else best[2],
        proven_optimal=True,
        nodes=nodes,
        n_evaluated=len(rows),
        algorithm="exhaustive",
        models=tuple(m.describe() for m in models),
        measure=measure.describe(),
        suppression_limit=suppression_limit,
        seconds=time.perf_counter() - start,
        lower_bound=math.inf if best is None else best[0],
    )
