"""Rounding of frequency tables and its audit (methods.md M12).

* :func:`round_deterministic`: every cell (margins included) to the nearest multiple of the base
  (ties upward); the table is no longer additive.
* :func:`round_random`: unbiased random rounding, up with probability ``residue / base``.
* :func:`round_controlled`: an additive rounding (margins included) that minimises the total
  absolute change, as a mixed-integer model; zero-restricted (multiples of the base stay,
  others go to an adjacent multiple) or with ``k_steps`` more freedom.
* :func:`round_small_cells` and :func:`small_cell_adjustment`: only the small cells change; the
  margins are added up again.
* :func:`audit_rounding`: the feasibility interval of each cell given the published values, the
  rounding base and the additivity relations.

Each rounding method is also a :class:`~sdckit.tables.TableMethod` (:class:`DeterministicRounding`,
:class:`RandomRounding`, :class:`ControlledRounding`, :class:`SmallCellRounding`,
:class:`SmallCellAdjustment`): keyword-only parameters checked when it is applied, and
``apply(table)`` giving the same :class:`RoundingResult` as its function twin.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import polars as pl
from scipy.sparse import eye, hstack, vstack

from sdckit._results import Summary
from sdckit._validation import check_int, check_seed
from sdckit.errors import DataError, InfeasibleError, ParameterError, SdcWarning
from sdckit.protection import Boolean, Integer, Options, Param, Real, Seed
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables._method import TableMethod
from sdckit.tables.table import Table
from sdckit.twins import function_twin

__all__ = [
    "ControlledRounding",
    "DeterministicRounding",
    "RandomRounding",
    "RoundingAudit",
    "RoundingResult",
    "SmallCellAdjustment",
    "SmallCellRounding",
    "audit_rounding",
    "round_controlled",
    "round_deterministic",
    "round_random",
    "round_small_cells",
    "small_cell_adjustment",
]


@dataclass(frozen=True, eq=False)
class RoundingResult:
    """Original and rounded (or adjusted) cell values.

    Attributes
    ----------
    table : Table
        The original table.
    rounded : numpy.ndarray
        The published value of each cell.
    base : int
    method : str
    time_limited : str, optional
        The parameter whose wall-clock limit stopped the search before its rounding was
        proven optimal (``"time_limit"``; the rounding is valid but may differ on another
        run), else None.
    """

    table: Table
    rounded: np.ndarray
    base: int
    method: str
    time_limited: str | None = None

    @property
    def additive(self) -> bool:
        """True when the published table still adds up."""
        return bool(np.allclose(self.table.constraint_matrix @ self.rounded, 0.0))

    @property
    def rounded_table(self) -> Table:
        """A :class:`Table` holding the published values."""
        return replace(self.table, values=self.rounded.astype(float))

    def to_frame(self) -> pl.DataFrame:
        """Codes, original and published value of each cell."""
        frame = self.table.to_frame(status=False).select([*self.table.dimensions, "is_total"])
        return frame.with_columns(
            pl.Series("original", self.table.values),
            pl.Series("published", self.rounded),
            pl.Series("difference", self.rounded - self.table.values),
        )

    def summary(self) -> Summary:
        """Changed cells, the largest and the total absolute change, additivity."""
        diff = self.rounded - self.table.values
        rows = [
            ("method", self.method),
            ("base", self.base),
            ("cells", self.table.n_cells),
            ("cells changed", int(np.count_nonzero(diff))),
            ("largest absolute change", float(np.abs(diff).max(initial=0.0))),
            ("total absolute change", float(np.abs(diff).sum())),
            ("additive", self.additive),
        ]
        if self.time_limited:
            rows.append(("cut short by (wall clock)", self.time_limited))
        return Summary("Rounded table", rows)


def _counts(table: Table) -> np.ndarray:
    v = table.values
    if np.any(v < 0) or not np.allclose(v, np.round(v)):
        raise DataError("Rounding needs a table of non-negative integer counts.")
    return np.round(v).astype(np.int64)


def _base(base: object) -> int:
    return check_int(base, "base", minimum=2)


def _readd(table: Table, interior_values: np.ndarray) -> np.ndarray:
    """Values of every cell from the interior cells' values (margins added up)."""
    interior = ~table.is_total
    grid = np.where(interior, interior_values, 0.0).reshape(table.shape)
    for d, h in enumerate(table.hierarchies):
        moved = np.moveaxis(grid, d, 0)
        for p in reversed(range(h.size)):  # children come after their parent: sum bottom-up
            kids = h.children[p]
            if kids:
                moved[p] = moved[list(kids)].sum(axis=0)
    return grid.ravel()


