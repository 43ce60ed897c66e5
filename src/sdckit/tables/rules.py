"""Primary sensitivity rules and the protection levels they require (methods.md M11.1).

Each rule looks at every cell of a :class:`~sdckit.tables.Table` and says whether it is unsafe
and which protection it needs: an upper level (the intruder's upper bound must reach at least
value + upper), a lower level (lower bound at most value - lower) and a sliding level (the
interval at least that wide).  :func:`apply_rules` combines rules: a cell is primary if any rule
flags it, and its levels are the largest any flagging rule asks for.

Weighted tables (``Table.from_microdata(..., weight=...)``, survey data):

* the minimum-frequency rule counts *respondents* (unweighted contributors);
* the dominance, p% and pq rules use the weighted cell total ``T = sum_i w_i x_i`` and the
  *expanded* contributions ``w_i x_i``: ``x_1, x_2, ...`` in the formulas below are the
  largest values of ``w_i x_i`` (what the table's ``top`` holds).  A respondent who dominates
  a cell dominates its weighted total in the same proportion, so the rules flag the same cells
  as without weights when all weights are equal, and a single dominant respondent is flagged
  whatever its weight.  This assumes an intruder who knows the weights (published design
  weights, take-all strata), for whom ``T - w_2 x_2`` estimates ``w_1 x_1`` as precisely as an
  unweighted total discloses ``x_1``.
* tau-ARGUS ("apply weights": libtauargus ``ComputeWeightedScoreCell``; Hundepool et al. 2012,
  p. 151) and sdcTable (records replicated by their weights, rounded alternately up and down)
  instead count a respondent of weight ``w_i`` as ``w_i`` virtual contributors of ``x_i``: that
  protects the population the sample stands for, not the respondent (with weights >= 2 it never
  flags a cell under a (1, k)-dominance rule with k >= 50).  To reproduce their flags, give
  virtual contributions with ``Table.from_array(..., top=...)``.

Every rule follows the protection contract of :mod:`sdckit.protection`: keyword-only parameters
that ``__init__`` only stores, declared in ``parameters`` and checked when the rule is evaluated
(an error names the rule and the parameter), and registration in ``registry("rule")`` under its
``alias`` (the name used in job files).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_int
from sdckit.errors import DataError, ParameterError
from sdckit.protection import (
    Boolean,
    Instance,
    Integer,
    ListOf,
    MapOf,
    Options,
    Param,
    Parameterised,
    Real,
)
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


class SensitivityRule(Parameterised, ABC):
    """A primary sensitivity rule: :meth:`evaluate` gives a :class:`RuleOutcome`.

    ``name`` is the rule's label in :class:`RulesResult` (``flags`` and the ``unsafe_<name>``
    columns); ``alias`` is its name in job files.
    """

    name: ClassVar[str] = "rule"
    family: ClassVar[str | None] = "rule"
    #: The name used in job files (``"min_frequency"``); set by every concrete rule.
    alias: ClassVar[str]

    @abstractmethod
    def evaluate(self, table: Table) -> RuleOutcome:
        """Check the parameters, then give the unsafe cells of ``table`` and their levels."""

    @classmethod
    @abstractmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """A small instance and table for the shared contract tests."""


def _magnitude_example(top: list[list[float]]) -> Table:
    """A one-dimensional magnitude table (total 100 = 90 + 10) with the given contributions."""
    return Table.from_array(
        np.array([100.0, 90.0, 10.0]), {"x": ["a", "b"]}, top=top, kind="magnitude"
    )


#: The ``level`` parameter of the rules that count or rank contributors.
_LEVEL = Param(
    None,
    Options("respondent", "holding"),
    help="contributors counted and ranked: the table's (None), respondents or holdings",
)


def contributors_at(table: Table, level: str | None, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The contributor counts and largest contributions a rule reads at its ``level``.

    None: the table's own (holdings when built with a holding column, else respondents, else
    records); "respondent": the individual level (respondents, or records without a respondent
    column: tau-ARGUS's first rules); "holding": the holding level (tau-ARGUS's holding rules).
    """
    if level == "holding":
        c = table.contributions
        if c is None or c.level != "holding":
            raise DataError(
                f'The {rule} asks for the holding level (level = "holding") but the table has '
                "no holdings; build it with Table.from_microdata(..., holding=...)."
            )
    if level == "respondent" and table.respondent_contributors is not None:
        top = table.respondent_top
        return table.respondent_contributors, np.zeros((table.n_cells, 0)) if top is None else top
    return table.n_contributors, table.top


