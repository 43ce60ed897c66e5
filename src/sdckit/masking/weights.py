"""Weight calibration: sampling weights that show nothing the released variables do not.

Survey weights reveal what they were calibrated on.  When the weights were post-stratified to
region x sex x age class, the records that share a weight value share a region, so a region
that local suppression removed comes back from the records with the same weight.  Dropping the
weight makes the file useless for estimation.  :class:`WeightCalibration` replaces the weight
by new weights that are a function of the *released* values of chosen variables only (plus,
on request, independent seeded noise), calibrated so that the weighted total of every category
of those variables equals the total the current weights give:

* the categories are those of the file as it is at that step (after earlier steps recoded or
  suppressed values); the total weight is a margin too, and a missing value belongs to no
  category of its variable: a record whose region was suppressed gets no region factor (a
  factor of its own would be set by the original weights of the records suppressed, which
  come mostly from some regions, and make their weights look like those regions').  The
  weighted number of records whose region was suppressed is still kept: it is the total less
  the shown regions' totals;
* optional ``interactions`` (pairs of the variables) keep two-way margins as well;
* the method is generalised raking (Deville and Sarndal 1992, the raking-ratio distance):
  ``w_i = d_i exp(x_i' lambda)``, with ``x_i`` the dummies of record ``i``'s categories and
  ``lambda`` found by Newton's method on the dual, ``X' W X delta = t - X' w``, with step
  halving.  Categories are linearly dependent (the categories of every variable add up to the
  whole file, a two-way margin adds up to both one-way margins, empty cells remove more); a
  maximal independent set of them is kept (a pivoted Cholesky factorisation of the scaled
  Gram matrix, in the order variables, then interactions) and the others hold with them,
  since the targets come from one set of weights;
* the start weights are uniform, ``d = total / n`` (times lognormal noise with mean 1 and
  relative standard deviation ``noise`` when asked), so no trace of the original weights is
  left apart from the category totals themselves.

Because ``exp(x_i' lambda)`` depends on the record's released categories only, two records
with the same released values of the variables get the same weight (without noise), and a
weight tells nothing that the released variables do not show.  What the new weights do carry
are the calibration targets, which are aggregates: the weighted total of every category (and
of every cell of the interactions).  A category with a single record publishes that record's
original weight; calibrate on variables (and interactions) whose categories hold several
records.  A :class:`~sdckit.errors.SdcWarning` names the first margin with a category of a
single record (or household); ``details["smallest_category"]`` gives the smallest number of
records in a category and ``details["single_unit_categories"]`` the number of such
categories.

Households: when the file has a household id and the current weights are constant within
households (as integrated household weights are), one weight per household is calibrated,
with the household's member counts per category as its row of the design matrix (integrated
calibration, Lemaitre and Dufour 1987), so the new weights are constant within households too
and still keep the person-level margins.  Otherwise every person is calibrated on its own.  A
household's weight is then a function of the released values of its members: households of
the same composition get the same weight (without noise).  It links the members of a
household as the household id does (with noise, a weight is nearly unique to its household):
releasing household-constant weights without the household id does not unlink them.

``noise`` multiplies the start weights by independent draws ``exp(s z - s^2 / 2)``,
``s^2 = log(1 + noise^2)``, ``z ~ N(0, 1)`` (per household in the household case); the
calibration then restores the margins exactly, so the noise only blurs the weights within the
cells.  ``rounding`` rounds the final weights to multiples of a step (half up, never below one
step); a category total then moves by at most ``step / 2`` per record of the category (one step
for a weight raised to the step).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl
import scipy.linalg
import scipy.sparse

from sdckit._codes import encode_column, first_index
from sdckit._validation import check_int, check_real, check_seed, column_list
from sdckit.errors import ColumnError, DataError, InfeasibleError, ParameterError, SdcWarning
from sdckit.microdata import Microdata
from sdckit.protection import (
    Column,
    Columns,
    Integer,
    ListOf,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    Seed,
    TupleOf,
    changed_cells,
)
from sdckit.twins import function_twin

__all__ = ["WeightCalibration", "calibrate_weights"]

#: Smallest squared sine of the angle between a category's dummy column and the span of the
#: columns kept before it for the column to count as a constraint of its own.
_PIVOT_TOLERANCE = 1e-9
#: Slack added to the tolerance when ``verify`` recomputes the margins (summation order).
_VERIFY_SLACK = 1e-12


# ------------------------------------------------------------------------------- margins
class _Margins:
    """The calibration margins of a file: one dummy column per category of each margin.

    ``labels[m]`` names margin ``m`` (``"region"`` or ``"region x sex"``); ``columns[m]`` is the
    column of each record's category in margin ``m`` (columns numbered over all margins);
    ``margin_of[c]`` is the margin of column ``c``; ``counts[c]`` the number of records in it.
    """

    def __init__(
        self, frame: pl.DataFrame, variables: Sequence[str], interactions: Sequence[tuple[str, str]]
    ) -> None:
        codes: dict[str, np.ndarray] = {}
        for name in variables:
            raw, _ = encode_column(frame.get_column(name))
            codes[name] = raw.astype(np.int64)  # -1: missing, in no category of the margin
        # the total weight first: records whose value of a variable is missing (a suppressed
        # region) belong to no category of it, so their weights carry no factor that a
        # suppressed value's category total could make region-like
        parts: list[tuple[str, np.ndarray]] = [("total", np.zeros(frame.height, np.int64))]
        parts += [(name, codes[name]) for name in variables]
        for a, b in interactions:
            both = (codes[a] >= 0) & (codes[b] >= 0)
            cell = codes[a] * (int(codes[b].max()) + 1) + codes[b]
            parts.append((f"{a} x {b}", np.where(both, cell, -1)))
        self.labels: list[str] = []
        self.columns: list[np.ndarray] = []
        margin_of: list[np.ndarray] = []
        offset = 0
        for m, (label, combined) in enumerate(parts):
            shown = combined >= 0
            dense = np.full(len(combined), -1, dtype=np.int64)
            if shown.any():
                _, inverse = np.unique(combined[shown], return_inverse=True)
                dense[shown] = inverse.astype(np.int64).ravel()
            size = int(dense.max()) + 1 if shown.any() else 0
            self.labels.append(label)
            self.columns.append(np.where(shown, dense + offset, -1))
            margin_of.append(np.full(size, m, dtype=np.int64))
            offset += size
        self.n_columns = offset
        self.margin_of = np.concatenate(margin_of) if margin_of else np.zeros(0, np.int64)
        self.counts = self.totals(np.ones(frame.height))

    def totals(self, weights: np.ndarray) -> np.ndarray:
        """The weighted total of every category (``X' w`` at the person level)."""
        out = np.zeros(self.n_columns)
        for cols in self.columns:
            shown = cols >= 0
            out += np.bincount(cols[shown], weights=weights[shown], minlength=self.n_columns)
        return out

    def design(self, unit: np.ndarray, n_units: int) -> scipy.sparse.csr_matrix:
        """The units x categories matrix: member counts per category (dummies for persons)."""
        rows = np.tile(unit, len(self.columns))
        cols = np.concatenate(self.columns)
        shown = cols >= 0
        rows, cols = rows[shown], cols[shown]
        data = np.ones(rows.size)
        return scipy.sparse.csr_matrix((data, (rows, cols)), shape=(n_units, self.n_columns))

    def relative_errors(self, fitted: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """``|fitted - target| / target`` per category (0 where both are 0)."""
        gap = np.abs(fitted - targets)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(targets > 0, gap / np.where(targets > 0, targets, 1.0), gap)
        rel[~np.isfinite(rel)] = np.inf
        return rel

    def worst(self, errors: np.ndarray) -> tuple[float, str]:
        """The largest error and the margin it is in."""
        if errors.size == 0:
            return 0.0, ""
        c = int(np.argmax(errors))
        return float(errors[c]), self.labels[int(self.margin_of[c])]


def _independent_columns(gram: np.ndarray) -> np.ndarray:
    """A maximal set of linearly independent columns, in order (greedy pivoted Cholesky).

    ``gram`` is ``X' X``; its null space is that of ``X' W X`` for any positive weights.
    """
    p = gram.shape[0]
    diag = np.diag(gram)
    scale = np.where(diag > 0, 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)), 0.0)
    g = gram * scale[:, None] * scale[None, :]  # (an empty column has pivot 0: left out)
    factor = np.zeros((p, p))
    kept: list[int] = []
    for j in range(p):
        k = len(kept)
        if k:
            row = scipy.linalg.solve_triangular(factor[:k, :k], g[kept, j], lower=True)
            pivot = g[j, j] - row @ row
        else:
            row, pivot = np.zeros(0), g[j, j]
        if pivot > _PIVOT_TOLERANCE:
            factor[k, :k] = row
            factor[k, k] = np.sqrt(pivot)
            kept.append(j)
    return np.asarray(kept, dtype=np.int64)


