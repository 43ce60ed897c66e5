"""l-diversity of sensitive variables within the equivalence classes of the key variables.

methods.md M3.2 (sdcMicro's ``ldiversity``).  Within each equivalence class (records with equal
key values; a missing key value is a value of its own here), with ``r_1 >= r_2 >= ...`` the counts
of the distinct non-missing values of a sensitive variable:

* distinct l: the number of distinct non-missing values, plus one if some are missing;
* entropy l: ``exp(H)`` of the value distribution (missing values as one more category);
* recursive (c, l): the largest ``l`` with ``r_1 < c * (r_l + r_{l+1} + ...)`` (1 if none).

With two or more sensitive variables, the multi-attribute versions split each class by the other
sensitive variables and take the minimum over the sub-classes and the variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit._codes import encode_column, factorize, group_ids
from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_real
from sdckit.microdata import Microdata, as_microdata

__all__ = ["LDiversityResult", "l_diversity"]


def _group_diversity(
    gid: np.ndarray, n_groups: int, s_codes: np.ndarray, c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct, entropy and recursive l for every group (arrays of length n_groups)."""
    size = np.bincount(gid, minlength=n_groups).astype(np.float64)
    missing = np.bincount(gid, weights=(s_codes < 0).astype(np.float64), minlength=n_groups)
    valid = s_codes >= 0
    radix = int(s_codes.max()) + 2 if len(s_codes) else 1
    pair_key = gid[valid].astype(np.int64) * radix + s_codes[valid]
    pair_ids, n_pairs = factorize(pair_key, n_groups * radix)
    pair_count = np.bincount(pair_ids, minlength=n_pairs).astype(np.float64)
    pair_group = np.zeros(n_pairs, dtype=np.int64)
    pair_group[pair_ids] = gid[valid]
    distinct = np.bincount(pair_group, minlength=n_groups).astype(np.float64)
    share = pair_count / size[pair_group]
    plogp = np.bincount(pair_group, weights=share * np.log(share), minlength=n_groups).astype(
        np.float64
    )
    with_missing = (missing > 0) & (distinct > 0)
    miss_share = np.where(with_missing, missing / size, 1.0)
    plogp += np.where(with_missing, miss_share * np.log(miss_share), 0.0)
    distinct_l = distinct + with_missing
    entropy_l = np.exp(-plogp)
    recursive = recursive_l(pair_group, pair_count, n_groups, c)
    recursive[distinct == 0] = 0.0
    return distinct_l, entropy_l, recursive


