"""Missing key values as wildcards, over the class table: the pattern-join plan.

sdcMicro's ``freqCalc`` semantics (methods.md M1, :func:`sdckit.risk.frequencies`): a missing key
value matches any value, so a class's ``fk`` is its own count plus the counts of every class
that agrees with it on the keys both observe.  The plan:

1. each equivalence class (one row of the class table, missing values included) gets its
   *missing-value pattern*, a bit mask of its missing keys; the patterns are few;
2. for every left pattern ``p`` and every other pattern ``q`` the classes of ``q`` are joined to
   those of ``p`` on the keys that neither misses; right-hand patterns with the same union of
   missing keys share one join (one group-by of the right side);
3. the joined counts and weight sums, scaled by sdcMicro's ``alpha`` (1 for a match of an
   incomplete class with complete ones, ``alpha`` otherwise), are added to each class.

The plan is written against narwhals' lazy API (filter, group-by, join, concat), so it runs on
any frame narwhals drives -- a polars frame of the class table here, or the class table left on
an engine when it is too large to bring home.
"""

from __future__ import annotations

from typing import Any

import narwhals.stable.v2 as nw
import numpy as np
import polars as pl

__all__ = ["pattern_plan", "wildcard_frequencies"]

_CID, _PAT, _N, _W = "__sdc_cid", "__sdc_pattern", "__sdc_cn", "__sdc_cw"


def _key(j: int) -> str:
    return f"__sdc_k{j}"


def pattern_plan(classes: Any, m: int, patterns: list[int], alpha: float) -> Any:
    """The lazy plan of the added counts: ``(class id, added count, added weight)`` rows.

    ``classes`` is a narwhals LazyFrame with the key columns ``__sdc_k0..`` (null = missing),
    the class id, the pattern, the count and the weight sum.
    """
    members = {p: classes.filter(nw.col(_PAT) == p) for p in patterns}
    parts = []
    for p in patterns:
        by_union: dict[int, list[tuple[int, float]]] = {}
        for q in patterns:
            factor = 1.0 if (q == 0 and p != 0) else alpha
            if q == p or factor == 0.0:
                continue
            by_union.setdefault(p | q, []).append((q, factor))
        for union, rights in by_union.items():
            on = [_key(j) for j in range(m) if not (union >> j) & 1]
            right = nw.concat(
                [
                    members[q].select(
                        *on,
                        (nw.col(_N) * factor).alias(_N),
                        (nw.col(_W) * factor).alias(_W),
                    )
                    for q, factor in rights
                ],
                how="vertical",
            )
            if on:
                agg = right.group_by(on).agg(nw.col(_N).sum(), nw.col(_W).sum())
                joined = members[p].select(_CID, *on).join(agg, on=on, how="inner")
            else:
                agg = right.select(nw.col(_N).sum(), nw.col(_W).sum())
                joined = members[p].select(_CID).join(agg, how="cross")
            parts.append(joined.select(_CID, _N, _W))
    if not parts:
        return None
    return nw.concat(parts, how="vertical").group_by(_CID).agg(nw.col(_N).sum(), nw.col(_W).sum())


def wildcard_frequencies(
    rep: np.ndarray, count: np.ndarray, wsum: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """``fk`` and ``Fk_hat`` of every class with missing values as wildcards.

    Parameters
    ----------
    rep : numpy.ndarray
        ``(classes, m)`` key codes of each class (-1 = missing).
    count, wsum : numpy.ndarray
        Records and weight sum of each class.
    alpha : float
        sdcMicro's weight of a match between two incomplete classes (and of a complete class
        with an incomplete one).

    Returns
    -------
    fk, Fk_hat : numpy.ndarray
        One value per class.
    """
    n_classes, m = rep.shape
    bits = ((rep < 0) * (1 << np.arange(m, dtype=np.int64))).sum(axis=1)
    patterns = [int(p) for p in np.unique(bits)]
    columns: dict[str, Any] = {_key(j): rep[:, j] for j in range(m)}
    columns.update(
        {
            _CID: np.arange(n_classes, dtype=np.int64),
            _PAT: bits,
            _N: count.astype(np.float64),
            _W: wsum.astype(np.float64),
        }
    )
    frame = pl.DataFrame(columns).with_columns(
        pl.when(pl.col(_key(j)) >= 0).then(pl.col(_key(j))).alias(_key(j)) for j in range(m)
    )
    classes = nw.from_native(frame).lazy()
    plan = pattern_plan(classes, m, patterns, alpha)
    fk = count.astype(np.float64)
    Fk = wsum.astype(np.float64)
    if plan is None:
        return fk, Fk
    added = plan.collect().to_native()
    cid = added.get_column(_CID).to_numpy()
    fk[cid] += added.get_column(_N).to_numpy()
    Fk[cid] += added.get_column(_W).to_numpy()
    return fk, Fk
