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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import eye, hstack, vstack

from sdckit._results import Summary
from sdckit._validation import check_choice, check_int, check_seed
from sdckit.errors import DataError, InfeasibleError, ParameterError
from sdckit.tables._lp import feasibility_intervals
from sdckit.tables.table import Table

__all__ = [
    "RoundingAudit",
    "RoundingResult",
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
    """

    table: Table
    rounded: np.ndarray
    base: int
    method: str

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


def round_deterministic(table: Table, base: int, *, ties: str = "up") -> RoundingResult:
    """Round every cell independently to the nearest multiple of ``base``.

    Parameters
    ----------
    ties : {"up", "even"}
        Halfway values go up, or to the even multiple.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_deterministic
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> round_deterministic(t, 3).rounded.tolist()
    [6, 6, 3]
    """
    b = _base(base)
    check_choice(ties, "ties", ("up", "even"))
    v = _counts(table)
    q, r = np.divmod(v, b)
    up = 2 * r > b if ties == "even" else 2 * r >= b
    if ties == "even":
        up |= (2 * r == b) & (q % 2 == 1)
    return RoundingResult(table, (q + up) * b, b, "deterministic")


def round_random(
    table: Table, base: int, *, seed: Any = None, additive: bool = False
) -> RoundingResult:
    """Unbiased random rounding: up to the next multiple with probability residue / base.

    With ``additive=True`` only the interior cells are rounded and the margins are added up
    (additive, but the margins' errors add up too); otherwise every cell is rounded on its own.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, round_random
    >>> t = Table.from_array(np.array([7, 5, 2]), {"x": ["a", "b"]})
    >>> res = round_random(t, 5, seed=1)
    >>> bool(np.all(res.rounded % 5 == 0))
    True
    """
    b = _base(base)
    rng = check_seed(seed)
    v = _counts(table)
    q, r = np.divmod(v, b)
    up = rng.random(v.size) < r / b
    out = (q + up) * b
    if additive:
        out = np.round(_readd(table, out)).astype(np.int64)
    return RoundingResult(table, out, b, "random")


def round_controlled(
    table: Table,
    base: int,
    *,
    k_steps: int = 0,
    time_limit: float | None = None,
) -> RoundingResult:
    """Controlled rounding: an additive table of multiples of ``base``, closest in L1.

    Each cell goes to ``floor`` or ``floor + base`` (multiples of the base stay) when
    ``k_steps=0`` (zero-restricted); ``k_steps=K`` allows ``K`` more steps each way (never below
    0).  All relations (margins included) hold exactly.  Solved as a MILP (HiGHS).

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
    >>> res = round_controlled(t, 3)
    >>> res.rounded.tolist(), res.additive
    ([6, 6, 0], True)
    """
    b = _base(base)
    k = check_int(k_steps, "k_steps", minimum=0)
    v = _counts(table)
    n = v.size
    q, r = np.divmod(v, b)
    lo = np.maximum(q - k, 0)
    hi = np.where(r == 0, q + k, q + 1 + k)
    m = table.constraint_matrix
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
            f"No controlled rounding to base {b} with k_steps={k} exists for this table; try "
            "a larger k_steps."
        )
    out = np.round(res.x[:n]).astype(np.int64) * b
    return RoundingResult(table, out, b, "controlled")


def round_small_cells(
    table: Table,
    base: int,
    *,
    threshold: int | None = None,
    random: bool = True,
    seed: Any = None,
) -> RoundingResult:
    """Round only the interior cells below ``threshold`` (default ``base``); re-add margins.

    Small cells go to a multiple of ``base`` (randomly and unbiased, or to the nearest one);
    larger interior cells are kept and the margins are the sums of the published interior.
    """
    b = _base(base)
    limit = b if threshold is None else check_int(threshold, "threshold", minimum=1)
    v = _counts(table)
    small = (~table.is_total) & (v > 0) & (v < limit)
    q, r = np.divmod(v, b)
    if random:
        up = check_seed(seed).random(v.size) < r / b
    else:
        up = 2 * r >= b
    new = np.where(small, (q + up) * b, v)
    return RoundingResult(table, np.round(_readd(table, new)).astype(np.int64), b, "small_cells")


def small_cell_adjustment(table: Table, base: int = 3, *, seed: Any = None) -> RoundingResult:
    """Replace interior counts ``0 < n < base`` by 0 or ``base`` (P(base) = n / base).

    The expectation of every cell is kept; margins are added up from the adjusted interior.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, small_cell_adjustment
    >>> t = Table.from_array(np.array([9, 7, 2]), {"x": ["a", "b"]})
    >>> res = small_cell_adjustment(t, 3, seed=0)
    >>> res.rounded[1], res.rounded[2] in (0, 3)
    (np.int64(7), True)
    """
    b = _base(base)
    v = _counts(table)
    small = (~table.is_total) & (v > 0) & (v < b)
    up = check_seed(seed).random(v.size) < v / b
    new = np.where(small, np.where(up, b, 0), v)
    return RoundingResult(table, np.round(_readd(table, new)).astype(np.int64), b, "adjustment")


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
