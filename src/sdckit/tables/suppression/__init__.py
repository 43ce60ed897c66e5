"""Secondary cell suppression: optimal (MILP + attacker cuts), hypercube, large tables.

Each method is a :class:`~sdckit.tables.TableMethod` (:class:`OptimalSuppression`,
:class:`HypercubeSuppression`, :class:`ModularSuppression`) with a function twin
(:func:`suppress_optimal`, :func:`suppress_hypercube`, :func:`suppress_modular`).
"""

from sdckit.tables.audit._rank import RankTest, rank_audit, rank_test  # their former home
from sdckit.tables.suppression._common import SuppressionResult
from sdckit.tables.suppression.gauss import GaussSuppression, suppress_gauss
from sdckit.tables.suppression.hypercube import HypercubeSuppression, suppress_hypercube
from sdckit.tables.suppression.modular import ModularSuppression, suppress_modular
from sdckit.tables.suppression.optimal import OptimalSuppression, suppress_optimal
from sdckit.tables.suppression.repair import repair_suppression

__all__ = [
    "GaussSuppression",
    "HypercubeSuppression",
    "ModularSuppression",
    "OptimalSuppression",
    "RankTest",
    "SuppressionResult",
    "rank_audit",
    "rank_test",
    "repair_suppression",
    "suppress_gauss",
    "suppress_hypercube",
    "suppress_modular",
    "suppress_optimal",
]
