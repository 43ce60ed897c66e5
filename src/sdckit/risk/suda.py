"""SUDA2: minimal sample uniques (MSUs), SUDA scores and DIS-SUDA scores.

methods.md M3.3.  A set ``A`` of key variables is a *minimal sample unique* of a record if no
other record shares the record's values on ``A`` while some other record shares them on every
proper subset of ``A``.  The SUDA score adds a weight per MSU that is larger for smaller MSUs;
DIS-SUDA turns the scores into probabilities of a correct match (Elliot et al. 2002, Skinner and
Elliot 2002).  Scores and DIS-SUDA scores equal those of sdcMicro's ``suda2``.

The search enumerates subsets of the key variables level by level (by size) over the distinct key
combinations, for the records unique on all keys only (the only ones that can have an MSU).
Uniqueness is monotone, so a set is minimal exactly when none of its subsets one variable smaller
is unique; a record already unique on such a subset is not counted again ("closed"), and a record
is dropped once too few of its sets are open to form a larger one.  Only the open records and the
records that are not unique on all keys need counting (another record sharing an open record's
values on a set shares them on every subset, so it is open too).  Counting uses mixed-radix keys
with direct addressing or, for large key spaces, a hash table compiled with numba.  The same
enumeration, with "frequency below k" instead of "unique", gives the minimal unsafe combinations of
:mod:`sdckit.risk.unsafe`.

Missing key values (``missing=``): sdcMicro's ``suda2`` never lets a record's missing variables
into its MSUs and compares a missing value with other records as a value of its own (equal to
missing only); this is the default.  ``"category"`` also lets missing values into MSUs (an
ordinary level), ``"wildcard"`` lets them match any value (sdcMicro's ``freqCalc`` view, the one of
:func:`~sdckit.risk.frequencies` and of k-anonymity after local suppression).

Variable contributions credit every variable of an MSU with the MSU's weight.  sdcMicro's C++ code
deviates from this when two items (variable = value) hold for exactly the same records of the
whole file (it credits such "correlated" items differently); its scores are not affected.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numba
import numpy as np
import polars as pl

from sdckit._codes import KeyCodes, combine_codes, first_index, group_ids
from sdckit._frames import FrameInfo, from_polars
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int, check_real
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk._frequencies import _wildcard_counts

__all__ = ["Suda2Result", "suda2"]

#: The treatments of missing key values (see :func:`suda2`).
SudaMissing = Literal["sdcmicro", "category", "wildcard"]
MISSING_MODES: tuple[str, ...] = ("sdcmicro", "category", "wildcard")

# Above this many key variables the bit masks would not fit an int64 comfortably, and the search
# over 2^m subsets is hopeless anyway.
_MAX_KEYS = 62


# --------------------------------------------------------------------------------------------
# The shared subset search
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _candidate_counts(
    keys: np.ndarray, multiplicity: np.ndarray, candidates: np.ndarray
) -> np.ndarray:  # pragma: no cover - compiled
    """Sum of ``multiplicity`` over all rows sharing the (non-negative) key of each candidate."""
    n_cand = candidates.shape[0]
    size = 2
    while size < 2 * n_cand:
        size *= 2
    mask = np.uint64(size - 1)
    mix = np.uint64(0x9E3779B97F4A7C15)
    table_key = np.full(size, -1, dtype=np.int64)
    total = np.zeros(size, dtype=np.int64)
    slot = np.empty(n_cand, dtype=np.int64)
    for c in range(n_cand):
        key = keys[candidates[c]]
        h = ((np.uint64(key) * mix) >> np.uint64(20)) & mask
        while table_key[h] != -1 and table_key[h] != key:
            h = (h + np.uint64(1)) & mask
        table_key[h] = key
        slot[c] = np.int64(h)
    for r in range(keys.shape[0]):
        key = keys[r]
        h = ((np.uint64(key) * mix) >> np.uint64(20)) & mask
        while table_key[h] != -1:
            if table_key[h] == key:
                total[h] += multiplicity[r]
                break
            h = (h + np.uint64(1)) & mask
    out = np.empty(n_cand, dtype=np.int64)
    for c in range(n_cand):
        out[c] = total[slot[c]]
    return out


@numba.njit(cache=True)
def _open_counts(
    shifted: np.ndarray,
    radix: np.ndarray,
    combo: np.ndarray,
    other_rows: np.ndarray,
    cand_rows: np.ndarray,
    idx: np.ndarray,
    multiplicity: np.ndarray,
    buffer: np.ndarray,
) -> np.ndarray:  # pragma: no cover - compiled
    """Frequency on ``combo`` of the candidates ``cand_rows[idx]``, counted among those
    candidates and ``other_rows`` (mixed-radix keys; ``buffer`` is an all-zero scratch array
    used for direct counting when the key space fits, and left all zero)."""
    n_other = other_rows.shape[0]
    n_cand = idx.shape[0]
    total = n_other + n_cand
    keys = np.empty(total, dtype=np.int64)
    weight = np.empty(total, dtype=np.int64)
    bound = 1
    for j in combo:
        bound *= radix[j]
    for t in range(total):
        r = other_rows[t] if t < n_other else cand_rows[idx[t - n_other]]
        key = 0
        for j in combo:
            key = key * radix[j] + shifted[r, j]
        keys[t] = key
        weight[t] = multiplicity[r]
    out = np.empty(n_cand, dtype=np.int64)
    if bound <= buffer.shape[0]:
        for t in range(total):
            buffer[keys[t]] += weight[t]
        for c in range(n_cand):
            out[c] = buffer[keys[n_other + c]]
        for t in range(total):
            buffer[keys[t]] = 0
        return out
    report = np.arange(n_other, total)
    return _candidate_counts(keys, weight, report)


class _Rows:
    """The distinct key combinations, prepared for counting on any subset of the keys."""

    def __init__(
        self, codes: np.ndarray, multiplicity: np.ndarray, threshold: int, wildcard: bool
    ) -> None:
        self.codes = codes
        self.n_rows = codes.shape[0]
        self.multiplicity = multiplicity
        # with threshold 2 a candidate is below iff no other row shares its key: plain counts do
        self.weights = (
            None if int(multiplicity.max(initial=1)) <= 1 or threshold == 2 else (multiplicity)
        )
        self.wildcard = wildcard
        # shifted codes (missing = 0) as int64 columns, and their radices
        self.columns = [codes[:, j].astype(np.int64) + 1 for j in range(codes.shape[1])]
        self.radix = [int(col.max()) + 1 for col in self.columns]
        self.column_missing = [bool((col == 0).any()) for col in self.columns]
        self.shifted = np.ascontiguousarray(codes + 1, dtype=np.int32)
        self.radix_array = np.array(self.radix, dtype=np.int64)
        # scratch for direct counting: key spaces up to 4 per row (at most 2^23 entries, 64 MB)
        self.buffer = np.zeros(min(max(4 * self.n_rows, 1 << 16), 1 << 23), dtype=np.int64)

    def counts_open(
        self,
        columns: tuple[int, ...],
        other_rows: np.ndarray,
        cand_rows: np.ndarray,
        idx: np.ndarray,
    ) -> np.ndarray:
        """Frequency on ``columns`` of the candidates ``cand_rows[idx]`` among themselves and
        ``other_rows`` (exact whenever no other row can share their values; see
        :func:`_minimal_sets`)."""
        bound = 1
        for j in columns:
            bound *= self.radix[j]
        wild = self.wildcard and any(self.column_missing[j] for j in columns)
        if wild or bound >= 1 << 62:
            count_rows = np.concatenate([other_rows, cand_rows[idx]])
            report = np.arange(len(other_rows), len(count_rows))
            return self.counts(columns, count_rows, report)
        combo = np.array(columns, dtype=np.int64)
        return _open_counts(
            self.shifted,
            self.radix_array,
            combo,
            other_rows,
            cand_rows,
            idx,
            self.multiplicity,
            self.buffer,
        )

    def counts(
        self, columns: tuple[int, ...], rows: np.ndarray | None, report: np.ndarray
    ) -> np.ndarray:
        """Frequency on ``columns`` among ``rows`` (all if None) of the rows at ``report``.

        Rows are weighted by their multiplicity; ``report`` indexes into ``rows``.
        """
        if self.wildcard and any(self.column_missing[j] for j in columns):
            sub = self.codes[:, list(columns)] if rows is None else self.codes[rows][:, columns]
            weights = self.multiplicity if rows is None else self.multiplicity[rows]
            _, weighted, _ = _wildcard_counts(sub, weights.astype(np.float64), 1.0)
            return np.rint(weighted[report]).astype(np.int64)
        bound = 1
        for j in columns:
            bound *= self.radix[j]
        if bound >= 1 << 62:
            sub = self.codes if rows is None else self.codes[rows]
            keys, bound = combine_codes(sub, columns)
        else:
            first = self.columns[columns[0]]
            keys = first.copy() if rows is None else first[rows]
            for j in columns[1:]:
                keys *= self.radix[j]
                keys += self.columns[j] if rows is None else self.columns[j][rows]
        n_rows = len(keys)
        weights = self.weights if rows is None or self.weights is None else self.weights[rows]
        if bound <= max(4 * n_rows, 1 << 16):
            totals = np.bincount(keys, weights=weights, minlength=bound)
            return totals[keys[report]].astype(np.int64)
        multiplicity = self.multiplicity if rows is None else self.multiplicity[rows]
        return _candidate_counts(keys, multiplicity, report)


@dataclass(frozen=True)
class _MinimalSets:
    """All minimal sets of key variables on which a record's frequency is below a threshold.

    ``record[t]`` has the minimal set ``mask[t]`` (bit ``j`` = key column ``j``) of ``size[t]``
    variables; sorted by record, size and mask.  ``group_count`` is the frequency of each record
    on all keys (missing as a value), ``below`` marks the records below the threshold on all keys.
    """

    record: np.ndarray
    mask: np.ndarray
    size: np.ndarray
    group_count: np.ndarray
    below: np.ndarray


def _check_codes(codes: np.ndarray) -> None:
    if codes.shape[1] > _MAX_KEYS:
        raise ParameterError(
            f"The 'keys' parameter names {codes.shape[1]} key variables; at most {_MAX_KEYS} "
            "are supported (and more than about 15 need max_size to stay fast)."
        )


def _minimal_sets(
    codes: np.ndarray, *, max_size: int, threshold: int, wildcard: bool
) -> _MinimalSets:
    """Find every record's minimal sets of keys with frequency below ``threshold``.

    ``wildcard=False`` is SUDA2's view of missing values: a missing value is a value of its own
    when counting, and a record's missing variables never form part of its sets.
    ``wildcard=True`` is sdcMicro's frequency view: a missing value matches any value.
    """
    _check_codes(codes)
    m = codes.shape[1]
    gid, n_groups = group_ids(codes)
    counts = np.bincount(gid, minlength=n_groups)
    first = first_index(gid, n_groups)
    rows = np.ascontiguousarray(codes[first])
    multiplicity = np.minimum(counts, threshold).astype(np.int64)
    prepared = _Rows(rows, multiplicity, threshold, wildcard)
    has_missing = bool((rows < 0).any())
    if wildcard and has_missing:
        _, full, _ = _wildcard_counts(rows, multiplicity.astype(np.float64), 1.0)
        below_group = np.rint(full) < threshold
    else:
        below_group = counts < threshold
    below = below_group[gid]
    group_count = counts[gid]

    cand_rows = np.flatnonzero(below_group).astype(np.int64)
    # Without wildcards, a row sharing an open candidate's values on a set shares its values on
    # every subset, so it is itself not below on any of them: only the rows above the threshold
    # on all keys and the open candidates need counting.
    restricted = not (wildcard and has_missing)
    other_rows = np.flatnonzero(~below_group).astype(np.int64)
    cand_ids = np.arange(len(cand_rows), dtype=np.int64)
    bits = np.left_shift(np.int64(1), np.arange(m, dtype=np.int64))
    if wildcard or not has_missing:
        missing_bits = np.zeros(len(cand_rows), dtype=np.int64)
    else:
        missing_bits = ((rows[cand_rows] < 0) * bits).sum(axis=1).astype(np.int64)

    found_cand: list[np.ndarray] = []
    found_mask: list[int] = []
    found_count: list[int] = []
    # Flags "below the threshold on this set" per candidate, bit-packed (8 candidates a byte),
    # kept for the previous and the current size only.
    n_alive = len(cand_rows)
    previous: dict[int, np.ndarray] = {0: np.packbits(np.zeros(n_alive, dtype=bool))}
    for size in range(1, max_size + 1):
        if n_alive == 0:
            break
        current: dict[int, np.ndarray] = {}
        open_sets = np.zeros(n_alive, dtype=np.int32)
        any_missing = bool(missing_bits.any())
        all_eligible = np.packbits(np.ones(n_alive, dtype=bool))
        for combo in itertools.combinations(range(m), size):
            set_mask = int(sum(1 << j for j in combo))
            if any_missing:
                eligible = np.packbits((missing_bits & set_mask) == 0)
            else:
                eligible = all_eligible
            # "open": eligible, and not below the threshold on any one-smaller subset
            packed = eligible.copy()
            for j in combo:
                packed &= ~previous[set_mask ^ (1 << j)]
            still_open = np.unpackbits(packed, count=n_alive).view(bool)
            idx = np.flatnonzero(still_open)
            if len(idx):
                if restricted:
                    freq = prepared.counts_open(combo, other_rows, cand_rows, idx)
                else:
                    freq = prepared.counts(combo, None, cand_rows[idx])
                hit = idx[freq < threshold]
                if len(hit):
                    still_open[hit] = False
                    found_cand.append(cand_ids[hit])
                    found_mask.append(set_mask)
                    found_count.append(len(hit))
            if size < max_size:
                # below here = eligible and not open (below on a subset, by monotonicity, or hit)
                current[set_mask] = eligible & ~np.packbits(still_open)
                open_sets += still_open
        previous = current
        if size < max_size:
            # a record can get a set of size+1 only if size+1 of its size-sets are still open
            keep = open_sets >= size + 1
            if not keep.all():
                cand_rows, cand_ids, missing_bits = (
                    cand_rows[keep],
                    cand_ids[keep],
                    missing_bits[keep],
                )
                previous = {
                    k: np.packbits(np.unpackbits(v, count=n_alive).view(bool)[keep])
                    for k, v in previous.items()
                }
                n_alive = len(cand_rows)

    if found_cand:
        cand = np.concatenate(found_cand)
        masks = np.repeat(np.array(found_mask, dtype=np.int64), found_count)
    else:
        cand = np.zeros(0, dtype=np.int64)
        masks = np.zeros(0, dtype=np.int64)
    # candidate -> group -> records of the group (several records only when threshold > 2)
    cand_groups = np.flatnonzero(below_group).astype(np.int64)
    members = np.flatnonzero(below)
    members = members[np.argsort(gid[members], kind="stable")]
    starts = np.searchsorted(gid[members], cand_groups)
    reps = counts[cand_groups][cand]
    offsets = np.arange(int(reps.sum()), dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    records = members[np.repeat(starts[cand], reps) + offsets]
    masks = np.repeat(masks, reps)
    sizes = _popcount(masks)
    sort = np.lexsort((masks, sizes, records))
    return _MinimalSets(
        record=records[sort].astype(np.int64),
        mask=masks[sort],
        size=sizes[sort],
        group_count=group_count,
        below=below,
    )


def _popcount(masks: np.ndarray) -> np.ndarray:
    """Number of set bits of each int64 mask."""
    out = np.zeros(len(masks), dtype=np.int64)
    work = masks.astype(np.int64, copy=True)
    while bool(work.any()):
        out += work & 1
        work >>= 1
    return out


def _mask_names(mask: int, names: tuple[str, ...]) -> tuple[str, ...]:
    """The key variables of a bit mask, in key order."""
    return tuple(name for j, name in enumerate(names) if (mask >> j) & 1)


# --------------------------------------------------------------------------------------------
# SUDA2
# --------------------------------------------------------------------------------------------


def _msu_weights(n_keys: int, original_scores: bool) -> np.ndarray:
    """Weight of an MSU of each size 1..n_keys (index size - 1), as sdcMicro computes it."""
    m = n_keys
    sizes = np.arange(1, m + 1)
    if original_scores:
        return np.array([float(math.factorial(m - s)) for s in sizes])
    return np.array(
        [
            (2.0 ** (m - s) - 1.0) * math.factorial(s) * math.factorial(m - s) / math.factorial(m)
            for s in sizes
        ]
    )


def _dis_scores(
    score: np.ndarray, n_keys: int, n_uniques: int, n_pairs: int, dis_fraction: float
) -> np.ndarray:
    """DIS-SUDA scores (methods.md M3.3), with sdcMicro's single-precision constants."""
    out = np.zeros(len(score), dtype=np.float64)
    positive = score > 0
    if not positive.any():
        return out
    f32 = np.float32
    fraction = f32(dis_fraction)
    uniques = f32(n_uniques)
    dis = (uniques * fraction) / (uniques * fraction + f32(n_pairs) * (f32(1.0) - fraction))
    odds = float(uniques / dis - uniques)
    q = float(f32(1.0) + (f32(8.0) - f32(n_keys)) / f32(20.0))
    powered = np.power(score[positive], q)
    adjust = float(np.sum(1.0 / powered))
    out[positive] = 1.0 / (1.0 + odds / (powered * adjust))
    return out


