"""Generalisation hierarchies: each original value with its label at every level of detail.

A :class:`GeneralisationHierarchy` is ARX's hierarchy table: one row per original value (level
0), then its label at level 1, 2, ..., ``height``; every level coarsens the one below (two
values with one label at level ``l`` have one label at every level above).  It is built from a
table, from ARX's hierarchy CSV files, from nested intervals of a number, from code prefixes
(``0123`` -> ``012*`` -> ``01**`` -> ... -> ``*``) or from one ``{old: new}`` map per level, and
used by :class:`sdckit.masking.GlobalRecoding` (a level per column), by
:meth:`sdckit.tables.Hierarchy.from_generalisation` and, through :meth:`table`, by the
search over the lattice of levels.

Values are matched as text.  A data value is turned into text as follows: text as it is; an
integer in decimal (``7`` -> ``"7"``); a float that is a whole number as that integer
(``101.0`` -> ``"101"``, so person numbers stored as floats match), any other float by its
shortest decimal form (``2.5`` -> ``"2.5"``); a missing value (or NaN) stays missing and is
never looked up.  Hierarchy values are text as written (``"007"`` does not match ``7``).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._files import atomic_path
from sdckit.errors import DataError, ParameterError

__all__ = ["GeneralisationHierarchy", "HierarchyError", "as_text"]

#: The label of the top level that the builders add (ARX's suppressed value).
TOP = "*"


class HierarchyError(DataError):
    """A generalisation hierarchy is malformed or does not cover the data's values."""


