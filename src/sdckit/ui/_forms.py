"""Forms drawn from the methods' declared parameters (``Param.schema()``), and their parsing.

Every protection method, sensitivity rule and table method declares its parameters
(:mod:`sdckit.protection`): the admissible forms of each value (an integer with bounds, one of
some words, a list of columns of a role, a table per column, ...) and a help line.  A
:class:`Field` is chosen from that declaration alone, so a new method appears in the browser
without code here:

=====================================  ============================================
declared forms (None aside)            field
=====================================  ============================================
true or false                          a checkbox
integer, number, seed                  a number box (with the bounds)
one of some words                      a list to choose from
a column / a list of columns           a list / check boxes of the columns of the role
a table {column: number}               one number box per column of the role
a table {column: {old: new}}           the levels of one column, each with a new code
a list (of numbers or labels)          a text box: ``0, 15, 30, 65`` (or TOML)
anything else                          a text box taking a TOML value (``[1, 2]``)
=====================================  ============================================

A field left empty takes the method's default; a value that is not of its field's kind (a word
in a number box) is refused next to the field, never replaced by the default.  The values are
checked by the same code as a job file's (:func:`sdckit.jobs._methods.instantiate`), so an
error names the parameter in the same words as ``sdckit protect`` and is shown next to that
field.
"""

from __future__ import annotations

import bisect
import inspect
import itertools
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdckit.protection import snake_name

__all__ = ["Field", "FormError", "field_of_message", "fields_for", "parse_fields"]

_NUMERIC = ("integer", "number", "seed")