def recursive_l(
    pair_group: np.ndarray, pair_count: np.ndarray, n_groups: int, c: float
) -> np.ndarray:
    """Recursive (c, l) per group from the counts of its (group, value) pairs.

    Shared with the engines (:mod:`sdckit.engines`), which aggregate the pairs on the engine.
    """
    recursive = np.ones(n_groups, dtype=np.float64)
    if len(pair_group) == 0:
        return recursive
    order = np.lexsort((-pair_count, pair_group))  # counts descending within each group
    g_sorted = pair_group[order]
    c_sorted = pair_count[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    lengths = np.diff(np.r_[starts, len(g_sorted)])
    rank = np.arange(len(g_sorted)) - np.repeat(starts, lengths)
    # tail[j] = sum of the counts at rank >= j within the group
    rev_cum = np.cumsum(c_sorted[::-1])[::-1]
    group_end = np.repeat(starts + lengths, lengths)
    after_group = np.where(group_end < len(c_sorted), np.r_[rev_cum, 0.0][group_end], 0.0)
    tail = rev_cum - after_group
    top = np.repeat(c_sorted[starts], lengths)
    passes = (rank >= 1) & (c * tail > top)
    recursive += np.bincount(g_sorted, weights=passes.astype(np.float64), minlength=n_groups)
    return recursive


@dataclass(frozen=True, repr=False)
class LDiversityResult:
    """l-diversity per record (the value of its equivalence class) for each sensitive variable.

    Attributes
    ----------
    distinct, entropy, recursive : dict of str to numpy.ndarray
        Per sensitive variable, the class's distinct, entropy and recursive (c, l) diversity.
    multi_entropy, multi_recursive : numpy.ndarray or None
        Multi-attribute versions (two or more sensitive variables).
    c : float
        The constant of recursive (c, l)-diversity.
    """

    sensitive: tuple[str, ...]
    distinct: dict[str, np.ndarray]
    entropy: dict[str, np.ndarray]
    recursive: dict[str, np.ndarray]
    multi_entropy: np.ndarray | None
    multi_recursive: np.ndarray | None
    c: float
    frame_info: FrameInfo | None = field(default=None, compare=False)

    def minimum(self) -> dict[str, float]:
        """File-level l: the minimum over classes of each measure."""
        out: dict[str, float] = {}
        for s in self.sensitive:
            out[f"l_distinct_{s}"] = float(self.distinct[s].min())
            out[f"l_entropy_{s}"] = float(self.entropy[s].min())
            out[f"l_recursive_{s}"] = float(self.recursive[s].min())
        if self.multi_entropy is not None and self.multi_recursive is not None:
            out["l_entropy_multi"] = float(self.multi_entropy.min())
            out["l_recursive_multi"] = float(self.multi_recursive.min())
        return out

    def to_frame(self) -> Any:
        """One row per record: ``l_distinct_<s>``, ``l_entropy_<s>``, ``l_recursive_<s>``."""
        cols: dict[str, np.ndarray] = {}
        for s in self.sensitive:
            cols[f"l_distinct_{s}"] = self.distinct[s]
            cols[f"l_entropy_{s}"] = self.entropy[s]
            cols[f"l_recursive_{s}"] = self.recursive[s]
        if self.multi_entropy is not None and self.multi_recursive is not None:
            cols["l_entropy_multi"] = self.multi_entropy
            cols["l_recursive_multi"] = self.multi_recursive
        return records_frame(cols, self.frame_info)

    def summary(self) -> Summary:
        """File-level l and the records in classes with a single sensitive value."""
        rows: list[tuple[str, Any]] = [(k.replace("_", " "), v) for k, v in self.minimum().items()]
        for s in self.sensitive:
            rows.append(
                (f"records with distinct l < 2 on {s}", int(np.count_nonzero(self.distinct[s] < 2)))
            )
        return Summary("l-diversity", rows, [f"recursive (c, l) with c = {self.c:g}"])


def l_diversity(
    data: Any, *, keys: Any = None, sensitive: Any = None, c: float = 2.0
) -> LDiversityResult:
    """l-diversity (distinct, entropy, recursive (c, l)) of the sensitive variables.

    Parameters
    ----------
    data : DataFrame or Microdata
    keys : list of str, optional
        Key variables (required unless ``data`` is a Microdata with keys).
    sensitive : str or list of str, optional
        Sensitive variables (required unless ``data`` is a Microdata with sensitive variables).
    c : float, default 2.0
        Constant of recursive (c, l)-diversity (sdcMicro's ``l_recurs_c``).

    Returns
    -------
    LDiversityResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk import l_diversity
    >>> df = pl.DataFrame({"age": [1, 1, 1, 2, 2], "disease": ["a", "a", "b", "c", "c"]})
    >>> res = l_diversity(df, keys=["age"], sensitive="disease")
    >>> res.distinct["disease"].tolist(), res.recursive["disease"].tolist()
    ([2.0, 2.0, 2.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    """
    md = as_microdata(data, keys=keys, sensitive=sensitive)
    md.require(keys=True, sensitive=True, what="l_diversity")
    c = check_real(c, "c", minimum=0.0, min_inclusive=False)
    return _l_diversity(md, c)


def _l_diversity(
    md: Microdata, c: float, groups: tuple[np.ndarray, int] | None = None
) -> LDiversityResult:
    """l-diversity of a validated file; ``groups`` reuses equivalence classes already built
    (``(group id per record, number of groups)`` over the keys, missing as a value)."""
    gid, n_groups = group_ids(md.key_codes) if groups is None else groups
    s_codes = {s: encode_column(md.frame.get_column(s))[0] for s in md.sensitive}
    distinct, entropy, recursive = {}, {}, {}
    for s in md.sensitive:
        d, e, r = _group_diversity(gid, n_groups, s_codes[s], c)
        distinct[s], entropy[s], recursive[s] = d[gid], e[gid], r[gid]
    multi_e = multi_r = None
    if len(md.sensitive) >= 2:
        multi_e = np.full(n_groups, np.inf)
        multi_r = np.full(n_groups, np.inf)
        codes = md.key_codes.codes
        for s in md.sensitive:
            others = np.column_stack([codes] + [s_codes[o] for o in md.sensitive if o != s])
            sub, n_sub = group_ids(others)
            _, e, r = _group_diversity(sub, n_sub, s_codes[s], c)
            # a sub-class with no value of s keeps its recursive 0 out of the minimum
            r = np.where(r == 0, np.inf, r)
            sub_group = np.zeros(n_sub, dtype=np.int64)
            sub_group[sub] = gid
            np.minimum.at(multi_e, sub_group, e)
            np.minimum.at(multi_r, sub_group, r)
        multi_r[np.isinf(multi_r)] = 0.0
        multi_e, multi_r = multi_e[gid], multi_r[gid]
    return LDiversityResult(
        sensitive=md.sensitive,
        distinct=distinct,
        entropy=entropy,
        recursive=recursive,
        multi_entropy=multi_e,
        multi_recursive=multi_r,
        c=c,
        frame_info=md.frame_info,
    )
