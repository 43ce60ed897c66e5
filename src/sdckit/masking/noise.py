"""Additive noise for numeric variables, with correlated, exact and outlier-only variants.

Five methods perturb the numeric variables (``Microdata.numeric``, or the ``variables`` given):

``"additive"``
    Uncorrelated noise: ``x'_ij = x_ij + e_ij`` with ``e_ij ~ N(0, (noise/100 * sd_j)^2)``
    (sdcMicro's ``additive``).  Variances grow by ``1 + (noise/100)^2``; correlations shrink.
``"correlated"``
    ``x' = x + e`` with ``e ~ N_p(0, alpha * Sigma)``, ``alpha = noise/100`` and ``Sigma`` the
    covariance matrix of the data, so ``Cov(x') = (1 + alpha) Sigma`` and correlations are kept.
``"correlated2"``
    The mean- and covariance-preserving method of worked example E6 with the full covariance
    matrix: ``x' = c1 x + c2 e``, ``c1 = sqrt(1 - delta^2)``, ``c2 = delta`` and
    ``e ~ N_p(mu (1 - c1) / c2, Sigma)``, so ``E(x') = mu`` and ``Cov(x') = Sigma`` in expectation.
``"exact"``
    ``"correlated2"`` followed by an affine correction ``Y' = (Y - ybar) A + xbar`` with
    ``A = L_y^{-T} L_x^T`` (Cholesky factors of the two sample covariance matrices), so the
    sample mean vector and covariance matrix of the released data equal those of the original
    (to rounding error).  The correction is computed on the records with every variable present.
``"outliers"``
    Noise ``N(0, (noise/100 * sd_j)^2)`` only on outliers.  With ``outlier_rule="quantile"`` an
    outlier is a value above the ``outlier_quantile`` (default 0.99) quantile of its variable,
    and only that value is perturbed (as sdcMicro's ``outdect``).  With
    ``outlier_rule="mahalanobis"`` an outlier is a record whose robust (minimum covariance
    determinant) squared Mahalanobis distance exceeds the ``outlier_quantile`` (default 0.975)
    quantile of the chi-square distribution with p degrees of freedom; all its values are
    perturbed (records with a missing value are not assessed; the robust fit uses at most
    20,000 records drawn with the seed).  sdcMicro scales outlier noise by
    ``1.96 sd / sqrt(n)``; we use the scale of ``"additive"``, so ``noise`` means the same for
    every method.

Balance edits ``balance=[("Z", ["X", "Y"])]`` keep ``Z = X + Y`` exactly: the components are
perturbed and the total is recomputed from the perturbed components (never perturbed itself).
Totals may be components of other edits; edits must hold in the original data (to 1e-9
relative).  Because the total is a linear function of its components, the ``"correlated2"`` and
``"exact"`` methods keep its mean and variance too.

Household-level variables (``Microdata.household_level``) get one draw per household, so every
member keeps the same value: uncorrelated noise and outlier noise are drawn for the household's
first member (an outlier record makes its whole household's household-level values outliers,
and ``details["outliers"]`` marks every record with a perturbed value); correlated noise draws
the household-level components per household and the person-level ones per record from their
conditional distribution given them, so the noise covariance is unchanged.  For ``"exact"`` the
household-level variables come first in the affine correction, whose matrix is upper triangular:
their corrected values depend on household-level values only and stay constant within
households (records missing a person-level value get the household-level part of the
correction).  A balance edit with a household-level total needs household-level components.

Strata (``by_strata=True`` and the data's strata column): each stratum is perturbed as a file of
its own (standard deviations, covariance matrices, outliers and, for ``"exact"``, the moments
kept, all within the stratum), with a random stream of its own derived from ``seed``
(:func:`sdckit.masking._strata.stratum_seeds`), so that strata can be perturbed in parallel
processes (``n_jobs``) with the same output as one after the other.  ``details`` then holds per
stratum what it holds for a file (``by_stratum``, in the order of ``strata``), the noise
standard deviation and variance ratio of each variable as a list over strata, and the outliers
of all records.  Households must lie within one stratum when household-level variables get
noise.  Without ``by_strata`` (the default) the strata are ignored and ``seed`` is used directly.

Random numbers: the normals are keyed by the seed and the record's row in the file
(:mod:`sdckit._keyed_random`; one lane per variable; the key is the first number of the seed's
Generator, or within strata stream 2 of the strata's base sequence), so a slice of the file, a
Dask or a Spark partition draws what the whole file draws for its rows; with the exact standard
deviations (:mod:`sdckit._exact_sums`) uncorrelated noise runs on the engines with the same
output (:mod:`sdckit.masking.keyed`).  The per-stratum streams still draw what is random within
a stratum (the sample of the robust outlier fit).  The draws differ from those of versions
before the keyed generator.

Missing values stay missing; perturbed columns are returned as Float64.  Covariance matrices
are estimated on the records with every perturbed variable present; constant variables are
left unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl
import scipy.linalg
import scipy.stats

from sdckit._codes import encode_column, first_index
from sdckit._exact_sums import partial_moments
from sdckit._keyed_random import normals
from sdckit._validation import (
    check_choice,
    check_columns_exist,
    check_real,
    check_seed,
    column_list,
)
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.masking._keyed_draws import noise_key
from sdckit.masking._strata import (
    N_JOBS,
    Progress,
    ReportsStrata,
    Strata,
    base_sequence,
    run,
    split,
    stratum_seeds,
)
from sdckit.microdata import Microdata
from sdckit.protection import (
    Boolean,
    Column,
    Columns,
    ListOf,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    Seed,
    TupleOf,
    changed_cells,
)
from sdckit.twins import function_twin

__all__ = ["AddNoise", "add_noise"]

NoiseMethod = Literal["additive", "correlated", "correlated2", "exact", "outliers"]
NOISE_METHODS: tuple[str, ...] = ("additive", "correlated", "correlated2", "exact", "outliers")
OUTLIER_RULES: tuple[str, ...] = ("quantile", "mahalanobis")
_EDIT_TOLERANCE = 1e-9
#: One balance edit: a total and its components.
_EDIT = TupleOf((Column(role="numeric"), Columns(role="numeric")))


# ---------------------------------------------------------------------------------- helpers
def _parse_balance(balance: object) -> list[tuple[str, tuple[str, ...]]]:
    """Normalise ``balance`` to a list of ``(total, components)``."""
    if balance is None:
        return []
    if isinstance(balance, tuple) and len(balance) == 2 and isinstance(balance[0], str):
        balance = [balance]
    if isinstance(balance, str) or not isinstance(balance, Iterable):
        raise ParameterError(
            "The 'balance' parameter must be a list of (total, [components]) pairs, "
            "for example [('Z', ['X', 'Y'])]."
        )
    edits: list[tuple[str, tuple[str, ...]]] = []
    for edit in balance:
        if not (isinstance(edit, Sequence) and len(edit) == 2 and isinstance(edit[0], str)):
            raise ParameterError(
                "Each balance edit must be a pair (total, [components]), for example "
                "('Z', ['X', 'Y'])."
            )
        total, comps = edit[0], column_list(edit[1], "balance")
        if not comps:
            raise ParameterError(f"The balance edit for {total!r} has no components.")
        if total in comps:
            raise ParameterError(f"The balance edit for {total!r} lists the total as a component.")
        edits.append((total, comps))
    totals = [t for t, _ in edits]
    if len(set(totals)) != len(totals):
        raise ParameterError("The 'balance' parameter gives two edits for the same total.")
    return _order_edits(edits)


def _order_edits(
    edits: list[tuple[str, tuple[str, ...]]],
) -> list[tuple[str, tuple[str, ...]]]:
    """Order edits so that a total is computed after the totals it is made of."""
    pending = dict(edits)
    ordered: list[tuple[str, tuple[str, ...]]] = []
    while pending:
        ready = [t for t, comps in pending.items() if not any(c in pending for c in comps)]
        if not ready:
            raise ParameterError(
                "The balance edits are circular (a total depends on itself); remove one edit."
            )
        for t in ready:
            ordered.append((t, pending.pop(t)))
    return ordered


def _column_matrix(frame: pl.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The columns as an ``(n, p)`` float64 matrix with NaN for missing values."""
    if not columns:
        return np.empty((frame.height, 0))
    sub = frame.select(pl.col(c).cast(pl.Float64).fill_nan(None) for c in columns)
    return sub.to_numpy(order="c").astype(np.float64, copy=False)


