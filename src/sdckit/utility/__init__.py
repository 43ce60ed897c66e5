"""Utility and information loss: continuous, categorical, tables, regression."""

from sdckit.utility.assessment import UtilityAssessment, assess_utility
from sdckit.utility.categorical import (
    CategoricalLossResult,
    TableDistances,
    categorical_loss,
    cramers_v,
    pram_entropy,
    table_distances,
)
from sdckit.utility.continuous import ContinuousLossResult, continuous_loss
from sdckit.utility.disclosure import SyntheticDisclosureResult, synthetic_disclosure
from sdckit.utility.regression import RegressionComparison, ci_overlap, regression_comparison
from sdckit.utility.rumap import RUMapResult, loss_measure, pareto_front, risk_measure, ru_map
from sdckit.utility.swapping import SwapTableLoss, swap_table_loss
from sdckit.utility.synthetic import PropensityMSEResult, propensity_mse

__all__ = [
    "CategoricalLossResult",
    "ContinuousLossResult",
    "PropensityMSEResult",
    "RUMapResult",
    "RegressionComparison",
    "SwapTableLoss",
    "SyntheticDisclosureResult",
    "TableDistances",
    "UtilityAssessment",
    "assess_utility",
    "categorical_loss",
    "ci_overlap",
    "continuous_loss",
    "cramers_v",
    "loss_measure",
    "pareto_front",
    "pram_entropy",
    "propensity_mse",
    "regression_comparison",
    "risk_measure",
    "ru_map",
    "swap_table_loss",
    "synthetic_disclosure",
    "table_distances",
]
