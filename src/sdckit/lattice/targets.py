"""sdckit's own risk targets as models of the lattice search (the bounds of a release target).

The risk of a released class of ``f`` records with weight sum ``F`` is Benedetti-Franconi's
(:func:`sdckit.risk.individual.benedetti_franconi_risk`; ``1 / f`` without weights), as the
release check computes it.  :class:`IndividualRisk` bounds each class's risk (class-based);
:class:`GlobalRisk` bounds the expected re-identifications ``sum f r`` or the global risk
``100 sum f r / n`` (``n`` the released records, a suppressed record adding no risk) and
suppresses the smallest classes until it holds (sample-based, as ARX's risk models).

With weights, neither is monotone (merging two classes can raise the risk of the records of
one of them), so both say so and the search evaluates the nodes it cannot prune; without
weights both are (``1 / f`` never rises when classes merge).  Household risk needs households,
which the lattice data do not carry: it is not a model here.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from sdckit._validation import check_choice, check_real
from sdckit.errors import ParameterError
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.models import PrivacyModel, counts
from sdckit.risk.individual import benedetti_franconi_risk

__all__ = ["GlobalRisk", "IndividualRisk", "class_risk"]


def class_risk(sizes: np.ndarray, weight_sums: np.ndarray | None, method: str) -> np.ndarray:
    """The re-identification risk of each class (0 for an empty class).

    Examples
    --------
    >>> import numpy as np
    >>> class_risk(np.array([1, 4]), None, "approx").tolist()
    [1.0, 0.25]
    """
    risk = np.zeros(sizes.shape[0])
    present = sizes > 0
    f = sizes[present].astype(np.float64)
    if weight_sums is None:
        risk[present] = 1.0 / f
    else:
        F = np.maximum(weight_sums[present], f)  # the cap at 1 / f, as the release check
        risk[present] = benedetti_franconi_risk(f, F, method)  # type: ignore[arg-type]
    return risk


class IndividualRisk(PrivacyModel):
    """Every released class has a re-identification risk of at most ``max_risk``.
    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "m", "m"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> IndividualRisk(0.5).class_passes(data.classes((0,))).tolist()  # risk 1/f
    [False, True]
    """

    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False

    def __init__(self, max_risk: float, *, method: str = "approx") -> None:
        self.max_risk = check_real(max_risk, "max_risk", minimum=0.0, maximum=1.0)
        self.method = check_choice(method, "method", ("approx", "exact"))

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        weights = None if classes.data.weights is None else _released_weights(classes)
        return class_risk(counts(classes), weights, self.method) <= self.max_risk

    def describe(self) -> str:
        return f"individual risk <= {self.max_risk:g}"


def _released_weights(classes: NodeClasses) -> np.ndarray:
    data = classes.data
    if data.weights is None:
        return counts(classes).astype(np.float64)
    weights = data.weights if data.subset is None else data.weights * data.subset
    return np.bincount(classes.class_of, weights=weights, minlength=classes.n_classes)


class GlobalRisk(PrivacyModel):
    """The expected re-identifications, or the global risk in per cent, is at most a bound.

    Give ``max_global_risk_pct`` (``100 sum f r / n``), ``max_expected_reidentifications``
    (``sum f r``) or both.

    Examples
    --------
    >>> import numpy as np
    >>> GlobalRisk(max_expected_reidentifications=2.5).holds(np.array([1, 1, 2]))  # 1+1+1
    False
    """

    sample_based: ClassVar[bool] = True
    uses_weights: ClassVar[bool] = True
    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False

    def __init__(
        self,
        *,
        max_global_risk_pct: float | None = None,
        max_expected_reidentifications: float | None = None,
        method: str = "approx",
    ) -> None:
        if max_global_risk_pct is None and max_expected_reidentifications is None:
            raise ParameterError(
                "give max_global_risk_pct or max_expected_reidentifications (or both)."
            )
        self.max_global_risk_pct = (
            None
            if max_global_risk_pct is None
            else check_real(max_global_risk_pct, "max_global_risk_pct", minimum=0.0)
        )
        self.max_expected_reidentifications = (
            None
            if max_expected_reidentifications is None
            else check_real(
                max_expected_reidentifications, "max_expected_reidentifications", minimum=0.0
            )
        )
        self.method = check_choice(method, "method", ("approx", "exact"))
        self._n_released = 0

    def prepare(self, data: LatticeData) -> None:
        self._n_released = (
            int(data.subset.sum()) if data.subset is not None else int(data.n_records)
        )

    def holds(self, sizes: np.ndarray, weight_sums: np.ndarray | None = None) -> bool:
        expected = float((sizes * class_risk(sizes, weight_sums, self.method)).sum())
        if (
            self.max_expected_reidentifications is not None
            and expected > self.max_expected_reidentifications
        ):
            return False
        if self.max_global_risk_pct is not None:
            n = self._n_released or int(sizes.sum())
            return 100.0 * expected / max(n, 1) <= self.max_global_risk_pct
        return True

    def describe(self) -> str:
        parts = []
        if self.max_global_risk_pct is not None:
            parts.append(f"global risk <= {self.max_global_risk_pct:g} %")
        if self.max_expected_reidentifications is not None:
            parts.append(f"expected re-identifications <= {self.max_expected_reidentifications:g}")
        return " and ".join(parts)
