"""Disclosure measures of synthetic data (synthpop 1.9's ``disclosure``, ``multi.disclosure``).

An intruder knows the key variables (quasi-identifiers) of people in the original file and
looks them up in the synthetic file (Raab, Nowok and Dibben, "Practical privacy metrics for
synthetic data", arXiv 2406.16826; the synthpop vignette *disclosure*).  All measures are
percentages of the original records (``Dsyn``, ``UiS`` and ``CAPs``: of the synthetic ones):

* identity: ``UiO`` unique in the original, ``UiS`` unique in the synthetic file, ``UiOiS``
  unique in the original and present in the synthetic file, ``repU`` replicated uniques
  (unique in both);
* attribute, for one target variable: ``Dorig`` disclosive in the original (every record with
  its keys has its target value), ``Dsyn`` the same in the synthetic file, ``iS`` keys present
  in the synthetic file, ``DiS`` disclosive in the synthetic file, ``DiSCO`` disclosive in the
  synthetic file *and correct* for the original record, ``DiSDiO`` that and disclosive in the
  original; ``max_denom`` / ``mean_denom`` the largest and mean original count of a DiSCO cell;
* correct attribution probabilities: ``baseCAPd`` (from the target's distribution alone),
  ``CAPd`` (original), ``CAPs`` (synthetic file as if real), ``DCAP`` (synthetic proportions
  applied to the original records, synthpop's ``DCAP``, over ``N_d``) and ``TCAP`` (the DiSCO
  records over the original records whose keys occur in the synthetic file, as synthpop 1.9-3
  computes it);
* from the synthpop vignette (Table 1, Appendix 2), not in ``disclosure()``'s output:
  ``DCAPalt`` and ``TCAPalt`` (DCAP's and DiSCO's numerators over the synthetic records whose
  keys occur in the original; they can pass 100 when the files differ in size) and
  ``TCAP_DiS`` (DiSCO over DiS: the TCAP of Little et al. 2022, 2025, which the vignette's
  formula gives and its code does not).

synthpop recommends ``repU`` (against ``UiO``) and ``DiSCO`` (against ``Dorig``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_columns_exist, check_int, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import as_microdata
from sdckit.utility._disclosure_codes import VariableCodes, encode_keys, encode_variable
from sdckit.utility._disclosure_tables import (
    EXCLUSION_REASONS,
    MEASURES,
    TABLES,
    Options,
    measure_copy,
)

__all__ = ["SyntheticDisclosureResult", "synthetic_disclosure"]

#: multi.disclosure's pairs of measures (original, synthetic) for the summary table.
_ATTRIBUTE_PAIRS = {"DiSCO": "Dorig", "DiSDiO": "Dorig", "DCAP": "CAPd"}
_IDENTITY = ("repU", "UiOiS")


@dataclass(frozen=True, repr=False, eq=False)  # (frames: no element-wise ==)
class SyntheticDisclosureResult:
    """Disclosure measures of synthetic copies against their original file.

    Attributes
    ----------
    keys : tuple of str
        The key variables (quasi-identifiers).
    targets : tuple of str
        The target variables of the attribute measures.
    n_original : int
        Records of the original file (``N_d``).
    n_synthetic : tuple of int
        Records of each synthetic copy (``N_s``).
    measures : polars.DataFrame
        One row per target and copy: ``target``, ``copy`` (1, 2, ...) and the measures
        ``UiO, UiS, UiOiS, repU, Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO, max_denom, mean_denom,
        baseCAPd, CAPd, CAPs, DCAP, TCAP, DCAPalt, TCAPalt, TCAP_DiS`` (percentages but the
        two denominators).
    checks_1way : polars.DataFrame
        The target levels that make up most of the DiSCO records (over ``thresh_1way``): one
        row per target and copy flagged.
    checks_2way : polars.DataFrame
        The (target level, key level) pairs behind large DiSCO cells (over ``thresh_2way``).
    exclusions : polars.DataFrame
        Records excluded from each table, per reason (synthpop's ``Nexclusions``).
    """

    keys: tuple[str, ...]
    targets: tuple[str, ...]
    n_original: int
    n_synthetic: tuple[int, ...]
    measures: pl.DataFrame
    checks_1way: pl.DataFrame
    checks_2way: pl.DataFrame
    exclusions: pl.DataFrame

    @property
    def copies(self) -> int:
        """Number of synthetic copies (``m``)."""
        return len(self.n_synthetic)

    def to_frame(self) -> pl.DataFrame:
        """The measures: one row per target and synthetic copy."""
        return self.measures

    def mean(self, measure: str, target: str | None = None) -> float:
        """A measure averaged over the copies (of the first target unless one is named)."""
        if measure not in MEASURES:
            raise ParameterError(
                f"Unknown disclosure measure {measure!r}; choose from {', '.join(MEASURES)}."
            )
        name = self.targets[0] if target is None else target
        if name not in self.targets:
            raise ColumnError(f"The variable {name!r} is not one of the targets.")
        rows = self.measures.filter(pl.col("target") == name)
        return float(np.mean(rows.get_column(measure).to_numpy()))

    def averages(self, attribute: str = "DiSCO", identity: str = "repU") -> pl.DataFrame:
        """multi.disclosure's table: per target, the measures averaged over the copies.

        Columns ``target``, ``UiO`` and the synthetic identity measure, the original and the
        synthetic attribute measure (``Dorig``/``DiSCO`` by default, ``Dorig``/``DiSDiO``, or
        ``CAPd``/``DCAP``), the flagged 1-way level and the number of flagged 2-way pairs
        (distinct over the copies); ordered by the synthetic attribute measure, as synthpop.
        """
        if attribute not in _ATTRIBUTE_PAIRS:
            raise ParameterError(
                f"The 'attribute' parameter must be one of {', '.join(_ATTRIBUTE_PAIRS)}."
            )
        if identity not in _IDENTITY:
            raise ParameterError(f"The 'identity' parameter must be one of {', '.join(_IDENTITY)}.")
        orig = _ATTRIBUTE_PAIRS[attribute]
        table = self.measures.group_by("target", maintain_order=True).agg(
            pl.col("UiO").mean(),
            pl.col(identity).mean(),
            pl.col(orig).mean(),
            pl.col(attribute).mean(),
        )
        check1 = self.checks_1way.group_by("target").agg(
            pl.col("level").first().alias("check_1way")
        )
        pairs = self.checks_2way.unique(["target", "key", "key_level", "target_level"])
        check2 = pairs.group_by("target").agg(pl.len().cast(pl.Int64).alias("pairs_2way"))
        return (
            table.join(check1, on="target", how="left")
            .join(check2, on="target", how="left")
            .with_columns(pl.col("pairs_2way").fill_null(0))
            .sort(attribute, maintain_order=True)
        )

    def summary(self) -> Summary:
        """The recommended measures (repU against UiO, DiSCO against Dorig), averaged."""
        first = self.targets[0]
        rows: list[tuple[str, Any]] = [
            ("key variables", ", ".join(self.keys)),
            ("original records", self.n_original),
            ("synthetic copies", self.copies),
            ("unique in the original, UiO (%)", self.mean("UiO", first)),
            ("replicated uniques, repU (%)", self.mean("repU", first)),
        ]
        for t in self.targets:
            rows.append((f"{t}: disclosive in the original, Dorig (%)", self.mean("Dorig", t)))
            rows.append(
                (f"{t}: disclosive in synthetic, correct, DiSCO (%)", self.mean("DiSCO", t))
            )
        notes = []
        if self.copies > 1:
            notes.append(f"Averages over {self.copies} synthetic copies.")
        flagged = sorted(set(self.checks_1way.get_column("target").to_list()))
        if flagged:
            notes.append(
                "1-way check: one target level makes up most disclosive records for "
                + ", ".join(flagged)
                + " (consider not_target_levels)."
            )
        flagged2 = sorted(set(self.checks_2way.get_column("target").to_list()))
        if flagged2:
            notes.append(
                "2-way check: key-target pairs behind large disclosive groups for "
                + ", ".join(flagged2)
                + " (see checks_2way; consider exclude)."
            )
        return Summary("Disclosure measures of the synthetic data", rows, notes)

    def __repr__(self) -> str:
        return (
            f"SyntheticDisclosureResult(keys={list(self.keys)}, targets={list(self.targets)}, "
            f"copies={self.copies}, repU={self.mean('repU'):.4g})"
        )


def _frames(synthetic: Any) -> list[pl.DataFrame]:
    if isinstance(synthetic, list | tuple):
        if not synthetic:
            raise ParameterError(
                "The 'synthetic' parameter is an empty list; give at least one copy."
            )
        return [as_microdata(s).frame for s in synthetic]
    return [as_microdata(synthetic).frame]


def _per_variable(value: Any, names: Sequence[str], param: str, default: Any) -> dict[str, Any]:
    """A value for every variable from one value or a mapping by name."""
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ParameterError(
                f"The {param!r} parameter names {unknown[0]!r}, which is not one of the "
                f"variables it applies to ({', '.join(names)})."
            )
        return {n: value.get(n, default) for n in names}
    return dict.fromkeys(names, default if value is None else value)


def _ngroups(value: Any, names: Sequence[str], param: str, frame: pl.DataFrame) -> dict[str, int]:
    """Groups per variable.  One number applies to the numeric variables only (synthpop leaves
    the others as they are); a mapping must name numeric variables."""
    per = _per_variable(value, names, param, 0)
    per = {n: 0 if v is None or v == 0 else check_int(v, param, minimum=2) for n, v in per.items()}
    if not isinstance(value, Mapping):
        per = {n: (v if frame.schema[n].is_numeric() else 0) for n, v in per.items()}
    return per


def _thresholds(value: Sequence[float], param: str) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ParameterError(
            f"The {param!r} parameter must be two numbers (a count and a percentage)."
        ) from None
    return a, b


def _level_codes(var: VariableCodes, levels: Any, param: str) -> tuple[int, ...]:
    values = [levels] if levels is None or isinstance(levels, str | int | float) else list(levels)
    codes = []
    for v in values:
        c = var.code_of(v)
        if c < 0:
            raise ParameterError(
                f"A level given in {param!r} is not a level of {var.name!r}; give levels as "
                "they appear in the data (None for missing values)."
            )
        codes.append(c)
    return tuple(codes)


def synthetic_disclosure(
    original: Any,
    synthetic: Any,
    keys: Sequence[str],
    targets: str | Sequence[str] | None = None,
    *,
    denom_lim: int = 5,
    exclude_over_denom_lim: bool = False,
    not_target_levels: Mapping[str, Any] | None = None,
    use_targets_na: bool | Mapping[str, bool] = True,
    use_keys_na: bool | Mapping[str, bool] = True,
    exclude: Mapping[str, Sequence[tuple[str, Any, Any]]] | None = None,
    ngroups_targets: int | Mapping[str, int] | None = None,
    ngroups_keys: int | Mapping[str, int] | None = None,
    missing_codes: Mapping[str, Sequence[float]] | None = None,
    thresh_1way: Sequence[float] = (50, 90),
    thresh_2way: Sequence[float] = (4, 80),
) -> SyntheticDisclosureResult:
    """Identity and attribute disclosure measures of synthetic data (synthpop 1.9).

    Parameters
    ----------
    original : DataFrame or Microdata
        The original file.
    synthetic : DataFrame, Microdata, or a list of them
        One synthetic copy, or ``m`` copies from the same original (measures per copy; the
        summary and :meth:`~SyntheticDisclosureResult.averages` average them, as synthpop).
    keys : list of str
        Key variables (quasi-identifiers) known to an intruder.
    targets : str or list of str, optional
        Target variables of the attribute measures (default: every variable of the original
        file, present in the synthetic file, that is not a key: ``multi.disclosure``).
    denom_lim : int, default 5
        With ``exclude_over_denom_lim``, table cells of more records are excluded.
    exclude_over_denom_lim : bool, default False
    not_target_levels : dict, optional
        ``{target: level or [levels]}``: records with these target levels are excluded
        (synthpop's ``not.targetlev``, e.g. a level flagged by the 1-way check).
    use_targets_na, use_keys_na : bool or dict, default True
        False (for all, or by variable name) excludes the records whose target (key) is missing.
    exclude : dict, optional
        ``{target: [(key, key_level, target_level), ...]}``: key-target pairs excluded
        (synthpop's ``exclude.keys``, ``exclude.keylevs``, ``exclude.targetlevs``).
    ngroups_targets, ngroups_keys : int or dict, optional
        Group numeric variables into this many quantile groups of the original and synthetic
        values together (synthpop's ``ngroups_target`` / ``ngroups_keys``): one number for
        every numeric variable, or ``{variable: groups}``.  Without it a numeric variable is
        used value by value.
    missing_codes : dict, optional
        ``{variable: [codes]}``: special values of numeric variables kept as levels of their
        own when grouping (synthpop's ``cont.na``, e.g. ``{"income": [-8]}``).
    thresh_1way, thresh_2way : pair of numbers, default (50, 90) and (4, 80)
        Thresholds of the checks for disclosure coming from a dominant target level (1-way)
        or a strong key-target relation (2-way).

    Returns
    -------
    SyntheticDisclosureResult

    Notes
    -----
    Missing values are a level of their own.  Percentages are of all records of a file
    (``N_d`` or ``N_s``) even when some are excluded, as in synthpop.  Differences from
    synthpop 1.9-3, where its code does not do what its documentation says: ``use_keys_na``
    is matched to the keys by name; ``averages`` averages ``repU`` over all copies (synthpop
    takes the first), pairs ``DiSDiO`` with ``Dorig`` (synthpop reads a column that does not
    exist) and counts the flagged 2-way pairs (synthpop reports 1); with a single key, a key
    level counts as present in the synthetic file only where it has records (synthpop also
    counts the empty levels of a factor, in ``UiOiS``).  R's ``synorig.compare`` (type repairs
    of the two files) is not done: give both files the same variables and types.

    Examples
    --------
    >>> import polars as pl
    >>> o = pl.DataFrame({"sex": [1, 1, 2, 2], "age": [1, 2, 1, 1], "ill": [0, 1, 0, 1]})
    >>> s = pl.DataFrame({"sex": [1, 1, 2, 2], "age": [1, 2, 2, 1], "ill": [0, 1, 1, 0]})
    >>> res = synthetic_disclosure(o, s, keys=["sex", "age"], targets="ill")
    >>> res.mean("UiO"), res.mean("repU"), res.mean("Dorig"), res.mean("DiSCO")
    (50.0, 50.0, 50.0, 75.0)
    """
    left = as_microdata(original).frame
    copies = _frames(synthetic)
    key_cols = list(column_list(keys, "keys"))
    if not key_cols:
        raise ColumnError("The disclosure measures need key variables: pass keys=[...].")
    check_columns_exist(key_cols, list(left.columns), "key (original file)")
    if targets is None:
        target_cols = [c for c in left.columns if c not in key_cols and c in copies[0].columns]
    else:
        target_cols = list(column_list(targets, "targets"))
    if not target_cols:
        raise ColumnError("No target variables: pass targets=[...] (variables that are not keys).")
    both = [c for c in target_cols if c in key_cols]
    if both:
        raise ParameterError(
            f"The variable {both[0]!r} is both a key and a target; drop it from one."
        )
    check_columns_exist(target_cols, list(left.columns), "target (original file)")
    for frame in copies:
        check_columns_exist([*key_cols, *target_cols], list(frame.columns), "synthetic file")
    if left.height == 0:
        raise DataError("The original file has no records.")
    denom = check_int(denom_lim, "denom_lim", minimum=1)
    t1, t2 = _thresholds(thresh_1way, "thresh_1way"), _thresholds(thresh_2way, "thresh_2way")
    codes_na = dict(missing_codes or {})
    check_columns_exist(list(codes_na), list(left.columns), "missing_codes")
    ng_keys = _ngroups(ngroups_keys, key_cols, "ngroups_keys", left)
    ng_targets = _ngroups(ngroups_targets, target_cols, "ngroups_targets", left)
    keys_na = _per_variable(use_keys_na, key_cols, "use_keys_na", True)
    targets_na = _per_variable(use_targets_na, target_cols, "use_targets_na", True)
    not_levels = _per_variable(not_target_levels or {}, target_cols, "not_target_levels", None)
    excluded = _per_variable(exclude or {}, target_cols, "exclude", ())

    def encode(name: str, ngroups: int) -> VariableCodes:
        parts = [left.get_column(name), *(f.get_column(name) for f in copies)]
        return encode_variable(name, parts, ngroups, tuple(codes_na.get(name, ())))

    key_vars = [encode(k, ng_keys[k]) for k in key_cols]
    key_ids, key_levels = encode_keys(key_vars)
    missing_key = np.array([v.n_levels - 1 if v.has_missing else -1 for v in key_vars])
    rows: list[dict[str, Any]] = []
    rows1: list[dict[str, Any]] = []
    rows2: list[dict[str, Any]] = []
    rows_ex: list[dict[str, Any]] = []
    for target in target_cols:
        tv = encode(target, ng_targets[target])
        triples = []
        for key, key_level, target_level in excluded[target]:
            if key not in key_cols:
                raise ParameterError(f"The 'exclude' parameter names {key!r}, which is not a key.")
            j = key_cols.index(key)
            triples += [
                (j, kc, tc)
                for kc in _level_codes(key_vars[j], [key_level], "exclude")
                for tc in _level_codes(tv, [target_level], "exclude")
            ]
        not_codes = (
            ()
            if not_levels[target] is None
            else _level_codes(tv, not_levels[target], "not_target_levels")
        )
        opt = Options(
            denom_lim=denom,
            exclude_over_denom_lim=bool(exclude_over_denom_lim),
            not_target_codes=not_codes,
            use_target_na=bool(targets_na[target]),
            use_keys_na=tuple(bool(keys_na[k]) for k in key_cols),
            exclude=tuple(triples),
            thresh_1way=t1,
            thresh_2way=t2,
        )
        t_missing = tv.n_levels - 1 if tv.has_missing else -1
        for c in range(len(copies)):
            m, check1, check2, counts = measure_copy(
                tv.codes[0], tv.codes[c + 1], tv.n_levels, t_missing,
                key_ids[0], key_ids[c + 1], key_levels, missing_key, opt,
            )  # fmt: skip
            rows.append({"target": target, "copy": c + 1, **m})
            if check1 is not None:
                rows1.append(
                    {"target": target, "copy": c + 1, **check1,
                     "level": tv.label(check1["level"])}
                )  # fmt: skip
            for r in check2:
                rows2.append(
                    {"target": target, "copy": c + 1, **r, "key": key_cols[r["key"]],
                     "key_level": key_vars[r["key"]].label(r["key_level"]),
                     "target_level": tv.label(r["target_level"])}
                )  # fmt: skip
            for i, table in enumerate(TABLES):
                rows_ex.append(
                    {"target": target, "copy": c + 1, "table": table,
                     **dict(zip(EXCLUSION_REASONS, counts[i].tolist(), strict=True))}
                )  # fmt: skip
    return SyntheticDisclosureResult(
        keys=tuple(key_cols),
        targets=tuple(target_cols),
        n_original=left.height,
        n_synthetic=tuple(f.height for f in copies),
        measures=pl.DataFrame(rows, schema=_MEASURE_SCHEMA),
        checks_1way=pl.DataFrame(rows1, schema=_CHECK1_SCHEMA),
        checks_2way=pl.DataFrame(rows2, schema=_CHECK2_SCHEMA),
        exclusions=pl.DataFrame(rows_ex, schema=_EXCLUSION_SCHEMA),
    )


_MEASURE_SCHEMA = {"target": pl.String, "copy": pl.Int64, **dict.fromkeys(MEASURES, pl.Float64)}
_CHECK1_SCHEMA = {
    "target": pl.String, "copy": pl.Int64, "level": pl.String, "all": pl.Int64,
    "pct_level_all": pl.Float64, "total_disclosive": pl.Int64, "n_level_disclosive": pl.Int64,
    "pct_level_disclosive": pl.Float64,
}  # fmt: skip
_CHECK2_SCHEMA = {
    "target": pl.String, "copy": pl.Int64, "key": pl.String, "key_level": pl.String,
    "target_level": pl.String, "n_pairs": pl.Int64, "key_target_total": pl.Int64,
    "key_total": pl.Int64, "pct_target_key_level": pl.Float64,
}  # fmt: skip
_EXCLUSION_SCHEMA = {
    "target": pl.String, "copy": pl.Int64, "table": pl.String,
    **dict.fromkeys(EXCLUSION_REASONS, pl.Int64),
}  # fmt: skip
