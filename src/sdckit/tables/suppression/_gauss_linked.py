"""One Gaussian elimination over linked tables (GaussSuppression's "global" protection).

Linked tables built from the same records (:class:`sdckit.tables.LinkedTables`) share one model
matrix: its rows are the *atoms*, the distinct combinations of the codes of every variable of
every table found in the records, and its columns the distinct cells of all the tables (a
common cell is one column).  A cell is the sum of the atoms under it, in whichever table it
is.  Running the elimination of :mod:`.gauss` (:mod:`.elimination`) on that matrix decides
every distinct cell once (a common cell is suppressed in all its tables or in none), and a
primary is suppressed only when no combination of the published cells of *all* the tables
gives it: an intruder who reads every table at once computes no primary exactly.  Using the
atoms is the strictest model: it takes the absence of records in an atom as known (a
structural zero), so the pattern holds whatever the intruder knows about empty combinations.

With ``singletons=True`` the rules of the single-table method for one-contributor cells hold
across the tables too: a cell of any table with one contributor is the only record of its
atom (its column is that atom alone), so its respondent knows that atom's value; the
respondent's known atom is the attacker cell of the kernel (as a one-contributor inner cell is
in one table), and no primary of any table may be computable from the published cells of all
the tables and one respondent's own value (rule R1; R2 for two respondents' values), unless it
is made of that respondent's value alone.  Atoms with one record but no one-contributor cell
are not used (GaussSuppression's singleton rules are about one-contributor cells).  The
respondent of a one-contributor cell is its record: the method's ``contributors`` (respondent
numbers of one table's cells, so that a firm with several records is one respondent) are not
used here, only by each table's own method afterwards.
:meth:`LinkedTables.protect <sdckit.tables.LinkedTables.protect>` then runs the method on each
table (with its own singleton rules), the joint LP audit and the joint repair, as for any
method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sdckit.errors import ParameterError
from sdckit.tables.suppression.elimination import (
    candidate_order,
    eliminate,
    kernel,
    model_from_entries,
)
from sdckit.tables.table import CellStatus

__all__ = ["joint_elimination"]


def joint_elimination(
    n_atoms: int,
    atom: np.ndarray,
    cell: np.ndarray,
    status: np.ndarray,
    cost: np.ndarray,
    *,
    arithmetic: str = "exact",
    singletons: bool = False,
    n_contributors: np.ndarray | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Secondary suppressions of one elimination over a model given by its entries.

    Parameters
    ----------
    n_atoms : int
        Rows of the model matrix.
    atom, cell : numpy.ndarray
        Its entries (row, column), grouped by row and increasing in column within a row; the
        columns are the cells ``0 .. len(status) - 1``.
    status : numpy.ndarray
        :class:`CellStatus` of each cell; primaries are protected, safe cells are candidates,
        protected (frozen) and empty cells are published first, suppressed secondaries stay.
    cost : numpy.ndarray
        Cost of each cell (candidates are published in decreasing order of it).
    arithmetic : {"exact", "modular", "float"}
        As for :class:`GaussSuppression <sdckit.tables.GaussSuppression>`.
    singletons : bool, default False
        The singleton rules over all the tables (module doc); needs ``n_contributors``.
    n_contributors : numpy.ndarray, optional
        Contributors of each cell.

    Returns
    -------
    secondary : numpy.ndarray
        Boolean, the candidates suppressed.
    unsafe : numpy.ndarray
        The primaries no pattern protects (computable from the cells published first).
    details : dict
        Counts of the run; ``singleton_unsafe``: the primaries that one respondent computes
        from his own value and the cells published first (warned about by the caller).

    Examples
    --------
    Two cells ``a``, ``b`` over two atoms and their total ``t``; ``a`` is primary, so ``b``
    (the only other cell with ``a`` in its span) must go:

    >>> import numpy as np
    >>> from sdckit.tables.table import CellStatus
    >>> st = np.array([CellStatus.SAFE, CellStatus.PRIMARY, CellStatus.SAFE], dtype=np.int8)
    >>> sec, unsafe, _ = joint_elimination(2, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 2]),
    ...                                    st, np.array([9.0, 4.0, 5.0]))
    >>> sec.tolist(), unsafe.tolist()
    ([False, False, True], [])
    """
    K = kernel()
    n = len(status)
    primary = status == CellStatus.PRIMARY
    empty = status == CellStatus.EMPTY
    candidate = status == CellStatus.SAFE
    publish_first = ((status == CellStatus.PROTECTED) | empty) & ~primary
    live = primary | candidate | publish_first
    atom = atom.astype(np.int64)
    cell = cell.astype(np.int64)
    row_cell, rgrp = _respondents(n_atoms, atom, cell, status, singletons, n_contributors)
    model = model_from_entries(
        n_atoms, n, atom, cell, row_cell, live, rgrp, np.abs(cost) + 1.0
    )  # fmt: skip
    has_rows = model.n_rows > 0
    first = np.flatnonzero(publish_first & has_rows)
    cand = np.flatnonzero(candidate & has_rows)
    order = np.r_[candidate_order(cost, model, first), candidate_order(cost, model, cand)]
    kinds = np.r_[np.ones(len(first), dtype=np.int8), np.zeros(len(cand), dtype=np.int8)]
    flags = np.zeros(n, dtype=np.uint8)
    flags[live & has_rows] = K.LIVE
    flags[primary & has_rows] |= K.PRIM
    flags[row_cell[rgrp >= 0]] |= K.ATT
    modes = {"exact": K.INTEGER, "modular": K.MODULAR, "float": K.FLOAT}
    res = eliminate(model, order, kinds, flags, modes[arithmetic], progress)
    dec = res.decision
    secondary = np.zeros(n, dtype=bool)
    secondary[order[(dec == K.SECONDARY) | (dec == K.SECONDARY_SINGLE)]] = True
    unsafe = np.union1d(np.flatnonzero(res.unsafe == 1), np.flatnonzero(primary & ~has_rows))
    details = {
        "atoms": n_atoms,
        "model_nonzeros": len(model.row_col),
        "candidates": len(cand),
        "respondents": int(np.sum(rgrp >= 0)),
        "secondary_reveal": int(np.sum(dec == K.SECONDARY)),
        "secondary_singleton": int(np.sum(dec == K.SECONDARY_SINGLE)),
        "singleton_unsafe": np.flatnonzero(res.unsafe == 2),
        "arithmetic": {K.INTEGER: "exact", K.MODULAR: "modular", K.FLOAT: "float"}[res.mode],
    }
    return secondary, unsafe, details


