"""The independent release check: read the released file as an attacker would.

The check compares the file that is about to leave the building with the original, using every
released column, and counts

(a) **k-anonymity violations** on the key variables together with the linked variables finer
    than their key (a district linked to a region; a missing value matches any value), and the
    risk measures of the target (Benedetti-Franconi individual risk, global risk, household
    risk), recomputed from the file;
(b) **key values that another released column gives back**: a suppressed, recoded or perturbed
    key value (or linked or household-level value) that a released column determines, either
    through a dependency that holds in the whole original file (a classification: district
    gives region, exact age gives the age group) or through the released records that share
    the record's value of a categorical column and all show the same, true value (at least
    ten of them: young children give back a suppressed education "none");
(c) **household values that come back from the household**: a value of a variable constant
    within households (declared household-level or found so in the original) that another
    member shows, found through a released household id or through a released column that
    identifies households (a household income, an equivalised household size); and a household
    size that counting the members gives back;
(d) **direct identifiers present**: declared identifiers, and columns nobody declared whose
    every value is different (record identifiers).

It is written with polars and numpy only and shares no code with the methods it checks (nor
with :mod:`sdckit.risk`), so an error in a method is not repeated by its check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import to_polars
from sdckit._results import Summary
from sdckit.errors import ColumnError, DataError

__all__ = ["ReleaseCheck", "ReleaseFinding", "ReleaseTarget", "check_release"]

#: A column determines a variable structurally when it has at most this share of distinct
#: values per record (on average at least two records per value: a classification, not an id).
COARSE_SHARE = 0.5
#: A column identifies households when it is constant within households and takes at least
#: this share of distinct values per household.
LINKER_SHARE = 0.5
#: The released records sharing a value of a categorical column give a protected value back
#: when at least this many of them show it and none shows another (smaller groups agree by
#: chance too often to be evidence).
MIN_WITNESSES = 10
#: Columns with more distinct values than this are not read as categories by the witness rule
#: (they are identifiers or measurements; the household rules and the structural rule still
#: read them).
MAX_CATEGORIES = 1000


@dataclass(frozen=True)
class ReleaseTarget:
    """The bounds a released file must meet (those given are checked)."""

    k: int | None = None
    max_global_risk_pct: float | None = None
    max_expected_reidentifications: float | None = None
    max_individual_risk: float | None = None
    max_household_risk_pct: float | None = None
    max_household_expected_reidentifications: float | None = None


@dataclass(frozen=True)
class ReleaseFinding:
    """One way the released file gives back protected values (or breaks the target).

    Attributes
    ----------
    check : str
        ``"k_anonymity"``, ``"risk"``, ``"determined"``, ``"household"`` or ``"identifier"``.
    column : str
        The released column through which it happens (for k-anonymity: the keys).
    target : str
        The variable whose values come back (or the measure).
    count : float
        Number of values (records, cells) concerned, or the measure's value.
    how : str
        In words.
    """

    check: str
    column: str
    target: str
    count: float
    how: str


@dataclass(frozen=True, repr=False)
class ReleaseCheck:
    """What an attacker can read from a released file, counted.

    Attributes
    ----------
    n_records : int
    keys : tuple of str
        The key variables and linked variables checked for k-anonymity.
    k : int or None
    k_violations : int
        Records with ``fk < k`` in the released file (0 when no k is asked).
    smallest_class : int or None
    expected_reidentifications, global_risk_pct, highest_risk : float or None
        Benedetti-Franconi risk of the released file (approximation of sdcMicro).
    household_expected_reidentifications, household_risk_pct : float or None
    recoverable_values : int
        Protected values that released columns give back, (b) and (c) together (each value
        counted once).
    determined_values : int
        Of them, through another column (b).
    household_values : int
        Of them, through the household (c).
    identifiers : tuple of str
        Direct identifiers and record-identifier-like columns in the released file (d).
    target_met : bool
        Every bound of the target holds (True when no target is given).
    findings : tuple of ReleaseFinding
    """

    n_records: int
    keys: tuple[str, ...]
    k: int | None
    k_violations: int
    smallest_class: int | None
    expected_reidentifications: float | None
    global_risk_pct: float | None
    highest_risk: float | None
    household_expected_reidentifications: float | None
    household_risk_pct: float | None
    recoverable_values: int
    determined_values: int
    household_values: int
    identifiers: tuple[str, ...]
    target_met: bool
    findings: tuple[ReleaseFinding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Whether the file may be released: target met, nothing recoverable, no identifier."""
        return (
            self.target_met
            and self.k_violations == 0
            and self.recoverable_values == 0
            and not self.identifiers
        )

    def counts(self) -> dict[str, Any]:
        """The counts by name (what the reports show)."""
        return {
            "k_violations": self.k_violations,
            "recoverable_values": self.recoverable_values,
            "determined_values": self.determined_values,
            "household_values": self.household_values,
            "identifiers": len(self.identifiers),
        }

    def to_frame(self) -> pl.DataFrame:
        """One row per finding: ``check``, ``column``, ``target``, ``count``, ``how``."""
        schema = {
            "check": pl.String,
            "column": pl.String,
            "target": pl.String,
            "count": pl.Float64,
            "how": pl.String,
        }
        rows = [
            {"check": f.check, "column": f.column, "target": f.target, "count": float(f.count),
             "how": f.how}
            for f in self.findings
        ]  # fmt: skip
        return pl.DataFrame(rows, schema=schema)

    def first_problem(self) -> str | None:
        """The first finding in one line (None when the file may be released)."""
        if self.ok:
            return None
        for f in self.findings:
            return f.how
        return "the release target is not met"

    def summary(self) -> Summary:
        """The counts as a printable summary."""
        rows: list[tuple[str, Any]] = [("records released", self.n_records)]
        if self.k is not None:
            rows.append((f"records violating {self.k}-anonymity", self.k_violations))
        if self.smallest_class is not None:
            rows.append(("smallest key class", self.smallest_class))
        if self.global_risk_pct is not None:
            rows.append(("global risk (%)", self.global_risk_pct))
        if self.household_expected_reidentifications is not None:
            rows.append(
                ("expected re-identifications (households)",
                 self.household_expected_reidentifications)
            )  # fmt: skip
        rows += [
            ("protected values given back by another column", self.determined_values),
            ("protected values given back by the household", self.household_values),
            ("direct identifiers released", len(self.identifiers)),
            ("may be released", self.ok),
        ]
        notes = [f.how for f in self.findings[:20]]
        return Summary("Release check", rows, notes)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __repr__(self) -> str:
        return (
            f"ReleaseCheck(ok={self.ok}, k_violations={self.k_violations}, "
            f"recoverable_values={self.recoverable_values}, identifiers={list(self.identifiers)})"
        )


