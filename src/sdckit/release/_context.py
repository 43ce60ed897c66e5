"""What the release check works on: the aligned files, the roles, the protected values with
their comparable records, and the attacker's channels."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from sdckit.release._attack import (
    RELIABILITY_SAMPLE,
    Guesses,
    NumericEstimate,
)
from sdckit.release._chance import comparable_sets, tenths, tree_leaves
from sdckit.release._channels import Channels, Grouping, build_channels
from sdckit.release._encode import CodedFrame, as_number, codes
from sdckit.release._targets import (
    CategoricalTarget,
    GroupIndex,
    NumericTarget,
    categorical_target,
    household_columns,
    is_size_of,
    numeric_target,
)

__all__ = ["Context"]

#: Threads the check works in (variables at a time): numpy's sorts and scikit-learn's trees
#: run outside the interpreter lock.  The results do not depend on it.
THREADS = min(4, os.cpu_count() or 1)
#: A grouping rebuilds households when it matches them for this share of the records.
HOUSEHOLD_MATCH = 0.9


# ------------------------------------------------------------------------------ context
@dataclass
class Context:
    """The aligned files, the roles, the protected values and the channels."""

    orig: pl.DataFrame
    rel: pl.DataFrame
    roles: dict[str, str]
    households: np.ndarray | None
    household_id: str | None
    hh_constant: set[str]
    targets: list[CategoricalTarget]
    numbers: list[NumericTarget]
    channels: Channels
    linking: dict[str, bool]
    seed: int
    sampled: np.ndarray | None = None
    coded: CodedFrame | None = None

    @classmethod
    def build(
        cls,
        orig: pl.DataFrame,
        rel: pl.DataFrame,
        *,
        keys: Sequence[str],
        linked: dict[str, str],
        household: str | None,
        household_level: Sequence[str],
        numeric: Sequence[str],
        weight: str | None,
        sensitive: Sequence[str],
        household_id: str | None,
        seed: int,
    ) -> Context:
        roles: dict[str, str] = {}
        for c in keys:
            roles[c] = "key"
        for c in linked:
            roles.setdefault(c, "linked")
        for c in sensitive:
            roles.setdefault(c, "sensitive")
        for c in numeric:
            roles.setdefault(c, "numeric")
        for c in household_level:
            roles.setdefault(c, "household-level")
        if weight is not None:
            roles[weight] = "weight"
        if household is not None:
            roles[household] = "household id"
        coded, orig_coded = CodedFrame(rel), CodedFrame(orig)
        households = index = None
        if household is not None and household in orig.columns:
            households, _ = codes(orig.get_column(household))
            index = GroupIndex(households)
        if household_id is not None and household_id not in rel.columns:
            household_id = None
        # household-wide variables: declared, or the same for every member in the original
        hh_constant: set[str] = set()
        if households is not None:
            hh_constant = {c for c in household_level if c in orig.columns}
            hh_constant |= set(
                household_columns(index, orig_coded, [c for c in orig.columns if c != household])
            )
        watched = [c for c in dict.fromkeys([*keys, *linked, *household_level, *sensitive])
                   if c in orig.columns and c not in numeric]  # fmt: skip
        # what an intruder without any channel reads: the released keys and numbers
        comparable_columns = [c for c in dict.fromkeys([*keys, *numeric]) if c in rel.columns]
        comparable = {c: _comparable_column(rel.get_column(c), coded) for c in comparable_columns}

        def target_of(c: str) -> CategoricalTarget | None:
            t = categorical_target(
                c,
                orig.get_column(c),
                rel.get_column(c) if c in rel.columns else None,
                household_level=c in hh_constant,
                is_size=households is not None and is_size_of(households, orig.get_column(c)),
            )
            return None if t is None else _with_comparable(t, coded, comparable, keys, seed)

        for c in comparable_columns:  # their codes once, before the threads read them
            coded(c)
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            targets = [t for t in pool.map(target_of, watched) if t is not None]
        numbers = []
        for c in dict.fromkeys([*numeric, *(h for h in household_level if h in numeric)]):
            if c in orig.columns:
                nt = numeric_target(
                    c, orig.get_column(c), rel.get_column(c) if c in rel.columns else None,
                    household_level=c in hh_constant,
                )  # fmt: skip
                if nt is not None:
                    numbers.append(nt)
        # the household-wide released columns that link members (clean of protected gaps)
        gapped = {t.name for t in targets if t.learn.any()}
        linkers, size_column = [], None
        if households is not None and index is not None:
            for c in rel.columns:
                if c == household_id or c in gapped:
                    continue
                values, n_values = coded(c)
                if n_values >= 2 and index.constant(values):
                    linkers.append(c)
                    # a household size is the same for every member
                    if size_column is None and is_size_of(households, rel.get_column(c)):
                        size_column = c
        channels = build_channels(
            rel, coded, households=households, household_id=household_id,
            household_columns=linkers, size_column=size_column,
        )  # fmt: skip
        # the records a channel's reliability is read on: all, or a seeded sample of them
        sampled = None
        if rel.height > RELIABILITY_SAMPLE:
            sampled = np.zeros(rel.height, dtype=bool)
            rng = np.random.default_rng(seed)
            sampled[rng.choice(rel.height, RELIABILITY_SAMPLE, replace=False)] = True
        ctx = cls(orig, rel, roles, households, household_id, hh_constant, targets, numbers,
                  channels, {}, seed, sampled, coded)  # fmt: skip
        ctx.linking = {g.label: ctx._rebuilds_households(g) for g in channels.groupings}
        return ctx

    def _rebuilds_households(self, g: Grouping) -> bool:
        """Whether the grouping's groups are the households (for most records)."""
        if self.households is None or g.rows is not None:
            return False
        n_households = int(self.households.max()) + 1
        if not 0.5 * n_households <= g.n_groups <= 2 * n_households:
            return False
        frame = pl.DataFrame({"g": g.codes, "h": self.households})
        ok = frame.with_columns(
            pl.col("h").n_unique().over("g").alias("hg"),
            pl.col("g").n_unique().over("h").alias("gh"),
        ).select(((pl.col("hg") == 1) & (pl.col("gh") == 1) & (pl.col("g") >= 0)).mean())
        return float(ok.item()) >= HOUSEHOLD_MATCH

    def via_household(self, g: Guesses | NumericEstimate) -> bool:
        return g.household or self.linking.get(g.label, False)

    def declared_role(self, column: str) -> str:
        return self.roles.get(column, "not mentioned" if column in self.orig.columns else "new")


