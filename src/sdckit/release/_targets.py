"""The protected values of a released file: what the attacks try to get back, and chance.

A value is protected when the released file does not show it as the original has it:

* **suppressed**: missing in the released file;
* **perturbed**: another category (PRAM, swapping) or another number (noise,
  microaggregation);
* **recoded**: a coarser category than the original (a band for an exact age): the fine value
  is protected, the band is shown;
* **withheld**: a key, linked or household-level variable the release leaves out.

The attacks learn from the released records, so a suppressed or perturbed value is scored at
the *released granularity*: its truth is the original value as the release shows that value
elsewhere (an age recoded into bands and then suppressed counts as given back when the band is
guessed).  A recoded or withheld value is never shown, so only a transformation of another
column can give it back.

*Chance* is how often a guess would be right without the channel that made it (see
:mod:`sdckit.release._chance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit.release._chance import Comparable
from sdckit.release._encode import CodedFrame, as_text, codes, is_missing

__all__ = ["CategoricalTarget", "NumericTarget", "categorical_target", "numeric_target"]

_ORDINAL = r"^\s*(-?\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class CategoricalTarget:
    """The protected values of one categorical variable, in the written record order."""

    name: str
    present: bool
    household_level: bool
    is_size: bool
    labels: np.ndarray
    label_text: tuple[str, ...]
    learn: np.ndarray
    truth: np.ndarray  # codes of the truth at released granularity (-1: not protected)
    shown_truth: np.ndarray  # the same for every record (-1: missing in the original)
    shown_ordinal: np.ndarray | None  # the leading number of each record's shown truth
    fine: np.ndarray
    fine_truth: np.ndarray  # codes of the original values of every record (-1: missing)
    fine_text: tuple[str, ...]  # the original value of each of those codes
    fine_ordinal: np.ndarray | None
    n_suppressed: int
    n_perturbed: int
    comparable: Comparable | None = None
    fine_comparable: Comparable | None = None

    @property
    def n_labels(self) -> int:
        return len(self.label_text)

    @property
    def n_learn(self) -> int:
        return int(self.learn.sum())

    @property
    def n_fine(self) -> int:
        return int(self.fine.sum())


@dataclass(frozen=True)
class NumericTarget:
    """The protected values of one numeric variable, in the written record order."""

    name: str
    household_level: bool
    released: np.ndarray
    original: np.ndarray
    perturbed: np.ndarray
    suppressed: np.ndarray


def categorical_target(
    name: str,
    original: pl.Series,
    released: pl.Series | None,
    *,
    household_level: bool,
    is_size: bool,
) -> CategoricalTarget | None:
    """The protected values of ``name`` (None when nothing is protected).

    ``original`` is aligned with the written records; ``released`` is the column as written
    (None when the release withholds the variable).
    """
    orig = as_text(original)
    n = len(orig)
    orig_missing = orig.is_null().to_numpy()
    if released is None:
        fine = ~orig_missing
        if not fine.any():
            return None
        fine_codes = orig.rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1
        return CategoricalTarget(
            name=name, present=False, household_level=household_level, is_size=is_size,
            labels=np.full(n, -1, np.int64), label_text=(), learn=np.zeros(n, bool),
            truth=np.full(n, -1, np.int64), shown_truth=np.full(n, -1, np.int64),
            shown_ordinal=None, fine=fine, fine_truth=fine_codes, fine_text=_texts(orig),
            fine_ordinal=_ordinal(orig),
            n_suppressed=0, n_perturbed=0,
        )  # fmt: skip
    rel = as_text(released)
    rel_missing = is_missing(released)
    suppressed = rel_missing & ~orig_missing
    differs = (rel != orig).fill_null(False).to_numpy() & ~rel_missing & ~orig_missing
    # how the release shows each original value: its most frequent released value
    shown = pl.DataFrame({"o": orig, "r": rel}).filter(
        pl.col("o").is_not_null() & pl.col("r").is_not_null()
    )
    mapping = (
        shown.group_by("o", "r")
        .len()
        .sort(["o", "len", "r"], descending=[False, True, False])
        .group_by("o", maintain_order=True)
        .first()
    )
    as_shown = orig.replace(mapping.get_column("o"), mapping.get_column("r"))
    recoded = differs & (as_shown == rel).fill_null(False).to_numpy()
    perturbed = differs & ~recoded
    learn = suppressed | perturbed
    fine = recoded
    if not (learn.any() or fine.any()):
        return None
    # one code space for the released labels and the truths at released granularity
    space = pl.concat([rel, as_shown]).drop_nulls().unique().sort()
    text = tuple(space.to_list())
    lookup = pl.DataFrame({"v": space, "code": np.arange(len(space), dtype=np.int64)})

    def encode(s: pl.Series) -> np.ndarray:
        joined = pl.DataFrame({"v": s}).join(lookup, on="v", how="left", maintain_order="left")
        return joined.get_column("code").fill_null(-1).to_numpy()

    labels = encode(rel)
    shown_truth = encode(as_shown)
    truth = np.where(learn, shown_truth, -1)
    fine_codes = orig.rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1
    return CategoricalTarget(
        name=name,
        present=True,
        household_level=household_level,
        is_size=is_size,
        labels=labels,
        label_text=text,
        learn=learn,
        truth=truth,
        shown_truth=shown_truth,
        shown_ordinal=_ordinal(as_shown) if learn.any() else None,
        fine=fine,
        fine_truth=fine_codes,
        fine_text=_texts(orig),
        fine_ordinal=_ordinal(orig) if fine.any() else None,
        n_suppressed=int(suppressed.sum()),
        n_perturbed=int(perturbed.sum()),
    )


def _texts(values: pl.Series) -> tuple[str, ...]:
    """The distinct texts in the order of their dense codes (``rank("dense")`` of texts)."""
    return tuple(values.drop_nulls().unique().sort().to_list())


def _ordinal(orig: pl.Series) -> np.ndarray | None:
    """The leading number of each value (``"05-09"`` -> 5), when every value has one."""
    kept = orig.drop_nulls()
    if kept.len() == 0:
        return None
    number = orig.str.extract(_ORDINAL, 1).cast(pl.Float64, strict=False)
    if number.drop_nulls().len() < kept.len():
        return None
    return number.to_numpy().astype(np.float64)


def numeric_target(
    name: str, original: pl.Series, released: pl.Series | None, *, household_level: bool
) -> NumericTarget | None:
    """The perturbed and suppressed values of a numeric variable (None when none)."""
    if released is None or not (released.dtype.is_numeric() and original.dtype.is_numeric()):
        return None
    orig = original.cast(pl.Float64).fill_nan(None).to_numpy().astype(np.float64)
    rel = released.cast(pl.Float64).fill_nan(None).to_numpy().astype(np.float64)
    o_ok, r_ok = ~np.isnan(orig), ~np.isnan(rel)
    scale = np.nanmax(np.abs(orig)) if o_ok.any() else 1.0
    perturbed = o_ok & r_ok & (np.abs(rel - np.where(o_ok, orig, 0.0)) > 1e-9 * (1.0 + scale))
    suppressed = o_ok & ~r_ok
    if not (perturbed.any() or suppressed.any()):
        return None
    return NumericTarget(name, household_level, rel, orig, perturbed, suppressed)


class GroupIndex:
    """Records sorted by group once, to test many columns for being constant within groups
    (a value missing for all members counts as the same; missing for some does not)."""

    def __init__(self, groups: np.ndarray) -> None:
        self.groups = groups
        self.order = np.argsort(groups, kind="stable")
        g = groups[self.order]
        self.starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if len(g) else g

    def constant(self, values: pl.Series | np.ndarray) -> bool:
        """Whether ``values`` (a column, or its :func:`codes`) is constant within groups."""
        if len(self.order) == 0:
            return True
        v = values if isinstance(values, np.ndarray) else codes(values)[0]
        v = v[self.order]
        low = np.minimum.reduceat(v, self.starts)
        return bool(np.all(low == np.maximum.reduceat(v, self.starts)))


def member_counts(groups: np.ndarray) -> np.ndarray:
    """Number of records in each record's group (groups: codes >= 0)."""
    counts = np.bincount(np.maximum(groups, 0))
    return counts[np.maximum(groups, 0)]


def is_size_of(groups: np.ndarray, values: pl.Series) -> bool:
    """Whether ``values`` equals the number of members of each group (a household size)."""
    if not (values.dtype.is_numeric() or values.dtype == pl.String):
        return False
    number = (values.cast(pl.Float64, strict=False) if values.dtype == pl.String
              else values.cast(pl.Float64)).fill_nan(None)  # fmt: skip
    shown = number.is_not_null().to_numpy()
    if not shown.any() or values.drop_nulls().len() > int(shown.sum()):
        return False  # no number, or some values are not numbers
    sizes = member_counts(groups).astype(np.float64)
    return bool(np.all(number.to_numpy()[shown] == sizes[shown]))


def household_columns(
    households: GroupIndex, coded: CodedFrame, columns: Sequence[str]
) -> list[str]:
    """The columns (of the frame of ``coded``) that are constant within the households and
    vary among them."""
    out = []
    for c in columns:
        values, n = coded(c)
        if n >= 2 and households.constant(values):
            out.append(c)
    return out
