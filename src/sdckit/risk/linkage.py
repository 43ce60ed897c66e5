"""Disclosure risk of continuous key variables: interval disclosure and record linkage.

Three measures compare an original file with its masked version, record by record (row ``i`` of
the masked file is the protected version of row ``i`` of the original):

* :func:`interval_disclosure`: sdcMicro's ``dRisk`` (the SDID measure).  An interval of half-width
  ``k`` times the standard deviation of the masked variable is put around every masked value; a
  record is at risk when its original values lie inside these intervals (sdcMicro tolerates one
  variable outside).
* :func:`interval_disclosure_rmd`: sdcMicro's ``dRiskRMD`` (Templ and Meindl, 2008).  The
  intervals are scaled by each record's robust Mahalanobis distance, so outlying records get wider
  intervals; RMDID2 then keeps only records with no other masked record nearby.
* :func:`record_linkage`: distance-based record linkage (Domingo-Ferrer and Torra).  Every masked
  record is linked to its nearest original record; the share of correct links estimates the
  re-identification risk.

Every variable must be numeric, complete (no missing values) and finite in both files.  Each
file is a data frame (pandas, polars, pyarrow), a :class:`~sdckit.Microdata`, or the result of a
protection method; per-record results follow the masked file's row order and index.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import linalg, stats
from scipy.spatial import cKDTree

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_columns_exist, check_int, check_real, column_list
from sdckit.errors import ColumnError, DataError, ParameterError, SdcWarning
from sdckit.microdata import as_microdata

__all__ = [
    "IntervalDisclosureResult",
    "IntervalDisclosureRmdResult",
    "RecordLinkageResult",
    "interval_disclosure",
    "interval_disclosure_rmd",
    "record_linkage",
]

#: Relative tolerance under which two linkage distances count as tied.
TIE_TOLERANCE = 1e-9


# ---------------------------------------------------------------------------------- input
@dataclass(frozen=True)
class _Pair:
    original: np.ndarray  # (n, p) float64
    masked: np.ndarray  # (n, p) float64
    numeric: tuple[str, ...]
    frame_info: FrameInfo


def _frame_of(data: Any) -> tuple[pl.DataFrame, FrameInfo, tuple[str, ...]]:
    md = as_microdata(data)  # a frame, a Microdata or the result of a protection method
    return md.frame, md.frame_info, md.numeric


def _matrix(frame: pl.DataFrame, numeric: tuple[str, ...], which: str) -> np.ndarray:
    check_columns_exist(numeric, list(frame.columns), f"numeric ({which} file)")
    for col in numeric:
        dtype = frame.schema[col]
        if not dtype.is_numeric() or dtype == pl.Boolean:
            raise ColumnError(
                f"The numeric variable {col!r} of the {which} file is not numeric (type {dtype}); "
                "convert it to numbers or leave it out of 'numeric'."
            )
    out = np.empty((frame.height, len(numeric)), dtype=np.float64)
    for j, col in enumerate(numeric):
        series = frame.get_column(col).cast(pl.Float64)
        n_missing = series.fill_nan(None).null_count()
        if n_missing:
            raise DataError(
                f"The numeric variable {col!r} has {n_missing} missing value(s) in the {which} "
                "file; these measures need complete records: impute the missing values or drop "
                "those records from both files (keeping the rows of the two files aligned)."
            )
        values = series.to_numpy()
        if not np.all(np.isfinite(values)):
            raise DataError(
                f"The numeric variable {col!r} has infinite values in the {which} file; "
                "every value must be finite."
            )
        out[:, j] = values
    return out


def _pair(original: Any, masked: Any, numeric: str | Iterable[str] | None) -> _Pair:
    """Validate the two files and return their numeric variables as aligned matrices."""
    ofr, _, onum = _frame_of(original)
    mfr, minfo, mnum = _frame_of(masked)
    cols = column_list(numeric, "numeric") or onum or mnum
    if not cols:
        raise ColumnError(
            "No numeric variables are given; pass numeric=[...] (or a Microdata with numeric "
            "variables as the original file)."
        )
    if ofr.height != mfr.height:
        raise DataError(
            f"The original file has {ofr.height} records and the masked file {mfr.height}; "
            "both files must hold the same records in the same order."
        )
    if ofr.height < 2:
        raise DataError("The files need at least two records to compare them.")
    x = _matrix(ofr, cols, "original")
    xm = _matrix(mfr, cols, "masked")
    return _Pair(x, xm, cols, minfo)


def _standard_deviations(x: np.ndarray, numeric: tuple[str, ...], which: str) -> np.ndarray:
    """Column standard deviations (denominator n - 1); DataError for a constant column."""
    sd = x.std(axis=0, ddof=1)
    scale = np.maximum(np.abs(x).max(axis=0), np.finfo(np.float64).tiny)
    for j, col in enumerate(numeric):
        if not sd[j] > 1e-12 * scale[j]:
            raise DataError(
                f"The numeric variable {col!r} is constant in the {which} file, so it cannot "
                "be standardised; leave it out of 'numeric' (a constant carries no "
                "information for linking records)."
            )
    return sd


def _standardize(x: np.ndarray, numeric: tuple[str, ...], which: str) -> np.ndarray:
    return (x - x.mean(axis=0)) / _standard_deviations(x, numeric, which)


# ---------------------------------------------------------------------- interval (dRisk)
@dataclass(frozen=True, repr=False)
class IntervalDisclosureResult:
    """Interval disclosure risk (sdcMicro ``dRisk``).

    Attributes
    ----------
    at_risk : numpy.ndarray
        Boolean per record: True when at most ``max_outside`` of its original values lie outside
        the intervals around the masked values.
    outside : numpy.ndarray
        Number of variables whose original value lies outside its interval, per record.
    half_width : numpy.ndarray
        Half-width of the interval of each variable (``k`` times the masked standard deviation).
    risk : float
        Share of records at risk (sdcMicro's return value).
    k : float
    max_outside : int
    numeric : tuple of str
    """

    at_risk: np.ndarray
    outside: np.ndarray
    half_width: np.ndarray
    risk: float
    k: float
    max_outside: int
    numeric: tuple[str, ...]
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.at_risk)

    @property
    def n_at_risk(self) -> int:
        """Number of records at risk."""
        return int(np.count_nonzero(self.at_risk))

    def to_frame(self) -> Any:
        """One row per record: ``interval_risk`` (bool) and ``variables_outside``."""
        return records_frame(
            {"interval_risk": self.at_risk, "variables_outside": self.outside}, self.frame_info
        )

    def summary(self) -> Summary:
        """File-level figures."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("records at risk", self.n_at_risk),
            ("interval disclosure risk", self.risk),
            ("k (share of the standard deviation)", self.k),
            ("variables allowed outside", self.max_outside),
        ]
        notes = [f"numeric variables: {', '.join(self.numeric)}"]
        return Summary("Interval disclosure (SDID, sdcMicro dRisk)", rows, notes)

    def __repr__(self) -> str:
        return f"IntervalDisclosureResult(risk={self.risk:.6g}, records={self.n_records})"


