"""Disclosure risk of microdata: frequencies, k-anonymity, l-diversity, individual risk, SUDA2."""

from sdckit.risk.frequencies import (
    FrequencyResult,
    KAnonymityViolations,
    frequencies,
    frequency_counts,
)

__all__ = [
    "FrequencyResult",
    "KAnonymityViolations",
    "frequencies",
    "frequency_counts",
]
