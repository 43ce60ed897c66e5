"""Minimal unsafe combinations: why a record is at risk.

For each record, the smallest sets of key variables on which its sample frequency is below
``k`` (sets none of whose proper subsets is already below ``k``).  With ``k = 2`` these are the
record's minimal sample uniques (methods.md M3.3); larger ``k`` gives the combinations that break
k-anonymity.  Frequencies follow sdcMicro's ``freqCalc``: a missing key value matches any value.
The subset search is the one of :func:`sdckit.risk.suda2`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import FrameInfo, from_polars
from sdckit._results import Summary
from sdckit._validation import check_int
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk.suda import _mask_names, _minimal_sets

__all__ = ["UnsafeCombinationsResult", "minimal_unsafe_combinations"]


@dataclass(frozen=True, repr=False)
class UnsafeCombinationsResult:
    """The minimal combinations of key variables on which records have frequency below ``k``.

    Attributes
    ----------
    keys : tuple of str
        The key variables searched.
    k : int
        The frequency threshold: a combination is unsafe for a record if fewer than ``k``
        records (the record included) share its values on it.
    max_size : int
        Largest combination size searched.
    record : numpy.ndarray
        Position of the record of each (record, combination) pair, sorted by record, size and
        key order.
    mask : numpy.ndarray
        Bit mask of each combination (bit ``j`` = ``keys[j]``).
    size : numpy.ndarray
        Number of variables of each combination.
    below_k : numpy.ndarray
        Boolean per record: frequency below ``k`` on all key variables.
    """

    keys: tuple[str, ...]
    k: int
    max_size: int
    record: np.ndarray
    mask: np.ndarray
    size: np.ndarray
    below_k: np.ndarray
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def n_records(self) -> int:
        """Number of records in the data."""
        return len(self.below_k)

    @property
    def risky_records(self) -> np.ndarray:
        """Positions of the records with at least one unsafe combination."""
        return np.unique(self.record)

    def combinations_of(self, record: int) -> list[tuple[str, ...]]:
        """The minimal unsafe combinations of one record (by position), smallest first."""
        record = check_int(record, "record", minimum=0, maximum=self.n_records - 1)
        lo, hi = np.searchsorted(self.record, [record, record + 1])
        return [_mask_names(int(mk), self.keys) for mk in self.mask[lo:hi]]

    @cached_property
    def combinations(self) -> dict[int, list[tuple[str, ...]]]:
        """Record position -> its minimal unsafe combinations, for every risky record."""
        names = {int(mk): _mask_names(int(mk), self.keys) for mk in np.unique(self.mask)}
        out: dict[int, list[tuple[str, ...]]] = {}
        for rec, mk in zip(self.record.tolist(), self.mask.tolist(), strict=True):
            out.setdefault(rec, []).append(names[mk])
        return out

    @cached_property
    def combination_counts(self) -> dict[tuple[str, ...], int]:
        """Combination -> number of records for which it is a minimal unsafe combination
        (most frequent first)."""
        masks, counts = np.unique(self.mask, return_counts=True)
        order = np.lexsort((masks, -counts))
        return {_mask_names(int(masks[i]), self.keys): int(counts[i]) for i in order}

    @cached_property
    def variable_counts(self) -> dict[str, int]:
        """Variable -> number of risky records with the variable in one of their minimal
        unsafe combinations (most frequent first)."""
        counts: Counter[str] = Counter()
        for j, name in enumerate(self.keys):
            has = (self.mask >> j) & 1 == 1
            counts[name] = int(np.unique(self.record[has]).size)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], self.keys.index(item[0]))))

    def to_frame(self) -> Any:
        """Long form, one row per (record, combination): ``record`` (position), ``combination``
        (variable names joined by "+") and ``size``, in the caller's frame type."""
        names = {int(mk): "+".join(_mask_names(int(mk), self.keys)) for mk in np.unique(self.mask)}
        frame = pl.DataFrame(
            {
                "record": self.record.astype(np.int64),
                "combination": pl.Series([names[mk] for mk in self.mask.tolist()], dtype=pl.String),
                "size": self.size.astype(np.int64),
            }
        )
        if self.frame_info is None:
            return frame
        return from_polars(frame, self.frame_info, keep_index=False)

    def summary(self, top: int = 5) -> Summary:
        """File-level figures: risky records, combinations by size, the most frequent
        combinations and variables."""
        top = check_int(top, "top", minimum=0)
        risky = len(self.risky_records)
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            (f"records with frequency < {self.k} on all keys", int(self.below_k.sum())),
            ("records with an unsafe combination", risky),
            ("minimal unsafe combinations (record, set)", len(self.record)),
        ]
        sizes = np.bincount(self.size, minlength=self.max_size + 1)
        for s in range(1, self.max_size + 1):
            rows.append((f"combinations of size {s}", int(sizes[s])))
        for combo, count in list(self.combination_counts.items())[:top]:
            rows.append((f"records unsafe on {'+'.join(combo)}", count))
        for name, count in list(self.variable_counts.items())[:top]:
            rows.append((f"risky records involving {name}", count))
        notes = [
            f"key variables: {', '.join(self.keys)}; k = {self.k}; combinations up to size "
            f"{self.max_size}; a missing value matches any value"
        ]
        unexplained = int(self.below_k.sum()) - risky
        if unexplained:
            notes.append(
                f"{unexplained} record(s) below k on all keys have no unsafe combination of at "
                f"most {self.max_size} variables; raise max_size to see them."
            )
        return Summary("Minimal unsafe combinations", rows, notes)


