"""Information loss of protected tables (worked example E7).

* :func:`suppression_loss`: how many cells are suppressed (primary, secondary), their value and
  their share of the table.
* :func:`perturbation_loss`: for rounded or perturbed tables, per area (a dimension whose codes
  are the output areas) the Hellinger distance, the relative absolute distance and the average
  absolute distance, averaged over the areas as in E7, and the change of Cramer's V of the
  two-way interior.  The per-table distances come from :func:`sdckit.utility.table_distances`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.errors import ParameterError
from sdckit.tables.table import Table

__all__ = ["PerturbationLoss", "SuppressionLoss", "perturbation_loss", "suppression_loss"]


@dataclass(frozen=True)
class SuppressionLoss:
    """Suppressed cells, their number, value and share of the table."""

    n_cells: int
    n_primary: int
    n_secondary: int
    value_primary: float
    value_secondary: float
    share_cells: float
    share_value: float
    share_interior_cells: float

    def to_frame(self) -> pl.DataFrame:
        """The figures as one row."""
        return pl.DataFrame([self.__dict__])

    def summary(self) -> Summary:
        """The figures as a summary."""
        return Summary("Information loss of cell suppression", list(self.__dict__.items()))


def suppression_loss(table: Table) -> SuppressionLoss:
    """Number, value and share of the suppressed cells of ``table``.

    ``share_value`` is the suppressed value of interior cells over the value of all interior
    cells; ``share_cells`` counts every cell, totals included.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, suppression_loss
    >>> t = Table.from_array(np.array([10, 6, 4]), {"x": ["a", "b"]}).suppress([1, 2])
    >>> suppression_loss(t).share_value
    1.0
    """
    interior = ~table.is_total
    supp = table.suppressed
    total_interior = float(np.abs(table.values[interior]).sum())
    return SuppressionLoss(
        n_cells=table.n_cells,
        n_primary=int(table.primary.sum()),
        n_secondary=int(table.secondary.sum()),
        value_primary=float(table.values[table.primary].sum()),
        value_secondary=float(table.values[table.secondary].sum()),
        share_cells=float(supp.mean()),
        share_value=float(np.abs(table.values[supp & interior]).sum() / total_interior)
        if total_interior
        else float("nan"),
        share_interior_cells=float(supp[interior].mean()) if interior.any() else float("nan"),
    )


@dataclass(frozen=True)
class PerturbationLoss:
    """E7's measures between an original and a perturbed table.

    Attributes
    ----------
    hellinger, relative_absolute_distance, average_absolute_distance : float
        Averages over the areas of the per-area Hellinger distance
        ``sqrt(1/2 sum_c (sqrt(D'(c)) - sqrt(D(c)))^2)``, relative absolute distance
        ``sum_c |D'(c) - D(c)| / D(c)`` (cells with ``D(c) > 0``) and average absolute distance
        ``sum_c |D'(c) - D(c)| / n_k``.
    hellinger_normalised : float
        Hellinger distance of the two whole interiors as distributions, in [0, 1].
    cramers_v_original, cramers_v_perturbed, cramers_v_change_pct : float
        Cramer's V of the two-way interior (NaN for other tables) and ``100 (V' - V) / V``.
    n_areas : int
    """

    hellinger: float
    relative_absolute_distance: float
    average_absolute_distance: float
    hellinger_normalised: float
    cramers_v_original: float
    cramers_v_perturbed: float
    cramers_v_change_pct: float
    n_areas: int

    def to_frame(self) -> pl.DataFrame:
        """The figures as one row."""
        return pl.DataFrame([self.__dict__])

    def summary(self) -> Summary:
        """The figures as a summary."""
        return Summary("Information loss of a perturbed table", list(self.__dict__.items()))


def _interior_grid(table: Table, values: np.ndarray) -> np.ndarray:
    grid = values.reshape(table.shape)
    leaves = [h.leaves for h in table.hierarchies]
    return grid[np.ix_(*leaves)]


def perturbation_loss(table: Table, perturbed: Any, *, area: str | None = None) -> PerturbationLoss:
    """Hellinger, RAD, AAD (averaged over areas) and Cramer's V change (E7).

    Parameters
    ----------
    table : Table
        The original table.
    perturbed : array_like
        Published value of each cell (for example ``RoundingResult.rounded`` or
        ``CellKeyResult.perturbed``).
    area : str, optional
        The dimension whose leaf codes are the areas ``k``; default: the whole interior is one
        area.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, perturbation_loss
    >>> t = Table.from_array(np.array([[10, 4, 6], [5, 4, 1], [5, 0, 5]]),
    ...                      {"area": ["k1", "k2"], "c": ["x", "y"]})
    >>> p = t.values.copy(); p[4] = 3  # area k1, cell x: 4 -> 3
    >>> round(perturbation_loss(t, p, area="area").average_absolute_distance, 3)
    0.25
    """
    pert = np.asarray(perturbed, dtype=float).ravel()
    if pert.size != table.n_cells:
        raise ParameterError("The 'perturbed' values need one entry per cell of the table.")
    orig_in = _interior_grid(table, table.values)
    pert_in = _interior_grid(table, pert)
    if area is None:
        per_area_o = [orig_in.ravel()]
        per_area_p = [pert_in.ravel()]
    else:
        if area not in table.dimensions:
            raise ParameterError(f"The 'area' {area!r} is not a dimension of the table.")
        d = table.dimensions.index(area)
        o = np.moveaxis(orig_in, d, 0)
        p = np.moveaxis(pert_in, d, 0)
        per_area_o = [o[k].ravel() for k in range(o.shape[0])]
        per_area_p = [p[k].ravel() for k in range(p.shape[0])]
    from sdckit.utility import cramers_v, table_distances  # (scipy.stats: on first use)

    dists = [table_distances(a, b) for a, b in zip(per_area_o, per_area_p, strict=True)]
    whole = table_distances(orig_in.ravel(), pert_in.ravel())
    if orig_in.ndim == 2:
        v0, v1 = cramers_v(orig_in), cramers_v(pert_in)
    else:
        v0 = v1 = float("nan")
    return PerturbationLoss(
        hellinger=float(np.mean([x.hellinger for x in dists])),
        relative_absolute_distance=float(
            np.mean([x.relative_absolute_distance_cells for x in dists])
        ),
        average_absolute_distance=float(np.mean([x.average_absolute_distance for x in dists])),
        hellinger_normalised=whole.hellinger_normalised,
        cramers_v_original=v0,
        cramers_v_perturbed=v1,
        cramers_v_change_pct=float(100.0 * (v1 - v0) / v0) if v0 else float("nan"),
        n_areas=len(dists),
    )
