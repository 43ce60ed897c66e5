"""Disclosure risk of microdata: frequencies, k-anonymity, l-diversity, individual risk, SUDA2."""

from sdckit.risk._frequencies import (
    FrequencyResult,
    KAnonymityViolations,
    frequencies,
    frequency_counts,
)
from sdckit.risk.assessment import RiskAssessment, assess_risk
from sdckit.risk.diversity import LDiversityResult, l_diversity
from sdckit.risk.graphical import (
    DecomposableFit,
    DecomposableModel,
    DecomposableRiskResult,
    ModelSearchResult,
    decomposable_risk,
    fit_decomposable,
    search_decomposable,
)
from sdckit.risk.individual import (
    HouseholdRiskResult,
    IndividualRiskResult,
    benedetti_franconi_risk,
    household_risk,
    household_risk_of,
    individual_risk,
    individual_risk_of,
    risk_threshold,
)
from sdckit.risk.linkage import (
    IntervalDisclosureResult,
    IntervalDisclosureRmdResult,
    RecordLinkageResult,
    interval_disclosure,
    interval_disclosure_rmd,
    record_linkage,
)
from sdckit.risk.loglinear import LogLinearRiskResult, loglinear_risk
from sdckit.risk.replicated import ReplicatedUniquesResult, replicated_uniques
from sdckit.risk.suda import Suda2Result, suda2
from sdckit.risk.uniqueness import (
    UniquenessModelResult,
    ewens,
    pitman,
    poisson_gamma,
    population_uniqueness,
)
from sdckit.risk.unsafe import UnsafeCombinationsResult, minimal_unsafe_combinations

__all__ = [
    "DecomposableFit",
    "DecomposableModel",
    "DecomposableRiskResult",
    "FrequencyResult",
    "HouseholdRiskResult",
    "IndividualRiskResult",
    "IntervalDisclosureResult",
    "IntervalDisclosureRmdResult",
    "KAnonymityViolations",
    "LDiversityResult",
    "LogLinearRiskResult",
    "ModelSearchResult",
    "RecordLinkageResult",
    "ReplicatedUniquesResult",
    "RiskAssessment",
    "Suda2Result",
    "UniquenessModelResult",
    "UnsafeCombinationsResult",
    "assess_risk",
    "benedetti_franconi_risk",
    "decomposable_risk",
    "ewens",
    "fit_decomposable",
    "frequencies",
    "frequency_counts",
    "household_risk",
    "household_risk_of",
    "individual_risk",
    "individual_risk_of",
    "interval_disclosure",
    "interval_disclosure_rmd",
    "l_diversity",
    "loglinear_risk",
    "minimal_unsafe_combinations",
    "pitman",
    "poisson_gamma",
    "population_uniqueness",
    "record_linkage",
    "replicated_uniques",
    "risk_threshold",
    "search_decomposable",
    "suda2",
]
