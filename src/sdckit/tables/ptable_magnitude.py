"""Perturbation tables for magnitudes: the R package ``ptable``'s ``create_num_ptable``.

:func:`ptable_magnitudes` builds the ptable of a magnitude table: rows ``i = 0`` and the
classes ``icat`` (which hold 1 and ``D``), targets ``j = max(i - D, 0) .. i + D`` in steps of
``1 / step`` (so the deviations ``v`` are fractions), probabilities of maximum entropy with
zero mean and a variance bound (as for counts, :mod:`sdckit.tables.ptable`, without ``js`` and
``pstay``).  A :class:`MagnitudePTable` looks up (and interpolates between) its rows for the
cell key method of :mod:`sdckit.tables.cellkey_magnitude`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_int, check_real
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.tables._maxent import EPS, entropy_row, intervals

__all__ = ["MagnitudePTable", "ptable_magnitudes"]


@dataclass(frozen=True, eq=False)
class MagnitudePTable:
    """A perturbation table for magnitudes (fractional deviations, a few rows ``i``).

    Attributes
    ----------
    frame : polars.DataFrame
        Columns ``i`` (the row: 0 and the classes ``icat``), ``j``, ``v = j - i``, ``p`` and
        the cumulative interval ``(p_int_lb, p_int_ub]``.
    D, V, step : parameters (maximum deviation, variance bound, steps per unit).
    """

    frame: pl.DataFrame
    D: int
    V: float
    step: int

    def to_frame(self) -> pl.DataFrame:
        """The ptable rows (``i, j, v, p, p_int_lb, p_int_ub``)."""
        return self.frame

    @property
    def rows(self) -> np.ndarray:
        """The row values ``i`` in increasing order (0 first)."""
        return np.unique(self.frame["i"].to_numpy()).astype(float)

    @property
    def max_variance(self) -> float:
        """The variance of the deviations in the last row (``i = D``)."""
        last = self.frame.filter(pl.col("i") == pl.col("i").max())
        return float((last["p"] * last["v"] ** 2).sum())

    def row_deviations(self, cell_keys: np.ndarray) -> np.ndarray:
        """``(n, rows)``: the deviation each key selects in each row (first ``key < p_int_ub``)."""
        keys = np.asarray(cell_keys, dtype=float)
        out = np.zeros((len(keys), len(self.rows)))
        for r, i in enumerate(self.rows.tolist()):
            part = self.frame.filter(pl.col("i") == i)
            ub = part["p_int_ub"].to_numpy()
            v = part["v"].to_numpy()
            pos = np.searchsorted(ub, keys, side="right")  # cellKey: the first row with key < ub
            out[:, r] = v[np.minimum(pos, len(v) - 1)]
        return out

    def deviations(self, cell_keys: np.ndarray, a: np.ndarray) -> np.ndarray:
        """The deviation for each cell key at the (fractional) row position ``a``.

        ``a`` above ``D`` is cut to ``D``; between two rows the deviations the key selects in
        both are interpolated linearly (as the R package cellKey does); a key of 0 (no
        contributor) selects 0.
        """
        rows = self.rows
        a = np.minimum(np.abs(np.asarray(a, dtype=float)), rows[-1])
        per_row = self.row_deviations(cell_keys)
        lo = np.clip(np.searchsorted(rows, a, side="right") - 1, 0, len(rows) - 1)
        hi = np.minimum(lo + 1, len(rows) - 1)
        span = rows[hi] - rows[lo]
        lam = np.divide(a - rows[lo], span, out=np.zeros(len(a)), where=span > 0)
        idx = np.arange(len(a))
        v = (1.0 - lam) * per_row[idx, lo] + lam * per_row[idx, hi]
        return np.where(np.asarray(cell_keys) == 0, 0.0, v)

    def summary(self) -> Summary:
        """Parameters and the achieved variance per row."""
        f = self.frame.group_by("i").agg((pl.col("p") * pl.col("v") ** 2).sum().alias("var"))
        rows = [
            ("D", self.D),
            ("V", self.V),
            ("step", self.step),
            ("rows i", ", ".join(f"{x:g}" for x in self.rows)),
            ("largest variance", float(f["var"].max())),
        ]
        return Summary("Perturbation table (magnitudes)", rows)


def _per_row(value: Any, n: int, name: str, check: Any) -> list[Any]:
    """A scalar or one value per row (the R package's vectors ``optim``, ``mono``)."""
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ParameterError(
                f"The {name!r} parameter must be one value or {n} values (one per class of "
                f"'icat'); got {len(value)}."
            )
        return [check(x) for x in value]
    return [check(value)] * n


def ptable_magnitudes(
    D: int,
    V: float,
    *,
    step: int = 2,
    icat: Sequence[int] | None = None,
    optim: int | Sequence[int] = 1,
    mono: bool | Sequence[bool] = True,
) -> MagnitudePTable:
    """A perturbation table for magnitudes, as the R package ``ptable``'s ``create_num_ptable``.

    Parameters
    ----------
    D : int
        Maximum absolute deviation (in units of the flex magnitude).
    V : float
        Variance of the deviations: a bound (``optim=1``) or exact (``optim=4``).
    step : int, default 2
        Targets are ``1 / step`` apart (``D * step`` below 50).
    icat : list of int, optional
        The rows besides 0: must hold 1 and ``D`` (default ``[1, D]``); a cell between two
        rows interpolates their deviations.
    optim : int or list of int, default 1
        1: variance at most ``V``; 4: exactly ``V``; one for all rows or one per class.
    mono : bool or list of bool, default True
        Probabilities do not decrease from the most negative deviation up to ``v = 0``.

    Examples
    --------
    >>> pt = ptable_magnitudes(D=10, V=3, step=2, icat=[1, 5, 10], optim=[4, 1, 1])
    >>> pt.frame.height  # cellKey's test of ptable::pt_ex_nums(): 96 rows
    96
    >>> pt.rows.tolist()
    [0.0, 1.0, 5.0, 10.0]
    """
    D = check_int(D, "D", minimum=1)
    V = check_real(V, "V", minimum=0, min_inclusive=False)
    step = check_int(step, "step", minimum=1)
    if D * step >= 50:
        raise ParameterError("'D' times 'step' must be below 50 (as in the R package): lower one.")
    cats = [1, D] if icat is None else sorted({check_int(c, "icat", minimum=1) for c in icat})
    if 1 not in cats or D not in cats or max(cats) > D:
        raise ParameterError("The 'icat' parameter must hold 1 and 'D', and nothing above 'D'.")

    def _optim(x: Any) -> int:
        if isinstance(x, bool) or x not in (1, 2, 3, 4):
            raise ParameterError(
                "The 'optim' parameter must be 1, 2, 3 or 4 (as in the R package)."
            )
        return int(x)

    def _mono(x: Any) -> bool:
        if not isinstance(x, bool | np.bool_):
            raise ParameterError("The 'mono' parameter must be True or False (or one per class).")
        return bool(x)

    optims = _per_row(optim, len(cats), "optim", _optim)
    monos = _per_row(mono, len(cats), "mono", _mono)
    i_col: list[float] = [0.0]
    j_col: list[float] = [0.0]
    p_col: list[float] = [1.0]
    for i, opt, mon in zip(cats, optims, monos, strict=True):
        # targets on a grid of 1/step, rounded to 4 decimals as the R package does
        j = np.round(np.arange(max(i - D, 0) * step, (i + D) * step + 1) / step, 4)
        v = np.round(j - i, 4)
        try:
            p = entropy_row(v, V, np.full(len(v), EPS), mon, opt == 4)
            if opt == 4 and abs(float((v**2) @ p) - V) > 1e-6:
                raise InfeasibleError("variance missed")
        except InfeasibleError:
            raise InfeasibleError(
                f"No ptable row for the class {i}: the constraints cannot all hold; raise 'V' "
                "or 'D', or use optim = 1."
            ) from None
        i_col += [float(i)] * len(j)
        j_col += j.tolist()
        p_col += p.tolist()
    frame = pl.DataFrame({"i": i_col, "j": j_col, "p": p_col}).with_columns(
        (pl.col("j") - pl.col("i")).round(4).alias("v")
    )
    return MagnitudePTable(intervals(frame), D, float(V), step)
