"""Models of a sensitive attribute's distribution in each class: l-diversity and t-closeness.

Each takes the name of a sensitive attribute (listed in ``LatticeData.build(sensitive=...)``)
and judges a class by the counts of its released records' values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from sdckit._validation import check_choice, check_int, check_real
from sdckit.errors import ParameterError
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.models import PrivacyModel

__all__ = [
    "DistinctLDiversity",
    "EntropyLDiversity",
    "EqualDistanceTCloseness",
    "HierarchicalTCloseness",
    "OrderedDistanceTCloseness",
    "RecursiveCLDiversity",
]


def _histogram(classes: NodeClasses, attribute: str) -> np.ndarray:
    """Counts of each value of ``attribute`` per class, over the released records."""
    data = classes.data
    if attribute not in data.sensitive:
        raise ParameterError(
            f"{attribute!r} is not a sensitive attribute of the search; list it in sensitive=."
        )
    values = data.sensitive[attribute]
    width = len(data.sensitive_labels[attribute])
    index = classes.class_of * width + values
    weights = None if data.subset is None else data.subset.astype(np.float64)
    flat = np.bincount(index, weights=weights, minlength=classes.n_classes * width)
    return flat.reshape(classes.n_classes, width).astype(np.int64)


def _overall(data: LatticeData, attribute: str) -> np.ndarray:
    """The share of each value among all released records."""
    if attribute not in data.sensitive:
        raise ParameterError(
            f"{attribute!r} is not a sensitive attribute of the search; list it in sensitive=."
        )
    values = data.sensitive[attribute]
    width = len(data.sensitive_labels[attribute])
    if data.subset is not None:
        values = values[data.subset]
    return np.bincount(values, minlength=width) / max(len(values), 1)


class _Sensitive(PrivacyModel):
    def __init__(self, attribute: str) -> None:
        if not isinstance(attribute, str) or not attribute:
            raise ParameterError("attribute must name a sensitive attribute (a column name).")
        self.attribute = attribute

    def prepare(self, data: LatticeData) -> None:
        _overall(data, self.attribute)


class DistinctLDiversity(_Sensitive):
    """Every class has at least ``l`` distinct values of ``attribute`` (Machanavajjhala 2007).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "m", "m"], "dx": ["a", "b", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> DistinctLDiversity("dx", l=2).class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    def __init__(self, attribute: str, *, l: int) -> None:
        super().__init__(attribute)
        self.l = check_int(l, "l", minimum=1)

    @property
    def minimal_class_size(self) -> int:
        return self.l

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        return (_histogram(classes, self.attribute) > 0).sum(axis=1) >= self.l

    def describe(self) -> str:
        return f"distinct {self.l}-diversity of {self.attribute}"


def _grassberger(n: np.ndarray) -> np.ndarray:
    """Grassberger's (2003) entropy correction G(n), as ARX evaluates it.

    For n <= 100 the exact value at the even number n - n % 2 (G(1) for n = 1):
    G(1) = -gamma - ln 2, G(2m) = G(1) + 2 * sum_{i<=m} 1 / (2i - 1); above, the asymptotic
    series ln n + m (1/24 - m (7/960 - m 31/8064)) with m = 1 / (n/2)^2, n made even.
    """
    table = np.empty(51)
    table[0] = -np.euler_gamma - math.log(2.0)
    acc = table[0]
    for m in range(1, 51):
        acc += 2.0 / (2 * m - 1)
        table[m] = acc
    n = np.asarray(n, dtype=np.int64)
    even = n - n % 2
    small = table[np.minimum(even // 2, 50)]
    half = np.maximum(even // 2, 1).astype(np.float64)
    m = 1.0 / (half * half)
    large = np.log(np.maximum(even, 1)) + m * (1 / 24 - m * (7 / 960 - m * 31 / 8064))
    return np.where(n <= 100, small, large)


class EntropyLDiversity(_Sensitive):
    """The entropy of ``attribute`` in every class is at least ``log(l)``.

    ``estimator="shannon"`` uses the plug-in entropy, ``"grassberger"`` Grassberger's
    bias-corrected one (ARX's estimators): a class of ``n`` records with value counts ``f``
    passes when ``sum f psi(f) <= n (psi(n) - log l)``, ``psi = log`` or Grassberger's G.
    Monotone without suppression, not with it.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> EntropyLDiversity("dx", l=1.8).class_passes(data.classes((0,))).tolist()  # e^0.64 = 1.89
    [True, False]
    """

    monotone_with_suppression: ClassVar[bool] = False

    def __init__(self, attribute: str, *, l: float, estimator: str = "shannon") -> None:
        super().__init__(attribute)
        self.l = check_real(l, "l", minimum=1.0)
        self.estimator = check_choice(estimator, "estimator", ("shannon", "grassberger"))

    @property
    def minimal_class_size(self) -> int:
        return math.ceil(self.l)

    def _psi(self, n: np.ndarray) -> np.ndarray:
        if self.estimator == "shannon":
            return np.log(np.maximum(n, 1).astype(np.float64))
        return _grassberger(n)

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        hist = _histogram(classes, self.attribute)
        total = hist.sum(axis=1)
        bound = total * (self._psi(total) - math.log(self.l))
        terms = np.where(hist > 0, hist * self._psi(hist), 0.0)
        distinct = (hist > 0).sum(axis=1)
        # the whole sum; ARX stops at the first partial sum above the bound, which with
        # Grassberger's G(1) < 0 depends on its hash order of the values (not reproduced)
        return (distinct >= self.minimal_class_size) & (terms.sum(axis=1) <= bound)

    def describe(self) -> str:
        return f"entropy {self.l:g}-diversity of {self.attribute} ({self.estimator})"


class RecursiveCLDiversity(_Sensitive):
    """The most frequent value of every class is rarer than ``c`` times the rest's tail.

    With a class's value counts sorted decreasingly ``r1 >= r2 >= ... >= rm``, the class passes
    when ``m >= l`` and ``r1 < c (r_l + ... + r_m)``.  Monotone without suppression only.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> RecursiveCLDiversity("dx", c=3.0, l=2).class_passes(data.classes((0,))).tolist()  # 2 < 3
    [True, False]
    """

    monotone_with_suppression: ClassVar[bool] = False

    def __init__(self, attribute: str, *, c: float, l: int) -> None:
        super().__init__(attribute)
        self.c = check_real(c, "c", minimum=0.0, min_inclusive=False)
        self.l = check_int(l, "l", minimum=1)

    @property
    def minimal_class_size(self) -> int:
        return self.l

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        ranked = -np.sort(-_histogram(classes, self.attribute), axis=1)
        distinct = (ranked > 0).sum(axis=1)
        tail = ranked[:, self.l - 1 :].sum(axis=1) if ranked.shape[1] >= self.l else 0
        return (distinct >= self.l) & (ranked[:, 0] < self.c * tail)

    def describe(self) -> str:
        return f"recursive ({self.c:g}, {self.l})-diversity of {self.attribute}"


class _TCloseness(_Sensitive):
    monotone_with_suppression: ClassVar[bool] = False

    def __init__(self, attribute: str, *, t: float) -> None:
        super().__init__(attribute)
        self.t = check_real(t, "t", minimum=0.0, maximum=1.0)

    def _shares(self, classes: NodeClasses) -> tuple[np.ndarray, np.ndarray]:
        hist = _histogram(classes, self.attribute).astype(np.float64)
        total = np.maximum(hist.sum(axis=1, keepdims=True), 1.0)
        return hist / total, _overall(classes.data, self.attribute)


class EqualDistanceTCloseness(_TCloseness):
    """Every class's distribution of ``attribute`` is within ``t`` of the overall one.

    The distance is the earth mover's distance with all values one apart: half the L1
    distance of the two distributions (Li, Li and Venkatasubramanian 2007).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> # overall a 0.8, b 0.2; f: a 2/3, b 1/3 (distance 0.133); m: a 1 (distance 0.2)
    >>> EqualDistanceTCloseness("dx", t=0.15).class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        q, p = self._shares(classes)
        return 0.5 * np.abs(q - p).sum(axis=1) <= self.t

    def describe(self) -> str:
        return f"{self.t:g}-closeness of {self.attribute} (equal distance)"


def _value_order(labels: Sequence[str]) -> np.ndarray:
    """The codes in the order of their values: numeric when all are numbers, else as text."""
    try:
        keys: list[Any] = [float(v) for v in labels]
    except ValueError:
        keys = list(labels)
    return np.array(sorted(range(len(labels)), key=lambda i: keys[i]), dtype=np.int64)


class OrderedDistanceTCloseness(_TCloseness):
    """As :class:`EqualDistanceTCloseness`, with values ``|i - j| / (m - 1)`` apart in order.

    The earth mover's distance of ordered values: ``sum_i |sum_{j<=i} (q_j - p_j)| / (m - 1)``
    over the ``m`` values in their order (numbers numerically, text alphabetically, as ARX).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> OrderedDistanceTCloseness("dx", t=0.15).class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        q, p = self._shares(classes)
        order = _value_order(classes.data.sensitive_labels[self.attribute])
        m = len(order)
        moved = np.abs(np.cumsum(q[:, order] - p[order], axis=1)).sum(axis=1)
        return moved <= self.t * (m - 1.0)

    def describe(self) -> str:
        return f"{self.t:g}-closeness of {self.attribute} (ordered distance)"


class HierarchicalTCloseness(_TCloseness):
    """As :class:`EqualDistanceTCloseness`, with the ground distance of a value hierarchy.

    Two values are ``h / H`` apart, ``h`` the level of their lowest common ancestor in the
    ``hierarchy`` of ``attribute`` (rows: a value and its labels at levels 1..H).  The earth
    mover's distance is then ``sum over inner nodes N of level(N) / H * min(pos(N), neg(N))``
    where pos and neg sum the children's positive and negative extra mass (Li et al. 2007).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]}, sensitive=["dx"])
    >>> model = HierarchicalTCloseness("dx", t=0.15, hierarchy=[("a", "*"), ("b", "*")])
    >>> model.prepare(data)
    >>> model.class_passes(data.classes((0,))).tolist()
    [True, False]
    """

    def __init__(self, attribute: str, *, t: float, hierarchy: Any) -> None:
        super().__init__(attribute, t=t)
        rows = hierarchy.table() if hasattr(hierarchy, "table") else hierarchy
        self.rows = tuple(tuple(str(v) for v in row) for row in rows)
        if not self.rows or len({len(r) for r in self.rows}) != 1 or len(self.rows[0]) < 2:
            raise ParameterError(
                "hierarchy needs one row per value with a label at every level (at least 2)."
            )
        self._paths: np.ndarray | None = None

    def prepare(self, data: LatticeData) -> None:
        super().prepare(data)
        labels = data.sensitive_labels[self.attribute]
        where = {row[0]: i for i, row in enumerate(self.rows)}
        missing = [v for v in labels if v not in where]
        if missing:
            raise ParameterError(
                f"{len(missing)} value(s) of {self.attribute!r} are not in its hierarchy; add them."
            )
        height = len(self.rows[0]) - 1
        paths = np.empty((len(labels), height + 1), dtype=np.int64)
        for level in range(height + 1):
            codes: dict[str, int] = {}
            for v, label in enumerate(labels):
                paths[v, level] = codes.setdefault(self.rows[where[label]][level], len(codes))
        self._paths = paths

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        paths = self._paths
        if paths is None:
            self.prepare(classes.data)
            paths = self._paths if self._paths is not None else np.zeros((0, 0), np.int64)
        q, p = self._shares(classes)
        extra = q - p  # per class, per node of the current level (leaves first)
        height = paths.shape[1] - 1
        cost = np.zeros(q.shape[0])
        child = paths[:, 0]
        for level in range(1, height + 1):
            parent_of = np.zeros(int(child.max()) + 1, dtype=np.int64)
            parent_of[child] = paths[:, level]
            n_parents = int(paths[:, level].max()) + 1
            pos = np.zeros((q.shape[0], n_parents))
            neg = np.zeros((q.shape[0], n_parents))
            for c in range(extra.shape[1]):
                col = extra[:, c]
                pos[:, parent_of[c]] += np.maximum(col, 0.0)
                neg[:, parent_of[c]] += np.maximum(-col, 0.0)
            cost += level / height * np.minimum(pos, neg).sum(axis=1)
            extra = pos - neg
            child = paths[:, level]
        return cost <= self.t

    def describe(self) -> str:
        return f"{self.t:g}-closeness of {self.attribute} (hierarchical distance)"
