"""Random numbers keyed by the seed and the record's row: the same draws however records are cut.

A stochastic method that draws ``rng.standard_normal(n)`` gives record ``i`` the ``i``-th number
of one stream, so a slice, a Dask partition or a Spark partition that starts elsewhere cannot
draw what the whole file draws.  Here a draw is a pure function of ``(key, lane, row)``: the
method's 64-bit ``key`` (from its seed, :func:`stream_key`), a ``lane`` telling apart the
draws of one record (one per variable, per redraw, ...) and the record's global row index in
the file (``0 .. n - 1`` in file order).  Any piece of the file therefore draws exactly what
the in-memory method draws for its rows.

The function is a counter-based generator: two rounds of the splitmix64 finaliser (Steele,
Lea and Flood 2014) over ``key``, ``lane`` and ``row``; the top 53 bits give a uniform in
``(0, 1)``.  Normals are Box-Muller pairs of two such uniforms.  The kernels are compiled
(numba) and run on any worker that can import sdckit (Spark's Python workers included).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["normals", "stream_key", "uniforms"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LANE = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_PI = 6.283185307179586


def stream_key(sequence: np.random.SeedSequence) -> int:
    """The 64-bit key of a random stream (a :class:`numpy.random.SeedSequence`).

    Examples
    --------
    >>> stream_key(np.random.SeedSequence(1)) == stream_key(np.random.SeedSequence(1))
    True
    """
    return int(sequence.generate_state(1, np.uint64)[0])


@numba.njit(cache=True, nogil=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:  # pragma: no cover - jit
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@numba.njit(cache=True, nogil=True, inline="always")
def _uniform(key: np.uint64, lane: np.uint64, row: np.int64) -> float:  # pragma: no cover - jit
    s = key ^ (lane * _LANE)
    x = _mix(s + (np.uint64(row) + np.uint64(1)) * _GOLDEN)
    x = _mix(x ^ s)
    return (float(x >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def _uniforms(key: np.uint64, lane: np.uint64, rows: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(rows.shape[0], dtype=np.float64)
    for i in range(rows.shape[0]):
        out[i] = _uniform(key, lane, rows[i])
    return out


@numba.njit(cache=True, nogil=True)
def _normals(key: np.uint64, lane: np.uint64, rows: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(rows.shape[0], dtype=np.float64)
    first = lane * np.uint64(2)
    second = first + np.uint64(1)
    for i in range(rows.shape[0]):
        u1 = _uniform(key, first, rows[i])
        u2 = _uniform(key, second, rows[i])
        out[i] = np.sqrt(-2.0 * np.log(u1)) * np.cos(_TWO_PI * u2)
    return out


def _check(key: int, lane: int, rows: np.ndarray) -> tuple[np.uint64, np.uint64, np.ndarray]:
    r = np.ascontiguousarray(rows, dtype=np.int64)
    return np.uint64(key & 0xFFFFFFFFFFFFFFFF), np.uint64(lane), r


def uniforms(key: int, lane: int, rows: np.ndarray) -> np.ndarray:
    """Uniforms in ``(0, 1)``, one per row index of ``rows``, for ``(key, lane)``.

    Examples
    --------
    >>> import numpy as np
    >>> whole = uniforms(7, 0, np.arange(10))
    >>> bool((uniforms(7, 0, np.arange(4, 10)) == whole[4:]).all())
    True
    """
    return _uniforms(*_check(key, lane, rows))


def normals(key: int, lane: int, rows: np.ndarray) -> np.ndarray:
    """Standard normals, one per row index of ``rows``, for ``(key, lane)`` (Box-Muller).

    Examples
    --------
    >>> import numpy as np
    >>> z = normals(3, 1, np.arange(200_000))
    >>> abs(float(z.mean())) < 0.01, abs(float(z.std()) - 1.0) < 0.01
    (True, True)
    """
    return _normals(*_check(key, lane, rows))