def _text(value: object) -> str:
    """One Python value as text, by the matching rule of the module ("" for a missing value,
    which the hierarchy's checks refuse as an empty label)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return str(value).lower()
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return ""
        if math.isfinite(x) and x.is_integer() and abs(x) < 2**53:
            return str(int(x))
        return repr(x)
    return str(value)


def as_text(series: pl.Series) -> pl.Series:
    """A column as text by the matching rule of the module (missing values stay missing).

    Examples
    --------
    >>> import polars as pl
    >>> as_text(pl.Series("id", [101.0, 2.5, None])).to_list()
    ['101', '2.5', None]
    """
    if not series.dtype.is_float():
        return series.cast(pl.String)
    v = pl.col("v").fill_nan(None)
    whole = (v == v.round(0)) & (v.abs() < 2.0**53)
    return (
        series.to_frame("v")
        .select(
            pl.when(whole)
            .then(v.cast(pl.Int64, strict=False).cast(pl.String))
            .otherwise(v.cast(pl.String))
        )
        .to_series()
        .alias(series.name)
    )


@dataclass(frozen=True, repr=False)
class GeneralisationHierarchy:
    """Original values (level 0) with their label at each level up to ``height``.

    Parameters
    ----------
    rows : tuple of tuple of str
        One row per original value: the value, then its labels at levels 1, 2, ...  Build it
        with the class methods rather than directly (they turn values into text).

    Raises
    ------
    HierarchyError
        Ragged rows, an empty label, an original value listed twice, or levels that are not
        nested (a label of level ``l`` with two labels at level ``l + 1``).

    Examples
    --------
    >>> h = GeneralisationHierarchy.from_prefixes(["0123", "0124", "0201"])
    >>> h.height
    4
    >>> h.table()[0]
    ('0123', '012*', '01**', '0***', '*')
    >>> h.loss(2).tolist()  # 01** covers two of the three values: (2 - 1) / (3 - 1)
    [0.5, 0.5, 0.0]
    """

    rows: tuple[tuple[str, ...], ...]
    #: How :meth:`write_arx_csv` ends lines, and whether the last line is ended (as the file
    #: read by :meth:`read_arx_csv` did, so that it is written back byte for byte).
    line_end: str = field(default="\n", compare=False)
    final_line_end: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if not self.rows:
            raise HierarchyError("A generalisation hierarchy needs at least one value.")
        width = len(self.rows[0])
        ragged = sum(len(r) != width for r in self.rows)
        if ragged:
            raise HierarchyError(
                f"{ragged} row(s) of the hierarchy have another number of levels than the "
                f"first ({width}); give every value a label at every level."
            )
        if any(not isinstance(v, str) or v == "" for r in self.rows for v in r):
            raise HierarchyError(
                "The hierarchy has an empty, missing or non-text label; give every value a "
                "text label at every level."
            )
        values = [r[0] for r in self.rows]
        twice = len(values) - len(set(values))
        if twice:
            raise HierarchyError(
                f"{twice} original value(s) are listed twice in the hierarchy; list each "
                "value once (one row per value)."
            )
        for level in range(1, width - 1):
            up: dict[str, str] = {}
            for r in self.rows:
                if up.setdefault(r[level], r[level + 1]) != r[level + 1]:
                    raise HierarchyError(
                        f"The levels {level} and {level + 1} of the hierarchy are not nested: "
                        f"a label of level {level} has two labels at level {level + 1}; each "
                        "level must group whole groups of the level below."
                    )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_table(cls, rows: Iterable[Sequence[object]]) -> GeneralisationHierarchy:
        """A hierarchy from rows of level values, level 0 first (values turned into text).

        Examples
        --------
        >>> h = GeneralisationHierarchy.from_table([[1, "1-2", "*"], [2, "1-2", "*"]])
        >>> h.values, h.height
        (('1', '2'), 2)
        """
        return cls(tuple(tuple(_text(v) for v in row) for row in rows))

    @classmethod
    def read_arx_csv(
        cls, path: str | Path, sep: str = ";", encoding: str = "utf-8"
    ) -> GeneralisationHierarchy:
        """Read ARX's hierarchy CSV: one row per value, its levels separated by ``sep``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "sex.csv"
        >>> _ = p.write_text("Male;*\\nFemale;*\\n")
        >>> GeneralisationHierarchy.read_arx_csv(p).table()
        (('Male', '*'), ('Female', '*'))
        """
        try:
            text = Path(path).read_text(encoding=encoding)
        except FileNotFoundError:
            raise ParameterError(
                "The hierarchy file does not exist; give the path of an ARX hierarchy CSV."
            ) from None
        except (OSError, UnicodeDecodeError):
            raise ParameterError(
                f"The hierarchy file cannot be read as {encoding} text; give an ARX hierarchy "
                "CSV (or its encoding)."
            ) from None
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
        rows = [tuple(r) for r in reader if r]
        crlf = "\r\n" in text
        ends = text.endswith(("\n", "\r"))
        return cls(tuple(rows), line_end="\r\n" if crlf else "\n", final_line_end=ends)

    def write_arx_csv(self, path: str | Path, sep: str = ";", line_end: str | None = None) -> None:
        """Write the hierarchy in ARX's CSV format (atomically: all or nothing).

        A file read by :meth:`read_arx_csv` is written back byte for byte: its line ends
        (``line_end`` overrides them) and whether its last line was ended are kept.
        """
        end = self.line_end if line_end is None else line_end
        out = io.StringIO(newline="")
        csv.writer(out, delimiter=sep, lineterminator=end).writerows(self.rows)
        text = out.getvalue()
        if not self.final_line_end:
            text = text[: -len(end)]
        with atomic_path(path) as tmp:
            tmp.write_bytes(text.encode("utf-8"))

    @classmethod
    def from_intervals(
        cls,
        values: Iterable[float],
        *,
        widths: Sequence[float] | None = None,
        breaks: Sequence[Sequence[float]] | None = None,
        start: float | None = None,
        top: bool = True,
    ) -> GeneralisationHierarchy:
        """Nested intervals of a numeric key, labelled ``[a, b)`` (closed on the left).

        Give ``widths`` (each a whole multiple of the one before: intervals of level ``l`` are
        ``[start + i * w, start + (i + 1) * w)``, ``start`` defaulting to the smallest value
        rounded down to a multiple of the last width) or ``breaks`` (one list of edges per
        level, each level's edges a subset of the level below's, covering every value).  A top
        level ``*`` is added unless the last level has one interval or ``top=False``.  Labels
        use the notation of :class:`sdckit.masking.IntervalRecoding` (``[20, 30)``), not ARX's
        ``[20, 30[``; whole edges are written in full (``[0, 1000000)``).

        Examples
        --------
        >>> h = GeneralisationHierarchy.from_intervals([17, 23, 35], widths=[10, 20])
        >>> h.table()[0], h.table()[2]
        (('17', '[10, 20)', '[0, 20)', '*'), ('35', '[30, 40)', '[20, 40)', '*'))
        """
        vals = np.unique(np.asarray(list(values), dtype=np.float64))
        if len(vals) == 0 or not np.all(np.isfinite(vals)):
            raise ParameterError("The 'values' of an interval hierarchy must be finite numbers.")
        if (widths is None) == (breaks is None):
            raise ParameterError("Give either 'widths' or 'breaks' for an interval hierarchy.")
        if widths is not None:
            ws = [float(w) for w in widths]
            ratios = [b / ws[0] for b in ws] if ws and ws[0] > 0 else []
            if (
                not ws
                or ws[0] <= 0
                or any(abs(r - round(r)) > 1e-9 for r in ratios)
                or any(not _multiple(b, a) for a, b in itertools.pairwise(ws))
            ):
                raise ParameterError(
                    "The 'widths' must be positive and each a whole multiple (> 1) of the one "
                    "before, so that the intervals are nested."
                )
            lo = math.floor(vals[0] / ws[-1]) * ws[-1] if start is None else float(start)
            if lo > vals[0]:
                raise ParameterError("The 'start' of the intervals is above the smallest value.")
            # every level's edges are taken from the finest level's, so the nesting is exact
            # (decimal widths such as 0.1 and 0.3 would otherwise drift apart), rounded to
            # 10 decimals so that 0.1 * 3 is written 0.3
            steps = [round(r) for r in ratios]
            n_last = math.floor((vals[-1] - lo) / ws[-1]) + 1
            finest = np.round(lo + ws[0] * np.arange(n_last * steps[-1] + 1), 10)
            edges = [finest[::step] for step in steps]
        else:
            edges = [np.asarray(sorted(set(map(float, b))), dtype=np.float64) for b in breaks]  # type: ignore[union-attr]
            if not edges:
                raise ParameterError("The 'breaks' must give at least one level of edges.")
            for below, above in itertools.pairwise(edges):
                if not set(above.tolist()) <= set(below.tolist()):
                    raise ParameterError(
                        "Each level's 'breaks' must be a subset of the level below's, so that "
                        "the intervals are nested."
                    )
            if any(len(e) < 2 or vals[0] < e[0] or vals[-1] >= e[-1] for e in edges):
                raise ParameterError(
                    "The 'breaks' of every level must cover every value (first edge <= the "
                    "smallest value, last edge > the largest)."
                )
        columns = [[_text(v) for v in vals.tolist()]]
        for e in edges:
            pos = np.searchsorted(e, vals, side="right") - 1
            names = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in itertools.pairwise(e)]
            columns.append([names[i] for i in pos])
        return cls._with_top(columns, top)

    @classmethod
    def from_prefixes(
        cls,
        codes: Iterable[object],
        *,
        keep: Sequence[int] | None = None,
        mask: str = "*",
        pad: str | None = None,
        top: bool = True,
    ) -> GeneralisationHierarchy:
        """Codes with trailing characters masked: ``0123`` -> ``012*`` -> ``01**`` -> ... -> ``*``.

        Level ``l`` masks the last ``l`` characters (ARX's redaction), or, with ``keep``, keeps
        the first ``keep[l - 1]`` characters (decreasing lengths).  Codes must have one length;
        ``pad="0"`` pads shorter codes on the left first.  The top level ``*`` is always added
        (even above a level with one label) unless ``top=False``.

        Examples
        --------
        >>> GeneralisationHierarchy.from_prefixes([7, 12], pad="0", keep=[1]).table()
        (('07', '0*', '*'), ('12', '1*', '*'))
        """
        texts = [_text(c) for c in codes]
        if not texts:
            raise ParameterError("The 'codes' of a prefix hierarchy must not be empty.")
        longest = max(map(len, texts))
        if pad is not None:
            if len(pad) != 1:
                raise ParameterError("The 'pad' parameter must be one character.")
            texts = [t.rjust(longest, pad) for t in texts]
        if len({len(t) for t in texts}) != 1:
            raise ParameterError(
                "The codes of a prefix hierarchy have different lengths; pad them (pad='0')."
            )
        lengths = list(range(longest - 1, 0, -1)) if keep is None else [int(n) for n in keep]
        if any(n <= 0 or n >= longest for n in lengths) or any(
            b >= a for a, b in itertools.pairwise(lengths)
        ):
            raise ParameterError(
                "The 'keep' lengths must decrease and lie between 1 and the code length - 1."
            )
        columns = [texts] + [[t[:n] + mask * (longest - n) for t in texts] for n in lengths]
        if top:  # the chain of masks always ends at the fully masked value
            columns.append([TOP] * len(texts))
        return cls(tuple(zip(*columns, strict=True)))

    @classmethod
    def from_mapping(
        cls,
        levels: Sequence[Mapping[Any, Any]],
        values: Iterable[object] | None = None,
        *,
        top: bool = True,
    ) -> GeneralisationHierarchy:
        """One ``{old: new}`` map per level (finest first), as :class:`GlobalRecoding` takes.

        ``levels[0]`` maps original values to level 1, ``levels[1]`` level-1 labels to level
        2, and so on; a label that a map does not list keeps its label.  The original values
        are ``values`` (default: the keys of ``levels[0]``).  The top level ``*`` is added
        when the last level has more than one label, unless ``top=False``.

        Examples
        --------
        >>> GeneralisationHierarchy.from_mapping([{"n1": "n", "n2": "n", "s1": "s"}]).table()
        (('n1', 'n', '*'), ('n2', 'n', '*'), ('s1', 's', '*'))
        """
        if isinstance(levels, Mapping) or not levels:
            raise ParameterError("The 'levels' must be a non-empty list of maps {old: new}.")
        maps = []
        for level in levels:
            if not isinstance(level, Mapping):
                raise ParameterError("Each level of 'levels' must be a map {old: new}.")
            maps.append({_text(k): _text(v) for k, v in level.items()})
        column = [_text(v) for v in (levels[0] if values is None else values)]
        columns = [column]
        for m in maps:
            column = [m.get(v, v) for v in column]
            columns.append(column)
        return cls._with_top(columns, top)

    @classmethod
    def _with_top(cls, columns: list[list[str]], top: bool) -> GeneralisationHierarchy:
        if top and len(set(columns[-1])) > 1:
            columns = [*columns, [TOP] * len(columns[0])]
        return cls(tuple(zip(*columns, strict=True)))

    # ------------------------------------------------------------------ structure
    @property
    def height(self) -> int:
        """The highest level (the number of levels above the original values)."""
        return len(self.rows[0]) - 1

    @cached_property
    def values(self) -> tuple[str, ...]:
        """The original values (level 0), in row order."""
        return tuple(r[0] for r in self.rows)

    def table(self) -> tuple[tuple[str, ...], ...]:
        """ARX's rows: ``table()[i][l]`` is the label of value ``i`` at level ``l``."""
        return self.rows

    def _level(self, level: int) -> int:
        if isinstance(level, bool) or not isinstance(level, numbers.Integral):
            raise ParameterError("The 'level' must be an integer.")
        if not 0 <= int(level) <= self.height:
            raise ParameterError(
                f"The 'level' must lie between 0 and the hierarchy's height ({self.height})."
            )
        return int(level)

    def labels(self, level: int) -> tuple[str, ...]:
        """The distinct labels of ``level``, in order of first appearance."""
        lv = self._level(level)
        return tuple(dict.fromkeys(r[lv] for r in self.rows))

    @cached_property
    def _codes(self) -> np.ndarray:
        out = np.empty((len(self.rows), self.height + 1), dtype=np.int32)
        for lv in range(self.height + 1):
            index = {label: i for i, label in enumerate(self.labels(lv))}
            out[:, lv] = [index[r[lv]] for r in self.rows]
        out.setflags(write=False)
        return out

    def codes(self) -> np.ndarray:
        """Integer codes of :meth:`table` (read-only, for kernels): ``codes()[i, l]`` is the
        position of value ``i``'s label at level ``l`` in :meth:`labels` ``(l)``.

        Examples
        --------
        >>> GeneralisationHierarchy.from_prefixes(["01", "02", "11"]).codes().tolist()
        [[0, 0, 0], [1, 0, 0], [2, 1, 0]]
        """
        return self._codes

    def mapping(self, level: int) -> dict[str, str]:
        """``{original value: label at level}``."""
        lv = self._level(level)
        return {r[0]: r[lv] for r in self.rows}

    def generalise(self, series: pl.Series, level: int) -> pl.Series:
        """The labels of a column's values at ``level`` (text; missing values stay missing).

        Raises
        ------
        HierarchyError
            Some values of the column are not in the hierarchy (the column is named, the
            values are not).

        Examples
        --------
        >>> import polars as pl
        >>> h = GeneralisationHierarchy.from_table([[1, "low"], [2, "low"], [3, "high"]])
        >>> h.generalise(pl.Series("x", [3.0, 1.0, None]), 1).to_list()
        ['high', 'low', None]
        """
        mapping = self.mapping(level)
        column = series.fill_nan(None) if series.dtype.is_float() else series
        # the distinct values are turned into text and looked up; the records are then
        # mapped in their own type (a hash of integers, not of millions of strings)
        distinct = column.drop_nulls().unique()
        text = as_text(distinct)
        known = text.is_in(pl.Series(list(mapping), dtype=pl.String).implode())
        if not bool(known.all()):
            unknown = int(column.is_in(distinct.filter(~known).implode()).sum())
            raise HierarchyError(
                f"{unknown} value(s) of the column {series.name!r} are not in its hierarchy; "
                "add them to the hierarchy (values are matched as text, whole floats as "
                "integers)."
            )
        labels = text.replace_strict(list(mapping), list(mapping.values()), return_dtype=pl.String)
        return column.replace_strict(distinct, labels, default=None, return_dtype=pl.String).alias(
            series.name
        )

    @cached_property
    def _leaf_counts(self) -> tuple[np.ndarray, ...]:
        """Per level, the number of original values under each value's label."""
        out = []
        for lv in range(self.height + 1):
            column = pl.Series([r[lv] for r in self.rows], dtype=pl.String)
            out.append(column.to_frame("l").select(pl.len().over("l")).to_series().to_numpy())
        return tuple(out)

    def loss(self, level: int) -> np.ndarray:
        """ARX's loss per original value: (values under its label - 1) / (values - 1).

        0 at level 0, 1 under a label that covers every value (row order of :attr:`values`).
        """
        lv = self._level(level)
        n = len(self.rows)
        if n == 1:
            return np.zeros(1)
        return (self._leaf_counts[lv].astype(np.float64) - 1.0) / (n - 1.0)

    def precision(self, level: int) -> float:
        """Sweeney's precision loss of a level (ARX's "precision"): ``level / height``."""
        lv = self._level(level)
        return 0.0 if self.height == 0 else lv / self.height

    def toml_value(self) -> Any:
        """A job file names hierarchy files: an object cannot be written into one."""
        raise ParameterError(
            "A job file names generalisation hierarchies by their files: write the hierarchy "
            "with write_arx_csv and give the file's path instead of the object."
        )

    def __repr__(self) -> str:
        return f"GeneralisationHierarchy(values={len(self.rows)}, height={self.height})"


def _multiple(b: float, a: float) -> bool:
    """Whether ``b`` is a whole multiple (> 1) of ``a`` (up to rounding: 0.3 of 0.1)."""
    q = b / a
    return q > 1.5 and abs(q - round(q)) < 1e-9


def _fmt(x: float) -> str:
    """An interval edge: whole numbers in full (``1000000``, not ``1e+06``), others shortest."""
    return _text(x)