# ------------------------------------------------------------------------------ helpers
def _is_missing(s: pl.Series) -> np.ndarray:
    if s.dtype.is_float():
        return s.is_null().to_numpy() | s.is_nan().fill_null(False).to_numpy()
    return s.is_null().to_numpy()


def _as_text(s: pl.Series) -> pl.Series:
    """Values as text for comparisons across types (``7`` and ``7.0`` compare equal)."""
    if s.dtype.is_float():
        s = s.fill_nan(None)
        whole = (s.drop_nulls() == s.drop_nulls().round(0)).all()
        if whole:
            s = s.cast(pl.Int64, strict=False)
    return s.cast(pl.String)


def _codes(frame: pl.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Integer codes per column (missing = -1), computed here (not by sdckit's kernel)."""
    out = np.empty((frame.height, len(columns)), dtype=np.int64)
    for j, col in enumerate(columns):
        text = _as_text(frame.get_column(col))
        ids = text.rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1
        out[:, j] = ids
    return out


def _wildcard_counts(codes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fk and Fk with missing values matching any value, by joins of pattern groups."""
    n, m = codes.shape
    if m == 0:
        return np.full(n, float(n)), np.full(n, float(weights.sum()))
    missing = codes < 0
    pattern = (missing * (1 << np.arange(m))).sum(axis=1)
    cols = [f"c{j}" for j in range(m)]
    base = pl.DataFrame(
        {**{c: codes[:, j] for j, c in enumerate(cols)}, "p": pattern, "w": weights}
    )
    groups = base.group_by(["p", *cols]).agg(pl.len().alias("n"), pl.col("w").sum().alias("wsum"))
    groups = groups.with_row_index("g")
    patterns = sorted(set(groups.get_column("p").to_list()))
    fk_g = np.zeros(groups.height)
    fw_g = np.zeros(groups.height)
    by_pattern = {p: groups.filter(pl.col("p") == p) for p in patterns}
    for p in patterns:
        left = by_pattern[p]
        unions: dict[int, list[pl.DataFrame]] = {}
        for q in patterns:
            unions.setdefault(p | q, []).append(by_pattern[q])
        lid = left.get_column("g").to_numpy()
        for union, parts in unions.items():
            right = pl.concat(parts)
            on = [cols[j] for j in range(m) if not (union >> j) & 1]
            if not on:
                fk_g[lid] += float(right.get_column("n").sum())
                fw_g[lid] += float(right.get_column("wsum").sum())
                continue
            agg = right.group_by(on).agg(
                pl.col("n").sum().alias("rn"), pl.col("wsum").sum().alias("rw")
            )
            joined = left.select(["g", *on]).join(agg, on=on, how="left")
            gid = joined.get_column("g").to_numpy()
            fk_g[gid] += joined.get_column("rn").fill_null(0).to_numpy()
            fw_g[gid] += joined.get_column("rw").fill_null(0.0).to_numpy()
    member = base.join(groups.select(["g", "p", *cols]), on=["p", *cols], how="left")
    # the join keeps the record order of ``base``
    gid = member.get_column("g").to_numpy()
    return fk_g[gid], fw_g[gid]


def _bf_risk(fk: np.ndarray, Fk: np.ndarray) -> np.ndarray:
    """Benedetti-Franconi risk, the approximation sdcMicro prints (closed forms for f <= 2)."""
    f = fk.astype(np.float64)
    p = np.minimum(f / np.maximum(Fk, 1e-300), 1.0)
    q = 1.0 - p
    out = 1.0 / f
    ok = q > 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = p * -np.log(p) / q
        r2 = p / q**2 * (p * np.log(p) + q)
        rn = p / (f - q)
    out = np.where(ok & (f == 1), r1, out)
    out = np.where(ok & (f == 2), r2, out)
    out = np.where(ok & (f > 2), rn, out)
    return out


def _protected_cells(before: pl.Series, after: pl.Series) -> np.ndarray:
    """Records whose released value differs from the original (suppressed or changed)."""
    miss_b, miss_a = _is_missing(before), _is_missing(after)
    differs = (_as_text(before) != _as_text(after)).fill_null(True).to_numpy()
    return ~miss_b & (miss_a | differs)


def _structural_map(
    orig_c: pl.Series, orig_t: pl.Series, *, coarse: bool = True
) -> pl.DataFrame | None:
    """``{c: t}`` when t is a function of c in the whole original file (and c is coarse:
    at most :data:`COARSE_SHARE` distinct values per record, unless ``coarse=False``)."""
    frame = pl.DataFrame({"c": _as_text(orig_c), "t": _as_text(orig_t)}).drop_nulls()
    if frame.height < 2:
        return None
    per = frame.group_by("c").agg(pl.col("t").n_unique().alias("u"), pl.col("t").first())
    if coarse and per.height > COARSE_SHARE * frame.height:
        return None
    if bool((per.get_column("u") > 1).any()):
        return None
    if coarse and per.get_column("t").n_unique() < 2:  # t is constant: nothing to determine
        return None
    return per.select("c", "t")


def _witness_map(released_c: pl.Series, released_t: pl.Series) -> pl.DataFrame:
    """``{c: t}`` for the released values of c whose visible t values all agree (at least
    :data:`MIN_WITNESSES` of them)."""
    frame = pl.DataFrame({"c": _as_text(released_c), "t": _as_text(released_t)}).drop_nulls()
    per = frame.group_by("c").agg(
        pl.col("t").n_unique().alias("u"), pl.col("t").first(), pl.len().alias("n")
    )
    return per.filter((pl.col("u") == 1) & (pl.col("n") >= MIN_WITNESSES)).select("c", "t")


def _recovered(
    released_c: pl.Series, mapping: pl.DataFrame, truth: pl.Series, cells: np.ndarray
) -> np.ndarray:
    """Cells whose value ``mapping`` gives back from the released c: mapped value == truth."""
    probe = pl.DataFrame({"c": _as_text(released_c), "truth": _as_text(truth)}).with_row_index("i")
    probe = probe.filter(pl.Series(cells))
    hit = probe.join(mapping, on="c", how="inner").filter(pl.col("t") == pl.col("truth"))
    out = np.zeros(len(cells), dtype=bool)
    out[hit.get_column("i").to_numpy()] = True
    return out


def _constant_within(original: pl.DataFrame, hh: str, col: str) -> bool:
    s = original.get_column(col)
    if s.dtype.is_float():
        s = s.fill_nan(None)
    per = (
        pl.DataFrame({"h": original.get_column(hh), "v": s})
        .group_by("h")
        .agg(pl.col("v").n_unique())
    )
    return bool((per.get_column("v") <= 1).all())


# ------------------------------------------------------------------------------ the check
def check_release(
    original: Any,
    released: Any,
    *,
    keys: Sequence[str] = (),
    linked: Mapping[str, str] | None = None,
    household: str | None = None,
    household_level: Sequence[str] = (),
    identifiers: Sequence[str] = (),
    numeric: Sequence[str] = (),
    weight: str | None = None,
    declared: Sequence[str] | None = None,
    target: ReleaseTarget | None = None,
) -> ReleaseCheck:
    """Count what an attacker can read from ``released`` (see the module docstring).

    Parameters
    ----------
    original : DataFrame
        The original file (polars, pandas or pyarrow), in the same record order as
        ``released``.
    released : DataFrame
        The file as it would be written.
    keys, linked, household, household_level, identifiers, numeric, weight
        The roles of the original's columns (as in :class:`~sdckit.Microdata`).  ``household``
        names the household id of the original; the released file may hold it with other
        values (a new random id).
    declared : sequence of str, optional
        Every column the release plan mentions; a released column outside it whose values
        are all different is reported as a possible identifier.  Default: all columns.
    target : ReleaseTarget, optional
        The bounds to check (k, risk).

    Returns
    -------
    ReleaseCheck

    Examples
    --------
    >>> import polars as pl
    >>> orig = pl.DataFrame({"region": ["a", "a", "b", "b"], "district": [1, 1, 2, 2],
    ...                      "sex": [1, 2, 1, 2]})
    >>> rel = orig.with_columns(pl.Series("region", ["a", None, "b", "b"]))
    >>> res = check_release(orig, rel, keys=["region", "sex"])
    >>> res.determined_values, res.ok
    (1, False)
    """
    orig = _frame(original, "original")
    rel = _frame(released, "released")
    if orig.height != rel.height:
        raise DataError(
            "The released file has another number of records than the original; the release "
            "check compares them record by record, in the original order."
        )
    linked = dict(linked or {})
    target = target or ReleaseTarget()
    present = set(rel.columns)
    findings: list[ReleaseFinding] = []

    # (a) k-anonymity and risk, on the released keys and the linked variables finer than
    #     their key (a linked variable that is a function of its key adds nothing)
    finer = [
        c for c, key in linked.items()
        if c in present and key in orig.columns
        and _structural_map(orig.get_column(key), orig.get_column(c), coarse=False) is None
    ]  # fmt: skip
    eff_keys = [k for k in keys if k in present] + finer
    weights = (
        rel.get_column(weight).cast(pl.Float64).to_numpy()
        if weight is not None and weight in present
        else np.ones(rel.height)
    )
    k_viol, smallest = 0, None
    er = grisk = highest = hh_er = hh_pct = None
    if eff_keys:
        fk, Fk = _wildcard_counts(_codes(rel, eff_keys), weights)
        smallest = int(np.floor(fk.min()))
        if target.k is not None:
            k_viol = int(np.count_nonzero(fk < target.k))
            if k_viol:
                findings.append(ReleaseFinding(
                    "k_anonymity", ", ".join(eff_keys), "fk", k_viol,
                    f"{k_viol} released records share their key combination "
                    f"({', '.join(eff_keys)}) with fewer than {target.k - 1} others.",
                ))  # fmt: skip
        risk = _bf_risk(fk, Fk)
        er, highest = float(risk.sum()), float(risk.max())
        grisk = 100.0 * er / rel.height
        if household is not None and household in orig.columns:
            hid = orig.get_column(household)
            per = pl.DataFrame({"h": hid, "l": np.log1p(-np.minimum(risk, 1.0 - 1e-300))})
            hh_risk = -np.expm1(per.select(pl.col("l").sum().over("h")).to_series().to_numpy())
            hh_er = float(hh_risk.sum())
            hh_pct = 100.0 * hh_er / rel.height
    met = True
    for bound, value, label in (
        (target.max_global_risk_pct, grisk, "global risk (%)"),
        (target.max_expected_reidentifications, er, "expected re-identifications"),
        (target.max_individual_risk, highest, "highest individual risk"),
        (target.max_household_risk_pct, hh_pct, "household risk (%)"),
        (target.max_household_expected_reidentifications, hh_er,
         "expected re-identifications through households"),
    ):  # fmt: skip
        if bound is None:
            continue
        if value is None or value > bound:
            met = False
            shown = "not measured" if value is None else f"{value:.6g}"
            findings.append(
                ReleaseFinding("risk", "", label, float("nan") if value is None else value,
                               f"The released file's {label} is {shown} (target <= {bound:g}).")
            )  # fmt: skip
    if target.k is not None and k_viol:
        met = False

    # (b) and (c): protected values given back
    watched = [
        c for c in dict.fromkeys([*keys, *linked, *household_level])
        if c in orig.columns and c in present and c not in numeric
    ]  # fmt: skip
    released_cols = [c for c in rel.columns if c in orig.columns]
    determined = np.zeros(rel.height, dtype=np.int64)
    via_household = np.zeros(rel.height, dtype=np.int64)
    recovered_any = np.zeros(rel.height, dtype=np.int64)
    linkers = _household_linkers(orig, rel, household, released_cols, numeric)
    for t in watched:
        cells = _protected_cells(orig.get_column(t), rel.get_column(t))
        if not cells.any():
            continue
        got_t = np.zeros(rel.height, dtype=bool)
        for c in released_cols:
            if c in (t, household):
                continue
            mapping = _structural_map(orig.get_column(c), orig.get_column(t))
            how = "in the whole original file"
            categorical = (
                c not in numeric
                and not rel.schema[c].is_float()
                and rel.get_column(c).n_unique() <= MAX_CATEGORIES
            )
            if mapping is None and categorical:
                mapping = _witness_map(rel.get_column(c), rel.get_column(t))
                how = "in the released records that share it"
            if mapping is None or mapping.height == 0:
                continue
            hit = _recovered(rel.get_column(c), mapping, orig.get_column(t), cells)
            n_hit = int(hit.sum())
            if n_hit:
                got_t |= hit
                findings.append(ReleaseFinding(
                    "determined", c, t, n_hit,
                    f"The column {c!r} gives back {n_hit} protected values of {t!r} (each "
                    f"value of {c!r} goes with one value of {t!r} {how}).",
                ))  # fmt: skip
        determined += got_t
        if household is not None and _constant_within(orig, household, t):
            got_h = _household_recovery(orig, rel, t, cells, linkers, findings, household)
            via_household += got_h
            got_t |= got_h
        recovered_any += got_t

    # (d) identifiers
    ids = [c for c in identifiers if c in present]
    for c in ids:
        findings.append(ReleaseFinding(
            "identifier", c, c, rel.height, f"The direct identifier {c!r} is in the file.",
        ))  # fmt: skip
    mentioned = set(declared) if declared is not None else set(rel.columns)
    for c in rel.columns:
        if c in mentioned or c in ids or rel.schema[c].is_float():
            continue
        if rel.get_column(c).n_unique() == rel.height:
            ids.append(c)
            findings.append(ReleaseFinding(
                "identifier", c, c, rel.height,
                f"The column {c!r}, which the release plan does not mention, has a different "
                "value in every record (a record identifier).",
            ))  # fmt: skip
    return ReleaseCheck(
        n_records=rel.height,
        keys=tuple(eff_keys),
        k=target.k,
        k_violations=k_viol,
        smallest_class=smallest,
        expected_reidentifications=er,
        global_risk_pct=grisk,
        highest_risk=highest,
        household_expected_reidentifications=hh_er,
        household_risk_pct=hh_pct,
        recoverable_values=int(np.count_nonzero(recovered_any)),
        determined_values=int(np.count_nonzero(determined)),
        household_values=int(np.count_nonzero(via_household)),
        identifiers=tuple(ids),
        target_met=met,
        findings=tuple(findings),
    )


def _frame(data: Any, what: str) -> pl.DataFrame:
    if isinstance(data, pl.DataFrame):
        return data
    try:
        frame, _ = to_polars(data)
    except Exception:
        raise ColumnError(
            f"The {what} file must be a data frame (polars, pandas or pyarrow)."
        ) from None
    return frame


def _household_linkers(
    orig: pl.DataFrame,
    rel: pl.DataFrame,
    household: str | None,
    released_cols: Sequence[str],
    numeric: Sequence[str],
) -> list[str]:
    """Released columns that find a record's household: the id, or household-wide values."""
    if household is None or household not in orig.columns:
        return []
    found = [household] if household in rel.columns else []
    n_households = orig.get_column(household).n_unique()
    for c in released_cols:
        if c == household:
            continue
        s = rel.get_column(c)
        if s.n_unique() < LINKER_SHARE * n_households:
            continue
        if _constant_within(orig, household, c) and _constant_within(
            rel.with_columns(orig.get_column(household).alias("__h")), "__h", c
        ):
            found.append(c)
    return found


def _household_recovery(
    orig: pl.DataFrame,
    rel: pl.DataFrame,
    t: str,
    cells: np.ndarray,
    linkers: Sequence[str],
    findings: list[ReleaseFinding],
    household: str,
) -> np.ndarray:
    """Protected values of t that other members show, or that counting members gives back."""
    got = np.zeros(rel.height, dtype=bool)
    truth = _as_text(orig.get_column(t))
    size_column = _is_household_size(orig, t, household)
    hh_ids = orig.get_column(household)
    for link in linkers:
        key = _as_text(rel.get_column(link))
        if link != household:
            # a household-wide value finds the household only where one household has it
            one = (
                pl.DataFrame({"l": key, "h": hh_ids})
                .group_by("l")
                .agg(pl.col("h").n_unique().alias("n"))
                .filter(pl.col("n") == 1)
                .get_column("l")
            )
            key = pl.Series("l", key).set(~key.is_in(one.implode()).fill_null(False), None)
        frame = pl.DataFrame(
            {"l": key, "v": _as_text(rel.get_column(t)), "truth": truth, "cell": cells}
        ).with_row_index("i")
        visible = (
            frame.filter(pl.col("l").is_not_null() & pl.col("v").is_not_null())
            .group_by("l")
            .agg(pl.col("v").n_unique().alias("u"), pl.col("v").first().alias("shown"))
            .filter(pl.col("u") == 1)
        )
        probe = frame.filter(pl.col("cell") & pl.col("l").is_not_null())
        hit = probe.join(visible, on="l").filter(pl.col("shown") == pl.col("truth"))
        rows = hit.get_column("i").to_numpy()
        if size_column:
            sizes = frame.group_by("l").agg(pl.len().alias("members"))
            counted = probe.join(sizes, on="l").filter(
                pl.col("members").cast(pl.String) == pl.col("truth")
            )
            rows = np.union1d(rows, counted.get_column("i").to_numpy())
        new = np.zeros(rel.height, dtype=bool)
        new[rows.astype(np.int64)] = True
        n_hit = int((new & ~got).sum())
        if n_hit:
            what = "the other members of the household show the value"
            if size_column:
                what += ", or counting the members gives it"
            findings.append(ReleaseFinding(
                "household", link, t, n_hit,
                f"The column {link!r} is the same for all members of a household, and "
                f"{n_hit} protected values of {t!r} come back through it ({what}).",
            ))  # fmt: skip
        got |= new
    return got


def _is_household_size(orig: pl.DataFrame, t: str, household: str) -> bool:
    """Whether ``t`` equals the number of members of each household in the original."""
    s = orig.get_column(t)
    if not (s.dtype.is_numeric() or s.dtype == pl.String):
        return False
    frame = pl.DataFrame({"h": orig.get_column(household), "v": _as_text(s)})
    sizes = frame.group_by("h").agg(pl.len().cast(pl.String).alias("n"), pl.col("v").first())
    sizes = sizes.drop_nulls("v")
    return sizes.height > 0 and bool((sizes.get_column("n") == sizes.get_column("v")).all())
