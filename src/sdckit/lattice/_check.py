"""The check of one node: which classes are suppressed, whether the target holds, its loss."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sdckit.errors import ParameterError
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel

__all__ = ["NodeResult", "evaluate_node", "suppression_budget"]


@dataclass(frozen=True, eq=False)
class NodeResult:
    """One node, checked.

    Attributes
    ----------
    levels : tuple of int
        The node.
    anonymous : bool
        Every model holds with at most the allowed records suppressed.
    suppressed : numpy.ndarray
        Boolean per class: suppressed at this node.
    n_suppressed : int
        Records suppressed.
    loss : float
        The measure's loss (NaN when no measure was given).
    classes : NodeClasses
        The classes of the node.
    """

    levels: tuple[int, ...]
    anonymous: bool
    suppressed: np.ndarray
    n_suppressed: int
    loss: float
    classes: NodeClasses


def suppression_budget(limit: float, n_records: int) -> int:
    """Records that may be suppressed: ``floor(limit * n)`` (ARX's absolute limit)."""
    if not 0.0 <= limit <= 1.0 or math.isnan(limit):
        raise ParameterError(
            "suppression_limit is a share of the records, between 0 and 1 (e.g. 0.04)."
        )
    return math.floor(limit * n_records)


def evaluate_node(
    data: LatticeData,
    levels: Sequence[int],
    models: Sequence[PrivacyModel],
    *,
    suppression_limit: float = 0.0,
    measure: LossMeasure | None = None,
) -> NodeResult:
    """Check node ``levels`` against ``models`` (prepared) and score it with ``measure``.

    The classes failing a class-based model are suppressed; the sample-based models then
    enforce themselves within what is left of the budget.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import KAnonymity, LatticeData
    >>> df = pl.DataFrame({"sex": ["f", "m", "f"]})
    >>> data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    >>> r = evaluate_node(data, (0,), [KAnonymity(2)], suppression_limit=0.4)
    >>> r.anonymous, r.n_suppressed
    (True, 1)
    """
    classes = data.classes(levels)
    budget = suppression_budget(suppression_limit, data.n_records)
    kept = np.ones(classes.n_classes, dtype=bool)
    for model in models:
        if not model.sample_based:
            kept &= model.class_passes(classes)
    n_suppressed = int(classes.sizes[~kept].sum())
    anonymous = n_suppressed <= budget
    if anonymous:
        for model in models:
            if model.sample_based:
                enforced = model.enforce(classes, kept, budget - n_suppressed)
                if enforced is None:
                    anonymous = False
                    break
                kept = enforced
                n_suppressed = int(classes.sizes[~kept].sum())
    loss = math.nan if measure is None else float(measure.loss(classes, ~kept))
    return NodeResult(
        levels=classes.levels,
        anonymous=bool(anonymous),
        suppressed=~kept,
        n_suppressed=n_suppressed,
        loss=loss,
        classes=classes,
    )