def _respondents(
    n_atoms: int,
    atom: np.ndarray,
    cell: np.ndarray,
    status: np.ndarray,
    singletons: bool,
    n_contributors: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The attacker cell and respondent group of each atom (-1: none).

    An atom gets a group when some non-empty cell with one contributor holds it alone (its
    column in the model is that atom); the lowest such cell is its attacker cell.
    """
    row_cell = np.zeros(n_atoms, dtype=np.int64)
    rgrp = np.full(n_atoms, -1, dtype=np.int64)
    if not singletons:
        return row_cell, rgrp
    n = len(status)
    if n_contributors is None or len(n_contributors) != n:
        raise ParameterError(
            "joint_elimination: the singleton rules need 'n_contributors' (one count per cell)."
        )
    rows_of = np.bincount(cell, minlength=n)
    single = (np.asarray(n_contributors) == 1) & (rows_of == 1) & (status != CellStatus.EMPTY)
    at = np.flatnonzero(single[cell])
    a_of, c_of = atom[at], cell[at]
    order = np.lexsort((c_of, a_of))
    a_of, c_of = a_of[order], c_of[order]
    first = np.r_[True, a_of[1:] != a_of[:-1]] if len(a_of) else np.zeros(0, dtype=bool)
    rgrp[a_of[first]] = np.arange(int(first.sum()))
    row_cell[a_of[first]] = c_of[first]
    return row_cell, rgrp
