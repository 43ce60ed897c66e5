"""The release check of a file protected on an engine, from aggregates and a sample.

:func:`check_on_engine` checks a released file against its original where both live on an
engine (a polars LazyFrame, a Dask or a Spark DataFrame) without collecting every record:

* k-anonymity and the re-identification risk are recounted on every record by
  :func:`~sdckit.engines.risk_on_engine` (class tables) and compared with the target;
* the frequency table of every key and stratum, and the number of values each variable
  changed (records matched by the row index column), are counted on the engine;
* means, variances and correlations of the numeric variables come from sums on the engine;
* the attack-based check of :func:`sdckit.release.check_release` reads a seeded sample of the
  records (whole households when the file has a household id): its findings are a sample's.

Only the class table, the margins, a few sums and the sample come into memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_choice, check_int, check_seed
from sdckit.engines._aggregates import (
    PRIME,
    ROW,
    SampleHash,
    engine_aggregates,
    frame_columns,
    is_integer,
    is_numeric,
)
from sdckit.engines._api import risk_on_engine
from sdckit.engines._release_result import BOUNDS, EngineReleaseCheck
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.release import ReleaseFinding, ReleaseTarget, Remedy, check_release

__all__ = ["ROLES", "EngineReleaseCheck", "check_on_engine"]

#: The roles :func:`check_on_engine` reads (those of :class:`sdckit.Microdata`).
ROLES = ("keys", "numeric", "weight", "strata", "household", "sensitive", "linked",
         "household_level", "identifiers")  # fmt: skip

#: The original weights joined to a released file that leaves them out.
_WEIGHT = "__sdckit_weight"


def _roles(roles: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(roles, Mapping):
        raise ParameterError("The 'roles' parameter must be a dict of Microdata roles.")
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ParameterError(
            f"The 'roles' parameter has an unknown role {unknown[0]!r}; the roles are "
            f"{', '.join(ROLES)}."
        )
    out: dict[str, Any] = {}
    for name in ("keys", "numeric", "sensitive", "household_level", "identifiers"):
        value = roles.get(name) or ()
        out[name] = [value] if isinstance(value, str) else list(value)
    for name in ("weight", "strata", "household"):
        out[name] = roles.get(name)
    out["linked"] = dict(roles.get("linked") or {})
    if not out["keys"]:
        raise ParameterError("The release check on an engine needs key variables: roles['keys'].")
    return out


def _margins(orig: dict[str, pl.DataFrame], rel: dict[str, pl.DataFrame]) -> pl.DataFrame:
    parts = []
    for variable, table in orig.items():
        a = table.rename({"count": "original"})
        b = rel.get(variable)
        if b is None:
            b = pl.DataFrame(
                {"value": [], "count": []}, schema={"value": pl.String, "count": pl.Int64}
            )
        both = a.join(b.rename({"count": "released"}), on="value", how="full", coalesce=True,
                      nulls_equal=True)  # fmt: skip
        parts.append(
            both.with_columns(pl.col("original", "released").fill_null(0).cast(pl.Int64))
            .with_columns(
                (pl.col("released") - pl.col("original")).alias("difference"),
                pl.lit(variable).alias("variable"),
            )
            .sort("value", nulls_last=True)
            .select("variable", "value", "original", "released", "difference")
        )
    schema = {"variable": pl.String, "value": pl.String, "original": pl.Int64,
              "released": pl.Int64, "difference": pl.Int64}  # fmt: skip
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def _changes(
    counts: pl.DataFrame, margins: pl.DataFrame, columns: list[str], n: int
) -> pl.DataFrame:
    row = counts.row(0, named=True) if counts.height else {}
    shift = margins.group_by("variable").agg((pl.col("difference").abs().sum() // 2).alias("m"))
    moved = dict(zip(shift.get_column("variable").to_list(), shift.get_column("m").to_list(),
                     strict=True))  # fmt: skip
    return pl.DataFrame(
        {
            "variable": columns,
            "changed": [int(row.get(f"{c}||changed", 0)) for c in columns],
            "suppressed": [int(row.get(f"{c}||suppressed", 0)) for c in columns],
            "share_changed": [int(row.get(f"{c}||changed", 0)) / max(n, 1) for c in columns],
            "margin_shift": [moved.get(c) for c in columns],
        },
        schema={
            "variable": pl.String,
            "changed": pl.Int64,
            "suppressed": pl.Int64,
            "share_changed": pl.Float64,
            "margin_shift": pl.Int64,
        },
    )


def _var(n: float, s: float, ss: float) -> float:
    return (ss - s * s / n) / (n - 1) if n > 1 else float("nan")


def _numeric(
    orig: dict[str, float], rel: dict[str, float], numeric: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = []
    for x in numeric:
        row: dict[str, Any] = {"variable": x}
        for tag, m in (("original", orig), ("released", rel)):
            n, s, ss = m[f"{x}||n"], m[f"{x}||s"], m[f"{x}||ss"]
            row[f"n_{tag}"] = int(n)
            row[f"mean_{tag}"] = s / n if n else float("nan")
            row[f"var_{tag}"] = _var(n, s, ss)
        rows.append(row)
    cols = ["variable", "n_original", "mean_original", "var_original", "n_released",
            "mean_released", "var_released"]  # fmt: skip
    table = (
        pl.DataFrame(rows).select(cols)
        if rows
        else pl.DataFrame(schema=dict.fromkeys(cols, pl.Float64))
    )
    pairs = []
    for i, x in enumerate(numeric):
        for y in numeric[i + 1 :]:
            pair: dict[str, Any] = {"variable_a": x, "variable_b": y}
            for tag, m in (("original", orig), ("released", rel)):
                n = m["||nc"]
                sx, sy = m[f"{x}||cs"], m[f"{y}||cs"]
                cov = (m[f"{x}|{y}||cxy"] - sx * sy / n) / (n - 1) if n > 1 else float("nan")
                vx, vy = _var(n, sx, m[f"{x}||css"]), _var(n, sy, m[f"{y}||css"])
                pair[tag] = cov / np.sqrt(vx * vy) if vx > 0 and vy > 0 else float("nan")
            pair["difference"] = pair["released"] - pair["original"]
            pairs.append(pair)
    schema = {"variable_a": pl.String, "variable_b": pl.String, "original": pl.Float64,
              "released": pl.Float64, "difference": pl.Float64}  # fmt: skip
    return table, pl.DataFrame(pairs, schema=schema)


def _aligned(
    orig: pl.DataFrame, rel: pl.DataFrame
) -> tuple[np.ndarray, pl.DataFrame, pl.DataFrame]:
    orig, rel = orig.sort(ROW), rel.sort(ROW)
    if orig.height != rel.height or not orig.get_column(ROW).equals(rel.get_column(ROW)):
        raise DataError(
            f"The sampled records of the original and the released file differ (their "
            f"{ROW!r} values do not match): both files must carry the same row index, "
            "0..n-1, one value per record."
        )
    index = orig.get_column(ROW).cast(pl.Int64).to_numpy()
    return index, orig.drop(ROW), rel.drop(ROW)


def _risk_findings(
    figures: dict[str, Any], target: ReleaseTarget, keys: list[str], k_viol: int
) -> tuple[list[ReleaseFinding], bool]:
    fix = (Remedy("protect_keys", None, ", ".join(keys)),)
    findings = []
    if k_viol:
        findings.append(ReleaseFinding(
            "k_anonymity", ", ".join(keys), "fk", k_viol,
            f"{k_viol} released records share their key combination ({', '.join(keys)}) "
            f"with fewer than {target.k} records in all (k = {target.k}; every record "
            "recounted on the engine).", remedies=fix,
        ))  # fmt: skip
    met = k_viol == 0
    for name, bound in target.bounds.items():
        figure, label = BOUNDS[name]
        value = figures.get(figure)
        if value is not None and value > bound:
            met = False
            findings.append(ReleaseFinding(
                "risk", "", label, value,
                f"The released file's {label} is {value:.6g} (target <= {bound:g}; every "
                "record recounted on the engine).", remedies=fix,
            ))  # fmt: skip
    return findings, met


def check_on_engine(
    original: Any,
    released: Any,
    *,
    engine: str,
    roles: Mapping[str, Any],
    k: int | None,
    seed: Any,
    sample_size: int = 200_000,
    target: ReleaseTarget | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> EngineReleaseCheck:
    """The release check of a file on an engine, from aggregates and a seeded sample.

    Parameters
    ----------
    original, released : LazyFrame, Dask DataFrame or Spark DataFrame
        The original and the released file on ``engine``, both with the row index column
        ``__sdckit_row`` (int64, ``0..n-1``, the same record in both).  The released file's
        other columns are those written (the row index itself is taken as not released).
    engine : {"polars", "streaming", "dask", "spark"}
    roles : dict
        The roles of the original's columns, as in :class:`sdckit.Microdata`: ``keys``,
        ``numeric``, ``weight``, ``strata``, ``household``, ``sensitive`` (``linked``,
        ``household_level``, ``identifiers`` for the attacks).
    k : int or None
        k-anonymity to check (shortcut for ``target=ReleaseTarget(k=k)``; neither: the
        default target, :meth:`ReleaseTarget.default`).
    seed : int or numpy.random.Generator
        Seed of the sample: the same seed draws the same records on every engine.
    sample_size : int, default 200000
        Records the attacks read (about: the sample is drawn by a hash, whole households
        when the file has an integer household id).
    target : ReleaseTarget, optional
        The bounds to check (instead of ``k``).
    progress : callable, optional
        ``progress(stage, done, total)`` after each of the five stages (risk, margins and
        changed values, moments, sample, attacks), as the job runner's progress.

    Returns
    -------
    EngineReleaseCheck

    Examples
    --------
    >>> import polars as pl
    >>> orig = pl.LazyFrame({"__sdckit_row": list(range(40)), "region": ["a", "b"] * 20,
    ...                      "sex": [1, 1, 2, 2] * 10})
    >>> rel = orig.with_columns(pl.when(pl.col("__sdckit_row") == 0).then(None)
    ...                         .otherwise(pl.col("region")).alias("region"))
    >>> res = check_on_engine(orig, rel, engine="streaming", roles={"keys": ["region", "sex"]},
    ...                       k=3, seed=1, sample_size=10)
    >>> res.k_violations, res.changes.get_column("suppressed").to_list()
    (0, [1, 0])
    >>> res.margins.filter(pl.col("value").is_null()).get_column("released").to_list()
    [1]
    """
    check_choice(engine, "engine", ("polars", "streaming", "dask", "spark"))
    r = _roles(roles)
    sample_size = check_int(sample_size, "sample_size", minimum=1)
    if target is None:
        target = ReleaseTarget.default() if k is None else ReleaseTarget(k=k)
    elif k is not None and k != target.k:
        raise ParameterError("Give k or target, not both.")
    agg = engine_aggregates(engine)

    def report(stage: str, done: int) -> None:
        if progress is not None:
            progress(stage, done, 5)

    report("Release check", 0)
    orig_cols, rel_cols = frame_columns(original, engine), frame_columns(released, engine)
    for what, cols in (("original", orig_cols), ("released", rel_cols)):
        if ROW not in cols:
            raise ColumnError(
                f"The {what} file has no row index column {ROW!r}; add it (int64, 0..n-1, the "
                "same record in both files) before the check."
            )
    used = [*r["keys"], *r["numeric"], *r["sensitive"],
            *(c for c in (r["weight"], r["strata"], r["household"]) if c)]  # fmt: skip
    missing = [c for c in used if c not in orig_cols]
    if missing:
        raise ColumnError(f"The original file has no column {missing[0]!r}; check the roles.")
    n = agg.count(original)
    if agg.count(released) != n:
        raise DataError(
            "The released file has another number of records than the original; the release "
            "check compares them record by record."
        )
    for frame in (original, released):  # one index per record, 0..n-1 (the sample's link)
        if n and agg.row_range(frame) != (0, n - 1):
            raise DataError(
                f"The row index {ROW!r} of the original or the released file is not 0..n-1: "
                "both files must carry the same row index, one value per record."
            )
    present = set(rel_cols)
    # a numeric variable released as categories (bands) is a key of the released file, as the
    # in-memory check counts it
    numeric = [x for x in r["numeric"] if x in present and is_numeric(released, engine, x)]
    banded = [x for x in r["numeric"] if x in present and x not in numeric]
    keys = [c for c in r["keys"] if c in present] + [x for x in banded if x not in r["keys"]]
    # --- k-anonymity and risk on every record (class tables)
    household = r["household"] if r["household"] in present else None
    weight, scored = r["weight"], released
    if weight is None:
        weights = "no weights: a census (risk 1/fk)"
    elif weight in present:
        weights = f"the released weights {weight!r}"
    else:  # as the in-memory check: the agency's estimate of the population, not published
        weights = f"the original weights {weight!r} (not released)"
        scored = agg.attach(original, released, weight, _WEIGHT)
        weight = _WEIGHT
    ks = sorted({2, 3, 5} | ({target.k} if target.k else set()))
    figures: dict[str, Any] = {}
    smallest, k_viol = None, 0
    if keys:
        er = risk_on_engine(scored, keys=keys, weight=weight, household=household, ks=ks,
                            engine=engine)  # fmt: skip
        figures = er.figures()
        fk = er.classes.get_column("fk")
        smallest = int(fk.min()) if er.classes.height else None  # type: ignore[arg-type]
        k_viol = int(figures[f"k{target.k}_violations"]) if target.k else 0
    findings, met = _risk_findings(figures, target, keys, k_viol)
    report("Release check: k-anonymity and risk", 1)
    # --- margins, changed values, moments (aggregates)
    variables = list(dict.fromkeys([*r["keys"], *([r["strata"]] if r["strata"] else [])]))
    margins = _margins(
        agg.margins(original, variables),
        agg.margins(released, [v for v in variables if v in present]),
    )
    compared = [c for c in [*variables, *r["numeric"]] if c in present]
    changes = _changes(agg.changed(original, released, compared), margins, compared, n)
    report("Release check: margins and changed values", 2)
    notes = []
    if banded:
        notes.append(
            f"Released as categories (keys of the released file, not compared as numbers): "
            f"{', '.join(banded)}."
        )
    moments_o = agg.moments(original, numeric) if numeric else {}
    moments_r = agg.moments(released, numeric) if numeric else {}
    num_table, correlations = _numeric(moments_o, moments_r, numeric)
    report("Release check: means, variances, correlations", 3)
    # --- the attacks on a seeded sample (whole households when the id is an integer)
    rng = check_seed(seed)
    a, b = int(rng.integers(1, PRIME)), int(rng.integers(0, PRIME))
    fraction = min(1.0, sample_size / max(n, 1))
    hashing = SampleHash(a, b, PRIME if fraction >= 1.0 else int(np.ceil(fraction * PRIME)))
    hh = r["household"]
    by_household = (
        fraction < 1.0 and hh is not None and hh in present
        and is_integer(original, engine, hh) and is_integer(released, engine, hh)
    )  # fmt: skip
    unit = hh if by_household else ROW
    # drawn from the original (its households: the released ids may be new ones), the same
    # records taken from the released file by their row index
    orig_s = agg.sample(original, unit, hashing)
    rel_s = agg.rows(released, orig_s.get_column(ROW).cast(pl.Int64).to_numpy())
    index, orig_s, rel_s = _aligned(orig_s, rel_s)
    report("Release check: sample drawn", 4)
    sample_target = ReleaseTarget(k=None, tolerance=target.tolerance, confidence=target.confidence)
    tree_seed = int(seed) if isinstance(seed, int | np.integer) else 0
    sample = check_release(
        orig_s, rel_s, keys=r["keys"], linked=r["linked"], household=r["household"],
        household_level=r["household_level"], identifiers=r["identifiers"],
        numeric=r["numeric"], weight=r["weight"], sensitive=r["sensitive"],
        target=sample_target, household_id=household, seed=tree_seed,
    )  # fmt: skip
    report("Release check: attacks on the sample", 5)
    return EngineReleaseCheck(
        engine=engine, n_records=n, keys=tuple(keys), k=target.k, k_violations=k_viol,
        smallest_class=smallest, risk=figures, weights=weights, target=target,
        target_met=met, findings=tuple(findings), margins=margins, changes=changes,
        numeric=num_table, correlations=correlations, sample=sample,
        sample_records=rel_s.height, sample_unit="households" if by_household else "records",
        sample_fraction=fraction, sample_index=index, roles=r, notes=tuple(notes),
        columns=(tuple(c for c in orig_cols if c != ROW), tuple(c for c in rel_cols if c != ROW)),
    )  # fmt: skip
