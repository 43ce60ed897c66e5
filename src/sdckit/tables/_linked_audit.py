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

In check mode the requirements are first proved on the model in which only the atoms under a
suppressed cell move (the other atoms at their values): a feasible point of it is one of the
whole model, so what it proves holds; only the rest is decided on the whole model, whose
grand total holds every atom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sdckit.errors import ParameterError
from sdckit.tables._lp import feasibility_intervals

if TYPE_CHECKING:
    from sdckit.tables.linked import LinkedTables

__all__ = ["atom_intervals"]


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
    if need is not None:
        # check mode: first the model with only the atoms under a suppressed cell free (the
        # others at their values, a feasible point): what it proves holds in the whole model,
        # which decides only the rest (see feasibility_intervals' local proofs)
        hidden = np.zeros(n, dtype=bool)
        hidden[unknown] = True
        under = np.zeros(n_atoms, dtype=bool)
        under[atom[hidden[cell]]] = True
        groups = [np.r_[np.flatnonzero(under), n_atoms + np.arange(k)]]
    zeros = np.zeros(n)
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
    return lo[n_atoms:], hi[n_atoms:]
