"""The joint audit of linked tables over the records' atoms (``LinkedTables.audit(model="atoms")``).

The tables' own relations are not everything an intruder can use when the tables' variables
overlap in a cycle (sex x age, age x region, region x sex): the published cells are margins of
one array over all the variables, which must be non-negative.  The atom model is that array
restricted to the *atoms*, the code combinations that have records: its unknowns are the
atoms' values, every distinct cell of every table is the sum of the atoms under it (a
published cell at its value, a suppressed one within its a priori bounds), and an atom is at
least 0 when the tables' cells are (their lower bounds).  Its feasible set lies inside that of
the full array over every combination (which allows records in the empty combinations too),
so an interval from the atom model is never wider: a pattern that passes this audit passes
the audit of any intruder who reads all the tables, even one who knows which combinations
have no records.  It is the model of the joint elimination
(:mod:`sdckit.tables.suppression._gauss_linked`), whose patterns it audits with their levels.

In check mode three steps decide the primaries' requirements, each exact in what it decides:

1. a rank test (the Gauss method's elimination kernel, integer arithmetic) finds the primaries
   that are combinations of the published cells: their interval is a point whatever the
   bounds, so they fail without an LP;
2. the others are proved on small models: for each sub-table of each table, the atoms under
   its suppressed cells and the suppressed cells over those atoms move, every other atom at
   its value (a feasible point of such a model is one of the whole model, so what it proves
   holds); then the model of every atom under a suppressed cell;
3. only the rest is decided on the whole model, whose grand total holds every atom.

The atom model is much stricter than the tables' relations when the records are sparse: a
move must keep every published cell of every table, so it needs atoms at the corners of a
box in all the tables' variables at once, and most such corners are empty combinations.
Then few requirements are proved in step 2, and step 3 decides them one LP at a time: on
three tables of 20,000 records (18,332 atoms, 12,491 primaries) step 2 proved about 2,000
and step 3 did not finish in 15 minutes (``docs/benchmarks.md``).  At that size use
:meth:`LinkedTables.computable_primaries <sdckit.tables.LinkedTables.computable_primaries>`
(the rank test of step 1 alone: 20 s on 368,294 atoms).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sdckit.errors import ParameterError
from sdckit.tables._lp import LOCAL_PROOFS_FROM, feasibility_intervals

if TYPE_CHECKING:
    from sdckit.tables.linked import LinkedTables

__all__ = ["atom_intervals", "exact_in_atoms"]


def atom_intervals(
    linked: LinkedTables,
    unknown: np.ndarray,
    requirement: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
    targets: np.ndarray | None,
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Feasibility intervals (deviations from the true values) of the ``unknown`` distinct
    cells in the atom model, as :func:`~sdckit.tables._lp.feasibility_intervals` gives them
    for the tables' own relations (``requirement`` and ``targets`` index ``unknown``)."""
    n_atoms, atom, cell = linked.joint_model()
    values = linked.atom_values
    if values is None:
        raise ParameterError("The atom model needs the atoms' values (LinkedTables.with_records).")
    k = len(unknown)
    n = linked.n_distinct
    # columns: the atoms' deviations, then one per unknown cell (its deviation); a row per
    # distinct cell: the sum of its atoms' deviations minus its own (0 where published)
    matrix = sp.csr_matrix(
        (
            np.r_[np.ones(len(atom)), -np.ones(k)],
            (np.r_[cell, unknown], np.r_[atom, n_atoms + np.arange(k)]),
        ),
        shape=(n, n_atoms + k),
    )
    au = linked.values[unknown]
    lb = np.minimum(linked.lower_bounds[unknown], au)
    ub = np.maximum(linked.upper_bounds[unknown], au)
    non_negative = bool(np.all(linked.lower_bounds >= 0))
    atom_lo = -values if non_negative else np.full(n_atoms, -np.inf)
    col_lo = np.r_[atom_lo, lb - au]
    col_hi = np.r_[np.full(n_atoms, np.inf), ub - au]
    wanted = np.arange(k) if targets is None else np.asarray(targets)
    need = None
    if requirement is not None:
        pad = np.zeros(n_atoms)
        need = (
            np.r_[np.full(n_atoms, np.inf), requirement[0]],
            np.r_[np.full(n_atoms, -np.inf), requirement[1]],
            np.r_[pad, requirement[2]],
            np.r_[pad, requirement[3]],
        )
    groups = None
    exact = np.zeros(k, dtype=bool)
    if requirement is not None:
        # check mode: primaries in the span of the published cells are refuted by a rank test
        # (no LP); the others are proved first on small models, then on the whole one
        primaries = np.isfinite(requirement[0]) | np.isfinite(requirement[1])
        exact = exact_in_atoms(linked, unknown, primaries, (n_atoms, atom, cell))
        wanted = wanted[~exact[wanted]]
        groups = _groups(linked, unknown, n_atoms, atom, cell)
    zeros = np.zeros(n)
    if not len(wanted):
        lo, hi = np.full(n_atoms + k, np.nan), np.full(n_atoms + k, np.nan)
    else:
        lo, hi = feasibility_intervals(
            matrix,
            zeros,
            zeros,
            col_lo,
            col_hi,
            targets=n_atoms + wanted,
            need=need,
            groups=groups,
            threads=threads,
        )
    lo, hi = lo[n_atoms:], hi[n_atoms:]
    lo[exact] = hi[exact] = 0.0
    return lo, hi


