"""Local recoding by iterated searches (ARX's iterative local recoding, simplified).

Global recoding releases every record at the optimum's levels and suppresses the records of the
classes that fail the target.  :func:`recode_locally` gives those suppressed records a second
chance: a new search over the suppressed records alone finds the least-loss node at which *they*
meet the target (usually a more general one), and so on, round after round:

1. round 1 is the global search of every record, with the suppression limit;
2. each later round searches only the records suppressed by the round before, with the same
   models, measure and suppression limit (a share of the round's records); the records it
   releases get that round's levels, the records it suppresses go on to the next round;
3. the rounds stop when a round suppresses nothing, finds no node that meets the target,
   releases no record, or after ``max_rounds``; the records left are suppressed.

Each round's release meets every model on the round's own records.  Records of different rounds
whose generalised values coincide fall into one class of the release: class sizes only add up,
so k-anonymity (and any model that holds for a union of classes that each meet it, such as
distinct l-diversity) holds for the whole release; a sample-based model (average risk,
uniqueness) is met round by round, not re-checked on the union.  :meth:`LocalRecoding.release`
gives the released values to recount.  No more records are suppressed than by the global
search, and at most the limit's share of the records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_int
from sdckit.lattice._check import evaluate_node
from sdckit.lattice._data import LatticeData
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel
from sdckit.lattice.search import SearchResult, search_lattice

__all__ = ["LocalRecoding", "recode_locally"]


@dataclass(frozen=True, eq=False)
class LocalRecoding:
    """Records released at the levels of the round that released them.

    Attributes
    ----------
    keys : tuple of str
        The keys.
    levels : numpy.ndarray
        ``(n_records, n_keys)`` int32: each record's levels; ``-1`` for a suppressed record.
    rounds : tuple of SearchResult
        The search of each round (round 1 is the global optimum).
    released_by_round : tuple of int
        Records released by each round.
    n_suppressed : int
        Records suppressed in the end.
    data : LatticeData
        The records.
    """

    keys: tuple[str, ...]
    levels: np.ndarray
    rounds: tuple[SearchResult, ...]
    released_by_round: tuple[int, ...]
    n_suppressed: int
    data: LatticeData

    def release(self) -> pl.DataFrame:
        """The released value of every key of every record (null where suppressed)."""
        columns = {}
        kept = self.levels[:, 0] >= 0 if self.keys else np.zeros(0, dtype=bool)
        for j, key in enumerate(self.keys):
            values = np.full(self.levels.shape[0], None, dtype=object)
            for level in np.unique(self.levels[kept, j]).tolist():
                rows = np.flatnonzero(self.levels[:, j] == level)
                codes = self.data.maps[j][level][self.data.base[rows, j]]
                labels = np.asarray(self.data.labels[j][level], dtype=object)
                values[rows] = labels[codes]
            columns[key] = pl.Series(key, values.tolist(), dtype=pl.String)
        return pl.DataFrame(columns)

    def to_frame(self) -> pl.DataFrame:
        """Each record's levels (a column per key) and whether it is suppressed."""
        return pl.DataFrame(
            {
                **{k: self.levels[:, j] for j, k in enumerate(self.keys)},
                "suppressed": self.levels[:, 0] < 0,
            }
        )

    def summary(self) -> Summary:
        """The rounds in a few rows."""
        rows: list[tuple[str, object]] = [("records suppressed", self.n_suppressed)]
        for i, (result, released) in enumerate(
            zip(self.rounds, self.released_by_round, strict=True), start=1
        ):
            node = "none" if result.optimum is None else str(result.optimum)
            rows.append((f"round {i}", f"{released} records released at {node}"))
        return Summary(title="Local recoding", rows=tuple(rows))


def _records(data: LatticeData, rows: np.ndarray) -> LatticeData:
    """The lattice data of some records (same keys, hierarchies and codes)."""
    return dataclasses.replace(
        data,
        base=data.base[rows],
        sensitive={k: v[rows] for k, v in data.sensitive.items()},
        subset=None if data.subset is None else data.subset[rows],
        weights=None if data.weights is None else data.weights[rows],
    )


def recode_locally(
    data: LatticeData,
    models: Sequence[PrivacyModel],
    measure: LossMeasure,
    *,
    suppression_limit: float = 0.0,
    max_rounds: int = 10,
    algorithm: str = "flash",
) -> LocalRecoding:
    """Global recoding, then the suppressed records searched again, round after round.

    See the module's description for exactly what each round does and what the release
    guarantees.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.lattice import Height, KAnonymity, LatticeData
    >>> df = pl.DataFrame({"age": [31, 31, 31, 35, 47, 48]})
    >>> age = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"),
    ...        ("48", "40-49", "*")]
    >>> data = LatticeData.build(df, {"age": age})
    >>> local = recode_locally(data, [KAnonymity(2)], Height(), suppression_limit=0.5)
    >>> local.levels[:, 0].tolist()  # three 31s kept; 35 to 30-39 fails: 47 and 48 to 40-49
    [0, 0, 0, -1, 1, 1]
    >>> local.release()["age"].to_list()
    ['31', '31', '31', None, '40-49', '40-49']
    """
    max_rounds = check_int(max_rounds, "max_rounds", minimum=1)
    levels = np.full((data.n_records, len(data.keys)), -1, dtype=np.int32)
    pending = np.arange(data.n_records, dtype=np.int64)
    rounds: list[SearchResult] = []
    released_by_round: list[int] = []
    for _ in range(max_rounds):
        subset = data if len(rounds) == 0 else _records(data, pending)
        result = search_lattice(
            subset, models, measure, suppression_limit=suppression_limit, algorithm=algorithm
        )
        rounds.append(result)
        if result.optimum is None:
            released_by_round.append(0)
            break
        # the records of the classes suppressed at the round's optimum
        node = evaluate_node(
            subset, result.optimum, models, suppression_limit=suppression_limit, measure=measure
        )
        suppressed = node.suppressed[node.classes.class_of]
        released = pending[~suppressed]
        levels[released] = result.optimum
        released_by_round.append(int(released.size))
        pending = pending[suppressed]
        if pending.size == 0 or released.size == 0:
            break
    return LocalRecoding(
        keys=data.keys,
        levels=levels,
        rounds=tuple(rounds),
        released_by_round=tuple(released_by_round),
        n_suppressed=int(pending.size),
        data=data,
    )
