"""Privacy models: the requirements a node of the lattice must meet.

A model is *class-based* (it judges each equivalence class on its own: k-anonymity,
l-diversity, t-closeness, delta-presence, k-map) or *sample-based* (it judges the released
records as a whole: average re-identification risk, sample and population uniqueness).  At a
node, the records of the classes that fail a class-based model are suppressed; the node meets
the target when at most the suppression limit's records are suppressed and every sample-based
model then holds (it may suppress more classes itself, within the same limit: see
:func:`sdckit.lattice.evaluate_node`).

``monotone`` says whether a node that meets the model without suppression implies that every
more general node meets it too (the search prunes with it); ``monotone_with_suppression`` says
the same under a suppression limit.  A model that is not monotone is still searched correctly:
the search then evaluates the nodes it cannot prune.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sdckit._validation import check_int
from sdckit.lattice._data import LatticeData, NodeClasses

__all__ = ["KAnonymity", "PrivacyModel"]


class PrivacyModel:
    """A requirement of the lattice search (the base of every model).

    Subclasses set ``sample_based`` and the monotonicity flags, and implement
    :meth:`class_passes` (class-based) or :meth:`enforce` (sample-based).
    """

    sample_based: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True

    def prepare(self, data: LatticeData) -> None:
        """Check the model against the data once, before the search (columns, subsets)."""

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        """Boolean per class: the class meets the model (class-based models)."""
        raise NotImplementedError

    def enforce(self, classes: NodeClasses, kept: np.ndarray, budget: int) -> np.ndarray | None:
        """Sample-based models: the classes kept once the model holds, or None.

        ``kept`` marks the classes the class-based models left; ``budget`` is the number of
        records that may still be suppressed.  Return the (possibly smaller) kept mask, or None
        when the model cannot hold within the budget.
        """
        raise NotImplementedError

    def describe(self) -> str:
        """The model in a few words (``"5-anonymity"``)."""
        return type(self).__name__


class KAnonymity(PrivacyModel):
    """Every released class has at least ``k`` records.

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

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        return classes.sizes >= self.k

    def describe(self) -> str:
        return f"{self.k}-anonymity"
