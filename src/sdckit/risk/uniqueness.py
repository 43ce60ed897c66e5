"""Population uniqueness from random-partition and superpopulation models (methods.md M4.1, M4.2).

Three whole-file models estimate the probability that a sample unique (a key combination seen once
in the sample) is also unique in the population, and the expected number of population uniques
among the sample uniques:

* Poisson-Gamma (Bethlehem, Keller & Pannekoek 1990): cell probabilities Gamma(alpha, beta) with
  ``alpha * beta = 1 / K`` over ``K`` cells; estimated by moments or by maximum likelihood on the
  negative-binomial marginal of the cell counts (empty cells included).
  ``P(F = 1 | f = 1) = ((1 + n beta) / (1 + N beta)) ** (alpha + 1)``.
* Ewens and Pitman sampling formulae (Hoshino 2001), fitted by maximum likelihood on the
  frequencies of frequencies; ``P(F = 1 | f = 1) = Gamma(n + theta) Gamma(N + theta + alpha - 1)
  / (Gamma(N + theta) Gamma(n + theta + alpha - 1))`` (Ewens: ``alpha = 0``).

These models treat every sample unique alike: the probability is the same for all of them.  For
per-record risk see :mod:`sdckit.risk.loglinear` and :mod:`sdckit.risk.graphical`.  Missing key
values count as a category of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import optimize, special

from sdckit._codes import group_ids
from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata

__all__ = [
    "UniquenessModelResult",
    "ewens",
    "pitman",
    "poisson_gamma",
    "population_uniqueness",
]


@dataclass(frozen=True, repr=False)
class UniquenessModelResult:
    """Fitted whole-file uniqueness model.

    Attributes
    ----------
    model : str
        ``"poisson_gamma"``, ``"ewens"`` or ``"pitman"``.
    parameters : dict of str to float
        Fitted parameters (``alpha``, ``beta`` for Poisson-Gamma; ``theta`` and ``alpha`` for
        Ewens and Pitman).
    n_records : int
        Sample size ``n``.
    population_size : int
        Population size ``N``.
    n_cells : int or None
        Number of cells ``K`` of the key table (Poisson-Gamma only).
    sample_uniques : int
        Number of sample uniques ``u1``.
    prob_population_unique : float
        ``P(F = 1 | f = 1)``; NaN when the model does not fit (Poisson-Gamma under-dispersion).
    expected_population_uniques : float
        Expected number of population uniques among the sample uniques,
        ``sample_uniques * prob_population_unique``.
    fk : numpy.ndarray
        Sample frequency of each record's key combination.
    note : str
        Fitting remark (boundary solutions, under-dispersion), empty when none.
    """

    model: str
    parameters: dict[str, float]
    n_records: int
    population_size: int
    n_cells: int | None
    sample_uniques: int
    prob_population_unique: float
    expected_population_uniques: float
    fk: np.ndarray
    note: str = ""
    frame_info: FrameInfo | None = field(default=None, compare=False)

    def to_frame(self) -> Any:
        """One row per record: ``fk``, ``sample_unique``, ``prob_population_unique``.

        The probability is the model's common value for sample uniques and 0 for the others.
        """
        unique = self.fk == 1
        prob = np.where(unique, self.prob_population_unique, 0.0)
        return records_frame(
            {"fk": self.fk, "sample_unique": unique, "prob_population_unique": prob},
            self.frame_info,
        )

    def summary(self) -> Summary:
        """Fitted parameters and the uniqueness estimates."""
        rows: list[tuple[str, Any]] = [
            ("records (n)", self.n_records),
            ("population size (N)", self.population_size),
        ]
        if self.n_cells is not None:
            rows.append(("cells (K)", self.n_cells))
        rows += [(f"parameter {k}", float(v)) for k, v in self.parameters.items()]
        rows += [
            ("sample uniques", self.sample_uniques),
            ("P(population unique | sample unique)", self.prob_population_unique),
            ("expected population uniques among sample uniques", self.expected_population_uniques),
        ]
        notes = [self.note] if self.note else []
        return Summary(f"Population uniqueness: {self.model}", rows, notes)

    def __repr__(self) -> str:
        return (
            f"UniquenessModelResult(model={self.model!r}, "
            f"expected_population_uniques={self.expected_population_uniques:.6g})"
        )


# --------------------------------------------------------------------------- shared set-up
def population_size_of(md: Microdata, population_size: int | None) -> int:
    """``N``: the given population size, else the rounded sum of the weights."""
    n = md.n_records
    if population_size is None:
        weights = md.weights()
        if weights is None:
            raise ParameterError(
                "The 'population_size' parameter is needed for a file without sampling weights; "
                "pass population_size=N or declare a weight column."
            )
        population_size = round(float(weights.sum()))
        population_size = max(population_size, n)
    N = check_int(population_size, "population_size", minimum=1)
    if n > N:
        raise ParameterError(
            f"The 'population_size' parameter must be at least the number of records ({n}); "
            f"got {N}."
        )
    return N


def _cell_counts(md: Microdata) -> tuple[np.ndarray, np.ndarray]:
    """Per-record ``fk`` and the counts of the non-empty cells (missing = own category)."""
    gid, n_groups = group_ids(md.key_codes.codes)
    counts = np.bincount(gid, minlength=n_groups)
    return counts[gid].astype(np.float64), counts


def _frequency_of_frequencies(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct cell sizes ``j`` and the number ``u_j`` of cells of each size."""
    sizes, u = np.unique(counts, return_counts=True)
    return sizes.astype(np.float64), u.astype(np.float64)


