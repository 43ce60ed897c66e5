"""Marginal tables of the key variables, computed from the observed cells only and cached.

The records are first collapsed to the distinct observed cells of the full key table (with their
counts); every margin is then an aggregation of those cells.  Nothing of the size of the full
cross-product table is ever built.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sdckit._codes import KeyCodes, combine_codes, factorize

__all__ = ["MarginTable", "table_codes"]


def table_codes(kc: KeyCodes) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0 .. d_j - 1`` per key (a missing value is one extra level) and the ``d_j``."""
    codes = kc.codes.astype(np.int64)
    cards = kc.cardinalities.copy()
    for j in range(codes.shape[1]):
        missing = codes[:, j] < 0
        if missing.any():
            codes[missing, j] = cards[j]
            cards[j] += 1
    return codes, cards


def _dense_ids(key: np.ndarray, bound: int, *, dense: bool = False) -> tuple[np.ndarray, int]:
    """An index per row into ``0 .. size-1`` (the key itself when its range is small).

    With ``dense`` every index in ``0 .. size-1`` occurs.
    """
    if bound <= max(1 << 22, 4 * len(key)):
        return factorize(key, bound) if dense else (key, int(bound))
    unique, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1), len(unique)


def _xlogx_sum(counts: np.ndarray) -> float:
    c = counts[counts > 0]
    return float(np.sum(c * np.log(c)))


class MarginTable:
    """The observed cells of a key table and a cache of their margins.

    Parameters
    ----------
    codes : numpy.ndarray
        ``(r, m)`` integer codes (no missing) of records or of distinct cells.
    cards : numpy.ndarray
        Number of levels ``d_j`` of each variable.
    counts : numpy.ndarray, optional
        Count of each row of ``codes`` (default 1: rows are records).
    """

    def __init__(
        self, codes: np.ndarray, cards: np.ndarray, counts: np.ndarray | None = None
    ) -> None:
        codes = np.asarray(codes, dtype=np.int64)
        weights = np.ones(len(codes)) if counts is None else np.asarray(counts, dtype=np.float64)
        key, bound = combine_codes(codes)
        ids, n_cells = _dense_ids(key, bound, dense=True)
        representative = np.empty(n_cells, dtype=np.int64)
        representative[ids] = np.arange(len(codes), dtype=np.int64)  # any row of each cell
        self.cells = codes[representative]
        self.counts = np.bincount(ids, weights=weights, minlength=n_cells)
        self.record_cell = ids
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n = float(self.counts.sum())
        self._xlogx: dict[frozenset[int], float] = {}
        self._nonzero: dict[frozenset[int], int] = {}

    @property
    def n_variables(self) -> int:
        """Number of variables ``m``."""
        return len(self.cards)

    def cell_margin(self, variables: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """Margin index of each observed cell and the counts of the margin (``counts[index]``).

        The counts may include empty margin cells; the statistics of the margin are cached.
        """
        cols = sorted(variables)
        if not cols:
            ids, counts = np.zeros(len(self.cells), dtype=np.int64), np.array([self.n])
        elif len(cols) == self.n_variables:
            ids, counts = np.arange(len(self.cells)), self.counts
        else:
            key, bound = combine_codes(self.cells, cols)
            ids, n_ids = _dense_ids(key, bound)
            counts = np.bincount(ids, weights=self.counts, minlength=n_ids)
        name = frozenset(cols)
        if name not in self._xlogx:
            self._xlogx[name] = _xlogx_sum(counts)
            self._nonzero[name] = int(np.count_nonzero(counts))
        return ids, counts

    def _fill(self, key: frozenset[int]) -> None:
        self.cell_margin(key)

    def xlogx(self, variables: Iterable[int]) -> float:
        """``sum n_A log n_A`` over the cells of the margin ``A`` (0 log 0 = 0)."""
        key = frozenset(variables)
        if key not in self._xlogx:
            self._fill(key)
        return self._xlogx[key]

    def nonzero(self, variables: Iterable[int]) -> int:
        """Number of non-empty cells of the margin ``A``."""
        key = frozenset(variables)
        if key not in self._nonzero:
            self._fill(key)
        return self._nonzero[key]

    def size(self, variables: Iterable[int]) -> float:
        """Number of cells ``prod d_v`` of the margin (1 for the empty set)."""
        return float(np.prod(self.cards[sorted(variables)].astype(np.float64)))

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict, dict]:
        """What a worker process needs to rebuild the table: cells, cards, counts, cache."""
        return self.cells, self.cards, self.counts, dict(self._xlogx), dict(self._nonzero)

    @classmethod
    def from_state(
        cls, state: tuple[np.ndarray, np.ndarray, np.ndarray, dict, dict]
    ) -> MarginTable:
        """Rebuild a table (with its cache of margin statistics) from :meth:`state`."""
        cells, cards, counts, xlogx, nonzero = state
        table = cls(cells, cards, counts)
        table._xlogx.update(xlogx)
        table._nonzero.update(nonzero)
        return table