def minimal_unsafe_combinations(
    data: Any, *, keys: Any = None, k: int = 2, max_size: int | None = None
) -> UnsafeCombinationsResult:
    """For each record, the smallest sets of key variables on which its frequency is below ``k``.

    A set is reported for a record if fewer than ``k`` records share the record's values on it
    and at least ``k`` do on each of its proper subsets.  With ``k = 2`` the sets are the
    record's minimal sample uniques (see :func:`~sdckit.risk.suda2`).  They show *why* a record
    is risky: recoding or suppressing one variable of each set removes the risk.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.Microdata`.
    keys : list of str, optional
        Categorical key variables (required unless ``data`` is a Microdata with keys).
    k : int, default 2
        Frequency threshold, at least 2 and at most the number of records.
    max_size : int, optional
        Largest set size searched (default: the number of key variables); with more than about
        12 keys, cap it (the search visits every subset of at most ``max_size`` keys).

    Returns
    -------
    UnsafeCombinationsResult

    Notes
    -----
    A missing key value matches any value (sdcMicro's ``freqCalc`` with ``alpha = 1``), so a
    record's missing variables never appear in its sets.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.unsafe import minimal_unsafe_combinations
    >>> df = pl.DataFrame({
    ...     "sex": ["m", "m", "f", "f", "m"],
    ...     "region": ["a", "b", "a", "b", "a"],
    ...     "age": [1, 1, 1, 1, 2],
    ... })
    >>> res = minimal_unsafe_combinations(df, keys=["sex", "region", "age"])
    >>> res.combinations_of(4)
    [('age',)]
    >>> res.combinations_of(1)
    [('sex', 'region')]
    """
    md: Microdata = as_microdata(data, keys=keys)
    md.require(keys=True, what="Minimal unsafe combinations")
    codes = md.key_codes.codes
    n, m = codes.shape
    k = check_int(k, "k", minimum=2)
    if k > n:
        raise ParameterError(
            f"The 'k' parameter must be at most the number of records ({n}); got {k}."
        )
    max_size = m if max_size is None else check_int(max_size, "max_size", minimum=1, maximum=m)
    sets = _minimal_sets(codes, max_size=max_size, threshold=k, wildcard=True)
    return UnsafeCombinationsResult(
        keys=md.keys,
        k=k,
        max_size=max_size,
        record=sets.record,
        mask=sets.mask,
        size=sets.size,
        below_k=sets.below,
        frame_info=md.frame_info,
    )
