"""Replicated uniques: synthetic records that reproduce an original sample unique.

A record of a synthetic (or otherwise protected) file whose key combination is that of exactly
one record of the original file points at that record: it *replicates a sample unique*.
:class:`~sdckit.masking.Synthesis` redraws such records unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_columns_exist, column_list
from sdckit.errors import ColumnError
from sdckit.microdata import as_microdata

__all__ = ["ReplicatedUniquesResult", "replicated_uniques"]


@dataclass(frozen=True, repr=False)
class ReplicatedUniquesResult:
    """Which synthetic records reproduce the key combination of an original sample unique.

    Attributes
    ----------
    keys : tuple of str
        The key variables compared.
    replicated : numpy.ndarray
        Boolean per synthetic record: its key combination is that of an original sample unique.
    n_replicated : int
        Number of synthetic records that replicate a sample unique.
    n_original_uniques : int
        Number of sample uniques (key combinations held by one record) of the original file.
    n_records : int
        Number of synthetic records.
    """

    keys: tuple[str, ...]
    replicated: np.ndarray
    n_replicated: int
    n_original_uniques: int
    n_records: int
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def share(self) -> float:
        """Share of the synthetic records that replicate a sample unique (0 for no records)."""
        return self.n_replicated / self.n_records if self.n_records else 0.0

    def to_frame(self) -> Any:
        """One row per synthetic record (caller's frame type): ``replicated_unique``."""
        return records_frame({"replicated_unique": self.replicated}, self.frame_info)

    def summary(self) -> Summary:
        """Counts of original sample uniques and of synthetic records replicating one."""
        rows: list[tuple[str, Any]] = [
            ("key variables", ", ".join(self.keys)),
            ("sample uniques in the original file", self.n_original_uniques),
            ("synthetic records", self.n_records),
            ("synthetic records replicating a sample unique", self.n_replicated),
            ("share replicating a sample unique", self.share),
        ]
        return Summary("Replicated sample uniques", rows)

    def __repr__(self) -> str:
        return (
            f"ReplicatedUniquesResult(keys={list(self.keys)}, n_replicated={self.n_replicated}, "
            f"n_records={self.n_records})"
        )


def replicated_uniques(
    original: Any, synthetic: Any, keys: Sequence[str] | None = None
) -> ReplicatedUniquesResult:
    """Find the synthetic records that reproduce the keys of an original sample unique.

    Parameters
    ----------
    original, synthetic : DataFrame, Microdata or Protected
        The original file and the synthetic (or protected) file; they may differ in size.
    keys : list of str, optional
        Key variables (default: the keys of the original Microdata).  Missing values are a
        value of their own.

    Returns
    -------
    ReplicatedUniquesResult
        ``replicated`` is True for every synthetic record whose key combination is held by
        exactly one original record.

    Examples
    --------
    >>> import polars as pl
    >>> o = pl.DataFrame({"a": [1, 1, 2], "b": [1, 1, 3]})
    >>> s = pl.DataFrame({"a": [2, 1, 2], "b": [3, 1, 1]})
    >>> res = replicated_uniques(o, s, ["a", "b"])
    >>> res.replicated.tolist(), res.n_replicated, res.n_original_uniques
    ([True, False, False], 1, 1)
    """
    md_left = as_microdata(original)
    md_right = as_microdata(synthetic)
    left, right = md_left.frame, md_right.frame
    cols = list(column_list(keys, "keys")) or list(md_left.keys)
    if not cols:
        raise ColumnError(
            "No key variables to compare; pass keys=[...] or an original Microdata with keys."
        )
    check_columns_exist(cols, list(left.columns), "key (original file)")
    check_columns_exist(cols, list(right.columns), "key (synthetic file)")
    uniques = (
        left.group_by(cols)
        .len()
        .filter(pl.col("len") == 1)
        .drop("len")
        .with_columns(_u=pl.lit(True))
    )
    joined = (
        right.select(cols)
        .with_row_index("_row")
        .join(uniques, on=cols, how="left", nulls_equal=True)
    )
    flags = joined.sort("_row").get_column("_u").fill_null(False).to_numpy()
    return ReplicatedUniquesResult(
        keys=tuple(cols),
        replicated=flags,
        n_replicated=int(np.count_nonzero(flags)),
        n_original_uniques=uniques.height,
        n_records=right.height,
        frame_info=md_right.frame_info,
    )
