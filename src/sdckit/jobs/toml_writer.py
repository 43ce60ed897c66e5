"""A small TOML writer for job files (the standard library reads TOML but does not write it).

:func:`dumps` writes the job's nested dict in the layout of ``docs/job-files.md``: top-level
keys first, then one ``[section]`` per table, ``[[steps]]`` for arrays of tables, and the
tables inside a step (a recoding's ``mapping``) as ``[steps.mapping]`` sub-tables.  Every value
is written so that :mod:`tomllib` reads back exactly the same value (checked by
:func:`roundtrip`); None values are left out (TOML has no null: a parameter not given takes
its default).

Examples
--------
>>> text = dumps({"seed": 1, "input": {"dataset": "demo"},
...               "steps": [{"method": "local_suppression", "k": 3}]})
>>> print(text)
seed = 1
<BLANKLINE>
[input]
dataset = "demo"
<BLANKLINE>
[[steps]]
method = "local_suppression"
k = 3
<BLANKLINE>
>>> roundtrip(text) == {"seed": 1, "input": {"dataset": "demo"},
...                     "steps": [{"method": "local_suppression", "k": 3}]}
True
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sdckit.errors import ParameterError

__all__ = ["dumps", "faithful_dumps", "key", "roundtrip", "same_document", "value"]

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def key(name: object) -> str:
    """A TOML key: bare when it can be, else a quoted string."""
    text = str(name)
    return text if _BARE.match(text) else _string(text)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    return text if any(c in text for c in ".en") else text + ".0"


def _plain(v: Any) -> Any:
    """A path as its text; an object with a ``toml_value()`` (a key combination) as its
    job-file form (which may refuse, naming what to write instead)."""
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    form = getattr(v, "toml_value", None)
    return form() if callable(form) and not isinstance(v, type) else v


def value(v: Any) -> str:
    """One TOML value on one line (tables inline)."""
    v = _plain(v)
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return _float(float(v))
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, np.ndarray):
        return value(v.tolist())
    if isinstance(v, Mapping):
        items = [f"{key(k)} = {value(x)}" for k, x in v.items() if x is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(v, Sequence):
        return "[" + ", ".join(value(x) for x in v) + "]"
    raise TypeError(f"A value of type {type(v).__name__} cannot be written to a job file.")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _table(lines: list[str], header: str, table: Mapping[str, Any], array: bool) -> None:
    """Write one table: its plain keys, then (in an element of an array of tables, such as a
    step) its dict values as sub-tables whose own tables are inline."""
    lines.append("")
    lines.append(f"[[{header}]]" if array else f"[{header}]")
    subtables = []
    for k, v in table.items():
        if v is None:
            continue
        if (
            array and isinstance(v, Mapping) and v and k not in ("params", "grid")
        ) or _is_table_array(v):
            subtables.append((k, v))
        else:
            lines.append(f"{key(k)} = {value(v)}")
    for k, v in subtables:
        if isinstance(v, Mapping):
            _table(lines, f"{header}.{key(k)}", v, array=False)
        else:
            for item in v:
                _table(lines, f"{header}.{key(k)}", item, array=True)


def dumps(document: Mapping[str, Any], header: str = "") -> str:
    """The TOML text of a job (a dict of top-level keys, tables and arrays of tables)."""
    lines: list[str] = [header.rstrip("\n")] if header else []
    tables = []
    for k, v in document.items():
        if v is None:
            continue
        if isinstance(v, Mapping) or _is_table_array(v):
            tables.append((k, v))
        else:
            lines.append(f"{key(k)} = {value(v)}")
    for k, v in tables:
        if isinstance(v, Mapping):
            _table(lines, key(k), v, array=False)
        else:
            for item in v:
                _table(lines, key(k), item, array=True)
    text = "\n".join(lines).lstrip("\n") + "\n"
    return text


def _drop_none(v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, Mapping):
        return {k: _drop_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, np.ndarray):
        return _drop_none(v.tolist())
    if isinstance(v, list | tuple):
        return [_drop_none(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def roundtrip(text: str) -> dict[str, Any]:
    """The document :mod:`tomllib` reads from ``text``."""
    return tomllib.loads(text)


def same_document(document: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` reads back as ``document`` (None values left out, tuples as lists)."""
    return bool(roundtrip(text) == _drop_none(document))


def faithful_dumps(document: Mapping[str, Any], header: str = "", what: str = "job file") -> str:
    """:func:`dumps`, refusing a text that does not read back as ``document`` (the writer's
    own check: a job file that runs something else than the state it was written from)."""
    text = dumps(document, header=header)
    if not same_document(document, text):  # pragma: no cover - the writer's own check
        raise ParameterError(f"The {what} could not be written faithfully; please report it.")
    return text
