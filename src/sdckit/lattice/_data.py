"""The data of a lattice search, prepared once, and the equivalence classes at one node.

A *node* of the generalisation lattice is a tuple of levels, one per key: level 0 is the
original value, the key's ``height`` its most general level.  :class:`LatticeData` holds every
record's level-0 code per key and, per key, the code of each level-0 code at every level, so
that generalising a node is a table lookup; :meth:`LatticeData.classes` groups the records of a
node into equivalence classes (:class:`NodeClasses`).

The hierarchy of a key is a :class:`~sdckit.hierarchies.GeneralisationHierarchy`, anything
with a ``table()`` method, or the table itself: one row per original value, the value's label
at level 0, 1, ..., height (ARX's hierarchy format), checked as that class checks it (levels
nested).  Values are matched as text by :func:`sdckit.hierarchies.as_text`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.hierarchies import GeneralisationHierarchy, HierarchyError, as_text
from sdckit.lattice._rollup import Snapshots

__all__ = ["LatticeData", "NodeClasses"]


def _hierarchy(hierarchy: Any, key: str) -> GeneralisationHierarchy:
    """The hierarchy of ``key`` as a checked :class:`GeneralisationHierarchy` (its rows nested:
    the search's pruning relies on every level grouping whole groups of the level below)."""
    if isinstance(hierarchy, GeneralisationHierarchy):
        return hierarchy
    rows = hierarchy.table() if hasattr(hierarchy, "table") else hierarchy
    try:
        return GeneralisationHierarchy.from_table(rows)
    except HierarchyError as error:
        raise HierarchyError(f"the hierarchy of key {key!r}: {error}") from None


@dataclass(frozen=True, eq=False)
class LatticeData:
    """The records of a lattice search, coded once.

    Attributes
    ----------
    keys : tuple of str
        The quasi-identifiers, in the order of a node's levels.
    base : numpy.ndarray
        ``(n_records, n_keys)`` int32: each record's level-0 code per key (the row of its value
        in the key's hierarchy).
    maps : tuple of numpy.ndarray
        Per key, ``(height + 1, n_values)`` int32: the code at each level of each level-0 code.
    labels : tuple
        Per key, per level, the label of each code.
    sensitive : dict of str to numpy.ndarray
        Per sensitive attribute, each record's code (int32, ``0..n-1`` in order of first
        appearance; missing values are a code of their own).
    sensitive_labels : dict of str to tuple of str
        The value of each sensitive code.
    subset : numpy.ndarray or None
        Boolean per record: in the research subset (delta-presence, k-map with a population
        table), or None.
    weights : numpy.ndarray or None
        The sampling weight of each record, or None.
    """

    keys: tuple[str, ...]
    base: np.ndarray
    maps: tuple[np.ndarray, ...]
    labels: tuple[tuple[tuple[str, ...], ...], ...]
    sensitive: dict[str, np.ndarray] = field(default_factory=dict)
    sensitive_labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    subset: np.ndarray | None = None
    weights: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        data: Any,
        hierarchies: Mapping[str, Any],
        *,
        sensitive: Sequence[str] = (),
        subset: Any = None,
        weight: str | None = None,
    ) -> LatticeData:
        """Code ``data`` (a polars frame or anything :func:`polars.DataFrame` takes).

        ``hierarchies`` maps each key, in lattice order, to its hierarchy; ``subset`` is a
        boolean column name or array marking the research subset.

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"age": [31, 35, 47], "sex": ["f", "m", "f"]})
        >>> age = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*")]
        >>> sex = [("f", "*"), ("m", "*")]
        >>> data = LatticeData.build(df, {"age": age, "sex": sex})
        >>> data.heights, data.n_records
        ((2, 1), 3)
        """
        frame = data if isinstance(data, pl.DataFrame) else pl.DataFrame(data)
        keys = tuple(hierarchies)
        if not keys:
            raise ParameterError("give at least one key with its hierarchy.")
        base = np.empty((frame.height, len(keys)), dtype=np.int32)
        maps: list[np.ndarray] = []
        labels: list[tuple[tuple[str, ...], ...]] = []
        for j, key in enumerate(keys):
            if key not in frame.columns:
                raise ColumnError(f"key {key!r} is not a column of the data.")
            hierarchy = _hierarchy(hierarchies[key], key)
            level_maps = np.ascontiguousarray(hierarchy.codes().T)
            level_labels = tuple(hierarchy.labels(lv) for lv in range(hierarchy.height + 1))
            index = {value: i for i, value in enumerate(hierarchy.values)}
            text = as_text(frame.get_column(key))
            codes = text.replace_strict(
                list(index), list(index.values()), default=-1, return_dtype=pl.Int32
            ).to_numpy()
            if (codes < 0).any():
                raise DataError(
                    f"{int((codes < 0).sum())} record(s) of key {key!r} have a value that its "
                    "hierarchy does not list; add the value(s) to the hierarchy."
                )
            base[:, j] = codes
            maps.append(level_maps)
            labels.append(level_labels)
        coded: dict[str, np.ndarray] = {}
        coded_labels: dict[str, tuple[str, ...]] = {}
        for name in sensitive:
            if name not in frame.columns:
                raise ColumnError(f"sensitive attribute {name!r} is not a column of the data.")
            if name in keys:
                raise ParameterError(f"{name!r} cannot be both a key and a sensitive attribute.")
            # a missing value is a value of its own (the empty label)
            text = as_text(frame.get_column(name)).fill_null("")
            values = text.unique(maintain_order=True)
            coded[name] = text.replace_strict(
                values, range(values.len()), return_dtype=pl.Int32
            ).to_numpy()
            coded_labels[name] = tuple(values.to_list())
        mask = None
        if subset is not None:
            column = frame.get_column(subset) if isinstance(subset, str) else pl.Series(subset)
            if column.len() != frame.height or column.null_count():
                raise ParameterError(
                    "subset must mark every record True or False (a boolean column or array)."
                )
            mask = column.cast(pl.Boolean).to_numpy()
        weights = None
        if weight is not None:
            if weight not in frame.columns:
                raise ColumnError(f"weight {weight!r} is not a column of the data.")
            weights = frame.get_column(weight).cast(pl.Float64).to_numpy()
        return cls(
            keys=keys,
            base=base,
            maps=tuple(maps),
            labels=tuple(labels),
            sensitive=coded,
            sensitive_labels=coded_labels,
            subset=mask,
            weights=weights,
        )

    @property
    def n_records(self) -> int:
        """The number of records."""
        return int(self.base.shape[0])

    @property
    def heights(self) -> tuple[int, ...]:
        """The most general level of each key."""
        return tuple(int(m.shape[0]) - 1 for m in self.maps)

    @property
    def n_nodes(self) -> int:
        """The number of nodes of the lattice."""
        return int(np.prod([h + 1 for h in self.heights], dtype=np.int64))

    def check_levels(self, levels: Sequence[int]) -> tuple[int, ...]:
        """``levels`` as a tuple of ints, checked against the heights."""
        levels = tuple(int(v) for v in levels)
        if len(levels) != len(self.keys) or any(
            not 0 <= v <= h for v, h in zip(levels, self.heights, strict=True)
        ):
            raise ParameterError(
                f"a node needs one level per key, each between 0 and its height {self.heights}."
            )
        return levels

    def classes(self, levels: Sequence[int]) -> NodeClasses:
        """The equivalence classes of the records at node ``levels``.

        The records are grouped once (at the bottom node); every other node's classes are
        rolled up from the classes of a more specific node computed before
        (:mod:`sdckit.lattice._rollup`).  Classes are numbered in lexicographic order of their
        codes.
        """
        levels = self.check_levels(levels)
        snapshots = self.__dict__.get("_snapshots")
        if snapshots is None:
            snapshots = Snapshots(self.base, self.maps)
            # a cache, not a field: the data stay frozen and compare as before
            object.__setattr__(self, "_snapshots", snapshots)
        gather, sizes, codes = snapshots.classes(levels)
        return _RolledUpClasses(levels, None, sizes, codes, self, gather=gather)


