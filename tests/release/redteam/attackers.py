"""Attackers of a released file, written without knowledge of how the release check works.

Every attacker is a function ``attack(released, target) -> Guess``.  It reads ONLY the released
file (a polars DataFrame: the rows in the order they are written, the columns released) and
guesses, for one target column, a value per released row (null: no guess), with a confidence in
[0, 1].  It never sees the original file (the target must be a released column: a column left
out of the file cannot be learned from it).  Like an intruder, it learns only from the released
records in which the target is shown (not missing) and guesses where it is not shown (where the
target is a perturbed or top-coded number, shown but wrong, the averaging and transformation
attackers guess every record).

One attacker per attack class:

1. :func:`shared_values`: records sharing a value of another column (of any type: a float
   weight, a string, a date) show the target; guess the value the others show.
2. :func:`transformations`: exact or near-exact dependence through a transformation of another
   column: rounding, flooring, integer division, completed age at the reference date from a
   date, the floor of a decimal age, the words of a free-text column.
3. :func:`record_order`: the neighbours in the written file; runs of a household-size column
   rebuild households when the file keeps the original order.
4. :func:`household_reconstruction`: groups of records by columns that look constant within
   households (or a person number // 100); other members show a household-level value, and
   counting the members gives the household size.
5. :func:`household_averaging`: a household-level number perturbed independently per member;
   the mean over the members estimates it better than any one member's value.
6. :func:`identifiers`: near-unique identifier-like columns of any storage type (reported), and
   the households their // 10, // 100, // 1000 rebuild.
7. :func:`learning`: a scikit-learn decision tree on every released column, trained on the
   records where the target is shown.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

#: The survey's reference date (printed in the documentation of any such survey).
REFERENCE_DATE = dt.date(2026, 6, 30)

_ROW = "__row"
_DIVISORS = (10, 100, 1000)


@dataclass(frozen=True)
class Guess:
    """An attacker's guesses for one target column of a released file.

    Attributes
    ----------
    attack : str
    target : str
    values : polars.Series
        One guess per released row, in written order (null: no guess).
    confidence : numpy.ndarray
        The attacker's confidence in each guess (0 where there is none).
    findings : tuple of str
        What the attacker noticed on the way (e.g. identifier-like columns, the transformation
        or grouping used).
    """

    attack: str
    target: str
    values: pl.Series
    confidence: np.ndarray
    findings: tuple[str, ...] = ()

    @property
    def n_guesses(self) -> int:
        """Number of rows with a guess."""
        return self.values.len() - self.values.null_count()


# ---------------------------------------------------------------------- helpers
def _clean(s: pl.Series) -> pl.Series:
    """NaN as null."""
    return s.fill_nan(None) if s.dtype.is_float() else s


def shown(released: pl.DataFrame, target: str) -> np.ndarray:
    """Rows where the target is shown (neither null nor NaN)."""
    return _clean(released.get_column(target)).is_not_null().to_numpy()


def is_continuous(s: pl.Series) -> bool:
    """A float column with many distinct values (compared with a tolerance, not exactly)."""
    return s.dtype.is_float() and _clean(s).drop_nulls().n_unique() > 100


def _integral(s: pl.Series) -> bool:
    """A numeric column whose values are all whole numbers."""
    if not s.dtype.is_numeric():
        return False
    values = _clean(s).drop_nulls().cast(pl.Float64).to_numpy()
    return len(values) > 0 and bool(np.all(values == np.floor(values)))


def _empty(n: int, dtype: pl.DataType) -> tuple[pl.Series, np.ndarray]:
    return pl.Series("guess", [None] * n, dtype=dtype), np.zeros(n)


def _combine(
    n: int, dtype: pl.DataType, candidates: list[tuple[pl.Series, np.ndarray]]
) -> tuple[pl.Series, np.ndarray]:
    """Per row, the candidate guess with the highest confidence."""
    best = np.full(n, -1, dtype=np.int64)
    conf = np.zeros(n)
    columns = []
    for j, (values, c) in enumerate(candidates):
        values = values.cast(dtype, strict=False)
        c = np.where(values.is_null().to_numpy(), -1.0, np.nan_to_num(c))
        better = c > conf
        best[better] = j
        conf[better] = c[better]
        columns.append(values)
    if not columns:
        return _empty(n, dtype)
    frame = pl.DataFrame([c.alias(f"c{j}") for j, c in enumerate(columns)])
    pick = pl.Series("pick", best)
    expr = pl.lit(None, dtype=dtype)
    for j in range(len(columns)):
        expr = pl.when(pl.col("pick") == j).then(pl.col(f"c{j}")).otherwise(expr)
    out = frame.with_columns(pick).select(expr.alias("guess")).to_series()
    return out, np.where(best >= 0, conf, 0.0)


def _guess(
    attack: str,
    released: pl.DataFrame,
    target: str,
    candidates: list[tuple[pl.Series, np.ndarray]],
    findings: list[str],
    *,
    only_hidden: bool = True,
) -> Guess:
    n = released.height
    dtype = released.schema[target]
    values, conf = _combine(n, dtype, candidates)
    if only_hidden:
        hidden = ~shown(released, target)
        values = pl.select(
            pl.when(pl.Series(hidden)).then(values).otherwise(None).alias("guess")
        ).to_series()
        conf = np.where(hidden, conf, 0.0)
    return Guess(attack, target, values, conf, tuple(findings))


def _lookup(
    feature: pl.Series, target: pl.Series, mask: np.ndarray
) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """Per row: the target value most often shown beside the row's feature value.

    Learned from the rows in ``mask`` (the target shown).  Returns the guess, its purity (share
    of the shown records with that feature value that show it) and the support (their number).
    """
    n = len(feature)
    frame = pl.DataFrame(
        [_clean(feature).alias("f"), target.alias("t"), pl.Series("s", mask)]
    ).with_row_index(_ROW)
    learn = frame.filter(pl.col("s") & pl.col("f").is_not_null() & pl.col("t").is_not_null())
    if learn.height == 0:
        values, _ = _empty(n, target.dtype)
        return values, np.zeros(n), np.zeros(n)
    table = (
        learn.group_by("f", "t")
        .len()
        .sort("len", "t", descending=[True, False], nulls_last=True)
        .group_by("f", maintain_order=True)
        .agg(
            pl.col("t").first().alias("guess"),
            pl.col("len").first().alias("top"),
            pl.col("len").sum().alias("support"),
        )
    )
    joined = frame.join(table, on="f", how="left").sort(_ROW)
    support = joined.get_column("support").fill_null(0).to_numpy().astype(np.float64)
    top = joined.get_column("top").fill_null(0).to_numpy().astype(np.float64)
    purity = np.divide(top, support, out=np.zeros(n), where=support > 0)
    return joined.get_column("guess"), purity, support


def _lookup_candidate(
    feature: pl.Series, target: pl.Series, mask: np.ndarray, *, min_purity: float = 0.9
) -> tuple[pl.Series, np.ndarray]:
    """The lookup as a candidate: confidence top / (support + 1), pure values only."""
    values, purity, support = _lookup(feature, target, mask)
    conf = np.where(purity >= min_purity, purity * support / (support + 1.0), 0.0)
    return values, conf


def _functional_share(feature: pl.Series, target: pl.Series, mask: np.ndarray) -> float:
    """Share of the shown records whose feature value shows one target value only."""
    _, purity, _ = _lookup(feature, target, mask)
    usable = mask & _clean(feature).is_not_null().to_numpy()
    if usable.sum() == 0:
        return 0.0
    return float(np.mean(purity[usable] == 1.0))


def _interval_candidate(
    feature: pl.Series, target: pl.Series, mask: np.ndarray
) -> tuple[pl.Series, np.ndarray]:
    """Target as a step function of a numeric feature, between the nearest pure values.

    A feature value seen with one shown target value gives it (confidence 0.9).  A value never
    seen with a shown target looks at the nearest values below and above that show one target
    value each: when they agree, that is the guess (the target is constant on the interval,
    confidence 0.8); beyond the smallest or largest value, the nearest one (0.4).
    """
    n = len(feature)
    x = _clean(feature).cast(pl.Float64).to_numpy()
    ok = np.isfinite(np.nan_to_num(x, nan=np.inf))
    values, purity, _ = _lookup(feature, target, mask)
    pure = (purity == 1.0) & mask & ok
    if not pure.any():
        return _empty(n, target.dtype)
    table = (
        pl.DataFrame({"x": x[pure], "g": values.filter(pl.Series(pure))})
        .unique("x", keep="first")
        .sort("x")
    )
    xs = table.get_column("x").to_numpy()
    gs = table.get_column("g")
    xq = np.where(ok, x, xs[0])
    pos = np.searchsorted(xs, xq)
    upper = np.clip(pos, 0, len(xs) - 1)
    lower = np.clip(pos - 1, 0, len(xs) - 1)
    exact = xs[upper] == xq
    inside = (pos > 0) & (pos < len(xs))
    g_low = gs.gather(pl.Series(lower)).cast(pl.String)
    g_up = gs.gather(pl.Series(upper)).cast(pl.String)
    agree = (g_low == g_up).fill_null(False).to_numpy()
    conf = np.select([exact, inside & agree, ~inside], [0.9, 0.8, 0.4], default=0.0)
    pick = np.where(exact | (pos == 0), upper, lower)
    return gs.gather(pl.Series(pick)), np.where(ok, conf, 0.0)


def _completed_years(dates: pl.Series) -> pl.Series:
    """Completed years of age on the reference date of persons born on ``dates``."""
    d = dates.cast(pl.Date)
    ref = REFERENCE_DATE
    not_yet = (d.dt.month() > ref.month) | ((d.dt.month() == ref.month) & (d.dt.day() > ref.day))
    return (ref.year - d.dt.year().cast(pl.Int64) - not_yet.cast(pl.Int64)).alias("age")


def _derived(released: pl.DataFrame, target: str) -> Iterator[tuple[str, pl.Series]]:
    """Transformations of every other column an intruder would try."""
    for col in released.columns:
        if col == target:
            continue
        s = _clean(released.get_column(col))
        if s.dtype in (pl.Date, pl.Datetime):
            years = _completed_years(s)
            yield f"completed age on {REFERENCE_DATE} from {col}", years
        elif s.dtype.is_numeric():
            x = s.cast(pl.Float64)
            if _integral(s):
                yield col, s
                for d in _DIVISORS:
                    yield f"{col} // {d}", (x // d).cast(pl.Int64)
            else:
                yield col, s
                yield f"floor({col})", x.floor().cast(pl.Int64)
                yield f"round({col})", x.round(0).cast(pl.Int64)
            for d in _DIVISORS:
                yield f"round({col}, -{len(str(d)) - 1})", (x / d).round(0) * d


def _target_like(feature: pl.Series, target: pl.Series) -> pl.Series | None:
    """The feature in the target's type, when it can be compared with it directly."""
    if target.dtype.is_numeric() and feature.dtype.is_numeric():
        return feature.cast(target.dtype, strict=False)
    if target.dtype == pl.String and feature.dtype == pl.String:
        return feature
    return None