def refuse_infinite(columns: Sequence[str], infinite: np.ndarray) -> None:
    """Refuse infinite values: their standard deviation is undefined, and the column would get
    no noise at all (released as it is while reported as perturbed)."""
    for name, bad in zip(columns, infinite, strict=True):
        if bad:
            raise DataError(
                f"The variable {name!r} has infinite values; its noise scale is undefined. "
                "Replace them, or mark them missing, before adding noise."
            )


def _column_sd(frame: pl.DataFrame, columns: Sequence[str] | None) -> np.ndarray:
    """Standard deviation (n - 1) of each column, ignoring missing values; 0 if undefined.

    Exact (the correctly rounded variance, :mod:`sdckit._exact_sums`), so that an engine
    summing the file in pieces finds the same value, and scales the noise the same.
    """
    cols = frame.columns if columns is None else columns
    if not cols:
        return np.zeros(0)
    return partial_moments(_column_matrix(frame, cols)).sd()[0]


def _keyed_normals(key: int, rows: np.ndarray, p: int) -> np.ndarray:
    """Standard normals for the records at global ``rows``, column ``j`` from lane ``j``
    (keyed by the row, so any slice of the file draws what the whole file draws)."""
    if p == 0:
        return np.empty((len(rows), 0))
    return np.column_stack([normals(key, j, rows) for j in range(p)])


def _sqrt_factor(cov: np.ndarray) -> np.ndarray:
    """A matrix ``F`` with ``F F^T = cov`` (eigendecomposition; tolerates singular ``cov``)."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def _complete_cov(x: np.ndarray, complete: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and covariance matrix of the complete records."""
    if np.count_nonzero(complete) < 2:
        raise DataError(
            "Fewer than two records have every noise variable present; the covariance "
            "matrix cannot be estimated (impute missing values or use method='additive')."
        )
    xc = x if complete.all() else x[complete]
    return xc.mean(axis=0), np.atleast_2d(np.cov(xc, rowvar=False))


