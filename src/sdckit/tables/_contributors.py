"""Who contributes what to the cells of a table: the respondents (or holdings) behind the cells.

A cell's sensitivity is about the units that report to it, not the records of a file: an
enterprise reported by several employee or local-unit records is one contributor, and the
enterprises of one holding (enterprise group) may count as one.  :class:`Contributions` keeps,
for every cell (totals and sub-totals included), the units that contribute to it and their
summed contribution, so that the rules count and rank units and the insider audit knows what
each unit knows of its own cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Contributions"]


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