# ---------------------------------------------------------------------- 1. shared values
def shared_values(released: pl.DataFrame, target: str) -> Guess:
    """Records that share a value of another column show the target: guess what they show.

    For every other column (any type: floats such as a weight, strings, dates), the target values
    shown beside each of its values are counted; a record without the target gets the value shown
    beside its own value of the column whose shown records agree best (purity >= 0.9,
    confidence purity * support / (support + 1)).
    """
    t = released.get_column(target)
    mask = shown(released, target)
    candidates, findings = [], []
    for col in released.columns:
        if col == target:
            continue
        values, conf = _lookup_candidate(released.get_column(col), t, mask)
        hidden_hits = int(np.count_nonzero((conf > 0.5) & ~mask))
        if hidden_hits:
            findings.append(f"{col}: {hidden_hits} hidden records share a value that shows it")
        candidates.append((values, conf))
    return _guess("shared values", released, target, candidates, findings)


# ---------------------------------------------------------------------- 2. transformations
def transformations(released: pl.DataFrame, target: str) -> Guess:
    """Exact or near-exact dependence of the target on a transformation of another column.

    Tried on every other column: the column itself, floor / round, // 10, // 100, // 1000,
    rounding to tens, hundreds and thousands, the completed age on the reference date of a date,
    and the words of a string column.  A transformation that equals the target on >= 98 % of the
    shown records (continuous targets: within 1 %, or half a percent of the standard deviation,
    on >= 90 %; then every record is guessed, as a top-coded or perturbed number is shown but
    wrong) is used as the guess itself;
    otherwise, when the target is a function of it on >= 95 % of the shown records, the target
    is read off the shown records with the same (or, for numbers, the nearest enclosing) values.
    Each word of a free-text column is looked up alone (an office name gives a region).
    """
    t = released.get_column(target)
    mask = shown(released, target)
    continuous = is_continuous(t)
    candidates, findings = [], []
    for name, feature in _derived(released, target):
        like = _target_like(feature, t)
        both = mask & _clean(feature).is_not_null().to_numpy()
        if like is not None and both.sum() > 0:
            a = like.to_numpy()[both]
            b = t.to_numpy()[both]
            if continuous:
                a = a.astype(np.float64)
                b = b.astype(np.float64)
                tol = np.maximum(0.01 * np.abs(b), 0.005 * float(np.std(b)))
                agree = float(np.mean(np.abs(a - b) <= tol))
                if agree >= 0.9:
                    candidates.append((like, np.full(len(t), agree)))
                    findings.append(f"{name} equals {target} (within 1 %) on {agree:.1%}")
                continue
            agree = float(np.mean(a == b))
            if agree >= 0.98:
                candidates.append((like, np.full(len(t), agree)))
                findings.append(f"{name} equals {target} on {agree:.1%} of the shown records")
                continue
        if continuous:
            continue
        share = _functional_share(feature, t, mask)
        if share >= 0.95:
            findings.append(f"{target} is a function of {name} on {share:.1%}")
            candidates.append(_lookup_candidate(feature, t, mask, min_purity=1.0))
            if feature.dtype.is_numeric():
                candidates.append(_interval_candidate(feature, t, mask))
    if not continuous:
        for col in released.columns:
            if col != target and released.schema[col] == pl.String:
                values, conf, used = _token_candidate(released, col, t, mask)
                if used:
                    findings.append(f"words of {col} give {target}: {', '.join(used[:5])}")
                    candidates.append((values, conf))
    return _guess(
        "transformations", released, target, candidates, findings, only_hidden=not continuous
    )


