"""Privacy models: the requirements a node of the lattice must meet.

A model is *class-based* (it judges each equivalence class on its own: k-anonymity,
l-diversity, t-closeness, delta-presence, k-map) or *sample-based* (it judges the released
records as a whole: average re-identification risk, sample and population uniqueness).  At a
node, the records of the classes that fail a class-based model are suppressed; the node meets
the target when at most the suppression limit's records are suppressed and every sample-based
model then holds (it may suppress more classes itself, within the same limit: see
:func:`sdckit.lattice.evaluate_node`).

With a research subset (:class:`~sdckit.lattice.LatticeData` ``subset``), the released records
are the subset's: a class's *count* is its records in the subset, its *population count* all
its records (ARX's ``count`` and ``pcount``).

``monotone`` says whether a node that meets the model without suppression implies that every
more general node meets it too (the search prunes with it); ``monotone_with_suppression`` says
the same under a suppression limit.  A model that is not monotone is still searched correctly:
the search then evaluates the nodes it cannot prune.  The flags are ARX's (Prasser et al.),
checked by the property tests in ``tests/lattice/test_models.py``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from sdckit._validation import check_choice, check_int, check_real
from sdckit.errors import ParameterError
from sdckit.lattice._data import LatticeData, NodeClasses

__all__ = ["DPresence", "KAnonymity", "KMap", "PrivacyModel", "counts"]


def counts(classes: NodeClasses) -> np.ndarray:
    """Released records per class: the research subset's when there is one, else all."""
    return classes.subset_sizes()


class PrivacyModel:
    """A requirement of the lattice search (the base of every model).

    Subclasses set ``sample_based`` and the monotonicity flags, and implement
    :meth:`class_passes` (class-based) or :meth:`holds` (sample-based).
    """

    sample_based: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    #: A class without released records that fails the model fails the node (it cannot be
    #: suppressed: delta-presence).
    blocks_when_empty: ClassVar[bool] = False
    #: Sample-based models that also take the classes' weight sums in :meth:`holds`.
    uses_weights: ClassVar[bool] = False

    @property
    def minimal_class_size(self) -> int:
        """The size below which a class fails whatever else holds (0: none)."""
        return 0

    def prepare(self, data: LatticeData) -> None:
        """Check the model against the data once, before the search (columns, subsets)."""

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        """Boolean per class: the class meets the model (class-based models)."""
        raise NotImplementedError

    def holds(self, sizes: np.ndarray, weight_sums: np.ndarray | None = None) -> bool:
        """Sample-based models: the model holds for released classes of these sizes (and
        these weight sums, for the models that set ``uses_weights``)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The model in a few words (``"5-anonymity"``)."""
        return type(self).__name__


class KAnonymity(PrivacyModel):
    """Every released class has at least ``k`` records (Sweeney 2002).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "m", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> KAnonymity(2).class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    def __init__(self, k: int) -> None:
        self.k = check_int(k, "k", minimum=1)

    @property
    def minimal_class_size(self) -> int:
        return self.k

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        return counts(classes) >= self.k

    def describe(self) -> str:
        return f"{self.k}-anonymity"


def _need_subset(data: LatticeData, model: str) -> None:
    if data.subset is None:
        raise ParameterError(
            f"{model} needs the research subset: build the LatticeData with subset= (the "
            "records that are released, marked True)."
        )


class DPresence(PrivacyModel):
    """The share of each class's population records that are released lies in ``[d_min, d_max]``.

    Delta-presence (Nergiz, Atzori and Clifton 2007): the data are the population table, the
    research ``subset`` the records released.  A class with no released record that fails
    (``d_min > 0``) cannot be suppressed, so the node fails (as in ARX).  Monotone without
    suppression (a merged class's share is a weighted mean of its parts'), not with it.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "m", "m"], "s": [True, False, True, True]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, subset="s")
    >>> DPresence(d_min=0.0, d_max=0.5).class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    monotone_with_suppression: ClassVar[bool] = False
    blocks_when_empty: ClassVar[bool] = True

    def __init__(self, *, d_min: float, d_max: float) -> None:
        self.d_min = check_real(d_min, "d_min", minimum=0.0, maximum=1.0)
        self.d_max = check_real(d_max, "d_max", minimum=0.0, maximum=1.0)
        if self.d_min > self.d_max:
            raise ParameterError("d_min must not exceed d_max (e.g. d_min=0.0, d_max=0.2).")

    def prepare(self, data: LatticeData) -> None:
        _need_subset(data, "delta-presence")

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        released = counts(classes).astype(np.float64)
        delta = released / classes.sizes
        return (delta >= self.d_min) & (delta <= self.d_max)

    def describe(self) -> str:
        return f"({self.d_min}, {self.d_max})-presence"


