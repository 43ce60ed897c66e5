"""Utility and information loss: continuous, categorical, tables, regression."""

from sdckit.utility.categorical import (
    CategoricalLossResult,
    TableDistances,
    categorical_loss,
    cramers_v,
    pram_entropy,
    table_distances,
)
from sdckit.utility.continuous import ContinuousLossResult, continuous_loss
from sdckit.utility.regression import RegressionComparison, ci_overlap, regression_comparison

__all__ = [
    "CategoricalLossResult",
    "ContinuousLossResult",
    "RegressionComparison",
    "TableDistances",
    "categorical_loss",
    "ci_overlap",
    "continuous_loss",
    "cramers_v",
    "pram_entropy",
    "regression_comparison",
    "table_distances",
]
