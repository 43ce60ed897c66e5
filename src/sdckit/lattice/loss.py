"""Information-loss measures of a node: what the search minimises.

A measure scores a node from its classes and the classes suppressed there.  ``monotone`` says
whether a more general node never scores lower (the search then skips the successors of an
anonymous node); :meth:`LossMeasure.lower_bound` bounds the score of a node and of every node
above it, before its classes are computed (the search skips nodes whose bound cannot beat the
best found).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sdckit.lattice._data import LatticeData, NodeClasses

__all__ = ["Height", "LossMeasure"]


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
