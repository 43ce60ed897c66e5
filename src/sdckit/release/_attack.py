"""The attacks: guesses of protected values from the released file only.

Each attack reads the released file (never the original) and asserts a guess for a protected
value when its own confidence, learnt from the released records in which the value is shown,
reaches the confidence level of the check:

* **groups** (any column, any type, and transformations of it): the records sharing the
  record's value show the value; confidence ``(m + 2 pi) / (v + 2)`` for ``m`` of ``v`` shown
  values agreeing, shrunk towards the channel's reliability ``pi`` (how often two records of
  one group show the same value, over the whole file: a household-wide column is reliable from
  one witness, a weak correlate is not);
* **neighbours** (the record order, and the order of every number or date): the nearest
  records before and after show the same value; confidence: how often that is right for the
  records that show their value;
* **tree**: a scikit-learn decision tree on every released column, grown on one half of the
  records that show the value; confidence: how often its leaf is right on the other half
  (shrunk towards the most frequent value's share by two records' weight); the column it
  splits on most is named;
* **counting**: a household size is the number of records sharing a household (learnt from the
  records whose size is shown as a number; a size recoded to "6+" comes back the same way);
* **averaging**: a perturbed number estimated by the mean of the released values of its group
  (household members), or by a regression on another released number (learnt on the values
  that are not piled up at a top or bottom code).

Values never shown in the file (recoded to a band, or withheld), and suppressed values no
record with the same channel value shows, cannot be learnt; the checker, which knows the
truth, tests whether a classification of another released column (groups of at least ten
records, nine in ten of those holding protected values all but 5 % alike) or the order of a
number or date determines them, as an intruder who knows the coding scheme would read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdckit.release._channels import MIN_CLASS, Grouping, Ordering
from sdckit.release._targets import CategoricalTarget, NumericTarget, member_counts

__all__ = [
    "Guesses",
    "NumericEstimate",
    "average_estimates",
    "count_guesses",
    "group_guesses",
    "monotone_guesses",
    "neighbour_guesses",
    "regression_estimates",
    "structure_guesses",
    "tree_guesses",
]

#: Groups larger than this on average are not averaged (they are not households).
MAX_AVERAGED = 20
#: Training records of the decision tree (a seeded sample of the records showing the value).
TREE_SAMPLE = 40_000
#: Records a channel's reliability is read on, at most (a seeded sample).
RELIABILITY_SAMPLE = 200_000


@dataclass(frozen=True)
class Guesses:
    """Guesses asserted by one attack for one target.

    ``rows`` are records (written order) holding a protected value, ``values`` the guessed codes
    (in the target's label space, or in its fine space when ``fine``), ``confidence`` the
    attacker's own confidence.
    """

    kind: str
    label: str
    column: str
    rows: np.ndarray
    values: np.ndarray
    confidence: np.ndarray
    fine: bool = False
    household: bool = False


def _empty(kind: str, label: str, column: str, fine: bool = False) -> Guesses:
    z = np.zeros(0, dtype=np.int64)
    return Guesses(kind, label, column, z, z, np.zeros(0), fine)


#: Largest (groups x labels) table counted densely (a bincount), beyond it by sorting.
_DENSE = 20_000_000


def _tally(
    groups: np.ndarray, labels: np.ndarray, n_groups: int, n_labels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """For each group: values counted v, the most frequent label and its count m; and the
    number of ordered pairs of records of one group with the same label."""
    n_labels = max(n_labels, 1)
    if n_groups * n_labels <= _DENSE:
        table = np.bincount(groups * np.int64(n_labels) + labels, minlength=n_groups * n_labels)
        table = table.reshape(n_groups, n_labels)
        mode = table.argmax(axis=1).astype(np.int64)
        m = table.max(axis=1).astype(np.int64)
        v = table.sum(axis=1).astype(np.int64)
        pairs = float((table * (table - 1.0)).sum())
        return v, np.where(v > 0, mode, -1), m, pairs
    key = groups * np.int64(n_labels) + labels
    uniq, cnt = np.unique(key, return_counts=True)
    grp, lab = uniq // n_labels, uniq % n_labels
    v = np.bincount(grp, weights=cnt, minlength=n_groups).astype(np.int64)
    order = np.lexsort((lab, -cnt, grp))
    first = np.ones(len(order), dtype=bool)
    first[1:] = grp[order][1:] != grp[order][:-1]
    mode = np.full(n_groups, -1, dtype=np.int64)
    m = np.zeros(n_groups, dtype=np.int64)
    mode[grp[order][first]] = lab[order][first]
    m[grp[order][first]] = cnt[order][first]
    return v, mode, m, float((cnt * (cnt - 1.0)).sum())


def _best_per_row(
    rows: np.ndarray, values: np.ndarray, conf: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The most confident guess of each row (rows may repeat)."""
    if len(rows) == 0:
        return rows, values, conf
    order = np.lexsort((values, -conf, rows))
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = rows[order][1:] != rows[order][:-1]
    sel = order[keep]
    return rows[sel], values[sel], conf[sel]


def group_guesses(
    t: CategoricalTarget, g: Grouping, confidence: float, sampled: np.ndarray | None = None
) -> Guesses:
    """Guesses from the records sharing a group (see the module docstring); the channel's
    reliability is read on the records ``sampled`` (default: all)."""
    labels = t.labels
    if g.rows is None:
        rows = np.arange(len(labels), dtype=np.int64)
        gcodes = g.codes
    else:
        rows, gcodes = g.rows, g.codes
    y = labels[rows]
    shown = (gcodes >= 0) & (y >= 0)
    target_rows = t.learn[rows] & (gcodes >= 0)
    if not shown.any() or not target_rows.any():
        return _empty("groups", g.label, g.column)
    # how reliable the channel is: how often two records of one group show the same value
    # (read on a sample of the records, enough for a share)
    sample = shown if sampled is None else shown & sampled[rows]
    v, _, _, same = _tally(gcodes[sample], y[sample], g.n_groups, t.n_labels)
    pairs = float((v * (v - 1.0)).sum())
    reliability = same / pairs if pairs > 0 else 0.0
    # the modes of the groups that hold protected values only (numbered afresh)
    wanted = np.zeros(g.n_groups, dtype=bool)
    wanted[gcodes[target_rows]] = True
    use = shown & wanted[np.maximum(gcodes, 0)]
    if not use.any():
        return _empty("groups", g.label, g.column)
    number = np.cumsum(wanted) - 1  # the new number of each wanted group
    v, mode, m, _ = _tally(number[gcodes[use]], y[use], int(wanted.sum()), t.n_labels)
    r = rows[target_rows]
    at = number[gcodes[target_rows]]
    vv = v[at].astype(np.float64)
    mm = m[at].astype(np.float64)
    mode = mode[at]
    own = labels[r]
    self_shown = own >= 0  # a perturbed value is shown in its own record: leave it out
    vv = vv - self_shown
    mm = mm - (self_shown & (own == mode))
    conf = (mm + 2.0 * reliability) / (vv + 2.0)
    ok = (vv >= 1) & (mode >= 0) & (conf >= confidence)
    r, val, c = _best_per_row(r[ok], mode[ok], conf[ok])
    return Guesses("groups", g.label, g.column, r, val, c, household=g.household)


def neighbour_guesses(t: CategoricalTarget, o: Ordering, confidence: float) -> Guesses:
    """Guesses from the nearest records before and after in an order, when they agree."""
    order = o.order
    y = t.labels[order]
    shown = y >= 0
    if shown.sum() < 3:
        return _empty("neighbours", o.label, o.column)
    idx = np.arange(len(order))
    last = np.maximum.accumulate(np.where(shown, idx, -1))
    prev = np.concatenate(([-1], last[:-1]))
    nxt_incl = np.minimum.accumulate(np.where(shown, idx, len(order))[::-1])[::-1]
    nxt = np.concatenate((nxt_incl[1:], [len(order)]))
    has = (prev >= 0) & (nxt < len(order))
    prev_lab = np.where(has, y[np.maximum(prev, 0)], -1)
    next_lab = np.where(has, y[np.minimum(nxt, len(order) - 1)], -2)
    agree = has & (prev_lab == next_lab)
    learnt = shown & agree
    if learnt.sum() < 2:
        return _empty("neighbours", o.label, o.column)
    right = int(np.count_nonzero(y[learnt] == prev_lab[learnt]))
    reliability = (right + 1.0) / (learnt.sum() + 2.0)
    cells = t.learn[order] & agree
    if reliability < confidence or not cells.any():
        return _empty("neighbours", o.label, o.column)
    rows = order[cells]
    return Guesses(
        "neighbours", o.label, o.column, rows, prev_lab[cells], np.full(len(rows), reliability)
    )


def count_guesses(
    t: CategoricalTarget, g: Grouping, confidence: float, *, fine: bool = False
) -> Guesses:
    """A household size guessed as the number of records in the record's group (for a
    suppressed size, and for a recoded one: "6+" hides nothing the members do not show)."""
    if g.rows is not None or not t.is_size or not t.present:
        return _empty("counting", g.label, g.column, fine=fine)
    used = g.codes >= 0
    size = np.where(used, member_counts(np.where(used, g.codes, -1)), 0)
    text_code = {text: i for i, text in enumerate(t.label_text)}
    guess = np.array([text_code.get(str(s), -1) for s in range(int(size.max()) + 1)])[size]
    # learnt where the shown size is a number (a band such as "6+" says only that it is large)
    exact = np.array([text.strip().isdigit() for text in t.label_text] + [False])
    shown = used & (t.labels >= 0) & ~t.learn & exact[t.labels]
    if shown.sum() < 2:
        return _empty("counting", g.label, g.column, fine=fine)
    right = int(np.count_nonzero(guess[shown] == t.labels[shown]))
    reliability = (right + 1.0) / (shown.sum() + 2.0)
    if fine:
        # the exact size behind a band: the count, in the original's codes
        text = [str(s) for s in range(int(size.max()) + 1)]
        fine_code = {v: c for c, v in enumerate(t.fine_text)}
        guess = np.array([fine_code.get(v, -1) for v in text])[size]
    cells = (t.fine if fine else t.learn) & used & (guess >= 0)
    if reliability < confidence or not cells.any():
        return _empty("counting", g.label, g.column, fine=fine)
    rows = np.flatnonzero(cells)
    return Guesses(
        "counting", g.label, g.column, rows, guess[rows], np.full(len(rows), reliability),
        fine=fine, household=True,
    )  # fmt: skip


def tree_guesses(
    t: CategoricalTarget,
    features: np.ndarray,
    names: list[str],
    confidence: float,
    seed: int,
) -> Guesses:
    """Guesses of a decision tree trained on the records that show the value."""
    from sklearn.tree import DecisionTreeClassifier

    label = "a decision tree on the other released columns"
    keep = [j for j, c in enumerate(names) if c != t.name]
    cells = np.flatnonzero(t.learn)
    if not keep or len(cells) == 0:
        return _empty("tree", label, "")
    x = features[:, keep]
    train = np.flatnonzero((t.labels >= 0) & ~t.learn)
    if len(train) < 2 * MIN_CLASS:
        return _empty("tree", label, "")
    rng = np.random.default_rng(seed)
    if len(train) > TREE_SAMPLE:
        train = np.sort(rng.choice(train, TREE_SAMPLE, replace=False))
    # one half grows the tree, the other half says how often its leaves are right (a leaf's
    # share among the records it was grown on flatters it)
    half = rng.permutation(len(train))
    grow, judge = np.sort(train[half[::2]]), np.sort(train[half[1::2]])
    y = t.labels[grow]
    if len(np.unique(y)) < 2 or len(judge) < MIN_CLASS:
        return _empty("tree", label, "")
    tree = DecisionTreeClassifier(min_samples_leaf=5, random_state=seed)
    tree.fit(x[grow], y)
    leaf_judge = tree.apply(x[judge])
    leaf_cells = tree.apply(x[cells])
    n_leaves = tree.tree_.node_count
    v = np.bincount(leaf_judge, minlength=n_leaves)
    # the leaf's guess is the tree's; how often it is right is read on the judging half
    guess = tree.classes_[np.argmax(tree.tree_.value[:, 0, :], axis=1)]
    right = np.zeros(n_leaves)
    np.add.at(right, leaf_judge, (t.labels[judge] == guess[leaf_judge]).astype(np.float64))
    base = float(np.mean(t.labels[judge] == np.bincount(t.labels[judge]).argmax()))
    conf = (right[leaf_cells] + 2.0 * base) / (v[leaf_cells] + 2.0)
    ok = conf >= confidence
    # the column the tree splits on most on the way to the leaves it guesses from
    used = tree.decision_path(x[cells[ok]]) if ok.any() else None
    column = ""
    if used is not None:
        nodes = np.flatnonzero(np.asarray(used.sum(axis=0)).ravel())
        tr = tree.tree_
        split = tr.feature[nodes]
        split_ok = split >= 0
        nodes, split = nodes[split_ok], split[split_ok]
        left, right = tr.children_left[nodes], tr.children_right[nodes]
        w, imp = tr.weighted_n_node_samples, tr.impurity
        gain = w[nodes] * imp[nodes] - w[left] * imp[left] - w[right] * imp[right]
        split_ok = np.ones(len(nodes), dtype=bool)
        if split_ok.any():
            weight = np.bincount(split[split_ok], weights=gain[split_ok], minlength=len(keep))
            column = names[keep[int(np.argmax(weight))]]
            label = f"{label} (mostly {column!r})"
    return Guesses("tree", label, column, cells[ok], guess[leaf_cells][ok], conf[ok])


def structure_guesses(
    t: CategoricalTarget, g: Grouping, original: np.ndarray, *, fine: bool = True
) -> Guesses:
    """Values read from a classification: groups of at least ten records whose values (known
    to the checker: ``original``, the fine values or the truths at released granularity) are
    all but 5 % the same, in a channel whose large groups are nearly all so (a coding scheme
    an intruder knows), read as that intruder reads them."""
    cells_of = t.fine if fine else t.learn
    if g.rows is not None or not g.coarse or not cells_of.any():
        return _empty("structure", g.label, g.column, fine=fine)
    ok = (g.codes >= 0) & (original >= 0)
    n_fine = int(original.max()) + 1 if ok.any() else 0
    if n_fine == 0:
        return _empty("structure", g.label, g.column, fine=True)
    v, mode, m, _ = _tally(g.codes[ok], original[ok], g.n_groups, n_fine)
    pure = (v >= MIN_CLASS) & (m >= 0.95 * v)
    # a classification: nine records in ten of the channel's large groups lie in pure groups
    # (a district gives its region; a household size that one large household alone has is
    # not a classification of the region)
    # (over the groups that hold protected values: the others are pure trivially when the
    # protection left their values as they were)
    cells = cells_of & (g.codes >= 0)
    holding = np.zeros(g.n_groups, dtype=bool)
    holding[g.codes[cells]] = True
    large = (v >= MIN_CLASS) & holding
    if not large.any() or v[pure & holding].sum() < 0.9 * v[large].sum():
        return _empty("structure", g.label, g.column, fine=fine)
    cells[cells] = pure[g.codes[cells]]
    rows = np.flatnonzero(cells)
    return Guesses(
        "structure", g.label, g.column, rows, mode[g.codes[rows]], np.ones(len(rows)), fine=fine
    )


def monotone_guesses(
    t: CategoricalTarget, o: Ordering, ordinal: np.ndarray, *, fine: bool = True
) -> Guesses:
    """Values that follow a number or date in order (a date of birth gives the exact age, a
    decimal age the age in years): the checker fits the monotone step function."""
    from sklearn.isotonic import IsotonicRegression

    cells_of = t.fine if fine else t.learn
    codes_of = t.fine_truth if fine else t.shown_truth
    if not o.column or not cells_of.any():
        return _empty("order", o.label, o.column, fine=fine)
    order = o.order[~np.isnan(ordinal[o.order])]
    values = ordinal[order]
    if len(np.unique(values)) < 3 or len(order) < 2 * MIN_CLASS:
        return _empty("order", o.label, o.column, fine=fine)
    step = np.diff(values)
    up, down = float(np.mean(step >= 0)), float(np.mean(step <= 0))
    if max(up, down) < 0.99:
        return _empty("order", o.label, o.column, fine=fine)
    fit = IsotonicRegression(increasing=up >= down).fit_transform(
        np.arange(len(order), dtype=np.float64), values
    )
    levels = np.unique(values)
    nearest = levels[np.clip(np.searchsorted(levels, fit), 0, len(levels) - 1)]
    below = levels[np.clip(np.searchsorted(levels, fit) - 1, 0, len(levels) - 1)]
    nearest = np.where(np.abs(below - fit) < np.abs(nearest - fit), below, nearest)
    cells = cells_of[order]
    rows = order[cells]
    # the guessed code: the code of the records with that ordinal value
    code_of = dict(zip(values.tolist(), codes_of[order].tolist(), strict=True))
    guessed = np.array([code_of.get(v, -1) for v in nearest[cells].tolist()], dtype=np.int64)
    return Guesses("order", o.label, o.column, rows, guessed, np.ones(len(rows)), fine=fine)


@dataclass(frozen=True)
class NumericEstimate:
    """Estimates of perturbed (or suppressed) numbers by one attack."""

    kind: str
    label: str
    column: str
    rows: np.ndarray
    estimate: np.ndarray
    household: bool = False


def average_estimates(t: NumericTarget, g: Grouping) -> NumericEstimate | None:
    """The mean of the released values of the record's group (its household members)."""
    if g.rows is not None or g.column == t.name:
        return None
    used = g.codes >= 0
    if not used.any() or used.sum() / max(g.n_groups, 1) > MAX_AVERAGED:
        return None
    value = np.where(np.isnan(t.released), 0.0, t.released)
    has = (~np.isnan(t.released) & used).astype(np.float64)
    codes = np.where(used, g.codes, 0)
    total = np.bincount(codes, weights=value * used, minlength=g.n_groups)
    count = np.bincount(codes, weights=has, minlength=g.n_groups)
    own = has > 0
    # a suppressed value: the mean of the others; a perturbed one: the mean with its own
    others = count[codes] - own
    mean_all = np.divide(total[codes], count[codes], out=np.full(len(codes), np.nan),
                         where=count[codes] > 0)  # fmt: skip
    mean_others = np.divide(total[codes] - value * own, others, out=np.full(len(codes), np.nan),
                            where=others > 0)  # fmt: skip
    est = np.where(t.suppressed, mean_others, mean_all)
    cells = (t.perturbed & (count[codes] >= 2)) | (t.suppressed & (others >= 1))
    cells &= used & ~np.isnan(est)
    if not cells.any():
        return None
    rows = np.flatnonzero(cells)
    return NumericEstimate("averaging", g.label, g.column, rows, est[rows], g.household)


def regression_estimates(t: NumericTarget, name: str, values: np.ndarray) -> NumericEstimate | None:
    """A least-squares line from another released number to the released values of ``t``."""
    both = ~np.isnan(values) & ~np.isnan(t.released)
    cells = (t.perturbed | t.suppressed) & ~np.isnan(values)
    if both.sum() < 2 * MIN_CLASS or not cells.any():
        return None
    # values piled up on the smallest or largest released value are top or bottom coded: the
    # line is learnt from the others (an intruder sees the pile)
    kept = t.released[both]
    for edge in (kept.min(), kept.max()):
        if np.count_nonzero(kept == edge) >= 2:
            both &= t.released != edge
    if both.sum() < 2 * MIN_CLASS:
        return None
    x, y = values[both], t.released[both]
    sx = x.std()
    if sx == 0:
        return None
    slope = float(((x - x.mean()) * (y - y.mean())).mean() / sx**2)
    intercept = float(y.mean() - slope * x.mean())
    rows = np.flatnonzero(cells)
    return NumericEstimate("regression", repr(name), name, rows, intercept + slope * values[rows])
