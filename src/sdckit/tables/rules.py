"""Primary sensitivity rules and the protection levels they require (methods.md M11.1).

Each rule looks at every cell of a :class:`~sdckit.tables.Table` and says whether it is unsafe
and which protection it needs: an upper level (the intruder's upper bound must reach at least
value + upper), a lower level (lower bound at most value - lower) and a sliding level (the
interval at least that wide).  :func:`apply_rules` combines rules: a cell is primary if any rule
flags it, and its levels are the largest any flagging rule asks for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_int, check_real
from sdckit.errors import DataError, ParameterError
from sdckit.tables.table import CellStatus, Table

__all__ = [
    "Dominance",
    "MarkedCells",
    "MinFrequency",
    "PPercent",
    "PQRule",
    "RuleOutcome",
    "RulesResult",
    "SensitivityRule",
    "ZeroCells",
    "apply_rules",
    "evaluate_rules",
]


@dataclass(frozen=True, eq=False)
class RuleOutcome:
    """Per cell: unsafe or not, and the upper, lower and sliding protection levels."""

    unsafe: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    sliding: np.ndarray


def _outcome(
    unsafe: np.ndarray, upper: np.ndarray, lower: Any = None, sliding: Any = 0.0
) -> RuleOutcome:
    unsafe = np.asarray(unsafe, dtype=bool)
    up = np.where(unsafe, upper, 0.0)
    low = np.where(unsafe, upper if lower is None else lower, 0.0)
    sl = np.where(unsafe, sliding, 0.0)
    return RuleOutcome(
        unsafe, up.astype(float), low.astype(float), np.broadcast_to(sl, unsafe.shape).astype(float)
    )


class SensitivityRule(ABC):
    """A primary sensitivity rule: :meth:`evaluate` gives a :class:`RuleOutcome`."""

    name: str = "rule"

    @abstractmethod
    def evaluate(self, table: Table) -> RuleOutcome:
        """Unsafe cells of ``table`` and the protection they need."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _contributions(table: Table, n: int, rule: str) -> np.ndarray:
    if table.top.shape[1] < n:
        raise DataError(
            f"The {rule} needs the {n} largest contributions of each cell; build the table "
            f"with Table.from_microdata(..., n_top={max(n, 2)}) or give top=... columns."
        )
    top = table.top[:, :n]
    if np.any(top < 0) or np.any(table.values < 0):
        raise DataError(
            f"The {rule} needs non-negative contributions; the table has negative values."
        )
    return top


def _contributor_counts(table: Table) -> np.ndarray:
    if np.all(table.n_contributors >= 0):
        return table.n_contributors
    if table.kind == "count":
        return np.rint(table.values).astype(np.int64)
    raise DataError(
        "The minimum-frequency rule needs the number of contributors of each cell; build the "
        "table from microdata or give n_contributors=..."
    )


class MinFrequency(SensitivityRule):
    """Minimum frequency: a non-empty cell with fewer than ``threshold`` contributors is unsafe.

    Parameters
    ----------
    threshold : int, default 3
        Cells with 1 .. threshold-1 contributors are unsafe (tau-ARGUS semantics; sdcTable's
        ``maxN`` is ``threshold - 1``).
    safety_range : float, default 10
        Upper and lower protection level as a percentage of the cell value ("manual safety
        range").
    minimum_level : float, default 1
        Smallest upper and lower protection level (so that small cells are not published
        exactly).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MinFrequency
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> MinFrequency(threshold=3).evaluate(t).unsafe.tolist()
    [False, False, True]
    """

    name = "min_frequency"

    def __init__(
        self, threshold: int = 3, *, safety_range: float = 10.0, minimum_level: float = 1.0
    ) -> None:
        self.threshold = check_int(threshold, "threshold", minimum=1)
        self.safety_range = check_real(safety_range, "safety_range", minimum=0)
        self.minimum_level = check_real(minimum_level, "minimum_level", minimum=0)

    def evaluate(self, table: Table) -> RuleOutcome:
        n = _contributor_counts(table)
        unsafe = (n > 0) & (n < self.threshold)
        level = np.maximum(self.safety_range / 100.0 * np.abs(table.values), self.minimum_level)
        return _outcome(unsafe, level)


