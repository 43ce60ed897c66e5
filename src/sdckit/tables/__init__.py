"""Statistical tables: model, sensitivity rules, suppression, audit, rounding, cell key."""

from sdckit.tables._audit import AuditResult, audit, singleton_violations
from sdckit.tables.cellkey import (
    CellKeyResult,
    PTable,
    cell_key_counts,
    cell_key_magnitudes,
    count_ptable,
    record_keys,
)
from sdckit.tables.hierarchy import Hierarchy
from sdckit.tables.loss import (
    PerturbationLoss,
    SuppressionLoss,
    perturbation_loss,
    suppression_loss,
)
from sdckit.tables.rounding import (
    RoundingAudit,
    RoundingResult,
    audit_rounding,
    round_controlled,
    round_deterministic,
    round_random,
    round_small_cells,
    small_cell_adjustment,
)
from sdckit.tables.rules import (
    Dominance,
    MarkedCells,
    MinFrequency,
    PPercent,
    PQRule,
    RuleOutcome,
    RulesResult,
    SensitivityRule,
    ZeroCells,
    apply_rules,
    evaluate_rules,
)
from sdckit.tables.suppression import (
    SuppressionResult,
    repair_suppression,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.table import CellStatus, Table

__all__ = [
    "AuditResult",
    "CellKeyResult",
    "CellStatus",
    "Dominance",
    "Hierarchy",
    "MarkedCells",
    "MinFrequency",
    "PPercent",
    "PQRule",
    "PTable",
    "PerturbationLoss",
    "RoundingAudit",
    "RoundingResult",
    "RuleOutcome",
    "RulesResult",
    "SensitivityRule",
    "SuppressionLoss",
    "SuppressionResult",
    "Table",
    "ZeroCells",
    "apply_rules",
    "audit",
    "audit_rounding",
    "cell_key_counts",
    "cell_key_magnitudes",
    "count_ptable",
    "evaluate_rules",
    "perturbation_loss",
    "record_keys",
    "repair_suppression",
    "round_controlled",
    "round_deterministic",
    "round_random",
    "round_small_cells",
    "singleton_violations",
    "small_cell_adjustment",
    "suppress_hypercube",
    "suppress_modular",
    "suppress_optimal",
    "suppression_loss",
]
