"""Lining up a written file with its original, or refusing to (``sdckit check``).

A released file is written in a random record order drawn from the job's seed.  To check a
file already written, the order is drawn again from the seed; then the records are verified to
line up: some released column must agree with the original far more often than records
paired at random would (a protection changes few values of most columns; a file written with
another seed, or another file, agrees only by chance).  Nothing is checked on records that do
not line up: the check would count the wrong values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from sdckit.errors import DataError
from sdckit.release._encode import as_text

__all__ = ["alignment_agreement", "verify_alignment"]

#: The best column must agree this much better than chance (0: chance, 1: every record).
MIN_AGREEMENT = 0.8


def alignment_agreement(
    original: pl.DataFrame, written: pl.DataFrame, order: np.ndarray | None, columns: Sequence[str]
) -> tuple[float, str | None]:
    """The best agreement beyond chance of a column between the files, and the column.

    Agreement beyond chance is ``(a - c) / (1 - c)``: ``a`` the share of records showing the
    original's value, ``c`` the share expected from records paired at random (the sum of the
    squared shares of the values).
    """
    aligned = original if order is None else original[order]
    best, where = -1.0, None
    for col in columns:
        if col not in aligned.columns or col not in written.columns:
            continue
        o = as_text(aligned.get_column(col))
        w = as_text(written.get_column(col))
        both = o.is_not_null() & w.is_not_null()
        n = int(both.sum())
        if n < 2:
            continue
        o, w = o.filter(both), w.filter(both)
        if o.n_unique() < 2:
            continue
        a = float((o == w).mean() or 0.0)
        shares = o.value_counts(normalize=True).get_column("proportion").to_numpy()
        c = float((shares**2).sum())
        score = (a - c) / (1.0 - c) if c < 1.0 else 0.0
        if score > best:
            best, where = score, col
    return best, where


def verify_alignment(
    original: pl.DataFrame, written: pl.DataFrame, order: np.ndarray | None, columns: Sequence[str]
) -> None:
    """Raise :class:`DataError` unless the written records line up with the original's."""
    if written.height != original.height:
        raise DataError(
            f"The released file has {written.height:,} records and the original "
            f"{original.height:,}; the check pairs them record by record: give the file the "
            "job wrote, whole."
        )
    score, _ = alignment_agreement(original, written, order, columns)
    if score < MIN_AGREEMENT:
        raise DataError(
            "The released file's records do not line up with the original in the order the "
            "seed gives (no released column agrees with the original beyond chance); give "
            "the seed the file was written with (--seed, as given to sdckit protect), or "
            "check the file names."
        )
