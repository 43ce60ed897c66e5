"""Disclosure risk of microdata: frequencies, k-anonymity, l-diversity, individual risk, SUDA2."""

from sdckit.risk.diversity import LDiversityResult, l_diversity
from sdckit.risk.frequencies import (
    FrequencyResult,
    KAnonymityViolations,
    frequencies,
    frequency_counts,
)
from sdckit.risk.individual import (
    HouseholdRiskResult,
    IndividualRiskResult,
    benedetti_franconi_risk,
    household_risk,
    individual_risk,
    risk_threshold,
)

__all__ = [
    "FrequencyResult",
    "HouseholdRiskResult",
    "IndividualRiskResult",
    "KAnonymityViolations",
    "LDiversityResult",
    "benedetti_franconi_risk",
    "frequencies",
    "frequency_counts",
    "household_risk",
    "individual_risk",
    "l_diversity",
    "risk_threshold",
]