class Dominance(SensitivityRule):
    """(n, k)-dominance: unsafe if the ``n`` largest contributions exceed ``k`` % of the cell.

    Protection level (upper and lower): ``(100 / k) * (x_1 + ... + x_n) - T``.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, Dominance
    >>> t = Table.from_array(np.array([100, 90, 10]), {"x": ["a", "b"]},
    ...                      top=[[50, 30], [89, 1], [6, 4]], kind="magnitude")
    >>> Dominance(n=1, k=85).evaluate(t).unsafe.tolist()
    [False, True, False]
    """

    name = "dominance"

    def __init__(self, n: int = 1, k: float = 85.0) -> None:
        self.n = check_int(n, "n", minimum=1)
        self.k = check_real(k, "k", minimum=0, maximum=100, min_inclusive=False)

    def evaluate(self, table: Table) -> RuleOutcome:
        top = _contributions(table, self.n, "dominance rule")
        big = top.sum(axis=1)
        total = table.values
        unsafe = (total > 0) & (big > self.k / 100.0 * total)
        level = np.maximum(100.0 / self.k * big - total, 0.0)
        return _outcome(unsafe, level)


class PQRule(SensitivityRule):
    """pq rule: unsafe if ``T - x_1 - x_2 < (p / q) x_1``; level ``(p/q) x_1 - (T - x_1 - x_2)``.

    ``p`` is the precision (percent) an intruder must not reach, ``q`` the precision of the
    prior knowledge (percent; q = 100 gives the p% rule).
    """

    name = "pq"

    def __init__(self, p: float = 10.0, q: float = 100.0) -> None:
        self.p = check_real(p, "p", minimum=0, min_inclusive=False)
        self.q = check_real(q, "q", minimum=0, min_inclusive=False)
        if self.p > self.q:
            raise ParameterError("The 'p' parameter must not exceed 'q'.")

    def evaluate(self, table: Table) -> RuleOutcome:
        top = _contributions(table, 2, f"{self.name} rule")
        x1, x2 = top[:, 0], top[:, 1]
        remainder = table.values - x1 - x2
        need = self.p / self.q * x1 - remainder
        unsafe = (table.values > 0) & (need > 0)
        return _outcome(unsafe, np.maximum(need, 0.0))


class PPercent(PQRule):
    """p % rule: unsafe if ``T - x_1 - x_2 < (p / 100) x_1``; level ``p/100 x_1 - (T-x_1-x_2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, PPercent
    >>> t = Table.from_array(np.array([100, 90, 10]), {"x": ["a", "b"]},
    ...                      top=[[50, 30], [80, 9], [3, 2]], kind="magnitude")
    >>> out = PPercent(p=10).evaluate(t)
    >>> out.unsafe.tolist(), out.upper.tolist()
    ([False, True, False], [0.0, 7.0, 0.0])
    """

    name = "p_percent"

    def __init__(self, p: float = 10.0) -> None:
        super().__init__(p=p, q=100.0)


class ZeroCells(SensitivityRule):
    """Zero cells that disclose.

    With ``disclosing_only=True`` (default) the zero parts of a relation whose total is
    positive and whose other parts are all zero but one are unsafe (the one non-zero part equals
    the total: everyone in that group shares one category).  With ``disclosing_only=False``
    every zero cell is unsafe (sdcTable's ``allowZeros``).

    Parameters
    ----------
    level : float, default 1
        Upper protection level of an unsafe zero (its lower level is 0).
    """

    name = "zero_cells"

    def __init__(self, *, disclosing_only: bool = True, level: float = 1.0) -> None:
        self.disclosing_only = bool(disclosing_only)
        self.level = check_real(level, "level", minimum=0)

    def evaluate(self, table: Table) -> RuleOutcome:
        zero = table.values == 0
        if not self.disclosing_only:
            return _outcome(zero & ~table.is_total, np.full(table.n_cells, self.level), 0.0)
        m = table.constraint_matrix.tocoo()
        parts = m.data < 0
        rows, cols = m.row[parts], m.col[parts]
        nonzero_parts = np.bincount(rows, weights=~zero[cols], minlength=m.shape[0])
        total_pos = table.values[table.relation_totals] > 0
        disclosing = (nonzero_parts == 1) & total_pos
        hit = disclosing[rows] & zero[cols]
        unsafe = np.zeros(table.n_cells, dtype=bool)
        unsafe[cols[hit]] = True
        return _outcome(unsafe, np.full(table.n_cells, self.level), 0.0)