# --------------------------------------------------------------------------- closed forms
def poisson_gamma_probability(alpha: float, beta: float, n: int, N: int) -> float:
    """``P(F = 1 | f = 1) = ((1 + n beta) / (1 + N beta)) ** (alpha + 1)``."""
    return float(np.exp((alpha + 1.0) * (np.log1p(n * beta) - np.log1p(N * beta))))


def pitman_probability(theta: float, alpha: float, n: int, N: int) -> float:
    """``P(F = 1 | f = 1)`` under Pitman's formula (Ewens: ``alpha = 0``); ``theta=inf`` gives 1."""
    if not np.isfinite(theta):
        return 1.0
    g = special.gammaln
    value = g(n + theta) + g(N + theta + alpha - 1.0) - g(N + theta) - g(n + theta + alpha - 1.0)
    return float(np.exp(value))


# --------------------------------------------------------------------------- Poisson-Gamma
def _pg_moments(counts: np.ndarray, n: int, K: int) -> tuple[float, float]:
    mean = n / K
    s2 = float(np.sum(counts.astype(np.float64) ** 2)) / K - mean**2
    beta = (K * s2 - n) / n**2
    if beta <= 0:
        return float("nan"), float("nan")
    return 1.0 / (K * beta), beta


def _pg_ml(counts: np.ndarray, n: int, K: int) -> tuple[float, float]:
    sizes, u = _frequency_of_frequencies(counts)
    sizes = np.append(sizes, 0.0)
    u = np.append(u, float(K - len(counts)))

    def negloglik(log_alpha: float) -> float:
        alpha = np.exp(log_alpha)
        nb = n / (K * alpha)  # n * beta with alpha * beta = 1 / K
        terms = (
            special.gammaln(alpha + sizes)
            - special.gammaln(alpha)
            + sizes * np.log(nb)
            - (alpha + sizes) * np.log1p(nb)
        )
        return -float(np.sum(u * terms))

    res = optimize.minimize_scalar(negloglik, bounds=(-25.0, 25.0), method="bounded")
    alpha = float(np.exp(res.x))
    return alpha, 1.0 / (K * alpha)


