"""Decomposable log-linear models: closed-form fit, AIC/BIC, per-record uniqueness risk.

methods.md M5.2 and M5.3 (Takemura & Endo 2006).  For a decomposable model with cliques ``C``
and separators ``S`` (with multiplicity) the maximum-likelihood cell probability is
``p(x) = prod_C n_C(x_C) / (n prod_S n_S(x_S))``; it is evaluated only for the observed cells.
The maximised log-likelihood is ``sum_C sum n_C log n_C - sum_S sum n_S log n_S - n log n`` and
the number of free parameters ``sum_C |I_C| - sum_S |I_S| - 1``.  A sample unique with fitted
probability ``p`` is a population unique with probability ``(1 - p) ** (N - n)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
import numpy as np
import polars as pl

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk.graphical._margins import MarginTable, table_codes
from sdckit.risk.graphical.chordal import perfect_sequence
from sdckit.risk.uniqueness import population_size_of

__all__ = [
    "DecomposableFit",
    "DecomposableModel",
    "DecomposableRiskResult",
    "decomposable_risk",
    "fit_decomposable",
]

ParameterCount = Literal["full", "observed"]


@dataclass(frozen=True)
class DecomposableModel:
    """A decomposable model: key variables and the edges of a chordal graph over them.

    Attributes
    ----------
    variables : tuple of str
        The key variables (vertex ``j`` is ``variables[j]``).
    edges : frozenset of (int, int)
        Edges ``(u, v)`` with ``u < v``.
    """

    variables: tuple[str, ...]
    edges: frozenset[tuple[int, int]]

    def __post_init__(self) -> None:
        m = len(self.variables)
        for u, v in self.edges:
            if not (0 <= u < v < m):
                raise ParameterError(
                    "Model edges must be pairs (u, v) of vertex numbers with 0 <= u < v < m."
                )
        perfect_sequence(self.adjacency())  # raises for a non-chordal graph

    @classmethod
    def from_cliques(
        cls, variables: Sequence[str], cliques: Iterable[Iterable[str]]
    ) -> DecomposableModel:
        """The model whose graph has the given cliques, e.g. ``[("a","b"), ("b","c")]``.

        Examples
        --------
        >>> from sdckit.risk.graphical import DecomposableModel
        >>> DecomposableModel.from_cliques(["a", "b", "c"], [("a", "b"), ("b", "c")]).cliques
        (('a', 'b'), ('b', 'c'))
        """
        variables = tuple(variables)
        edges = set()
        for clique in cliques:
            members = []
            for name in clique:
                if name not in variables:
                    raise ParameterError(
                        f"The model clique names {name!r}, which is not a key variable; use "
                        "names from the keys."
                    )
                members.append(variables.index(name))
            edges.update(itertools.combinations(sorted(set(members)), 2))
        return cls(variables, frozenset(edges))

    @classmethod
    def independence(cls, variables: Sequence[str]) -> DecomposableModel:
        """The mutual-independence model (no edges)."""
        return cls(tuple(variables), frozenset())

    @classmethod
    def saturated(cls, variables: Sequence[str]) -> DecomposableModel:
        """The saturated model (complete graph)."""
        return cls(tuple(variables), frozenset(itertools.combinations(range(len(variables)), 2)))

    def adjacency(self) -> list[set[int]]:
        """Adjacency sets of the graph."""
        adj: list[set[int]] = [set() for _ in self.variables]
        for u, v in self.edges:
            adj[u].add(v)
            adj[v].add(u)
        return adj

    def to_networkx(self) -> nx.Graph:
        """The graph, with the variable names as vertices."""
        graph = nx.Graph()
        graph.add_nodes_from(self.variables)
        graph.add_edges_from((self.variables[u], self.variables[v]) for u, v in self.edges)
        return graph

    @property
    def clique_indices(self) -> list[tuple[int, ...]]:
        """Maximal cliques as vertex numbers, in a perfect sequence."""
        return perfect_sequence(self.adjacency())[0]

    @property
    def separator_indices(self) -> list[tuple[int, ...]]:
        """Separators as vertex numbers, with multiplicity (empty ones included)."""
        return perfect_sequence(self.adjacency())[1]

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        """Maximal cliques as variable names, in a perfect sequence."""
        return tuple(tuple(self.variables[v] for v in c) for c in self.clique_indices)

    @property
    def separators(self) -> tuple[tuple[str, ...], ...]:
        """Separators as variable names, with multiplicity."""
        return tuple(tuple(self.variables[v] for v in s) for s in self.separator_indices)

    def formula(self) -> str:
        """The generators in the usual notation, e.g. ``[a,b][b,c]``."""
        return "".join("[" + ",".join(c) + "]" for c in self.cliques)

    def __str__(self) -> str:
        return self.formula()


def _as_model(model: Any, variables: tuple[str, ...]) -> DecomposableModel:
    if isinstance(model, DecomposableModel):
        if model.variables != variables:
            raise ParameterError(
                "The 'model' parameter is over other variables than the keys; build it over "
                "the key variables in the same order."
            )
        return model
    if isinstance(model, str):
        check_choice(model, "model", ("independence", "saturated"))
        if model == "independence":
            return DecomposableModel.independence(variables)
        return DecomposableModel.saturated(variables)
    if isinstance(model, nx.Graph):
        edges = []
        for a, b in model.edges:
            if a not in variables or b not in variables:
                raise ParameterError(
                    "The 'model' graph has a vertex that is not a key variable; name its "
                    "vertices after the keys."
                )
            u, v = sorted((variables.index(a), variables.index(b)))
            edges.append((u, v))
        return DecomposableModel(variables, frozenset(edges))
    try:
        return DecomposableModel.from_cliques(variables, model)
    except TypeError:
        raise ParameterError(
            "The 'model' parameter must be a DecomposableModel, 'independence', 'saturated', "
            "a networkx graph over the keys, or a list of cliques (lists of key names)."
        ) from None


def _dimension(table: MarginTable, model: DecomposableModel, parameters: str) -> float:
    size = table.size if parameters == "full" else table.nonzero
    total = sum(size(c) for c in model.clique_indices)
    total -= sum(size(s) for s in model.separator_indices)
    return float(total - 1)


def _loglik(table: MarginTable, model: DecomposableModel) -> float:
    value = sum(table.xlogx(c) for c in model.clique_indices)
    value -= sum(table.xlogx(s) for s in model.separator_indices)
    return float(value - table.n * np.log(table.n))


@dataclass(frozen=True)
class DecomposableFit:
    """Fit of one decomposable model.

    Attributes
    ----------
    model : DecomposableModel
    loglik : float
        Maximised multinomial log-likelihood (without the constant ``log n!/prod n(x)!``).
    n_parameters : float
        Free parameters (``"full"``: ``sum |I_C| - sum |I_S| - 1``; ``"observed"``: the same
        with only non-empty margin cells counted).
    aic, bic : float
        ``-2 loglik + 2 n_parameters`` and ``-2 loglik + log(n) n_parameters``.
    deviance : float
        ``G^2`` against the saturated model over the observed cells.
    n_records : int
    """

    model: DecomposableModel
    loglik: float
    n_parameters: float
    aic: float
    bic: float
    deviance: float
    n_records: int

    def summary(self) -> Summary:
        """Model, log-likelihood, parameters, AIC and BIC."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("cliques", self.model.formula()),
            ("log-likelihood", self.loglik),
            ("free parameters", self.n_parameters),
            ("AIC", self.aic),
            ("BIC", self.bic),
            ("deviance (G2)", self.deviance),
        ]
        return Summary("Decomposable model fit", rows)