class MarkedCells(SensitivityRule):
    """Cells a user marks as unsafe, with the protection levels the user gives.

    Parameters
    ----------
    cells : sequence
        Cell numbers, a boolean mask, or dicts ``dimension -> code``.
    upper, lower, sliding : float
        Protection levels of the marked cells (``lower`` defaults to ``upper``).
    """

    name = "marked"

    def __init__(
        self,
        cells: Sequence[Any] | np.ndarray,
        *,
        upper: float = 0.0,
        lower: float | None = None,
        sliding: float = 0.0,
    ) -> None:
        self.cells = cells
        self.upper = check_real(upper, "upper", minimum=0)
        self.lower = self.upper if lower is None else check_real(lower, "lower", minimum=0)
        self.sliding = check_real(sliding, "sliding", minimum=0)

    def evaluate(self, table: Table) -> RuleOutcome:
        unsafe = np.zeros(table.n_cells, dtype=bool)
        cells = self.cells
        if isinstance(cells, np.ndarray) and cells.dtype == bool:
            if cells.size != table.n_cells:
                raise ParameterError("A boolean 'cells' mask needs one entry per cell.")
            unsafe |= cells.ravel()
        else:
            for c in cells:
                if isinstance(c, Mapping):
                    unsafe[table.cell(**c)] = True
                else:
                    ci = check_int(c, "cells", minimum=0, maximum=table.n_cells - 1)
                    unsafe[ci] = True
        n = table.n_cells
        return _outcome(unsafe, np.full(n, self.upper), np.full(n, self.lower), self.sliding)


@dataclass(frozen=True, eq=False)
class RulesResult:
    """Which rule flags which cell, and the protected table with its primaries.

    Attributes
    ----------
    table : Table
        The input table with primary status and protection levels.
    flags : dict of str to numpy.ndarray
        Per rule name, True for the cells it flags.
    """

    table: Table
    flags: dict[str, np.ndarray]

    def to_frame(self) -> pl.DataFrame:
        """Cells with one boolean column per rule (``unsafe_<rule>``)."""
        frame = self.table.to_frame()
        return frame.with_columns(
            [pl.Series(f"unsafe_{name}", flag) for name, flag in self.flags.items()]
        )

    def summary(self) -> Summary:
        """Number of cells each rule flags and the primaries overall."""
        rows: list[tuple[str, Any]] = [
            (f"unsafe by {k}", int(v.sum())) for k, v in self.flags.items()
        ]
        rows.append(("primary suppressions", int(self.table.primary.sum())))
        return Summary("Primary sensitivity rules", rows)


def evaluate_rules(table: Table, rules: Sequence[SensitivityRule]) -> RulesResult:
    """Apply ``rules`` and report which rule flags which cell (see :func:`apply_rules`)."""
    if isinstance(rules, SensitivityRule):
        rules = [rules]
    if not rules:
        raise ParameterError("Give at least one sensitivity rule.")
    status = table.status.copy()
    upper, lower, sliding = table.upper.copy(), table.lower.copy(), table.sliding.copy()
    flags: dict[str, np.ndarray] = {}
    frozen = status == CellStatus.PROTECTED
    for rule in rules:
        if not isinstance(rule, SensitivityRule):
            raise ParameterError("Every rule must be a SensitivityRule (MinFrequency, ...).")
        out = rule.evaluate(table)
        unsafe = out.unsafe & ~frozen
        if not isinstance(rule, ZeroCells | MarkedCells):
            unsafe &= status != CellStatus.EMPTY
        name = rule.name
        while name in flags:
            name += "_"
        flags[name] = unsafe
        status[unsafe] = CellStatus.PRIMARY
        upper = np.where(unsafe, np.maximum(upper, out.upper), upper)
        lower = np.where(unsafe, np.maximum(lower, out.lower), lower)
        sliding = np.where(unsafe, np.maximum(sliding, out.sliding), sliding)
    # a lower level below the a priori bound cannot be reached: cap it (tau-ARGUS does so)
    lower = np.minimum(lower, np.maximum(table.values - table.lower_bounds, 0.0))
    new = table.with_status(status=status, upper=upper, lower=lower, sliding=sliding)
    return RulesResult(new, flags)


def apply_rules(table: Table, rules: SensitivityRule | Sequence[SensitivityRule]) -> Table:
    """Mark the cells any rule finds unsafe as primary, with the largest required levels.

    Empty cells are flagged only by :class:`ZeroCells` and :class:`MarkedCells`; protected
    (frozen) cells never.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MinFrequency, apply_rules
    >>> t = apply_rules(Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]}),
    ...                 [MinFrequency(3)])
    >>> t.primary.tolist()
    [False, False, True]
    """
    seq = [rules] if isinstance(rules, SensitivityRule) else list(rules)
    return evaluate_rules(table, seq).table