def interval_disclosure(
    original: Any,
    masked: Any,
    *,
    numeric: str | Iterable[str] | None = None,
    k: float = 0.05,
    max_outside: int = 1,
) -> IntervalDisclosureResult:
    """Interval disclosure risk of continuous key variables (sdcMicro ``dRisk``).

    For every variable ``j`` the interval ``[xm_ij - k s_j, xm_ij + k s_j]`` is put around the
    masked value, where ``s_j`` is the standard deviation (denominator ``n - 1``) of variable
    ``j`` in the *masked* file.  Record ``i`` is at risk when its original values lie outside
    at most ``max_outside`` of its intervals (bounds included).  The risk is the share of records
    at risk.

    Parameters
    ----------
    original, masked : DataFrame or Microdata
        The original and the masked file: same number of records, in the same order.
    numeric : list of str, optional
        The continuous key variables.  Defaults to the numeric variables of ``original`` (or of
        ``masked``) when it is a :class:`~sdckit.Microdata`.
    k : float, default 0.05
        Half-width of the intervals as a share of the standard deviation.
    max_outside : int, default 1
        Number of variables that may lie outside their interval for a record still to count as
        at risk.  sdcMicro's ``dRisk`` uses 1; use 0 to require every variable to lie inside.
        With a single variable and ``max_outside=1`` every record is at risk (an
        :class:`~sdckit.errors.SdcWarning` says so).

    Returns
    -------
    IntervalDisclosureResult

    Raises
    ------
    ColumnError
        A variable is missing or not numeric.
    DataError
        The files differ in their number of records, or a value is missing or infinite.

    Notes
    -----
    A constant masked variable gives intervals of width 0: only equal values are inside.
    sdcMicro ignores missing values in the comparison; sdckit refuses them instead.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.linkage import interval_disclosure
    >>> x = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [10.0, 20.0, 30.0, 40.0]})
    >>> xm = pl.DataFrame({"a": [1.0, 2.5, 3.0, 5.0], "b": [10.0, 20.0, 35.0, 45.0]})
    >>> res = interval_disclosure(x, xm, numeric=["a", "b"], k=0.2)
    >>> res.outside.tolist(), res.risk
    ([0, 1, 1, 2], 0.75)
    >>> interval_disclosure(x, xm, numeric=["a", "b"], k=0.2, max_outside=0).risk
    0.25
    """
    k = check_real(k, "k", minimum=0.0)
    max_outside = check_int(max_outside, "max_outside", minimum=0)
    pair = _pair(original, masked, numeric)
    p = len(pair.numeric)
    if p <= max_outside:
        warnings.warn(
            f"With {p} numeric variable(s) and max_outside={max_outside} every record counts as "
            "at risk; use more variables or max_outside=0.",
            SdcWarning,
            stacklevel=2,
        )
    half_width = k * pair.masked.std(axis=0, ddof=1)
    outside = (np.abs(pair.original - pair.masked) > half_width).sum(axis=1)
    at_risk = outside <= max_outside
    return IntervalDisclosureResult(
        at_risk=at_risk,
        outside=outside.astype(np.int64),
        half_width=half_width,
        risk=float(np.count_nonzero(at_risk) / len(at_risk)),
        k=k,
        max_outside=max_outside,
        numeric=pair.numeric,
        frame_info=pair.frame_info,
    )


