"""The result of the release check on an engine (:func:`sdckit.engines.check_on_engine`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.release import ReleaseCheck, ReleaseFinding, ReleaseTarget

__all__ = ["BOUNDS", "EngineReleaseCheck"]

#: The risk figures a target bounds: bound -> (figure of risk_on_engine, label).
BOUNDS = {
    "max_global_risk_pct": ("global_risk_pct", "global risk (%)"),
    "max_expected_reidentifications": ("expected_reidentifications", "expected re-identifications"),
    "max_individual_risk": ("highest_risk", "highest individual risk"),
    "max_household_risk_pct": ("household_risk_pct", "household risk (%)"),
    "max_household_expected_reidentifications": (
        "household_expected_reidentifications",
        "expected re-identifications through households",
    ),
}


@dataclass(frozen=True, repr=False)
class EngineReleaseCheck:
    """The release check of a file on an engine: recounts, margins, moments and a sample.

    Attributes
    ----------
    engine : str
    n_records : int
    keys : tuple of str
        The key variables of the released file (the risk is counted on them).
    k : int or None
        The k checked.
    k_violations : int
        Released records in a key class of fewer than ``k`` records (missing values as
        wildcards), recounted on every record.
    smallest_class : int or None
    risk : dict
        The figures of :func:`~sdckit.engines.risk_on_engine` on the released file.
    weights : str
        Where the population frequencies of the risk come from.
    target : ReleaseTarget
    target_met : bool
    findings : tuple of ReleaseFinding
        The findings of the recount on every record (k-anonymity, risk bounds).
    margins : polars.DataFrame
        ``variable, value, original, released, difference``: the frequency table of every key
        and stratum in both files (a missing value is the value None).
    changes : polars.DataFrame
        ``variable, changed, suppressed, share_changed, margin_shift``: values changed and
        suppressed per variable (record by record), and the records the margin moved.
    numeric : polars.DataFrame
        Per numeric variable: values, mean and variance in the original and released file.
    correlations : polars.DataFrame
        ``variable_a, variable_b, original, released, difference``: correlations over the
        records where every numeric variable is present.
    sample : ReleaseCheck
        The attack-based check of the sample (no k or risk bound: those are recounted above).
    sample_records : int
    sample_unit : str
        ``"records"`` or ``"households"`` (whole households drawn).
    sample_fraction : float
        The share drawn (1.0: the whole file was read).
    sample_index : numpy.ndarray
        The row index (``__sdckit_row``) of the sampled records, in order.
    roles : dict
        The roles the check was given.
    columns : (tuple of str, tuple of str)
        The columns of the original and of the released file (the row index left out).
    notes : tuple of str
    """

    engine: str
    n_records: int
    keys: tuple[str, ...]
    k: int | None
    k_violations: int
    smallest_class: int | None
    risk: dict[str, Any]
    weights: str
    target: ReleaseTarget
    target_met: bool
    findings: tuple[ReleaseFinding, ...]
    margins: pl.DataFrame
    changes: pl.DataFrame
    numeric: pl.DataFrame
    correlations: pl.DataFrame
    sample: ReleaseCheck
    sample_records: int
    sample_unit: str
    sample_fraction: float
    sample_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    roles: dict[str, Any] = field(default_factory=dict)
    columns: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Whether the file may be released: the recounted target met and nothing found in
        the sample (given back, estimated more closely, identifiers)."""
        return self.target_met and self.k_violations == 0 and self.sample.ok

    @property
    def whole_file(self) -> bool:
        """Whether the attack-based check read every record (the sample was the file)."""
        return self.sample_fraction >= 1.0

    def sample_words(self) -> str:
        """What the sample is, in words."""
        if self.whole_file:
            return f"every record ({self.n_records:,}): the file is smaller than the sample"
        unit = " (whole households)" if self.sample_unit == "households" else ""
        pct = 100.0 * self.sample_records / max(self.n_records, 1)
        return (
            f"a seeded sample of {self.sample_records:,} of {self.n_records:,} records{unit}, "
            f"{pct:.3g} %"
        )

    def sample_notes(self) -> list[str]:
        """What the sample can and cannot show."""
        if self.whole_file:
            return [f"The attacks read {self.sample_words()}."]
        return [
            f"The attacks read {self.sample_words()}; their findings and counts are the sample's.",
            "What a sample shows: a channel that gives back protected values (a released "
            "column, a transformation of it, households) gives them back in the sample as in "
            "the file, so a finding is real; the counts are the sample's, roughly the file's "
            "times the share drawn.",
            "What it cannot show: a channel that gives back only a few values in the whole "
            "file may have none in the sample; the record order is seen with the records "
            "between the sampled ones left out; k-anonymity, the risk, the margins, the "
            "moments and the changed values are not the sample's: they are counted on every "
            "record on the engine.",
        ]

    def figures(self) -> dict[str, Any]:
        """The counts by name (the report and the job read them)."""
        keys = self.changes.filter(pl.col("variable").is_in(list(self.keys)))
        values = max(self.n_records * max(len(self.keys), 1), 1)
        out: dict[str, Any] = dict(self.risk)
        out["smallest_class"] = self.smallest_class
        out["share_keys_changed"] = float(keys.get_column("changed").sum()) / values
        out["key_values_suppressed"] = int(keys.get_column("suppressed").sum())
        out["sample_records"] = self.sample_records
        out.update(
            {f"sample_{n}": v for n, v in self.sample.counts().items() if n != "k_violations"}
        )
        return out

    def to_frame(self) -> pl.DataFrame:
        """One row per finding (as :meth:`ReleaseCheck.to_frame`), with its ``source``:
        ``"every record"`` or ``"sample"``."""
        engine = ReleaseCheck(
            n_records=self.n_records, keys=self.keys, k=self.k, k_violations=self.k_violations,
            smallest_class=self.smallest_class, expected_reidentifications=None,
            global_risk_pct=None, highest_risk=None, household_expected_reidentifications=None,
            household_risk_pct=None, recoverable_values=0, determined_values=0,
            household_values=0, identifiers=(), target_met=self.target_met,
            findings=self.findings,
        )  # fmt: skip
        source = "sample" if not self.whole_file else "every record"
        return pl.concat([
            engine.to_frame().with_columns(pl.lit("every record").alias("source")),
            self.sample.to_frame().with_columns(pl.lit(source).alias("source")),
        ])  # fmt: skip

    def target_lines(self) -> list[str]:
        """One line per bound of the target, with the recounted value."""
        lines = []
        if self.k is not None:
            lines.append(
                f"k-anonymity: smallest class {self.smallest_class} (target {self.k}), "
                f"{self.k_violations} records below it (every record)"
            )
        for name, bound in self.target.bounds.items():
            figure, label = BOUNDS[name]
            value = self.risk.get(figure)
            if value is None:
                lines.append(f"{label}: not applicable (target <= {bound:g})")
            else:
                lines.append(f"{label}: {value:.6g} (target <= {bound:g}; every record)")
        return lines

    def summary(self) -> Summary:
        """The recounted figures and the sample's counts, and what the sample can show."""
        s = self.sample
        rows: list[tuple[str, Any]] = [("records released", self.n_records)]
        if self.k is not None:
            rows.append((f"records violating {self.k}-anonymity", self.k_violations))
        if self.smallest_class is not None:
            rows.append(("smallest key class", self.smallest_class))
        for figure, label in (("global_risk_pct", "global risk (%)"),
                              ("household_risk_pct", "household risk (%)")):  # fmt: skip
            if self.risk.get(figure) is not None:
                rows.append((label, self.risk[figure]))
        figures = self.figures()
        rows += [
            ("share of key values changed (%)", 100.0 * figures["share_keys_changed"]),
            ("key values suppressed", figures["key_values_suppressed"]),
        ]
        tag = "" if self.whole_file else " (sample)"
        rows += [
            ("records read by the attacks", self.sample_records),
            (f"protected values given back by other columns{tag}", s.determined_values),
            (f"protected values given back by the household{tag}", s.household_values),
            (f"perturbed numbers estimated more closely{tag}", s.perturbed_values),
            (f"identifiers released{tag}", len(s.identifiers)),
            ("may be released", self.ok),
        ]
        notes = [
            f"engine {self.engine!r}; k-anonymity, risk ({self.weights}), margins, changed "
            "values and moments counted on every record."
        ]
        notes += self.sample_notes() + list(self.notes)
        notes += [f.how for f in self.findings] + [f"(sample) {f.how}" for f in s.findings[:20]]
        return Summary("Release check on the engine", rows, notes)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        return (
            f"EngineReleaseCheck(ok={self.ok}, engine={self.engine!r}, records={self.n_records}, "
            f"k_violations={self.k_violations}, sample_records={self.sample_records})"
        )