def _robust_distance(
    x: np.ndarray, rng: np.random.Generator, *, max_steps: int = 50, sample: int = 20_000
) -> np.ndarray:
    """Squared robust Mahalanobis distances from a minimum covariance determinant fit.

    A C-step search (Rousseeuw & Van Driessen 1999) from two deterministic starts: the half of
    the records nearest the coordinate-wise median (in MAD units) and the classical estimate.
    Files larger than ``sample`` records are fitted on a random sample of that size, then
    refined by two C-steps on all records.  The covariance of the best subset is rescaled so
    that the median squared distance matches the chi-square median.  Rows must be complete.
    (statsmodels' ``CovDetMCD`` needs 0.7 s for 300 records and minutes for 100,000.)
    """
    n, p = x.shape
    fit = x if n <= sample else x[np.sort(rng.choice(n, size=sample, replace=False))]
    mean, cov = _c_steps(fit, max_steps)
    if fit is not x:
        mean, cov = _c_steps(x, 2, mean, cov)
    d2 = _mahalanobis2(x, mean, cov)
    scale = float(np.median(d2)) / scipy.stats.chi2.ppf(0.5, p)
    return d2 / scale if scale > 0 else d2


def _c_steps(
    x: np.ndarray,
    max_steps: int,
    mean: np.ndarray | None = None,
    cov: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Location and scatter of the best half-subset found by C-steps."""
    n, p = x.shape
    h = (n + p + 1) // 2
    if mean is None or cov is None:
        med = np.median(x, axis=0)
        mad = np.median(np.abs(x - med), axis=0) * 1.4826
        mad[mad == 0] = 1.0
        nearest = np.argpartition((((x - med) / mad) ** 2).sum(axis=1), h - 1)[:h]
        starts = [(x[nearest].mean(axis=0), np.cov(x[nearest], rowvar=False))]
        starts.append((x.mean(axis=0), np.cov(x, rowvar=False)))
    else:
        starts = [(mean, cov)]
    fits: list[tuple[float, np.ndarray, np.ndarray]] = []
    for mean, cov in starts:
        cov = np.atleast_2d(cov)
        det = float(np.linalg.det(cov))
        for _ in range(max_steps):
            idx = np.argpartition(_mahalanobis2(x, mean, cov), h - 1)[:h]
            mean, cov = x[idx].mean(axis=0), np.atleast_2d(np.cov(x[idx], rowvar=False))
            new_det = float(np.linalg.det(cov))
            if new_det >= det * (1 - 1e-12):
                break
            det = new_det
        fits.append((det, mean, cov))
    best = min(fits, key=lambda fit: fit[0])  # the first of the smallest determinants
    return best[1], best[2]


def _mahalanobis2(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distances (pseudo-inverse for a singular covariance)."""
    centred = x - mean
    return np.einsum("ij,ij->i", centred @ np.linalg.pinv(cov), centred)


def _outlier_mask(
    x: np.ndarray,
    complete: np.ndarray,
    rule: str,
    quantile: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Boolean ``(n, p)``: the values that get noise under the outlier rule."""
    if rule == "quantile":
        limits = np.array([np.nanquantile(x[:, j], quantile) for j in range(x.shape[1])])
        with np.errstate(invalid="ignore"):
            return x > limits
    mask = np.zeros(x.shape, dtype=bool)
    if np.count_nonzero(complete) <= x.shape[1] + 1:
        raise DataError(
            "Too few complete records for a robust Mahalanobis distance; use "
            "outlier_rule='quantile'."
        )
    d2 = _robust_distance(x[complete], rng)
    limit = scipy.stats.chi2.ppf(quantile, x.shape[1])
    mask[np.flatnonzero(complete)[d2 > limit]] = True
    return mask


def _perturb(
    x: np.ndarray,
    sd: np.ndarray,
    free: Sequence[str],
    is_house: np.ndarray,
    lead: np.ndarray,
    settings: tuple[str, float, float, str, float],
    rng: np.random.Generator,
    key: int,
    rows: np.ndarray,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The perturbed values of ``x`` (records x the variables ``free``) and the details.

    ``sd``: the standard deviation of each variable; ``is_house``: which are household-level;
    ``lead``: the position of each record's household's first member; ``settings``: method,
    noise, delta, outlier rule and quantile.  The whole file, or one stratum.  The normals are
    keyed by ``key`` and the records' global ``rows`` (one lane per variable of ``free``);
    ``rng`` draws the robust fit's sample of the Mahalanobis outlier rule.
    """
    method, noise, delta, rule, quantile = settings
    missing = np.isnan(x)
    active = np.flatnonzero(sd > 0)
    y = x.copy()
    details: dict[str, Any] = {}
    xa = x[:, active]
    complete = ~np.isnan(xa).any(axis=1)
    house = [i for i, j in enumerate(active) if is_house[j]]
    z = _keyed_normals(key, rows, x.shape[1])[:, active]
    if method in ("additive", "outliers"):
        scale = noise / 100 * sd[active]
        e = z * scale
        if house:
            e[:, house] = e[np.ix_(lead, house)]
        if method == "outliers":
            outlier = _outlier_mask(xa, complete, rule, quantile, rng)
            if house:
                outlier[:, house] = _any_in_household(outlier[:, house], lead)
            e[~outlier] = 0.0
            details["outliers"] = outlier.any(axis=1)
            details["n_outlier_values"] = int(np.count_nonzero(outlier & ~np.isnan(xa)))
            details["outlier_rule"] = rule
            details["outlier_quantile"] = quantile
        y[:, active] = xa + e
        noise_sd = scale
    elif method == "correlated":
        _, cov = _complete_cov(xa, complete)
        if house:
            y[:, active] = xa + _household_noise(z, noise / 100 * cov, house, lead)
        else:
            factor = _sqrt_factor(noise / 100 * cov)
            y[:, active] = xa + z @ factor.T
        noise_sd = np.sqrt(noise / 100 * np.diag(cov))
    else:  # correlated2 / exact
        mean, cov = _complete_cov(xa, complete)
        c1, c2 = np.sqrt(1.0 - delta**2), delta
        if house:
            e = _household_noise(z, cov, house, lead) + mean * (1.0 - c1) / c2
        else:
            factor = _sqrt_factor(cov)
            e = z @ factor.T + mean * (1.0 - c1) / c2
        ya = c1 * xa + c2 * e
        if method == "exact" and house:
            ya = _restore_moments_by_household(ya, xa, complete, house, lead)
        elif method == "exact" and complete.all():
            ya = _restore_moments(ya, xa)
        elif method == "exact":
            ya[complete] = _restore_moments(ya[complete], xa[complete])
        y[:, active] = ya
        noise_sd = c2 * np.sqrt(np.diag(cov))
        details.update(c1=float(c1), c2=float(c2))
    if missing.any():
        y[missing] = np.nan
    details["noise_sd"] = dict(zip([free[j] for j in active], map(float, noise_sd), strict=True))
    # (a reported figure: polars' sum is enough, the exact one is for the noise scale)
    released = pl.DataFrame(y[:, active]).select(pl.all().fill_nan(None).std())
    released_sd = np.nan_to_num(released.to_numpy().reshape(-1).astype(np.float64), nan=0.0)
    ratio = released_sd**2 / sd[active] ** 2
    details["variance_ratio"] = {free[j]: float(r) for j, r in zip(active, ratio, strict=True)}
    details["constant_variables"] = [free[j] for j in np.flatnonzero(sd == 0)]
    return y, details


def _perturb_stratum(
    x: np.ndarray,
    sd: np.ndarray,
    free: Sequence[str],
    is_house: np.ndarray,
    lead: np.ndarray,
    settings: tuple[str, float, float, str, float],
    seed: np.random.SeedSequence,
    key: int,
    rows: np.ndarray,
) -> tuple[np.ndarray, dict[str, Any]]:
    """:func:`_perturb` of one stratum with its own stream (a module-level function, so that
    it can run in another process)."""
    return _perturb(x, sd, free, is_house, lead, settings, np.random.default_rng(seed), key, rows)


# ---------------------------------------------------------------------------------- method
class AddNoise(ReportsStrata, ProtectionMethod):
    """Add random noise to numeric variables (see the module docstring for the methods).

    Parameters
    ----------
    method : {"additive", "correlated", "correlated2", "exact", "outliers"}, default "additive"
        The noise method.
    noise : float, default 150
        Amount of noise in percent: the noise standard deviation is ``noise/100`` times the
        variable's standard deviation ("additive", "outliers"); the noise covariance is
        ``noise/100`` times the data's ("correlated").  sdcMicro's default.  Not used by
        "correlated2" and "exact".
    delta : float, default 0.1
        The ``d`` of worked example E6, in (0, 1]: weight of the noise in "correlated2" and
        "exact" (``c1 = sqrt(1 - delta^2)``, ``c2 = delta``).
    variables : list of str, optional
        Numeric columns to perturb (default: the numeric variables of the data).
    balance : list of (str, list of str), optional
        Balance edits ``(total, components)`` kept exactly: ``total = sum(components)``.
    outlier_rule : {"quantile", "mahalanobis"}, default "quantile"
        How "outliers" finds outliers.
    outlier_quantile : float, optional
        Quantile in (0, 1) of the outlier rule (default 0.99 for "quantile", 0.975 for
        "mahalanobis").
    seed : int or numpy.random.Generator, optional
        Random seed.
    by_strata : bool, default False
        Perturb each stratum of the data (its ``strata`` column) as a file of its own.
    n_jobs : int, default 1
        With ``by_strata``, the number of processes perturbing strata at the same time (-1:
        one per core); the output is the same for every value.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.noise import AddNoise
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [2.0, 1.0, 4.0, 3.0]})
    >>> res = AddNoise(method="exact", seed=1).apply(df, numeric=["x", "y"])
    >>> [round(v, 9) for v in res.microdata.frame.mean().row(0)]
    [2.5, 2.5]
    """

    name: ClassVar[str] = "additive noise"
    description: ClassVar[str] = "Adds random noise to {variables} (additive noise)."
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "method": Param(
            Options(*NOISE_METHODS),
            help="uncorrelated, correlated, mean- and covariance-preserving, exact moments, "
            "or only on outliers",
        ),
        "noise": Param(
            Real(minimum=0.0),
            help="noise standard deviation in percent of the variable's (not for "
            "'correlated2' and 'exact')",
        ),
        "delta": Param(
            Real(minimum=0.0, maximum=1.0, min_open=True),
            help="weight of the noise in 'correlated2' and 'exact'",
        ),
        "variables": Param(
            Columns(role="numeric", min_length=0),
            None,
            help="the numeric variables to perturb (default: the numeric variables)",
        ),
        "balance": Param(
            ListOf(_EDIT),
            _EDIT,
            None,
            help="edits (total, [components]) kept exactly: total = sum of the components",
        ),
        "outlier_rule": Param(
            Options(*OUTLIER_RULES),
            help="how 'outliers' finds outliers: per variable, or robust Mahalanobis distance",
        ),
        "outlier_quantile": Param(
            Real(minimum=0.0, maximum=1.0, min_open=True, max_open=True),
            None,
            help="quantile of the outlier rule (default 0.99 for 'quantile', 0.975 for "
            "'mahalanobis')",
        ),
        "seed": Param(Seed(), None, help="random seed (an integer or a numpy Generator)"),
        "by_strata": Param(
            Boolean(), help="perturb each stratum of the data's strata column as a file of its own"
        ),
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        method: NoiseMethod = "additive",
        noise: float = 150.0,
        delta: float = 0.1,
        variables: str | Sequence[str] | None = None,
        balance: Sequence[tuple[str, Sequence[str]]] | None = None,
        outlier_rule: Literal["quantile", "mahalanobis"] = "quantile",
        outlier_quantile: float | None = None,
        seed: int | np.random.Generator | None = None,
        by_strata: bool = False,
        n_jobs: int = 1,
    ) -> None:
        self.method = method
        self.noise = noise
        self.delta = delta
        self.variables = variables
        self.balance = balance
        self.outlier_rule = outlier_rule
        self.outlier_quantile = outlier_quantile
        self.seed = seed
        self.by_strata = by_strata
        self.n_jobs = n_jobs

    # -------------------------------------------------------------- parameters and columns
    def _columns(self, md: Microdata) -> tuple[list[str], list[tuple[str, tuple[str, ...]]]]:
        """The perturbed variables (without totals) and the ordered balance edits."""
        variables = column_list(self.variables, "variables") or md.numeric
        if not variables:
            raise ColumnError(
                "Additive noise needs numeric variables; pass numeric=... when building the "
                "data or variables=... to the method."
            )
        check_columns_exist(variables, md.frame.columns, "noise")
        for role in ("weight", "strata", "household"):
            if getattr(md, role) in variables:
                raise ColumnError(
                    f"The {role} column {getattr(md, role)!r} cannot get noise; remove it from "
                    "the noise variables."
                )
        for col in variables:
            dtype = md.frame.schema[col]
            if not dtype.is_numeric() or dtype == pl.Boolean:
                raise ColumnError(
                    f"The noise variable {col!r} is not numeric (type {dtype}); noise can only "
                    "be added to numbers."
                )
        edits = _parse_balance(self.balance)
        for total, comps in edits:
            for col in (total, *comps):
                if col not in variables:
                    raise ColumnError(
                        f"The balance edit for {total!r} uses {col!r}, which is not a noise "
                        "variable; add it to the numeric variables (or to variables=...)."
                    )
        level = set(md.household_level) if md.household is not None else set()
        for total, comps in edits:
            if total in level:
                person = [c for c in comps if c not in level]
                if person:
                    raise ColumnError(
                        f"The balance edit for {total!r} has a household-level total but the "
                        f"component {person[0]!r} is not household-level, so the recomputed "
                        "total would differ within households; declare the components "
                        "household-level or drop the edit."
                    )
        totals = {t for t, _ in edits}
        return [v for v in variables if v not in totals], edits

    def _check_params(self) -> tuple[str, float, float, str, float]:
        method = check_choice(self.method, "method", NOISE_METHODS)
        noise = check_real(self.noise, "noise", minimum=0.0)
        delta = check_real(self.delta, "delta", minimum=0.0, maximum=1.0, min_inclusive=False)
        rule = check_choice(self.outlier_rule, "outlier_rule", OUTLIER_RULES)
        default_q = 0.99 if rule == "quantile" else 0.975
        quantile = default_q if self.outlier_quantile is None else self.outlier_quantile
        quantile = check_real(
            quantile,
            "outlier_quantile",
            minimum=0.0,
            maximum=1.0,
            min_inclusive=False,
            max_inclusive=False,
        )
        return method, noise, delta, rule, quantile

    # -------------------------------------------------------------- the methods
    def _apply(self, md: Microdata, progress: Progress | None = None) -> Protected:
        method, noise, delta, rule, quantile = self._check_params()
        free, edits = self._columns(md)
        x = _column_matrix(md.frame, free)
        refuse_infinite(free, np.isinf(x).any(axis=0))
        _check_edits(md.frame, edits)
        details: dict[str, Any] = {"variables": list(free), "balance": [list(e) for e in edits]}
        # household-level variables get one draw per household (see the module docstring)
        is_house = np.zeros(len(free), dtype=bool)
        is_house[_household_positions(md, free)] = True
        lead = _household_heads(md) if is_house.any() else np.arange(md.n_records)
        settings = (method, noise, delta, rule, quantile)
        strata = self._strata(md, lead if is_house.any() else None)
        if strata is None:
            sd = _column_sd(md.frame, free)
            # the key comes from the seed's Generator, so an integer and a Generator of it
            # give the same output (as they always did); the Generator then draws the rest
            rng = check_seed(self.seed)
            key = noise_key(rng)
            rows = np.arange(md.n_records, dtype=np.int64)
            y, found = _perturb(x, sd, free, is_house, lead, settings, rng, key, rows)
            details.update(found)
        else:  # each stratum on its own, with its own stream (in parallel with n_jobs > 1)
            y = self._perturb_strata(
                md, x, free, is_house, lead, settings, strata, details, progress
            )
        new = {v: y[:, j] for j, v in enumerate(free)}
        for total, comps in edits:
            original_total = md.frame.get_column(total).cast(pl.Float64).fill_nan(None)
            keep_missing = original_total.is_null().to_numpy()
            tot = _edit_sum([new[c] for c in comps])
            # a total whose components did not change keeps its original value exactly
            unchanged = np.ones(len(tot), dtype=bool)
            for c in comps:
                before = md.frame.get_column(c).cast(pl.Float64).fill_nan(None).to_numpy()
                after = new[c]
                unchanged &= (before == after) | (np.isnan(before) & np.isnan(after))
            tot = np.where(unchanged, original_total.fill_null(np.nan).to_numpy(), tot)
            tot[keep_missing] = np.nan
            new[total] = tot
        frame = md.frame.with_columns(
            pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)
            for name, values in new.items()
        )
        return Protected.from_frames(md, frame, self, details=details)

    def _strata(self, md: Microdata, lead: np.ndarray | None) -> Strata | None:
        """The strata to work within (``by_strata``), checked; None for the whole file."""
        if not self.by_strata:
            return None
        if md.strata is None:
            raise ColumnError(
                "Noise with by_strata=True needs the strata column: give the data a strata "
                "role (strata=...)."
            )
        strata = split(md.frame.get_column(md.strata), md.strata)
        if lead is not None and not np.array_equal(strata.codes[lead], strata.codes):
            raise DataError(
                f"Some households have members in different strata of {md.strata!r}; "
                "household-level variables get one draw per household, so with by_strata=True "
                "every household must lie within one stratum."
            )
        return strata

    def _perturb_strata(
        self,
        md: Microdata,
        x: np.ndarray,
        free: list[str],
        is_house: np.ndarray,
        lead: np.ndarray,
        settings: tuple[str, float, float, str, float],
        strata: Strata,
        details: dict[str, Any],
        progress: Progress | None = None,
    ) -> np.ndarray:
        """The perturbed values, one task per stratum; the details per stratum and in all."""
        base = base_sequence(self.seed)
        seeds = stratum_seeds(base, strata.n_strata)
        key = noise_key(base)  # one key: the draws are keyed by the record's row in the file
        position = strata.position()
        tasks = [
            (
                x[rows], _column_sd(md.frame[rows], free), free, is_house,
                position[lead[rows]], settings, seeds[s], key, rows,
            )
            for s, rows in enumerate(strata.rows)
        ]  # fmt: skip
        done = run(_perturb_stratum, tasks, self.n_jobs, weights=strata.sizes(), progress=progress)
        y = np.empty_like(x)
        parts = []
        for rows, (ys, found) in zip(strata.rows, done, strict=True):
            y[rows] = ys
            parts.append(found)
        details["strata"] = strata.levels
        details["by_stratum"] = parts
        for name in ("noise_sd", "variance_ratio"):
            details[name] = {v: [part[name].get(v) for part in parts] for v in free}
        details["constant_variables"] = sorted(
            {v for part in parts for v in part["constant_variables"]}, key=free.index
        )
        for name in ("c1", "c2", "outlier_rule", "outlier_quantile"):
            if name in parts[0]:
                details[name] = parts[0][name]
        if "outliers" in parts[0]:
            outliers = np.zeros(md.n_records, dtype=bool)
            for rows, part in zip(strata.rows, parts, strict=True):
                outliers[rows] = part["outliers"]
            details["outliers"] = outliers
            details["n_outlier_values"] = sum(part["n_outlier_values"] for part in parts)
        return y

    # -------------------------------------------------------------- verification
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check: only noise variables changed, missing values kept, edits and moments exact."""
        method = self._check_params()[0]
        free, edits = self._columns(original)
        variables = set(free) | {t for t, _ in edits}
        out = protected.microdata.frame
        self._require(out.columns == original.frame.columns, "the columns changed")
        after_draws = sorted(set(protected.details.get("release_roles", {})) & variables)
        if after_draws:
            self._fail(
                f"values of {after_draws[0]!r} were changed after the noise was drawn (the "
                "household-level variables must get one draw per household)"
            )
        for col in original.frame.columns:
            if col not in variables:
                changed = changed_cells(original.frame.get_column(col), out.get_column(col))
                self._require(not changed.any(), f"the non-noise variable {col!r} changed")
        before = _column_matrix(original.frame, sorted(variables))
        after = _column_matrix(out, sorted(variables))
        self._require(np.array_equal(np.isnan(before), np.isnan(after)), "missing values changed")
        for total, comps in edits:
            tot = out.get_column(total).cast(pl.Float64).to_numpy()
            expected = _edit_sum([out.get_column(c).cast(pl.Float64).to_numpy() for c in comps])
            present = ~np.isnan(tot)
            self._require(
                np.array_equal(tot[present], expected[present]),
                f"the balance edit for {total!r} does not hold",
            )
        if method == "outliers":
            flagged = np.asarray(protected.details["outliers"])
            self._require(
                not np.any(protected.changed_records & ~flagged), "a non-outlier record changed"
            )
        if method == "exact":
            x_all, y_all = _column_matrix(original.frame, free), _column_matrix(out, free)
            strata = self._strata(original, None)
            parts = [np.arange(original.n_records)] if strata is None else strata.rows
            for rows in parts:  # (within each stratum with by_strata)
                self._check_moments(x_all[rows], y_all[rows])

    def _check_moments(self, x: np.ndarray, y: np.ndarray) -> None:
        """The means and covariance matrix of the complete rows of ``y`` are those of ``x``."""
        keep = np.nanstd(x, axis=0, ddof=1) > 0
        x, y = x[:, keep], y[:, keep]
        complete = ~np.isnan(x).any(axis=1)
        if np.count_nonzero(complete) > 1:
            xc, yc = x[complete], y[complete]
            cx, cy = np.atleast_2d(np.cov(xc, rowvar=False)), np.cov(yc, rowvar=False)
            scale = np.sqrt(np.outer(np.diag(cx), np.diag(cx)))
            self._require(
                np.all(np.abs(cx - cy) <= 1e-9 * scale), "the covariance matrix was not kept"
            )
            sd = np.sqrt(np.diag(cx))
            mean_gap = np.abs(xc.mean(axis=0) - yc.mean(axis=0))
            self._require(
                np.all(mean_gap <= 1e-9 * np.maximum(np.abs(xc.mean(axis=0)), sd)),
                "the means were not kept",
            )

    @classmethod
    def contract_example(cls) -> tuple[AddNoise, Microdata]:
        """Correlated, exact noise with a balance edit on a small income file."""
        rng = np.random.default_rng(20)
        x = rng.gamma(2.0, 100.0, size=30).round(1)
        y = rng.gamma(3.0, 50.0, size=30).round(1)
        frame = pl.DataFrame(
            {
                "region": rng.integers(1, 4, size=30),
                "wage": x,
                "other": y,
                "income": x + y,
                "age": rng.integers(18, 80, size=30),
            }
        )
        md = Microdata(frame, keys=["region"], numeric=["wage", "other", "income", "age"])
        method = cls(method="exact", delta=0.2, balance=[("income", ["wage", "other"])], seed=3)
        return method, md


def _edit_sum(parts: list[np.ndarray]) -> np.ndarray:
    """Sum of the components of a balance edit, always in the same order."""
    total = parts[0].astype(np.float64, copy=True)
    for part in parts[1:]:
        total = total + part
    return total


def _check_edits(frame: pl.DataFrame, edits: list[tuple[str, tuple[str, ...]]]) -> None:
    """Raise DataError if a balance edit does not hold in the original data."""
    for total, comps in edits:
        tot = _column_matrix(frame, [total])[:, 0]
        parts = _column_matrix(frame, list(comps))
        part_missing = np.isnan(parts).any(axis=1)
        if np.any(~np.isnan(tot) & part_missing):
            raise DataError(
                f"The balance edit for {total!r} cannot be kept: some records have the total "
                "but miss a component (impute the components or make the total missing)."
            )
        ok = np.isnan(tot) | part_missing
        gap = np.abs(tot - parts.sum(axis=1))
        scale = np.maximum(np.abs(tot), 1.0)
        n_bad = int(np.count_nonzero(~ok & (gap > _EDIT_TOLERANCE * scale)))
        if n_bad:
            raise DataError(
                f"The balance edit {total!r} = {' + '.join(comps)} does not hold in "
                f"{n_bad} record(s) of the original data; correct them or drop the edit."
            )


def _restore_moments(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Affine map of ``y`` whose sample mean and covariance equal those of ``x``."""
    y_mean, a, x_mean = _moment_map(y, x)
    return (y - y_mean) @ a + x_mean


