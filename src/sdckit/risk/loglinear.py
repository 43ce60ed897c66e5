"""Per-record risk from Poisson log-linear models of the key table (Skinner & Holmes 1998;
Skinner & Shlomo 2008), methods.md M4.3.

The sample counts ``f_k`` of the key table are modelled as Poisson with
``log mu_k = sum of u-terms`` of a hierarchical model (main effects, all two-way interactions, or
the user's terms).  With ``lambda_k = mu_k / pi_k`` the expected population count, a sample
unique is a population unique with probability ``exp(-(1 - pi_k) lambda_k)`` and
``E(1/F_k | f_k = 1) = (1 - exp(-v)) / v`` with ``v = (1 - pi_k) lambda_k``.  File measures:
``tau1`` and ``tau2``, the sums of these over the sample uniques.

The model is fitted from its sufficient statistics, the margins of its terms, and evaluated only
at the observed cells:

* decomposable models (main effects, any set of terms forming a chordal graph whose cliques are
  the terms) in closed form, ``mu(x) = prod_C n_C(x_C) / prod_S n_S(x_S)``, whatever the size of
  the full table;
* other hierarchical models (e.g. all two-way terms of three or more keys) by iterative
  proportional fitting over the full table, which is allowed up to ``max_cells`` cells.

Sampling fraction ``pi_k``: ``n / N`` without weights; with weights the cell-level
``f_k / sum of weights in the cell`` (so ``1 / w_i`` for a sample unique).  Missing key values are
a level of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_int, check_real
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk.graphical._margins import MarginTable, table_codes
from sdckit.risk.graphical.model import DecomposableModel, cell_log_probability
from sdckit.risk.uniqueness import population_size_of

__all__ = ["LogLinearRiskResult", "loglinear_risk"]


@dataclass(frozen=True, repr=False)
class LogLinearRiskResult:
    """Per-record risk of sample uniques under a Poisson log-linear model.

    Attributes
    ----------
    terms : tuple of tuple of str
        The maximal terms (generators) of the hierarchical model.
    method : str
        ``"closed form"`` (decomposable model) or ``"ipf"``.
    iterations : int
        IPF sweeps (0 for the closed form).
    fitted : numpy.ndarray
        Fitted expected sample count ``mu_k`` of each record's cell.
    sampling_fraction : numpy.ndarray
        ``pi_k`` of each record's cell.
    fk : numpy.ndarray
        Sample frequency of each record's cell.
    prob_population_unique : numpy.ndarray
        ``P(F = 1 | f = 1)`` for sample uniques, 0 for the other records.
    expected_inverse_frequency : numpy.ndarray
        ``E(1 / F | f = 1)`` for sample uniques, NaN for the other records.
    tau1, tau2 : float
        Sums over the sample uniques: expected population uniques, expected correct matches.
    population_size : int
    """

    terms: tuple[tuple[str, ...], ...]
    method: str
    iterations: int
    fitted: np.ndarray
    sampling_fraction: np.ndarray
    fk: np.ndarray
    prob_population_unique: np.ndarray
    expected_inverse_frequency: np.ndarray
    tau1: float
    tau2: float
    population_size: int
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def sample_uniques(self) -> int:
        """Number of sample uniques."""
        return int(np.count_nonzero(self.fk == 1))

    def formula(self) -> str:
        """The terms in the usual notation, e.g. ``[a,b][c]``."""
        return "".join("[" + ",".join(t) + "]" for t in self.terms)

    def to_frame(self) -> Any:
        """One row per record: ``fk``, ``fitted``, ``prob_population_unique``,
        ``expected_inverse_frequency``."""
        return records_frame(
            {
                "fk": self.fk,
                "fitted": self.fitted,
                "prob_population_unique": self.prob_population_unique,
                "expected_inverse_frequency": self.expected_inverse_frequency,
            },
            self.frame_info,
        )

    def summary(self) -> Summary:
        """Model, tau1 and tau2."""
        rows: list[tuple[str, Any]] = [
            ("records (n)", len(self.fk)),
            ("population size (N)", self.population_size),
            ("model", self.formula()),
            ("fitting", self.method),
            ("sample uniques", self.sample_uniques),
            ("tau1 (expected population uniques among sample uniques)", self.tau1),
            ("tau2 (expected correct matches of sample uniques)", self.tau2),
        ]
        return Summary("Log-linear model risk", rows)

    def __repr__(self) -> str:
        return f"LogLinearRiskResult(model={self.formula()!r}, tau1={self.tau1:.6g})"


def _terms(model: Any, keys: tuple[str, ...]) -> list[tuple[int, ...]]:
    m = len(keys)
    if isinstance(model, str):
        if model == "main_effects":
            raw = [(j,) for j in range(m)]
        elif model == "two_way":
            raw = list(itertools.combinations(range(m), 2)) if m > 1 else [(0,)]
        else:
            raise ParameterError(
                "The 'model' parameter must be 'main_effects', 'two_way' or a list of terms "
                f"(lists of key names); got {model!r}."
            )
    else:
        raw = []
        try:
            for term in model:
                names = (term,) if isinstance(term, str) else tuple(term)
                for name in names:
                    if name not in keys:
                        raise ParameterError(
                            f"The model term names {name!r}, which is not a key variable; use "
                            "names from the keys."
                        )
                raw.append(tuple(sorted({keys.index(name) for name in names})))
        except TypeError:
            raise ParameterError(
                "The 'model' parameter must be 'main_effects', 'two_way' or a list of terms."
            ) from None
        covered = {v for t in raw for v in t}
        raw += [(j,) for j in range(m) if j not in covered]  # every key keeps its main effect
    unique = {frozenset(t) for t in raw if t}
    maximal = [t for t in unique if not any(t < other for other in unique)]
    return sorted(tuple(sorted(t)) for t in maximal)


def _decomposable(terms: list[tuple[int, ...]], m: int) -> DecomposableModel | None:
    graph = nx.Graph()
    graph.add_nodes_from(range(m))
    for t in terms:
        graph.add_edges_from(itertools.combinations(t, 2))
    if not nx.is_chordal(graph):
        return None
    cliques = {frozenset(c) for c in nx.chordal_graph_cliques(graph)}
    if cliques != {frozenset(t) for t in terms}:
        return None  # not graphical (e.g. all two-way terms of a triangle)
    edges = frozenset(tuple(sorted(e)) for e in graph.edges)
    return DecomposableModel(tuple(str(j) for j in range(m)), edges)


def _ipf(
    codes: np.ndarray,
    cards: np.ndarray,
    terms: list[tuple[int, ...]],
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, int]:
    """Fitted counts at each record by IPF over the full table, and the number of sweeps."""
    shape = tuple(int(d) for d in cards)
    flat = np.ravel_multi_index(tuple(codes.T), shape)
    table = np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64).reshape(shape)
    fitted = np.full(shape, table.sum() / table.size)
    axes = set(range(len(shape)))
    targets = [table.sum(axis=tuple(sorted(axes - set(t))), keepdims=True) for t in terms]
    sweeps = 0
    for sweeps in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        worst = 0.0
        for t, target in zip(terms, targets, strict=True):
            current = fitted.sum(axis=tuple(sorted(axes - set(t))), keepdims=True)
            worst = max(worst, float(np.max(np.abs(current - target))))
            ratio = np.divide(target, current, out=np.zeros_like(target), where=current > 0)
            fitted *= ratio
        if worst < tol:
            break
    return fitted.reshape(-1)[flat], sweeps


def loglinear_risk(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    model: str | Sequence[Sequence[str]] = "main_effects",
    population_size: int | None = None,
    max_cells: int = 5_000_000,
    tol: float = 1e-8,
    max_iter: int = 1000,
) -> LogLinearRiskResult:
    """Risk of sample uniques under a Poisson log-linear model of the key table.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a :class:`Microdata` with keys).
    weight : str, optional
        Sampling weight: gives ``N`` (its sum) and the cell sampling fractions.
    model : "main_effects", "two_way" or list of terms, default "main_effects"
        The hierarchical model; terms are lists of key names, e.g. ``[["age", "sex"],
        ["region"]]`` (keys not named keep their main effect).
    population_size : int, optional
        Population size ``N`` (required without weights).
    max_cells : int, default 5,000,000
        Largest full table for which a non-decomposable model is fitted by IPF.
    tol : float, default 1e-8
        IPF stops when every fitted margin is within ``tol`` of the observed one.
    max_iter : int, default 1000
        Maximum number of IPF sweeps.

    Returns
    -------
    LogLinearRiskResult

    Raises
    ------
    InfeasibleError
        A non-decomposable model whose full table has more than ``max_cells`` cells.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.loglinear import loglinear_risk
    >>> df = pl.DataFrame({"a": [0, 0, 0, 1, 1, 2], "b": [0, 1, 1, 0, 1, 0]})
    >>> res = loglinear_risk(df, keys=["a", "b"], population_size=60)
    >>> res.fitted.round(4).tolist()
    [1.5, 1.5, 1.5, 1.0, 1.0, 0.5]
    >>> round(res.tau1, 4)
    0.0114
    """
    md = as_microdata(data, keys=keys, weight=weight)
    max_cells = check_int(max_cells, "max_cells", minimum=1)
    tol = check_real(tol, "tol", minimum=0.0, min_inclusive=False)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    N = population_size_of(md, population_size)
    codes, cards = table_codes(md.key_codes)
    m = len(md.keys)
    terms = _terms(model, md.keys)
    table = MarginTable(codes, cards)
    fk = table.counts[table.record_cell]
    decomposable = _decomposable(terms, m)
    if decomposable is not None:
        cell_mu = table.n * np.exp(cell_log_probability(table, decomposable))
        fitted, method, iterations = cell_mu[table.record_cell], "closed form", 0
    else:
        n_cells = float(np.prod(cards.astype(np.float64)))
        if n_cells > max_cells:
            raise InfeasibleError(
                f"The model is not decomposable and its full table has {n_cells:.3g} cells "
                f"(more than max_cells={max_cells}); choose decomposable terms (for example "
                "from sdckit.risk.graphical.search_decomposable), fewer keys, or raise max_cells."
            )
        fitted, iterations = _ipf(codes, cards, terms, tol, max_iter)
        method = "ipf"
    return _risk(md, N, terms, method, iterations, fitted, fk, table.record_cell)


def _risk(
    md: Microdata,
    N: int,
    terms: list[tuple[int, ...]],
    method: str,
    iterations: int,
    fitted: np.ndarray,
    fk: np.ndarray,
    cell: np.ndarray,
) -> LogLinearRiskResult:
    weights = md.weights()
    if weights is None:
        pi = np.full(len(fk), md.n_records / N)
    else:
        weight_sum = np.bincount(cell, weights=weights)[cell]
        pi = np.minimum(fk / weight_sum, 1.0)
    unique = fk == 1
    v = (1.0 - pi) * fitted / pi
    prob = np.where(unique, np.exp(-v), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.where(v > 1e-12, -np.expm1(-v) / v, 1.0 - v / 2.0)
    inverse = np.where(unique, inverse, np.nan)
    names = tuple(tuple(md.keys[j] for j in t) for t in terms)
    return LogLinearRiskResult(
        terms=names,
        method=method,
        iterations=iterations,
        fitted=fitted,
        sampling_fraction=pi,
        fk=fk,
        prob_population_unique=prob,
        expected_inverse_frequency=inverse,
        tau1=float(prob[unique].sum()),
        tau2=float(inverse[unique].sum()),
        population_size=N,
        frame_info=md.frame_info,
    )