class FormError(Exception):
    """A form value could not be read (message in the words of the parameter check)."""

    def __init__(self, field_name: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field_name
        self.message = message


@dataclass
class Field:
    """One input of a generated form.

    Attributes
    ----------
    name : str
        The parameter name.
    widget : str
        ``"checkbox"``, ``"number"``, ``"select"``, ``"text"``, ``"column"``, ``"columns"``,
        ``"per_column"``, ``"levels"`` or ``"toml"``.
    help, text : str
        The declared help line and the admissible values in words.
    default : object
        The method's default (``inspect.Parameter.empty`` when required).
    """

    name: str
    widget: str
    help: str
    text: str
    default: Any
    optional: bool = False
    choices: list[str] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    step: str = "any"
    role: str = "any"
    value_kind: str = ""
    raw: Any = None
    error: str | None = None

    @property
    def required(self) -> bool:
        """Whether the method has no default for it."""
        return self.default is inspect.Parameter.empty

    @property
    def default_text(self) -> str:
        """The default in words ("" when required)."""
        if self.required:
            return ""
        d = self.default
        if d is None:
            return "none"
        if isinstance(d, bool):
            return "true" if d else "false"
        return str(d)

    @property
    def input_id(self) -> str:
        """The id of the field's input element."""
        return f"p-{self.name}"


def _forms(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [f for f in schema["forms"] if f["kind"] != "none"]


def _make_field(name: str, param: Any, default: Any) -> Field:
    schema = param.schema()
    forms = _forms(schema)
    kinds = [f["kind"] for f in forms]
    base = Field(
        name=name,
        widget="toml",
        help=schema.get("help", ""),
        text=param.describe(),
        default=default,
        optional=param.optional,
    )
    first = forms[0] if forms else {"kind": "none"}
    if kinds == ["boolean"]:
        base.widget = "checkbox"
    elif kinds and all(k in _NUMERIC for k in kinds):
        base.widget = "number"
        base.minimum, base.maximum = first.get("minimum"), first.get("maximum")
        base.step = "1" if first["kind"] in ("integer", "seed") else "any"
        if first["kind"] == "seed":
            base.minimum = 0
    elif (
        kinds
        and kinds[0] == "options"
        and all(k in ("options", "object", "function") for k in kinds)
    ):
        base.widget = "select"
        base.choices = list(first["choices"])
    elif kinds == ["string"] or (
        kinds and kinds[0] == "string" and set(kinds) <= {"string", "object"}
    ):
        base.widget = "text"  # a name (objects are for Python callers: automatic's loss)
    elif "column" in kinds:
        base.widget = "column"
        base.role = forms[kinds.index("column")].get("role", "any")
    elif "columns" in kinds:
        base.widget = "columns"
        base.role = forms[kinds.index("columns")].get("role", "any")
    elif "column_map" in kinds:
        form = forms[kinds.index("column_map")]
        inner = form.get("value", {}).get("kind", "")
        base.role = form.get("role", "any")
        if inner in _NUMERIC:
            base.widget, base.value_kind = "per_column", inner
        elif inner in ("object", "map") and len(kinds) == 1:
            base.widget = "levels"
        elif inner == "list" and kinds[0] == "list":
            base.widget = "list"  # "0, 15, 30, 65" (interval recoding's breaks and labels)
    elif kinds and kinds[0] == "options":
        base.widget = "text"  # a word or a number (top and bottom coding's replacement)
        base.choices = list(first["choices"])
    if kinds and kinds[0] in _NUMERIC and base.widget == "toml":
        base.widget = "text"  # a number, or a TOML table such as { income = 3 }
    return base


def fields_for(cls: Any, *, skip: Sequence[str] = ()) -> list[Field]:
    """The fields of a method class, in the order of its parameters."""
    sig = inspect.signature(cls.__init__)
    return [
        _make_field(name, param, sig.parameters[name].default)
        for name, param in cls.parameters.items()
        if name not in skip
    ]


def _toml_value(text: str, name: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        raise FormError(
            name,
            f"The {name!r} value is not a TOML value; write it as in a job file, for example "
            '[1, 2, 3], { income = 0.5 } or "text".',
        ) from None


def _number(text: str) -> Any:
    """An int or a float when the text is one, else the text (the check then names it)."""
    t = text.strip()
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        return t


def _strict_number(text: str, name: str) -> int | float:
    """The number typed in a number box; anything else is refused (never the default)."""
    t = text.strip()
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+", t):  # 1,000: the pages' own way of writing it
        t = t.replace(",", "")
    value = _number(t)
    if isinstance(value, str):
        raise FormError(
            name,
            f"The {name!r} box takes a number written in digits (such as 3 or 0.5); what was "
            "typed is not a number. Correct it, or empty the box to use the default.",
        )
    return value


def _list_value(text: str, name: str) -> list[Any]:
    """``0, 15, 30, 65`` (or ``young, adult``): the items of a comma-separated list, each a
    number when it is one, else the text; a value in brackets is read as TOML."""
    if text[0] in "[{":
        return _toml_value(text, name)
    items = [t.strip().strip("\"'") for t in text.split(",")]
    if not all(items):
        raise FormError(
            name,
            f"The {name!r} box takes values separated by commas, such as 0, 15, 30, 65; one of "
            "them is empty.",
        )
    out: list[Any] = []
    for t in items:
        if t.lower() in ("inf", "+inf", "-inf"):
            out.append(float(t))
        elif re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
            out.append(_number(t))
        else:
            out.append(t)
    return out


def parse_fields(
    fields: Sequence[Field], form: Mapping[str, Any], *, prefix: str = "p-"
) -> dict[str, Any]:
    """The parameters given in a submitted form (empty fields are left out: defaults).

    ``form`` maps input names to a string or a list of strings (check boxes).  The raw input is
    kept on each field (to show the form again after an error).

    Raises
    ------
    FormError
        A value that cannot be read at all (a text box that is not TOML).
    """
    params: dict[str, Any] = {}
    for f in fields:
        key = prefix + f.name
        if f.widget == "checkbox":
            if f"{key}.present" not in form:
                continue
            value = key in form
            f.raw = value
            if f.required or value != f.default:
                params[f.name] = value
            continue
        if f.widget == "columns":
            chosen = _as_list(form.get(key))
            f.raw = chosen
            if chosen:
                params[f.name] = chosen
            continue
        if f.widget == "per_column":
            table: dict[str, Any] = {}
            raw: dict[str, str] = {}
            for name, value in form.items():
                if name.startswith(key + ".") and str(value).strip():
                    column = name[len(key) + 1 :]
                    raw[column] = str(value)
                    table[column] = _strict_number(str(value), f.name)
            f.raw = raw
            if table:
                params[f.name] = table
            continue
        if f.widget == "levels":
            column = str(form.get(f"{key}.column", "")).strip()
            olds = _as_list(form.get(f"{key}.old"))
            news = _as_list(form.get(f"{key}.new"))
            mapping = {o: n.strip() for o, n in zip(olds, news, strict=False) if n.strip()}
            text = str(form.get(f"{key}.toml", "")).strip()
            cuts = str(form.get(f"{key}.breaks", "")).strip()
            f.raw = {"column": column, "new": dict(zip(olds, news, strict=False)), "toml": text,
                     "breaks": cuts}  # fmt: skip
            if text:
                params[f.name] = _toml_value(text, f.name)
            elif cuts and column:
                params[f.name] = {column: cut_levels(olds, cuts, f.name)}
                if any(g.name == "strict" for g in fields):
                    # the levels shown are at most a page: a value not among them is an error,
                    # never kept unbanded in the protected file
                    params["strict"] = True
            elif column and mapping:
                params[f.name] = {column: mapping}
            continue
        text = str(form.get(key, "")).strip()
        f.raw = text
        if not text:
            continue
        if f.widget == "number":
            params[f.name] = _strict_number(text, f.name)
        elif f.widget == "list":
            params[f.name] = _list_value(text, f.name)
        elif f.widget in ("select", "column"):
            params[f.name] = text
        elif f.widget == "text":
            if f.choices and text in f.choices:
                params[f.name] = text
            elif re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
                params[f.name] = _number(text)
            elif text[0] in "[{\"'" or text in ("true", "false", "inf", "-inf"):
                params[f.name] = _toml_value(text, f.name)
            else:
                params[f.name] = text
        else:
            params[f.name] = _toml_value(text, f.name)
    return params


def _interval_label(low: float, high: float, integers: bool) -> str:
    if integers and math.isinf(high):
        return f"{low:g}+"
    if integers:
        return f"{low:g}-{high - 1:g}"
    return f"[{low:g}, {high:g})"


def cut_levels(levels: Sequence[str], text: str, name: str) -> dict[str, str]:
    """The new code of each numeric level from typed breaks: ``0, 15, 30, 65, inf`` gives
    ``0-14``, ``15-29``, ``30-64``, ``65+`` for whole numbers (``[0, 15)`` otherwise); each
    interval holds its lower break, the last one its upper break too.

    Raises
    ------
    FormError
        The breaks are not increasing numbers, a level is not a number, or a level falls
        outside the breaks (counted, never named: levels are data).
    """
    breaks = _list_value(text, name)
    if (
        len(breaks) < 2
        or not all(isinstance(b, int | float) for b in breaks)
        or any(b >= c for b, c in itertools.pairwise(breaks))
    ):
        raise FormError(
            name,
            f"The breaks of {name!r} must be at least two numbers in increasing order, such as "
            "0, 15, 30, 45, 65, inf.",
        )
    values = [_number(v) for v in levels]
    if any(isinstance(v, str) for v in values):
        raise FormError(
            name,
            "The levels of this variable are not all numbers, so they cannot be cut at breaks; "
            "give the new code of each level instead.",
        )
    integers = all(float(v).is_integer() for v in values) and all(
        math.isinf(b) or float(b).is_integer() for b in breaks
    )
    edges = [float(b) for b in breaks]
    out: dict[str, str] = {}
    outside = 0
    for level, v in zip(levels, values, strict=True):
        x = float(v)
        i = bisect.bisect_right(edges, x) - 1
        if i == len(edges) - 1 and x == edges[-1]:
            i -= 1  # the last interval holds its upper break
        if i < 0 or i >= len(edges) - 1:
            outside += 1
            continue
        out[level] = _interval_label(edges[i], edges[i + 1], integers)
    if outside:
        raise FormError(
            name,
            f"{outside} level(s) fall outside the breaks; lower the first break or raise the "
            "last one (inf takes every larger value).",
        )
    return out


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


_PATTERNS = (
    re.compile(r"The '(?P<name>\w+)' parameter of"),
    re.compile(r"has no parameter '(?P<name>\w+)'"),
    re.compile(r"the parameter\(s\) '(?P<name>\w+)'"),
    re.compile(r"the parameter '(?P<name>\w+)' is given twice"),
    re.compile(r"The '(?P<name>\w+)' value is not a TOML value"),
    re.compile(r"The '(?P<name>\w+)' box takes"),
)


def field_of_message(message: str, names: Sequence[str]) -> str | None:
    """The parameter an error message is about (None: about the whole form)."""
    for pattern in _PATTERNS:
        m = pattern.search(message)
        if m and m.group("name") in names:
            return m.group("name")
    for name in names:  # messages that name a parameter another way ('k' of LocalSuppression)
        if re.search(rf"\b{re.escape(name)}\b", message.split(":")[0]):
            return name
    return None


def attach_error(fields: Sequence[Field], message: str) -> str | None:
    """Put ``message`` on the field it is about; return it if it is about no field."""
    name = field_of_message(message, [f.name for f in fields])
    for f in fields:
        if f.name == name:
            f.error = message
            return None
    return message


def method_names(registry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(job name, class name, description)`` of every class of a registry family."""
    out = []
    for cls_name, cls in registry.items():
        alias = getattr(cls, "alias", None)
        out.append((alias if isinstance(alias, str) else snake_name(cls_name), cls_name,
                    cls.description))  # fmt: skip
    return sorted(out)
