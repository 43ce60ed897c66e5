"""Statistical tables: model, sensitivity rules, suppression, audit, rounding, cell key.

Sensitivity rules (:class:`SensitivityRule`, ``registry("rule")``) and table methods
(:class:`TableMethod`: secondary suppression, rounding and controlled tabular adjustment,
``registry("table")``) follow the protection contract of :mod:`sdckit.protection`; each table
method has a function twin (:class:`HypercubeSuppression` and :func:`suppress_hypercube`,
...).
"""

from sdckit.tables import audit  # the package, callable as its function audit()
from sdckit.tables._method import TableMethod
from sdckit.tables._output import EMPTY_SYMBOL, SUPPRESSED_SYMBOL
from sdckit.tables.audit import (
    Audit,
    AuditResult,
    InsiderAudit,
    IntegerAudit,
    UnionAudit,
    singleton_violations,
)
from sdckit.tables.cellkey import (
    CellKeyResult,
    PTable,
    cell_key_counts,
    count_ptable,
    record_keys,
)
from sdckit.tables.cellkey_magnitude import (
    CellKeyMagnitudeResult,
    CellKeyMagnitudes,
    cell_key_magnitudes,
    default_magnitude_ptable,
    flex_function,
    scrambled_keys,
)
from sdckit.tables.cta import (
    AdjustmentAudit,
    AdjustmentResult,
    ControlledAdjustment,
    adjust_controlled,
    audit_adjustment,
)
from sdckit.tables.hierarchy import Hierarchy
from sdckit.tables.linked import LinkedAudit, LinkedProtection, LinkedTables
from sdckit.tables.loss import (
    PerturbationLoss,
    SuppressionLoss,
    perturbation_loss,
    suppression_loss,
)
from sdckit.tables.ptable import (
    PTableCheck,
    check_ptable,
    ptable_counts,
    read_ptable,
    write_ptable,
)
from sdckit.tables.ptable_magnitude import MagnitudePTable, ptable_magnitudes
from sdckit.tables.rounding import (
    ControlledRounding,
    DeterministicRounding,
    RandomRounding,
    RoundingAudit,
    RoundingResult,
    SmallCellAdjustment,
    SmallCellRounding,
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
    GaussSuppression,
    HypercubeSuppression,
    ModularSuppression,
    OptimalSuppression,
    SuppressionResult,
    repair_suppression,
    suppress_gauss,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.table import CellStatus, Table

__all__ = [
    "EMPTY_SYMBOL",
    "SUPPRESSED_SYMBOL",
    "AdjustmentAudit",
    "AdjustmentResult",
    "Audit",
    "AuditResult",
    "CellKeyMagnitudeResult",
    "CellKeyMagnitudes",
    "CellKeyResult",
    "CellStatus",
    "ControlledAdjustment",
    "ControlledRounding",
    "DeterministicRounding",
    "Dominance",
    "GaussSuppression",
    "Hierarchy",
    "HypercubeSuppression",
    "InsiderAudit",
    "IntegerAudit",
    "LinkedAudit",
    "LinkedProtection",
    "LinkedTables",
    "MagnitudePTable",
    "MarkedCells",
    "MinFrequency",
    "ModularSuppression",
    "OptimalSuppression",
    "PPercent",
    "PQRule",
    "PTable",
    "PTableCheck",
    "PerturbationLoss",
    "RandomRounding",
    "RoundingAudit",
    "RoundingResult",
    "RuleOutcome",
    "RulesResult",
    "SensitivityRule",
    "SmallCellAdjustment",
    "SmallCellRounding",
    "SuppressionLoss",
    "SuppressionResult",
    "Table",
    "TableMethod",
    "UnionAudit",
    "ZeroCells",
    "adjust_controlled",
    "apply_rules",
    "audit",
    "audit_adjustment",
    "audit_rounding",
    "cell_key_counts",
    "cell_key_magnitudes",
    "check_ptable",
    "count_ptable",
    "default_magnitude_ptable",
    "evaluate_rules",
    "flex_function",
    "perturbation_loss",
    "ptable_counts",
    "ptable_magnitudes",
    "read_ptable",
    "record_keys",
    "repair_suppression",
    "round_controlled",
    "round_deterministic",
    "round_random",
    "round_small_cells",
    "scrambled_keys",
    "singleton_violations",
    "small_cell_adjustment",
    "suppress_gauss",
    "suppress_hypercube",
    "suppress_modular",
    "suppress_optimal",
    "suppression_loss",
    "write_ptable",
]