def _contributions(table: Table, n: int, rule: str, level: str | None = None) -> np.ndarray:
    _, top_all = contributors_at(table, level, rule)
    if top_all.shape[1] < n:
        raise DataError(
            f"The {rule} needs the {n} largest contributions of each cell; build the table "
            f"with Table.from_microdata(..., n_top={max(n, 2)}) or give top=... columns."
        )
    top = top_all[:, :n]
    if np.any(top < 0) or np.any(table.values < 0):
        raise DataError(
            f"The {rule} needs non-negative contributions; the table has negative values."
        )
    return top


def _contributor_counts(table: Table, level: str | None = None) -> np.ndarray:
    counts, _ = contributors_at(table, level, "minimum-frequency rule")
    if np.all(counts >= 0):
        return counts
    if table.kind == "count":
        return np.rint(table.values).astype(np.int64)
    raise DataError(
        "The minimum-frequency rule needs the number of contributors of each cell; build the "
        "table from microdata or give n_contributors=..."
    )


class MinFrequency(SensitivityRule):
    """Minimum frequency: a non-empty cell with fewer than ``threshold`` contributors is unsafe.

    Contributors are respondents: in a weighted table they are counted without their weights.

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
    level : {None, "respondent", "holding"}, default None
        Which contributors the rule counts and ranks: the table's own (None: holdings when
        the table was built with a holding column, else respondents or records), the
        respondents (tau-ARGUS's individual-level rules) or the holdings (tau-ARGUS's
        holding-level rules; the table needs a holding column).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MinFrequency
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> MinFrequency(threshold=3).evaluate(t).unsafe.tolist()
    [False, False, True]
    """

    name: ClassVar[str] = "min_frequency"
    alias: ClassVar[str] = "min_frequency"
    description: ClassVar[str] = (
        "Marks as unsafe every non-empty cell with fewer contributors than the threshold "
        "(minimum frequency rule)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "threshold": Param(
            Integer(minimum=1), help="cells with 1 to threshold - 1 contributors are unsafe"
        ),
        "safety_range": Param(
            Real(minimum=0), help="protection level as a percentage of the cell value"
        ),
        "minimum_level": Param(Real(minimum=0), help="smallest protection level of a cell"),
        "level": _LEVEL,
    }

    def __init__(
        self,
        *,
        threshold: int = 3,
        safety_range: float = 10.0,
        minimum_level: float = 1.0,
        level: str | None = None,
    ) -> None:
        self.threshold = threshold
        self.safety_range = safety_range
        self.minimum_level = minimum_level
        self.level = level

    def evaluate(self, table: Table) -> RuleOutcome:
        self.validate_params()
        n = _contributor_counts(table, self.level)
        unsafe = (n > 0) & (n < self.threshold)
        level = np.maximum(self.safety_range / 100.0 * np.abs(table.values), self.minimum_level)
        return _outcome(unsafe, level)

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """The census table of worked example E3 (counts), threshold 3."""
        from sdckit.tables.examples import e3_table

        return cls(threshold=3), e3_table()


