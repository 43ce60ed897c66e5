"""Search for a decomposable model by AIC or BIC: add or remove one edge while staying chordal.

methods.md M5.2 (Takemura & Endo's Algorithms 1 and 2).  The change in the criterion of adding
edge ``uv`` (or removing it) is computed locally: with ``S`` the common neighbours of ``u`` and
``v`` (the separator of the cliques the edge joins, or the unique clique containing it minus
``u, v``), the log-likelihood changes by ``H(S+u+v) + H(S) - H(S+u) - H(S+v)`` with
``H(A) = sum n_A log n_A``, and the number of parameters by ``(d_u - 1)(d_v - 1) prod_S d_s``
(or by the same combination of non-empty margin cells).  Only those four margins are read, each
computed once and cached.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_choice, check_int, check_seed
from sdckit.microdata import as_microdata
from sdckit.risk.graphical._margins import MarginTable
from sdckit.risk.graphical.chordal import _perfect_sequence, random_chordal_graph
from sdckit.risk.graphical.model import (
    DecomposableFit,
    DecomposableModel,
    _as_model,
    _fit,
    margin_table,
)

__all__ = ["ModelSearchResult", "search_decomposable"]

Criterion = Literal["aic", "bic"]


@dataclass(frozen=True)
class ModelSearchResult:
    """The best decomposable models met by the search.

    Attributes
    ----------
    models : tuple of DecomposableFit
        Distinct models, best first (the local optima of every start and their best
        neighbours).
    criterion : {"aic", "bic"}
    local_optima : tuple of DecomposableFit
        The local optimum reached from each start, in the order of the starts.
    n_moves : int
        Total number of edge moves made over all starts.
    """

    models: tuple[DecomposableFit, ...]
    criterion: str
    local_optima: tuple[DecomposableFit, ...]
    n_moves: int

    @property
    def best(self) -> DecomposableFit:
        """The model with the lowest criterion."""
        return self.models[0]

    def to_frame(self) -> pl.DataFrame:
        """One row per model: rank, model, n_parameters, loglik, aic and bic."""
        return pl.DataFrame(
            {
                "rank": np.arange(1, len(self.models) + 1),
                "model": [f.model.formula() for f in self.models],
                "n_parameters": [f.n_parameters for f in self.models],
                "loglik": [f.loglik for f in self.models],
                "aic": [f.aic for f in self.models],
                "bic": [f.bic for f in self.models],
            }
        )

    def summary(self) -> Summary:
        """The best model and its criterion."""
        best = self.best
        rows: list[tuple[str, Any]] = [
            ("best model", best.model.formula()),
            ("AIC", best.aic),
            ("BIC", best.bic),
            ("free parameters", best.n_parameters),
            ("starts", len(self.local_optima)),
            ("edge moves", self.n_moves),
            ("distinct local optima", len({f.model.edges for f in self.local_optima})),
        ]
        return Summary(f"Decomposable model search ({self.criterion.upper()})", rows)


def _local_change(
    table: MarginTable, adj: list[set[int]], u: int, v: int, parameters: str
) -> tuple[float, float]:
    """Gain in log-likelihood and in parameters of the edge ``uv`` (given it is a valid move)."""
    sep = adj[u] & adj[v]
    su, sv, suv = sep | {u}, sep | {v}, sep | {u, v}
    gain = table.xlogx(suv) + table.xlogx(sep) - table.xlogx(su) - table.xlogx(sv)
    size = table.size if parameters == "full" else table.nonzero
    ddim = size(suv) + size(sep) - size(su) - size(sv)
    return gain, ddim


def _toggle(adj: list[set[int]], u: int, v: int) -> None:
    if v in adj[u]:
        adj[u].discard(v)
        adj[v].discard(u)
    else:
        adj[u].add(v)
        adj[v].add(u)


def _edges(adj: list[set[int]]) -> frozenset[tuple[int, int]]:
    return frozenset((u, v) for u in range(len(adj)) for v in adj[u] if u < v)


def _local_search(
    table: MarginTable,
    edges: frozenset[tuple[int, int]],
    penalty: float,
    parameters: str,
    n_best: int,
    max_moves: int | None,
) -> tuple[frozenset[tuple[int, int]], int, list[tuple[float, frozenset[tuple[int, int]]]]]:
    """Greedy moves from ``edges``: the local optimum, moves made, best (criterion, edges) met."""
    m = table.n_variables
    adj: list[set[int]] = [set() for _ in range(m)]
    for u, v in edges:
        _toggle(adj, u, v)
    variables = tuple(str(j) for j in range(m))
    start = DecomposableModel(variables, _edges(adj))
    fit = _fit(table, start, parameters)
    current = -2.0 * fit.loglik + penalty * fit.n_parameters
    seen: dict[frozenset[tuple[int, int]], float] = {start.edges: current}
    moves = 0
    while max_moves is None or moves < max_moves:
        best_delta, best_pair = 0.0, None
        for u, v in itertools.combinations(range(m), 2):
            adding = v not in adj[u]
            _toggle(adj, u, v)
            valid = _perfect_sequence(adj) is not None
            _toggle(adj, u, v)
            if not valid:
                continue
            gain, ddim = _local_change(table, adj, u, v, parameters)
            delta = -2.0 * gain + penalty * ddim
            if not adding:
                delta = -delta
            neighbour = _edges(adj) ^ {(u, v)}
            seen.setdefault(neighbour, current + delta)
            if delta < best_delta - 1e-9:
                best_delta, best_pair = delta, (u, v)
        if best_pair is None:
            break
        _toggle(adj, *best_pair)
        current += best_delta
        moves += 1
    best = heapq.nsmallest(n_best, ((c, e) for e, c in seen.items()), key=lambda t: t[0])
    return _edges(adj), moves, best


def _worker(
    state: tuple[np.ndarray, np.ndarray, np.ndarray, dict, dict],
    starts: list[frozenset[tuple[int, int]]],
    penalty: float,
    parameters: str,
    n_best: int,
    max_moves: int | None,
) -> list[tuple[frozenset[tuple[int, int]], int, list[tuple[float, frozenset[tuple[int, int]]]]]]:
    table = MarginTable.from_state(state)
    return [_local_search(table, s, penalty, parameters, n_best, max_moves) for s in starts]


def search_decomposable(
    data: Any,
    *,
    keys: Any = None,
    start: Any = "independence",
    criterion: Criterion = "aic",
    restarts: int = 0,
    n_best: int = 5,
    parameters: Literal["full", "observed"] = "full",
    max_moves: int | None = None,
    density: float = 0.5,
    n_jobs: int = 1,
    seed: np.random.Generator | int | None = None,
) -> ModelSearchResult:
    """Find decomposable models with low AIC (or BIC) by greedy edge moves and restarts.

    From each start graph the search repeatedly makes the single edge addition or removal that
    keeps the graph chordal and lowers the criterion most, until none does (a local optimum).

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a :class:`Microdata` with keys).
    start : DecomposableModel, "independence", "saturated", graph or cliques
        The first start.
    criterion : {"aic", "bic"}, default "aic"
    restarts : int, default 0
        Further starts from random chordal graphs (Takemura & Endo's Algorithm 2).
    n_best : int, default 5
        Number of distinct models returned (local optima and the best neighbours evaluated).
    parameters : {"full", "observed"}, default "full"
        How free parameters are counted (see :func:`fit_decomposable`).
    max_moves : int, optional
        Stop each start after this many moves.
    density : float, default 0.5
        Edge density of the random start graphs.
    n_jobs : int, default 1
        Worker processes for the restarts; the result does not depend on it.
    seed : int or numpy.random.Generator, optional
        Seed of the random start graphs.

    Returns
    -------
    ModelSearchResult

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.risk.graphical import search_decomposable
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000); b = (a + rng.integers(0, 2, 2000)) % 3
    >>> c = rng.integers(0, 2, 2000)
    >>> df = pl.DataFrame({"a": a, "b": b, "c": c})
    >>> res = search_decomposable(df, keys=["a", "b", "c"], criterion="bic")
    >>> res.best.model.formula()
    '[a,b][c]'
    """
    md = as_microdata(data, keys=keys)
    check_choice(criterion, "criterion", ("aic", "bic"))
    check_choice(parameters, "parameters", ("full", "observed"))
    restarts = check_int(restarts, "restarts", minimum=0)
    n_best = check_int(n_best, "n_best", minimum=1)
    n_jobs = check_int(n_jobs, "n_jobs", minimum=1)
    if max_moves is not None:
        max_moves = check_int(max_moves, "max_moves", minimum=0)
    rng = check_seed(seed)
    variables = md.keys
    first = _as_model(start, variables)
    table = margin_table(md)
    penalty = 2.0 if criterion == "aic" else float(np.log(table.n))
    m = len(variables)
    starts = [first.edges]
    for _ in range(restarts):
        graph = random_chordal_graph(m, rng, density=density)
        starts.append(frozenset((min(u, v), max(u, v)) for u, v in graph.edges))
    args = (penalty, parameters, n_best, max_moves)
    if n_jobs == 1 or len(starts) == 1:
        outcomes = _worker_local(table, starts, *args)
    else:
        # the first start runs here and fills the margin cache the workers then share
        outcomes = _worker_local(table, starts[:1], *args)
        rest = starts[1:]
        chunks = [rest[i::n_jobs] for i in range(n_jobs)]
        state = table.state()
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            futures = [pool.submit(_worker, state, c, *args) for c in chunks if c]
            parts = [f.result() for f in futures]
        ordered: list[Any] = [None] * len(rest)
        for i, part in enumerate(parts):
            for k, out in enumerate(part):
                ordered[i + k * n_jobs] = out
        outcomes += ordered
    return _collect(table, variables, outcomes, criterion, parameters, n_best)


def _worker_local(
    table: MarginTable, starts: list[frozenset[tuple[int, int]]], *args: Any
) -> list[Any]:
    return [_local_search(table, s, *args) for s in starts]


def _collect(
    table: MarginTable,
    variables: tuple[str, ...],
    outcomes: Sequence[Any],
    criterion: str,
    parameters: str,
    n_best: int,
) -> ModelSearchResult:
    optima, candidates, moves = [], {}, 0
    for edges, n_moves, best in outcomes:
        moves += n_moves
        optima.append(edges)
        for value, e in best:
            candidates.setdefault(e, value)
    ranked = sorted(candidates, key=lambda e: (candidates[e], sorted(e)))[:n_best]
    fits = {e: _fit(table, DecomposableModel(variables, e), parameters) for e in {*ranked, *optima}}
    key = "aic" if criterion == "aic" else "bic"
    models = sorted(
        (fits[e] for e in ranked), key=lambda f: (getattr(f, key), sorted(f.model.edges))
    )
    return ModelSearchResult(
        models=tuple(models),
        criterion=criterion,
        local_optima=tuple(fits[e] for e in optima),
        n_moves=moves,
    )
