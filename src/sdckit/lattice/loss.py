"""Information-loss measures of a node: what the search minimises.

A measure scores a node from its classes and the classes suppressed there.  ``monotone`` says
whether a more general node never scores lower, whatever the suppression (the search then skips
the successors of an anonymous node); :meth:`LossMeasure.lower_bound` bounds the score of a
node and of every node above it, before its classes are computed (the search skips nodes whose
bound cannot beat the best found).

The measures are ARX's (``org.deidentifier.arx.metric.v2``), written from their definitions:
with ``gs_factor`` g weighting generalisation against suppression, the generalisation factor is
``1`` for g <= 0.5 else ``2 (1 - g)`` and the suppression factor ``2 g`` for g < 0.5 else ``1``;
per-key values are truncated to 10 decimals as ARX does.  With a research subset, the released
records are the subset's.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from sdckit._validation import check_real
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.models import counts

__all__ = [
    "AECS",
    "Discernibility",
    "Height",
    "KLDivergence",
    "Loss",
    "LossMeasure",
    "NonUniformEntropy",
    "Precision",
    "SuppressedAndRecoded",
]

_DIGITS = 1e10


def _truncate(value: float) -> float:
    """ARX keeps 10 decimals of each per-key loss (floor)."""
    return math.floor(value * _DIGITS) / _DIGITS


def _factors(gs_factor: float) -> tuple[float, float]:
    """(generalisation factor, suppression factor) of ARX's gs factor."""
    g = 1.0 if gs_factor <= 0.5 else 1.0 - 2.0 * (gs_factor - 0.5)
    s = 2.0 * gs_factor if gs_factor < 0.5 else 1.0
    return g, s


def _released_total(data: LatticeData) -> int:
    return int(data.subset.sum()) if data.subset is not None else data.n_records


def _level0_counts(data: LatticeData, j: int) -> np.ndarray:
    """Released records per level-0 value of key ``j``."""
    column = data.base[:, j] if data.subset is None else data.base[data.subset, j]
    return np.bincount(column, minlength=data.maps[j].shape[1]).astype(np.float64)


class LossMeasure:
    """The base of every loss measure."""

    monotone: ClassVar[bool] = True

    def prepare(self, data: LatticeData) -> None:
        """Precompute what the measure needs from the data (per-level losses, entropies)."""

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        """The loss at a node; ``suppressed`` marks the suppressed classes."""
        raise NotImplementedError

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        """A bound below the loss of ``levels`` and of every more general node."""
        return -np.inf

    def class_order(self, classes: NodeClasses) -> np.ndarray | None:
        """A per-class tie-break among classes of one size when a risk model suppresses."""
        return None

    def describe(self) -> str:
        """The measure's name."""
        return type(self).__name__


class Height(LossMeasure):
    """The sum of the levels (ARX's "height"), whatever is suppressed.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "m", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> Height().loss(data.classes((1,)), np.zeros(1, dtype=bool))
    1.0
    """

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        return float(sum(classes.levels))

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        return float(sum(levels))