def _rake(
    design: scipy.sparse.csr_matrix,
    start: np.ndarray,
    targets: np.ndarray,
    margins: _Margins,
    *,
    tolerance: float,
    max_iterations: int,
) -> tuple[np.ndarray, int, int]:
    """Raking weights ``start * exp(X lambda)`` with ``X' w = targets``.

    Returns the weights, the number of Newton iterations and of independent categories.

    Newton's method on the convex dual ``F(lambda) = sum(w) - t' lambda`` over a maximal
    independent set of categories, with step halving (Armijo) when a full step does not
    decrease it.

    Raises
    ------
    InfeasibleError
        A category with a positive target but no unit, or no convergence.
    """
    unit_counts = np.asarray(design.sum(axis=0)).ravel()
    empty = (unit_counts == 0) & (targets > 0)
    if empty.any():
        label = margins.labels[int(margins.margin_of[np.flatnonzero(empty)[0]])]
        raise InfeasibleError(
            f"WeightCalibration: a category of {label!r} has a positive target total but no "
            "record, so no weights can reach it; recode the category into another one or "
            "calibrate without this margin."
        )
    kept = _independent_columns((design.T @ design).toarray())
    xk = design.tocsc()[:, kept].tocsr()
    tk = targets[kept]
    lam = np.zeros(kept.size)
    w = start.copy()
    error, label = margins.worst(margins.relative_errors(design.T @ w, targets))
    # a total of many weights is only as exact as floating point adds them up
    tolerance = max(tolerance, 16.0 * np.finfo(np.float64).eps * len(start))
    for iteration in range(max_iterations + 1):
        if error <= tolerance:
            return w, iteration, int(kept.size)
        if iteration == max_iterations:
            break
        gap = tk - xk.T @ w
        hessian = (xk.T @ xk.multiply(w[:, None]).tocsr()).toarray()
        step = _newton_step(hessian, gap)
        value = w.sum() - tk @ lam
        slope = -(gap @ step)
        size = 1.0
        while size > 1e-12:
            trial = lam + size * step
            with np.errstate(over="ignore", invalid="ignore"):
                w_trial = start * np.exp(xk @ trial)
            value_trial = w_trial.sum() - tk @ trial
            if np.isfinite(value_trial):
                err_trial, label_trial = margins.worst(
                    margins.relative_errors(design.T @ w_trial, targets)
                )
                if value_trial <= value + 1e-4 * size * slope or err_trial < error:
                    break
            size /= 2
        else:
            break  # no step decreases the dual: stuck
        lam, w, error, label = trial, w_trial, err_trial, label_trial
    raise InfeasibleError(
        f"WeightCalibration did not converge in {max_iterations} Newton iterations (largest "
        f"relative error {error:.2g}, in the margin {label!r}); raise max_iterations or "
        "tolerance, or calibrate on fewer or coarser variables or interactions."
    )