def _token_candidate(
    released: pl.DataFrame, col: str, t: pl.Series, mask: np.ndarray
) -> tuple[pl.Series, np.ndarray, list[str]]:
    """Each word of a text column looked up alone; per record the most telling word."""
    n = released.height
    words = (
        pl.DataFrame(
            [released.get_column(col).str.extract_all(r"[A-Za-z0-9]+").alias("w"), t.alias("t")]
        )
        .with_row_index(_ROW)
        .with_columns(pl.Series("s", mask))
        .explode("w")
        .filter(pl.col("w").is_not_null())
        .unique([_ROW, "w"])
    )
    if words.height == 0:
        values, conf = _empty(n, t.dtype)
        return values, conf, []
    values, purity, support = _lookup(
        words.get_column("w"), words.get_column("t"), words.get_column("s").to_numpy()
    )
    scored = words.select(
        _ROW,
        "w",
        values.alias("g"),
        pl.Series("c", np.where(purity >= 0.95, purity * support / (support + 1.0), 0.0)),
    ).filter(pl.col("c") > 0.5)
    used = scored.get_column("w").unique().sort().to_list()
    best = scored.sort("c", descending=True).unique(_ROW, keep="first")
    full = pl.DataFrame({_ROW: np.arange(n, dtype=np.uint32)}).join(best, on=_ROW, how="left")
    full = full.sort(_ROW)
    return full.get_column("g"), full.get_column("c").fill_null(0.0).to_numpy(), used


