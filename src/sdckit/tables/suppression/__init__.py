"""Secondary cell suppression: optimal (MILP + attacker cuts), hypercube, large tables."""

from sdckit.tables.suppression._common import SuppressionResult
from sdckit.tables.suppression.hypercube import suppress_hypercube
from sdckit.tables.suppression.modular import suppress_modular
from sdckit.tables.suppression.optimal import suppress_optimal
from sdckit.tables.suppression.repair import repair_suppression

__all__ = [
    "SuppressionResult",
    "repair_suppression",
    "suppress_hypercube",
    "suppress_modular",
    "suppress_optimal",
]