def _level_table(
    codes: KeyCodes, records: np.ndarray, raw: np.ndarray, missing_level: bool
) -> pl.DataFrame:
    """Per level of each key, the percent of the variable's credited weight (see Suda2Result).

    With ``missing_level``, a variable with missing values gets a last row (level null) for the
    weight credited to its missing values (only ``missing="category"`` credits any).
    """
    variables: list[str] = []
    levels: list[str | None] = []
    shares: list[np.ndarray] = []
    for j, name in enumerate(codes.names):
        level_values: list[str | None] = [str(v) for v in codes.levels[j].cast(pl.String)]
        col = codes.codes[records, j]
        present = col >= 0
        sums = np.bincount(col[present], weights=raw[present, j], minlength=len(level_values))
        if missing_level and bool((codes.codes[:, j] < 0).any()):
            level_values.append(None)
            sums = np.append(sums, float(raw[~present, j].sum()))
        total = float(raw[:, j].sum())
        share = 100.0 * sums / total if total > 0 else np.full(len(level_values), np.nan)
        variables += [name] * len(level_values)
        levels += level_values
        shares.append(share)
    return pl.DataFrame(
        {
            "variable": pl.Series(variables, dtype=pl.String),
            "level": pl.Series(levels, dtype=pl.String),
            "contribution": np.concatenate(shares) if shares else np.zeros(0),
        }
    )


