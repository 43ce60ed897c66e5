"""Statistical tables: model, sensitivity rules, suppression, audit, rounding, cell key.

Sensitivity rules (:class:`SensitivityRule`, ``registry("rule")``) and table methods
(:class:`TableMethod`: secondary suppression and rounding, ``registry("table")``) follow the
protection contract of :mod:`sdckit.protection`; each table method has a function twin
(:class:`HypercubeSuppression` and :func:`suppress_hypercube`, ...).
"""

from sdckit.tables import audit  # the package, callable as its function audit()
from sdckit.tables._method import TableMethod
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
    cell_key_magnitudes,
    count_ptable,
    record_keys,
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
    "Audit",
    "AuditResult",
    "CellKeyResult",
    "CellStatus",
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
    "apply_rules",
    "audit",
    "audit_rounding",
    "cell_key_counts",
    "cell_key_magnitudes",
    "check_ptable",
    "count_ptable",
    "evaluate_rules",
    "perturbation_loss",
    "ptable_counts",
    "read_ptable",
    "record_keys",
    "repair_suppression",
    "round_controlled",
    "round_deterministic",
    "round_random",
    "round_small_cells",
    "singleton_violations",
    "small_cell_adjustment",
    "suppress_gauss",
    "suppress_hypercube",
    "suppress_modular",
    "suppress_optimal",
    "suppression_loss",
    "write_ptable",
]
