"""Sample-based models: risk targets judged on the released records as a whole.

At a node, after the class-based models' suppression, a sample-based model that does not hold
suppresses the smallest released classes (ties: the class whose first record comes first) until
it holds, as ARX does (the least prefix of that order, found by bisection); the node fails if
that needs more records than the suppression limit leaves.  Classes generalised to the top of
every hierarchy are left out of the released classes (they are as good as suppressed) and do
not count as suppressed.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sdckit._validation import check_real
from sdckit.lattice.models import PrivacyModel

__all__ = ["AverageReidentificationRisk", "SampleUniqueness"]


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

    def holds(self, sizes: np.ndarray) -> bool:
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

    def holds(self, sizes: np.ndarray) -> bool:
        total = float(sizes.sum())
        if total == 0:
            return True
        return bool(float((sizes == 1).sum()) / total <= self.threshold)

    def describe(self) -> str:
        return f"sample uniqueness <= {self.threshold:g}"
