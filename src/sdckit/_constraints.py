"""Declarative parameter constraints (as scikit-learn's ``_parameter_constraints``).

A method declares, for each parameter of its ``__init__``, a :class:`Param`: the constraints
its value may satisfy (any one of them suffices), and a one-line help text.  The declaration
serves four readers at once:

* the method itself, which checks its parameters when it is applied
  (:func:`validate_parameters`), with one error template naming the class and the parameter;
* the job-file loader, which checks a job's parameters and the columns they name before any
  work, without a hand-kept list of column-valued parameters (:meth:`Constraint.columns`);
* the browser interface, which draws a form from :meth:`Constraint.schema`;
* the tests, which derive a wrong type and an out-of-range value for every parameter
  (:meth:`Param.wrong_type_example`, :meth:`Constraint.out_of_range_example`).

Messages never quote a parameter value that may carry data (a category code in a mapping):
only numbers, booleans and the method's own option words are shown.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sdckit.errors import ColumnError, ParameterError

__all__ = [
    "Array",
    "Boolean",
    "Callable_",
    "Column",
    "ColumnMap",
    "Columns",
    "Constraint",
    "Instance",
    "Integer",
    "ListOf",
    "MapOf",
    "NoneValue",
    "Options",
    "Param",
    "Real",
    "Seed",
    "String",
    "TupleOf",
    "columns_named",
    "validate_parameters",
]


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence | np.ndarray) and not isinstance(value, str | bytes)


class Constraint:
    """One admissible form of a parameter value."""

    #: Short kind name used by :meth:`schema` (``"integer"``, ``"columns"``, ...).
    kind: str = "value"

    def accepts(self, value: object) -> bool:
        """Whether ``value`` satisfies the constraint."""
        raise NotImplementedError

    def describe(self) -> str:
        """The constraint in words (``"an integer >= 2"``)."""
        raise NotImplementedError

    def type_matches(self, value: object) -> bool:
        """Whether ``value`` has the right type (it may still be out of range)."""
        return self.accepts(value)

    def columns(self, value: object) -> list[str]:
        """The column names ``value`` refers to (empty for non-column constraints)."""
        return []

    def out_of_range_example(self) -> object | None:
        """A value of the right type that the constraint rejects, or None if there is none."""
        return None

    def schema(self) -> dict[str, Any]:
        """A JSON-friendly description (for forms)."""
        return {"kind": self.kind, "text": self.describe()}


@dataclass(frozen=True)
class NoneValue(Constraint):
    """The value None (the parameter may be left out)."""

    kind = "none"

    def accepts(self, value: object) -> bool:
        return value is None

    def describe(self) -> str:
        return "None"


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False."""

    kind = "boolean"

    def accepts(self, value: object) -> bool:
        return isinstance(value, bool | np.bool_)

    def describe(self) -> str:
        return "true or false"