def _fit(table: MarginTable, model: DecomposableModel, parameters: str) -> DecomposableFit:
    loglik = _loglik(table, model)
    dim = _dimension(table, model, parameters)
    saturated = table.xlogx(range(table.n_variables)) - table.n * np.log(table.n)
    return DecomposableFit(
        model=model,
        loglik=loglik,
        n_parameters=dim,
        aic=-2.0 * loglik + 2.0 * dim,
        bic=-2.0 * loglik + np.log(table.n) * dim,
        deviance=max(2.0 * (saturated - loglik), 0.0),
        n_records=int(table.n),
    )


def margin_table(md: Microdata) -> MarginTable:
    """The :class:`MarginTable` of the key variables of ``md`` (missing = extra level)."""
    codes, cards = table_codes(md.key_codes)
    return MarginTable(codes, cards)


def fit_decomposable(
    data: Any,
    *,
    keys: Any = None,
    model: Any = "independence",
    parameters: ParameterCount = "full",
) -> DecomposableFit:
    """Fit a decomposable model in closed form from its clique and separator margins.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a :class:`Microdata` with keys).  Missing
        values are a level of their own.
    model : DecomposableModel, "independence", "saturated", networkx.Graph or list of cliques
        The model; a graph or cliques must be over the key names and chordal.
    parameters : {"full", "observed"}, default "full"
        How to count free parameters: over all margin cells, or only the non-empty ones
        (a common adjustment for sparse tables).

    Returns
    -------
    DecomposableFit

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.graphical import fit_decomposable
    >>> df = pl.DataFrame({"a": [0, 0, 1, 1, 1], "b": [0, 1, 1, 1, 0], "c": [1, 1, 0, 0, 0]})
    >>> fit = fit_decomposable(df, keys=["a", "b", "c"], model=[("a", "b"), ("a", "c")])
    >>> fit.n_parameters, round(fit.aic, 4)
    (5.0, 23.3218)
    """
    md = as_microdata(data, keys=keys)
    check_choice(parameters, "parameters", ("full", "observed"))
    decomposable = _as_model(model, md.keys)
    return _fit(margin_table(md), decomposable, parameters)