def _newton_step(hessian: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """Solve ``hessian @ step = gap`` with diagonal scaling (least squares if singular)."""
    scale = 1.0 / np.sqrt(np.maximum(np.diag(hessian), np.finfo(float).tiny))
    scaled = hessian * scale[:, None] * scale[None, :]
    try:
        factor = scipy.linalg.cho_factor(scaled)
        solved = scipy.linalg.cho_solve(factor, gap * scale)
    except np.linalg.LinAlgError:
        solved = np.linalg.lstsq(scaled, gap * scale, rcond=None)[0]
    return solved * scale


def _round_weights(weights: np.ndarray, step: float) -> np.ndarray:
    """Weights rounded half up to multiples of ``step``, never below one step."""
    return np.maximum(np.floor(weights / step + 0.5), 1.0) * step


# ------------------------------------------------------------------------------- method
class WeightCalibration(ProtectionMethod):
    """Replace the sampling weight by weights raked on the released values of some variables.

    See the module docstring for the method; in short, the new weight of a record is
    ``total / n * exp(sum of its categories' lambda)`` (times independent noise when asked),
    with the ``lambda`` chosen so that the total weight, the weighted total of every category
    of ``variables`` (a missing value is in none) and of every cell of ``interactions`` stays
    as the current weights give it.

    Parameters
    ----------
    variables : list of str, optional
        The variables whose category totals are kept (default: the key variables).
    interactions : list of (str, str), optional
        Pairs of ``variables`` whose two-way totals are kept too.
    noise : float, default 0.0
        Relative standard deviation of the multiplicative lognormal noise on the start weights
        (e.g. 0.05), drawn from ``seed``; the margins are restored exactly afterwards.
    rounding : float, optional
        Round the final weights to multiples of this step (half up, at least one step).
    max_iterations : int, default 100
        Most Newton iterations.
    tolerance : float, default 1e-10
        Largest relative difference between a category's new and current weighted total (at
        least the precision of adding up the weights: 16 units of roundoff per record, 3.6e-9
        for a million records).
    seed : int or numpy.random.Generator, optional
        Seed of the noise (not used when ``noise`` is 0).

    Notes
    -----
    The ``details`` of the result: ``largest_relative_error`` (of the released weights, after
    rounding), ``calibration_error`` (before rounding), ``iterations`` (Newton iterations),
    ``households`` (whether one weight per household was calibrated), ``units``, ``categories``
    and ``independent_categories`` (the constraints), ``smallest_category`` (fewest records in
    a category), ``single_unit_categories`` (categories of one record or household, whose
    totals give back a current weight) and ``margin_errors`` (largest relative error per
    margin).

    Why: on ``generate_census(5000, seed=1)`` with weights post-stratified to region x sex x
    age group (person level) and local suppression of region (k = 3; 148 regions suppressed),
    137 suppressed regions come back, all correctly, from the records sharing the weight
    value; after ``WeightCalibration(variables=["region", "sex", "age_group"])`` none does
    (with ``noise=0.05`` none either; with ``rounding=1.0`` 62 records share a weight with a
    single region by chance, and 5 of those guesses are right: the rate of guessing).

    What is kept, measured with :func:`sdckit.utility.weighted.weighted_estimates` on
    ``generate_census(5000, seed=1)`` (1,874 households, integrated household weights from
    28 to 394), keys region (household-level), sex, age group and marital status, after
    ``LocalSuppression(k=3)`` with region suppressed first (416 regions, 22 age groups and 28
    marital statuses suppressed), against the suppressed file with its original weights:

    * A: ``variables=["region", "sex", "age_group"]``, ``interactions=[("region", "sex")]``
      (integrated, 48 categories of which 36 independent, 5 Newton iterations, 0.03 s,
      largest relative margin error 3e-14).  Calibrated totals: exact.  Totals of variables
      not calibrated on, total variation distance of the weighted shares: urban/rural 0.029,
      marital status 0.003, education 0.005, economic activity 0.004.  Weighted means:
      income +0.2 %, expenditure +0.6 %, household income +1.9 %.  WLS ``income ~ age +
      C(sex)``: intercept -0.2 %, sex +8.6 %, age -1.6 %; confidence-interval overlaps 0.99,
      0.82 and 0.93.
    * B: as A plus ``urban_rural`` and the interaction region x urban/rural (the sampling
      strata; 68 categories, 45 independent, 6 iterations; one region x urban/rural cell
      holds a single household, which the warning reports).  Urban/rural exact; marital
      status 0.002, education 0.002, economic activity 0.002; means -0.1 %, +0.1 %, +1.2 %;
      coefficients -0.8 %, +5.9 %, -1.3 % with overlaps 0.99, 0.87 and 0.94.  With
      ``noise=0.05``: means -0.1 %, +0.1 %, +1.3 %, overlaps 0.98, 0.87, 0.95.
    * Most of what remains comes from the random per-household factor of the census weights
      (lognormal, standard deviation 0.25), which no function of the released values can
      reproduce: with the stratum mean weights as original weights, B moves the means by at
      most 0.5 % and the sex coefficient by 2.8 % (overlap 0.94).  Calibrate on the design
      variables (strata) as well as on the post-stratification variables.
    * Rounding (B): with ``rounding=1.0`` the category totals move by 1.3e-4 (median) and
      1.3e-3 (largest) relative, at most a third of the bound ``step / 2`` per record, and the
      total weight by 6e-6; with ``rounding=10.0`` by 1.6e-3 (median), 3.6e-2 (largest) and
      7e-4.  The estimates above do not change at the precision shown.

    References
    ----------
    Deville, J.-C. and Sarndal, C.-E. (1992). Calibration estimators in survey sampling.
    JASA 87, 376-382.  Lemaitre, G. and Dufour, J. (1987). An integrated method for weighting
    persons and families. Survey Methodology 13, 199-207.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.weights import WeightCalibration
    >>> df = pl.DataFrame({
    ...     "region": ["N", "N", "N", "S", "S", None, None],
    ...     "w": [10.0, 20.0, 30.0, 5.0, 7.0, 4.0, 6.0],
    ... })
    >>> res = WeightCalibration(variables=["region"]).apply(df, keys=["region"], weight="w")
    >>> res.data["w"].round(6).to_list()  # category total / category count
    [20.0, 20.0, 20.0, 6.0, 6.0, 5.0, 5.0]
    """

    name: ClassVar[str] = "weight calibration"
    description: ClassVar[str] = (
        "Replaces the sampling weight by new weights that depend only on the released values "
        "of chosen variables, raked so that the weighted total of every category of those "
        "variables stays as it was (weight calibration)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "variables": Param(
            Columns(role="keys"),
            None,
            help="variables whose category totals are kept (default: the key variables)",
        ),
        "interactions": Param(
            ListOf(TupleOf((Column(role="keys"), Column(role="keys")))),
            None,
            help="pairs of those variables whose two-way totals are kept too",
        ),
        "noise": Param(
            Real(minimum=0.0, maximum=1.0),
            help="relative standard deviation of random noise on the start weights (e.g. 0.05)",
        ),
        "rounding": Param(
            Real(minimum=0.0, min_open=True),
            None,
            help="round the new weights to multiples of this step (e.g. 1); a category total "
            "then moves by at most half a step per record",
        ),
        "max_iterations": Param(Integer(minimum=1), help="most Newton iterations"),
        "tolerance": Param(
            Real(minimum=0.0, maximum=0.1, min_open=True),
            help="largest relative difference of a category total",
        ),
        "seed": Param(Seed(), None, help="random seed of the noise (an integer or a Generator)"),
    }

    def __init__(
        self,
        *,
        variables: str | Sequence[str] | None = None,
        interactions: Sequence[tuple[str, str]] | None = None,
        noise: float = 0.0,
        rounding: float | None = None,
        max_iterations: int = 100,
        tolerance: float = 1e-10,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.variables = variables
        self.interactions = interactions
        self.noise = noise
        self.rounding = rounding
        self.max_iterations = max_iterations
        self.tolerance = tolerance
        self.seed = seed

    # -------------------------------------------------------------- set-up
    def _settings(self, md: Microdata) -> tuple[tuple[str, ...], list[tuple[str, str]], str]:
        """The calibration variables, the interactions and the weight column, checked."""
        if md.weight is None:
            raise ColumnError(
                "WeightCalibration needs a sampling weight; pass weight=... when building the "
                "data (a file without weights has nothing to protect)."
            )
        variables = column_list(self.variables, "variables") or md.keys
        if not variables:
            raise ColumnError(
                "WeightCalibration needs variables to calibrate on; pass variables=[...] or "
                "give the data key variables (keys=...)."
            )
        for col in variables:
            if col in (md.weight, md.household):
                raise ParameterError(
                    f"The 'variables' parameter of WeightCalibration names {col!r}, the weight "
                    "or household column; calibrate on released categorical variables only."
                )
        pairs: list[tuple[str, str]] = []
        for pair in self.interactions or ():
            a, b = (str(v) for v in pair)
            if a not in variables or b not in variables or a == b:
                raise ParameterError(
                    f"The 'interactions' parameter of WeightCalibration pairs {a!r} with "
                    f"{b!r}; each pair must name two different columns among 'variables' "
                    "(add them to 'variables' or drop the pair)."
                )
            pairs.append((a, b))
        return tuple(variables), pairs, md.weight

    @staticmethod
    def _households(md: Microdata, weights: np.ndarray) -> np.ndarray | None:
        """Each record's household number when weights are constant within households."""
        if md.household is None:
            return None
        raw, levels = encode_column(md.frame.get_column(md.household))
        if (raw < 0).any():
            raise DataError(
                f"The household column {md.household!r} has missing values; every record "
                "needs a household id."
            )
        house = raw.astype(np.int64)
        lead = first_index(house, len(levels))
        if not np.array_equal(weights, weights[lead][house]):
            return None  # person weights: calibrate persons
        return house

    # -------------------------------------------------------------- apply
    def _apply(self, md: Microdata) -> Protected:
        variables, pairs, weight_col = self._settings(md)
        noise = check_real(self.noise, "noise", minimum=0.0, maximum=1.0)
        tolerance = check_real(self.tolerance, "tolerance", minimum=0.0, min_inclusive=False)
        max_iterations = check_int(self.max_iterations, "max_iterations", minimum=1)
        step = self.rounding
        if step is not None:
            step = check_real(step, "rounding", minimum=0.0, min_inclusive=False)
        current = md.weights()
        if current is None:  # (checked in _settings)
            raise ColumnError("WeightCalibration needs a sampling weight.")
        margins = _Margins(md.frame, variables, pairs)
        targets = margins.totals(current)
        house = self._households(md, current)
        if house is None:
            unit, n_units = np.arange(md.n_records), md.n_records
        else:
            unit, n_units = house, int(house.max()) + 1
        design = margins.design(unit, n_units)
        single = np.diff(design.tocsc().indptr) == 1  # categories of one record or household
        if single.any():
            label = margins.labels[int(margins.margin_of[np.flatnonzero(single)[0]])]
            warnings.warn(
                f"WeightCalibration: {int(single.sum())} calibrated categories (the first in "
                f"{label!r}) hold a single {'household' if house is not None else 'record'}, "
                "whose current weight their kept totals give back; merge such categories, "
                "drop the interaction, or suppress the values first.",
                SdcWarning,
                stacklevel=3,
            )
        per_person = float(current.sum()) / md.n_records
        start = np.ones(n_units)
        if noise > 0:
            rng = check_seed(self.seed)
            s = np.sqrt(np.log1p(noise**2))
            start = np.exp(s * rng.standard_normal(n_units) - s**2 / 2)
        # (in units of the uniform weight, so that the numbers are near 1)
        raked, iterations, independent = _rake(
            design,
            start,
            targets / per_person,
            margins,
            tolerance=tolerance,
            max_iterations=max_iterations,
        )
        new = raked[unit] * per_person
        calibration_error = margins.worst(margins.relative_errors(margins.totals(new), targets))
        if step is not None:
            new = _round_weights(new, step)
        if not (np.all(np.isfinite(new)) and np.all(new > 0)):
            raise InfeasibleError(
                "WeightCalibration produced zero or infinite weights (extreme margins); "
                "calibrate on fewer or coarser variables or interactions."
            )
        errors = margins.relative_errors(margins.totals(new), targets)
        per_margin = {
            label: float(errors[margins.margin_of == m].max(initial=0.0))
            for m, label in enumerate(margins.labels)
        }
        frame = md.frame.with_columns(pl.Series(weight_col, new, dtype=pl.Float64))
        details: dict[str, Any] = {
            "largest_relative_error": margins.worst(errors)[0],
            "calibration_error": calibration_error[0],
            "iterations": iterations,
            "households": house is not None,
            "units": n_units,
            "categories": margins.n_columns,
            "independent_categories": independent,
            "smallest_category": int(margins.counts.min()),
            "single_unit_categories": int(single.sum()),
            "margin_errors": per_margin,
        }
        return Protected.from_frames(md, frame, self, details=details)

    # -------------------------------------------------------------- verification
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check: only the weight changed; margins kept; weights positive, per household."""
        variables, pairs, weight_col = self._settings(original)
        tolerance = check_real(self.tolerance, "tolerance", minimum=0.0, min_inclusive=False)
        out = protected.microdata.frame
        self._require(out.columns == original.frame.columns, "the columns changed")
        self._require(out.height == original.n_records, "the number of records changed")
        for col in original.frame.columns:
            if col != weight_col:
                changed = changed_cells(original.frame.get_column(col), out.get_column(col))
                self._require(not changed.any(), f"the column {col!r} changed")
        current = original.weights()
        new = out.get_column(weight_col).cast(pl.Float64).to_numpy()
        self._require(
            np.all(np.isfinite(new)) and np.all(new > 0),
            f"the new weights in {weight_col!r} are not all positive and finite",
        )
        if current is not None and self._households(original, current) is not None:
            self._require(
                protected.microdata.inconsistent_households(weight_col) == 0,
                f"the new weights in {weight_col!r} differ within a household",
            )
        margins = _Margins(out, variables, pairs)
        targets = margins.totals(current if current is not None else np.ones(out.height))
        gap = np.abs(margins.totals(new) - targets)
        tolerance = max(tolerance, 16.0 * np.finfo(np.float64).eps * out.height)
        allowed = (tolerance + _VERIFY_SLACK) * targets
        if self.rounding is not None:
            step = float(self.rounding)
            units = new / step
            self._require(
                np.allclose(units, np.round(units), rtol=0, atol=1e-6),
                f"the new weights in {weight_col!r} are not multiples of the rounding step",
            )
            at_step = margins.totals((np.abs(new - step) <= 1e-9 * step).astype(np.float64))
            allowed = allowed + step / 2 * (margins.counts + at_step) * (1 + 1e-9)
        bad = np.flatnonzero(gap > allowed)
        if bad.size:
            label = margins.labels[int(margins.margin_of[bad[0]])]
            self._fail(
                f"the weighted totals of {label!r} are not kept (more than the tolerance"
                + (" and the rounding" if self.rounding is not None else "")
                + " explain)"
            )

    @classmethod
    def contract_example(cls) -> tuple[WeightCalibration, Microdata]:
        """Integrated calibration of a small household file, with an interaction and noise."""
        rng = np.random.default_rng(31)
        sizes = rng.integers(1, 5, size=16)
        n = int(sizes.sum())
        hh = np.repeat(np.arange(16) * 7 + 3, sizes)
        w = np.repeat(rng.uniform(20.0, 80.0, size=16).round(2), sizes)
        region = np.repeat(rng.choice(["north", "south", "east"], size=16), sizes).astype(object)
        region[rng.random(n) < 0.1] = None
        order = rng.permutation(n)
        frame = pl.DataFrame(
            {
                "hid": hh[order],
                "region": pl.Series(region[order].tolist(), dtype=pl.String),
                "sex": rng.integers(1, 3, size=n),
                "age": rng.integers(1, 4, size=n),
                "income": rng.gamma(2.0, 500.0, size=n).round(0),
                "w": w[order],
            }
        )
        md = Microdata(
            frame, keys=["region", "sex", "age"], numeric=["income"], weight="w", household="hid"
        )
        method = cls(interactions=[("region", "sex")], noise=0.05, seed=5)
        return method, md


@function_twin(WeightCalibration)
def calibrate_weights(data: Any, **params: Any) -> Protected:
    """Replace the weight by weights raked on released values (see :class:`WeightCalibration`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    variables, interactions, noise, rounding, max_iterations, tolerance, seed
        The parameters of :class:`WeightCalibration`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected
        The file with the new weights; ``details`` holds the largest relative margin error
        and the number of Newton iterations.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.weights import calibrate_weights
    >>> df = pl.DataFrame({"sex": [1, 1, 2, 2], "age": [1, 2, 1, 2], "w": [1.0, 3.0, 2.0, 5.0]})
    >>> out = calibrate_weights(df, weight="w", variables=["sex", "age"]).data
    >>> out["w"].round(4).to_list()  # row total x column total / 11: 4*3/11, 4*8/11, ...
    [1.0909, 2.9091, 1.9091, 5.0909]
    """