class NonUniformEntropy(LossMeasure):
    """Non-uniform entropy (de Waal and Willenborg 1999; ARX's precomputed entropy).

    Per key, ``g * sum over released records of log2(N(generalised value) / N(original))``
    with ``N`` the released records of a value, summed over keys.  ``monotone=True`` ignores
    suppression (ARX's monotonic variant); ``monotone=False`` adds, per key, ``s`` times the
    entropy of the suppressed records' generalised values (``sum n_v log2(S / n_v)``, ``S``
    records suppressed).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> top = data.classes((1,))  # f: 3 log2(4/3), m: log2(4)
    >>> round(NonUniformEntropy().loss(top, np.zeros(1, dtype=bool)), 4)
    3.2451
    """

    def __init__(self, *, monotone: bool = True, gs_factor: float = 0.5) -> None:
        self._monotone = bool(monotone)
        self.gs_factor = check_real(gs_factor, "gs_factor", minimum=0.0, maximum=1.0)
        self._levels: list[np.ndarray] = []

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self._monotone

    def prepare(self, data: LatticeData) -> None:
        self._levels = []
        for j, maps in enumerate(data.maps):
            card0 = _level0_counts(data, j)
            per_level = np.empty(maps.shape[0])
            for level in range(maps.shape[0]):
                card = np.bincount(maps[level], weights=card0)
                value = 0.0
                # sequential, as ARX sums (the same bits)
                for a, b in zip(card0.tolist(), card[maps[level]].tolist(), strict=True):
                    if a != 0.0:
                        value += a * (math.log(a / b) / math.log(2.0))
                per_level[level] = value
            self._levels.append(per_level)

    def _generalisation(self, levels: tuple[int, ...]) -> list[float]:
        g, _ = _factors(self.gs_factor)
        return [self._levels[j][lv] * g for j, lv in enumerate(levels)]

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        if not self._levels:
            self.prepare(classes.data)
        raw = self._generalisation(classes.levels)
        if not self._monotone:
            _, s = _factors(self.gs_factor)
            released = counts(classes)
            mask = suppressed & (released > 0)
            total = float(released[mask].sum())
            if total:
                for j in range(len(raw)):
                    per_value = np.bincount(classes.codes[mask, j], weights=released[mask])
                    for n in per_value[per_value > 0].tolist():
                        raw[j] += n * (math.log(n / total) / math.log(2.0)) * s
        return sum(_truncate(-v if v != 0.0 else v) for v in raw)

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        if not self._levels:
            self.prepare(data)
        return sum(_truncate(-v if v != 0.0 else v) for v in self._generalisation(levels))

    def describe(self) -> str:
        kind = "monotone" if self._monotone else "non-monotone"
        return f"non-uniform entropy ({kind}, gs {self.gs_factor:g})"


class Loss(LossMeasure):
    """ARX's loss (Iyengar 2002): per key, the mean share of the domain a released value covers.

    A value at a level covers the share of the hierarchy's values under it; per key,
    ``sum over classes (released: n g share; suppressed: n)``, normalised between
    ``g n / domain`` and ``n``, then the keys' geometric mean ``prod (1 + L_j)^(1/k) - 1``.
    Not monotone with suppression.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> Loss().loss(node, np.zeros(2, dtype=bool))  # shares 1/2: (4 * 0.5 - 2) / (4 - 2) = 0
    0.0
    """

    monotone: ClassVar[bool] = False

    def __init__(self, *, gs_factor: float = 0.5) -> None:
        self.gs_factor = check_real(gs_factor, "gs_factor", minimum=0.0, maximum=1.0)
        self._shares: list[np.ndarray] = []
        self._domains: list[int] = []
        self._tuples = 0.0
        self._card0: list[np.ndarray] = []

    def prepare(self, data: LatticeData) -> None:
        self._shares = []
        self._domains = []
        self._card0 = []
        for j, maps in enumerate(data.maps):
            n_rows = maps.shape[1]
            per_level = [np.bincount(m)[m] / n_rows for m in maps]
            self._shares.append(np.stack(per_level))  # (levels, level-0 codes)
            self._domains.append(n_rows)
            self._card0.append(_level0_counts(data, j))
        self._tuples = float(_released_total(data))

    def _aggregate(self, per_key: list[float]) -> float:
        g, _ = _factors(self.gs_factor)
        result = 1.0
        for j, value in enumerate(per_key):
            low = g * self._tuples / self._domains[j]
            span = self._tuples - low
            # a key of one value (or no released record) has nothing to lose: 0, not 0 / 0
            norm = max((value - low) / span, 0.0) if span > 0 else 0.0
            result *= (_truncate(norm) + 1.0) ** (1.0 / len(per_key))
        return result - 1.0

    def _class_shares(self, classes: NodeClasses) -> np.ndarray:
        """(classes, keys): the share each class's value covers."""
        data = classes.data
        first = np.full(classes.n_classes, classes.class_of.shape[0], dtype=np.int64)
        np.minimum.at(first, classes.class_of, np.arange(classes.class_of.shape[0]))
        return np.column_stack(
            [self._shares[j][lv][data.base[first, j]] for j, lv in enumerate(classes.levels)]
        )

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        if not self._shares:
            self.prepare(classes.data)
        g, s = _factors(self.gs_factor)
        released = counts(classes).astype(np.float64)
        share = released[:, None] * self._class_shares(classes)
        if s == 1.0:
            cost_suppressed = np.broadcast_to(released[:, None], share.shape)
        else:
            cost_suppressed = share + s * (released[:, None] - share)
        cost = np.where(suppressed[:, None], cost_suppressed, share * g)
        return self._aggregate(cost[released > 0].sum(axis=0).tolist())

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        if not self._shares:
            self.prepare(data)
        g, _ = _factors(self.gs_factor)
        per_key = [
            float((self._card0[j] * self._shares[j][lv]).sum()) * g for j, lv in enumerate(levels)
        ]
        return self._aggregate(per_key)

    def class_order(self, classes: NodeClasses) -> np.ndarray | None:
        # ARX orders classes of one size by their own loss (geometric mean of n * share)
        if not self._shares:
            self.prepare(classes.data)
        share = counts(classes)[:, None] * self._class_shares(classes)
        return np.prod((share + 1.0) ** (1.0 / share.shape[1]), axis=1) - 1.0

    def describe(self) -> str:
        return f"loss (gs {self.gs_factor:g})"