@dataclass(frozen=True, repr=False)
class Suda2Result:
    """SUDA and DIS-SUDA scores, MSU counts and variable contributions.

    Attributes
    ----------
    keys : tuple of str
        The key variables, in the order of the contribution columns.
    score : numpy.ndarray
        SUDA score of each record (0 for records that are not sample unique).
    dis_score : numpy.ndarray
        DIS-SUDA score of each record: an estimate of the probability that a match of the record
        to the population is correct (0 where the SUDA score is 0).
    msu_count : numpy.ndarray
        Number of minimal sample uniques of each record.
    scored_records : numpy.ndarray
        Positions of the records with at least one MSU (sorted).
    scored_contributions : numpy.ndarray
        ``(len(scored_records), m)``: the share of each such record's score credited to each key
        variable (every variable of an MSU is credited with the MSU's weight, divided by the
        record's score; sdcMicro's ``contributionPercent``, a fraction).  The full ``(n, m)``
        matrix, with zero rows for the other records, is :attr:`record_contributions`.
    contributions : numpy.ndarray
        File-level contribution of each key variable in percent:
        ``100 * sum_i record_contributions[i, j] * score[i] / sum_i score[i]`` (NaN if every
        score is 0).
    msu_counts_by_size : numpy.ndarray
        ``msu_counts_by_size[s - 1]`` is the number of MSUs with ``s`` variables.
    max_size : int
        Largest MSU size searched.
    original_scores : bool
        True: weight ``(M - s)!``; False: the old IHSN weight.
    dis_fraction : float
        Sampling fraction used by the DIS score.
    sample_uniques : int
        Records unique on all key variables (with ``missing="wildcard"`` a missing value matches
        any value, otherwise it is compared as a value of its own).
    pair_records : int
        Records whose key combination occurs exactly twice (with ``missing="wildcard"``: records
        with frequency 2).
    msu_records, msu_masks : numpy.ndarray
        One entry per MSU: the record's position and the MSU as a bit mask over ``keys``
        (bit ``j`` = ``keys[j]``), sorted by record, size and key order (see :meth:`msus`).
    level_table : polars.DataFrame
        The table of :meth:`level_contributions`.
    missing : str
        The treatment of missing key values (``"sdcmicro"``, ``"category"`` or ``"wildcard"``;
        see :func:`suda2`).
    """

    keys: tuple[str, ...]
    score: np.ndarray
    dis_score: np.ndarray
    msu_count: np.ndarray
    scored_records: np.ndarray
    scored_contributions: np.ndarray
    contributions: np.ndarray
    msu_counts_by_size: np.ndarray
    max_size: int
    original_scores: bool
    dis_fraction: float
    sample_uniques: int
    pair_records: int
    msu_records: np.ndarray = field(repr=False)
    msu_masks: np.ndarray = field(repr=False)
    level_table: pl.DataFrame = field(repr=False, compare=False)
    missing: str = "sdcmicro"
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.score)

    @property
    def record_contributions(self) -> np.ndarray:
        """``(n, m)`` matrix of the shares of each record's score per key variable (zero rows for
        records without an MSU)."""
        out = np.zeros((self.n_records, len(self.keys)), dtype=np.float64)
        out[self.scored_records] = self.scored_contributions
        return out

    @property
    def n_msus(self) -> int:
        """Total number of minimal sample uniques found."""
        return len(self.msu_records)

    def msus(self, record: int) -> list[tuple[str, ...]]:
        """The MSUs of one record (by position), smallest first, as tuples of variable names."""
        record = check_int(record, "record", minimum=0, maximum=self.n_records - 1)
        lo, hi = np.searchsorted(self.msu_records, [record, record + 1])
        return [_mask_names(int(mk), self.keys) for mk in self.msu_masks[lo:hi]]

    def level_contributions(self) -> Any:
        """Contribution of each level of each key variable, in percent of the variable's
        contribution (sdcMicro's ``attribute_level_contributions``).

        Columns ``variable``, ``level`` (as text) and ``contribution``; NaN for a variable that
        is in no MSU.  With ``missing="category"`` a variable with missing values has a last row
        with a null level for them.  Returned in the caller's frame type (without a row index).
        """
        if self.frame_info is None:
            return self.level_table
        return from_polars(self.level_table, self.frame_info, keep_index=False)

    def to_frame(self) -> Any:
        """One row per record: ``suda_score``, ``dis_suda_score``, ``msu_count`` and
        ``contribution_<variable>`` (caller's frame type and index)."""
        columns: dict[str, np.ndarray] = {
            "suda_score": self.score,
            "dis_suda_score": self.dis_score,
            "msu_count": self.msu_count,
        }
        for j, name in enumerate(self.keys):
            column = np.zeros(self.n_records, dtype=np.float64)
            column[self.scored_records] = self.scored_contributions[:, j]
            columns[f"contribution_{name}"] = column
        return records_frame(columns, self.frame_info)

    def summary(self) -> Summary:
        """File-level figures: MSUs by size, records at risk, DIS-SUDA bands, contributions."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("sample uniques", self.sample_uniques),
            ("records with an MSU", int(np.count_nonzero(self.msu_count))),
            ("minimal sample uniques", self.n_msus),
        ]
        for s, count in enumerate(self.msu_counts_by_size, start=1):
            rows.append((f"MSUs of size {s}", int(count)))
        rows.append(("largest SUDA score", float(self.score.max(initial=0.0))))
        rows.append(("largest DIS-SUDA score", float(self.dis_score.max(initial=0.0))))
        for cut in (0.1, 0.3, 0.5):
            rows.append(
                (f"records with DIS-SUDA > {cut}", int(np.count_nonzero(self.dis_score > cut)))
            )
        for j in np.argsort(-np.nan_to_num(self.contributions, nan=-1.0), kind="stable"):
            rows.append((f"contribution of {self.keys[j]} (%)", float(self.contributions[j])))
        weights = "(M - s)!" if self.original_scores else "IHSN (2^(M-s) - 1) s! (M-s)! / M!"
        treatment = {
            "sdcmicro": "never in an MSU, compared as a value of its own (sdcMicro)",
            "category": "an ordinary level, also in MSUs",
            "wildcard": "matches any value, never in an MSU",
        }[self.missing]
        notes = [
            f"key variables: {', '.join(self.keys)}; MSU sizes up to {self.max_size}; "
            f"weights {weights} with M = {len(self.keys)}; DIS fraction {self.dis_fraction:g}",
            f"missing key values ({self.missing!r}): {treatment}",
        ]
        return Summary("SUDA2", rows, notes)


def suda2(
    data: Any,
    *,
    keys: Any = None,
    max_size: int | None = None,
    dis_fraction: float = 0.01,
    original_scores: bool = True,
    missing: SudaMissing = "sdcmicro",
) -> Suda2Result:
    """SUDA scores, DIS-SUDA scores and minimal sample uniques (sdcMicro's ``suda2``).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.Microdata`.
    keys : list of str, optional
        Categorical key variables (required unless ``data`` is a Microdata with keys).
    max_size : int, optional
        Largest MSU size searched (default: the number of key variables).  The weights and the
        exponent Q of DIS-SUDA always use ``M`` = the number of key variables, so a smaller
        ``max_size`` gives a lower bound of the full score.  The search visits every subset of
        at most ``max_size`` of the ``m`` keys: with more than about 12 keys, cap it (4 or 5 is
        usual).
    dis_fraction : float, default 0.01
        Sampling fraction in (0, 1] used by the DIS-SUDA score.
    original_scores : bool, default True
        True: an MSU of size ``s`` weighs ``(M - s)!`` (Elliot et al. 2002, sdcMicro's default).
        False: the old IHSN weight ``(2^(M-s) - 1) s! (M-s)! / M!``.
    missing : {"sdcmicro", "category", "wildcard"}, default "sdcmicro"
        How missing key values are treated.

        * ``"sdcmicro"``: as sdcMicro's ``suda2``.  A record's missing variables are never part
          of its MSUs; another record matches it on a set of its observed variables only if it
          has the same observed values there (a missing value matches no observed value).  The
          sample uniques, the pairs of the DIS score and the duplicates are found with missing
          as a value of its own (missing equals missing).  With no missing values all three
          treatments agree.
        * ``"category"``: missing is an ordinary level, so it can be part of an MSU (a record
          alone in having a variable missing has that variable as an MSU).  For missing values
          an intruder can see and use, e.g. "not applicable".  In sdcMicro: recode the missing
          values to an unused code before calling ``suda2``.
        * ``"wildcard"``: a missing value matches any value (sdcMicro's ``freqCalc`` and
          ``measure_risk``, :func:`~sdckit.risk.frequencies`), as for a suppressed value that
          could be anything.  A record's frequency on a set counts every record that agrees
          with it wherever both are observed; missing variables are never part of an MSU;
          sample uniques and pairs are the records with frequency 1 and 2.  A file that is
          2-anonymous after local suppression then has no MSU.  Not offered by sdcMicro.

    Returns
    -------
    Suda2Result

    Notes
    -----
    sdcMicro pads one or two key variables with constant dummies, so its ``M`` is then 3; here
    ``M`` is always the number of keys.  Its R wrapper recodes ``NA`` to the code given by its
    ``missing`` argument (-999), so a genuine value -999 is missing there too; it also turns
    non-numeric, non-factor key columns into numbers with ``as.numeric`` (text that is not a
    number becomes missing) and truncates non-integer numbers: sdckit compares the values
    themselves.  For DIS-SUDA, sdcMicro's C++ counts as sample uniques only the records alone in
    their bucket of a 16-bit hash; the count cancels from the formula (the odds are
    ``P (1 - f) / f``) but enters its single-precision rounding, so its DIS-SUDA scores can
    differ from these in about the eighth digit, and are NaN when it counts none.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk.suda import suda2
    >>> df = pl.DataFrame({
    ...     "age": ["20s"] * 7 + ["60s"],
    ...     "gender": ["m", "m", "m", "m", "f", "f", "f", "m"],
    ...     "income": ["50k+", "50k+"] + ["50k-"] * 6,
    ...     "education": ["hs", "hs", "hs", "hs", "univ", "hs", "middle", "univ"],
    ... })
    >>> res = suda2(df, keys=["age", "gender", "income", "education"])
    >>> res.score.tolist()
    [0.0, 0.0, 0.0, 0.0, 4.0, 2.0, 6.0, 8.0]
    >>> res.msus(7)
    [('age',), ('gender', 'education')]

    Missing values (record 2 is alone in missing ``a``):

    >>> df = pl.DataFrame({"a": [1, 1, None, 2], "b": [1, 2, 2, 2], "c": [1, 1, 1, 1]})
    >>> for mode in ("sdcmicro", "category", "wildcard"):
    ...     print(mode, suda2(df, keys=["a", "b", "c"], missing=mode).score.tolist())
    sdcmicro [2.0, 1.0, 0.0, 2.0]
    category [2.0, 1.0, 2.0, 2.0]
    wildcard [2.0, 0.0, 0.0, 0.0]
    """
    if not isinstance(original_scores, bool):
        raise ParameterError(
            "The 'original_scores' parameter must be True or False; got an object of type "
            f"{type(original_scores).__name__}."
        )
    dis_fraction = check_real(
        dis_fraction, "dis_fraction", minimum=0.0, maximum=1.0, min_inclusive=False
    )
    check_choice(missing, "missing", MISSING_MODES)
    md: Microdata = as_microdata(data, keys=keys)
    md.require(keys=True, what="SUDA2")
    codes = md.key_codes.codes
    n, m = codes.shape
    max_size = m if max_size is None else check_int(max_size, "max_size", minimum=1, maximum=m)

    has_missing = bool((codes < 0).any())
    search_codes = codes
    if missing == "category" and has_missing:
        # missing becomes one more level of each variable (code = number of observed levels)
        extra = md.key_codes.cardinalities.astype(codes.dtype)
        search_codes = np.where(codes < 0, extra[None, :], codes)
    wildcard = missing == "wildcard"
    sets = _minimal_sets(search_codes, max_size=max_size, threshold=2, wildcard=wildcard)
    weights = _msu_weights(m, original_scores)
    msu_weight = weights[sets.size - 1]
    score = np.bincount(sets.record, weights=msu_weight, minlength=n)
    msu_count = np.bincount(sets.record, minlength=n).astype(np.int64)
    # contributions, computed over the records with an MSU only (sorted by record)
    with_msu, first_msu = np.unique(sets.record, return_index=True)
    local = np.repeat(np.arange(len(with_msu)), np.diff(np.append(first_msu, len(sets.record))))
    raw_local = np.zeros((len(with_msu), m), dtype=np.float64)
    for j in range(m):
        has = (sets.mask >> j) & 1 == 1
        raw_local[:, j] = np.bincount(local[has], weights=msu_weight[has], minlength=len(with_msu))
    scored = score[with_msu][:, None]
    shares = np.divide(raw_local, scored, out=np.zeros_like(raw_local), where=scored > 0)
    total = float(score.sum())
    if total > 0:
        contributions = 100.0 * raw_local.sum(axis=0) / total
    else:
        contributions = np.full(m, np.nan)
    level_table = _level_table(md.key_codes, with_msu, raw_local, missing == "category")
    if wildcard and has_missing:
        fk = np.rint(_wildcard_counts(codes, None, 1.0)[0]).astype(np.int64)
    else:
        fk = sets.group_count
    sample_uniques = int(np.count_nonzero(fk == 1))
    pair_records = int(np.count_nonzero(fk == 2))
    dis_score = _dis_scores(score, m, sample_uniques, pair_records, dis_fraction)
    return Suda2Result(
        keys=md.keys,
        score=score,
        dis_score=dis_score,
        msu_count=msu_count,
        scored_records=with_msu.astype(np.int64),
        scored_contributions=shares,
        contributions=contributions,
        msu_counts_by_size=np.bincount(sets.size - 1, minlength=max_size)[:max_size].astype(
            np.int64
        )
        if len(sets.size)
        else np.zeros(max_size, dtype=np.int64),
        max_size=max_size,
        original_scores=original_scores,
        dis_fraction=dis_fraction,
        sample_uniques=sample_uniques,
        pair_records=pair_records,
        msu_records=sets.record,
        msu_masks=sets.mask,
        level_table=level_table,
        missing=missing,
        frame_info=md.frame_info,
    )
