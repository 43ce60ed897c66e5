"""Automatic protection by generalisation: the lattice of levels, privacy models, loss measures
and the search for the least-loss node that meets a target (ARX's approach).

:class:`LatticeData` codes the records once with a hierarchy per key; a node is a tuple of
levels; :func:`evaluate_node` checks one node against the :mod:`~sdckit.lattice.models` and
scores it with a :mod:`~sdckit.lattice.loss` measure; :func:`search_lattice` finds the optimum;
:func:`recode_locally` releases the records the optimum suppresses at other levels.
"""

from sdckit.lattice._check import NodeResult, evaluate_node, suppression_budget
from sdckit.lattice._data import LatticeData, NodeClasses
from sdckit.lattice.local import LocalRecoding, recode_locally
from sdckit.lattice.loss import Height, LossMeasure
from sdckit.lattice.models import KAnonymity, PrivacyModel
from sdckit.lattice.search import SearchResult, search_lattice

__all__ = [
    "Height",
    "KAnonymity",
    "LatticeData",
    "LocalRecoding",
    "LossMeasure",
    "NodeClasses",
    "NodeResult",
    "PrivacyModel",
    "SearchResult",
    "evaluate_node",
    "recode_locally",
    "search_lattice",
    "suppression_budget",
]
