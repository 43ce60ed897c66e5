"""Exports of a :class:`~sdckit.tables.Table`: the internal frame, the published frame, files.

* The **internal** export (``Table.to_frame``, ``Table.write(..., published=False)``) has every
  cell with its value, contributors, largest contributions, status (``primary``,
  ``secondary``, ...) and protection levels: for the methodologist only.
* The **published** export (``Table.to_published_frame``, ``Table.write(..., published=True)``)
  has the codes, the value (missing where not published), the flag ``suppressed`` and the
  published ``symbol`` of a cell without a value: :data:`SUPPRESSED_SYMBOL` (``x``) for every
  suppressed cell, primary and secondary alike, so the file does not tell which cells are
  sensitive; :data:`EMPTY_SYMBOL` (``-``) for an empty cell (no contributor), so that it is
  not read as a true zero.  ``empty="zero"`` publishes empty cells as 0 instead and
  ``empty="omit"`` leaves their rows out.  A suppressed empty cell is ``x`` like any
  suppressed cell (a ``-`` would disclose it).  A table given by its cells without the numbers
  of contributors cannot tell an empty cell from a zero: its zeros are published as 0.

A published table is written only when its pattern is known to be protected: by the verdict of
an audit given to ``write`` (:func:`sdckit.tables.audit`, whose result records it on its
table), or by the verdict the table carries (``table.protected``: a suppression method's).  A
pattern of unknown status is refused, not audited here: the audit is the caller's, run once
(this module does not import it).  Every write is atomic (a temporary file renamed over the
target), and a missing directory is created.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from sdckit._validation import check_choice
from sdckit.errors import ColumnError, DataError, ParameterError, VerificationError
from sdckit.tables._build import decimals_of
from sdckit.tables._status import STATUS_NAMES, CellStatus

if TYPE_CHECKING:
    from sdckit.tables.table import Table

__all__ = [
    "EMPTY_CHOICES",
    "EMPTY_SYMBOL",
    "STATUS_NAMES",
    "SUPPRESSED_SYMBOL",
    "empty_cells",
    "internal_frame",
    "published_frame",
    "refuse_unprotected",
    "write_table",
]


#: The published symbol of a suppressed cell (primary and secondary alike), as tau-ARGUS
#: and most statistical offices print it.
SUPPRESSED_SYMBOL = "x"
#: The published symbol of an empty cell (no contributor), told apart from a true zero.
EMPTY_SYMBOL = "-"
#: How a published export shows empty cells: their own symbol, a zero, or no row.
EMPTY_CHOICES = ("symbol", "zero", "omit")


def empty_cells(table: Table) -> np.ndarray:
    """The published cells without any contributor (known empty, not suppressed).

    A table given by its cells without contributor counts cannot tell them from zeros: none.
    """
    known = np.asarray(table.n_contributors) >= 0
    return known & (np.asarray(table.status) == CellStatus.EMPTY) & ~table.suppressed


def _codes(table: Table) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for d, (name, h) in enumerate(zip(table.dimensions, table.hierarchies, strict=True)):
        cols[name] = np.asarray(h.codes, dtype=object)[table.node_index[:, d]].astype(str)
    return cols


def _check_names(cols: dict[str, Any]) -> None:
    names = [c.lower() for c in cols]
    if len(set(names)) != len(names):
        raise ColumnError("A dimension name clashes with a result column; rename it.")


def _input_precision(table: Table) -> np.ndarray:
    """The cell values rounded to the precision of the input values (every contribution, as
    measured when the table was built from records; else the largest contributions of each
    cell, else the leaf cells of a table given by its cells): a sum of
    amounts in cents is written ``110429230.62``, not ``110429230.61999997`` (the noise of
    binary addition, not a digit of the data); inputs with more than 9 decimals (weighted
    contributions) leave the values as they are."""
    values = np.asarray(table.values, dtype=np.float64)
    if table.value_decimals is not None:  # every contribution's precision, from the records
        decimals = None if table.value_decimals < 0 else table.value_decimals
    else:
        inputs = table.top if table.top.size else values[~np.asarray(table.is_total, dtype=bool)]
        decimals = decimals_of(inputs)
    return values if decimals is None else np.round(values, decimals)


def internal_frame(table: Table, *, status: bool = True) -> pl.DataFrame:
    """One row per cell: codes, value, contributors, largest contributions, status, levels."""
    cols = _codes(table)
    cols["value"] = _input_precision(table)
    cols["n_contributors"] = table.n_contributors
    for j in range(table.top.shape[1]):
        cols[f"top_{j + 1}"] = table.top[:, j]
    cols["weight_sum"] = table.weights
    cols["is_total"] = table.is_total
    if status:
        cols["status"] = STATUS_NAMES[table.status]
        cols["upper_level"] = table.upper
        cols["lower_level"] = table.lower
        cols["sliding_level"] = table.sliding
    _check_names(cols)
    return pl.DataFrame(cols)


def published_frame(table: Table, *, empty: str = "symbol") -> pl.DataFrame:
    """Codes, the published value, the flag ``suppressed`` and the ``symbol`` of the cell.

    ``value`` is null where the cell is suppressed (``symbol`` ``x``) or empty (``-``, with
    ``empty="symbol"``); ``empty="zero"`` publishes empty cells as 0 (no symbol),
    ``empty="omit"`` leaves their rows out (see the module text).
    """
    check_choice(empty, "empty", EMPTY_CHOICES)
    cols = _codes(table)
    hidden = table.suppressed
    blank = empty_cells(table) if empty == "symbol" else np.zeros(table.n_cells, dtype=bool)
    values = _input_precision(table)
    cols["value"] = pl.Series("value", np.where(hidden | blank, np.nan, values)).fill_nan(None)
    cols["suppressed"] = hidden
    symbol = np.where(hidden, SUPPRESSED_SYMBOL, np.where(blank, EMPTY_SYMBOL, ""))
    cols["symbol"] = pl.Series("symbol", symbol, dtype=pl.Utf8).replace("", None)
    _check_names(cols)
    frame = pl.DataFrame(cols)
    if empty == "omit":
        frame = frame.filter(pl.Series(~empty_cells(table)))
    return frame


def refuse_unprotected(table: Table, what: str, verdict: Any = None) -> None:
    """Raise :class:`VerificationError` unless the suppression pattern of ``table`` is known to
    protect: by ``verdict`` (an audit's result on this pattern) or by ``table.protected``."""
    protected = table.protected
    if verdict is not None:
        audited = getattr(verdict, "table", None)
        if audited is None or not np.array_equal(audited.status, table.status):
            raise ParameterError(
                "The 'verdict' given to write is an audit of another suppression pattern; "
                "audit this table (sdckit.tables.audit) and give that result."
            )
        protected = bool(verdict.ok)
    if protected is None and table.suppressed.any():
        raise VerificationError(
            f"The suppression pattern has not been audited, so the {what} is not written: "
            "audit it (result = sdckit.tables.audit(table)) and write result.table, or give "
            "write(..., verdict=result); the internal export (published=False) is possible."
        )
    if protected is False:
        raise VerificationError(
            f"The suppression pattern does not protect every primary cell, so the {what} is "
            "not written: audit it (sdckit.tables.audit), repair it (repair_suppression) or "
            "choose another method; the internal export (published=False) is still possible."
        )


def write_table(
    table: Table,
    path: str | os.PathLike[str],
    *,
    published: bool,
    empty: str = "symbol",
    verdict: Any = None,
) -> Path:
    """Write the published or the internal export as CSV or Parquet (by suffix), atomically.

    ``empty`` is how the published export shows empty cells (see :func:`published_frame`);
    ``verdict`` the audit of this pattern (see :func:`refuse_unprotected`).
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ParameterError("The 'path' must end in .csv or .parquet.")
    check_choice(empty, "empty", EMPTY_CHOICES)
    if published:
        refuse_unprotected(table, "published table", verdict)
    frame = published_frame(table, empty=empty) if published else internal_frame(table)
    if target.is_dir():
        raise ParameterError(f"The 'path' {str(target)!r} is a directory; give a file name.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise DataError(
            f"The directory of {str(target)!r} cannot be created; choose a writable 'path'."
        ) from None
    from sdckit.io import atomic_path

    with atomic_path(target) as tmp:
        if suffix == ".csv":
            frame.write_csv(tmp)
        else:
            frame.write_parquet(tmp)
    return target
