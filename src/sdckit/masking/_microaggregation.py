"""Microaggregation of numeric variables: MDAV, optimal univariate and a refined MDAV.

Records are partitioned into groups of at least ``k`` records and every value of an aggregated
variable is replaced by its group mean (or median), so each released value is shared by at least
``k`` records (methods.md M6, benchmarks.md A1).

``"mdav"``
    Maximum distance to average vector (μ-ARGUS, sdcMicro): on z-scores with the squared
    Euclidean distance, repeatedly take the record ``r`` farthest from the centroid of the
    remaining records and the record ``s`` farthest from ``r``, and form a group of each with its
    ``k - 1`` nearest remaining records; with ``2k .. 3k-1`` records left form one more group
    around the record farthest from the centroid; the rest (``k .. 2k-1``) is the last group.
    Ties go to the lowest record index.  On the CASC Census file this gives the published
    SSE/SST = 5.6922 / 7.4947 / 9.0884 / 14.1559 % for k = 3 / 4 / 5 / 10.
``"mdav_refined"``
    MDAV followed by a local search (moves and swaps of records between groups, dissolution of
    groups) and an iterated local search (``iterations`` times: re-form a random group and its
    two nearest groups with MDAV, re-optimise the neighbourhood, keep the change only if the
    SSE decreased), see :mod:`sdckit.masking._refine`.  Every group keeps ``k .. 2k-1``
    records; the SSE is never above MDAV's.  On Census it is 12-15 % below MDAV (k = 3 .. 10).
    Reproducible: the random choices come from ``seed`` (default: the fixed seed 0).
``"univariate"``
    Each variable separately, with the optimal partition of Hansen & Mukherjee (2003): sorted
    values in contiguous groups of ``k .. 2k-1`` minimising the within-group sum of squares.
    Its SSE summed over variables is a lower bound for every multivariate method
    (:func:`information_loss_lower_bound`).  It protects each variable alone, not combinations.

Information loss ``100 * SSE / SST`` is computed on the z-scores of the original variables over
the whole file (benchmarks.md A1); :func:`information_loss_sse` computes it for any grouping.

Strata: each stratum is microaggregated separately (standardised within the stratum); a stratum
with fewer than ``k`` records is an :class:`~sdckit.errors.InfeasibleError` (merge small strata
first).  With ``n_jobs > 1`` the strata are aggregated in parallel processes, with the same
output.  Within strata, ``"mdav_refined"`` draws its random choices for stratum ``s`` from a
stream of its own, derived from ``seed`` (:func:`sdckit.masking._strata.stratum_seeds`), so the
output does not depend on ``n_jobs``; without strata it uses ``seed`` directly, as it always
has.  Missing values: for the multivariate methods a missing value is replaced by the
variable's mean (z-score 0) for forming the groups only; it stays missing in the output, and the
released value of the other group members is the mean (median) of the observed values.  Where a
group has fewer than ``k`` observed values of a variable, that mean would describe fewer than
``k`` records, so those values are suppressed (made missing) as well; their number is
``details["suppressed"]``.  A record with every aggregated variable missing is a
:class:`~sdckit.errors.DataError`.  For ``"univariate"`` only the observed values are grouped.
Constant variables are left out of the distance.  Aggregated columns are returned as Float64.

Household-level variables (``Microdata.household_level``, with a household id): a group of
``k`` records could be ``k`` members of one household, which protects nothing, and the members
of a household could receive different values.  Such variables are therefore aggregated per
household: one row per household (its value), groups of at least ``k`` households formed by the
requested method (within strata: a household's stratum is its first member's), and each
household's value replaced by the mean (median) of its group's household values and given to
every member.  Person-level variables of the same call are aggregated over records, separately.
``details["household_groups"]`` holds the group of each household (households numbered in the
sorted order of their ids) and ``details["household_group_sizes"]`` the number of households
per group; ``details["groups"]`` gives every record the group of its household for these
variables.  ``information_loss`` is then the SSE of the released group means over records
(``household_information_loss``: over households, one row each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index
from sdckit._validation import (
    check_choice,
    check_columns_exist,
    check_int,
    check_seed,
    column_list,
)
from sdckit.errors import ColumnError, DataError, InfeasibleError, ParameterError
from sdckit.masking._information_loss import (
    _zscores,
    information_loss_lower_bound,
    information_loss_sse,
)
from sdckit.masking._mdav import mdav_labels
from sdckit.masking._refine import refine_partition
from sdckit.masking._strata import (
    N_JOBS,
    Progress,
    ReportsStrata,
    base_sequence,
    run,
    stratum_seeds,
)
from sdckit.masking._univariate import optimal_univariate_labels
from sdckit.microdata import Microdata
from sdckit.protection import (
    Boolean,
    Column,
    Columns,
    Integer,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Seed,
)
from sdckit.twins import function_twin

__all__ = [
    "Microaggregation",
    "information_loss_lower_bound",
    "information_loss_sse",
    "microaggregation",
]

MicroaggregationMethod = Literal["mdav", "mdav_refined", "univariate"]
METHODS: tuple[str, ...] = ("mdav", "mdav_refined", "univariate")


# ---------------------------------------------------------------------- grouping and aggregation
def _standardised(x: np.ndarray, standardize: bool) -> np.ndarray:
    """Distance coordinates of a stratum: z-scores (or centred values), missing at 0."""
    if standardize:
        z = _zscores(x)
    else:
        with np.errstate(invalid="ignore"):
            z = x - np.nanmean(x, axis=0)
    z = z[:, np.nanmax(np.abs(np.nan_to_num(z)), axis=0) > 0]  # constant columns carry nothing
    return np.ascontiguousarray(np.nan_to_num(z, nan=0.0))


def _group_multivariate(
    x: np.ndarray,
    k: int,
    method: str,
    standardize: bool,
    iterations: int,
    rng: np.random.Generator,
) -> np.ndarray:
    z = _standardised(x, standardize)
    if z.shape[1] == 0:  # every variable constant: any k-partition is lossless
        z = np.zeros((len(x), 1))
    labels = mdav_labels(z, k)
    if method == "mdav_refined":
        labels = refine_partition(z, labels, k, iterations=iterations, seed=rng)
    return labels


def _stratum_labels(
    xs: np.ndarray,
    k: int,
    method: str,
    standardize: bool,
    iterations: int,
    random: np.random.Generator | np.random.SeedSequence,
    variables: Sequence[str],
    observed: str,
) -> np.ndarray:
    """Group labels of the rows of one stratum, numbered from 0 (a module-level function, so
    that it can run in another process).

    1-D for the multivariate methods; ``(rows, variables)`` for ``"univariate"``, -1 where a
    value is missing.  ``random``: the Generator to use, or the stratum's seed sequence.
    """
    if method != "univariate":
        rng = random if isinstance(random, np.random.Generator) else np.random.default_rng(random)
        return _group_multivariate(xs, k, method, standardize, iterations, rng)
    labels = np.full(xs.shape, -1, dtype=np.int64)
    for j in range(xs.shape[1]):
        obs = ~np.isnan(xs[:, j])
        n_obs = int(obs.sum())
        if n_obs == 0:
            continue
        if n_obs < k:
            raise InfeasibleError(
                f"The variable {variables[j]!r} has fewer than k={k} {observed} "
                "in a stratum; lower k or merge strata."
            )
        labels[obs, j], _ = optimal_univariate_labels(xs[obs, j], k)
    return labels


def _aggregate(x: np.ndarray, groups: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """Group mean or median of the observed values of one variable, and observed counts."""
    obs = ~np.isnan(x)
    n_groups = int(groups.max()) + 1
    counts = np.bincount(groups[obs], minlength=n_groups)
    if how == "mean":
        sums = np.bincount(groups[obs], weights=x[obs], minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            stat = sums / counts
    else:
        order = np.lexsort((np.where(obs, x, 0.0), ~obs, groups))
        xs = x[order]
        starts = np.searchsorted(groups[order], np.arange(n_groups))
        c = counts
        lo = starts + np.maximum(c - 1, 0) // 2
        hi = starts + c // 2
        lo = np.minimum(lo, len(x) - 1)
        hi = np.minimum(hi, len(x) - 1)
        stat = np.where(c > 0, (xs[lo] + xs[hi]) / 2.0, np.nan)
    return np.where(obs, stat[groups], np.nan), counts


def _release(x: np.ndarray, groups: np.ndarray, how: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Released values of one variable and the values suppressed for it.

    Each value becomes its group's statistic; missing values stay missing, and the values of a
    group with fewer than ``k`` observed values are suppressed (the mask returned).
    """
    out = np.full(len(x), np.nan)
    dropped = np.zeros(len(x), dtype=bool)
    has_group = groups >= 0
    if has_group.any():
        vals, counts = _aggregate(x[has_group], groups[has_group], how)
        few = counts[groups[has_group]] < k
        dropped[has_group] = few & ~np.isnan(vals)
        out[has_group] = np.where(few, np.nan, vals)
    return out, dropped


