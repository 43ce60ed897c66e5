"""Local suppression's own key combinations: parsing, checking, positions among the keys.

The combinations come from ``key_combinations`` (each with its own ``k``) or from mu-ARGUS'
identification levels (:func:`sdckit.risk.combinations_from_levels`); the greedy of
:mod:`sdckit.masking.suppression` then runs once per combination with its ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdckit.errors import ColumnError, InfeasibleError, ParameterError, SdcError
from sdckit.microdata import Microdata
from sdckit.risk.combinations import KeyCombination, combinations_from_levels, key_combinations

__all__ = ["check_combination_columns", "own_combinations", "own_subsets"]


def own_combinations(
    k: int,
    combinations: int | None,
    given: Sequence[Any] | None,
    levels: Mapping[str, int] | None,
) -> tuple[KeyCombination, ...] | None:
    """The own key combinations (given, or from identification levels); None without."""
    named = [
        name
        for name, value in (
            ("combinations", combinations),
            ("key_combinations", given),
            ("identification_levels", levels),
        )
        if value is not None
    ]
    if len(named) > 1:
        raise ParameterError(
            f"Give at most one of {', '.join(map(repr, named))}: each says which key "
            "combinations must meet k."
        )
    if given is not None:
        return key_combinations(given, k)
    if levels is not None:
        return combinations_from_levels(levels, k)
    return None


def check_combination_columns(
    given: Sequence[Any], k: int, columns: Sequence[str] | None, where: str | None
) -> None:
    """The combinations parse and name columns of the data (a job's check at loading)."""
    at = f"{where}: " if where else ""
    try:
        own = key_combinations(given, k)
    except SdcError as exc:
        raise type(exc)(f"{at}{exc}") from None
    for name in (n for c in own for n in c.keys):
        if columns is not None and name not in columns:
            raise ColumnError(
                f"{at}The 'key_combinations' parameter names {name!r}, which is not a column "
                "of the data."
            )


def own_subsets(
    md: Microdata, own: Sequence[KeyCombination], fixed: Sequence[int]
) -> tuple[list[tuple[int, ...]], list[int]]:
    """The combinations as positions among the free (not fixed) keys, with their ``k``.

    Larger combinations come first: their suppressions often already protect the smaller.  A
    combination of fixed keys only is left out: the caller checks that the groups of the fixed
    keys' values meet its ``k`` (they cannot be suppressed).
    """
    free = [j for j in range(len(md.keys)) if j not in fixed]
    subsets, ks = [], []
    for c in sorted(own, key=lambda c: (-len(c.keys), -c.k)):
        for name in c.keys:
            if name not in md.keys:
                raise ColumnError(
                    f"A key combination names {name!r}, which is not a key variable; name key "
                    "variables only."
                )
        if c.k > md.n_records:
            raise InfeasibleError(
                f"A key combination asks for k={c.k} with {md.n_records} records; choose "
                "k <= the number of records."
            )
        positions = [md.keys.index(n) for n in c.keys]
        cols = tuple(free.index(j) for j in positions if j in free)
        if cols:
            subsets.append(cols)
            ks.append(c.k)
    return subsets, ks
