"""Chance: how often a guess would be right without the channel that made it.

A guess of value ``v`` for a record is right by chance as often as ``v`` is among the records
an intruder without any channel cannot tell apart from it (*comparable records*): the share of
``v`` among them.  An attacker who always guesses the most frequent value of comparable records
is right as often as the share of the most frequent value; a channel that names a rare value
(a country of birth suppressed among records of the home country) and is right has beaten
chance by nearly one value.

Comparable records are read from the released file: the records that show the variable (for a
suppressed or perturbed value) and share the record's released value of one other key, or its
tenth of one released number, or its leaf of a decision tree over the other keys and numbers
(grown on one half of those records and read on the other); and the protected records of the
variable other than the record itself (suppression is not at random: it hits small regions
more often, and a guess of such a region is right that often without any channel).  The
chance of a guess is its largest share over those sets, each shrunk towards its share in the
whole file by two records' weight (a group of one is not certain).  What the released keys
and numbers say about everybody (a child aged 0-14 is not employed; an income says employed)
is thus chance, not disclosure.
For a recoded value (a band shown, the fine value hidden) or a withheld variable, the fine
values of every record are known to the checker, and the comparable records share the
record's band or one other key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Comparable", "comparable_sets", "tree_leaves"]

#: Records per tenth of a number, and per leaf of the comparable-records tree, at least.
MIN_GROUP = 10
#: Records the comparable-records tree is grown on (and as many it is read on), at most.
SAMPLE = 20_000


@dataclass(frozen=True)
class Comparable:
    """Shares of each value among the comparable records of every record."""

    overall: np.ndarray
    protected: np.ndarray  # counts of each value among the protected values
    sets: tuple[np.ndarray, ...]
    keys: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    sizes: tuple[np.ndarray, ...]

    def chance(self, rows: np.ndarray, values: np.ndarray, truth: np.ndarray) -> np.ndarray:
        """How often guessing ``values`` for the records ``rows`` (whose true values are
        ``truth``) is right by chance."""
        n_values = len(self.overall)
        ok = (values >= 0) & (values < n_values)
        v = np.where(ok, values, 0)
        prior = np.where(ok, self.overall[v], 0.0)
        # a guess of a value frequent among the other protected values (suppression hits
        # small regions more often) is right that often without any channel
        n = float(self.protected.sum())
        others = self.protected[v] - (truth == values)
        among = (others + 2.0 * prior) / (max(n - 1.0, 0.0) + 2.0)
        best = np.maximum(prior, np.where(ok, among, 0.0))
        for codes, keys, counts, sizes in zip(self.sets, self.keys, self.counts, self.sizes,
                                              strict=True):  # fmt: skip
            group = codes[rows]
            has = (group >= 0) & ok
            if not has.any() or len(keys) == 0:
                continue
            key = np.where(has, group, 0) * np.int64(n_values) + v
            at = np.clip(np.searchsorted(keys, key), 0, len(keys) - 1)
            same = np.where(has & (keys[at] == key), counts[at], 0)
            size = np.where(has, sizes[np.clip(group, 0, len(sizes) - 1)], 0)
            best = np.maximum(best, np.where(has, (same + 2.0 * prior) / (size + 2.0), 0.0))
        return best


def comparable_sets(
    values: np.ndarray,
    n_values: int,
    reference: np.ndarray,
    sets: Sequence[tuple[np.ndarray, np.ndarray]],
    truths: np.ndarray,
) -> Comparable:
    """The shares of ``values`` (codes, one per record) among comparable records.

    Parameters
    ----------
    values : numpy.ndarray
        The value of every record (-1: unknown).
    n_values : int
    reference : numpy.ndarray
        The records whose values count for the overall shares.
    sets : sequence of (codes, rows)
        Each definition of comparable records: the group code of every record (-1: none) and
        the records whose values count in its shares.
    truths : numpy.ndarray
        The true values of the protected values (the share of a value among them is its
        chance too: the protected records are comparable with each other).
    """
    ref = reference[values[reference] >= 0]
    counts0 = np.bincount(values[ref], minlength=n_values).astype(np.float64)
    overall = counts0 / max(len(ref), 1)
    out_sets, out_keys, out_counts, out_sizes = [], [], [], []
    for codes, rows in sets:
        rows = rows[(values[rows] >= 0) & (codes[rows] >= 0)]
        n_groups = int(codes.max()) + 1 if len(codes) else 0
        if len(rows) == 0 or n_groups == 0:
            continue
        key = codes[rows] * np.int64(n_values) + values[rows]
        uniq, cnt = np.unique(key, return_counts=True)
        out_sets.append(codes)
        out_keys.append(uniq)
        out_counts.append(cnt.astype(np.float64))
        out_sizes.append(np.bincount(codes[rows], minlength=n_groups).astype(np.float64))
    truths = truths[(truths >= 0) & (truths < n_values)]
    protected = np.bincount(truths, minlength=n_values).astype(np.float64)
    return Comparable(overall, protected, tuple(out_sets), tuple(out_keys), tuple(out_counts),
                      tuple(out_sizes))  # fmt: skip


def tenths(x: np.ndarray) -> np.ndarray | None:
    """The tenth of its distribution each number falls in (-1: missing); None if too few."""
    ok = ~np.isnan(x)
    if ok.sum() < 10 * MIN_GROUP:
        return None
    edges = np.unique(np.quantile(x[ok], np.linspace(0.1, 0.9, 9)))
    return np.where(ok, np.searchsorted(edges, np.where(ok, x, 0.0), side="right"), -1)


def tree_leaves(
    features: np.ndarray, values: np.ndarray, rows: np.ndarray, seed: int, cells: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The leaf of the records in a decision tree grown on half of ``rows`` (predicting
    ``values`` from ``features``), and the other half (where the shares are read).  Leaves
    are found for that half and the ``cells`` (the records guessed); -1 for the others."""
    from sklearn.tree import DecisionTreeClassifier

    if features.shape[1] == 0 or len(rows) < 4 * MIN_GROUP:
        return None
    rng = np.random.default_rng(seed)
    if len(rows) > 2 * SAMPLE:
        rows = np.sort(rng.choice(rows, 2 * SAMPLE, replace=False))
    half = rng.permutation(len(rows))
    grow, judge = np.sort(rows[half[::2]]), np.sort(rows[half[1::2]])
    if len(np.unique(values[grow])) < 2:
        return None
    tree = DecisionTreeClassifier(min_samples_leaf=MIN_GROUP, random_state=seed)
    tree.fit(features[grow], values[grow])
    leaves = np.full(len(values), -1, dtype=np.int64)
    needed = np.union1d(judge, cells)
    leaves[needed] = tree.apply(features[needed])
    return leaves, judge