class Dominance(SensitivityRule):
    """(n, k)-dominance: unsafe if the ``n`` largest contributions exceed ``k`` % of the cell.

    Protection level (upper and lower): ``(100 / k) * (x_1 + ... + x_n) - T``.  In a weighted
    table ``T`` is the weighted total and ``x_1 ... x_n`` are the largest expanded
    contributions ``w_i x_i`` (see :mod:`sdckit.tables.rules`).  A cell whose ``n`` largest
    contributions are exactly ``k`` % of it is safe; the R package GaussSuppression's
    dominance rule (``MagnitudeRule``) counts it unsafe (``>=``).

    Parameters
    ----------
    n : int, default 1
        Number of largest contributions.
    k : float, default 85
        Percentage of the cell value (0 < k <= 100) they may reach.
    level : {None, "respondent", "holding"}, default None
        Which contributors the rule counts and ranks: the table's own (None: holdings when
        the table was built with a holding column, else respondents or records), the
        respondents (tau-ARGUS's individual-level rules) or the holdings (tau-ARGUS's
        holding-level rules; the table needs a holding column).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, Dominance
    >>> t = Table.from_array(np.array([100, 90, 10]), {"x": ["a", "b"]},
    ...                      top=[[50, 30], [89, 1], [6, 4]], kind="magnitude")
    >>> Dominance(n=1, k=85).evaluate(t).unsafe.tolist()
    [False, True, False]
    """

    name: ClassVar[str] = "dominance"
    alias: ClassVar[str] = "dominance"
    description: ClassVar[str] = (
        "Marks as unsafe every cell whose n largest contributions exceed k percent of its "
        "value (dominance rule)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "n": Param(Integer(minimum=1), help="number of largest contributions"),
        "k": Param(
            Real(minimum=0, maximum=100, min_open=True),
            help="percentage of the cell value the n largest contributions may reach",
        ),
        "level": _LEVEL,
    }

    def __init__(self, *, n: int = 1, k: float = 85.0, level: str | None = None) -> None:
        self.n = n
        self.k = k
        self.level = level

    def evaluate(self, table: Table) -> RuleOutcome:
        self.validate_params()
        top = _contributions(table, self.n, "dominance rule", self.level)
        big = top.sum(axis=1)
        total = table.values
        unsafe = (total > 0) & (big > self.k / 100.0 * total)
        level = np.maximum(100.0 / self.k * big - total, 0.0)
        return _outcome(unsafe, level)

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """A one-dimensional magnitude table where one cell is dominated by one contributor."""
        return cls(n=1, k=85), _magnitude_example([[50, 30], [89, 1], [6, 4]])


class PQRule(SensitivityRule):
    """pq rule: unsafe if ``T - x_1 - x_2 < (p / q) x_1``; level ``(p/q) x_1 - (T - x_1 - x_2)``.

    ``p`` is the precision (percent) an intruder must not reach, ``q`` the precision of the
    prior knowledge (percent; q = 100 gives the p% rule).  In a weighted table ``T`` is the
    weighted total and ``x_1, x_2`` are the two largest expanded contributions ``w_i x_i``.

    Parameters
    ----------
    p : float, default 10
        Precision (percent, > 0) an intruder must not reach; at most ``q``.
    q : float, default 100
        Precision (percent, > 0) of the intruder's prior knowledge.
    level : {None, "respondent", "holding"}, default None
        Which contributors the rule counts and ranks: the table's own (None: holdings when
        the table was built with a holding column, else respondents or records), the
        respondents (tau-ARGUS's individual-level rules) or the holdings (tau-ARGUS's
        holding-level rules; the table needs a holding column).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, PQRule
    >>> t = Table.from_array(np.array([100, 90, 10]), {"x": ["a", "b"]},
    ...                      top=[[50, 30], [80, 9], [3, 2]], kind="magnitude")
    >>> PQRule(p=10, q=50).evaluate(t).upper.tolist()
    [0.0, 15.0, 0.0]
    """

    name: ClassVar[str] = "pq"
    alias: ClassVar[str] = "pq"
    description: ClassVar[str] = (
        "Marks as unsafe every cell whose value less its two largest contributions is below "
        "p/q of the largest one (pq rule)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "p": Param(
            Real(minimum=0, min_open=True),
            help="precision (percent) an intruder must not reach; at most q",
        ),
        "q": Param(
            Real(minimum=0, min_open=True), help="precision (percent) of the prior knowledge"
        ),
        "level": _LEVEL,
    }

    def __init__(self, *, p: float = 10.0, q: float = 100.0, level: str | None = None) -> None:
        self.p = p
        self.q = q
        self.level = level

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """Check the declared parameters, and that ``p`` does not exceed ``q``."""
        super().validate_params(columns, where=where)
        if self.p > self.q:
            prefix = f"{where}: " if where else ""
            raise ParameterError(
                f"{prefix}The 'p' parameter of {type(self).__name__} must not exceed 'q' "
                f"({float(self.q):g}); got {float(self.p):g}."
            )

    def evaluate(self, table: Table) -> RuleOutcome:
        self.validate_params()
        top = _contributions(table, 2, f"{self.name} rule", self.level)
        x1, x2 = top[:, 0], top[:, 1]
        remainder = table.values - x1 - x2
        need = self.p / self.q * x1 - remainder
        unsafe = (table.values > 0) & (need > 0)
        return _outcome(unsafe, np.maximum(need, 0.0))

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """A one-dimensional magnitude table where one cell fails the rule."""
        return cls(p=10, q=50), _magnitude_example([[50, 30], [80, 9], [3, 2]])