def poisson_gamma(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    population_size: int | None = None,
    n_cells: int | None = None,
    method: Literal["moments", "ml"] = "moments",
) -> UniquenessModelResult:
    """Poisson-Gamma model of Bethlehem, Keller & Pannekoek (1990).

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a :class:`Microdata` with keys).
    weight : str, optional
        Sampling weight; their sum gives ``N`` when ``population_size`` is not given.
    population_size : int, optional
        Population size ``N``.
    n_cells : int, optional
        Number of cells ``K`` (all possible key combinations, empty ones included).  Default: the
        product of the observed numbers of levels (missing counted as a level).
    method : {"moments", "ml"}, default "moments"
        Moment estimator (NaN results under under-dispersion) or maximum likelihood on the
        negative-binomial marginal of the ``K`` cell counts.

    Returns
    -------
    UniquenessModelResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.uniqueness import poisson_gamma
    >>> df = pl.DataFrame({"a": [1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8]})
    >>> res = poisson_gamma(df, keys="a", population_size=120, n_cells=20)
    >>> res.sample_uniques, round(res.parameters["alpha"], 4), round(res.prob_population_unique, 4)
    (6, 1.0588, 0.0507)
    """
    md = as_microdata(data, keys=keys, weight=weight)
    check_choice(method, "method", ("moments", "ml"))
    N = population_size_of(md, population_size)
    n = md.n_records
    fk, counts = _cell_counts(md)
    if n_cells is None:
        kc = md.key_codes
        card = kc.cardinalities + (kc.codes < 0).any(axis=0)
        K = int(np.prod(card.astype(np.float64)))
    else:
        K = check_int(n_cells, "n_cells", minimum=1)
    if len(counts) > K:
        raise ParameterError(
            f"The 'n_cells' parameter ({K}) is smaller than the number of observed key "
            f"combinations ({len(counts)}); give the number of all possible combinations."
        )
    alpha, beta = _pg_moments(counts, n, K) if method == "moments" else _pg_ml(counts, n, K)
    u1 = int(np.count_nonzero(counts == 1))
    note = ""
    if np.isnan(beta):
        prob = float("nan")
        note = "The cell counts are under-dispersed: the Poisson-Gamma model does not fit."
    else:
        prob = poisson_gamma_probability(alpha, beta, n, N)
    return UniquenessModelResult(
        model="poisson_gamma",
        parameters={"alpha": alpha, "beta": beta},
        n_records=n,
        population_size=N,
        n_cells=K,
        sample_uniques=u1,
        prob_population_unique=prob,
        expected_population_uniques=u1 * prob,
        fk=fk,
        note=note,
        frame_info=md.frame_info,
    )


# --------------------------------------------------------------------------- Ewens / Pitman
def _ewens_theta(n_classes: int, n: int) -> tuple[float, str]:
    """MLE of theta: solve ``K_n = theta (psi(theta + n) - psi(theta))``."""
    if n_classes >= n:
        return float("inf"), "Every record is unique: theta is infinite (boundary)."
    if n_classes <= 1:
        return 0.0, "A single key combination: theta is 0 (boundary)."

    def excess(log_theta: float) -> float:
        t = np.exp(log_theta)
        return float(t * (special.digamma(t + n) - special.digamma(t)) - n_classes)

    lo, hi = -30.0, 30.0
    while excess(hi) < 0:  # pragma: no cover - only for astronomically large n
        hi *= 2
    return float(np.exp(optimize.brentq(excess, lo, hi, xtol=1e-12))), ""


def _pitman_negloglik(params: np.ndarray, sizes: np.ndarray, u: np.ndarray, n: int) -> float:
    alpha, log_shift = params
    theta = np.exp(log_shift) - alpha
    n_classes = float(u.sum())
    i = np.arange(1, int(n_classes))
    g = special.gammaln
    ll = np.sum(np.log(theta + i * alpha)) - (g(theta + n) - g(theta + 1.0))
    ll += float(np.sum(u * (g(sizes - alpha) - g(1.0 - alpha))))
    return -float(ll)


def _pitman_fit(counts: np.ndarray, n: int) -> tuple[float, float, str]:
    sizes, u = _frequency_of_frequencies(counts)
    n_classes = len(counts)
    if n_classes >= n:
        return float("inf"), 0.0, "Every record is unique: theta is infinite (boundary)."
    if n_classes <= 1:
        return 0.0, 0.0, "A single key combination: theta is 0 (boundary)."
    theta0, _ = _ewens_theta(n_classes, n)
    best = None
    for a0 in (0.0, 0.5, 0.9):
        x0 = np.array([a0, np.log(theta0 + a0 + 1e-9)])
        res = optimize.minimize(
            _pitman_negloglik,
            x0,
            args=(sizes, u, n),
            method="L-BFGS-B",
            bounds=[(0.0, 0.99), (-30.0, 30.0)],
        )
        if best is None or res.fun < best.fun:
            best = res
    if best is None:  # pragma: no cover - the loop runs at least once
        raise RuntimeError("no Pitman fit was attempted")
    alpha = float(best.x[0])
    theta = float(np.exp(best.x[1]) - alpha)
    note = "alpha reached its bound 0.99: the Pitman fit is ill-posed." if alpha >= 0.989 else ""
    return theta, alpha, note