ESTIMATORS = ("poisson", "zero_truncated_poisson")


class KMap(PrivacyModel):
    """Every released class matches at least ``k`` records of the population.

    Against a population table (El Emam and Dankar 2008): the data are the population, the
    research ``subset`` the records released, and a class passes when it has at least ``k``
    population records.  Without a table, give ``population_size`` and an ``estimator``: the
    class size in the population is modelled as Poisson (or zero-truncated Poisson) with mean
    ``k * n / population_size``, and the model becomes k'-anonymity with the smallest k' that
    bounds the chance of fewer than ``k`` matches by ``significance`` (ARX's derivation; k' is
    at most ``k`` and ``n``).

    Examples
    --------
    >>> KMap(3, population_size=317_238_626, significance=0.01,
    ...      estimator="zero_truncated_poisson").derived_k(30_162)
    2
    """

    def __init__(
        self,
        k: int,
        *,
        population_size: int | None = None,
        significance: float = 0.01,
        estimator: str | None = None,
    ) -> None:
        self.k = check_int(k, "k", minimum=1)
        self.significance = check_real(significance, "significance", minimum=0.0, maximum=1.0)
        if (population_size is None) != (estimator is None):
            raise ParameterError(
                "k-map is either against the research subset (give neither population_size nor "
                "estimator) or estimated (give both, e.g. estimator='zero_truncated_poisson')."
            )
        self.population_size = (
            None
            if population_size is None
            else check_int(population_size, "population_size", minimum=1)
        )
        self.estimator = (
            None if estimator is None else check_choice(estimator, "estimator", ESTIMATORS)
        )
        self._derived: int | None = None

    @property
    def minimal_class_size(self) -> int:
        return 0 if self._derived is None else self._derived

    def derived_k(self, n_records: int) -> int:
        """The class size the estimate requires of a sample of ``n_records``."""
        if self.population_size is None:
            raise ParameterError("derived_k needs population_size and estimator.")
        lam = n_records / self.population_size * self.k
        threshold = 1.0 - self.significance
        p0 = math.exp(-lam)
        pmf = p0
        if self.estimator == "poisson":
            # the smallest c with P(X <= c) >= 1 - significance, capped at k; ARX then adds 1
            c, cdf = 0, pmf
            while cdf < threshold and c + 1 < self.k:
                c += 1
                pmf *= lam / c
                cdf += pmf
            derived = c + 2
        else:
            # conditional on the class occurring at all (X >= 1)
            c, cdf = 1, 0.0
            while cdf < threshold:
                pmf *= lam / c
                cdf += pmf / (1.0 - p0)
                c += 1
                if c >= self.k:
                    break
            derived = c
        return min(self.k, derived, n_records)

    def prepare(self, data: LatticeData) -> None:
        if self.population_size is None:
            _need_subset(data, "k-map against a population table")
        else:
            self._derived = self.derived_k(data.n_records)

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        if self.population_size is None:
            return classes.sizes >= self.k
        if self._derived is None:
            self.prepare(classes.data)
        return counts(classes) >= self.minimal_class_size

    def describe(self) -> str:
        if self.population_size is None:
            return f"{self.k}-map"
        return f"{self.k}-map (estimated, {self.estimator})"
