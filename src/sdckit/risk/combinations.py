"""k-anonymity over one's own combinations of key variables, each with its own threshold.

mu-ARGUS checks a list of *combinations* of identifying variables (its "tables"), each with a
threshold: a combination of values shared by fewer records than the threshold is unsafe.
sdcMicro's ``kAnon(combs=...)`` does the same for every subset of a given size.  Here a
:class:`KeyCombination` is a set of key variables with its own ``k``; the list is given by hand
or generated the way mu-ARGUS does it:

* :func:`combinations_from_levels` (mu-ARGUS' identification levels): every variable has a
  level, 1 for the most identifying, 2 for the next, ... (0: not identifying).  With ``L``
  distinct levels in use, the combinations are the sets of ``L`` variables whose levels, sorted,
  lie at or below the ``L`` levels in use, position by position: the first comes from the most
  identifying level, the second from that level or the next, and so on.  With levels sex 1,
  age 2, region 2 and job 3 the combinations are (sex, age, region), (sex, age, job) and
  (sex, region, job); (age, region, job) is not one (no variable of level 1).
* :func:`combinations_up_to` (mu-ARGUS' "up to dimension d"): every combination of 1, 2, ...,
  ``d`` variables, with one threshold per number of variables.

:func:`combination_risk` counts, for each combination, ``fk`` over its keys (missing values as
wildcards or as a category, as :func:`sdckit.risk.frequencies`) and the records and
equivalence classes below its ``k``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit._frames import FrameInfo
from sdckit._results import Summary, records_frame
from sdckit._validation import check_choice, check_int
from sdckit.errors import ColumnError, ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.risk._frequencies import frequency_counts

__all__ = [
    "CombinationRisk",
    "KeyCombination",
    "combination_risk",
    "combinations_from_levels",
    "combinations_up_to",
    "key_combinations",
]


@dataclass(frozen=True)
class KeyCombination:
    """A combination of key variables and the smallest safe frequency ``k`` of its values.

    Examples
    --------
    >>> KeyCombination(("sex", "age"), 3)
    KeyCombination(keys=('sex', 'age'), k=3)
    """

    keys: tuple[str, ...]
    k: int

    def __post_init__(self) -> None:
        if not self.keys or not all(isinstance(n, str) and n for n in self.keys):
            raise ParameterError("A key combination must name at least one key variable.")
        if len(set(self.keys)) != len(self.keys):
            raise ParameterError("A key combination names a key variable twice.")
        check_int(self.k, "k", minimum=1)

    def toml_value(self) -> dict[str, Any]:
        """The combination as a job file writes it: ``{keys = [...], k = ...}``."""
        return {"keys": list(self.keys), "k": int(self.k)}


def key_combinations(spec: Any, k: int = 2) -> tuple[KeyCombination, ...]:
    """Combinations from a list of :class:`KeyCombination`, ``{"keys": [...], "k": 3}``
    tables (a job file's form), ``(keys, k)`` pairs or plain lists of keys (threshold ``k``).

    Examples
    --------
    >>> key_combinations([{"keys": ["sex", "age"], "k": 3}, ["region"]], k=2)
    (KeyCombination(keys=('sex', 'age'), k=3), KeyCombination(keys=('region',), k=2))
    """
    if isinstance(spec, str | Mapping) or not isinstance(spec, Iterable):
        raise ParameterError(
            "Key combinations must be a list, each item a list of key variables or a table "
            "{keys = [...], k = ...}."
        )
    out = []
    for item in spec:
        if isinstance(item, KeyCombination):
            out.append(item)
        elif isinstance(item, Mapping):
            unknown = set(item) - {"keys", "k"}
            if unknown or "keys" not in item:
                raise ParameterError(
                    "A key combination given as a table needs 'keys' (and may give 'k'), "
                    "nothing else."
                )
            out.append(KeyCombination(_names(item["keys"]), item.get("k", k)))
        elif (
            isinstance(item, Sequence)
            and len(item) == 2
            and not isinstance(item[0], str)
            and not isinstance(item[1], str)
        ):
            out.append(KeyCombination(_names(item[0]), item[1]))
        else:
            out.append(KeyCombination(_names(item), k))
    if not out:
        raise ParameterError("Give at least one key combination.")
    return tuple(out)


def _names(keys: Any) -> tuple[str, ...]:
    if isinstance(keys, str):
        return (keys,)
    if not isinstance(keys, Iterable):
        raise ParameterError("The keys of a combination must be a list of key variables.")
    return tuple(keys)


def combinations_from_levels(levels: Mapping[str, int], k: int = 2) -> tuple[KeyCombination, ...]:
    """mu-ARGUS' combinations from identification levels (see the module docstring).

    Parameters
    ----------
    levels : dict
        ``{key variable: level}``; 1 = most identifying, 0 = not identifying (left out).
    k : int
        The threshold of every combination.

    Examples
    --------
    >>> [c.keys for c in combinations_from_levels({"sex": 1, "age": 2, "region": 2, "job": 3})]
    [('sex', 'age', 'region'), ('sex', 'age', 'job'), ('sex', 'region', 'job')]
    """
    if not isinstance(levels, Mapping) or not levels:
        raise ParameterError(
            "The identification levels must be a table {key variable: level} (1 = most "
            "identifying, 0 = not identifying)."
        )
    ranked = {name: check_int(lv, "identification level", minimum=0) for name, lv in levels.items()}
    used = sorted({lv for lv in ranked.values() if lv > 0})
    if not used:
        raise ParameterError("At least one key variable needs an identification level above 0.")
    # variables in order of level (stable: as listed within a level)
    order = sorted((n for n, lv in ranked.items() if lv > 0), key=lambda n: ranked[n])
    out = []
    for subset in itertools.combinations(order, len(used)):
        if all(ranked[name] <= bound for name, bound in zip(subset, used, strict=True)):
            out.append(KeyCombination(subset, k))
    return tuple(out)


def combinations_up_to(
    keys: Sequence[str], thresholds: Sequence[int]
) -> tuple[KeyCombination, ...]:
    """Every combination of 1, 2, ..., ``len(thresholds)`` keys; ``thresholds[d - 1]`` is the
    ``k`` of the combinations of ``d`` keys (mu-ARGUS' tables up to a dimension).

    Examples
    --------
    >>> [(c.keys, c.k) for c in combinations_up_to(["a", "b"], [3, 2])]
    [(('a',), 3), (('b',), 3), (('a', 'b'), 2)]
    """
    names = list(keys)
    if not thresholds or len(thresholds) > len(names):
        raise ParameterError(
            "Give one threshold per number of keys, from 1 up to at most the number of keys."
        )
    return tuple(
        KeyCombination(subset, int(k))
        for d, k in enumerate(thresholds, start=1)
        for subset in itertools.combinations(names, d)
    )


def combination_fk(md: Microdata, keys: Sequence[str], missing: str) -> tuple[np.ndarray, Any]:
    """``fk`` over ``keys`` (a key missing in every record matches all and is left out) and
    the frequency result (None when every key was left out)."""
    used = []
    for name in keys:
        col = md.frame.get_column(name)
        if col.dtype.is_float():
            col = col.fill_nan(None)
        if col.null_count() < md.n_records:
            used.append(name)
    if not used:
        return np.full(md.n_records, float(md.n_records)), None
    res = frequency_counts(md.with_frame(md.frame, keys=used), missing=missing)  # type: ignore[arg-type]
    return res.fk, res


@dataclass(frozen=True, repr=False)
class CombinationRisk:
    """``fk`` of every record in every combination, and the violations of each ``k``.

    Attributes
    ----------
    combinations : tuple of KeyCombination
    fk : numpy.ndarray
        ``fk[i, c]``: the frequency of record ``i``'s values of combination ``c``.
    records_below : numpy.ndarray
        Per combination, the number of records with ``fk`` below its ``k``.
    classes_below : numpy.ndarray
        Per combination, the number of equivalence classes (distinct values of its keys)
        below its ``k``.
    missing : {"wildcard", "category"}
    """

    combinations: tuple[KeyCombination, ...]
    fk: np.ndarray
    records_below: np.ndarray
    classes_below: np.ndarray
    missing: str
    frame_info: FrameInfo | None = field(default=None, compare=False)

    @property
    def unsafe(self) -> np.ndarray:
        """``unsafe[i, c]``: record ``i`` breaks combination ``c`` (``fk < k``)."""
        ks = np.asarray([c.k for c in self.combinations], dtype=np.float64)
        return self.fk < ks[None, :]

    @property
    def unsafe_records(self) -> np.ndarray:
        """Per record, whether it breaks at least one combination."""
        return self.unsafe.any(axis=1)

    @property
    def is_safe(self) -> bool:
        """Whether every combination meets its ``k``."""
        return not bool(self.records_below.any())

    def combinations_frame(self) -> Any:
        """One row per combination: ``keys`` (joined by ``" x "``), ``k``, ``records_below``,
        ``classes_below`` (a polars frame)."""
        import polars as pl

        return pl.DataFrame(
            {
                "keys": [" x ".join(c.keys) for c in self.combinations],
                "k": [c.k for c in self.combinations],
                "records_below": self.records_below.astype(np.int64),
                "classes_below": self.classes_below.astype(np.int64),
            }
        )

    def to_frame(self) -> Any:
        """One row per record: ``unsafe`` and ``combinations_broken`` (caller's frame type)."""
        unsafe = self.unsafe
        return records_frame(
            {"unsafe": unsafe.any(axis=1), "combinations_broken": unsafe.sum(axis=1)},
            self.frame_info,
        )

    def summary(self) -> Summary:
        """Records breaking some combination, and each combination's violations."""
        rows: list[tuple[str, Any]] = [
            ("combinations", len(self.combinations)),
            ("records breaking a combination", int(self.unsafe_records.sum())),
        ]
        for c, r, g in zip(self.combinations, self.records_below, self.classes_below, strict=True):
            rows.append((f"{' x '.join(c.keys)} (k = {c.k}): records / classes", f"{r} / {g}"))
        return Summary("Key combinations", rows, [f"missing values: {self.missing}"])


def combination_risk(
    data: Any,
    combinations: Any,
    *,
    k: int = 2,
    keys: Any = None,
    missing: str = "wildcard",
) -> CombinationRisk:
    """For each combination of keys, the records and classes whose ``fk`` is below its ``k``.

    Parameters
    ----------
    data : DataFrame or Microdata
    combinations : list
        :class:`KeyCombination` objects, ``{"keys": [...], "k": ...}`` tables, ``(keys, k)``
        pairs or lists of keys (see :func:`key_combinations`); every key must be a key
        variable of the data (with a plain frame, ``keys`` defaults to all keys named).
    k : int, default 2
        The threshold of combinations that give none.
    missing : {"wildcard", "category"}, default "wildcard"
        A missing value matches any value, or is a category of its own.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": [1, 1, 2, 2, 2], "age": [3, 3, 3, 4, 4], "reg": list("aabbc")})
    >>> res = combination_risk(df, [{"keys": ["sex", "age"], "k": 2}, (["reg"], 3)])
    >>> res.records_below.tolist(), res.classes_below.tolist()
    ([1, 5], [1, 3])
    """
    check_choice(missing, "missing", ("wildcard", "category"))
    combos = key_combinations(combinations, k)
    if (
        keys is None
        and not isinstance(data, Microdata)
        and getattr(data, "microdata", None) is None
    ):
        keys = list(dict.fromkeys(n for c in combos for n in c.keys))
    md = as_microdata(data, keys=keys)
    for c in combos:
        for name in c.keys:
            if name not in md.keys:
                raise ColumnError(
                    f"The key combination names {name!r}, which is not a key variable; name "
                    "key variables only."
                )
    n = md.n_records
    fk = np.empty((n, len(combos)), dtype=np.float64)
    records = np.zeros(len(combos), dtype=np.int64)
    classes = np.zeros(len(combos), dtype=np.int64)
    for j, c in enumerate(combos):
        fk[:, j], res = combination_fk(md, c.keys, missing)
        if res is None:
            below = n if n < c.k else 0
            records[j], classes[j] = below, int(below > 0)
        else:
            v = res.violations(c.k)
            records[j], classes[j] = v.records, v.classes
    return CombinationRisk(combos, fk, records, classes, missing, md.frame_info)
