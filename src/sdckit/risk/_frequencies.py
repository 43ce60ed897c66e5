"""Sample frequencies ``fk``, estimated population frequencies ``Fk_hat`` and k-anonymity.

methods.md M1 and M3.1.  Missing key values either match any value (sdcMicro's ``freqCalc``
semantics, with the weighting ``alpha`` of wildcard matches between incomplete keys) or count as a
category of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from sdckit._codes import combine_codes, factorize, first_index, group_ids
from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int, check_real
from sdckit.microdata import Microdata, as_microdata

__all__ = [
    "FrequencyResult",
    "KAnonymityViolations",
    "frequencies",
    "frequency_counts",
]

MissingMode = Literal["wildcard", "category"]


@dataclass(frozen=True)
class KAnonymityViolations:
    """Records and equivalence classes below ``k``.

    Attributes
    ----------
    k : int
    records : int
        Number of records with ``fk < k``.
    classes : int
        Number of distinct key combinations (equivalence classes) with ``fk < k``.
    weighted_records : int
        Number of records with ``Fk_hat < k`` (the weighted variant).
    """

    k: int
    records: int
    classes: int
    weighted_records: int


@dataclass(frozen=True, repr=False)
class FrequencyResult:
    """Per-record sample and population frequencies of the key combinations.

    Attributes
    ----------
    fk : numpy.ndarray
        Sample frequency of each record's key combination (fractional only when
        ``missing="wildcard"`` and ``alpha < 1``).
    Fk_hat : numpy.ndarray
        Estimated population frequency (sum of the weights of the matching records; equals
        ``fk`` without weights).
    group : numpy.ndarray
        Equivalence-class id of each record (records with equal keys, missing included).
    keys : tuple of str
    missing : {"wildcard", "category"}
    alpha : float
    class_counts, class_weights, class_sizes : numpy.ndarray or None
        ``fk``, ``Fk_hat`` and the number of records of each equivalence class, indexed by
        ``group`` (set by :func:`frequency_counts`; see :attr:`class_fk`, :attr:`class_Fk_hat`
        and :attr:`class_size`).  The file-level counts are computed from them, one value per
        class instead of one per record.
    """

    fk: np.ndarray
    Fk_hat: np.ndarray
    group: np.ndarray
    keys: tuple[str, ...]
    missing: str
    alpha: float
    weighted: bool
    frame_info: FrameInfo | None = field(default=None, compare=False)
    # fk and Fk_hat of each equivalence class (indexed by ``group``), when already known
    class_counts: np.ndarray | None = field(default=None, compare=False, repr=False)
    class_weights: np.ndarray | None = field(default=None, compare=False, repr=False)
    class_sizes: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.fk)

    @property
    def n_classes(self) -> int:
        """Number of equivalence classes (distinct key combinations, missing as a value)."""
        if self.class_counts is not None:
            return len(self.class_counts)
        return int(self.group.max()) + 1 if len(self.group) else 0

    @property
    def sample_uniques(self) -> int:
        """Number of records whose key combination occurs once in the sample (``fk == 1``)."""
        return self.records_in(self.class_fk == 1)

    @property
    def n1(self) -> int:
        """Records with ``fk == 1`` (sdcMicro's n1)."""
        return self.sample_uniques

    @property
    def n2(self) -> int:
        """Records with ``fk == 2`` (sdcMicro's n2)."""
        return self.records_in(self.class_fk == 2)

    def violates(self, k: int) -> np.ndarray:
        """Boolean per record: True where ``fk < k`` (the record breaks k-anonymity)."""
        k = check_int(k, "k", minimum=1)
        return self.fk < k

    @cached_property
    def class_fk(self) -> np.ndarray:
        """``fk`` of each equivalence class (constant within a class), indexed by ``group``."""
        if self.class_counts is not None:
            return self.class_counts
        out = np.zeros(self.n_classes, dtype=np.float64)
        out[self.group] = self.fk
        return out

    @cached_property
    def class_Fk_hat(self) -> np.ndarray:
        """``Fk_hat`` of each equivalence class, indexed by ``group``."""
        if self.class_weights is not None:
            return self.class_weights
        if not self.weighted:
            return self.class_fk
        out = np.zeros(self.n_classes, dtype=np.float64)
        out[self.group] = self.Fk_hat
        return out

    @cached_property
    def class_size(self) -> np.ndarray:
        """Number of records of each equivalence class, indexed by ``group``."""
        if self.class_sizes is not None:
            return self.class_sizes
        return np.bincount(self.group, minlength=self.n_classes)

    def records_in(self, classes: np.ndarray) -> int:
        """Number of records in the classes marked True (a boolean per class)."""
        return int(self.class_size[classes].sum())

    def violations(self, k: int) -> KAnonymityViolations:
        """Counts of records and classes that break k-anonymity."""
        k = check_int(k, "k", minimum=1)
        below = self.class_fk < k  # fk is constant within a class: count per class
        return KAnonymityViolations(
            k=int(k),
            records=self.records_in(below),
            classes=int(np.count_nonzero(below)),
            weighted_records=self.records_in(self.class_Fk_hat < k),
        )

    def is_k_anonymous(self, k: int) -> bool:
        """True if every record has ``fk >= k``."""
        return not bool(self.violates(k).any())

    def to_frame(self) -> Any:
        """One row per record: ``fk``, ``Fk_hat`` (caller's frame type and index)."""
        return records_frame({"fk": self.fk, "Fk_hat": self.Fk_hat}, self.frame_info)

    def summary(self, ks: tuple[int, ...] = (2, 3, 5)) -> Summary:
        """File-level figures: records, classes, sample uniques, k-anonymity violations."""
        rows: list[tuple[str, Any]] = [
            ("records", self.n_records),
            ("equivalence classes", self.n_classes),
            ("sample uniques (fk = 1)", self.sample_uniques),
            ("records with fk = 2", self.n2),
        ]
        for k in ks:
            v = self.violations(k)
            rows.append((f"records violating {k}-anonymity", v.records))
        notes = [f"key variables: {', '.join(self.keys)}; missing values: {self.missing}"]
        return Summary("Frequency counts", rows, notes)


def _wildcard_counts(
    codes: np.ndarray, weights: np.ndarray | None, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sdcMicro's freqCalc with missing values as wildcards, computed over key groups.

    Returns ``fk``, ``Fk_hat`` and the group id of each record.
    """
    fk, fw, gid, _ = _wildcard_group_counts(codes, weights, alpha)
    return fk[gid], fw[gid], gid


def _wildcard_group_counts(
    codes: np.ndarray, weights: np.ndarray | None, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_wildcard_counts` per group: ``fk`` and ``Fk_hat`` of each group, the group ids
    and the number of records of each group."""
    m = codes.shape[1]
    gid, n_groups = group_ids(codes)
    first = first_index(gid, n_groups)
    rep = codes[first]
    sizes = np.bincount(gid, minlength=n_groups)
    g_count = sizes.astype(np.float64)
    g_weight = g_count if weights is None else np.bincount(gid, weights, minlength=n_groups)
    miss = rep < 0
    bits = (miss * (1 << np.arange(m, dtype=np.int64))).sum(axis=1)
    patterns = np.unique(bits)
    fk = g_count.copy()
    fw = g_weight.copy()
    members = {int(p): np.flatnonzero(bits == p) for p in patterns}
    for p in patterns:
        p = int(p)
        left = members[p]
        # Right-hand patterns with the same union of missing positions are compared on the
        # same observed keys: one grouping serves them all.
        by_union: dict[int, list[tuple[np.ndarray, float]]] = {}
        for q in patterns:
            q = int(q)
            factor = 1.0 if (q == 0 and p != 0) else alpha
            if q == p or factor == 0.0:
                continue
            by_union.setdefault(p | q, []).append((members[q], factor))
        for union, parts in by_union.items():
            right = np.concatenate([r for r, _ in parts])
            scale = np.concatenate([np.full(len(r), f) for r, f in parts])
            right_c, right_w = scale * g_count[right], scale * g_weight[right]
            on = [j for j in range(m) if not (union >> j) & 1]
            if not on:
                fk[left] += right_c.sum()
                fw[left] += right_w.sum()
                continue
            both = np.concatenate([left, right])
            key, bound = combine_codes(rep[both], on)
            ids, n_ids = factorize(key, bound)
            lid, rid = ids[: len(left)], ids[len(left) :]
            fk[left] += np.bincount(rid, right_c, minlength=n_ids)[lid]
            fw[left] += np.bincount(rid, right_w, minlength=n_ids)[lid]
    return fk, fw, gid, sizes


def frequency_counts(
    md: Microdata, *, missing: MissingMode = "wildcard", alpha: float = 1.0
) -> FrequencyResult:
    """Frequencies of a validated :class:`Microdata` (see :func:`frequencies`)."""
    check_choice(missing, "missing", ("wildcard", "category"))
    alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    kc = md.key_codes
    weights = md.weights()
    if missing == "wildcard" and kc.has_missing:
        class_fk, class_fw, gid, sizes = _wildcard_group_counts(kc.codes, weights, alpha)
    else:
        # the codes one column each: the (n, m) matrix is not needed here
        gid, n_groups = group_ids(kc)
        sizes = np.bincount(gid, minlength=n_groups)
        class_fk = sizes.astype(np.float64)
        class_fw = class_fk if weights is None else np.bincount(gid, weights, minlength=n_groups)
    class_fw = class_fw.astype(np.float64, copy=False)
    fk = class_fk[gid]
    fw = fk if class_fw is class_fk else class_fw[gid]
    return FrequencyResult(
        fk=fk,
        Fk_hat=fw,
        group=gid,
        keys=md.keys,
        missing=missing,
        alpha=alpha,
        weighted=weights is not None,
        frame_info=md.frame_info,
        class_counts=class_fk,
        class_weights=class_fw,
        class_sizes=sizes,
    )


def frequencies(
    data: Any,
    *,
    keys: Any = None,
    weight: str | None = None,
    missing: MissingMode = "wildcard",
    alpha: float = 1.0,
) -> FrequencyResult:
    """Sample frequency ``fk`` and estimated population frequency ``Fk_hat`` per record.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`Microdata`.
    keys : list of str, optional
        Key variables (required unless ``data`` is a :class:`Microdata` with keys).
    weight : str, optional
        Sampling weight column; without it ``Fk_hat == fk``.
    missing : {"wildcard", "category"}, default "wildcard"
        ``"wildcard"``: a missing key value matches any value (sdcMicro).  ``"category"``: a
        missing value is a level of its own.
    alpha : float, default 1.0
        With wildcards, the weight in [0, 1] of a match between a complete key and an incomplete
        one, or between incomplete keys with different missing positions (sdcMicro's alpha).

    Returns
    -------
    FrequencyResult

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.risk import frequencies
    >>> df = pl.DataFrame({"a": [2, 3, 2, 2], "b": [3, 3, None, 3], "w": [18.0, 45.5, 39, 51]})
    >>> res = frequencies(df, keys=["a", "b"], weight="w")
    >>> res.fk.tolist(), res.Fk_hat.tolist()
    ([3.0, 1.0, 3.0, 3.0], [108.0, 45.5, 108.0, 108.0])
    """
    md = as_microdata(data, keys=keys, weight=weight)
    return frequency_counts(md, missing=missing, alpha=alpha)
