"""The search of the generalisation lattice for the least-loss node that meets the target.

:func:`search_lattice` is the entry point; ``algorithm="exhaustive"`` evaluates every node and
is the reference the faster algorithms are tested against.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.lattice._check import evaluate_node
from sdckit.lattice._data import LatticeData
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel

__all__ = ["SearchResult", "search_lattice"]

ALGORITHMS = ("exhaustive",)


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
    algorithm: str = "exhaustive",
) -> SearchResult:
    """The least-loss node of ``data``'s lattice that meets every model.

    Ties in loss go to the node first in lexicographic order of levels.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import Height, KAnonymity, LatticeData
    >>> df = pl.DataFrame({"age": [31, 35, 47, 48], "sex": ["f", "m", "f", "f"]})
    >>> age = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"),
    ...        ("48", "40-49", "*")]
    >>> data = LatticeData.build(df, {"age": age, "sex": [("f", "*"), ("m", "*")]})
    >>> search_lattice(data, [KAnonymity(2)], Height()).optimum
    (1, 1)
    """
    if algorithm not in ALGORITHMS:
        raise ParameterError(f"algorithm must be one of {ALGORITHMS}.")
    if not models:
        raise ParameterError("give at least one privacy model.")
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
    nodes = pl.DataFrame(
        {
            **{k: [r[0][j] for r in rows] for j, k in enumerate(data.keys)},
            "anonymous": [r[1] for r in rows],
            "n_suppressed": [r[2] for r in rows],
            "loss": [r[3] for r in rows],
        },
        schema_overrides=dict.fromkeys(data.keys, pl.Int32),
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
        algorithm=algorithm,
        models=tuple(m.describe() for m in models),
        measure=measure.describe(),
        suppression_limit=suppression_limit,
        seconds=time.perf_counter() - start,
    )