_BASE = Param(Integer(minimum=2), help="the rounding base: published values are its multiples")
_SEED = Param(Seed(), None, help="random seed (an integer or a numpy Generator)")


def _count_example() -> Table:
    """The census table of worked example E3 (small counts, zeros) for the contract tests."""
    from sdckit.tables.examples import e3_table

    return e3_table()


class DeterministicRounding(TableMethod):
    """Round every cell independently to the nearest multiple of ``base``.

    Parameters
    ----------
    base : int
        The rounding base (at least 2).
    ties : {"up", "even"}, default "up"
        Halfway values go up, or to the even multiple.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import DeterministicRounding, Table
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> DeterministicRounding(base=3).apply(t).rounded.tolist()
    [6, 6, 3]
    """

    name: ClassVar[str] = "deterministic rounding"
    alias: ClassVar[str] = "deterministic"
    kind: ClassVar[str] = "rounding"
    description: ClassVar[str] = (
        "Rounds every cell, totals included, to the nearest multiple of the base on its own "
        "(the table no longer adds up)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "base": _BASE,
        "ties": Param(Options("up", "even"), help="halfway values go up, or to the even multiple"),
    }

    def __init__(self, *, base: int, ties: str = "up") -> None:
        self.base = base
        self.ties = ties

    def apply(self, table: Table) -> RoundingResult:
        """Round the cells of ``table`` (a table of non-negative integer counts)."""
        self.validate_params()
        b = int(self.base)
        ties = self.ties
        v = _counts(table)
        q, r = np.divmod(v, b)
        up = 2 * r > b if ties == "even" else 2 * r >= b
        if ties == "even":
            up |= (2 * r == b) & (q % 2 == 1)
        return RoundingResult(table, (q + up) * b, b, "deterministic")

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """Base 3 on the census table of worked example E3."""
        return cls(base=3), _count_example()


class RandomRounding(TableMethod):
    """Unbiased random rounding: up to the next multiple with probability residue / base.

    Parameters
    ----------
    base : int
        The rounding base (at least 2).
    seed : int or numpy.random.Generator, optional
        Random seed.
    additive : bool, default False
        Round only the interior cells and add the margins up (additive, but the margins'
        errors add up too); otherwise every cell is rounded on its own.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import RandomRounding, Table
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> res = RandomRounding(base=5, seed=1).apply(t)
    >>> bool(np.all(res.rounded % 5 == 0))
    True
    """

    name: ClassVar[str] = "random rounding"
    alias: ClassVar[str] = "random"
    kind: ClassVar[str] = "rounding"
    description: ClassVar[str] = (
        "Rounds every cell to a multiple of the base at random, up with a probability that "
        "keeps its expected value (unbiased random rounding)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "base": _BASE,
        "seed": _SEED,
        "additive": Param(Boolean(), help="round only the interior cells and add the margins up"),
    }

    def __init__(self, *, base: int, seed: Any = None, additive: bool = False) -> None:
        self.base = base
        self.seed = seed
        self.additive = additive

    def apply(self, table: Table) -> RoundingResult:
        """Round the cells of ``table`` (a table of non-negative integer counts)."""
        self.validate_params()
        b = int(self.base)
        rng = check_seed(self.seed)
        v = _counts(table)
        q, r = np.divmod(v, b)
        up = rng.random(v.size) < r / b
        out = (q + up) * b
        if self.additive:
            out = np.round(_readd(table, out)).astype(np.int64)
        return RoundingResult(table, out, b, "random")

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """Base 3, a fixed seed, on the census table of worked example E3."""
        return cls(base=3, seed=7), _count_example()