# ---------------------------------------------------------------------- 3. record order
def _size_column(released: pl.DataFrame, exclude: str) -> str | None:
    """An integer column whose runs (in file order) are multiples of its value: household size."""
    best, best_share = None, 0.0
    for col in released.columns:
        s = released.get_column(col)
        if col == exclude or not s.dtype.is_integer() or s.null_count() > 0.2 * len(s):
            continue
        if s.drop_nulls().n_unique() < 2 or s.min() < 1 or s.max() > 30:  # type: ignore[operator]
            continue
        runs = (
            pl.DataFrame({"v": s, "r": s.rle_id()})
            .filter(pl.col("v").is_not_null())
            .group_by("r")
            .agg(pl.col("v").first(), pl.len())
        )
        fits = runs.filter(pl.col("v") > 1)
        if fits.height == 0:
            continue
        share = float(((fits["len"] % fits["v"]) == 0).mean())  # type: ignore[arg-type]
        if share > best_share:
            best, best_share = col, share
    return best if best_share >= 0.9 else None


def _group_mode(groups: pl.Series, t: pl.Series, mask: np.ndarray) -> pl.Series:
    """Per row, the most frequent shown target value of its group (null when none)."""
    values, purity, _ = _lookup(groups, t, mask)
    return pl.select(
        pl.when(pl.Series(purity > 0)).then(values).otherwise(None).alias("g")
    ).to_series()


