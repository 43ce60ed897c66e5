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
from sdckit.risk.linkage import (
    IntervalDisclosureResult,
    IntervalDisclosureRmdResult,
    RecordLinkageResult,
    interval_disclosure,
    interval_disclosure_rmd,
    record_linkage,
)

__all__ = [
    "FrequencyResult",
    "HouseholdRiskResult",
    "IndividualRiskResult",
    "IntervalDisclosureResult",
    "IntervalDisclosureRmdResult",
    "KAnonymityViolations",
    "LDiversityResult",
    "RecordLinkageResult",
    "benedetti_franconi_risk",
    "frequencies",
    "frequency_counts",
    "household_risk",
    "individual_risk",
    "interval_disclosure",
    "interval_disclosure_rmd",
    "l_diversity",
    "record_linkage",
    "risk_threshold",
]
