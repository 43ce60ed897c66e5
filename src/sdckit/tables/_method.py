"""The base class of the table protection methods (secondary suppression, rounding).

A :class:`TableMethod` follows the protection contract of :mod:`sdckit.protection`: keyword-only
parameters that ``__init__`` only stores, declared in ``parameters`` and checked when the method
is applied (errors name the class and the parameter), ``get_params``, ``set_params`` and
:func:`~sdckit.protection.clone` for free, and registration in ``registry("table")`` (found by
:func:`~sdckit.protection.get_method` under its ``alias``, the name used in job files).

Examples
--------
>>> from sdckit.protection import get_method
>>> cls = get_method("hypercube", "table")
>>> cls.__name__, list(cls.parameters)
('HypercubeSuppression', ['cost', 'max_passes', 'singletons', 'repair_limit'])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from sdckit.protection import Parameterised

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = ["TableMethod"]


class TableMethod(Parameterised, ABC):
    """Base class of table protection methods: :meth:`apply` protects a :class:`Table`."""

    name: ClassVar[str] = "table method"
    family: ClassVar[str | None] = "table"
    #: The name used in job files (``"hypercube"``); set by every concrete method.
    alias: ClassVar[str]
    #: What :meth:`apply` does: ``"suppression"`` (gives a SuppressionResult), ``"rounding"``
    #: (gives a RoundingResult) or ``"adjustment"`` (gives an AdjustmentResult); a job's
    #: ``[suppression]`` section takes suppression methods and the adjustment.
    kind: ClassVar[str] = "table method"

    @abstractmethod
    def apply(self, table: Table) -> Any:
        """Check the parameters, then protect ``table`` (the input is not modified)."""

    @classmethod
    @abstractmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """A small instance and table for the shared contract tests."""
