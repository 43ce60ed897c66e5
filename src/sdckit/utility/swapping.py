"""Information loss on frequency tables after record swapping (sdcMicro ``infoLoss``, M8).

Targeted record swapping (:class:`~sdckit.masking.TargetedRecordSwapping`) moves households
between areas: tables that cross the geography with other variables change, the others do not.
:func:`swap_table_loss` compares the frequency tables of the original and the swapped file over
a table and all its margins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_real, column_list
from sdckit.errors import ColumnError
from sdckit.utility._inputs import paired_frames
from sdckit.utility.categorical import TableDistances, table_distances

__all__ = ["SwapTableLoss", "swap_table_loss"]

_PROBS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
_METRICS = ("abs_diff", "rel_abs_diff", "abs_sqrt_diff")


@dataclass(frozen=True, repr=False)
class SwapTableLoss:
    """Information loss on frequency tables after swapping (sdcMicro ``infoLoss``, M8).

    Attributes
    ----------
    table_vars : tuple of str
        The variables of the table.
    cells : polars.DataFrame
        One row per cell of the table and of every margin (every subset of ``table_vars``,
        down to the grand total): ``margin`` (the variables of that table joined by " x ", or
        "total"), the variables (null where summed over), ``original`` and ``swapped`` counts,
        ``abs_diff = |o - s|``, ``rel_abs_diff = |o - s| / o`` (0 where ``o = 0``) and
        ``abs_sqrt_diff = |sqrt(o) - sqrt(s)|``.  Cells empty in both files are not listed.
    measures : polars.DataFrame
        Quantiles (``statistic`` "q0.50" ...) and the mean of the three differences over all
        cells.
    false_zeros, false_non_zeros : int
        Cells (of all margins) with ``o > 0, s = 0`` and with ``o = 0, s > 0``.
    distances : TableDistances
        :func:`sdckit.utility.table_distances` of the full (innermost) table.
    """

    table_vars: tuple[str, ...]
    cells: pl.DataFrame
    measures: pl.DataFrame
    false_zeros: int
    false_non_zeros: int
    distances: TableDistances

    def to_frame(self) -> pl.DataFrame:
        """One row per table cell (polars), see :attr:`cells`."""
        return self.cells

    def summary(self) -> Summary:
        """Means and largest differences, false zeros and non-zeros, Hellinger distance."""
        mean = self.measures.filter(pl.col("statistic") == "mean").row(0, named=True)
        top = self.measures.filter(pl.col("statistic") == "q1.00").row(0, named=True)
        rows: list[tuple[str, Any]] = [("cells", self.cells.height)]
        for m in _METRICS:
            rows += [(f"mean {m}", mean[m]), (f"max {m}", top[m])]
        rows += [
            ("false zeros", self.false_zeros),
            ("false non-zeros", self.false_non_zeros),
            ("Hellinger distance (full table)", self.distances.hellinger),
        ]
        title = f"Table information loss after swapping: {' x '.join(self.table_vars)}"
        return Summary(title, rows)

    def __repr__(self) -> str:
        return f"SwapTableLoss(table_vars={list(self.table_vars)}, cells={self.cells.height})"


def swap_table_loss(
    original: Any, swapped: Any, table_vars: Sequence[str], *, probs: Sequence[float] = _PROBS
) -> SwapTableLoss:
    """Compare frequency tables of the original and the swapped file over all margins.

    Parameters
    ----------
    original, swapped : DataFrame, Microdata or Protected
    table_vars : list of str
        Variables of the table, e.g. ``["area", "sex", "age_group"]``.
    probs : list of float
        Quantiles reported in :attr:`SwapTableLoss.measures`.

    Examples
    --------
    >>> import polars as pl
    >>> o = pl.DataFrame({"area": [1, 1, 2, 2], "sex": ["f", "m", "f", "f"]})
    >>> s = pl.DataFrame({"area": [1, 2, 2, 2], "sex": ["f", "m", "f", "f"]})
    >>> loss = swap_table_loss(o, s, ["area", "sex"])
    >>> loss.false_zeros, loss.false_non_zeros, loss.cells.height
    (1, 1, 9)
    """
    left, right, cols, _ = paired_frames(original, swapped, column_list(table_vars, "table_vars"),
                                         "keys")  # fmt: skip
    reserved = {"margin", "original", "swapped", *_METRICS}
    if reserved & set(cols):
        raise ColumnError(
            f"The table variables may not be named {', '.join(sorted(reserved))}; rename them."
        )
    qs = [check_real(p, "probs", minimum=0.0, maximum=1.0) for p in probs]
    parts = []
    for size in range(len(cols), -1, -1):
        for subset in combinations(cols, size):
            by = list(subset)
            if by:
                o = left.group_by(by).len("original")
                s = right.group_by(by).len("swapped")
                t = o.join(s, on=by, how="full", coalesce=True, nulls_equal=True)
            else:
                t = pl.DataFrame({"original": [left.height], "swapped": [right.height]})
            label = " x ".join(by) if by else "total"
            parts.append(t.with_columns(pl.lit(label).alias("margin")))
    cells = pl.concat(parts, how="diagonal_relaxed").select(
        "margin", *cols, pl.col("original", "swapped").fill_null(0).cast(pl.Int64)
    )
    o = cells["original"].to_numpy().astype(np.float64)
    s = cells["swapped"].to_numpy().astype(np.float64)
    absd = np.abs(o - s)
    reld = np.divide(absd, o, out=np.zeros_like(absd), where=o > 0)
    sqrtd = np.abs(np.sqrt(o) - np.sqrt(s))
    cells = cells.with_columns(
        pl.Series("abs_diff", absd),
        pl.Series("rel_abs_diff", reld),
        pl.Series("abs_sqrt_diff", sqrtd),
    )
    values = {"abs_diff": absd, "rel_abs_diff": reld, "abs_sqrt_diff": sqrtd}
    measures = pl.DataFrame(
        {
            "statistic": [f"q{p:.2f}" for p in qs] + ["mean"],
            **{m: [*np.quantile(v, qs).tolist(), float(v.mean())] for m, v in values.items()},
        }
    )
    if "q1.00" not in measures["statistic"]:
        measures = measures.vstack(
            pl.DataFrame(
                {"statistic": ["q1.00"], **{m: [float(v.max())] for m, v in values.items()}}
            )
        )
    inner = parts[0]
    inner_o = inner["original"].fill_null(0).to_numpy()
    inner_s = inner["swapped"].fill_null(0).to_numpy()
    return SwapTableLoss(
        table_vars=cols,
        cells=cells,
        measures=measures,
        false_zeros=int(np.count_nonzero((o > 0) & (s == 0))),
        false_non_zeros=int(np.count_nonzero((o == 0) & (s > 0))),
        distances=table_distances(inner_o, inner_s),
    )