def _bound_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " and ".join(parts)


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer, optionally within ``[minimum, maximum]``."""

    minimum: int | None = None
    maximum: int | None = None
    kind = "integer"

    def type_matches(self, value: object) -> bool:
        return _is_int(value)

    def accepts(self, value: object) -> bool:
        if not _is_int(value):
            return False
        v = int(value)  # type: ignore[call-overload]
        if self.minimum is not None and v < self.minimum:
            return False
        return not (self.maximum is not None and v > self.maximum)

    def describe(self) -> str:
        bounds = _bound_text(self.minimum, self.maximum, False, False)
        return "an integer" + (f" {bounds}" if bounds else "")

    def out_of_range_example(self) -> object | None:
        if self.minimum is not None:
            return self.minimum - 1
        if self.maximum is not None:
            return self.maximum + 1
        return None

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "minimum": self.minimum, "maximum": self.maximum}


@dataclass(frozen=True)
class Real(Constraint):
    """A finite number (an integer is accepted), optionally within bounds."""

    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False
    max_open: bool = False
    allow_infinite: bool = False
    kind = "number"

    def type_matches(self, value: object) -> bool:
        return _is_real(value)

    def accepts(self, value: object) -> bool:
        if not _is_real(value):
            return False
        v = float(value)  # type: ignore[arg-type]
        if math.isnan(v) or (math.isinf(v) and not self.allow_infinite):
            return False
        if self.minimum is not None and (v < self.minimum or (self.min_open and v == self.minimum)):
            return False
        return not (
            self.maximum is not None and (v > self.maximum or (self.max_open and v == self.maximum))
        )

    def describe(self) -> str:
        bounds = _bound_text(self.minimum, self.maximum, self.min_open, self.max_open)
        kind = "a number (inf allowed)" if self.allow_infinite else "a finite number"
        return kind + (f" {bounds}" if bounds else "")

    def out_of_range_example(self) -> object | None:
        if self.minimum is not None:
            return float(self.minimum) if self.min_open else float(self.minimum) - 1.0
        if self.maximum is not None:
            return float(self.maximum) if self.max_open else float(self.maximum) + 1.0
        return None if self.allow_infinite else math.inf

    def schema(self) -> dict[str, Any]:
        return {
            **super().schema(),
            "minimum": self.minimum,
            "maximum": self.maximum,
            "min_open": self.min_open,
            "max_open": self.max_open,
        }


class Options(Constraint):
    """One of a fixed set of words (``Options("mdav", "univariate")``)."""

    kind = "options"

    def __init__(self, *choices: str) -> None:
        self.choices: tuple[str, ...] = tuple(choices)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and other.choices == self.choices

    def __hash__(self) -> int:
        return hash(self.choices)

    def __repr__(self) -> str:
        return f"Options{self.choices!r}"

    def type_matches(self, value: object) -> bool:
        return isinstance(value, str)

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.choices

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def out_of_range_example(self) -> object | None:
        return "no such option"

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "choices": list(self.choices)}


@dataclass(frozen=True)
class String(Constraint):
    """Any non-empty text (a label, a name for a new column)."""

    kind = "string"

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and bool(value.strip())

    def type_matches(self, value: object) -> bool:
        return isinstance(value, str)

    def describe(self) -> str:
        return "a non-empty string"


@dataclass(frozen=True)
class Column(Constraint):
    """One column name of the data.

    ``role`` says which columns a form should offer (``"keys"``, ``"numeric"``, ``"any"``);
    the existence of the column is checked when the data are known.
    """

    role: str = "any"
    kind = "column"

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and bool(value)

    def describe(self) -> str:
        return "a column name"

    def columns(self, value: object) -> list[str]:
        return [value] if isinstance(value, str) else []

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "role": self.role}


@dataclass(frozen=True)
class Columns(Constraint):
    """A list of distinct column names (a single name is accepted as a list of one)."""

    role: str = "any"
    min_length: int = 1
    kind = "columns"

    def type_matches(self, value: object) -> bool:
        if isinstance(value, str):
            return True
        return _is_sequence(value) and all(isinstance(v, str) for v in value)  # type: ignore[union-attr]

    def accepts(self, value: object) -> bool:
        if isinstance(value, str):
            return bool(value) and self.min_length <= 1
        if not self.type_matches(value):
            return False
        names = list(value)  # type: ignore[call-overload]
        return len(names) >= self.min_length and len(set(names)) == len(names) and all(names)

    def describe(self) -> str:
        many = "" if self.min_length <= 1 else f" (at least {self.min_length})"
        return f"a list of distinct column names{many}"

    def columns(self, value: object) -> list[str]:
        if isinstance(value, str):
            return [value]
        if _is_sequence(value):
            return [v for v in value if isinstance(v, str)]  # type: ignore[union-attr]
        return []

    def out_of_range_example(self) -> object | None:
        return [] if self.min_length >= 1 else None

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "role": self.role, "min_length": self.min_length}


@dataclass(frozen=True)
class ListOf(Constraint):
    """A list whose every item satisfies ``item``."""

    item: Constraint
    min_length: int = 0
    kind = "list"

    def type_matches(self, value: object) -> bool:
        return _is_sequence(value)

    def accepts(self, value: object) -> bool:
        if not _is_sequence(value):
            return False
        items = list(value)  # type: ignore[call-overload]
        return len(items) >= self.min_length and all(self.item.accepts(v) for v in items)

    def describe(self) -> str:
        many = "" if self.min_length <= 0 else f" of at least {self.min_length}"
        return f"a list{many}, each item {self.item.describe()}"

    def columns(self, value: object) -> list[str]:
        if not _is_sequence(value):
            return []
        return [c for v in value for c in self.item.columns(v)]  # type: ignore[union-attr]

    def out_of_range_example(self) -> object | None:
        inner = self.item.out_of_range_example()
        if inner is not None:
            return [inner]
        return [] if self.min_length >= 1 else None

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "item": self.item.schema(), "min_length": self.min_length}


@dataclass(frozen=True)
class TupleOf(Constraint):
    """A fixed-length list whose items satisfy the given constraints in order."""

    items: tuple[Constraint, ...]
    kind = "tuple"

    def type_matches(self, value: object) -> bool:
        return _is_sequence(value)

    def accepts(self, value: object) -> bool:
        if not _is_sequence(value):
            return False
        values = list(value)  # type: ignore[call-overload]
        return len(values) == len(self.items) and all(
            c.accepts(v) for c, v in zip(self.items, values, strict=True)
        )

    def describe(self) -> str:
        return "a list (" + ", ".join(c.describe() for c in self.items) + ")"

    def columns(self, value: object) -> list[str]:
        if not self.accepts(value):
            return []
        return [col for c, v in zip(self.items, value, strict=True) for col in c.columns(v)]  # type: ignore[call-overload]

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "items": [c.schema() for c in self.items]}


@dataclass(frozen=True)
class ColumnMap(Constraint):
    """A table ``{column: value}`` whose keys name columns and whose values satisfy ``value``."""

    value: Constraint
    role: str = "any"
    kind = "column_map"

    def type_matches(self, value: object) -> bool:
        return isinstance(value, Mapping)

    def accepts(self, value: object) -> bool:
        if not isinstance(value, Mapping) or not value:
            return False
        return all(isinstance(k, str) and k for k in value) and all(
            self.value.accepts(v) for v in value.values()
        )

    def describe(self) -> str:
        return f"a table {{column: {self.value.describe()}}}"

    def columns(self, value: object) -> list[str]:
        if not isinstance(value, Mapping):
            return []
        names = [k for k in value if isinstance(k, str)]
        return names + [c for v in value.values() for c in self.value.columns(v)]

    def out_of_range_example(self) -> object | None:
        return {}

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "value": self.value.schema(), "role": self.role}


@dataclass(frozen=True)
class MapOf(Constraint):
    """A table ``{text: value}`` (keys are labels or category codes, not columns)."""

    value: Constraint
    kind = "map"

    def type_matches(self, value: object) -> bool:
        return isinstance(value, Mapping)

    def accepts(self, value: object) -> bool:
        return isinstance(value, Mapping) and all(self.value.accepts(v) for v in value.values())

    def describe(self) -> str:
        return f"a table, each value {self.value.describe()}"

    def columns(self, value: object) -> list[str]:
        if not isinstance(value, Mapping):
            return []
        return [c for v in value.values() for c in self.value.columns(v)]

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "value": self.value.schema()}


@dataclass(frozen=True)
class Array(Constraint):
    """A numeric array (numpy array or nested lists) with ``ndim`` dimensions."""

    ndim: int = 2
    square: bool = False
    kind = "array"

    def type_matches(self, value: object) -> bool:
        return isinstance(value, np.ndarray) or _is_sequence(value)

    def accepts(self, value: object) -> bool:
        if not self.type_matches(value):
            return False
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        if arr.ndim != self.ndim or arr.size == 0 or not np.all(np.isfinite(arr)):
            return False
        return not (self.square and arr.shape[0] != arr.shape[-1])

    def describe(self) -> str:
        shape = "square matrix" if self.square else f"{self.ndim}-dimensional array"
        return f"a numeric {shape}"

    def schema(self) -> dict[str, Any]:
        return {**super().schema(), "ndim": self.ndim, "square": self.square}


@dataclass(frozen=True)
class Seed(Constraint):
    """A seed: a non-negative integer or a :class:`numpy.random.Generator`."""

    kind = "seed"

    def type_matches(self, value: object) -> bool:
        return _is_int(value) or isinstance(value, np.random.Generator)

    def accepts(self, value: object) -> bool:
        if isinstance(value, np.random.Generator):
            return True
        return _is_int(value) and int(value) >= 0  # type: ignore[call-overload]

    def describe(self) -> str:
        return "a non-negative integer or a numpy.random.Generator"

    def out_of_range_example(self) -> object | None:
        return -1


@dataclass(frozen=True)
class Instance(Constraint):
    """An instance of one of ``types`` (described as ``text``)."""

    types: tuple[type, ...]
    text: str
    kind = "object"

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.types)

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class Callable_(Constraint):
    """A function."""

    text: str = "a function"
    kind = "function"

    def accepts(self, value: object) -> bool:
        return callable(value) and not isinstance(value, type)

    def describe(self) -> str:
        return self.text


# --------------------------------------------------------------------------- parameters
#: Candidate values of a wrong type, tried in order by :meth:`Param.wrong_type_example`.
_WRONG_TYPES: tuple[object, ...] = ("text", 2.5, 7, True, [1.5], {"x": 1.5}, 1j)


class Param:
    """The declaration of one parameter: its admissible forms and a one-line help text.

    ``Param(Integer(minimum=2), help="smallest class size")``; ``None`` among the forms
    means the parameter may be None.
    """

    __slots__ = ("forms", "help")

    def __init__(self, *forms: Constraint | None, help: str = "") -> None:
        converted = tuple(NoneValue() if f is None else f for f in forms)
        if not converted:
            raise TypeError("Param needs at least one constraint")
        for f in converted:
            if not isinstance(f, Constraint):
                raise TypeError(f"Param forms must be Constraint objects, not {type(f).__name__}")
        self.forms: tuple[Constraint, ...] = converted
        self.help = help

    def __repr__(self) -> str:
        return f"Param({', '.join(map(repr, self.forms))}, help={self.help!r})"

    @property
    def optional(self) -> bool:
        """Whether None is admissible."""
        return any(isinstance(f, NoneValue) for f in self.forms)

    def accepts(self, value: object) -> bool:
        """Whether ``value`` satisfies one of the forms."""
        return any(f.accepts(value) for f in self.forms)

    def describe(self) -> str:
        """The admissible forms in words."""
        texts = [f.describe() for f in self.forms]
        return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]

    def columns(self, value: object) -> list[str]:
        """Column names named by ``value`` (through the first form that accepts it)."""
        for f in self.forms:
            if f.accepts(value):
                return f.columns(value)
        return []

    def names_columns(self) -> bool:
        """Whether the parameter can name columns."""
        return any(f.columns(_column_probe(f)) for f in self.forms)

    def wrong_type_example(self) -> object | None:
        """A value whose type no form admits (None if every type is admissible)."""
        for candidate in _WRONG_TYPES:
            if not any(f.type_matches(candidate) or f.accepts(candidate) for f in self.forms):
                return candidate
        return None

    def out_of_range_examples(self) -> list[object]:
        """Values of an admissible type that every form rejects."""
        found = []
        for f in self.forms:
            example = f.out_of_range_example()
            if example is not None and not self.accepts(example):
                found.append(example)
        return found

    def schema(self) -> dict[str, Any]:
        """A JSON-friendly description of the parameter (for forms)."""
        return {"help": self.help, "forms": [f.schema() for f in self.forms]}


def _column_probe(form: Constraint) -> object:
    """A value naming the column ``"c"`` in the shape ``form`` expects (for names_columns)."""
    if isinstance(form, Column | Columns):
        return "c"
    if isinstance(form, ColumnMap):
        return {"c": None}
    if isinstance(form, ListOf):
        inner = _column_probe(form.item)
        return [inner] if inner is not None else None
    if isinstance(form, TupleOf):
        return [_column_probe(i) for i in form.items]
    if isinstance(form, MapOf):
        inner = _column_probe(form.value)
        return {"x": inner} if inner is not None else None
    return None


def _shown(value: object) -> str:
    """How a rejected value appears in a message: numbers and booleans, else only the type."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if _is_real(value):
        return f"{value!r}" if _is_int(value) else f"{float(value):g}"  # type: ignore[arg-type]
    if value is None:
        return "None"
    if isinstance(value, str):
        return "a string"
    if _is_sequence(value):
        return "a list" if len(value) else "an empty list"  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        return "a table" if value else "an empty table"
    return f"an object of type {type(value).__name__}"