class KLDivergence(LossMeasure):
    """The Kullback-Leibler divergence of the released data from the original (Kifer and
    Gehrke 2006), as ARX computes it.

    A released class spreads its records evenly over the original key combinations it covers
    (the product over keys of the hierarchy values under its label); suppressed records spread
    over the whole domain.  Summed over released records ``r`` (as ARX, once per record, not
    per combination): ``p_r log2(p_r / q_r)``, ``p_r`` the share of ``r``'s original
    combination, ``q_r`` its class's share divided by the class's area.  Not monotone.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> KLDivergence().loss(node, np.zeros(2, dtype=bool))  # nothing generalised
    0.0
    """

    monotone: ClassVar[bool] = False

    def __init__(self) -> None:
        self._share: np.ndarray | None = None
        self._leaves: list[np.ndarray] = []
        self._domain = 1.0

    def prepare(self, data: LatticeData) -> None:
        n = float(_released_total(data))
        original = data.classes(tuple(0 for _ in data.keys))
        released = counts(original).astype(np.float64)
        self._share = released[original.class_of] / n
        self._leaves = [np.stack([np.bincount(m)[m] for m in maps]) for maps in data.maps]
        self._domain = float(np.prod([maps.shape[1] for maps in data.maps], dtype=np.float64))

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        data = classes.data
        if self._share is None:
            self.prepare(data)
        share = self._share
        if share is None:  # pragma: no cover - prepare sets it
            return math.nan
        n = float(_released_total(data))
        released = counts(classes).astype(np.float64)
        first = np.full(classes.n_classes, classes.class_of.shape[0], dtype=np.int64)
        np.minimum.at(first, classes.class_of, np.arange(classes.class_of.shape[0]))
        area = np.ones(classes.n_classes)
        for j, level in enumerate(classes.levels):
            area *= self._leaves[j][level][data.base[first, j]]
        outliers = float(released[suppressed].sum())
        out = np.where(suppressed, outliers / n / self._domain, released / n / area)
        rows = np.ones(data.n_records, dtype=bool) if data.subset is None else data.subset
        p = share[rows]
        q = out[classes.class_of[rows]]
        return float(np.sum(p * (np.log(p / q) / math.log(2.0))))

    def describe(self) -> str:
        return "KL divergence"


class Discernibility(LossMeasure):
    """The discernibility metric (Bayardo and Agrawal 2005).

    ``monotone=True`` is DM*: the sum of squared class sizes, suppressed or not;
    ``monotone=False`` is DM: a suppressed record costs the number of records instead.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> Discernibility().loss(node, np.array([False, True]))  # 3^2 + 4 * 1
    13.0
    """

    def __init__(self, *, monotone: bool = False) -> None:
        self._monotone = bool(monotone)

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self._monotone

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        released = counts(classes).astype(np.float64)
        if self._monotone:
            return float((released * released).sum())
        rows = float(_released_total(classes.data))
        return float(np.where(suppressed, rows * released, released * released).sum())

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        # every class has at least one record: sum n^2 >= sum n
        return float(_released_total(data))

    def describe(self) -> str:
        return "discernibility (DM*)" if self._monotone else "discernibility (DM)"


