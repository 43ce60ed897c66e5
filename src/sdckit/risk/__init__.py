"""Disclosure risk of microdata: frequencies, k-anonymity, l-diversity, individual risk, SUDA2.

The names below are imported from their modules on first use (``from sdckit.risk import
assess_risk`` loads the frequency-based measures only, not SUDA2's compiled kernels, the
record-linkage measures or the model-based estimators and their scipy dependencies).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from sdckit.risk._frequencies import (
        FrequencyResult,
        KAnonymityViolations,
        frequencies,
        frequency_counts,
    )
    from sdckit.risk.assessment import RiskAssessment, assess_risk
    from sdckit.risk.combinations import (
        CombinationRisk,
        KeyCombination,
        combination_risk,
        combinations_from_levels,
        combinations_up_to,
        key_combinations,
    )
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

#: Where each public name lives.
_MODULES: dict[str, tuple[str, ...]] = {
    "sdckit.risk._frequencies": (
        "FrequencyResult",
        "KAnonymityViolations",
        "frequencies",
        "frequency_counts",
    ),
    "sdckit.risk.assessment": ("RiskAssessment", "assess_risk"),
    "sdckit.risk.combinations": (
        "CombinationRisk",
        "KeyCombination",
        "combination_risk",
        "combinations_from_levels",
        "combinations_up_to",
        "key_combinations",
    ),
    "sdckit.risk.diversity": ("LDiversityResult", "l_diversity"),
    "sdckit.risk.graphical": (
        "DecomposableFit",
        "DecomposableModel",
        "DecomposableRiskResult",
        "ModelSearchResult",
        "decomposable_risk",
        "fit_decomposable",
        "search_decomposable",
    ),
    "sdckit.risk.individual": (
        "HouseholdRiskResult",
        "IndividualRiskResult",
        "benedetti_franconi_risk",
        "household_risk",
        "household_risk_of",
        "individual_risk",
        "individual_risk_of",
        "risk_threshold",
    ),
    "sdckit.risk.linkage": (
        "IntervalDisclosureResult",
        "IntervalDisclosureRmdResult",
        "RecordLinkageResult",
        "interval_disclosure",
        "interval_disclosure_rmd",
        "record_linkage",
    ),
    "sdckit.risk.loglinear": ("LogLinearRiskResult", "loglinear_risk"),
    "sdckit.risk.replicated": ("ReplicatedUniquesResult", "replicated_uniques"),
    "sdckit.risk.suda": ("Suda2Result", "suda2"),
    "sdckit.risk.uniqueness": (
        "UniquenessModelResult",
        "ewens",
        "pitman",
        "poisson_gamma",
        "population_uniqueness",
    ),
    "sdckit.risk.unsafe": ("UnsafeCombinationsResult", "minimal_unsafe_combinations"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

#: The subpackages and modules of sdckit.risk, importable as attributes.
_SUBMODULES = frozenset(
    (
        "assessment",
        "combinations",
        "diversity",
        "graphical",
        "individual",
        "linkage",
        "loglinear",
        "replicated",
        "suda",
        "uniqueness",
        "unsafe",
    )
)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE) | _SUBMODULES)


__all__ = [
    "CombinationRisk",
    "DecomposableFit",
    "DecomposableModel",
    "DecomposableRiskResult",
    "FrequencyResult",
    "HouseholdRiskResult",
    "IndividualRiskResult",
    "IntervalDisclosureResult",
    "IntervalDisclosureRmdResult",
    "KAnonymityViolations",
    "KeyCombination",
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
    "combination_risk",
    "combinations_from_levels",
    "combinations_up_to",
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
    "key_combinations",
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
