"""Where a key's hierarchy comes from: an ARX hierarchy CSV file, an inline builder, rows.

Everything here ends in the rows :class:`~sdckit.lattice.LatticeData` reads (one row per
value, its label at every level).  Files are read and bands built by
:class:`sdckit.hierarchies.GeneralisationHierarchy`; ``redact`` masks trailing characters of
codes of any length (``from_prefixes`` needs codes of one length).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import ParameterError
from sdckit.hierarchies import GeneralisationHierarchy, as_text

__all__ = ["BUILDERS", "hierarchy_rows", "read_hierarchy_csv"]

Rows = tuple[tuple[str, ...], ...]

#: The inline builders of a job file's ``[steps.hierarchies]`` and what they make.
BUILDERS = {
    "bands": "numbers in bands [a, b) of the given widths, each a multiple of the one before",
    "redact": "codes losing one more trailing character per level (0123, 012*, 01**, ...), then *",
    "flat": "each value, then *",
}


def read_hierarchy_csv(path: str | Path, key: str) -> Rows:
    """The rows of an ARX hierarchy file (``;``-separated: a value, then its label per level)."""
    file = Path(path)
    if not file.is_file():
        raise ParameterError(
            f"the hierarchy file of key {key!r} does not exist ({file.name}); give the path of "
            "an ARX hierarchy CSV file, relative to the job file."
        )
    rows = GeneralisationHierarchy.read_arx_csv(file).table()
    if not rows:
        raise ParameterError(f"the hierarchy file of key {key!r} ({file.name}) is empty.")
    return rows


def _bands(values: list[str], widths: Any, key: str) -> Rows:
    if not isinstance(widths, Sequence) or isinstance(widths, str) or not widths:
        raise ParameterError(
            f"the 'bands' hierarchy of key {key!r} needs widths = [5, 10, 20] (band widths)."
        )
    if not all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in widths):
        raise ParameterError(f"the band widths of key {key!r} must be whole numbers >= 1.")
    numbers = pl.Series(values).cast(pl.Float64, strict=False)
    if numbers.null_count():
        raise ParameterError(
            f"the 'bands' hierarchy of key {key!r} needs numbers; the key has other values "
            "(give a hierarchy file, or 'redact' or 'flat')."
        )
    try:
        bands = GeneralisationHierarchy.from_intervals(numbers.to_list(), widths=list(widths))
    except ParameterError as error:
        raise ParameterError(f"the 'bands' hierarchy of key {key!r}: {error}") from None
    # the hierarchy lists each number once as sdckit writes it; the key's values as written
    by_number = {float(row[0]): row[1:] for row in bands.table()}
    return tuple((text, *by_number[float(v)]) for text, v in zip(values, numbers, strict=True))


def _redact(values: list[str]) -> Rows:
    longest = max(len(v) for v in values)
    rows = []
    for v in values:
        # level j hides the last j characters; the top level hides everything
        levels = [v[: max(len(v) - j, 0)] + "*" * min(j, len(v)) for j in range(longest)]
        rows.append((*levels, "*"))
    return tuple(rows)


def _build(spec: Mapping[str, Any], values: list[str], key: str) -> Rows:
    kind = spec.get("kind")
    if kind not in BUILDERS:
        raise ParameterError(
            f"the hierarchy of key {key!r} is a table, so it needs kind = one of "
            f'{", ".join(map(repr, BUILDERS))} (e.g. {{kind = "bands", widths = [5, 10]}}).'
        )
    allowed = {"kind", "widths"} if kind == "bands" else {"kind"}
    extra = sorted(set(spec) - allowed)
    if extra:
        raise ParameterError(
            f"the {kind!r} hierarchy of key {key!r} takes no {extra[0]!r}; it takes "
            f"{', '.join(sorted(allowed))}."
        )
    if kind == "bands":
        return _bands(values, spec.get("widths"), key)
    if kind == "redact":
        return _redact(values)
    return tuple((v, "*") for v in values)


def hierarchy_rows(source: Any, column: pl.Series, key: str) -> Any:
    """The hierarchy of ``key`` as LatticeData takes it.

    ``source`` is a path (an ARX hierarchy CSV file), a builder table (``{"kind": "bands",
    "widths": [5, 10]}``, ``"redact"``, ``"flat"``), None (the key stays as it is: its values
    at level 0 only), or a hierarchy object or rows, passed on unchanged.  Builders and None
    take the values of ``column``.
    """
    if isinstance(source, str | Path):
        return read_hierarchy_csv(source, key)
    if source is None or isinstance(source, Mapping):
        values = as_text(column).unique(maintain_order=True).drop_nulls().to_list()
        if source is None:
            return tuple((v,) for v in values)
        if not values:
            raise ParameterError(f"key {key!r} has no values to build its hierarchy from.")
        return _build(source, values, key)
    return source