class AECS(LossMeasure):
    """The average equivalence class size (LeFevre et al. 2006).

    ``records / (released classes + 1 if any record is suppressed)`` (the suppressed records
    count as one class); with ``gs_factor``, released classes weigh the suppression factor and
    the suppressed class the generalisation factor, as ARX weighs them.  Not monotone.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> AECS().loss(node, np.array([False, True]))  # 4 records / (1 class + the suppressed)
    2.0
    """

    monotone: ClassVar[bool] = False

    def __init__(self, *, gs_factor: float = 0.5) -> None:
        self.gs_factor = check_real(gs_factor, "gs_factor", minimum=0.0, maximum=1.0)

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        g, s = _factors(self.gs_factor)
        released = counts(classes)
        present = released > 0
        kept_classes = float(np.count_nonzero(present & ~suppressed))
        any_suppressed = bool(np.any(present & suppressed))
        denominator = kept_classes * s + (g if any_suppressed else 0.0)
        return float(_released_total(classes.data)) / denominator

    def describe(self) -> str:
        return "average equivalence class size"


class Precision(LossMeasure):
    """Sweeney's precision: per key, the mean of level / height over released records.

    A suppressed record costs 1 (times the suppression factor); the keys' arithmetic mean.
    Not monotone with suppression.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> node = data.classes((0,))
    >>> Precision().loss(data.classes((1,)), np.zeros(1, dtype=bool))
    1.0
    """

    monotone: ClassVar[bool] = False

    def __init__(self, *, gs_factor: float = 0.5) -> None:
        self.gs_factor = check_real(gs_factor, "gs_factor", minimum=0.0, maximum=1.0)

    def _value(self, levels: tuple[int, ...], data: LatticeData, kept: float, gone: float) -> float:
        g, s = _factors(self.gs_factor)
        rows = float(_released_total(data))
        per_key = [
            ((kept * (lv / h if h else 0.0)) * g + gone * s) / rows
            for lv, h in zip(levels, data.heights, strict=True)
        ]
        return sum(per_key) / len(per_key)

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        released = counts(classes)
        gone = float(released[suppressed].sum())
        kept = float(released.sum()) - gone
        return self._value(classes.levels, classes.data, kept, gone)

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        g, s = _factors(self.gs_factor)
        # a suppressed record costs s >= g * level / height only when s >= g; else no bound
        if s < g:
            return -np.inf
        return self._value(levels, data, float(_released_total(data)), 0.0)

    def describe(self) -> str:
        return "precision"


class SuppressedAndRecoded(LossMeasure):
    """sdckit's plain measure: the share of records suppressed plus the share of key cells
    whose value the node's levels change (over all released records, suppressed or not).

    Between 0 and 2; the recoded part never falls going up the lattice, the suppressed part
    can, so it is not monotone; the recoded part is a lower bound.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "m", "f", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> m = SuppressedAndRecoded()
    >>> m.loss(data.classes((0,)), np.array([False, True]))  # 1 of 4 suppressed, none recoded
    0.25
    """

    monotone: ClassVar[bool] = False

    def __init__(self) -> None:
        self._changed: list[np.ndarray] = []
        self._total = 0.0

    def prepare(self, data: LatticeData) -> None:
        self._changed = []
        for j, maps in enumerate(data.maps):
            card0 = _level0_counts(data, j)
            labels = data.labels[j]
            base = np.asarray([labels[0][c] for c in maps[0]], dtype=object)
            # a value counts as recoded from the first level that changes its label on (so
            # the share never falls going up, even if a hierarchy repeats a label higher up)
            changed = np.zeros(maps.shape[1], dtype=bool)
            per_level = []
            for lv in range(maps.shape[0]):
                changed |= np.asarray([labels[lv][c] for c in maps[lv]], dtype=object) != base
                per_level.append(float(card0[changed].sum()))
            self._changed.append(np.asarray(per_level))
        self._total = float(_released_total(data))

    def lower_bound(self, levels: tuple[int, ...], data: LatticeData) -> float:
        if not self._changed:
            self.prepare(data)
        cells = sum(float(self._changed[j][lv]) for j, lv in enumerate(levels))
        return cells / (self._total * len(levels)) if self._total else 0.0

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        recoded = self.lower_bound(classes.levels, classes.data)
        released = counts(classes)
        return float(released[suppressed].sum()) / self._total + recoded if self._total else 0.0

    def describe(self) -> str:
        return "share suppressed + share of key cells recoded"