# ------------------------------------------------------------------ interval (dRiskRMD)
def _univariate_mcd(z: np.ndarray, h: int, trim_frac: float) -> float:
    """Reweighted univariate MCD variance (exact: the best h-subset is contiguous when sorted)."""
    from statsmodels.robust.covariance import coef_normalize_cov_truncated

    n = len(z)
    s = np.sort(z)
    c1 = np.concatenate([[0.0], np.cumsum(s)])
    c2 = np.concatenate([[0.0], np.cumsum(s * s)])
    sums = c1[h:] - c1[: n - h + 1]
    ssq = c2[h:] - c2[: n - h + 1]
    var = (ssq - sums * sums / h) / (h - 1)
    best = int(np.argmin(var))
    mean = sums[best] / h
    raw = var[best] * coef_normalize_cov_truncated(h / n, 1)
    if not raw > 1e-12 * np.var(z):
        raise np.linalg.LinAlgError("singular h-subset")
    keep = (z - mean) ** 2 / raw <= stats.chi2.ppf(trim_frac, 1)
    return float(np.var(z[keep], ddof=1) * coef_normalize_cov_truncated(trim_frac, 1))


def _robust_covariance(z: np.ndarray) -> np.ndarray:
    """Reweighted MCD covariance (statsmodels' deterministic DetMCD; exact MCD for one variable)."""
    n, p = z.shape
    h = (n + p + 1) // 2  # robustbase's default h for alpha = 0.5
    if p == 1:
        return np.array([[_univariate_mcd(z[:, 0], h, 0.975)]])
    from statsmodels.robust.covariance import CovDetMCD

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            cov = CovDetMCD(z).fit(h, reweight=True, trim_frac=0.975).cov
        except (ZeroDivisionError, FloatingPointError, ValueError) as exc:
            raise np.linalg.LinAlgError("singular h-subset") from exc
    cov = np.asarray(cov, dtype=np.float64)
    if not np.all(np.isfinite(cov)):
        raise np.linalg.LinAlgError("singular h-subset")
    return cov