class ControlledRounding(TableMethod):
    """Controlled rounding: an additive table of multiples of ``base``, closest in L1.

    Each cell goes to ``floor`` or ``floor + base`` (multiples of the base stay) when
    ``k_steps=0`` (zero-restricted); ``k_steps=K`` allows ``K`` more steps each way (never below
    0).  All relations (margins included) hold exactly.  Solved as a MILP (HiGHS).

    Parameters
    ----------
    base : int
        The rounding base (at least 2).
    k_steps : int, default 0
        Extra steps of the base allowed each way.
    time_limit : float, optional
        Seconds allowed for the MILP.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import ControlledRounding, Table
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> ControlledRounding(base=3).apply(t).rounded.tolist()
    [6, 6, 0]
    """

    name: ClassVar[str] = "controlled rounding"
    alias: ClassVar[str] = "controlled"
    kind: ClassVar[str] = "rounding"
    description: ClassVar[str] = (
        "Rounds every cell to a multiple of the base so that the table still adds up, changing "
        "the values as little as possible (controlled rounding)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "base": _BASE,
        "k_steps": Param(Integer(minimum=0), help="extra steps of the base allowed each way"),
        "time_limit": Param(
            Real(minimum=0, min_open=True), None, help="seconds allowed for the MILP"
        ),
    }

    def __init__(self, *, base: int, k_steps: int = 0, time_limit: float | None = None) -> None:
        self.base = base
        self.k_steps = k_steps
        self.time_limit = time_limit

    def apply(self, table: Table) -> RoundingResult:
        """Round the cells of ``table`` (a table of non-negative integer counts).

        Raises
        ------
        InfeasibleError
            No such rounding exists (possible for tables of three or more dimensions); try
            ``k_steps=1``.
        """
        self.validate_params()
        b = int(self.base)
        k = int(self.k_steps)
        time_limit = self.time_limit
        v = _counts(table)
        n = v.size
        q, r = np.divmod(v, b)
        lo = np.maximum(q - k, 0)
        hi = np.where(r == 0, q + k, q + 1 + k)
        m = table.constraint_matrix
        from scipy.optimize import Bounds, LinearConstraint, milp  # (on first use)

        # variables: multiples x (integer) and absolute deviations t >= |v - b x|
        eq = hstack([m * b, m * 0]).tocsr()
        ident = eye(n, format="csr")
        dev = vstack([hstack([ident * b, ident]), hstack([-ident * b, ident])]).tocsr()
        constraints = [
            LinearConstraint(eq, 0, 0),
            LinearConstraint(dev, np.r_[v, -v], np.inf),
        ]
        c = np.r_[np.zeros(n), np.ones(n)]
        options: dict[str, Any] = {"mip_rel_gap": 0.0}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        res = milp(
            c,
            constraints=constraints,
            bounds=Bounds(np.r_[lo, np.zeros(n)], np.r_[hi, np.full(n, np.inf)]),
            integrality=np.r_[np.ones(n), np.zeros(n)],
            options=options,
        )
        if res.x is None:
            raise InfeasibleError(
                f"No controlled rounding to base {b} with k_steps={k} exists for this table; "
                "try a larger k_steps."
            )
        out = np.round(res.x[:n]).astype(np.int64) * b
        cut = res.status == 1  # scipy's milp: the time limit was reached (not proven optimal)
        if cut:
            warnings.warn(
                "ControlledRounding: 'time_limit' (a wall-clock limit) stopped the search "
                "before the rounding was proven optimal; the rounding is valid but depends on "
                "the machine's speed and may differ on another run.  Raise or unset it.",
                SdcWarning,
                stacklevel=2,
            )
        return RoundingResult(table, out, b, "controlled", "time_limit" if cut else None)

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """Base 3 on the census table of worked example E3."""
        return cls(base=3), _count_example()


class SmallCellRounding(TableMethod):
    """Round only the interior cells below ``threshold`` (default ``base``); re-add margins.

    Small cells go to a multiple of ``base`` (randomly and unbiased, or to the nearest one);
    larger interior cells are kept and the margins are the sums of the published interior.

    Parameters
    ----------
    base : int
        The rounding base (at least 2).
    threshold : int, optional
        Interior cells ``0 < n < threshold`` are rounded (default ``base``).
    random : bool, default True
        Round at random (unbiased) or to the nearest multiple (ties upward).
    seed : int or numpy.random.Generator, optional
        Random seed (with ``random=True``).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import SmallCellRounding, Table
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> SmallCellRounding(base=3, random=False).apply(t).rounded.tolist()
    [10, 7, 3]
    """

    name: ClassVar[str] = "small cell rounding"
    alias: ClassVar[str] = "small_cells"
    kind: ClassVar[str] = "rounding"
    description: ClassVar[str] = (
        "Rounds only the small interior cells to a multiple of the base and adds the totals "
        "up again."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "base": _BASE,
        "threshold": Param(
            Integer(minimum=1),
            None,
            help="interior cells below this count are rounded (default: the base)",
        ),
        "random": Param(Boolean(), help="round at random (unbiased), or to the nearest multiple"),
        "seed": _SEED,
    }

    def __init__(
        self,
        *,
        base: int,
        threshold: int | None = None,
        random: bool = True,
        seed: Any = None,
    ) -> None:
        self.base = base
        self.threshold = threshold
        self.random = random
        self.seed = seed

    def apply(self, table: Table) -> RoundingResult:
        """Round the small cells of ``table`` (a table of non-negative integer counts)."""
        self.validate_params()
        b = int(self.base)
        limit = b if self.threshold is None else int(self.threshold)
        v = _counts(table)
        small = (~table.is_total) & (v > 0) & (v < limit)
        q, r = np.divmod(v, b)
        if self.random:
            up = check_seed(self.seed).random(v.size) < r / b
        else:
            up = 2 * r >= b
        new = np.where(small, (q + up) * b, v)
        rounded = np.round(_readd(table, new)).astype(np.int64)
        return RoundingResult(table, rounded, b, "small_cells")

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """Base 3, a fixed seed, on the census table of worked example E3."""
        return cls(base=3, seed=7), _count_example()