class PPercent(PQRule):
    """p % rule: unsafe if ``T - x_1 - x_2 < (p / 100) x_1``; level ``p/100 x_1 - (T-x_1-x_2)``.

    The :class:`PQRule` with ``q = 100``.  In a weighted table ``T`` is the weighted total and
    ``x_1, x_2`` are the two largest expanded contributions ``w_i x_i``.

    Parameters
    ----------
    p : float, default 10
        Precision (percent, 0 < p <= 100) an intruder must not reach.
    level : {None, "respondent", "holding"}, default None
        Which contributors the rule counts and ranks: the table's own (None: holdings when
        the table was built with a holding column, else respondents or records), the
        respondents (tau-ARGUS's individual-level rules) or the holdings (tau-ARGUS's
        holding-level rules; the table needs a holding column).

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

    name: ClassVar[str] = "p_percent"
    alias: ClassVar[str] = "p_percent"
    description: ClassVar[str] = (
        "Marks as unsafe every cell whose value less its two largest contributions is below "
        "p percent of the largest one (p% rule)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "p": Param(
            Real(minimum=0, maximum=100, min_open=True),
            help="precision (percent) an intruder must not reach",
        ),
        "level": _LEVEL,
    }
    #: The precision of the prior knowledge is 100 % (not a parameter).
    q: float = 100.0

    def __init__(self, *, p: float = 10.0, level: str | None = None) -> None:
        self.p = p
        self.level = level

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """A one-dimensional magnitude table where one cell fails the rule."""
        return cls(p=10), _magnitude_example([[50, 30], [80, 9], [3, 2]])


class ZeroCells(SensitivityRule):
    """Zero cells that disclose.

    With ``disclosing_only=True`` (default) the zero parts of a relation whose total is
    positive and whose other parts are all zero but one are unsafe (the one non-zero part equals
    the total: everyone in that group shares one category).  With ``disclosing_only=False``
    every zero cell is unsafe, totals included (a zero total discloses its zero parts), as
    with GaussSuppression's ``protectZeros = TRUE``.

    Parameters
    ----------
    level : float, default 1
        Upper protection level of an unsafe zero (its lower level is 0).
    """

    name: ClassVar[str] = "zero_cells"
    alias: ClassVar[str] = "zero_cells"
    description: ClassVar[str] = (
        "Marks as unsafe the zero cells that reveal that a whole group falls in one category, "
        "or every zero cell."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "disclosing_only": Param(
            Boolean(), help="only zeros that disclose are unsafe (otherwise every zero cell)"
        ),
        "level": Param(Real(minimum=0), help="upper protection level of an unsafe zero"),
    }

    def __init__(self, *, disclosing_only: bool = True, level: float = 1.0) -> None:
        self.disclosing_only = disclosing_only
        self.level = level

    def evaluate(self, table: Table) -> RuleOutcome:
        self.validate_params()
        level = float(self.level)
        zero = table.values == 0
        if not self.disclosing_only:
            # a zero total is a sum of zero cells: it discloses them, so it is unsafe too
            return _outcome(zero, np.full(table.n_cells, level), 0.0)
        m = table.constraint_matrix.tocoo()
        parts = m.data < 0
        rows, cols = m.row[parts], m.col[parts]
        nonzero_parts = np.bincount(rows, weights=~zero[cols], minlength=m.shape[0])
        total_pos = table.values[table.relation_totals] > 0
        disclosing = (nonzero_parts == 1) & total_pos
        hit = disclosing[rows] & zero[cols]
        unsafe = np.zeros(table.n_cells, dtype=bool)
        unsafe[cols[hit]] = True
        return _outcome(unsafe, np.full(table.n_cells, level), 0.0)

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """The census table of worked example E3 (a row with one non-zero cell)."""
        from sdckit.tables.examples import e3_table

        return cls(), e3_table()


class MarkedCells(SensitivityRule):
    """Cells a user marks as unsafe, with the protection levels the user gives.

    Parameters
    ----------
    cells : sequence
        Cell numbers, a boolean mask (a numpy array, one entry per cell), or dicts
        ``dimension -> code``.
    upper, lower, sliding : float
        Protection levels of the marked cells (``lower`` defaults to ``upper``).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> MarkedCells(cells=[{"x": "b"}], upper=1).evaluate(t).unsafe.tolist()
    [False, False, True]
    """

    name: ClassVar[str] = "marked"
    alias: ClassVar[str] = "marked_cells"
    description: ClassVar[str] = (
        "Marks the cells the user names as unsafe, with the protection levels the user gives."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "cells": Param(
            ListOf(Integer(minimum=0)),
            ListOf(MapOf(Instance((str, numbers.Integral), "a category code"))),
            Instance((np.ndarray,), "a numpy array (a boolean mask, one entry per cell)"),
            help="the cells to mark: cell numbers, a boolean mask, or dimension -> code tables",
        ),
        "upper": Param(Real(minimum=0), help="upper protection level of the marked cells"),
        "lower": Param(
            Real(minimum=0), None, help="lower protection level of the marked cells (default upper)"
        ),
        "sliding": Param(Real(minimum=0), help="sliding protection level of the marked cells"),
    }

    def __init__(
        self,
        *,
        cells: Sequence[Any] | np.ndarray,
        upper: float = 0.0,
        lower: float | None = None,
        sliding: float = 0.0,
    ) -> None:
        self.cells = cells
        self.upper = upper
        self.lower = lower
        self.sliding = sliding

    def evaluate(self, table: Table) -> RuleOutcome:
        self.validate_params()
        upper = float(self.upper)
        lower = upper if self.lower is None else float(self.lower)
        sliding = float(self.sliding)
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
        return _outcome(unsafe, np.full(n, upper), np.full(n, lower), sliding)

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """The census table of worked example E3, two interior cells marked."""
        from sdckit.tables.examples import e3_table

        t = e3_table()
        return cls(cells=[t.cell(row="1", col="B"), t.cell(row="2", col="C")], upper=2), t


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
    # the table keeps its rules: the union audit judges unions of its cells by them
    return RulesResult(replace(new, rules=(*table.rules, *rules)), flags)


def apply_rules(table: Table, rules: SensitivityRule | Sequence[SensitivityRule]) -> Table:
    """Mark the cells any rule finds unsafe as primary, with the largest required levels.

    Empty cells are flagged only by :class:`ZeroCells` and :class:`MarkedCells`; protected
    (frozen) cells never.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MinFrequency, apply_rules
    >>> t = apply_rules(Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]}),
    ...                 [MinFrequency(threshold=3)])
    >>> t.primary.tolist()
    [False, False, True]
    """
    seq = [rules] if isinstance(rules, SensitivityRule) else list(rules)
    return evaluate_rules(table, seq).table
