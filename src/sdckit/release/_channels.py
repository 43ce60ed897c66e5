"""The attacker's view of a released file: groupings and orderings of its records.

Every released column, whatever its type, is a *channel*: the records that share its value form
a group (a float weight, a date, a remark), and so do the records that share a simple
transformation of it (rounding, integer division by 10, 100 or 1,000, the year or month of a
date, each word of a text).  Numbers, dates and the record order also *order* the records:
neighbours in that order are the attacker's other evidence.  Households are rebuilt from the
released household id, from the vector of columns that are the same for every member, from
runs of such values in the record order, and from near-unique numbers divided by a power of
ten (a person number ``household * 100 + member``).

Which columns are the same for every member of a household is read from the original file, as
an intruder reads it from the survey's documentation; every group is formed from the released
values only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit.release._encode import CodedFrame, as_number, codes, joint_codes

__all__ = ["Channels", "Grouping", "Ordering", "build_channels"]

#: A grouping is a classification (a structural map can be read from it) when its groups hold
#: on average at least this many records.
MIN_CLASS = 10
#: Numbers and dates with at least this many distinct values also order the records.
MIN_ORDERED = 20
#: Integers with more distinct values than this are also divided by 10, 100 and 1,000.
MIN_DIVIDED = 100
#: Texts whose values have more than one word in at least this share are also split in words.
TEXT_SHARE = 0.2
_WORD = r"[0-9A-Za-z\u00c0-\u024f]{3,}"


@dataclass(frozen=True)
class Grouping:
    """Records sharing a value (of a column or of a transformation of it).

    Attributes
    ----------
    label : str
        The channel in words (``"'weight'"``, ``"'person_id' (divided by 100)"``, ``"the
        words of 'remark'"``).
    column : str
        The released column carrying it ("" for the record order).
    codes : numpy.ndarray
        Group of each record (or of each pair, see ``rows``); -1 for none.
    n_groups : int
    rows : numpy.ndarray or None
        For a grouping in which a record may be in several groups (the words of a text): the
        record of each entry of ``codes``.
    household : bool
        Whether it rebuilds households (the household id, household-wide columns, runs).
    """

    label: str
    column: str
    codes: np.ndarray
    n_groups: int
    rows: np.ndarray | None = None
    household: bool = False

    @property
    def coarse(self) -> bool:
        """Whether the groups hold on average at least :data:`MIN_CLASS` records."""
        used = int(np.count_nonzero(self.codes >= 0))
        return self.n_groups > 0 and used / self.n_groups >= MIN_CLASS


@dataclass(frozen=True)
class Ordering:
    """Records ordered by a number, a date or their position in the file."""

    label: str
    column: str
    order: np.ndarray


@dataclass(frozen=True)
class Channels:
    """Every grouping and ordering of a released file."""

    groupings: tuple[Grouping, ...]
    orderings: tuple[Ordering, ...]


def _grouping(label: str, column: str, s: pl.Series, **kw: object) -> Grouping | None:
    c, n = codes(s)
    if n < 2 and not kw.get("household"):
        return None
    return Grouping(label, column, c, n, **kw)  # type: ignore[arg-type]


def _numeric_channels(
    name: str, label: str, values: np.ndarray, groups: list[Grouping], orders: list[Ordering]
) -> None:
    ok = ~np.isnan(values)
    if ok.sum() < 2:
        return
    distinct = np.unique(values[ok])
    if len(distinct) >= MIN_ORDERED:
        idx = np.flatnonzero(ok)
        orders.append(Ordering(label, name, idx[np.argsort(values[ok], kind="stable")]))
    whole = bool(np.all(distinct == np.round(distinct)))
    if not whole:
        for how, fn in (("rounded", np.round), ("whole part", np.floor)):
            shown = np.where(ok, fn(np.where(ok, values, 0.0)), np.nan)
            derived = pl.Series(shown).fill_nan(None)
            if derived.n_unique() < len(distinct):
                g = _grouping(f"{label} ({how})", name, derived)
                if g is not None:
                    groups.append(g)
    elif len(distinct) > MIN_DIVIDED:
        for power in (10, 100, 1000):
            quotient = np.floor_divide(np.where(ok, values, 0), power)
            derived = pl.Series(np.where(ok, quotient, np.nan))
            derived = derived.fill_nan(None)
            u = derived.n_unique()
            if 2 <= u <= len(distinct) / 2:
                g = _grouping(f"{label} (divided by {power})", name, derived)
                if g is not None:
                    groups.append(g)


def _temporal_channels(
    name: str, label: str, s: pl.Series, groups: list[Grouping], orders: list[Ordering]
) -> None:
    if s.dtype in (pl.Date, pl.Datetime) or isinstance(s.dtype, pl.Datetime):
        for how, expr in (("year", s.dt.year()), ("year and month", s.dt.strftime("%Y-%m"))):
            g = _grouping(f"{label} ({how})", name, expr)
            if g is not None:
                groups.append(g)
    values = as_number(s)
    ok = ~np.isnan(values)
    if len(np.unique(values[ok])) >= MIN_ORDERED:
        idx = np.flatnonzero(ok)
        orders.append(Ordering(label, name, idx[np.argsort(values[ok], kind="stable")]))


def _text_channels(
    name: str, label: str, s: pl.Series, groups: list[Grouping], orders: list[Ordering]
) -> None:
    kept = s.drop_nulls()
    if kept.len() == 0:
        return
    # parse the whole column only if it may pass: a sample spread over the whole file (the
    # head of a sorted file is not the file), tested with a looser bar than the column's
    at = np.linspace(0, kept.len() - 1, min(kept.len(), 1000)).astype(np.int64)
    sample = kept.gather(at).str.strip_chars()
    if sample.str.to_date(strict=False).drop_nulls().len() >= 0.8 * sample.len():
        as_date = s.str.strip_chars().str.to_date(strict=False)
        if as_date.drop_nulls().len() >= 0.95 * kept.len():
            _temporal_channels(name, f"{label} (as a date)", as_date, groups, orders)
            return
    if sample.cast(pl.Float64, strict=False).drop_nulls().len() >= 0.8 * sample.len():
        as_num = s.str.strip_chars().cast(pl.Float64, strict=False)
        if as_num.drop_nulls().len() >= 0.95 * kept.len():
            _numeric_channels(name, f"{label} (as a number)", as_num.to_numpy(), groups, orders)
            return
    words = s.str.to_lowercase().str.extract_all(_WORD)
    several = words.list.len().fill_null(0) > 1
    if several.sum() < TEXT_SHARE * kept.len() or s.n_unique() < MIN_ORDERED:
        return
    pairs = (
        pl.DataFrame({"row": np.arange(len(s), dtype=np.int64), "w": words})
        .explode("w")
        .drop_nulls("w")
        .unique(["row", "w"], maintain_order=True)
    )
    if pairs.height == 0:
        return
    word_codes, n = codes(pairs.get_column("w"))
    rows = pairs.get_column("row").to_numpy()
    groups.append(Grouping(f"the words of {label}", name, word_codes, n, rows=rows))


def build_channels(
    released: pl.DataFrame,
    coded: CodedFrame,
    *,
    households: np.ndarray | None,
    household_id: str | None,
    household_columns: Sequence[str],
    size_column: str | None,
) -> Channels:
    """Every grouping and ordering of ``released`` (see the module docstring).

    Parameters
    ----------
    released : polars.DataFrame
        The file as written (record order included).
    coded : CodedFrame
        The codes of its columns.
    households : numpy.ndarray or None
        The true household of each record (to choose the household-wide columns only).
    household_id : str or None
        The released household id column, if any.
    household_columns : sequence of str
        Released columns the same for every member of a household.
    size_column : str or None
        A released column that is the household's number of members.
    """
    groups: list[Grouping] = []
    orders: list[Ordering] = [
        Ordering("the record order", "", np.arange(released.height, dtype=np.int64))
    ]
    for name in released.columns:
        s = released.get_column(name)
        label = repr(name)
        dtype = s.dtype
        if dtype.is_nested() or dtype == pl.Object or dtype == pl.Null:
            continue
        values, n = coded(name)
        if n >= 2 or name == household_id:
            groups.append(Grouping(label, name, values, n, household=name == household_id))
        if dtype.is_numeric():
            _numeric_channels(name, label, as_number(s), groups, orders)
        elif dtype.is_temporal():
            _temporal_channels(name, label, s, groups, orders)
        elif dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
            _text_channels(name, label, s.cast(pl.String), groups, orders)
    if households is not None and household_columns:
        groups.extend(_rebuilt_households(released, coded, household_columns, size_column))
    return Channels(tuple(groups), tuple(orders))


def _rebuilt_households(
    released: pl.DataFrame, coded: CodedFrame, columns: Sequence[str], size_column: str | None
) -> list[Grouping]:
    """Households rebuilt from the household-wide columns, and from their runs in the order."""
    out: list[Grouping] = []
    parts = []
    for c in columns:
        cc, _ = coded(c)
        parts.append(np.where(cc < 0, np.int64(-2), cc) + 2)  # a missing value is a value here
    vector, n = joint_codes(*parts)
    names = ", ".join(repr(c) for c in columns)
    if len(columns) > 1:
        out.append(Grouping(f"households rebuilt from ({names})", columns[0], vector, n,
                            household=True))  # fmt: skip
    # runs of the same vector in the record order (members written next to each other)
    start = np.ones(len(vector), dtype=bool)
    start[1:] = vector[1:] != vector[:-1]
    run = np.cumsum(start) - 1
    if size_column is not None:
        size = as_number(released.get_column(size_column))
        first = np.flatnonzero(start)
        position = np.arange(len(vector)) - first[run]
        run_size = size[first[run]]
        usable = ~np.isnan(run_size) & (run_size >= 1)
        chunk = np.where(usable, position // np.where(usable, run_size, 1), 0).astype(np.int64)
        run, _ = joint_codes(run, chunk)
    n_runs = int(run.max()) + 1 if len(run) else 0
    if n_runs < len(vector):
        out.append(Grouping(f"runs of ({names}) in the record order", columns[0], run, n_runs,
                            household=True))  # fmt: skip
    return out