def validate_parameters(
    owner: str,
    declared: Mapping[str, Param],
    values: Mapping[str, object],
    *,
    columns: Sequence[str] | None = None,
    where: str | None = None,
) -> None:
    """Check ``values`` against their declarations; raise an :class:`SdcError` naming both.

    Parameters
    ----------
    owner : str
        The class name shown in messages (``"LocalSuppression"``).
    declared : mapping of str to Param
    values : mapping of str to object
        The parameter values (as returned by ``get_params()``).
    columns : sequence of str, optional
        The columns of the data: column-valued parameters must name columns among them.
    where : str, optional
        A prefix for messages (``"step 3 (pram)"``).

    Raises
    ------
    ParameterError
        A value of the wrong type or out of range, or an undeclared parameter.
    ColumnError
        A parameter names a column that is not in ``columns``.
    """
    prefix = f"{where}: " if where else ""
    for name in values:
        if name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(
                f"{prefix}{owner} has no parameter {name!r}.{hint} "
                f"Valid parameters: {', '.join(declared)}."
            )
    for name, param in declared.items():
        value = values.get(name)
        if not param.accepts(value):
            option_word = (
                isinstance(value, str)
                and len(value) <= 40
                and any(isinstance(f, Options) for f in param.forms)
            )  # an option word the user typed is no data value: show it
            shown = repr(value) if option_word else _shown(value)
            raise ParameterError(
                f"{prefix}The {name!r} parameter of {owner} must be {param.describe()}; "
                f"got {shown}."
            )
        if columns is None:
            continue
        available = list(columns)
        for col in param.columns(value):
            if col not in available:
                close = difflib.get_close_matches(col, available, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ColumnError(
                    f"{prefix}The {name!r} parameter of {owner} names the column {col!r}, "
                    f"which is not in the data.{hint}"
                )


def columns_named(declared: Mapping[str, Param], values: Mapping[str, object]) -> list[str]:
    """Every column named by the parameter ``values`` (in declaration order, no repeats)."""
    seen: dict[str, None] = {}
    for name, param in declared.items():
        for col in param.columns(values.get(name)):
            seen.setdefault(col, None)
    return list(seen)
