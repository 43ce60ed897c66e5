"""Exact sums of floats and squares, so a standard deviation does not depend on the partition.

A floating-point sum depends on the order of its terms, so a standard deviation computed per
Dask or Spark partition and combined differs in its last bits from the one of the whole file,
and noise scaled by it differs too.  Here every finite float64 ``x = M 2^e`` (``M`` an integer
of 53 bits) is added exactly into a fixed-point accumulator of 32-bit limbs held in int64 (the
carries are resolved at the end), and so is ``x^2`` (``M^2`` split in three terms of at most 54
bits).  The accumulators of the pieces of a file add as Python integers, whatever the cut, and
the variance ``(n S2 - S1^2) / (n (n - 1))`` is computed exactly and rounded once: the
correctly rounded sample variance of the values.

Per group (a stratum) and column: :func:`partial_moments` gives a :class:`Moments` of a piece
of the file, :meth:`Moments.add` combines pieces, :meth:`Moments.sd` is the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numba
import numpy as np

__all__ = ["Moments", "partial_moments"]

#: Bit offsets making every unit of a value (and of a square) a non-negative bit position.
_OFF1 = 1126
_OFF2 = 2 * _OFF1
_LIMBS1 = (1024 + _OFF1 + 64) // 32 + 2
_LIMBS2 = (2048 + _OFF2 + 128) // 32 + 2
_MASK = (1 << 32) - 1


@numba.njit(cache=True, nogil=True, inline="always")
def _put(acc: np.ndarray, base: np.int64, v: np.int64, bit: np.int64) -> None:  # pragma: no cover
    """Add ``v * 2^bit`` (``0 <= v < 2^55``) to the limbs ``acc[base:]``."""
    q = base + (bit >> 5)
    r = bit & 31
    a = (v & 0xFFFFFFFF) << r
    b = (v >> 32) << r
    acc[q] += a & 0xFFFFFFFF
    acc[q + 1] += (a >> 32) + (b & 0xFFFFFFFF)
    acc[q + 2] += b >> 32


@numba.njit(cache=True, nogil=True)
def _accumulate(
    x: np.ndarray, group: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Per group and column: counts, positive and negative sums, sums of squares, and a flag
    for infinite values (NaN is missing and skipped).  The limbs of group ``g`` and column
    ``j`` start at ``(g * p + j) * limbs``."""
    n, p = x.shape
    count = np.zeros((n_groups, p), dtype=np.int64)
    pos = np.zeros(n_groups * p * _LIMBS1, dtype=np.int64)
    neg = np.zeros(n_groups * p * _LIMBS1, dtype=np.int64)
    sq = np.zeros(n_groups * p * _LIMBS2, dtype=np.int64)
    inf = np.zeros((n_groups, p), dtype=np.bool_)
    bits = x.view(np.int64)
    for i in range(n):
        g = group[i]
        for j in range(p):
            v = x[i, j]
            if v != v:  # NaN: missing
                continue
            count[g, j] += 1
            word = bits[i, j]
            expo = (word >> 52) & 0x7FF
            if expo == 0x7FF:
                inf[g, j] = True
                continue
            mant = word & 0xFFFFFFFFFFFFF
            if expo == 0:  # zero or subnormal: no implicit bit
                if mant == 0:
                    continue
                expo = 1
            else:
                mant |= 1 << 52
            e2 = expo - 1075  # x = mant * 2^e2 exactly
            cell = g * p + j
            if word >= 0:
                _put(pos, cell * _LIMBS1, mant, e2 + _OFF1)
            else:
                _put(neg, cell * _LIMBS1, mant, e2 + _OFF1)
            # mant^2 = h^2 2^54 + 2 h l 2^27 + l^2 with h < 2^26, l < 2^27
            h = mant >> 27
            lo = mant & ((1 << 27) - 1)
            base = 2 * e2 + _OFF2
            at = cell * _LIMBS2
            _put(sq, at, h * h, base + 54)
            _put(sq, at, 2 * h * lo, base + 27)
            _put(sq, at, lo * lo, base)
    return count, pos, neg, sq, inf


def _value(limbs: np.ndarray) -> int:
    """The integer the limbs hold (carries resolved)."""
    return sum(int(v) << (32 * i) for i, v in enumerate(limbs.tolist()) if v)


@dataclass(frozen=True)
class Moments:
    """Exact count, sum and sum of squares of the values of each group and column.

    ``total`` and ``squares`` are integers scaled by ``2^1126`` and ``2^2252``.
    """

    count: np.ndarray
    total: list[list[int]]
    squares: list[list[int]]
    infinite: np.ndarray

    def add(self, other: Moments) -> Moments:
        """The moments of both pieces together."""
        return Moments(
            count=self.count + other.count,
            total=[
                [a + b for a, b in zip(r, s, strict=True)]
                for r, s in zip(self.total, other.total, strict=True)
            ],
            squares=[
                [a + b for a, b in zip(r, s, strict=True)]
                for r, s in zip(self.squares, other.squares, strict=True)
            ],
            infinite=self.infinite | other.infinite,
        )

    def sd(self) -> np.ndarray:
        """Sample standard deviation (``n - 1``) per group and column: the square root of the
        correctly rounded variance; 0 where undefined (fewer than two values, or infinite)."""
        out = np.zeros(self.count.shape, dtype=np.float64)
        for g in range(self.count.shape[0]):
            for j in range(self.count.shape[1]):
                n = int(self.count[g, j])
                if n < 2 or self.infinite[g, j]:
                    continue
                s1, s2 = self.total[g][j], self.squares[g][j]
                num = n * s2 - s1 * s1  # exact, scaled by 2^2252
                try:
                    out[g, j] = math.sqrt(float(Fraction(num, n * (n - 1) << _OFF2)))
                except OverflowError:  # (a variance past the largest float)
                    out[g, j] = math.inf
        return out


def partial_moments(x: np.ndarray, group: np.ndarray | None = None, n_groups: int = 1) -> Moments:
    """The exact moments of the rows of ``x`` (records x columns, NaN missing) per group.

    Examples
    --------
    The variance of 1, 2 and 4 is 7/3 exactly, whatever the cut:

    >>> import math
    >>> import numpy as np
    >>> x = np.array([[1.0], [2.0], [np.nan], [4.0]])
    >>> a = partial_moments(x[:2]).add(partial_moments(x[2:]))
    >>> float(a.sd()[0, 0]) == math.sqrt(7 / 3) == float(partial_moments(x).sd()[0, 0])
    True
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    g = (
        np.zeros(x.shape[0], dtype=np.int64)
        if group is None
        else np.ascontiguousarray(group, dtype=np.int64)
    )
    count, pos, neg, sq, inf = _accumulate(x, g, int(n_groups))
    p = x.shape[1]
    pos, neg = pos.reshape(n_groups, p, _LIMBS1), neg.reshape(n_groups, p, _LIMBS1)
    sq = sq.reshape(n_groups, p, _LIMBS2)
    total = [[_value(pos[a, j]) - _value(neg[a, j]) for j in range(p)] for a in range(n_groups)]
    squares = [[_value(sq[a, j]) for j in range(p)] for a in range(n_groups)]
    return Moments(count=count, total=total, squares=squares, infinite=inf)