def _moment_map(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ybar, A, xbar)`` of the map ``(y - ybar) A + xbar``; ``A`` is upper triangular."""
    cov_x = np.atleast_2d(np.cov(x, rowvar=False))
    cov_y = np.atleast_2d(np.cov(y, rowvar=False))
    try:
        # a singular matrix may pass Cholesky by rounding: its smallest eigenvalue decides
        values = np.linalg.eigvalsh(cov_x)
        if values.size and not values.min() > 1e-12 * max(
            float(values.max()), np.finfo(float).tiny
        ):
            raise np.linalg.LinAlgError
        lx = np.linalg.cholesky(cov_x)
        ly = np.linalg.cholesky(cov_y)
    except np.linalg.LinAlgError:
        raise DataError(
            "The covariance matrix of the noise variables is singular (a variable is a linear "
            "combination of others, or fewer complete records than variables); declare totals as "
            "balance edits or drop a variable."
        ) from None
    a = scipy.linalg.solve_triangular(ly.T, lx.T, lower=False)
    return y.mean(axis=0), a, x.mean(axis=0)


def _restore_moments_by_household(
    y: np.ndarray, x: np.ndarray, complete: np.ndarray, house: list[int], lead: np.ndarray
) -> np.ndarray:
    """:func:`_restore_moments` on the complete records, keeping households constant.

    With the household-level columns first, the map's matrix is upper triangular, so their
    corrected values depend on household-level values only: they stay constant within
    households.  Records that miss a person-level value but have every household-level value
    get the household part of the map; then every member takes its first member's values.
    """
    p = y.shape[1]
    order = np.array(house + [j for j in range(p) if j not in house])
    nh = len(house)
    yp, xp = y[:, order], x[:, order]
    y_mean, a, x_mean = _moment_map(yp[complete], xp[complete])
    out = yp.copy()
    out[complete] = (yp[complete] - y_mean) @ a + x_mean
    partial = ~complete & ~np.isnan(xp[:, :nh]).any(axis=1)
    if partial.any():
        out[partial, :nh] = (yp[partial, :nh] - y_mean[:nh]) @ a[:nh, :nh] + x_mean[:nh]
    out[:, :nh] = out[lead, :nh]  # one value per household, to the last bit
    result = np.empty_like(out)
    result[:, order] = out
    return result


def _household_noise(
    z: np.ndarray, cov: np.ndarray, house: list[int], lead: np.ndarray
) -> np.ndarray:
    """Noise ``N(0, cov)`` per record whose household-level columns are drawn per household.

    The household columns take ``z`` of the household's first member; the others are drawn
    from their conditional distribution given them, so the noise covariance is ``cov``.
    """
    p = cov.shape[0]
    rest = [j for j in range(p) if j not in house]
    cov_hh = cov[np.ix_(house, house)]
    e = np.empty_like(z)
    e_h = z[np.ix_(lead, house)] @ _sqrt_factor(cov_hh).T
    e[:, house] = e_h
    if rest:
        b = cov[np.ix_(rest, house)] @ np.linalg.pinv(cov_hh)
        conditional = cov[np.ix_(rest, rest)] - b @ cov[np.ix_(house, rest)]
        e[:, rest] = e_h @ b.T + z[:, rest] @ _sqrt_factor(conditional).T
    return e


def _household_positions(md: Microdata, columns: Sequence[str]) -> list[int]:
    """Positions in ``columns`` of the household-level variables."""
    if md.household is None:
        return []
    level = set(md.household_level)
    return [j for j, c in enumerate(columns) if c in level]


def _household_heads(md: Microdata) -> np.ndarray:
    """Position of the first member of each record's household."""
    column = md.household
    if column is None:  # (only called for files with household-level variables)
        raise ColumnError("Household-level variables need the household id: pass household=...")
    codes, levels = encode_column(md.frame.get_column(column))
    if (codes < 0).any():
        raise DataError(
            f"The household column {column!r} has missing values; every record needs a "
            "household id."
        )
    return first_index(codes, len(levels))[codes]


def _any_in_household(mask: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """``mask`` (records x columns) made True for every member where one member is True."""
    out = np.empty_like(mask)
    for j in range(mask.shape[1]):
        out[:, j] = np.bincount(lead, weights=mask[:, j], minlength=len(lead))[lead] > 0
    return out


@function_twin(AddNoise)
def add_noise(data: Any, **params: Any) -> Protected:
    """Add random noise to numeric variables (function form of :class:`AddNoise`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    method, noise, delta, variables, balance, outlier_rule, outlier_quantile, seed, by_strata,
    n_jobs
        The parameters of :class:`AddNoise`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected
        The perturbed data; ``details`` holds the noise standard deviation and the realised
        variance ratio per variable (and the outlier records for "outliers").

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.noise import add_noise
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 4.0], "y": [2.0, 3.0, 1.0]})
    >>> df = df.with_columns(z=pl.col("x") + pl.col("y"))
    >>> out = add_noise(df, numeric=["x", "y", "z"], balance=[("z", ["x", "y"])], seed=1).data
    >>> (out["x"] + out["y"] == out["z"]).all()
    True
    """
