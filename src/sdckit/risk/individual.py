"""Individual re-identification risk (Benedetti-Franconi), global risk, threshold, household risk.

methods.md M2.  For a key combination with sample frequency ``f`` and estimated population
frequency ``F`` (sum of weights), ``p = f / F`` and the risk is ``E[1 / F_k | f_k]`` under the
negative-binomial model:

* ``method="exact"``: ``r = (p / f) * 2F1(1, 1; f + 1; 1 - p)`` (equal to the integral and the
  closed forms for ``f = 1, 2, 3`` of mu-ARGUS);
* ``method="approx"`` (sdcMicro's ``measure_risk``): the closed forms for ``f = 1`` and ``f = 2``,
  and ``p / (f - q)`` for larger ``f``.

Without weights, or when ``p = 1``, the risk is ``1 / f``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from sdckit._codes import encode_column
from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_real
from sdckit.errors import ColumnError, ParameterError, SdcWarning
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk._frequencies import FrequencyResult, MissingMode, frequency_counts

__all__ = [
    "HouseholdRiskResult",
    "IndividualRiskResult",
    "benedetti_franconi_risk",
    "household_risk",
    "household_risk_of",
    "individual_risk",
    "individual_risk_of",
    "risk_threshold",
]

RiskMethod = Literal["approx", "exact"]


def benedetti_franconi_risk(
    fk: np.ndarray, Fk: np.ndarray, method: RiskMethod = "approx"
) -> np.ndarray:
    """Benedetti-Franconi individual risk for sample frequencies ``fk`` and weight sums ``Fk``.

    Parameters
    ----------
    fk, Fk : array_like
        Sample frequency and estimated population frequency of each key (or record).
    method : {"approx", "exact"}
        ``"exact"`` evaluates ``E[1/F | f]`` with the hypergeometric function; ``"approx"`` is
        sdcMicro's ``measure_risk`` (exact for ``f <= 2``, ``p / (f - q)`` above).

    Returns
    -------
    numpy.ndarray
        Risk in (0, 1] for every element.

    Raises
    ------
    ParameterError
        ``fk`` and ``Fk`` of different shapes, not finite, ``fk`` below 1, or ``Fk`` below
        ``fk`` (a weight sum cannot be smaller than the sample count; weights below 1 give
        that, and :func:`individual_risk` then caps the risk at ``1 / fk`` by passing
        ``max(Fk, fk)``).

    Examples
    --------
    >>> import numpy as np
    >>> r = benedetti_franconi_risk(np.array([1.0, 3.0]), np.array([17.0, 108.0]), "exact")
    >>> np.round(r, 8).tolist()
    [0.17707583, 0.01355297]
    """
    check_choice(method, "method", ("approx", "exact"))
    f, F = _frequencies_checked(fk, Fk)
    p = np.minimum(f / F, 1.0)
    q = 1.0 - p
    risk = np.empty_like(p)
    full = q <= 1e-12
    risk[full] = 1.0 / f[full]
    rest = ~full
    one = rest & (f == 1)
    two = rest & (f == 2)
    # f = 1: (p / q) * log(1 / p); f = 2: (p / q^2) * (p log p + q)
    risk[one] = p[one] * (-np.log(p[one])) / q[one]
    risk[two] = p[two] / q[two] ** 2 * (p[two] * np.log(p[two]) + q[two])
    other = rest & ~one & ~two
    if method == "approx":
        risk[other] = p[other] / (f[other] - q[other])
    else:
        from scipy import special  # only the exact formula needs scipy

        risk[other] = p[other] / f[other] * special.hyp2f1(1.0, 1.0, f[other] + 1.0, q[other])
        bad = other & ~np.isfinite(risk)
        if bad.any():  # scipy's 2F1 fails for large f with q near 1: the integral form
            risk[bad] = [_risk_integral(fi, pi) for fi, pi in zip(f[bad], p[bad], strict=True)]
    return risk


def _risk_integral(f: float, p: float) -> float:
    """``E[1/F | f] = p * int_0^1 y^(f-1) / (p + (1-p) y) dy`` (the negative-binomial model).

    Equal to ``(p / f) * 2F1(1, 1; f + 1; 1 - p)``; used where scipy's hypergeometric function
    returns no number (large ``f`` with ``p`` small, e.g. ``f = 122``, ``p = 0.01``).
    """
    from scipy import integrate

    q = 1.0 - p
    value, _ = integrate.quad(
        lambda y: y ** (f - 1.0) / (p + q * y), 0.0, 1.0, epsabs=0.0, epsrel=1e-13, limit=200
    )
    return float(p * value)


def _frequencies_checked(fk: Any, Fk: Any) -> tuple[np.ndarray, np.ndarray]:
    """``fk`` and ``Fk`` as float arrays, or a ParameterError naming the argument at fault."""
    arrays = []
    for name, value in (("fk", fk), ("Fk", Fk)):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterError(f"The {name!r} argument must be an array of numbers.") from None
        if not np.all(np.isfinite(arr)):
            raise ParameterError(
                f"The {name!r} argument must hold finite numbers; "
                f"{int(np.count_nonzero(~np.isfinite(arr)))} element(s) are missing or infinite."
            )
        arrays.append(arr)
    f, F = arrays
    if f.shape != F.shape:
        raise ParameterError(
            "The 'fk' and 'Fk' arguments must have the same shape (one sample frequency and "
            "one population frequency per key or record)."
        )
    n_low = int(np.count_nonzero(f < 1))
    if n_low:
        raise ParameterError(
            f"The 'fk' argument holds sample frequencies, which are at least 1; {n_low} "
            "element(s) are below 1 (a key combination absent from the sample has no risk)."
        )
    n_below = int(np.count_nonzero(f > F))
    if n_below:
        raise ParameterError(
            f"The 'Fk' argument must be at least 'fk' (a population frequency cannot be below "
            f"the sample frequency); {n_below} element(s) are below it or negative.  With "
            "sampling weights below 1, pass max(Fk, fk), which caps the risk at 1/fk."
        )
    return f, F


def risk_threshold(risk: np.ndarray, target: float) -> float:
    """The individual-risk threshold that keeps the re-identification rate below ``target``.

    mu-ARGUS / sdcMicro (methods.md M2.3): records with risk above the returned value are unsafe;
    capping them at that value keeps ``sum(risk) / n`` below ``target``.  If the file already
    meets the target, the largest risk is returned.  NaN when no threshold reaches the target.

    Examples
    --------
    >>> import numpy as np
    >>> risk_threshold(np.array([0.5, 0.5, 0.1, 0.1]), 0.2)
    0.1
    """
    target = check_real(target, "target", minimum=0.0, maximum=1.0)
    r = np.sort(np.asarray(risk, dtype=np.float64))[::-1]
    n = len(r)
    if n == 0:
        return float("nan")
    er_target = target * n
    total = r.sum()
    if total < er_target:
        return float(r[0])
    # Distinct levels in descending order; for each, m = number of records above it and
    # s = the sum of the risks of the records at or below it.
    levels, first = np.unique(-r, return_index=True)
    levels = -levels
    above_sum = np.concatenate([[0.0], np.cumsum(r)])[first]
    m = first
    s = total - above_sum
    ok = (s + levels * m < er_target) & (m > 0)
    if not ok.any():
        return float("nan")
    return float(levels[np.argmax(ok)])


@dataclass(frozen=True, repr=False)
class IndividualRiskResult:
    """Per-record re-identification risk and the file's global risk.

    Attributes
    ----------
    fk, Fk_hat, risk : numpy.ndarray
        Sample frequency, estimated population frequency and individual risk per record.
    method : str
    expected_reidentifications : float
        Sum of the individual risks (ER).
    global_risk : float
        ER divided by the number of records.
    class_risk : numpy.ndarray or None
        The risk of each equivalence class (indexed by ``frequencies.group``), from which the
        file-level counts are taken.
    """

    fk: np.ndarray
    Fk_hat: np.ndarray
    risk: np.ndarray
    method: str
    frequencies: FrequencyResult
    frame_info: FrameInfo | None = field(default=None, compare=False)
    class_risk: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.risk)

    @cached_property
    def expected_reidentifications(self) -> float:
        """Expected number of re-identifications: the sum of the individual risks."""
        return float(self.risk.sum())

    @property
    def highest_risk(self) -> float:
        """The largest individual risk."""
        if self.class_risk is not None:  # every class has a record: the same maximum
            return float(self.class_risk.max())
        return float(self.risk.max())

    def n_above(self, threshold: float) -> int:
        """Number of records with a risk strictly above ``threshold``."""
        threshold = check_real(threshold, "threshold", minimum=0.0)
        if self.class_risk is not None:
            return self.frequencies.records_in(self.class_risk > threshold)
        return int(np.count_nonzero(self.risk > threshold))

    @property
    def global_risk(self) -> float:
        """Expected re-identification rate (share of records)."""
        return self.expected_reidentifications / self.n_records

    @property
    def global_risk_pct(self) -> float:
        """Expected re-identification rate in percent."""
        return 100.0 * self.global_risk

    def threshold(self, target: float) -> float:
        """Risk threshold meeting a target global risk (see :func:`risk_threshold`)."""
        return risk_threshold(self.risk, target)

    def above(self, threshold: float) -> np.ndarray:
        """Boolean per record: risk strictly above ``threshold``."""
        return self.risk > check_real(threshold, "threshold", minimum=0.0)

    def to_frame(self) -> Any:
        """One row per record: ``fk``, ``Fk_hat``, ``risk``."""
        return records_frame(
            {"fk": self.fk, "Fk_hat": self.Fk_hat, "risk": self.risk}, self.frame_info
        )

    def summary(self) -> Summary:
        """File-level risk figures."""
        freq = self.frequencies
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("sample uniques (fk = 1)", freq.sample_uniques),
        ]
        rows += [
            (f"records violating {k}-anonymity", freq.violations(k).records) for k in (2, 3, 5)
        ]
        rows += [
            ("expected re-identifications", self.expected_reidentifications),
            ("global risk (%)", self.global_risk_pct),
            ("highest individual risk", self.highest_risk),
            ("records with risk > 0.1", self.n_above(0.1)),
        ]
        notes = [
            f"key variables: {', '.join(freq.keys)}; Benedetti-Franconi risk, method "
            f"{self.method!r}; {'weighted' if freq.weighted else 'no weights (census)'}"
        ]
        return Summary("Individual re-identification risk", rows, notes)


def _individual(
    md: Microdata, method: str, missing: MissingMode, alpha: float
) -> IndividualRiskResult:
    check_choice(method, "method", ("approx", "exact"))
    freq = frequency_counts(md, missing=missing, alpha=alpha)
    return individual_risk_of(freq, method)


def individual_risk_of(freq: FrequencyResult, method: str = "approx") -> IndividualRiskResult:
    """Individual risk from frequencies already computed (no second frequency count).

    Parameters
    ----------
    freq : FrequencyResult
        From :func:`~sdckit.risk.frequencies`.
    method : {"approx", "exact"}, default "approx"

    Returns
    -------
    IndividualRiskResult
    """
    check_choice(method, "method", ("approx", "exact"))
    if freq.weighted:
        # fk and Fk_hat are constant within an equivalence class: evaluate once per class
        class_fk, class_Fk = freq.class_fk, freq.class_Fk_hat
        if bool(np.any(class_Fk < class_fk)):
            warnings.warn(
                "Some key combinations have a weight sum below their sample count (weights "
                "below 1); their risk is capped at 1/fk.",
                SdcWarning,
                stacklevel=3,
            )
        per_class = benedetti_franconi_risk(
            class_fk,
            np.maximum(class_Fk, class_fk),  # the cap at 1/fk, explicit
            method,  # type: ignore[arg-type]
        )
        risk = per_class[freq.group]
    else:
        risk = 1.0 / freq.fk
        per_class = 1.0 / freq.class_fk
    return IndividualRiskResult(
        fk=freq.fk,
        Fk_hat=freq.Fk_hat,
        risk=risk,
        method=method,
        frequencies=freq,
        frame_info=freq.frame_info,
        class_risk=per_class,
    )


def individual_risk(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    method: RiskMethod = "approx",
    missing: MissingMode = "wildcard",
    alpha: float = 1.0,
) -> IndividualRiskResult:
    """Individual re-identification risk of every record (Benedetti-Franconi model).

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a Microdata with keys).
    weight : str, optional
        Sampling weight; without weights (a census) the risk is ``1 / fk``.
    method : {"approx", "exact"}, default "approx"
        ``"approx"`` reproduces sdcMicro's ``measure_risk``; ``"exact"`` evaluates the model's
        expectation exactly (slightly lower for ``fk >= 3``).
    missing, alpha
        Treatment of missing key values, as in :func:`~sdckit.risk._frequencies`.

    Returns
    -------
    IndividualRiskResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk import individual_risk
    >>> df = pl.DataFrame({"a": [1, 1, 2], "b": [1, 1, 1], "w": [10.0, 30.0, 17.0]})
    >>> res = individual_risk(df, keys=["a", "b"], weight="w")
    >>> round(res.expected_reidentifications, 6)
    0.265742
    """
    md = as_microdata(data, keys=keys, weight=weight)
    return _individual(md, method, missing, alpha)


@dataclass(frozen=True, repr=False)
class HouseholdRiskResult:
    """Household risk: the probability that at least one member is re-identified.

    ``household_risk[i] = 1 - prod_{j in household(i)} (1 - risk[j])`` (methods.md M2.4).
    """

    individual: IndividualRiskResult
    household_risk: np.ndarray
    household_size: np.ndarray
    n_households: int
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def expected_reidentifications(self) -> float:
        """Expected number of re-identified persons through their households."""
        return float(self.household_risk.sum())

    @property
    def global_risk(self) -> float:
        """Expected re-identification rate (share of persons) at household level."""
        return self.expected_reidentifications / len(self.household_risk)

    @property
    def global_risk_pct(self) -> float:
        """Household-level global risk in percent."""
        return 100.0 * self.global_risk

    def to_frame(self) -> Any:
        """One row per record: ``risk`` (individual) and ``household_risk``."""
        return records_frame(
            {"risk": self.individual.risk, "household_risk": self.household_risk},
            self.frame_info,
        )

    def summary(self) -> Summary:
        """Household-level figures."""
        rows: list[tuple[str, Any]] = [
            ("records", len(self.household_risk)),
            ("households", self.n_households),
            ("expected re-identifications (households)", self.expected_reidentifications),
            ("global household risk (%)", self.global_risk_pct),
            ("highest household risk", float(self.household_risk.max())),
        ]
        return Summary("Household risk", rows)


def household_risk(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    household: str | None = None,
    method: RiskMethod = "approx",
    missing: MissingMode = "wildcard",
    alpha: float = 1.0,
) -> HouseholdRiskResult:
    """Household risk: the chance that at least one member of a household is re-identified.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk import household_risk
    >>> df = pl.DataFrame({"a": [1, 1, 2, 2], "h": [1, 1, 2, 3]})
    >>> household_risk(df, keys=["a"], household="h").household_risk.tolist()
    [0.75, 0.75, 0.5, 0.5]
    """
    md = as_microdata(data, keys=keys, weight=weight, household=household)
    md.require(household=True, what="household_risk")
    return household_risk_of(md, _individual(md, method, missing, alpha))


def household_risk_of(md: Microdata, ind: IndividualRiskResult) -> HouseholdRiskResult:
    """Household risk from individual risks already computed (no second frequency count).

    Parameters
    ----------
    md : Microdata
        The file, with a household id.
    ind : IndividualRiskResult
        The individual risk of ``md``'s records.

    Returns
    -------
    HouseholdRiskResult
    """
    if md.household is None:
        raise ColumnError(
            "household_risk needs a household id; pass household=... when building the data."
        )
    hh = md.frame.get_column(md.household)
    codes, levels = encode_column(hh)
    n_households = len(levels)
    with np.errstate(divide="ignore"):  # a risk of 1 gives log(0) = -inf, then risk 1
        log_safe = np.bincount(
            codes, weights=np.log1p(-np.minimum(ind.risk, 1.0)), minlength=n_households
        )
    risk_h = -np.expm1(log_safe)
    size = np.bincount(codes, minlength=n_households)
    return HouseholdRiskResult(
        individual=ind,
        household_risk=risk_h[codes],
        household_size=size[codes],
        n_households=n_households,
        frame_info=md.frame_info,
    )