def record_order(released: pl.DataFrame, target: str) -> Guess:
    """The written order: households rebuilt from runs, else the nearest records before and after.

    When the file keeps its original order, a household-size column comes in runs whose lengths
    are multiples of the size; cutting each run into blocks of that size rebuilds the households,
    and the other members show a household-level target.  Otherwise the nearest record above and
    below that shows the target (files sorted by geography keep neighbours alike): both agree,
    confidence 0.7; else the nearer one, 0.4.
    """
    n = released.height
    t = released.get_column(target)
    mask = shown(released, target)
    candidates, findings = [], []
    size = _size_column(released, target)
    if size is not None:
        s = released.get_column(size)
        groups = (
            pl.DataFrame({"v": s, "r": s.rle_id()})
            .with_columns(p=pl.int_range(pl.len()).over("r"))
            .select(
                pl.when(pl.col("v").is_not_null())
                .then(pl.format("{}-{}", pl.col("r"), pl.col("p") // pl.col("v")))
                .alias("g")
            )
            .to_series()
        )
        findings.append(f"runs of {size} rebuild the households")
        candidates.append((_group_mode(groups, t, mask), np.full(n, 0.9)))
    index = pl.Series("i", np.arange(n, dtype=np.int64))
    frame = pl.DataFrame({"t": t, "i": index}).with_columns(
        pl.when(pl.Series(mask)).then(pl.col("i")).alias("i")
    )
    prev = frame.select(pl.col("t", "i").shift(1).fill_null(strategy="forward"))
    nxt = frame.select(pl.col("t", "i").shift(-1).fill_null(strategy="backward"))
    rows = np.arange(n)
    d_prev = rows - prev.get_column("i").fill_null(-(10**9)).to_numpy()
    d_next = nxt.get_column("i").fill_null(10**9).to_numpy() - rows
    agree = (prev.get_column("t") == nxt.get_column("t")).fill_null(False).to_numpy()
    nearer = pl.select(
        pl.when(pl.Series(d_prev <= d_next))
        .then(prev.get_column("t"))
        .otherwise(nxt.get_column("t"))
        .alias("t")
    ).to_series()
    candidates.append((nearer, np.where(agree, 0.7, 0.4)))
    return _guess("record order", released, target, candidates, findings)


# ---------------------------------------------------------------------- 4. households
def _looks_like_households(s: pl.Series) -> bool:
    """Values shared by small groups of records, as household ids or household totals are.

    Most records (>= 60 %) share their value with another record, >= 95 % with at most 11 others
    (a few mass points, such as a minimum income, are allowed), 1.5 to 6 records per value.
    """
    s = _clean(s).drop_nulls()
    n = len(s)
    if n < 20:
        return False
    counts = s.value_counts().get_column("count")
    mean = n / len(counts)
    in_groups = float(counts.filter(counts >= 2).sum()) / n
    small = float(counts.filter(counts <= 12).sum()) / n
    return 1.5 <= mean <= 6.0 and small >= 0.95 and in_groups >= 0.6


def _identifier_like(s: pl.Series) -> bool:
    """Near-unique values of a person number (integers, whole floats, strings), few missing."""
    clean = _clean(s)
    present = clean.drop_nulls()
    if len(present) < 0.9 * len(s) or len(present) < 20:
        return False
    if not (s.dtype.is_integer() or _integral(s) or s.dtype == pl.String):
        return False
    return present.n_unique() >= 0.99 * len(present)


def _identifier_groupings(released: pl.DataFrame, target: str) -> list[tuple[str, pl.Series]]:
    """Households rebuilt by a person number // 10, // 100 or // 1000."""
    out = []
    for col in released.columns:
        s = released.get_column(col)
        if col == target or not _identifier_like(s):
            continue
        x = _clean(s)
        if x.dtype == pl.String:
            x = x.cast(pl.Int64, strict=False)
        x = x.cast(pl.Float64)
        for d in _DIVISORS:
            g = (x // d).cast(pl.Int64)
            if _looks_like_households(g):
                out.append((f"{col} // {d}", g))
                break
    return out


def household_groupings(released: pl.DataFrame, target: str) -> list[tuple[str, pl.Series]]:
    """Candidate household groupings, the most precise first.

    Columns whose values are shared by small groups (a household id, a household income), their
    combination (all must agree), and person numbers // 10, // 100, // 1000.
    """
    singles = [
        (col, released.get_column(col))
        for col in released.columns
        if col != target and _looks_like_households(released.get_column(col))
    ]
    out: list[tuple[str, pl.Series]] = []
    if len(singles) >= 2:
        key = pl.select(
            pl.concat_str([_clean(s).cast(pl.String) for _, s in singles], separator="|")
        ).to_series()
        out.append((" + ".join(c for c, _ in singles), key))
    out.extend(singles)
    out.extend(_identifier_groupings(released, target))
    return out


def _household_candidates(
    released: pl.DataFrame, target: str, groupings: list[tuple[str, pl.Series]]
) -> tuple[list[tuple[pl.Series, np.ndarray]], list[str]]:
    n = released.height
    t = released.get_column(target)
    mask = shown(released, target)
    candidates, findings = [], []
    for rank, (name, g) in enumerate(groupings):
        frame = pl.DataFrame({"g": _clean(g), "t": t, "s": mask})
        per = (
            frame.filter(pl.col("g").is_not_null())
            .group_by("g")
            .agg(
                pl.len().alias("members"),
                pl.col("t").filter(pl.col("s")).n_unique().alias("values"),
                pl.col("s").sum().alias("shown"),
            )
        )
        multi = per.filter(pl.col("shown") >= 2)
        level = float((multi["values"] == 1).mean()) if multi.height else 0.0  # type: ignore[arg-type]
        step = 0.01 * rank  # prefer the earlier (more precise) groupings
        if level >= 0.8:
            findings.append(f"{name}: {target} constant within {level:.0%} of the groups")
            candidates.append((_group_mode(g, t, mask), np.full(n, level - step)))
        if t.dtype.is_numeric() and not is_continuous(t):
            count = frame.join(per.select("g", "members"), on="g", how="left").get_column("members")
            both = mask & count.is_not_null().to_numpy()
            if both.sum():
                agree = float(np.mean(count.to_numpy()[both] == t.to_numpy()[both]))
                if agree >= 0.9:
                    findings.append(f"counting the members of {name} gives {target} ({agree:.0%})")
                    candidates.append((count, np.full(n, agree - step)))
    return candidates, findings


def household_reconstruction(released: pl.DataFrame, target: str) -> Guess:
    """Households rebuilt without a household id; their other members show the target.

    Records are grouped by the columns that look constant within households (values shared by
    small groups: household incomes, a released household id), by all of them together, or by a
    person number // 100.  When the target is constant within >= 80 % of the groups in which
    several members show it, a hidden value is the one the other members show; when the target
    equals the number of members on >= 90 % of the shown records, it is the member count.
    """
    groupings = household_groupings(released, target)
    candidates, findings = _household_candidates(released, target, groupings)
    return _guess("households", released, target, candidates, findings)


# ---------------------------------------------------------------------- 5. averaging
def household_averaging(released: pl.DataFrame, target: str) -> Guess:
    """The mean over the household of a household-level number perturbed per member.

    For every household grouping (see :func:`household_groupings`) in which the target varies
    little within the groups (within-group standard deviation < 0.5 of the overall one, but not
    zero), every record gets the mean of its group's shown values.  Guesses every record.
    """
    n = released.height
    if not released.schema[target].is_numeric():
        values, conf = _empty(n, released.schema[target])
        return Guess("averaging", target, values, conf, ("the target is not a number",))
    t = _clean(released.get_column(target)).cast(pl.Float64)
    mask = shown(released, target)
    overall = float(t.std() or 0.0)
    candidates, findings = [], []
    for name, g in household_groupings(released, target):
        frame = pl.DataFrame({"g": _clean(g), "t": t})
        stats = frame.with_columns(
            m=pl.col("t").mean().over("g"),
            k=pl.col("t").count().over("g"),
        )
        multi = stats.filter((pl.col("k") >= 2) & pl.col("g").is_not_null())
        if multi.height == 0 or overall == 0.0:
            continue
        within = float(np.sqrt(((multi["t"] - multi["m"]) ** 2).mean()))  # type: ignore[operator]
        ratio = within / overall
        if 0.0 < ratio < 0.5:
            findings.append(f"{name}: {target} varies within groups ({ratio:.2f} of its spread)")
            guess = stats.select(
                pl.when(pl.col("g").is_not_null() & pl.col("m").is_not_null())
                .then(pl.col("m"))
                .alias("m")
            ).to_series()
            candidates.append((guess, np.full(n, 1.0 - ratio)))
    guess = _guess("averaging", released, target, candidates, findings, only_hidden=False)
    if not candidates:  # nothing better than the released value itself
        return guess
    values = pl.select(
        pl.when(guess.values.is_null()).then(t).otherwise(guess.values).alias("guess")
    ).to_series()
    return Guess(
        guess.attack, target, values, np.where(mask, guess.confidence, 0.0), guess.findings
    )


# ---------------------------------------------------------------------- 6. identifiers
def identifier_columns(released: pl.DataFrame) -> list[str]:
    """Descriptions of the near-unique, identifier-like columns of the file."""
    out = []
    for col in released.columns:
        s = released.get_column(col)
        if not _identifier_like(s):
            continue
        present = _clean(s).drop_nulls()
        duplicates = len(present) - present.n_unique()
        out.append(
            f"{col} ({s.dtype}): {present.n_unique()} distinct values in {len(s)} records, "
            f"{len(s) - len(present)} missing, {duplicates} duplicated"
        )
    return out


def identifiers(released: pl.DataFrame, target: str) -> Guess:
    """Identifier-like columns of any storage type, and the households they rebuild.

    A column is reported when >= 90 % of the records have a value and >= 99 % of those values
    are distinct, and it holds whole numbers (integers, floats such as 101.0, digit strings) or
    strings.  Its values // 10, // 100 or // 1000 are tried as household numbers; the target is
    then guessed as in :func:`household_reconstruction` (other members, member count).
    """
    findings = identifier_columns(released)
    groupings = _identifier_groupings(released, target)
    candidates, more = _household_candidates(released, target, groupings)
    return _guess("identifiers", released, target, candidates, findings + more)


# ---------------------------------------------------------------------- 7. learning
def encode(released: pl.DataFrame, exclude: str) -> tuple[np.ndarray, list[str]]:
    """Every other column as numbers: strings as codes, dates as days, missing as -1e12."""
    columns, names = [], []
    for col in released.columns:
        if col == exclude:
            continue
        s = _clean(released.get_column(col))
        if s.dtype == pl.String or s.dtype == pl.Categorical or s.dtype == pl.Enum:
            x = s.cast(pl.String).rank("dense").cast(pl.Float64)
        elif s.dtype in (pl.Date, pl.Datetime):
            x = s.cast(pl.Date).cast(pl.Int64).cast(pl.Float64)
        elif s.dtype == pl.Boolean or s.dtype.is_numeric():
            x = s.cast(pl.Float64)
        else:
            continue
        columns.append(x.fill_null(-1e12).to_numpy())
        names.append(col)
    return np.column_stack(columns) if columns else np.zeros((released.height, 0)), names


def learning(released: pl.DataFrame, target: str) -> Guess:
    """A decision tree on every released column, trained where the target is shown.

    scikit-learn's ``DecisionTreeClassifier`` (a regressor for continuous targets), grown fully,
    predicts the hidden values; the confidence is the predicted class probability.
    """
    n = released.height
    t = released.get_column(target)
    mask = shown(released, target)
    x, names = encode(released, target)
    if mask.sum() < 2 or mask.all() or x.shape[1] == 0:
        values, conf = _empty(n, t.dtype)
        return Guess("learning", target, values, conf)
    if is_continuous(t):
        model = DecisionTreeRegressor(random_state=0, min_samples_leaf=2)
        model.fit(x[mask], t.to_numpy()[mask])
        pred = np.full(n, np.nan)
        pred[~mask] = model.predict(x[~mask])
        values = pl.Series("guess", pred).fill_nan(None).cast(t.dtype)
        return Guess("learning", target, values, np.where(mask, 0.0, 0.5))
    labels = t.cast(pl.String).to_numpy()
    model = DecisionTreeClassifier(random_state=0)
    model.fit(x[mask], labels[mask])
    proba = model.predict_proba(x[~mask])
    pred = np.full(n, None, dtype=object)
    pred[~mask] = model.classes_[proba.argmax(axis=1)]
    conf = np.zeros(n)
    conf[~mask] = proba.max(axis=1)
    values = pl.Series("guess", pred.tolist(), dtype=pl.String).cast(t.dtype, strict=False)
    importance = sorted(zip(model.feature_importances_, names, strict=True), reverse=True)[:3]
    findings = [f"tree splits mostly on {', '.join(f'{c} ({w:.2f})' for w, c in importance)}"]
    return Guess("learning", target, values, conf, tuple(findings))


#: The attackers, one per attack class, by name.
ATTACKS: dict[str, Callable[[pl.DataFrame, str], Guess]] = {
    "shared values": shared_values,
    "transformations": transformations,
    "record order": record_order,
    "households": household_reconstruction,
    "averaging": household_averaging,
    "identifiers": identifiers,
    "learning": learning,
}
