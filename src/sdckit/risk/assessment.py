"""One risk assessment of a file: the figures every step, report and target read.

:func:`assess_risk` builds the frequency table of the key variables once (from the cached key
codes of the :class:`~sdckit.microdata.Microdata`) and derives from it every frequency-based
measure the workflow shows: ``fk`` / ``Fk_hat``, k-anonymity violations for the k's asked,
individual (Benedetti-Franconi) and global risk, household risk when a household id is given,
and l-diversity when sensitive variables are given.  The result is read by the session after
each step, the risk target of a job, the HTML reports, ``sdckit risk`` and the demo, so none of
them counts frequencies again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int, check_real
from sdckit.microdata import as_microdata
from sdckit.risk._frequencies import FrequencyResult, KAnonymityViolations, frequency_counts
from sdckit.risk.diversity import LDiversityResult, _l_diversity
from sdckit.risk.individual import (
    HouseholdRiskResult,
    IndividualRiskResult,
    household_risk_of,
    individual_risk_of,
)

__all__ = ["RiskAssessment", "assess_risk"]

#: The k's whose violations are counted by default (as sdcMicro's print of the risk).
DEFAULT_KS: tuple[int, ...] = (2, 3, 5)


@dataclass(frozen=True, repr=False)
class RiskAssessment:
    """Frequency-based disclosure risk of a file, computed from one frequency table.

    Attributes
    ----------
    n_records : int
    keys : tuple of str
        The key variables (empty when the file has none: then only ``n_records`` is set).
    ks : tuple of int
        The k's whose violations are counted.
    frequencies : FrequencyResult or None
    individual : IndividualRiskResult or None
    household : HouseholdRiskResult or None
        With a household id.
    diversity : LDiversityResult or None
        With sensitive variables.
    violations : dict of int to KAnonymityViolations
        One entry per k of ``ks``.
    """

    n_records: int
    keys: tuple[str, ...]
    ks: tuple[int, ...]
    frequencies: FrequencyResult | None
    individual: IndividualRiskResult | None
    household: HouseholdRiskResult | None
    diversity: LDiversityResult | None
    violations: Mapping[int, KAnonymityViolations]
    frame_info: FrameInfo | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ file-level figures
    @property
    def has_keys(self) -> bool:
        """Whether key variables were assessed."""
        return self.frequencies is not None

    @property
    def sample_uniques(self) -> int | None:
        """Records whose key combination occurs once (``fk == 1``)."""
        return None if self.frequencies is None else self.frequencies.sample_uniques

    @property
    def smallest_class(self) -> int | None:
        """The k reached: the smallest ``fk`` (rounded down), None without keys."""
        if self.frequencies is None:
            return None
        return int(np.floor(self.frequencies.fk.min()))

    def k_violations(self, k: int) -> int:
        """Records with ``fk < k`` (any k, not only those of ``ks``)."""
        if self.frequencies is None:
            return 0
        if k in self.violations:
            return self.violations[k].records
        return self.frequencies.violations(k).records

    @property
    def expected_reidentifications(self) -> float | None:
        """Sum of the individual risks."""
        return None if self.individual is None else self.individual.expected_reidentifications

    @property
    def global_risk(self) -> float | None:
        """Expected re-identification rate (share of records)."""
        return None if self.individual is None else self.individual.global_risk

    @property
    def global_risk_pct(self) -> float | None:
        """Expected re-identification rate in percent."""
        return None if self.individual is None else self.individual.global_risk_pct

    @property
    def highest_risk(self) -> float | None:
        """Largest individual risk."""
        return None if self.individual is None else self.individual.highest_risk

    @property
    def household_expected_reidentifications(self) -> float | None:
        """Expected re-identified persons through their households."""
        return None if self.household is None else self.household.expected_reidentifications

    @property
    def household_risk_pct(self) -> float | None:
        """Household-level global risk in percent."""
        return None if self.household is None else self.household.global_risk_pct

    @property
    def highest_household_risk(self) -> float | None:
        """Largest household risk."""
        return None if self.household is None else float(self.household.household_risk.max())

    def figures(self) -> dict[str, float | int]:
        """The file-level figures by stable snake_case name (what the history tables show)."""
        out: dict[str, float | int] = {"records": self.n_records}
        if self.frequencies is None or self.individual is None:
            return out
        out["sample_uniques"] = self.frequencies.sample_uniques
        for k in self.ks:
            out[f"k{k}_violations"] = self.violations[k].records
        out["expected_reidentifications"] = self.individual.expected_reidentifications
        out["global_risk_pct"] = self.individual.global_risk_pct
        out["highest_risk"] = self.individual.highest_risk
        if self.household is not None:
            out["household_expected_reidentifications"] = self.household.expected_reidentifications
            out["household_risk_pct"] = self.household.global_risk_pct
        if self.diversity is not None:
            for name, value in self.diversity.minimum().items():
                out[name] = value
        return out

    def to_frame(self) -> Any:
        """One row per record (caller's frame type and index).

        Columns: ``fk``, ``Fk_hat``, ``risk``; ``household_risk`` with a household id; the
        l-diversity columns ``l_distinct_<s>``, ``l_entropy_<s>``, ``l_recursive_<s>`` with
        sensitive variables.
        """
        return records_frame(self.record_columns(), self.frame_info)

    def record_columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`to_frame` as numpy arrays (the result's own arrays, no copy)."""
        cols: dict[str, np.ndarray] = {}
        if self.individual is not None:
            cols["fk"] = self.individual.fk
            cols["Fk_hat"] = self.individual.Fk_hat
            cols["risk"] = self.individual.risk
        if self.household is not None:
            cols["household_risk"] = self.household.household_risk
        if self.diversity is not None:
            for s in self.diversity.sensitive:
                cols[f"l_distinct_{s}"] = self.diversity.distinct[s]
                cols[f"l_entropy_{s}"] = self.diversity.entropy[s]
                cols[f"l_recursive_{s}"] = self.diversity.recursive[s]
            if self.diversity.multi_entropy is not None:
                cols["l_entropy_multi"] = self.diversity.multi_entropy
            if self.diversity.multi_recursive is not None:
                cols["l_recursive_multi"] = self.diversity.multi_recursive
        return cols

    def rows(self) -> list[tuple[str, Any]]:
        """Labelled file-level figures (the rows of :meth:`summary`)."""
        rows: list[tuple[str, Any]] = [("records", self.n_records)]
        freq, ind = self.frequencies, self.individual
        if freq is None or ind is None:
            return rows
        rows += [
            ("equivalence classes", freq.n_classes),
            ("sample uniques (fk = 1)", freq.sample_uniques),
        ]
        rows += [(f"records violating {k}-anonymity", self.violations[k].records) for k in self.ks]
        rows += [
            ("expected re-identifications", ind.expected_reidentifications),
            ("global risk (%)", ind.global_risk_pct),
            ("highest individual risk", ind.highest_risk),
            ("records with risk > 0.1", ind.n_above(0.1)),
        ]
        if self.household is not None:
            hh = self.household
            rows += [
                ("households", hh.n_households),
                ("expected re-identifications (households)", hh.expected_reidentifications),
                ("global household risk (%)", hh.global_risk_pct),
                ("highest household risk", float(hh.household_risk.max())),
            ]
        if self.diversity is not None:
            for s in self.diversity.sensitive:
                low = int(np.count_nonzero(self.diversity.distinct[s] < 2))
                rows.append((f"records with distinct l < 2 on {s}", low))
        return rows

    def summary(self) -> Summary:
        """The file-level figures as a printable summary."""
        notes = []
        if self.frequencies is not None and self.individual is not None:
            freq = self.frequencies
            notes.append(
                f"key variables: {', '.join(self.keys)}; missing values: {freq.missing}; "
                f"Benedetti-Franconi risk, method {self.individual.method!r}; "
                f"{'weighted' if freq.weighted else 'no weights (census)'}"
            )
        return Summary("Risk assessment", self.rows(), notes)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        k = self.smallest_class
        return (
            f"RiskAssessment(records={self.n_records}, keys={list(self.keys)}, smallest_class={k})"
        )


def assess_risk(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    household: str | None = None,
    sensitive: Any = None,
    ks: Sequence[int] = DEFAULT_KS,
    method: str = "approx",
    missing: str = "wildcard",
    alpha: float = 1.0,
    c: float = 2.0,
    include_household: bool = True,
    include_diversity: bool = True,
) -> RiskAssessment:
    """Every frequency-based risk figure of a file, from one frequency table.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys, weight, household, sensitive
        Column roles (as in :class:`~sdckit.Microdata`) when ``data`` is a frame.
    ks : sequence of int, default (2, 3, 5)
        The k's whose k-anonymity violations are counted.
    method : {"approx", "exact"}, default "approx"
        Benedetti-Franconi risk formula (see :func:`~sdckit.risk.individual_risk`).
    missing : {"wildcard", "category"}, default "wildcard"
        Missing key values match any value, or are a category of their own.
    alpha : float, default 1.0
        sdcMicro's weight of wildcard matches (see :func:`~sdckit.risk.frequencies`).
    c : float, default 2.0
        Constant of recursive (c, l)-diversity.
    include_household, include_diversity : bool, default True
        Compute household risk (when the file has a household id) and l-diversity (when it
        has sensitive variables).

    Returns
    -------
    RiskAssessment

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk import assess_risk
    >>> df = pl.DataFrame({"a": [1, 1, 2, 2, 2], "h": [1, 1, 2, 3, 3]})
    >>> res = assess_risk(df, keys=["a"], household="h")
    >>> res.smallest_class, res.k_violations(3), round(res.expected_reidentifications, 6)
    (2, 2, 2.0)
    >>> res.household.household_risk.round(4).tolist()
    [0.75, 0.75, 0.3333, 0.5556, 0.5556]
    """
    md = as_microdata(data, keys=keys, weight=weight, household=household, sensitive=sensitive)
    check_choice(method, "method", ("approx", "exact"))
    check_choice(missing, "missing", ("wildcard", "category"))
    check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    check_real(c, "c", minimum=0.0, min_inclusive=False)
    ks_tuple = tuple(sorted({check_int(k, "ks", minimum=1) for k in ks}))
    if not md.keys:
        return RiskAssessment(
            n_records=md.n_records,
            keys=(),
            ks=ks_tuple,
            frequencies=None,
            individual=None,
            household=None,
            diversity=None,
            violations={},
            frame_info=md.frame_info,
        )
    freq = frequency_counts(md, missing=missing, alpha=alpha)  # type: ignore[arg-type]
    ind = individual_risk_of(freq, method)
    hh = household_risk_of(md, ind) if include_household and md.household else None
    div = None
    if include_diversity and md.sensitive:
        div = _l_diversity(md, float(c), (freq.group, freq.n_classes))
    return RiskAssessment(
        n_records=md.n_records,
        keys=md.keys,
        ks=ks_tuple,
        frequencies=freq,
        individual=ind,
        household=hh,
        diversity=div,
        violations={k: freq.violations(k) for k in ks_tuple},
        frame_info=md.frame_info,
    )