def exact_in_atoms(
    linked: LinkedTables,
    unknown: np.ndarray,
    targeted: np.ndarray,
    model: tuple[int, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Which of the ``targeted`` unknown (hidden) cells the published cells give exactly.

    A cell whose column of the atom model is a combination of the published cells' columns
    has one value in every solution (a point interval), whatever the bounds: the
    elimination kernel of the Gauss method finds them (exact integer arithmetic), with every
    published cell published first and nothing else to decide.  ``model`` is
    ``linked.joint_model()`` when the caller has it (or that model without the rows of atoms
    the intruder is taken to know).
    """
    from sdckit.tables.suppression._gauss_linked import joint_elimination
    from sdckit.tables.table import CellStatus

    n_atoms, atom, cell = linked.joint_model() if model is None else model
    status = np.full(linked.n_distinct, CellStatus.PROTECTED, dtype=np.int8)
    status[unknown] = CellStatus.SECONDARY
    status[unknown[targeted]] = CellStatus.PRIMARY
    _, unsafe, _ = joint_elimination(n_atoms, atom, cell, status, np.zeros(linked.n_distinct))
    out = np.zeros(len(unknown), dtype=bool)
    out[np.searchsorted(unknown, np.intersect1d(unsafe, unknown[targeted]))] = True
    return out


def _groups(
    linked: LinkedTables,
    unknown: np.ndarray,
    n_atoms: int,
    atom: np.ndarray,
    cell: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Columns of the small models of the local proofs, smallest first, with the unknown
    cells each decides.

    One per sub-table of each table with a suppressed cell: the atoms under its suppressed
    cells, and every suppressed cell holding one of those atoms (free within its bounds);
    the other atoms stay at their values; it decides the sub-table's own cells.  Last the
    model of every atom under a suppressed cell.  Each is a restriction of the whole model,
    so what it proves holds.
    """
    from sdckit.tables.audit._grid import subtables

    n = linked.n_distinct
    position = np.full(n, -1, dtype=np.int64)
    position[unknown] = np.arange(len(unknown))
    by_cell = sp.csr_matrix(
        (np.ones(len(atom), dtype=np.int8), (cell, atom)), shape=(n, n_atoms)
    )  # the atoms under each cell
    by_atom = by_cell[unknown].T.tocsr()  # the unknown cells over each atom
    out: list[tuple[np.ndarray, np.ndarray]] = []
    seen: set[bytes] = set()
    limit = max(LOCAL_PROOFS_FROM, n_atoms // 4)
    for t, ids in zip(linked.tables, linked.cell_map, strict=True):
        for sub in subtables(t):
            own = position[ids[sub.ravel()]]
            own = np.unique(own[own >= 0])
            if not len(own):
                continue
            atoms = np.unique(by_cell[unknown[own]].indices)
            if len(atoms) > limit:
                continue
            cells = np.unique(by_atom[atoms].indices)
            group = np.r_[atoms, n_atoms + cells]
            key = group.tobytes() + own.tobytes()
            if key not in seen:
                seen.add(key)
                out.append((group, n_atoms + own))
    out.sort(key=lambda g: len(g[0]))
    under = np.unique(by_cell[unknown].indices)
    every = n_atoms + np.arange(len(unknown))
    out.append((np.r_[under, every], every))
    return out
