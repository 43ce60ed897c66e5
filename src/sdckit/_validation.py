"""Small parameter checks shared by every public function (raise :class:`ParameterError`)."""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from sdckit.errors import ColumnError, ParameterError

__all__ = [
    "check_choice",
    "check_columns_exist",
    "check_int",
    "check_real",
    "check_seed",
    "column_list",
]


def check_int(
    value: object, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an int, or raise a :class:`ParameterError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(
            f"The {name!r} parameter must be an integer; got an object of type "
            f"{type(value).__name__}."
        )
    ivalue = int(value)
    if minimum is not None and ivalue < minimum:
        raise ParameterError(f"The {name!r} parameter must be >= {minimum}; got {ivalue}.")
    if maximum is not None and ivalue > maximum:
        raise ParameterError(f"The {name!r} parameter must be <= {maximum}; got {ivalue}.")
    return ivalue


def check_real(
    value: object,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
) -> float:
    """Return ``value`` as a finite float within the given bounds, or raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(
            f"The {name!r} parameter must be a number; got an object of type "
            f"{type(value).__name__}."
        )
    fvalue = float(value)
    if not np.isfinite(fvalue):
        raise ParameterError(f"The {name!r} parameter must be finite; got {fvalue}.")
    if minimum is not None and (fvalue < minimum or (not min_inclusive and fvalue == minimum)):
        op = ">=" if min_inclusive else ">"
        raise ParameterError(f"The {name!r} parameter must be {op} {minimum}; got {fvalue}.")
    if maximum is not None and (fvalue > maximum or (not max_inclusive and fvalue == maximum)):
        op = "<=" if max_inclusive else "<"
        raise ParameterError(f"The {name!r} parameter must be {op} {maximum}; got {fvalue}.")
    return fvalue


def check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ParameterError."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ParameterError(f"The {name!r} parameter must be one of {options}; got {value!r}.")
    return value


def check_seed(seed: object) -> np.random.Generator:
    """Turn ``seed`` (None, an int, or a Generator) into a :class:`numpy.random.Generator`.

    A Generator is used as given (its state advances); an int gives a fresh, reproducible one.
    The global NumPy random state is never used.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParameterError(
            "The 'seed' parameter must be a non-negative integer or a numpy.random.Generator; "
            f"got an object of type {type(seed).__name__}."
        )
    if int(seed) < 0:
        raise ParameterError(f"The 'seed' parameter must be non-negative; got {int(seed)}.")
    return np.random.default_rng(int(seed))


def column_list(value: str | Iterable[str] | None, name: str) -> tuple[str, ...]:
    """Normalise a column argument (one name, a list of names, or None) to a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    try:
        cols = tuple(value)
    except TypeError:
        raise ParameterError(
            f"The {name!r} parameter must be a column name or a list of column names."
        ) from None
    for c in cols:
        if not isinstance(c, str):
            raise ParameterError(
                f"The {name!r} parameter must hold column names (strings); got an object of "
                f"type {type(c).__name__}."
            )
    if len(set(cols)) != len(cols):
        raise ParameterError(f"The {name!r} parameter lists a column more than once.")
    return cols


def check_columns_exist(columns: Iterable[str], available: Sequence[str], role: str) -> None:
    """Raise ColumnError for the first column not in ``available``, with a suggestion."""
    for col in columns:
        if col not in available:
            close = difflib.get_close_matches(col, list(available), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ColumnError(
                f"The {role} column {col!r} is not in the data.{hint} "
                f"Available columns: {', '.join(map(repr, available[:20]))}"
                + (" ..." if len(available) > 20 else "")
            )