class SmallCellAdjustment(TableMethod):
    """Replace interior counts ``0 < n < base`` by 0 or ``base`` (P(base) = n / base).

    The expectation of every cell is kept; margins are added up from the adjusted interior.

    Parameters
    ----------
    base : int, default 3
        Interior counts below it are adjusted (at least 2).
    seed : int or numpy.random.Generator, optional
        Random seed.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import SmallCellAdjustment, Table
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> res = SmallCellAdjustment(base=3, seed=0).apply(t)
    >>> res.rounded[1], res.rounded[2] in (0, 3)
    (np.int64(7), True)
    """

    name: ClassVar[str] = "small cell adjustment"
    alias: ClassVar[str] = "adjustment"
    kind: ClassVar[str] = "rounding"
    description: ClassVar[str] = (
        "Replaces every small interior count by 0 or the base at random, keeping its expected "
        "value, and adds the totals up again."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "base": Param(Integer(minimum=2), help="interior counts below it become 0 or the base"),
        "seed": _SEED,
    }

    def __init__(self, *, base: int = 3, seed: Any = None) -> None:
        self.base = base
        self.seed = seed

    def apply(self, table: Table) -> RoundingResult:
        """Adjust the small cells of ``table`` (a table of non-negative integer counts)."""
        self.validate_params()
        b = int(self.base)
        v = _counts(table)
        small = (~table.is_total) & (v > 0) & (v < b)
        up = check_seed(self.seed).random(v.size) < v / b
        new = np.where(small, np.where(up, b, 0), v)
        rounded = np.round(_readd(table, new)).astype(np.int64)
        return RoundingResult(table, rounded, b, "adjustment")

    @classmethod
    def contract_example(cls) -> tuple[TableMethod, Table]:
        """Base 3, a fixed seed, on the census table of worked example E3."""
        return cls(base=3, seed=7), _count_example()


@function_twin(DeterministicRounding, roles=False)
def round_deterministic(table: Table, **params: Any) -> RoundingResult:
    """Round every cell independently to the nearest multiple of ``base``.

    The function form of :class:`DeterministicRounding`.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    base, ties
        The parameters of :class:`DeterministicRounding`, by name (keyword arguments only).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_deterministic
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> round_deterministic(t, base=3).rounded.tolist()
    [6, 6, 3]
    """


@function_twin(RandomRounding, roles=False)
def round_random(table: Table, **params: Any) -> RoundingResult:
    """Unbiased random rounding: up to the next multiple with probability residue / base.

    The function form of :class:`RandomRounding`.

    With ``additive=True`` only the interior cells are rounded and the margins are added up
    (additive, but the margins' errors add up too); otherwise every cell is rounded on its own.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    base, seed, additive
        The parameters of :class:`RandomRounding`, by name (keyword arguments only).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_random
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> res = round_random(t, base=5, seed=1)
    >>> bool(np.all(res.rounded % 5 == 0))
    True
    """


@function_twin(ControlledRounding, roles=False)
def round_controlled(table: Table, **params: Any) -> RoundingResult:
    """Controlled rounding: an additive table of multiples of ``base``, closest in L1.

    The function form of :class:`ControlledRounding`.

    Each cell goes to ``floor`` or ``floor + base`` (multiples of the base stay) when
    ``k_steps=0`` (zero-restricted); ``k_steps=K`` allows ``K`` more steps each way (never below
    0).  All relations (margins included) hold exactly.  Solved as a MILP (HiGHS).

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    base, k_steps, time_limit
        The parameters of :class:`ControlledRounding`, by name (keyword arguments only).

    Raises
    ------
    InfeasibleError
        No such rounding exists (possible for tables of three or more dimensions); try
        ``k_steps=1``.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_controlled
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> res = round_controlled(t, base=3)
    >>> res.rounded.tolist(), res.additive
    ([6, 6, 0], True)
    """