@dataclass(frozen=True, eq=False)
class NodeClasses:
    """The equivalence classes of the records at one node.

    Attributes
    ----------
    levels : tuple of int
        The node.
    class_of : numpy.ndarray
        Each record's class, ``0..n_classes-1``.
    sizes : numpy.ndarray
        Records per class.
    codes : numpy.ndarray
        ``(n_classes, n_keys)``: each class's generalised code per key (a label of
        ``data.labels[key][level]``).
    data : LatticeData
        The records.
    """

    levels: tuple[int, ...]
    class_of: np.ndarray
    sizes: np.ndarray
    codes: np.ndarray
    data: LatticeData

    @property
    def n_classes(self) -> int:
        """The number of classes."""
        return int(self.sizes.shape[0])

    def histogram(self, attribute: str) -> np.ndarray:
        """``(n_classes, n_values)`` counts of each value of a sensitive attribute per class."""
        if attribute not in self.data.sensitive:
            raise ParameterError(
                f"{attribute!r} is not a sensitive attribute of the search; list it in sensitive=."
            )
        values = self.data.sensitive[attribute]
        width = len(self.data.sensitive_labels[attribute])
        flat = np.bincount(self.class_of * width + values, minlength=self.n_classes * width)
        return flat.reshape(self.n_classes, width)

    def subset_sizes(self) -> np.ndarray:
        """Records of the research subset per class (all records when there is no subset)."""
        if self.data.subset is None:
            return self.sizes
        return np.bincount(
            self.class_of, weights=self.data.subset.astype(np.float64), minlength=self.n_classes
        ).astype(np.int64)

    def weight_sums(self) -> np.ndarray:
        """The sum of the weights per class (the sizes when there are no weights)."""
        if self.data.weights is None:
            return self.sizes.astype(np.float64)
        return np.bincount(self.class_of, weights=self.data.weights, minlength=self.n_classes)


class _RolledUpClasses(NodeClasses):
    """:class:`NodeClasses` whose per-record ``class_of`` is gathered on first use.

    Models and measures that read only the class sizes and codes (k-anonymity, height, most
    loss measures) then never touch the records: a node costs the same for 30,000 records as
    for 1,000,000.
    """

    def __init__(
        self,
        levels: tuple[int, ...],
        class_of: np.ndarray | None,
        sizes: np.ndarray,
        codes: np.ndarray,
        data: LatticeData,
        *,
        gather: Callable[[], np.ndarray] | None = None,
    ) -> None:
        # frozen: set once here, as the dataclass's own __init__ does
        for name, value in (("levels", levels), ("sizes", sizes), ("codes", codes)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "_class_of", class_of)
        object.__setattr__(self, "_gather", gather)

    @property  # type: ignore[override]
    def class_of(self) -> np.ndarray:
        """Each record's class, ``0..n_classes-1`` (gathered on first use)."""
        if self._class_of is None:
            object.__setattr__(self, "_class_of", self._gather())
        return self._class_of
