"""The pieces of the cell key method for magnitudes: the flex function and the component keys.

Used by :mod:`sdckit.tables.cellkey_magnitude` (which re-exports them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit._validation import check_int

__all__ = ["flex_function", "scrambled_keys"]


def flex_function(x: Any, *, fp: float, p_small: float, p_large: float, q: float) -> np.ndarray:
    """The noise share of a contribution ``x`` (cellKey's flex function ``.para_m``).

    ``p_small`` up to the flex point ``fp``, then falling towards ``p_large`` (for ``q > 1``).

    Examples
    --------
    >>> flex_function([500.0, 1000.0, 3000.0], fp=1000, p_small=0.2, p_large=0.03, q=2).round(4)
    array([0.2   , 0.2   , 0.1725])
    """
    x = np.abs(np.asarray(x, dtype=float))
    above = np.maximum(x, fp)
    f1 = (p_small * above - p_large * fp) / (p_large * fp)
    f2 = (2.0 * fp / (fp + above)) ** q
    return np.where(x < fp, p_small, p_large * (1.0 + f1 * f2))


def _rotate(key: str) -> str:
    """``"0.d1d2...dn"`` -> ``"0.d2...dnd1"``."""
    return "0." + key[3:] + key[2:3]


def scrambled_keys(
    cell_keys: Any, k: int, *, same_key: bool = True, digits: int = 12
) -> np.ndarray:
    """The ``(n, k)`` keys of the ``k`` largest contributions of each cell (cellKey's scheme).

    The first is the cell key (``same_key``) or the cell key with its first decimal digit
    moved to the end; each next one moves the first digit of the previous one to the end.
    The cell key is written with ``digits`` decimals (12: every key of
    :func:`~sdckit.tables.record_keys`) and no trailing zeros, as R prints it (R prints keys
    below 0.0001 in scientific notation, which cellKey then mangles; here they are decimals).

    Examples
    --------
    >>> scrambled_keys([0.12345], 3).tolist()
    [[0.12345, 0.23451, 0.34512]]
    >>> scrambled_keys([0.12345], 2, same_key=False).tolist()
    [[0.23451, 0.34512]]
    """
    k = check_int(k, "k", minimum=1)
    units = np.round(np.asarray(cell_keys, dtype=float) * 10.0**digits).astype(np.int64)
    out = np.zeros((len(units), k))
    for c, u in enumerate(units.tolist()):
        if u == 0:
            continue  # no contributor: every component stays 0
        text = "0." + str(u).zfill(digits).rstrip("0")
        first = text if same_key else "0." + (text[3:] or "0") + text[2:3]
        keys = [first]
        for _ in range(1, k):
            keys.append(_rotate(keys[-1]))
        out[c] = [float(x) for x in keys]
    return out