def _comparable_column(s: pl.Series, coded: CodedFrame) -> tuple[np.ndarray, np.ndarray]:
    """A released key or number as a feature of comparable records and its groups (a key's
    values, a missing value as a value of its own; a number's tenths)."""
    if s.dtype.is_numeric():
        x = as_number(s)
        groups = tenths(x)
        none = np.full(len(x), -1, np.int64)
        return x, (groups if groups is not None else none)  # trees take NaN as missing
    cc, _ = coded(s.name)
    return cc.astype(np.float64), cc + 1


class _Columns:
    """The comparable columns as a matrix built only for the rows asked (``x[rows]``)."""

    def __init__(self, columns: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.columns = [x for x, _ in columns.values()]
        self.shape = (len(self.columns[0]) if self.columns else 0, len(self.columns))

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        return np.column_stack([x[rows] for x in self.columns])


def _with_comparable(
    t: CategoricalTarget,
    coded: CodedFrame,
    comparable: dict[str, tuple[np.ndarray, np.ndarray]],
    keys: Sequence[str],
    seed: int,
) -> CategoricalTarget:
    """``t`` with its comparable records (see :mod:`sdckit.release._chance`)."""
    others = {c: v for c, v in comparable.items() if c != t.name}
    learn = fine = None
    if t.learn.any():
        shown = np.flatnonzero((t.labels >= 0) & ~t.learn)
        sets = [(groups, shown) for _, groups in others.values()]
        # the tree reads the records it needs only (a column stack of the whole file per
        # variable would copy it)
        cells = np.flatnonzero(t.learn)
        leaves = tree_leaves(_Columns(others), t.labels, shown, seed, cells)
        if leaves is not None:
            sets.append(leaves)
        learn = comparable_sets(t.labels, t.n_labels, shown, sets, t.truth[t.learn])
    if t.fine.any():
        known = np.flatnonzero(t.fine_truth >= 0)
        n_fine = int(t.fine_truth.max()) + 1
        sets = [(groups, known) for c, (_, groups) in others.items() if c in keys]
        if t.present:
            own, _ = coded(t.name)
            sets.append((own, known))
        fine = comparable_sets(t.fine_truth, n_fine, known, sets, t.fine_truth[t.fine])
    return replace(t, comparable=learn, fine_comparable=fine)