def _partition_result(
    md: Microdata, population_size: int | None, model: str
) -> UniquenessModelResult:
    N = population_size_of(md, population_size)
    n = md.n_records
    fk, counts = _cell_counts(md)
    if model == "ewens":
        theta, note = _ewens_theta(len(counts), n)
        alpha = 0.0
    else:
        theta, alpha, note = _pitman_fit(counts, n)
    prob = pitman_probability(theta, alpha, n, N)
    u1 = int(np.count_nonzero(counts == 1))
    return UniquenessModelResult(
        model=model,
        parameters={"theta": theta, "alpha": alpha},
        n_records=n,
        population_size=N,
        n_cells=None,
        sample_uniques=u1,
        prob_population_unique=prob,
        expected_population_uniques=u1 * prob,
        fk=fk,
        note=note,
        frame_info=md.frame_info,
    )


def ewens(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    population_size: int | None = None,
) -> UniquenessModelResult:
    """Ewens sampling-formula model (Hoshino 2001): ``P(F=1|f=1) = (n+theta-1)/(N+theta-1)``.

    ``theta`` is the maximum-likelihood estimate, the root of
    ``K_n = sum_{i<n} theta / (theta + i)`` with ``K_n`` the number of key combinations.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
    weight : str, optional
        Sampling weight; their sum gives ``N`` when ``population_size`` is not given.
    population_size : int, optional

    Returns
    -------
    UniquenessModelResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.uniqueness import ewens
    >>> df = pl.DataFrame({"a": [1, 1, 2, 3, 4, 4, 5, 6]})
    >>> res = ewens(df, keys="a", population_size=80)
    >>> round(res.parameters["theta"], 4), res.sample_uniques
    (9.2308, 4)
    """
    md = as_microdata(data, keys=keys, weight=weight)
    return _partition_result(md, population_size, "ewens")


def pitman(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    population_size: int | None = None,
) -> UniquenessModelResult:
    """Pitman sampling-formula model (Hoshino 2001), fitted by maximum likelihood.

    ``alpha`` is constrained to ``[0, 0.99]`` and ``theta > -alpha``.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
    weight : str, optional
        Sampling weight; their sum gives ``N`` when ``population_size`` is not given.
    population_size : int, optional

    Returns
    -------
    UniquenessModelResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.uniqueness import pitman
    >>> df = pl.DataFrame({"a": [1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8]})
    >>> res = pitman(df, keys="a", population_size=120)
    >>> res.sample_uniques
    6
    """
    md = as_microdata(data, keys=keys, weight=weight)
    return _partition_result(md, population_size, "pitman")


def population_uniqueness(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    population_size: int | None = None,
    n_cells: int | None = None,
) -> dict[str, UniquenessModelResult]:
    """All whole-file models side by side: Poisson-Gamma (moments and ML), Ewens, Pitman.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
    weight : str, optional
    population_size : int, optional
    n_cells : int, optional
        ``K`` for the Poisson-Gamma model (see :func:`poisson_gamma`).

    Returns
    -------
    dict of str to UniquenessModelResult
        Keyed ``"poisson_gamma"``, ``"poisson_gamma_ml"``, ``"ewens"``, ``"pitman"``.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.uniqueness import population_uniqueness
    >>> df = pl.DataFrame({"a": [1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8]})
    >>> sorted(population_uniqueness(df, keys="a", population_size=120))
    ['ewens', 'pitman', 'poisson_gamma', 'poisson_gamma_ml']
    """
    md = as_microdata(data, keys=keys, weight=weight)
    return {
        "poisson_gamma": poisson_gamma(md, population_size=population_size, n_cells=n_cells),
        "poisson_gamma_ml": poisson_gamma(
            md, population_size=population_size, n_cells=n_cells, method="ml"
        ),
        "ewens": ewens(md, population_size=population_size),
        "pitman": pitman(md, population_size=population_size),
    }