@function_twin(SmallCellRounding, roles=False)
def round_small_cells(table: Table, **params: Any) -> RoundingResult:
    """Round only the interior cells below ``threshold`` (default ``base``); re-add margins.

    The function form of :class:`SmallCellRounding`.

    Small cells go to a multiple of ``base`` (randomly and unbiased, or to the nearest one);
    larger interior cells are kept and the margins are the sums of the published interior.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    base, threshold, random, seed
        The parameters of :class:`SmallCellRounding`, by name (keyword arguments only).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_small_cells
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> round_small_cells(t, base=3, random=False).rounded.tolist()  # 2 -> 3, total re-added
    [8, 5, 3]
    """


@function_twin(SmallCellAdjustment, roles=False)
def small_cell_adjustment(table: Table, **params: Any) -> RoundingResult:
    """Replace interior counts ``0 < n < base`` by 0 or ``base`` (P(base) = n / base).

    The function form of :class:`SmallCellAdjustment`.

    The expectation of every cell is kept; margins are added up from the adjusted interior.

    Parameters
    ----------
    table : Table
        The table (it is not modified).
    base, seed
        The parameters of :class:`SmallCellAdjustment`, by name (keyword arguments only).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, small_cell_adjustment
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> res = small_cell_adjustment(t, base=3, seed=0)
    >>> res.rounded[1], res.rounded[2] in (0, 3)
    (np.int64(7), True)
    """


@dataclass(frozen=True, eq=False)
class RoundingAudit:
    """Feasibility intervals of the true cell values given a published rounded table.

    Attributes
    ----------
    table : Table
        The table structure (values are not used by the audit).
    published : numpy.ndarray
    minimum, maximum : numpy.ndarray
        Interval of each cell.
    """

    table: Table
    published: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray

    @property
    def exact(self) -> np.ndarray:
        """Cells whose true value is pinned down exactly."""
        return self.maximum - self.minimum < 0.5

    def to_frame(self) -> pl.DataFrame:
        """Codes, published value and interval of each cell."""
        frame = self.table.to_frame(status=False).select(list(self.table.dimensions))
        return frame.with_columns(
            pl.Series("published", self.published),
            pl.Series("minimum", self.minimum),
            pl.Series("maximum", self.maximum),
        )

    def summary(self) -> Summary:
        """Cells disclosed exactly and the mean width of the intervals."""
        width = self.maximum - self.minimum
        rows = [
            ("cells", self.table.n_cells),
            ("disclosed exactly", int(self.exact.sum())),
            ("mean interval width", float(np.mean(width))),
        ]
        return Summary("Audit of a rounded table", rows)


def audit_rounding(
    table: Table,
    published: Any,
    base: int,
    *,
    k_steps: int = 0,
    use: Any = None,
    integer: bool = False,
) -> RoundingAudit:
    """Feasibility intervals of every cell from a published rounded table.

    A published value ``R`` means the true value lies in ``[R - (K+1)b + 1, R + (K+1)b - 1]``
    (and ``>= 0``); together with the additivity relations the intervals can be much narrower
    (worked example E4).

    Parameters
    ----------
    table : Table
        Gives the structure (dimensions and relations); its values are not used.
    published : array_like
        The published value of each cell.
    base, k_steps : int
        The rounding base and the number of extra steps allowed.
    use : array_like of bool, optional
        The published cells the intruder uses (default all); others are only known to be
        non-negative.
    integer : bool
        True values are integers (a mixed-integer model per bound).

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, audit_rounding
    >>> t = Table.from_array(np.array([4, 2, 2]), {"x": ["a", "b"]})
    >>> res = audit_rounding(t, [5, 0, 0], base=5)
    >>> res.minimum.tolist(), res.maximum.tolist()
    ([1.0, 0.0, 0.0], [8.0, 4.0, 4.0])
    """
    b = _base(base)
    k = check_int(k_steps, "k_steps", minimum=0)
    pub = np.asarray(published, dtype=float).ravel()
    if pub.size != table.n_cells:
        raise ParameterError("The 'published' values need one entry per cell.")
    width = (k + 1) * b - 1
    lo = np.maximum(pub - width, 0.0)
    hi = pub + width
    if use is not None:
        mask = np.asarray(use, dtype=bool).ravel()
        if mask.size != table.n_cells:
            raise ParameterError("The 'use' mask needs one entry per cell.")
        lo = np.where(mask, lo, 0.0)
        hi = np.where(mask, hi, np.inf)
    zeros = np.zeros(table.constraint_matrix.shape[0])
    mn, mx = feasibility_intervals(table.constraint_matrix, zeros, zeros, lo, hi, integer=integer)
    # cells in no relation with an unknown keep their a priori interval
    mn = np.where(np.isnan(mn), lo, mn)
    mx = np.where(np.isnan(mx), hi, mx)
    return RoundingAudit(table, pub, mn, mx)
