"""Sample-based models: risk targets judged on the released records as a whole.

At a node, after the class-based models' suppression, a sample-based model that does not hold
suppresses the smallest released classes (ties: the class whose first record comes first) until
it holds, as ARX does (the least prefix of that order, found by bisection); the node fails if
that needs more records than the suppression limit leaves.  Classes generalised to the top of
every hierarchy are left out of the released classes (they are as good as suppressed) and do
not count as suppressed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from scipy import optimize, special

from sdckit._validation import check_choice, check_int, check_real
from sdckit.lattice.models import PrivacyModel

__all__ = ["AverageReidentificationRisk", "PopulationUniqueness", "SampleUniqueness"]


class _SampleBased(PrivacyModel):
    sample_based: ClassVar[bool] = True

    def __init__(self, threshold: float) -> None:
        self.threshold = check_real(threshold, "threshold", minimum=0.0, maximum=1.0)


class AverageReidentificationRisk(_SampleBased):
    """The average re-identification risk, ``classes / records``, is at most ``threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> AverageReidentificationRisk(0.5).holds(np.array([2, 2, 1]))  # 3 / 5 = 0.6
    False
    >>> AverageReidentificationRisk(0.5).holds(np.array([2, 2]))
    True
    """

    def holds(self, sizes: np.ndarray, weight_sums: np.ndarray | None = None) -> bool:
        if sizes.size == 0:
            return True
        # as ARX: 1 / (records / classes)
        return bool(1.0 / (float(sizes.sum()) / float(sizes.size)) <= self.threshold)

    def describe(self) -> str:
        return f"average re-identification risk <= {self.threshold:g}"


class SampleUniqueness(_SampleBased):
    """The share of released records that are unique in the sample is at most ``threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> SampleUniqueness(0.2).holds(np.array([3, 1, 1]))  # 2 of 5 records are unique
    False
    """

    def holds(self, sizes: np.ndarray, weight_sums: np.ndarray | None = None) -> bool:
        total = float(sizes.sum())
        if total == 0:
            return True
        return bool(float((sizes == 1).sum()) / total <= self.threshold)

    def describe(self) -> str:
        return f"sample uniqueness <= {self.threshold:g}"


UNIQUENESS_MODELS = ("dankar", "pitman", "snb", "zayatz")


def _one_sampled(sizes: np.ndarray, population: float, n: float) -> np.ndarray:
    """P(exactly one of a class's K population records is in a sample of n), hypergeometric.

    ``K n/N prod_{m=1}^{K-1} (N - m - n + 1) / (N - m)``: a running product, exact where the
    log-gamma form loses digits for a population of hundreds of millions.
    """
    top = int(sizes.max())
    m = np.arange(1, top, dtype=np.float64)
    ratio = np.concatenate([[1.0], np.cumprod((population - m - n + 1.0) / (population - m))])
    return sizes * (n / population) * ratio[sizes - 1]


def _zayatz(sizes: np.ndarray, population: float) -> float:
    """Zayatz (1991): expected population uniques from the sample's class sizes."""
    n = float(sizes.sum())
    u1 = float((sizes == 1).sum())
    values, freq = np.unique(sizes, return_counts=True)
    n_classes = float(sizes.size)
    hit = _one_sampled(values, population, n)
    temp = float(np.sum(freq / n_classes * hit))
    single = n / population
    return u1 * ((u1 / n_classes) * single / temp) / (n / population)


def _pitman_score(
    x: np.ndarray, sizes: np.ndarray, values: np.ndarray, freq: np.ndarray
) -> list[float]:
    """The two likelihood equations of Pitman's sampling formula in (theta, alpha)."""
    theta, alpha = x
    n = float(sizes.sum())
    i = np.arange(1, sizes.size, dtype=np.float64)
    many = values != 1
    d_theta = float(np.sum(1.0 / (theta + i * alpha))) - (
        special.digamma(n + theta) - special.digamma(theta + 1.0)
    )
    d_alpha = float(np.sum(i / (theta + i * alpha))) - float(
        np.sum(freq[many] * (special.digamma(values[many] - alpha) - special.digamma(1.0 - alpha)))
    )
    return [d_theta, d_alpha]


_PITMAN_RESTARTS = [(1000.0, -0.1), (100.0, 0.5), (10.0, 0.1), (10000.0, -0.5), (1.0, 0.9)]


def _pitman(sizes: np.ndarray, population: float) -> float:
    """Pitman's (Hoshino 2001) expected population uniques, ``G(t+1) / G(t+a) N^a``.

    (theta, alpha) solve the likelihood equations from the moment start that ARX uses; alpha
    is not bounded (a solution with theta < 0 or no solution gives NaN).  The same likelihood
    as :func:`sdckit.risk.uniqueness.pitman`, which bounds alpha to [0, 0.99]: at the boundary
    (few sample uniques) the unbounded root is what ARX finds.
    """
    n = float(sizes.sum())
    u = float(sizes.size)
    c1 = float((sizes == 1).sum())
    c2 = float((sizes == 2).sum()) or 1.0  # ARX: an overestimate when there are no pairs
    c = c1 * (c1 - 1.0) / c2
    denominator = 2.0 * c1 * u + c1 * c - n * c
    if denominator == 0.0:
        return math.nan
    theta0 = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / denominator
    alpha0 = (theta0 * (c1 - n) + (n - 1.0) * c1) / (n * u)
    values, freq = np.unique(sizes, return_counts=True)
    args = (sizes, values.astype(np.float64), freq.astype(np.float64))
    theta = alpha = math.nan
    # ARX's solver restarts from other points when the first start fails (theta must be >= 0);
    # a fixed list of restarts keeps the estimate deterministic
    for start in [(theta0, alpha0), *_PITMAN_RESTARTS]:
        with np.errstate(all="ignore"):
            root, _, ok, _ = optimize.fsolve(_pitman_score, start, args=args, full_output=True)
        if ok == 1 and np.all(np.isfinite(root)) and root[0] >= 0 and root[1] != 0:
            theta, alpha = float(root[0]), float(root[1])
            break
    if not math.isfinite(theta):
        return math.nan
    try:
        value = math.exp(math.lgamma(theta + 1.0) - math.lgamma(theta + alpha)) * population**alpha
    except (OverflowError, ValueError):
        return math.nan
    return value if 0.0 <= value <= population else math.nan


def _snb(sizes: np.ndarray, population: float) -> float:
    """The slide negative binomial model (Chen and Keller-McNulty 1998), ARX's equations."""
    f = float(sizes.sum()) / population
    c1 = float((sizes == 1).sum())
    c2 = float((sizes == 2).sum())
    values, freq = np.unique(sizes, return_counts=True)
    values = values.astype(np.float64)
    freq = freq.astype(np.float64)
    v1 = float(np.sum(values * f * f * (1 - f * f) ** (values - 1) * freq))
    base = (1 - f) ** values * freq
    v2 = float(np.sum(base * (1 + f) ** values - 1))
    v3 = float(np.sum(base))
    v4 = float(np.sum(values * f * (1 - f) ** (values - 1) * freq))
    k = sizes.size + c1 * (v1 / v2) * (v3 / v4) ** 2

    def equations(x: np.ndarray) -> list[float]:
        a, b = x
        d = (1 - f) * (1 - b)
        return [
            k * f * (b / (1 - d)) ** a * ((a * d) / (1 - d) + 1) - c1,
            k * a * b**a * f * f * (1 - b) / 2 * (1 - d) ** (a + 2) * (2 - (1 - a) * d) - c2,
        ]

    with np.errstate(all="ignore"):
        root, _, ok, _ = optimize.fsolve(equations, [1.0, 0.5], full_output=True)
    if ok != 1 or not np.all(np.isfinite(root)):
        return math.nan
    return float(k * root[1] ** root[0])


class PopulationUniqueness(_SampleBased):
    """The estimated share of the population that is unique is at most ``threshold``.

    ``model`` estimates the population uniques from the released classes' sizes and the
    ``population_size``: ``"zayatz"`` (Zayatz 1991), ``"pitman"`` (Hoshino 2001: Pitman's
    sampling formula fitted by maximum likelihood, then ``G(theta + 1) / G(theta + alpha)
    N^alpha``), ``"snb"`` (Chen and Keller-McNulty 1998) or ``"dankar"`` (Dankar et al.
    2012's rule: Pitman when at most 10% is sampled, else the smaller of Zayatz and SNB, SNB
    only when it has a solution).  An estimate that fails (no solution) counts as not
    holding, unless there are no sample uniques.  Monotone (without suppression) only for
    Zayatz, as in ARX.

    Examples
    --------
    >>> import numpy as np
    >>> model = PopulationUniqueness(0.01, population_size=10_000, model="zayatz")
    >>> # P(one sampled | K): 0.0012, 0.0023974, 0.0035922, 0.0059737 for K = 1, 2, 3, 5;
    >>> # 2 * (0.4 * 0.0012 / 0.0028727) / 0.0012
    >>> round(model.estimate(np.array([1, 1, 2, 3, 5])), 1)
    278.5
    """

    monotone_with_suppression: ClassVar[bool] = False

    def __init__(self, threshold: float, *, population_size: int, model: str = "dankar") -> None:
        super().__init__(threshold)
        self.population_size = check_int(population_size, "population_size", minimum=1)
        self.model = check_choice(model, "model", UNIQUENESS_MODELS)

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self.model == "zayatz"

    def estimate(self, sizes: np.ndarray) -> float:
        """Expected population uniques (NaN when the model has no solution)."""
        if not (sizes == 1).any():
            return 0.0
        population = float(self.population_size)
        if self.model == "zayatz":
            return _zayatz(sizes, population)
        if self.model == "pitman":
            return _pitman(sizes, population)
        if self.model == "snb":
            return _snb(sizes, population)
        if float(sizes.sum()) / population <= 0.1:
            # ARX's criterion applies the rule without its Zayatz fallback
            return _pitman(sizes, population)
        zayatz, snb = _zayatz(sizes, population), _snb(sizes, population)
        return zayatz if not math.isfinite(snb) or zayatz < snb else snb

    def holds(self, sizes: np.ndarray, weight_sums: np.ndarray | None = None) -> bool:
        if sizes.size == 0:
            return True
        uniques = self.estimate(sizes)
        share = uniques / self.population_size if math.isfinite(uniques) else 0.0
        if share > 0.0:
            return share <= self.threshold
        return not (sizes == 1).any()

    def describe(self) -> str:
        return f"population uniqueness <= {self.threshold:g} ({self.model})"
