"""Who contributes what to the cells of a table: the respondents (or holdings) behind the cells.

A cell's sensitivity is about the units that report to it, not the records of a file: an
enterprise reported by several employee or local-unit records is one contributor, and the
enterprises of one holding (enterprise group) may count as one.  :class:`Contributions` keeps,
for every cell (totals and sub-totals included), the units that contribute to it and their
summed contribution, so that the rules count and rank units and the insider audit knows what
each unit knows of its own cells.

Definitions (``Table.from_microdata(..., respondent=..., holding=...)``):

* A **respondent's contribution** to a cell is the sum of its records' contributions there
  (``x_i``, or ``w_i x_i`` when weighted: the respondent's estimated total, expanded as the
  rules of :mod:`sdckit.tables.rules` read weighted tables), totals included: a respondent with
  local units in two regions contributes to each region and its sum to the national total.
  ``n_contributors`` counts the respondents with a record in the cell (a record of value 0
  counts, as a record does without a respondent column); ``top`` holds their largest summed
  contributions.  A record without a respondent id is an error (it cannot be counted).
* A **holding's contribution** is the sum of its respondents' (records', without a respondent
  column).  With a holding column the table's ``n_contributors``, ``top`` and ``contributions``
  are at the holding level, and the respondent level is kept (``Table.respondent_contributors``,
  ``Table.respondent_top``) for rules with ``level="respondent"``.  A missing holding id makes
  the respondent (record) a holding of its own: an independent enterprise.  A holding id that
  is not constant within a respondent is an error naming both columns.
* **tau-ARGUS** takes a record as an enterprise and a ``<HOLDING>`` variable of the metadata as
  its enterprise group (the file sorted by holding).  In a ``<SAFETYRULE>`` the 1st and 2nd
  ``NK`` and ``P`` rules and the 1st ``FREQ`` rule apply to the individual records, the 3rd
  and 4th ``NK`` and ``P`` rules and the 2nd ``FREQ`` rule to the holdings, whose contribution
  is the sum of their records' (``TableSet.java``: ``holdingFreq``, ``holdingMaxScore``); it
  does not offer holdings together with "apply weights".  sdckit's ``level="respondent"`` rules
  are tau-ARGUS's individual rules (records pre-summed per respondent when a respondent column
  is given), ``level="holding"`` its holding rules; ``level=None`` (the default) reads the
  table's own level, the holdings when a holding column is given.
* **GaussSuppression** counts contributors as the distinct codes of ``charVar``
  (``NContributorsRule``; several ``charVar`` columns: the rule applies to each, a cell is
  primary if any flags it) and sums the contributions of one ``charVar`` code before its
  dominance and p% rules (``MagnitudeRule``).  ``charVar = enterprise`` is the respondent
  level, ``charVar = holding`` the holding level.  It leaves out zero contributions when
  counting (``remove0 = TRUE``); sdckit counts them.  Its ``NcontributorsHolding`` is another
  notion: it groups the *cells* (columns of the model matrix) of a "holding indicator" so that
  they get one count, not the respondents of an enterprise group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit.errors import DataError
from sdckit.tables.hierarchy import Hierarchy

__all__ = [
    "Contributions",
    "UnitCodes",
    "ancestor_cells",
    "roll_up_units",
    "single_unit",
    "unit_codes",
]


@dataclass(frozen=True, repr=False, eq=False)
class Contributions:
    """The contribution of every unit to every cell it reports to.

    One entry per (unit, cell) with a contribution; ``cell`` indexes the table's cells (flat,
    C order, totals included), so a unit reporting to one leaf appears in every total above it.

    Attributes
    ----------
    level : {"record", "respondent", "holding"}
        What a unit is: a record of the file, a respondent (``respondent`` column: all its
        records summed) or a holding (``holding`` column: its respondents summed).
    unit : numpy.ndarray
        int64 code of the unit, ``0 .. n_units - 1``.
    cell : numpy.ndarray
        int64 flat index of the cell.
    value : numpy.ndarray
        float64 contribution of the unit to the cell (expanded, ``w_i x_i``, when weighted;
        the number of its records, or weighted count, in a frequency table).
    n_units : int
        Number of units.
    respondent_of_holding : numpy.ndarray or None
        With ``level == "holding"``: nothing (None) or, when both are known, the holding of
        every respondent code (kept so a respondent-level audit can be made too).
    """

    level: str
    unit: np.ndarray
    cell: np.ndarray
    value: np.ndarray
    n_units: int
    respondent_of_holding: np.ndarray | None = None


def ancestor_cells(
    ids: np.ndarray, hierarchy: Hierarchy, stride: int, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every cell ``ids`` adds up into along one dimension (itself included).

    ``stride`` and ``size`` are the dimension's stride in C order and its number of codes.
    Returns ``(row, cell)``: for each pair, the position in ``ids`` it comes from and the cell
    (the same cell with the dimension's code replaced by itself or one of its ancestors).
    """
    node = (ids // stride) % size
    pair_node, pair_anc = hierarchy.ancestor_pairs
    n_anc = np.bincount(pair_node, minlength=hierarchy.size)
    start = np.r_[0, np.cumsum(n_anc)[:-1]]
    reps = n_anc[node]
    row = np.repeat(np.arange(len(ids)), reps)
    offset = np.arange(len(row)) - np.repeat(np.cumsum(reps) - reps, reps)
    anc = pair_anc[np.repeat(start[node], reps) + offset]
    return row, ids[row] + (anc - node[row]) * stride


def _pair_sums(
    unit: np.ndarray, cell: np.ndarray, value: np.ndarray, n_cells: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum ``value`` per distinct ``(unit, cell)``; returns the pairs sorted by unit, cell."""
    if len(unit) and int(unit.max()) + 1 > np.iinfo(np.int64).max // max(n_cells, 1):
        raise DataError(  # pragma: no cover - beyond 9e18 unit-cell pairs
            "The table has too many cells times contributors to tabulate per contributor."
        )
    key = unit.astype(np.int64) * n_cells + cell
    keys, inverse = np.unique(key, return_inverse=True)
    return keys // n_cells, keys % n_cells, np.bincount(inverse, weights=value)


def roll_up_units(
    unit: np.ndarray,
    leaf: np.ndarray,
    value: np.ndarray,
    hierarchies: Sequence[Hierarchy],
    shape: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The contribution of every unit to every cell (totals included).

    ``unit``, ``leaf`` and ``value`` are per record (unit code, leaf cell number, contribution).
    A unit's records in one cell are summed; each dimension in turn adds every (unit, cell) to
    the cells above it in that dimension, merging a unit's pairs that meet in one total (a
    respondent with local units in two regions contributes its sum to the national total).
    Returns ``(unit, cell, value)`` with one entry per distinct (unit, cell).
    """
    n_cells = int(np.prod(shape))
    strides = [int(np.prod(shape[j + 1 :])) for j in range(len(shape))]
    u, c, v = _pair_sums(unit, leaf, value, n_cells)
    for d, h in enumerate(hierarchies):
        row, up = ancestor_cells(c, h, strides[d], shape[d])
        u, c, v = _pair_sums(u[row], up, v[row], n_cells)
    return u, c, v


def _dense_codes(frame: pl.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``0 .. k-1`` code of each row's value of ``column`` (-1 and a mask where missing)."""
    series = frame.get_column(column)
    absent = series.is_null()
    if series.dtype.is_float():
        absent = absent | series.is_nan().fill_null(True)
    absent_np = absent.to_numpy()
    codes = np.full(frame.height, -1, dtype=np.int64)
    present = series.filter(~absent)
    if len(present):
        ranked = present.rank("dense").cast(pl.Int64).to_numpy() - 1
        codes[~absent_np] = ranked
    return codes, absent_np


@dataclass(frozen=True)
class UnitCodes:
    """The contributor codes of the records of a table (see :func:`unit_codes`).

    Attributes
    ----------
    respondent : numpy.ndarray or None
        Respondent code of each record (None: no respondent column).
    holding : numpy.ndarray or None
        Holding code of each record (None: no holding column).
    respondent_of_holding : numpy.ndarray or None
        With both columns: the holding code of each respondent code.
    """

    respondent: np.ndarray | None
    holding: np.ndarray | None
    respondent_of_holding: np.ndarray | None


def unit_codes(frame: pl.DataFrame, respondent: str | None, holding: str | None) -> UnitCodes:
    """Code the respondents and holdings of the records (checked).

    A missing respondent id is a :class:`~sdckit.errors.DataError` naming the column (a
    record that belongs to no respondent cannot be counted).  A missing holding id makes the
    respondent (or, without a respondent column, the record) a holding of its own: an
    independent enterprise, as business registers leave the enterprise-group id of
    independent enterprises empty.  A holding id that is not the same in every record of a
    respondent (a missing one counts as a value) is a :class:`DataError` naming both columns.
    """
    resp = hold = of_holding = None
    if respondent is not None:
        resp, absent = _dense_codes(frame, respondent)
        if absent.any():
            raise DataError(
                f"The respondent column {respondent!r} has missing ids; every record needs "
                "the id of its respondent (enterprise). Fill them in, or leave those records "
                "out first."
            )
    if holding is None:
        return UnitCodes(resp, None, None)
    hold, absent = _dense_codes(frame, holding)
    n_named = int(hold.max()) + 1 if len(hold) and hold.max() >= 0 else 0
    if resp is None:
        # each record without a holding id is a holding of its own
        hold[absent] = n_named + np.arange(int(absent.sum()))
        return UnitCodes(None, hold, None)
    n_resp = int(resp.max()) + 1 if len(resp) else 0
    pairs = np.unique(resp * (n_named + 1) + (hold + 1))
    if len(pairs) != n_resp:
        raise DataError(
            f"The holding column {holding!r} is not constant within the respondents of the "
            f"respondent column {respondent!r}: a respondent (enterprise) belongs to one "
            "holding (enterprise group). Correct the holding ids of those records."
        )
    of_holding = np.full(n_resp, -1, dtype=np.int64)
    of_holding[resp] = hold
    alone = of_holding < 0
    of_holding[alone] = n_named + np.arange(int(alone.sum()))
    return UnitCodes(resp, of_holding[resp], of_holding)


def single_unit(contributions: Contributions | None, n_cells: int) -> np.ndarray | None:
    """The unit code of every cell with exactly one contributing unit (-1 elsewhere).

    None without contributions (a cell's contributors are then its records).
    """
    if contributions is None:
        return None
    counts = np.bincount(contributions.cell, minlength=n_cells)
    out = np.full(n_cells, -1, dtype=np.int64)
    one = counts[contributions.cell] == 1
    out[contributions.cell[one]] = contributions.unit[one]
    return out
