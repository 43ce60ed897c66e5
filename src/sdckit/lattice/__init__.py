"""Automatic protection by generalisation: the lattice of levels, privacy models, loss measures
and the search for the least-loss node that meets a target (ARX's approach).

:class:`LatticeData` codes the records once with a hierarchy per key; a node is a tuple of
levels; :func:`evaluate_node` checks one node against the privacy models
(:mod:`~sdckit.lattice.models`, :mod:`~sdckit.lattice.diversity`,
:mod:`~sdckit.lattice.risk_models`) and scores it with a :mod:`~sdckit.lattice.loss` measure;
:func:`search_lattice` finds the optimum; :func:`recode_locally` releases the records the
optimum suppresses at other levels; :class:`LatticeAnonymization` (``method = "auto"`` in a
job) applies the optimum to a file.
"""

from sdckit.lattice._check import NodeResult, evaluate_node, suppression_budget
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    EqualDistanceTCloseness,
    HierarchicalTCloseness,
    OrderedDistanceTCloseness,
    RecursiveCLDiversity,
)
from sdckit.lattice.local import LocalRecoding, recode_locally
from sdckit.lattice.loss import (
    AECS,
    Discernibility,
    Height,
    KLDivergence,
    Loss,
    LossMeasure,
    NonUniformEntropy,
    Precision,
    SuppressedAndRecoded,
)
from sdckit.lattice.method import LatticeAnonymization, anonymize_lattice
from sdckit.lattice.models import DPresence, KAnonymity, KMap, PrivacyModel
from sdckit.lattice.risk_models import (
    AverageReidentificationRisk,
    PopulationUniqueness,
    SampleUniqueness,
)
from sdckit.lattice.risk_targets import GlobalRisk, IndividualRisk
from sdckit.lattice.search import SearchResult, search_lattice

__all__ = [
    "AECS",
    "AverageReidentificationRisk",
    "DPresence",
    "Discernibility",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "EqualDistanceTCloseness",
    "GlobalRisk",
    "Height",
    "HierarchicalTCloseness",
    "IndividualRisk",
    "KAnonymity",
    "KLDivergence",
    "KMap",
    "LatticeAnonymization",
    "LatticeData",
    "LocalRecoding",
    "Loss",
    "LossMeasure",
    "NodeClasses",
    "NodeResult",
    "NonUniformEntropy",
    "OrderedDistanceTCloseness",
    "PopulationUniqueness",
    "Precision",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "SampleUniqueness",
    "SearchResult",
    "SuppressedAndRecoded",
    "anonymize_lattice",
    "evaluate_node",
    "recode_locally",
    "search_lattice",
    "suppression_budget",
]
