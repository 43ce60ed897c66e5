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
from sdckit.utility.rumap import RUMapResult, loss_measure, pareto_front, risk_measure, ru_map

__all__ = [
    "CategoricalLossResult",
    "ContinuousLossResult",
    "RUMapResult",
    "RegressionComparison",
    "TableDistances",
    "categorical_loss",
    "ci_overlap",
    "continuous_loss",
    "cramers_v",
    "loss_measure",
    "pareto_front",
    "pram_entropy",
    "regression_comparison",
    "risk_measure",
    "ru_map",
    "table_distances",
]
