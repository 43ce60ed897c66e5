"""Global recoding: group categories, cut numbers into intervals, top and bottom coding.

These methods are non-perturbative: every value stays true but loses detail.

* :class:`GlobalRecoding` maps categories to coarser ones (``{old: new}``, or a chain of such
  maps, one per level of a hierarchy), or to their labels at a level of a
  :class:`~sdckit.hierarchies.GeneralisationHierarchy` (one given or read from an ARX CSV).
* :class:`IntervalRecoding` cuts numeric variables into intervals (explicit breaks, equal width
  or quantiles) labelled ``"[a, b)"`` or by the user.
* :class:`TopBottomCoding` replaces values above (below) a threshold by one value: the threshold,
  a given number, or the (weighted) mean of the coded tail (sdcMicro's ``topBotCoding``).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._validation import check_choice, check_columns_exist, check_int, column_list
from sdckit.errors import ColumnError, DataError, ParameterError, SdcError
from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.microdata import Microdata
from sdckit.protection import (
    Boolean,
    ColumnMap,
    Columns,
    Instance,
    Integer,
    ListOf,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    String,
    TupleOf,
)
from sdckit.twins import function_twin

__all__ = [
    "GlobalRecoding",
    "IntervalRecoding",
    "TopBottomCoding",
    "global_recode",
    "recode_intervals",
    "top_bottom_code",
]

Levels = Mapping[Any, Any] | Sequence[Mapping[Any, Any]]
HierarchySpec = GeneralisationHierarchy | str | os.PathLike[str]


# ---------------------------------------------------------------------- global recoding
def _compose(name: str, spec: Levels) -> dict[Any, Any]:
    """One ``{old: new}`` map from a map or a chain of maps (hierarchy levels, finest first)."""
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, str | bytes) or not isinstance(spec, Sequence) or not spec:
        raise ParameterError(
            f"The 'mapping' entry for {name!r} must be a dict {{old: new}} or a non-empty list "
            "of such dicts (hierarchy levels, finest first)."
        )
    combined: dict[Any, Any] = {}
    for level in spec:
        if not isinstance(level, Mapping):
            raise ParameterError(
                f"The 'mapping' entry for {name!r} lists a level that is not a dict {{old: new}}."
            )
        # apply the new level to the targets reached so far, then add the level's own entries
        combined = {old: level.get(new, new) for old, new in combined.items()}
        for old, new in level.items():
            combined.setdefault(old, new)
    return combined


def _old_values(s: pl.Series, table: dict[Any, Any]) -> list[Any]:
    """The old values of a mapping in the column's type (text keys read as numbers).

    A job file (TOML) gives mapping keys as text; for a numeric column they are read as numbers
    of the column's type.  Two keys that become the same number ("01" and "1") are an error:
    the mapping would be ambiguous.
    """
    old = list(table)
    if not s.dtype.is_numeric():
        return old
    text = [i for i, o in enumerate(old) if isinstance(o, str)]
    if text:
        try:
            read = (
                pl.Series([old[i] for i in text], dtype=pl.String)
                .cast(s.dtype, strict=True)
                .to_list()
            )
        except Exception:
            raise ParameterError(
                f"The mapping of {s.name!r} lists old values that are not numbers of the "
                f"column's type, but the column is numeric (type {s.dtype}); write the old "
                "values as numbers of that type."
            ) from None
        for i, value in zip(text, read, strict=True):
            old[i] = value
    try:
        values = pl.Series(old, strict=False)
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        raise ParameterError(
            f"The mapping of {s.name!r} lists old values of another type than the column "
            f"(type {s.dtype}); give the old values in the column's type."
        ) from None
    n_same = int(values.is_duplicated().sum())
    if n_same:
        raise ParameterError(
            f"{n_same} old values of the mapping of {s.name!r} are the same number once read "
            f"in the column's type ({s.dtype}), for example text keys that differ only by "
            "leading zeros; give every old value once."
        )
    return old


def _recode_series(s: pl.Series, table: dict[Any, Any], strict: bool) -> pl.Series:
    old = _old_values(s, table)
    new = list(table.values())
    try:
        known = s.is_in(pl.Series(old, strict=False).implode()) | s.is_null()
    except (pl.exceptions.PolarsError, TypeError):
        raise ParameterError(
            f"The mapping of {s.name!r} lists old values of another type than the column "
            f"(type {s.dtype}); give the old values in the column's type."
        ) from None
    if strict and not bool(known.all()):
        raise DataError(
            f"The variable {s.name!r} has {int((~known).sum())} value(s) not in its mapping; "
            "add them to the mapping or use strict=False to keep them."
        )
    try:
        targets = pl.Series(new, strict=False)
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        raise ParameterError(
            f"The mapping of {s.name!r} lists new values of mixed types; give them all as "
            "text or all as numbers."
        ) from None
    if targets.dtype == s.dtype or (targets.dtype.is_numeric() and s.dtype.is_numeric()):
        try:
            return s.replace_strict(old, new, default=s, return_dtype=None)
        except Exception:  # mixed numeric types: fall through to text
            pass
    try:
        return s.replace_strict(old, targets.cast(pl.String), default=s.cast(pl.String))
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        raise ParameterError(
            f"The mapping of {s.name!r} lists old values of another type than the column "
            f"(type {s.dtype}); give the old values in the column's type."
        ) from None


def _same_target(target: Any, value: Any) -> bool:
    """Whether a released value is the mapping's target (a number in the column's type)."""
    if isinstance(target, numbers.Real) and isinstance(value, numbers.Real):
        return bool(float(target) == float(value))
    return str(target) == str(value)


class GlobalRecoding(ProtectionMethod):
    """Map categories of variables to coarser categories.

    Parameters
    ----------
    mapping : dict, optional
        ``{variable: {old: new}}``, or ``{variable: [level1, level2, ...]}`` where each level is
        a map ``{old: new}`` of a hierarchy (finest first): values climb every level.
    strict : bool, default False
        If True, a value not listed in the mapping is an error; otherwise it keeps its value.
    hierarchies : dict, optional
        ``{variable: hierarchy}``: a :class:`~sdckit.hierarchies.GeneralisationHierarchy` or
        the path of an ARX hierarchy CSV (``;``-separated; in a job file, relative to the job
        file).  Each such variable is replaced by its labels at its level in ``levels``
        (text; values matched as text, see :mod:`sdckit.hierarchies`).  A value missing from
        the hierarchy is always an error, whatever ``strict``; level 0 leaves the variable as
        it is.  A variable is recoded by ``mapping`` or by a hierarchy, not both.
    levels : int or dict, optional
        The level of each variable of ``hierarchies`` (``{variable: level}``, or one level for
        all); required with ``hierarchies``.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import GlobalRecoding
    >>> df = pl.DataFrame({"region": ["n1", "n2", "s1", "x"]})
    >>> m = GlobalRecoding(mapping={"region": {"n1": "north", "n2": "north", "s1": "south"}})
    >>> m.apply(df).data["region"].to_list()
    ['north', 'north', 'south', 'x']

    With a generalisation hierarchy, at level 2 (``0123`` -> ``01**``):

    >>> from sdckit.hierarchies import GeneralisationHierarchy
    >>> h = GeneralisationHierarchy.from_prefixes(["0123", "0124", "0201"])
    >>> df = pl.DataFrame({"zip": ["0123", "0201", None]})
    >>> GlobalRecoding(hierarchies={"zip": h}, levels={"zip": 2}).apply(df).data["zip"].to_list()
    ['01**', '02**', None]
    """

    name: ClassVar[str] = "global recoding"
    description: ClassVar[str] = (
        "Combines categories of {variables} into broader groups (global recoding)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "mapping": Param(
            ColumnMap(
                Instance(
                    (Mapping, list, tuple),
                    "a table {old: new} or a list of such tables (hierarchy levels, finest first)",
                )
            ),
            None,
            help="for each variable, the new category of each old one (or a chain of such maps)",
        ),
        "strict": Param(
            Boolean(), help="a value missing from the mapping is an error instead of kept"
        ),
        "hierarchies": Param(
            # a path (what a job file gives) or an object: two forms, so that the browser
            # interface asks for a table of paths, not for a map of levels
            ColumnMap(String()),
            ColumnMap(
                Instance(
                    (GeneralisationHierarchy, str, os.PathLike),
                    "a GeneralisationHierarchy or the path of an ARX hierarchy CSV",
                )
            ),
            None,
            help="for each variable, an ARX hierarchy CSV file (or a GeneralisationHierarchy)",
        ),
        "levels": Param(
            Integer(minimum=0),
            ColumnMap(Integer(minimum=0)),
            None,
            help="the level of each variable's hierarchy (0 keeps the original values)",
        ),
    }

    #: Parameters holding ``{column: file path}`` (a job file's paths are relative to it).
    file_parameters: ClassVar[tuple[str, ...]] = ("hierarchies",)

    def __init__(
        self,
        *,
        mapping: Mapping[str, Levels] | None = None,
        strict: bool = False,
        hierarchies: Mapping[str, HierarchySpec] | None = None,
        levels: int | Mapping[str, int] | None = None,
    ) -> None:
        self.mapping = mapping
        self.strict = strict
        self.hierarchies = hierarchies
        self.levels = levels

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """The declared checks, and every hierarchy file read (a job fails at loading)."""
        super().validate_params(columns, where=where)
        if isinstance(self.hierarchies, Mapping):
            levels = self.levels
            for name, spec in self.hierarchies.items():
                try:
                    h = (
                        GeneralisationHierarchy.read_arx_csv(spec)
                        if isinstance(spec, str | os.PathLike)
                        else spec
                    )
                    level = levels.get(name) if isinstance(levels, Mapping) else levels
                    if isinstance(level, int) and level > h.height:
                        raise ParameterError(
                            f"The level of {name!r} is above the height of its hierarchy "
                            f"({h.height})."
                        )
                except SdcError as exc:
                    raise type(exc)(f"{where}: {exc}" if where else str(exc)) from None

    def _check_columns(self, md: Microdata, names: list[str]) -> None:
        check_columns_exist(names, md.frame.columns, "recoded")
        for name in names:
            if name in md.numeric or name in (md.weight, md.strata, md.household):
                raise ColumnError(
                    f"The variable {name!r} is a numeric, weight, strata or household column; "
                    "global recoding maps categories (use IntervalRecoding for numbers)."
                )

    def hierarchy_levels(self, md: Microdata) -> dict[str, tuple[GeneralisationHierarchy, int]]:
        """The hierarchy and level of each variable of ``hierarchies`` (files read), checked."""
        if self.hierarchies is None:
            if self.levels is not None:
                raise ParameterError("The 'levels' parameter needs 'hierarchies'.")
            return {}
        if not isinstance(self.hierarchies, Mapping) or not self.hierarchies:
            raise ParameterError(
                "The 'hierarchies' parameter must be a non-empty dict {variable: hierarchy}."
            )
        names = list(self.hierarchies)
        self._check_columns(md, names)
        if isinstance(self.mapping, Mapping):
            both = [n for n in names if n in self.mapping]
            if both:
                raise ParameterError(
                    f"The variable {both[0]!r} is in both 'mapping' and 'hierarchies'; recode "
                    "it one way."
                )
        levels = _per_column(self.levels, tuple(names), "levels")
        out = {}
        for name, spec in self.hierarchies.items():
            level = levels[name]
            if level is None:
                raise ParameterError(
                    f"The 'levels' parameter gives no level for {name!r}; give a level for "
                    "every variable of 'hierarchies'."
                )
            h = (
                spec
                if isinstance(spec, GeneralisationHierarchy)
                else GeneralisationHierarchy.read_arx_csv(spec)
            )
            level = check_int(level, "levels", minimum=0)
            if level > h.height:
                raise ParameterError(
                    f"The level of {name!r} is above the height of its hierarchy ({h.height})."
                )
            out[name] = (h, level)
        return out

    def _tables(
        self,
        md: Microdata,
        hierarchies: dict[str, tuple[GeneralisationHierarchy, int]] | None = None,
    ) -> dict[str, dict[Any, Any]]:
        """``{variable: {old: new}}`` of the mapping and of the hierarchies above level 0
        (hierarchy values as text)."""
        if hierarchies is None:
            hierarchies = self.hierarchy_levels(md)
        if self.mapping is None and hierarchies:
            tables: dict[str, dict[Any, Any]] = {}
        else:
            if not isinstance(self.mapping, Mapping) or not self.mapping:
                raise ParameterError(
                    "The 'mapping' parameter must be a non-empty dict {variable: {old: new}} "
                    "(or give 'hierarchies' and 'levels')."
                )
            self._check_columns(md, list(self.mapping))
            tables = {name: _compose(name, spec) for name, spec in self.mapping.items()}
        for name, (h, level) in hierarchies.items():
            if level > 0:
                tables[name] = h.mapping(level)
        return tables

    def _apply(self, md: Microdata) -> Protected:
        hierarchies = self.hierarchy_levels(md)
        tables = self._tables(md, hierarchies)
        cols = []
        for name, table in tables.items():
            series = md.frame.get_column(name)
            if name in hierarchies:
                h, level = hierarchies[name]
                cols.append(h.generalise(series, level))
            else:
                cols.append(_recode_series(series, table, bool(self.strict)))
        for name, (h, level) in hierarchies.items():
            if level == 0:  # the values stay, but the hierarchy must still cover them
                h.generalise(md.frame.get_column(name), 0)
        frame = md.frame.with_columns(cols)
        details: dict[str, Any] = {"mappings": tables}
        if hierarchies:
            details["hierarchy_levels"] = {n: lv for n, (_, lv) in hierarchies.items()}
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Mapped values are the mapping's targets (hierarchy labels at their level); other
        values are unchanged."""
        hierarchies = self.hierarchy_levels(original)
        tables = self._tables(original, hierarchies)
        after = protected.microdata.frame
        for name in original.frame.columns:
            a, b = original.frame.get_column(name), after.get_column(name)
            if name in hierarchies and name in tables:
                h, level = hierarchies[name]
                self._require(
                    h.generalise(a, level).equals(b, null_equal=True),
                    f"some values of {name!r} are not their labels at level {level}",
                )
                continue
            if name not in tables:
                self._require(a.equals(b, null_equal=True), f"the column {name!r} was changed")
                continue
            old = _old_values(a, tables[name])
            table = dict(zip(old, tables[name].values(), strict=True))
            olds = pl.Series(old, strict=False)
            hit = a.is_in(olds.implode()).fill_null(False).to_numpy()
            expect = [table[v] for v in a.filter(pl.Series(hit)).to_list()]
            got = b.filter(pl.Series(hit)).to_list()
            self._require(
                all(map(_same_target, expect, got)),
                f"some values of {name!r} are not their mapping's targets",
            )
            rest_a = a.filter(pl.Series(~hit)).cast(pl.String)
            rest_b = b.filter(pl.Series(~hit)).cast(pl.String)
            self._require(
                rest_a.equals(rest_b, null_equal=True),
                f"values of {name!r} that are not in the mapping were changed",
            )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Eight records; region grouped through a two-level hierarchy."""
        df = pl.DataFrame(
            {
                "region": ["a1", "a2", "b1", "b2", "a1", "c", "b1", "a2"],
                "sex": [1, 2, 1, 2, 2, 1, 1, 2],
                "income": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            }
        )
        md = Microdata(df, keys=["region", "sex"], numeric=["income"])
        levels = [{"a1": "a", "a2": "a", "b1": "b", "b2": "b"}, {"a": "ab", "b": "ab"}]
        return cls(mapping={"region": levels}), md


@function_twin(GlobalRecoding)
def global_recode(data: Any, **params: Any) -> Protected:
    """Map categories to coarser categories (see :class:`GlobalRecoding`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    mapping, strict, hierarchies, levels
        The parameters of :class:`GlobalRecoding`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import global_recode
    >>> df = pl.DataFrame({"age": [1, 2, 3, 4]})
    >>> global_recode(df, mapping={"age": {1: 1, 2: 1, 3: 2, 4: 2}}).data["age"].to_list()
    [1, 1, 2, 2]
    """


# ---------------------------------------------------------------------- intervals
def _fmt(x: float) -> str:
    return f"{x:g}"


def _per_column(value: Any, columns: tuple[str, ...], name: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        unknown = [c for c in value if c not in columns]
        if unknown:
            raise ParameterError(
                f"The {name!r} parameter names {unknown[0]!r}, which is not one of the "
                "columns to recode."
            )
        return {c: value.get(c) for c in columns}
    return dict.fromkeys(columns, value)


#: An interval edge: a number, -inf or inf (``Real`` admits finite numbers only).
_EDGE = Real(allow_infinite=True)
#: An interval label: text, or a number (written as text).
_LABEL = Instance((str, numbers.Real), "a label (text or a number)")


def _numeric_values(md: Microdata, name: str) -> np.ndarray:
    s = md.frame.get_column(name)
    if not s.dtype.is_numeric():
        raise ColumnError(f"The variable {name!r} is not numeric (type {s.dtype}).")
    values = s.cast(pl.Float64).fill_nan(None).to_numpy()
    return values


def _breaks_for(values: np.ndarray, name: str, breaks: Any, n_bins: Any, method: str) -> np.ndarray:
    finite = values[~np.isnan(values)]
    if breaks is not None:
        arr = np.asarray(breaks, dtype=np.float64)
        if arr.ndim != 1 or len(arr) < 2 or not bool(np.all(np.diff(arr) > 0)):
            raise ParameterError(
                f"The 'breaks' for {name!r} must be at least two strictly increasing numbers."
            )
        if len(finite) and (finite.min() < arr[0] or finite.max() > arr[-1]):
            raise DataError(
                f"The variable {name!r} has values outside the breaks; extend the first or "
                "last break (-inf and inf are allowed)."
            )
        return arr
    if n_bins is None:
        raise ParameterError("Give either 'breaks' or 'n_bins' for interval recoding.")
    bins = check_int(n_bins, "n_bins", minimum=1)
    if len(finite) == 0:
        raise DataError(f"The variable {name!r} has no values to cut into intervals.")
    lo, hi = float(finite.min()), float(finite.max())
    if method == "equal_width":
        if hi == lo:
            return np.array([lo, lo + 1.0])
        return np.linspace(lo, hi, bins + 1)
    edges = np.unique(np.quantile(finite, np.linspace(0.0, 1.0, bins + 1)))
    return edges if len(edges) >= 2 else np.array([lo, lo + 1.0])


def _interval_index(values: np.ndarray, edges: np.ndarray, closed: str) -> np.ndarray:
    """Interval number of each value (-1 for missing); the outer edges are closed."""
    inner = edges[1:-1]
    side = "right" if closed == "left" else "left"
    idx = np.searchsorted(inner, values, side=side).astype(np.int64)
    idx[np.isnan(values)] = -1
    return idx


def _default_labels(edges: np.ndarray, closed: str) -> list[str]:
    texts = [_fmt(e) for e in edges]
    if len(set(texts)) < len(texts):  # close edges: print them in full
        texts = [repr(float(e)) for e in edges]
    labels = []
    last = len(edges) - 2
    for i in range(len(edges) - 1):
        a, b = texts[i], texts[i + 1]
        if closed == "left":
            labels.append(f"[{a}, {b}]" if i == last else f"[{a}, {b})")
        else:
            labels.append(f"[{a}, {b}]" if i == 0 else f"({a}, {b}]")
    return labels


class IntervalRecoding(ProtectionMethod):
    """Cut numeric variables into intervals.

    Parameters
    ----------
    columns : str or list of str
        Numeric variables to cut.  A variable with the numeric role becomes a key variable.
    breaks : list of float or dict, optional
        Interval edges (strictly increasing), for all columns or per column.
    n_bins : int or dict, optional
        Number of intervals when ``breaks`` is not given.
    method : {"equal_width", "quantile"}, default "equal_width"
        How edges are chosen from ``n_bins``.
    labels : list of str or dict, optional
        One label per interval; default ``"[a, b)"`` (the last interval closed).
    closed : {"left", "right"}, default "left"
        Which end of an interval is included.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import IntervalRecoding
    >>> df = pl.DataFrame({"age": [3, 17, 18, 64, 90]})
    >>> m = IntervalRecoding(columns="age", breaks=[0, 18, 65, 120])
    >>> m.apply(df).data["age"].to_list()
    ['[0, 18)', '[0, 18)', '[18, 65)', '[18, 65)', '[65, 120]']
    """

    name: ClassVar[str] = "interval recoding"
    description: ClassVar[str] = (
        "Replaces the numbers in {variables} by the intervals they fall in (interval recoding)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "columns": Param(Columns(role="numeric"), help="the numeric variables to cut"),
        "breaks": Param(
            ListOf(_EDGE, min_length=2),
            ColumnMap(ListOf(_EDGE, min_length=2), role="numeric"),
            None,
            help="interval edges, strictly increasing (for all variables, or per variable)",
        ),
        "n_bins": Param(
            Integer(minimum=1),
            ColumnMap(Integer(minimum=1), role="numeric"),
            None,
            help="number of intervals when no breaks are given (for all, or per variable)",
        ),
        "method": Param(
            Options("equal_width", "quantile"),
            help="intervals of equal width, or holding equal numbers of records",
        ),
        "labels": Param(
            ListOf(_LABEL, min_length=1),
            ColumnMap(ListOf(_LABEL, min_length=1), role="numeric"),
            None,
            help="one label per interval (default: the interval, as in [a, b))",
        ),
        "closed": Param(Options("left", "right"), help="which end of each interval belongs to it"),
    }

    def __init__(
        self,
        *,
        columns: str | Sequence[str],
        breaks: Sequence[float] | Mapping[str, Sequence[float]] | None = None,
        n_bins: int | Mapping[str, int] | None = None,
        method: str = "equal_width",
        labels: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        closed: str = "left",
    ) -> None:
        self.columns = columns
        self.breaks = breaks
        self.n_bins = n_bins
        self.method = method
        self.labels = labels
        self.closed = closed

    def _plan(self, md: Microdata) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
        cols = column_list(self.columns, "columns")
        if not cols:
            raise ParameterError("The 'columns' parameter must name at least one column.")
        check_columns_exist(cols, md.frame.columns, "recoded")
        check_choice(self.method, "method", ("equal_width", "quantile"))
        check_choice(self.closed, "closed", ("left", "right"))
        breaks = _per_column(self.breaks, cols, "breaks")
        bins = _per_column(self.n_bins, cols, "n_bins")
        labels = _per_column(self.labels, cols, "labels")
        plan = {}
        for name in cols:
            values = _numeric_values(md, name)
            edges = _breaks_for(values, name, breaks[name], bins[name], self.method)
            names = _default_labels(edges, self.closed)
            if labels[name] is not None:
                given = [str(x) for x in labels[name]]
                if len(given) != len(names) or len(set(given)) != len(given):
                    raise ParameterError(
                        f"The 'labels' for {name!r} must be {len(names)} distinct labels, one "
                        "per interval."
                    )
                names = given
            plan[name] = (edges, _interval_index(values, edges, self.closed), names)
        return plan

    def _apply(self, md: Microdata) -> Protected:
        plan = self._plan(md)
        cols = []
        for name, (_, idx, names) in plan.items():
            lab = np.asarray(names, dtype=object)[np.maximum(idx, 0)]
            series = pl.Series(name, lab.tolist(), dtype=pl.String)
            cols.append(series.set(pl.Series(idx < 0), None) if (idx < 0).any() else series)
        frame = md.frame.with_columns(cols)
        moved = [c for c in plan if c in md.numeric]
        roles: dict[str, Any] = {}
        details: dict[str, Any] = {
            "breaks": {name: edges.tolist() for name, (edges, _, _) in plan.items()},
            "labels": {name: names for name, (_, _, names) in plan.items()},
        }
        if moved:
            roles = {
                "numeric": [c for c in md.numeric if c not in moved],
                "keys": list(md.keys) + moved,
            }
            details["roles_changed"] = True
        return Protected.from_frames(md, frame, self, details=details, roles=roles)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Every value lies in the interval its label names."""
        edges_all = protected.details["breaks"]
        labels_all = protected.details["labels"]
        for name, edges_list in edges_all.items():
            edges = np.asarray(edges_list)
            values = _numeric_values(original, name)
            pos = {lab: i for i, lab in enumerate(labels_all[name])}
            got = protected.microdata.frame.get_column(name).to_list()
            for v, lab in zip(values.tolist(), got, strict=True):
                if lab is None:
                    self._require(np.isnan(v), f"a value of {name!r} was made missing")
                    continue
                self._require(lab in pos, f"a label of {name!r} is not one of its intervals")
                i = pos[lab]
                lo, hi = edges[i], edges[i + 1]
                self._require(lo <= v <= hi, f"a value of {name!r} is outside its interval")
                if self.closed == "left" and i < len(edges) - 2:
                    self._require(v < hi, f"a value of {name!r} is on its interval's open end")
                if self.closed == "right" and i > 0:
                    self._require(v > lo, f"a value of {name!r} is on its interval's open end")

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Ten records; a numeric variable cut into three quantile intervals."""
        df = pl.DataFrame(
            {
                "sex": [1, 2, 1, 2, 1, 2, 1, 2, 1, 2],
                "age": [5.0, 17.0, 23.0, 35.0, None, 44.0, 61.0, 70.0, 82.0, 19.0],
            }
        )
        md = Microdata(df, keys=["sex"], numeric=["age"])
        return cls(columns="age", n_bins=3, method="quantile"), md


@function_twin(IntervalRecoding)
def recode_intervals(data: Any, **params: Any) -> Protected:
    """Cut numeric variables into labelled intervals (see :class:`IntervalRecoding`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    columns, breaks, n_bins, method, labels, closed
        The parameters of :class:`IntervalRecoding`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import recode_intervals
    >>> df = pl.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 4.0]})
    >>> recode_intervals(df, columns="x", n_bins=2).data["x"].to_list()
    ['[0, 2)', '[0, 2)', '[2, 4]', '[2, 4]', '[2, 4]']
    """


# ---------------------------------------------------------------------- top and bottom coding
def _weighted_mean(values: np.ndarray, weights: np.ndarray | None) -> float:
    if weights is None:
        return float(values.mean())
    return float(np.sum(values * weights) / np.sum(weights))


class TopBottomCoding(ProtectionMethod):
    """Replace values above an upper (below a lower) threshold by one value.

    Parameters
    ----------
    columns : str or list of str
        Numeric variables to code.
    upper, lower : float or dict, optional
        Thresholds (per column with a dict).  Values strictly above ``upper`` (below
        ``lower``) are coded.  At least one must be given.
    quantile : bool, default False
        If True, ``upper`` and ``lower`` are probabilities in [0, 1] and the thresholds are
        the corresponding quantiles of each column.
    replacement : {"threshold", "mean"} or float or (float, float), default "threshold"
        The value given to coded values: the threshold itself, the mean of the coded tail
        (weighted with the sampling weight when ``weighted``), or given numbers (one number
        when one side is coded, ``(lower_value, upper_value)`` for both).
    weighted : bool, default False
        Use the sampling weight in the tail means.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import TopBottomCoding
    >>> df = pl.DataFrame({"income": [10.0, 20.0, 30.0, 400.0, 600.0]})
    >>> m = TopBottomCoding(columns="income", upper=100, replacement="mean")
    >>> m.apply(df).data["income"].to_list()
    [10.0, 20.0, 30.0, 500.0, 500.0]
    """

    name: ClassVar[str] = "top and bottom coding"
    description: ClassVar[str] = (
        "Replaces the values of {variables} above an upper or below a lower threshold by a "
        "single value (top and bottom coding)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "columns": Param(Columns(role="numeric"), help="the numeric variables to code"),
        "upper": Param(
            Real(),
            ColumnMap(Real(), role="numeric"),
            None,
            help="values above this threshold are coded (a probability with quantile=True)",
        ),
        "lower": Param(
            Real(),
            ColumnMap(Real(), role="numeric"),
            None,
            help="values below this threshold are coded (a probability with quantile=True)",
        ),
        "quantile": Param(
            Boolean(), help="the thresholds are probabilities of quantiles of each variable"
        ),
        "replacement": Param(
            Options("threshold", "mean"),
            Real(),
            TupleOf((Real(), Real())),
            help="the new value: the threshold, the mean of the coded values, a number, or "
            "a pair (lower value, upper value)",
        ),
        "weighted": Param(Boolean(), help="weight the means of the coded values"),
    }

    def __init__(
        self,
        *,
        columns: str | Sequence[str],
        upper: float | Mapping[str, float] | None = None,
        lower: float | Mapping[str, float] | None = None,
        quantile: bool = False,
        replacement: str | float | tuple[float, float] = "threshold",
        weighted: bool = False,
    ) -> None:
        self.columns = columns
        self.upper = upper
        self.lower = lower
        self.quantile = quantile
        self.replacement = replacement
        self.weighted = weighted

    def _replacements(self) -> tuple[Any, Any]:
        rep = self.replacement
        if isinstance(rep, str):
            check_choice(rep, "replacement", ("threshold", "mean"))
            return rep, rep
        if isinstance(rep, Sequence | np.ndarray):
            if len(rep) != 2:
                raise ParameterError(
                    "The 'replacement' parameter as a pair must be (lower_value, upper_value)."
                )
            return float(rep[0]), float(rep[1])
        if isinstance(rep, numbers.Real) and not isinstance(rep, bool | np.bool_):
            if self.upper is not None and self.lower is not None:
                raise ParameterError(
                    "With both 'upper' and 'lower', give 'replacement' as a pair "
                    "(lower_value, upper_value), 'threshold' or 'mean'."
                )
            return float(rep), float(rep)
        raise ParameterError(
            "The 'replacement' parameter must be 'threshold', 'mean', a number or a pair."
        )

    def _plan(self, md: Microdata) -> dict[str, dict[str, Any]]:
        cols = column_list(self.columns, "columns")
        if not cols:
            raise ParameterError("The 'columns' parameter must name at least one column.")
        check_columns_exist(cols, md.frame.columns, "coded")
        if self.upper is None and self.lower is None:
            raise ParameterError("Give 'upper', 'lower' or both for top and bottom coding.")
        low_rep, up_rep = self._replacements()
        weights = None
        if self.weighted:
            weights = md.weights()
            if weights is None:
                raise ColumnError(
                    "weighted=True needs a sampling weight; pass weight=... with the data."
                )
        uppers = _per_column(self.upper, cols, "upper")
        lowers = _per_column(self.lower, cols, "lower")
        plan = {}
        for name in cols:
            values = _numeric_values(md, name)
            present = ~np.isnan(values)
            entry: dict[str, Any] = {"values": values}
            for side, spec, rep in (
                ("upper", uppers[name], up_rep),
                ("lower", lowers[name], low_rep),
            ):
                if spec is None:
                    continue
                t = float(spec)
                if self.quantile:
                    if not 0.0 <= t <= 1.0:
                        raise ParameterError(
                            f"With quantile=True, {side!r} must be a probability in [0, 1]."
                        )
                    t = float(np.quantile(values[present], t)) if present.any() else t
                elif not np.isfinite(t):
                    raise ParameterError(f"The {side!r} threshold must be finite.")
                with np.errstate(invalid="ignore"):
                    coded = present & ((values > t) if side == "upper" else (values < t))
                if rep == "threshold":
                    value = t
                elif rep == "mean":
                    w = None if weights is None else weights[coded]
                    value = _weighted_mean(values[coded], w) if coded.any() else t
                else:
                    value = float(rep)
                entry[side] = (t, coded, value)
            if "upper" in entry and "lower" in entry and entry["lower"][0] > entry["upper"][0]:
                raise ParameterError(
                    f"The lower threshold of {name!r} is above its upper threshold."
                )
            plan[name] = entry
        return plan

    def _apply(self, md: Microdata) -> Protected:
        plan = self._plan(md)
        cols = []
        details: dict[str, Any] = {"thresholds": {}, "replacements": {}, "coded": {}}
        for name, entry in plan.items():
            values = entry["values"].copy()
            coded_any = np.zeros(len(values), dtype=bool)
            for side in ("upper", "lower"):
                if side in entry:
                    t, coded, value = entry[side]
                    values[coded] = value
                    coded_any |= coded
                    details["thresholds"][(name, side)] = t
                    details["replacements"][(name, side)] = value
            details["coded"][name] = coded_any
            original = md.frame.get_column(name)
            nulls = pl.Series(original.is_null().to_numpy())
            series = (
                pl.Series(name, values).set(nulls, None) if nulls.any() else pl.Series(name, values)
            )
            integral = bool(np.all(values[~np.isnan(values)] % 1 == 0))
            if original.dtype.is_integer() and integral:
                series = series.fill_nan(None).cast(original.dtype)
            elif original.dtype.is_float():
                series = series.cast(original.dtype)
            cols.append(series)
        frame = md.frame.with_columns(cols)
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Coded values equal their replacement; the others are unchanged and within bounds."""
        thresholds = protected.details["thresholds"]
        replacements = protected.details["replacements"]
        for name, coded_any in protected.details["coded"].items():
            before = _numeric_values(original, name)
            after = _numeric_values(protected.microdata, name)
            keep = ~coded_any
            self._require(
                np.array_equal(before[keep], after[keep], equal_nan=True),
                f"values of {name!r} that were not coded were changed",
            )
            up = thresholds.get((name, "upper"))
            lo = thresholds.get((name, "lower"))
            kept = before[keep & ~np.isnan(before)]
            if up is not None:
                self._require(
                    bool(np.all(kept <= up)), f"a value of {name!r} above the threshold was kept"
                )
                top = before > up
                self._require(
                    np.allclose(after[top], replacements[(name, "upper")]),
                    f"top-coded values of {name!r} differ from their replacement",
                )
            if lo is not None:
                self._require(
                    bool(np.all(kept >= lo)), f"a value of {name!r} below the threshold was kept"
                )
                bottom = before < lo
                self._require(
                    np.allclose(after[bottom], replacements[(name, "lower")]),
                    f"bottom-coded values of {name!r} differ from their replacement",
                )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Ten records; income top and bottom coded at the 10 % / 90 % quantiles."""
        df = pl.DataFrame(
            {
                "sex": [1, 2, 1, 2, 1, 2, 1, 2, 1, 2],
                "income": [5.0, 17.0, 23.0, 35.0, None, 44.0, 61.0, 70.0, 820.0, 19.0],
                "w": [1.0, 2.0, 1.5, 1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 1.0],
            }
        )
        md = Microdata(df, keys=["sex"], numeric=["income"], weight="w")
        method = cls(
            columns="income", upper=0.8, lower=0.1, quantile=True, replacement="mean", weighted=True
        )
        return method, md


@function_twin(TopBottomCoding)
def top_bottom_code(data: Any, **params: Any) -> Protected:
    """Top and bottom coding of numeric variables (see :class:`TopBottomCoding`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    columns, upper, lower, quantile, replacement, weighted
        The parameters of :class:`TopBottomCoding`, by name (keyword arguments only); tail
        means are weighted with ``weighted=True`` and a weight (``weight="w"`` below).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.recoding import top_bottom_code
    >>> df = pl.DataFrame({"x": [1, 5, 9, 50]})
    >>> top_bottom_code(df, columns="x", upper=10, lower=2).data["x"].to_list()
    [2, 5, 9, 10]
    """