def _unit_centres(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean of the observed values of each unit's group (NaN for a missing value)."""
    out = np.full(len(x), np.nan)
    obs = ~np.isnan(x) & (groups >= 0)
    if obs.any():
        n_groups = int(groups.max()) + 1
        counts = np.bincount(groups[obs], minlength=n_groups)
        sums = np.bincount(groups[obs], weights=x[obs], minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / counts
        out[obs] = means[groups[obs]]
    return out


def _centre_loss(x: np.ndarray, centres: dict[int, np.ndarray]) -> float:
    """``100 * SSE / SST`` on the records' z-scores, SSE around the given group means."""
    z = _zscores(x)
    sst = float(np.nansum(z**2))
    if sst == 0.0:
        return 0.0
    sse = 0.0
    for j, c in centres.items():
        xj = x[:, j]
        obs = ~np.isnan(xj)
        mean = xj[obs].mean() if obs.any() else 0.0
        sd = float(np.sqrt(np.mean((xj[obs] - mean) ** 2))) if obs.any() else 0.0
        if sd > 0:
            ok = obs & ~np.isnan(c)
            sse += float(np.sum(((xj[ok] - c[ok]) / sd) ** 2))
    return 100.0 * sse / sst


def _households(md: Microdata) -> tuple[np.ndarray, np.ndarray]:
    """Household number of every record (ids in sorted order) and each household's first member."""
    column = md.household
    if column is None:  # (only called for files with household-level variables)
        raise ColumnError("Household-level variables need the household id: pass household=...")
    codes, levels = encode_column(md.frame.get_column(column))
    if (codes < 0).any():
        raise DataError(
            f"The household column {column!r} has missing values; every record needs a "
            "household id."
        )
    return codes.astype(np.int64), first_index(codes, len(levels))


class Microaggregation(ReportsStrata, ProtectionMethod):
    """Replace numeric values by group means (or medians) of groups of at least ``k`` records.

    See the module docstring for the methods, strata, missing values and household-level
    variables (aggregated per household, in groups of at least ``k`` households).

    Parameters
    ----------
    k : int, default 3
        Minimum group size (>= 2).
    method : {"mdav", "mdav_refined", "univariate"}, default "mdav"
    variables : list of str, optional
        Numeric columns to aggregate (default: the numeric variables of the data).
    aggregate : {"mean", "median"}, default "mean"
        The released value of a group.
    standardize : bool, default True
        Form groups on z-scores (False: on the raw values, centred).
    strata : str, optional
        Column whose values define strata aggregated separately (default: the strata role of
        the data, if any).
    iterations : int, default 2000
        Iterations of the iterated local search of ``"mdav_refined"`` (0: local search only).
    seed : int or numpy.random.Generator, optional
        Random choices of ``"mdav_refined"`` (None: the fixed seed 0, so that the default is
        reproducible).  The other methods are deterministic.
    n_jobs : int, default 1
        Processes aggregating strata at the same time (-1: one per core); the output is the
        same for every value.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import Microaggregation
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    >>> out = Microaggregation(k=3).apply(df, numeric=["x"])
    >>> out.data["x"].to_list()
    [2.0, 2.0, 2.0, 11.0, 11.0, 11.0]
    """

    name: ClassVar[str] = "microaggregation"
    description: ClassVar[str] = (
        "Replaces the values of {variables} by the mean or median of groups of at least k "
        "similar records (microaggregation)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "k": Param(Integer(minimum=2), help="smallest number of records in a group"),
        "method": Param(
            Options(*METHODS),
            help="how groups are formed: MDAV, MDAV with a local search, or each variable alone",
        ),
        "variables": Param(
            Columns(role="numeric", min_length=0),
            None,
            help="the numeric variables to aggregate (default: the numeric variables)",
        ),
        "aggregate": Param(
            Options("mean", "median"), help="the value released for a group: mean or median"
        ),
        "standardize": Param(
            Boolean(), help="form the groups on z-scores instead of the raw values"
        ),
        "strata": Param(
            Column(),
            None,
            help="aggregate within the strata of this column (default: the data's strata)",
        ),
        "iterations": Param(
            Integer(minimum=0), help="iterations of the local search of 'mdav_refined'"
        ),
        "seed": Param(
            Seed(), None, help="random seed of 'mdav_refined' (default: the fixed seed 0)"
        ),
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        k: int = 3,
        method: MicroaggregationMethod = "mdav",
        variables: str | Sequence[str] | None = None,
        aggregate: Literal["mean", "median"] = "mean",
        standardize: bool = True,
        strata: str | None = None,
        iterations: int = 2000,
        seed: int | np.random.Generator | None = None,
        n_jobs: int = 1,
    ) -> None:
        self.k = k
        self.method = method
        self.variables = variables
        self.aggregate = aggregate
        self.standardize = standardize
        self.strata = strata
        self.iterations = iterations
        self.seed = seed
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ checks
    def _resolve(self, md: Microdata) -> tuple[int, tuple[str, ...], str | None]:
        k = check_int(self.k, "k", minimum=2)
        check_choice(self.method, "method", METHODS)
        check_choice(self.aggregate, "aggregate", ("mean", "median"))
        if not isinstance(self.standardize, bool):
            raise ParameterError("The 'standardize' parameter must be True or False.")
        variables = column_list(self.variables, "variables") or md.numeric
        if not variables:
            raise ColumnError(
                "Microaggregation needs numeric variables; pass numeric=... when building the "
                "data or variables=... to the method."
            )
        check_columns_exist(variables, md.frame.columns, "numeric")
        for col in variables:
            dtype = md.frame.schema[col]
            if not dtype.is_numeric() or dtype == pl.Boolean:
                raise ColumnError(
                    f"The variable {col!r} is not numeric (type {dtype}); microaggregation "
                    "needs numbers (recode categorical variables instead)."
                )
        strata = self.strata if self.strata is not None else md.strata
        if strata is not None:
            if not isinstance(strata, str):
                raise ParameterError("The 'strata' parameter takes one column name.")
            check_columns_exist([strata], md.frame.columns, "strata")
            if strata in variables:
                raise ColumnError(f"The strata column {strata!r} cannot also be aggregated.")
        if k > md.n_records:
            raise ParameterError(
                f"The 'k' parameter must be <= the number of records ({md.n_records}); got {k}."
            )
        return k, variables, strata

    def _values(self, md: Microdata, variables: tuple[str, ...]) -> np.ndarray:
        x = md.frame.select(pl.col(v).cast(pl.Float64).fill_nan(None) for v in variables)
        arr = x.to_numpy().astype(np.float64)
        if np.isinf(arr).any():
            bad = [v for j, v in enumerate(variables) if np.isinf(arr[:, j]).any()]
            raise DataError(
                f"The variable {bad[0]!r} has infinite values; microaggregation needs finite "
                "numbers (recode or drop them)."
            )
        return arr

    def _check_placeable(self, x: np.ndarray, unit: str, what: str) -> None:
        """A record (household) with every aggregated variable missing cannot join a group."""
        if self.method == "univariate" or x.shape[1] == 0:
            return
        all_missing = int(np.count_nonzero(np.isnan(x).all(axis=1)))
        if all_missing:
            raise DataError(
                f"{all_missing} {unit}(s) have every {what}aggregated variable missing; they "
                "cannot be placed in a group (drop them or impute a value)."
            )

    @staticmethod
    def _household_variables(md: Microdata, variables: tuple[str, ...]) -> list[int]:
        """Positions in ``variables`` of the household-level variables."""
        if md.household is None:
            return []
        level = set(md.household_level)
        return [j for j, v in enumerate(variables) if v in level]

    def _strata_ids(self, md: Microdata, strata: str | None) -> np.ndarray:
        if strata is None:
            return np.zeros(md.n_records, dtype=np.int64)
        codes, _ = encode_column(md.frame.get_column(strata))
        if (codes < 0).any():
            raise DataError(f"The strata column {strata!r} has missing values.")
        return codes.astype(np.int64)

    def _partition(
        self,
        x: np.ndarray,
        strata_ids: np.ndarray,
        k: int,
        iterations: int,
        random: Any,
        variables: Sequence[str],
        strata: str | None,
        unit: str = "records",
        span: tuple[int, int | None] = (0, None),
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Group labels of the rows of ``x`` (records or households), within strata.

        1-D for the multivariate methods, ``(rows, variables)`` for ``"univariate"`` (-1 where
        a value is missing).  ``random``: the Generator (without strata), or the seed
        sequences of the strata.  ``span``: strata done before and in all, for the progress.
        """
        n, p = x.shape
        sizes = np.bincount(strata_ids)
        if (sizes < k).any():
            raise InfeasibleError(
                f"{int(np.count_nonzero(sizes < k))} stratum/strata of {strata!r} have fewer "
                f"than k={k} {unit}; merge small strata or lower k."
            )
        univariate = self.method == "univariate"
        groups = np.full((n, p) if univariate else n, -1, dtype=np.int64)
        offset = np.zeros(p if univariate else 1, dtype=np.int64)
        order = np.argsort(strata_ids, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(sizes)))
        observed = "observed values" if unit == "records" else "households with a value"
        members = [order[bounds[s] : bounds[s + 1]] for s in range(len(sizes))]
        tasks = [
            (
                x[rows], k, self.method, self.standardize, iterations,
                random if isinstance(random, np.random.Generator) else random[s],
                tuple(variables), observed,
            )
            for s, rows in enumerate(members)
        ]  # fmt: skip
        done, total = span
        results = run(
            _stratum_labels, tasks, self.n_jobs, done=done, total=total, weights=sizes,
            progress=progress,
        )  # fmt: skip
        for rows, labels in zip(members, results, strict=True):
            if not univariate:
                groups[rows] = labels + offset[0]
                offset[0] += labels.max() + 1
                continue
            for j in range(p):
                obs = labels[:, j] >= 0
                if obs.any():
                    groups[rows[obs], j] = labels[obs, j] + offset[j]
                    offset[j] += labels[obs, j].max() + 1
        return groups

    def _partition_present(
        self,
        x: np.ndarray,
        strata_ids: np.ndarray,
        k: int,
        iterations: int,
        random: Any,
        variables: Sequence[str],
        strata: str | None,
        unit: str = "records",
        span: tuple[int, int | None] = (0, None),
        progress: Progress | None = None,
    ) -> np.ndarray:
        """:meth:`_partition` of the rows with a value (rows with none get the group -1).

        Used when person-level and household-level variables are aggregated separately: a row
        with every variable of its kind missing has nothing to release.
        """
        if self.method == "univariate":
            return self._partition(
                x, strata_ids, k, iterations, random, variables, strata, unit, span, progress
            )
        present = ~np.isnan(x).all(axis=1)
        groups = np.full(len(x), -1, dtype=np.int64)
        if present.any():
            groups[present] = self._partition(
                x[present], strata_ids[present], k, iterations, random, variables, strata, unit,
                span, progress,
            )  # fmt: skip
        return groups

    def _randomness(self, strata: str | None) -> Any:
        """The Generator of ``"mdav_refined"`` without strata; within strata, the sequence the
        strata's seeds are derived from (stratum ``s`` of pass ``p``: :func:`stratum_seeds`)."""
        seed = 0 if self.seed is None else self.seed
        if strata is None:
            return check_seed(seed)
        check_seed(seed)  # (checked as without strata)
        return base_sequence(seed)

    # ------------------------------------------------------------------ apply
    def _apply(self, md: Microdata, progress: Progress | None = None) -> Protected:
        k, variables, strata = self._resolve(md)
        iterations = check_int(self.iterations, "iterations", minimum=0)
        random = self._randomness(strata)
        x = self._values(md, variables)
        house = self._household_variables(md, variables)
        if house:
            return self._apply_households(
                md, x, k, variables, strata, iterations, random, house, progress
            )
        self._check_placeable(x, "record", "")
        p = x.shape[1]
        strata_ids = self._strata_ids(md, strata)
        if not isinstance(random, np.random.Generator):
            random = stratum_seeds(random, int(strata_ids.max(initial=0)) + 1)
        groups = self._partition(
            x, strata_ids, k, iterations, random, variables, strata, progress=progress
        )
        univariate = self.method == "univariate"
        frame, suppressed = self._released(md, x, groups, variables, k)
        details: dict[str, Any] = {
            "groups": groups,
            "group_sizes": (
                [np.bincount(groups[groups[:, j] >= 0, j]) for j in range(p)]
                if univariate
                else np.bincount(groups)
            ),
            "information_loss": information_loss_sse(x, groups),
            "suppressed": suppressed,
            "variables": variables,
            "strata": strata,
        }
        return Protected.from_frames(md, frame, self, details=details)

    def _apply_households(
        self,
        md: Microdata,
        x: np.ndarray,
        k: int,
        variables: tuple[str, ...],
        strata: str | None,
        iterations: int,
        random: Any,
        house: list[int],
        progress: Progress | None = None,
    ) -> Protected:
        """Household-level variables per household, person-level ones per record.

        Within strata the two passes (records, then households) draw from streams of their
        own (``stream`` 0 and 1 of :func:`stratum_seeds`); progress counts both passes.
        """
        n, p = x.shape
        person = [j for j in range(p) if j not in house]
        member, first = _households(md)
        n_households = len(first)
        if k > n_households:
            raise ParameterError(
                f"The 'k' parameter must be <= the number of households ({n_households}) when "
                f"household-level variables are aggregated; got {k}."
            )
        strata_ids = self._strata_ids(md, strata)
        n_strata = int(strata_ids.max(initial=0)) + 1
        n_house = int(strata_ids[first].max(initial=0)) + 1
        random_person = random_house = random
        if not isinstance(random, np.random.Generator):
            random_person = stratum_seeds(random, n_strata, stream=0)
            random_house = stratum_seeds(random, n_house, stream=1)
        before = n_strata if person else 0
        groups = np.full((n, p), -1, dtype=np.int64)
        offset = 0
        if person:
            gp = self._partition_present(
                x[:, person], strata_ids, k, iterations, random_person,
                [variables[j] for j in person], strata, span=(0, before + n_house),
                progress=progress,
            )  # fmt: skip
            groups[:, person] = gp if gp.ndim == 2 else gp[:, None]
            offset = int(gp.max()) + 1
        xh = x[first][:, house]
        gh = self._partition_present(
            xh,
            strata_ids[first],
            k,
            iterations,
            random_house,
            [variables[j] for j in house],
            strata,
            unit="households",
            span=(before, before + n_house),
            progress=progress,
        )
        gh = np.where(gh >= 0, gh + offset, -1)
        gh2 = gh if gh.ndim == 2 else np.repeat(gh[:, None], len(house), axis=1)
        groups[:, house] = gh2[member]
        columns: list[pl.Series] = []
        suppressed = 0
        centres: dict[int, np.ndarray] = {}
        for j, name in enumerate(variables):
            if j in house:
                gu = gh2[:, house.index(j)]
                values, dropped = _release(x[first, j], gu, self.aggregate, k)
                out = values[member]
                suppressed += int(np.count_nonzero(np.isin(member, np.flatnonzero(dropped))))
                centres[j] = _unit_centres(x[first, j], gu)[member]
            else:
                g = groups[:, j]
                out, dropped = _release(x[:, j], g, self.aggregate, k)
                suppressed += int(np.count_nonzero(dropped))
                centres[j] = _unit_centres(x[:, j], g)
            columns.append(pl.Series(name, out, dtype=pl.Float64).fill_nan(None))
        frame = md.frame.with_columns(columns)
        single = not person and gh.ndim == 1
        record_groups = groups[:, house[0]] if single else groups
        hh_groups = np.where(gh >= 0, gh - offset, -1)
        details: dict[str, Any] = {
            "groups": record_groups,
            "group_sizes": (
                np.bincount(record_groups[record_groups >= 0])
                if single
                else [np.bincount(groups[groups[:, j] >= 0, j]) for j in range(p)]
            ),
            "household_groups": hh_groups,
            "household_group_sizes": (
                np.bincount(hh_groups[hh_groups >= 0])
                if hh_groups.ndim == 1
                else [np.bincount(hh_groups[hh_groups[:, i] >= 0, i]) for i in range(len(house))]
            ),
            "household_level": tuple(variables[j] for j in house),
            "information_loss": _centre_loss(x, centres),
            "household_information_loss": information_loss_sse(xh, gh),
            "suppressed": suppressed,
            "variables": variables,
            "strata": strata,
        }
        return Protected.from_frames(md, frame, self, details=details)

    def _released(
        self,
        md: Microdata,
        x: np.ndarray,
        groups: np.ndarray,
        variables: tuple[str, ...],
        k: int,
    ) -> tuple[pl.DataFrame, int]:
        suppressed = 0
        new_columns = []
        for j, name in enumerate(variables):
            g = groups[:, j] if groups.ndim == 2 else groups
            out, dropped = _release(x[:, j], g, self.aggregate, k)
            suppressed += int(np.count_nonzero(dropped))
            new_columns.append(pl.Series(name, out, dtype=pl.Float64).fill_nan(None))
        return md.frame.with_columns(new_columns), suppressed

    # ------------------------------------------------------------------ contract
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check group sizes (>= k, within strata) and that values equal the group statistic.

        Household-level variables: every household lies in one group, a group holds at least
        ``k`` households, and the released value is constant within households and equal to
        the statistic of the group's household values.
        """
        k, variables, strata = self._resolve(original)
        x = self._values(original, variables)
        house = self._household_variables(original, variables)
        groups = np.asarray(protected.details["groups"])
        g2 = groups if groups.ndim == 2 else np.repeat(groups[:, None], len(variables), axis=1)
        self._require(
            g2.shape == (original.n_records, len(variables)),
            "the recorded groups do not match the records and variables",
        )
        strata_codes = (
            encode_column(original.frame.get_column(strata))[0] if strata is not None else None
        )
        out = protected.microdata.frame
        member, first = _households(original) if house else (np.zeros(0, np.int64),) * 2
        for j, name in enumerate(variables):
            released = out.get_column(name).cast(pl.Float64).fill_nan(None).to_numpy()
            released = np.asarray(released, dtype=np.float64)
            g = g2[:, j]
            if j not in house:
                self._check_variable(name, x[:, j], g, strata_codes, released, k, "records")
                continue
            self._require(
                np.array_equal(g, g[first][member]),
                f"members of one household are in different groups of {name!r}",
            )
            self._require(
                np.array_equal(released, released[first][member], equal_nan=True),
                f"the released values of {name!r} differ within a household",
            )
            self._check_variable(
                name,
                x[first, j],
                g[first],
                None if strata_codes is None else strata_codes[first],
                released[first],
                k,
                "households",
            )

    def _check_variable(
        self,
        name: str,
        xj: np.ndarray,
        g: np.ndarray,
        strata_codes: np.ndarray | None,
        released: np.ndarray,
        k: int,
        unit: str,
    ) -> None:
        """The checks of one variable over its units (records, or one row per household)."""
        obs = ~np.isnan(xj)
        has = g >= 0
        self._require((has | ~obs).all(), f"an observed value of {name!r} has no group")
        counts = np.bincount(g[has])
        self._require(
            (counts[counts > 0] >= k).all(), f"a group of {name!r} has fewer than k {unit}"
        )
        if strata_codes is not None:
            lo = np.full(counts.size, np.iinfo(np.int64).max)
            hi = np.full(counts.size, -1)
            np.minimum.at(lo, g[has], strata_codes[has])
            np.maximum.at(hi, g[has], strata_codes[has])
            self._require(
                (lo[counts > 0] == hi[counts > 0]).all(), f"a group of {name!r} crosses strata"
            )
        expect = np.full(len(released), np.nan)
        n_observed = np.zeros(len(released), dtype=np.int64)
        vals, obs_counts = _aggregate(xj[has], g[has], self.aggregate)
        expect[has] = vals
        n_observed[has] = obs_counts[g[has]]
        keep = obs & (n_observed >= k)  # released: a statistic of >= k observed values
        self._require(
            np.array_equal(~np.isnan(released), keep),
            f"missing or suppressed values of {name!r} are not where expected",
        )
        scale = max(float(np.nanmax(np.abs(xj), initial=0.0)), 1.0)
        self._require(
            np.allclose(released[keep], expect[keep], rtol=1e-9, atol=1e-12 * scale),
            f"released values of {name!r} are not the group {self.aggregate}s",
        )

    @classmethod
    def contract_example(cls) -> tuple[Microaggregation, Microdata]:
        """MDAV with k = 3 within two strata on a small seeded income file."""
        rng = np.random.default_rng(11)
        n = 41
        frame = pl.DataFrame(
            {
                "region": rng.integers(1, 3, size=n),
                "sex": rng.integers(1, 3, size=n),
                "income": rng.gamma(2.0, 500.0, size=n).round(0),
                "expenses": rng.gamma(3.0, 100.0, size=n).round(1),
                "age": rng.integers(18, 90, size=n),
            }
        )
        frame = frame.with_columns(
            pl.when(pl.int_range(n) == 5).then(None).otherwise(pl.col("expenses")).alias("expenses")
        )
        md = Microdata(frame, keys=["sex"], numeric=["income", "expenses", "age"], strata="region")
        return cls(k=3, method="mdav"), md


@function_twin(Microaggregation)
def microaggregation(data: Any, **params: Any) -> Protected:
    """Microaggregate numeric variables (function form of :class:`Microaggregation`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    k, method, variables, aggregate, standardize, strata, iterations, seed, n_jobs
        The parameters of :class:`Microaggregation`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected
        The aggregated data; ``details`` holds ``groups`` (group id per record, or per record
        and variable for ``"univariate"``; -1 for a missing value there), ``group_sizes``,
        ``information_loss`` (100 SSE/SST on z-scores) and ``suppressed`` (values made
        missing because their group had fewer than ``k`` observed values).  With
        household-level variables also ``household_groups``, ``household_group_sizes``,
        ``household_level`` and ``household_information_loss`` (see the module docstring).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import microaggregation
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0], "y": [5, 6, 7, 1, 2, 3]})
    >>> result = microaggregation(df, numeric=["x", "y"], k=3)
    >>> result.data["y"].to_list()
    [6.0, 6.0, 6.0, 2.0, 2.0, 2.0]
    >>> result.details["group_sizes"].tolist()
    [3, 3]
    """
