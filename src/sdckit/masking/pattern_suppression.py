"""Local suppression from a table of key patterns: the records' output without the records.

:class:`~sdckit.masking.LocalSuppression` (missing values as wildcards) works on key patterns,
but it moves "the first ``t`` records" of a pattern and gives values back in file order, so its
output per record depends on where each record is.  :func:`greedy_on_patterns` runs the same
greedy on a pattern table -- each pattern's codes, records and last row in the file (the
greedy numbers its groups by a scan from the end) -- and replays its moves on ranges of ranks
(:mod:`sdckit.masking._suppression_segments`): it returns how many of each pattern's first
records (in file order) it moved, and :meth:`PatternGreedy.finish`, given those records' rows,
runs the restore rounds on them with the greedy's own groups and returns their codes.  The
records it did not move keep their values.  Every record of the output equals the in-memory
method's (tested); memory is proportional to the patterns and the moved records.

:func:`close_on_units` is the inference and household closure of the in-memory method on
*units*: the records with a suppressed value one by one, the others as one weighted row per
pattern (their flags are all false, and the closure only ever adds to records with a
suppressed value, or within a household).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import ParameterError
from sdckit.masking._suppression_kernel import greedy_groups, group_records, key_words
from sdckit.masking._suppression_restore import restore_rounds
from sdckit.masking._suppression_segments import replay_segments
from sdckit.masking.suppression import close_households, close_inferences

__all__ = ["PatternGreedy", "close_on_units", "greedy_on_patterns"]

#: Restore rounds after the greedy (as :class:`~sdckit.masking.LocalSuppression`).
_ROUNDS = 3


@dataclass
class PatternGreedy:
    """The greedy's result on a pattern table (see :func:`greedy_on_patterns`).

    Attributes
    ----------
    taken : numpy.ndarray
        Per pattern (input order), the number of its first records (file order) that moved.
    moved_pattern, moved_rank : numpy.ndarray
        Each moved record's pattern (input index) and rank within it (0 = first in the file).
    """

    taken: np.ndarray
    moved_pattern: np.ndarray
    moved_rank: np.ndarray
    _codes: np.ndarray
    _group: np.ndarray
    _state: tuple[Any, ...] | None
    _records: int
    _k: int
    _priority: np.ndarray
    _radix: np.ndarray
    _words: np.ndarray

    def finish(self, rows: np.ndarray) -> np.ndarray:
        """The codes (``-1`` suppressed) of the moved records after the restore rounds.

        ``rows`` gives each moved record's row in the file (any numbering in file order), in
        the order of :attr:`moved_pattern`; the result is in that order too.  Call once.
        """
        n_moved = len(self.moved_pattern)
        if n_moved == 0 or self._state is None:
            return self._codes[self.moved_pattern]
        order = np.argsort(np.asarray(rows), kind="stable")
        codes = np.ascontiguousarray(self._codes[self.moved_pattern[order]])
        grp = np.ascontiguousarray(self._group[order])
        st = self._state
        pat = st[1]
        cur = np.ascontiguousarray(pat[grp])
        self._state = None
        restore_rounds(
            codes, cur, grp, self._records, self._k, self._priority, self._radix, self._words,
            _ROUNDS, *st,
        )  # fmt: skip
        out = np.empty_like(cur)
        out[order] = cur
        return out


def greedy_on_patterns(
    codes: np.ndarray,
    counts: np.ndarray,
    last_rows: np.ndarray,
    cardinalities: Sequence[int] | np.ndarray,
    k: int,
    priority: np.ndarray,
) -> PatternGreedy:
    """The greedy of local suppression (wildcards) on the distinct key patterns of a file.

    Parameters
    ----------
    codes : (p, m) int
        Each distinct pattern's key codes (``-1`` missing), as :class:`~sdckit.Microdata`
        codes them.
    counts, last_rows : (p,) int
        Its records, and the row (file order) of its last record.
    cardinalities : (m,) int
        Levels of each key in the whole file.
    k : int
    priority : (m,) int
        Suppression priority of each key (higher = suppressed first).

    Returns
    -------
    PatternGreedy

    Examples
    --------
    Five records ``(1,1) (1,1) (2,1) (2,1) (3,1)``: the last is alone, and the greedy
    suppresses its first key.

    >>> import numpy as np
    >>> g = greedy_on_patterns(
    ...     np.array([[0, 0], [1, 0], [2, 0]]), np.array([2, 2, 1]), np.array([1, 3, 4]),
    ...     [3, 1], 2, np.array([2, 1]))
    >>> g.taken.tolist(), g.finish(np.array([4])).tolist()
    ([0, 0, 1], [[-1, 0]])
    """
    codes = np.asarray(codes, dtype=np.int64)
    m = codes.shape[1]
    if m > 60:
        raise ParameterError(
            "Local suppression handles at most 60 key variables; use fewer key variables."
        )
    radix = np.asarray(cardinalities, dtype=np.int64) + 1
    try:
        words = key_words(radix)
    except OverflowError:
        raise ParameterError(
            "The key variables have too many combinations of levels for local suppression "
            "(more than 2**124); recode some key variables into fewer categories."
        ) from None
    counts = np.asarray(counts, dtype=np.int64)
    # the greedy numbers its groups by a scan of the records from the last: by last row, down
    order = np.argsort(-np.asarray(last_rows, dtype=np.int64), kind="stable")
    pats = np.ascontiguousarray(codes[order])
    prio = np.asarray(priority, dtype=np.int64)
    grouped = group_records(pats, radix, words, False, np.ascontiguousarray(counts[order]))
    (
        n_groups, pat, cnt, msk, gnext, rhead, _, _, lookup, lookup_fill, mask_index,
        mask_value, mask_total, mask_head, mask_first, n_masks,
    ) = grouped  # fmt: skip
    out = greedy_groups(
        n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill, mask_index, mask_value,
        mask_total, mask_head, mask_first, n_masks, int(k), prio, radix, words, True, True,
    )  # fmt: skip
    moves, n_moves = out[-2], out[-1]
    taken, pattern, rank, group = replay_segments(counts[order], moves, n_moves, out[0])
    taken_in = np.empty_like(taken)
    taken_in[order] = taken
    # the restore rounds' state: (n_groups, pat, cnt, msk, gnext, rhead, lookup, lookup_fill,
    # mask_index, mask_value, mask_total, mask_head, mask_first, n_masks, store, ctr)
    state = out[:-2]
    return PatternGreedy(
        taken=taken_in,
        moved_pattern=order[pattern],
        moved_rank=rank,
        _codes=codes,
        _group=group,
        _state=state if len(pattern) else None,
        _records=int(counts.sum()),
        _k=int(k),
        _priority=prio,
        _radix=radix,
        _words=words,
    )


def close_on_units(
    codes: np.ndarray,
    suppressed: np.ndarray,
    weights: np.ndarray,
    households: pl.Series | None,
    block_inference: bool,
) -> np.ndarray:
    """The closure rounds of :class:`~sdckit.masking.LocalSuppression` on units.

    ``codes``/``suppressed`` (rows: units): the original codes and the flags of each unit;
    ``weights``: the records of each unit (1 for a single record).  ``households``: the
    household id of each unit that is one record, null for the weighted pattern rows (whose
    flags are all false and whose households hold no suppressed value), or None without
    household blocking.  Returns the new flags.
    """
    supp = np.ascontiguousarray(suppressed, dtype=np.bool_)
    single = None
    if households is not None:
        single = np.flatnonzero(households.is_not_null().to_numpy())
    for _ in range(3):  # as in the in-memory method: each closure can open the other
        before = int(supp.sum())
        if block_inference:
            supp, _ = close_inferences(codes, supp, weights=weights)
        if single is not None and len(single):
            sub, _ = close_households(codes[single], supp[single], households[single])
            supp[single] = sub
        if int(supp.sum()) == before:
            break
    return supp