@dataclass(frozen=True, repr=False)
class IntervalDisclosureRmdResult:
    """Robust-Mahalanobis-distance interval disclosure risk (sdcMicro ``dRiskRMD``).

    Attributes
    ----------
    at_risk : numpy.ndarray
        RMDID1, boolean per record: some masked value lies strictly inside the interval around
        the original value (in standardised units).
    at_risk_isolated : numpy.ndarray
        RMDID2, boolean per record: at risk, and no other masked record lies within Euclidean
        distance ``k2`` of it.
    robust_distance : numpy.ndarray
        Mahalanobis distance of each standardised original record (not squared).
    risk_weight : numpy.ndarray
        sdcMicro's weight ``0.05 * robust_distance``; the interval half-width is ``k`` times it.
    risk1, risk2 : float
        Shares of records at risk under RMDID1 and RMDID2 (sdcMicro's ``risk1``, ``risk2``).
    weighted_risk1, weighted_risk2 : float
        sdcMicro's ``wrisk1`` and ``wrisk2``: number of records at risk times the sum of their
        risk weights, divided by the number of records.
    k, k2 : float
    covariance : str
        ``"mcd"`` or ``"classical"``.
    numeric : tuple of str
    """

    at_risk: np.ndarray
    at_risk_isolated: np.ndarray
    robust_distance: np.ndarray
    risk_weight: np.ndarray
    risk1: float
    risk2: float
    weighted_risk1: float
    weighted_risk2: float
    k: float
    k2: float
    covariance: str
    numeric: tuple[str, ...]
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.at_risk)

    @property
    def risk_vector1(self) -> np.ndarray:
        """sdcMicro's ``riskvec1``: the risk weight of records at risk (RMDID1), else 0."""
        return np.where(self.at_risk, self.risk_weight, 0.0)

    @property
    def risk_vector2(self) -> np.ndarray:
        """sdcMicro's ``riskvec2``: the risk weight of records at risk (RMDID2), else 0."""
        return np.where(self.at_risk_isolated, self.risk_weight, 0.0)

    def to_frame(self) -> Any:
        """One row per record: ``rmd_risk``, ``rmd_risk_isolated``, ``robust_distance``."""
        return records_frame(
            {
                "rmd_risk": self.at_risk,
                "rmd_risk_isolated": self.at_risk_isolated,
                "robust_distance": self.robust_distance,
            },
            self.frame_info,
        )

    def summary(self) -> Summary:
        """File-level figures."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("records at risk (RMDID1)", int(np.count_nonzero(self.at_risk))),
            ("risk (RMDID1)", self.risk1),
            ("weighted risk (RMDID1w)", self.weighted_risk1),
            ("records at risk (RMDID2)", int(np.count_nonzero(self.at_risk_isolated))),
            ("risk (RMDID2)", self.risk2),
            ("weighted risk (RMDID2)", self.weighted_risk2),
            ("k", self.k),
            ("k2", self.k2),
        ]
        notes = [
            f"numeric variables: {', '.join(self.numeric)}; covariance: {self.covariance}",
        ]
        return Summary("Interval disclosure by robust Mahalanobis distance", rows, notes)

    def __repr__(self) -> str:
        return (
            f"IntervalDisclosureRmdResult(risk1={self.risk1:.6g}, risk2={self.risk2:.6g}, "
            f"records={self.n_records})"
        )


def interval_disclosure_rmd(
    original: Any,
    masked: Any,
    *,
    numeric: str | Iterable[str] | None = None,
    k: float = 0.01,
    k2: float = 0.05,
    covariance: Literal["mcd", "classical"] = "mcd",
) -> IntervalDisclosureRmdResult:
    """Interval disclosure risk with robust-Mahalanobis-distance intervals (sdcMicro ``dRiskRMD``).

    Both files are standardised column by column (mean 0, standard deviation 1, denominator
    ``n - 1``), each with its own mean and standard deviation.  For the standardised original
    records ``z_i`` the distance ``d_i = sqrt(z_i' S^-1 z_i)`` is computed, with ``S`` a robust
    covariance of ``z``; as in sdcMicro the centre is the mean of ``z`` (0), not a robust
    centre.  The weight of record ``i`` is ``w_i = 0.05 d_i`` and its intervals are
    ``(z_ij - k w_i, z_ij + k w_i)``.

    * RMDID1: record ``i`` is at risk when *any* standardised masked value lies strictly inside
      its interval.  ``risk1`` is the share of such records and
      ``weighted_risk1 = n1 * sum(w_i over those records) / n`` (sdcMicro's ``wrisk1``).
    * RMDID2: a record at risk stays at risk only when no other standardised masked record
      lies within Euclidean distance ``k2`` of its masked record (it is isolated); ``risk2`` and
      ``weighted_risk2`` as above.

    Parameters
    ----------
    original, masked : DataFrame or Microdata
        Same number of records, in the same order.
    numeric : list of str, optional
        The continuous key variables (defaults to the Microdata's numeric variables).
    k : float, default 0.01
        Scale of the intervals.
    k2 : float, default 0.05
        Radius (standardised units) of the neighbourhood that makes a record safe in RMDID2.
    covariance : {"mcd", "classical"}, default "mcd"
        ``"mcd"``: the reweighted minimum covariance determinant estimator with
        ``h = (n + p + 1) // 2`` records, from statsmodels (``CovDetMCD``, deterministic starts;
        for a single variable the exact univariate MCD with the same consistency factors).
        sdcMicro uses robustbase's ``covMcd`` (FastMCD with random starts), so the risks can
        differ slightly.  ``"classical"``: the sample covariance.

    Returns
    -------
    IntervalDisclosureRmdResult

    Raises
    ------
    ColumnError, DataError
        As :func:`interval_disclosure`; also for a constant variable, or a robust covariance
        that is singular (more than half of the records on a hyperplane).

    Notes
    -----
    The MCD takes about 30 s for 100,000 records and 5 variables.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.linkage import interval_disclosure_rmd
    >>> x = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> res = interval_disclosure_rmd(x, x, numeric="a", covariance="classical")
    >>> res.at_risk.tolist(), res.risk1, round(res.weighted_risk1, 6)
    ([True, True, False, True, True], 0.8, 0.151789)
    """
    k = check_real(k, "k", minimum=0.0)
    k2 = check_real(k2, "k2", minimum=0.0)
    check_choice(covariance, "covariance", ("mcd", "classical"))
    pair = _pair(original, masked, numeric)
    n = pair.original.shape[0]
    z = _standardize(pair.original, pair.numeric, "original")
    zm = _standardize(pair.masked, pair.numeric, "masked")
    try:
        if covariance == "mcd":
            cov = _robust_covariance(z)
        else:
            cov = np.atleast_2d(np.cov(z, rowvar=False))
        chol = linalg.cho_factor(cov, lower=True)
    except (np.linalg.LinAlgError, linalg.LinAlgError):
        if covariance == "mcd":
            raise DataError(
                "The robust (MCD) covariance matrix of the numeric variables is singular: more "
                "than half of the records lie on a hyperplane or share their values. Drop a "
                "variable, or use covariance='classical'."
            ) from None
        raise DataError(
            "The covariance matrix of the numeric variables is singular: a variable is a "
            "linear combination of the others; drop it from 'numeric'."
        ) from None
    # centre: the column means of the standardised file, which are 0 (as in sdcMicro)
    squared = np.einsum("ij,ij->i", z, linalg.cho_solve(chol, z.T).T)
    distance = np.sqrt(np.maximum(squared, 0.0))
    weight = 0.05 * distance
    half = (k * weight)[:, None]
    at_risk = np.any((zm > z - half) & (zm < z + half), axis=1)
    isolated = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(at_risk)
    if rows.size:
        nearest_other = cKDTree(zm).query(zm[rows], k=2)[0][:, 1]
        isolated[rows] = nearest_other > k2
    n1 = int(rows.size)
    n2 = int(np.count_nonzero(isolated))
    return IntervalDisclosureRmdResult(
        at_risk=at_risk,
        at_risk_isolated=isolated,
        robust_distance=distance,
        risk_weight=weight,
        risk1=n1 / n,
        risk2=n2 / n,
        weighted_risk1=float(n1 * weight[at_risk].sum() / n),
        weighted_risk2=float(n2 * weight[isolated].sum() / n),
        k=k,
        k2=k2,
        covariance=covariance,
        numeric=pair.numeric,
        frame_info=pair.frame_info,
    )


# ----------------------------------------------------------------------- record linkage
@dataclass(frozen=True, repr=False)
class RecordLinkageResult:
    """Distance-based record linkage between a masked and an original file.

    Attributes
    ----------
    linked : numpy.ndarray
        Boolean per masked record: its true original record (same row) is its unique nearest
        original record.
    link_probability : numpy.ndarray
        ``1 / t`` when the true record is among the ``t`` tied nearest original records, else 0
        (the chance that a random choice among the tied nearest is correct).
    nearest : numpy.ndarray
        Row position of a nearest original record (one of them when tied).
    rank : numpy.ndarray
        Rank of the true record among the original records sorted by distance: 1 plus the
        number of original records strictly closer.  Ranks above ``max_rank`` are reported as
        ``max_rank + 1``.
    n_tied : numpy.ndarray
        Number of original records at the distance of the true record (itself included), for
        records of rank 1; 0 for the others.
    distance : numpy.ndarray
        Distance between each masked record and its true original record, in the units used
        for linking (standardised values; Mahalanobis units for ``method="mahalanobis"``).
    risk : float
        Share of masked records correctly and uniquely linked.
    risk_probabilistic : float
        Mean of ``link_probability``: expected share of correct links when ties are broken at
        random.
    method : str
    standardize : bool
    max_rank : int
    numeric : tuple of str
    """

    linked: np.ndarray
    link_probability: np.ndarray
    nearest: np.ndarray
    rank: np.ndarray
    n_tied: np.ndarray
    distance: np.ndarray
    risk: float
    risk_probabilistic: float
    method: str
    standardize: bool
    max_rank: int
    numeric: tuple[str, ...]
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.linked)

    @property
    def n_linked(self) -> int:
        """Number of masked records correctly and uniquely linked."""
        return int(np.count_nonzero(self.linked))

    def share_within_rank(self, rank: int) -> float:
        """Share of records whose true record is among the ``rank`` nearest (ties optimistic)."""
        rank = check_int(rank, "rank", minimum=1, maximum=self.max_rank)
        return float(np.count_nonzero(self.rank <= rank) / self.n_records)

    def to_frame(self) -> Any:
        """One row per masked record: ``linked``, ``link_probability``, ``nearest``, ``rank``."""
        return records_frame(
            {
                "linked": self.linked,
                "link_probability": self.link_probability,
                "nearest": self.nearest,
                "rank": self.rank,
                "distance": self.distance,
            },
            self.frame_info,
        )

    def summary(self) -> Summary:
        """File-level figures."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("correct unique links", self.n_linked),
            ("linkage risk", self.risk),
            ("linkage risk, ties broken at random", self.risk_probabilistic),
            (
                f"true record within the {self.max_rank} nearest",
                self.share_within_rank(self.max_rank),
            ),
        ]
        notes = [
            f"numeric variables: {', '.join(self.numeric)}; distance: {self.method}; "
            f"standardised: {'yes' if self.standardize else 'no'}"
        ]
        return Summary("Distance-based record linkage", rows, notes)

    def __repr__(self) -> str:
        return f"RecordLinkageResult(risk={self.risk:.6g}, records={self.n_records})"


def _whiten(x: np.ndarray, xm: np.ndarray, covariance: str) -> tuple[np.ndarray, np.ndarray]:
    """Transform both files so that Euclidean distance equals Mahalanobis distance."""
    if covariance == "original":
        cov = np.atleast_2d(np.cov(x, rowvar=False))
    else:  # the covariance of the difference, Var(X) + Var(X') - 2 Cov(X, X')
        cov = np.atleast_2d(np.cov(x - xm, rowvar=False))
    try:
        lower = linalg.cholesky(cov, lower=True)
        if np.min(np.abs(np.diag(lower))) <= 1e-10 * np.max(np.abs(np.diag(lower))):
            raise linalg.LinAlgError("ill-conditioned")
    except linalg.LinAlgError:
        what = "original file" if covariance == "original" else "differences between the files"
        raise DataError(
            f"The covariance matrix of the {what} is singular, so the Mahalanobis distance is "
            "not defined; drop a variable that is a linear combination of others"
            + (" or use covariance='original'." if covariance == "difference" else ".")
        ) from None
    wx = linalg.solve_triangular(lower, x.T, lower=True).T
    wxm = linalg.solve_triangular(lower, xm.T, lower=True).T
    return np.ascontiguousarray(wx), np.ascontiguousarray(wxm)


def record_linkage(
    original: Any,
    masked: Any,
    *,
    numeric: str | Iterable[str] | None = None,
    method: Literal["euclidean", "mahalanobis"] = "euclidean",
    standardize: bool = True,
    covariance: Literal["original", "difference"] = "original",
    max_rank: int = 10,
) -> RecordLinkageResult:
    """Distance-based record linkage: how many masked records link to their original record.

    Every masked record is linked to its nearest original record.  The link is correct when it
    is the record's own original (same row).  A link counts as correct only when the true
    record is the *unique* nearest: a tie between the true record and another record at the
    same distance (within a relative tolerance of 1e-9) is not a correct link.  The
    probabilistic variant credits ``1 / t`` for a true record tied with ``t - 1`` others.

    Parameters
    ----------
    original, masked : DataFrame or Microdata
        Same number of records, in the same order.
    numeric : list of str, optional
        The continuous key variables (defaults to the Microdata's numeric variables).
    method : {"euclidean", "mahalanobis"}, default "euclidean"
        Distance between records.
    standardize : bool, default True
        Standardise every variable of each file with that file's own mean and standard
        deviation first (a constant variable then raises :class:`~sdckit.errors.DataError`).
    covariance : {"original", "difference"}, default "original"
        For ``method="mahalanobis"``: the covariance matrix of the original file, or that of the
        differences between the files, ``Var(X) + Var(X') - 2 Cov(X, X')`` (Torra, Abowd and
        Domingo-Ferrer, 2006).
    max_rank : int, default 10
        Ranks of the true record are computed exactly up to ``max_rank``; larger ranks are
        reported as ``max_rank + 1`` (an exact rank for every record would cost a comparison of
        every pair of records).

    Returns
    -------
    RecordLinkageResult

    Raises
    ------
    ColumnError, DataError
        As :func:`interval_disclosure`; also for a constant variable when standardising, or a
        singular covariance matrix.

    Notes
    -----
    Nearest neighbours are found exactly with a k-d tree (``scipy.spatial.cKDTree``); the
    Mahalanobis distance is the Euclidean distance after a Cholesky whitening of both files.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.linkage import record_linkage
    >>> x = pl.DataFrame({"a": [0.0, 1.0, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})
    >>> xm = pl.DataFrame({"a": [0.1, 0.5, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})
    >>> res = record_linkage(x, xm, numeric=["a", "b"], standardize=False)
    >>> res.linked.tolist(), res.risk, res.risk_probabilistic
    ([True, False, True, True], 0.75, 0.875)
    """
    check_choice(method, "method", ("euclidean", "mahalanobis"))
    check_choice(covariance, "covariance", ("original", "difference"))
    if not isinstance(standardize, bool | np.bool_):
        raise ParameterError("The 'standardize' parameter must be True or False.")
    max_rank = check_int(max_rank, "max_rank", minimum=1)
    pair = _pair(original, masked, numeric)
    x, xm = pair.original, pair.masked
    if standardize:
        x = _standardize(x, pair.numeric, "original")
        xm = _standardize(xm, pair.numeric, "masked")
    if method == "mahalanobis":
        x, xm = _whiten(x, xm, covariance)
    n = x.shape[0]
    tree = cKDTree(x)
    nearest_distance, nearest = tree.query(xm, k=1)
    true_distance = np.sqrt(((xm - x) ** 2).sum(axis=1))
    tol = TIE_TOLERANCE * (1.0 + true_distance)
    rank = np.ones(n, dtype=np.int64)
    n_tied = np.zeros(n, dtype=np.int64)
    # true record at the nearest distance: count the records tied with it (a small ball)
    first = np.flatnonzero(true_distance <= nearest_distance + tol)
    if first.size:
        counts = tree.query_ball_point(
            xm[first], r=true_distance[first] + tol[first], return_length=True
        )
        n_tied[first] = np.maximum(counts, 1)  # the true record itself is always inside
    # the others: rank = 1 + number strictly closer, exact below max_rank + 1
    later = np.flatnonzero(true_distance > nearest_distance + tol)
    if later.size:
        if max_rank == 1:
            rank[later] = 2
        else:
            kth = tree.query(xm[later], k=min(max_rank, n))[0].reshape(later.size, -1)
            closer = np.count_nonzero(kth < (true_distance[later] - tol[later])[:, None], axis=1)
            rank[later] = np.minimum(np.maximum(closer, 1) + 1, max_rank + 1)
    linked = n_tied == 1
    probability = np.zeros(n, dtype=np.float64)
    probability[first] = 1.0 / n_tied[first]
    return RecordLinkageResult(
        linked=linked,
        link_probability=probability,
        nearest=np.asarray(nearest, dtype=np.int64),
        rank=rank,
        n_tied=n_tied,
        distance=true_distance,
        risk=float(np.count_nonzero(linked) / n),
        risk_probabilistic=float(probability.mean()),
        method=method,
        standardize=bool(standardize),
        max_rank=max_rank,
        numeric=pair.numeric,
        frame_info=pair.frame_info,
    )