@dataclass(frozen=True, repr=False)
class DecomposableRiskResult:
    """Per-record risk under a fitted decomposable model.

    Attributes
    ----------
    fit : DecomposableFit
    probability : numpy.ndarray
        Estimated cell probability ``p(i)`` of each record's key combination.
    fk : numpy.ndarray
        Sample frequency of each record's key combination.
    risk : numpy.ndarray
        ``(1 - p(i)) ** (N - n)`` for sample uniques (the probability of being a population
        unique), 0 for the other records.
    risk_poisson : numpy.ndarray
        The Poisson version ``exp(-(N - n) p(i))`` for sample uniques, 0 otherwise.
    population_size : int
    expected_population_uniques : float
        Sum of ``risk`` over the sample uniques.
    """

    fit: DecomposableFit
    probability: np.ndarray
    fk: np.ndarray
    risk: np.ndarray
    risk_poisson: np.ndarray
    population_size: int
    expected_population_uniques: float
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def sample_uniques(self) -> int:
        """Number of sample uniques."""
        return int(np.count_nonzero(self.fk == 1))

    def ranking(self, top: int | None = None) -> pl.DataFrame:
        """Sample uniques ranked by decreasing risk (rarest first): row position and figures.

        Columns ``row`` (0-based position in the data), ``probability``, ``expected_count``
        (``n p(i)``), ``risk``.
        """
        rows = np.flatnonzero(self.fk == 1)
        order = rows[np.lexsort((rows, self.probability[rows]))]
        if top is not None:
            order = order[: check_int(top, "top", minimum=0)]
        return pl.DataFrame(
            {
                "row": order,
                "probability": self.probability[order],
                "expected_count": self.probability[order] * self.fit.n_records,
                "risk": self.risk[order],
            }
        )

    def to_frame(self) -> Any:
        """One row per record: ``fk``, ``probability``, ``risk``, ``risk_poisson``."""
        return records_frame(
            {
                "fk": self.fk,
                "probability": self.probability,
                "risk": self.risk,
                "risk_poisson": self.risk_poisson,
            },
            self.frame_info,
        )

    def summary(self) -> Summary:
        """Model, AIC and the expected number of population uniques."""
        rows: list[tuple[str, Any]] = [
            ("records (n)", self.fit.n_records),
            ("population size (N)", self.population_size),
            ("model", self.fit.model.formula()),
            ("AIC", self.fit.aic),
            ("sample uniques", self.sample_uniques),
            ("expected population uniques among sample uniques", self.expected_population_uniques),
            ("sample uniques with risk > 0.5", int(np.count_nonzero(self.risk > 0.5))),
        ]
        return Summary("Per-record risk under a decomposable model", rows)

    def __repr__(self) -> str:
        return (
            f"DecomposableRiskResult(model={self.fit.model.formula()!r}, "
            f"expected_population_uniques={self.expected_population_uniques:.6g})"
        )


def cell_log_probability(table: MarginTable, model: DecomposableModel) -> np.ndarray:
    """``log p`` of each observed cell of ``table`` under the fitted model."""
    logp = np.full(len(table.cells), -np.log(table.n))
    for clique in model.clique_indices:
        ids, counts = table.cell_margin(clique)
        logp += np.log(counts[ids])
    for sep in model.separator_indices:
        if sep:
            ids, counts = table.cell_margin(sep)
            logp -= np.log(counts[ids])
        else:
            logp -= np.log(table.n)
    return logp


def decomposable_risk(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    model: Any = "independence",
    population_size: int | None = None,
    parameters: ParameterCount = "full",
) -> DecomposableRiskResult:
    """Per-record probability of population uniqueness under a decomposable model.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
    weight : str, optional
        Sampling weight; their sum gives ``N`` when ``population_size`` is not given.
    model : DecomposableModel, "independence", "saturated", networkx.Graph or list of cliques
        Typically ``search_decomposable(...).best.model``.
    population_size : int, optional
        Population size ``N``.
    parameters : {"full", "observed"}, default "full"
        Parameter count for the AIC reported with the fit.

    Returns
    -------
    DecomposableRiskResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.graphical import decomposable_risk
    >>> df = pl.DataFrame({"a": [0, 0, 1, 1, 1, 0], "b": [0, 1, 1, 1, 0, 0]})
    >>> res = decomposable_risk(df, keys=["a", "b"], population_size=60)
    >>> res.probability.round(3).tolist()
    [0.25, 0.25, 0.25, 0.25, 0.25, 0.25]
    >>> round(res.expected_population_uniques, 6)
    0.0
    """
    md = as_microdata(data, keys=keys, weight=weight)
    check_choice(parameters, "parameters", ("full", "observed"))
    decomposable = _as_model(model, md.keys)
    N = population_size_of(md, population_size)
    table = margin_table(md)
    fit = _fit(table, decomposable, parameters)
    cell_p = np.exp(cell_log_probability(table, decomposable))
    probability = cell_p[table.record_cell]
    fk = table.counts[table.record_cell]
    unique = fk == 1
    extra = N - md.n_records
    with np.errstate(divide="ignore"):
        log_miss = np.log1p(-np.minimum(probability, 1.0))
    risk = np.where(unique, np.exp(extra * log_miss) if extra else 1.0, 0.0)
    risk_poisson = np.where(unique, np.exp(-extra * probability), 0.0)
    return DecomposableRiskResult(
        fit=fit,
        probability=probability,
        fk=fk,
        risk=risk,
        risk_poisson=risk_poisson,
        population_size=N,
        expected_population_uniques=float(risk.sum()),
        frame_info=md.frame_info,
    )
