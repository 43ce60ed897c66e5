"""The check of one node: which classes are suppressed, whether the target holds, its loss."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sdckit.errors import ParameterError
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel, counts

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

    As ARX's check: a class smaller than the models' minimal class size fails; otherwise it
    fails when a class-based model fails it.  Failing classes with released records are
    suppressed; a failing class without released records that a blocking model
    (delta-presence) fails makes the node fail.  The sample-based models then enforce
    themselves (see :mod:`sdckit.lattice.risk_models`).  The node meets the target when at
    most ``floor(suppression_limit * released records)`` records are suppressed.

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
    released = counts(classes)
    n_released = int(released.sum()) if data.subset is not None else data.n_records
    budget = suppression_budget(suppression_limit, n_released)
    min_size = max((m.minimal_class_size for m in models), default=0)
    small = released < min_size
    passes = ~small
    blocked = False
    for model in models:
        if not model.sample_based:
            ok = model.class_passes(classes)
            if model.blocks_when_empty and bool(np.any((released == 0) & ~small & ~ok)):
                blocked = True
            passes &= ok
    # only classes with released records are suppressed
    kept = passes | (released == 0)
    n_suppressed = int(released[~kept].sum())
    anonymous = not blocked and n_suppressed <= budget
    sample_models = [m for m in models if m.sample_based]
    if anonymous and sample_models:
        kept, n_suppressed = _enforce(classes, released, kept, sample_models, budget, measure)
        anonymous = n_suppressed <= budget
    loss = math.nan if measure is None else float(measure.loss(classes, ~kept))
    return NodeResult(
        levels=classes.levels,
        anonymous=bool(anonymous),
        suppressed=~kept,
        n_suppressed=n_suppressed,
        loss=loss,
        classes=classes,
    )


def top_records(data: LatticeData, levels: Sequence[int]) -> np.ndarray:
    """Boolean per record: every key shows its hierarchy's single top label at ``levels``
    (such a record loses nothing more when suppressed: ARX does not count it against the
    suppression limit when a sample-based model suppresses)."""
    classes = data.classes(levels)
    return _top_classes(classes)[classes.class_of]


def _top_classes(classes: NodeClasses) -> np.ndarray:
    """Boolean per class: every key is at its hierarchy's single top label."""
    data = classes.data
    top = np.ones(classes.n_classes, dtype=bool)
    for j, level in enumerate(classes.levels):
        labels = data.labels[j]
        roots = labels[-1]
        if len(roots) != 1:
            return np.zeros(classes.n_classes, dtype=bool)
        names = np.asarray(labels[level], dtype=object)[classes.codes[:, j]]
        top &= names == roots[0]
    return top


def _enforce(
    classes: NodeClasses,
    released: np.ndarray,
    kept: np.ndarray,
    models: Sequence[PrivacyModel],
    budget: int,
    measure: LossMeasure | None,
) -> tuple[np.ndarray, int]:
    """Suppress the least prefix of the smallest released classes for which every model holds."""
    top = _top_classes(classes)
    kept = kept.copy()
    # classes at the top are as good as suppressed for the risk, and do not count as suppressed
    n_suppressed = int(released[~kept & ~top].sum())
    candidates = np.flatnonzero(kept & (released > 0) & ~top)
    first = np.full(classes.n_classes, classes.class_of.shape[0], dtype=np.int64)
    np.minimum.at(first, classes.class_of, np.arange(classes.class_of.shape[0], dtype=np.int64))
    tiebreak = None if measure is None else measure.class_order(classes)
    keys = [first[candidates]]
    if tiebreak is not None:
        keys.append(tiebreak[candidates])
    keys.append(released[candidates])
    order = candidates[np.lexsort(keys)]
    sizes = released[order]
    weights = None if classes.data.weights is None else _weight_sums(classes)[order]
    suppressed_prefix = np.concatenate([[0], np.cumsum(sizes)])
    for model in models:
        start = int(np.count_nonzero(~kept[order]))
        if _holds(model, sizes[start:], None if weights is None else weights[start:]):
            continue
        lo, hi = start + 1, len(order)
        # the least prefix p with the model holding on sizes[p:]; p = len(order) always holds
        while lo < hi:
            mid = (lo + hi) // 2
            if _holds(model, sizes[mid:], None if weights is None else weights[mid:]):
                hi = mid
            else:
                lo = mid + 1
        kept[order[:lo]] = False
        if n_suppressed + int(suppressed_prefix[lo]) > budget:
            return kept, n_suppressed + int(suppressed_prefix[lo])
    n_suppressed += int(suppressed_prefix[int(np.count_nonzero(~kept[order]))])
    return kept, n_suppressed


def _weight_sums(classes: NodeClasses) -> np.ndarray:
    data = classes.data
    weights = data.weights if data.subset is None else data.weights * data.subset
    return np.bincount(classes.class_of, weights=weights, minlength=classes.n_classes)


def _holds(model: PrivacyModel, sizes: np.ndarray, weights: np.ndarray | None) -> bool:
    # the weight sums matter to sdckit's own risk targets only
    if weights is None or not model.uses_weights:
        return model.holds(sizes)
    return model.holds(sizes, weights)
