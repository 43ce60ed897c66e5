"""Reading tau-ARGUS text files: lines in UTF-8 or Latin-1, tokens with quoted strings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sdckit.errors import DataError, ParameterError

__all__ = ["find_variable", "read_lines", "tokens", "variable_keyword"]


def read_lines(path: Path, what: str) -> list[str]:
    """The lines of a tau-ARGUS file (UTF-8, else Latin-1: tau-ARGUS writes ANSI files)."""
    if not path.is_file():
        raise ParameterError(f"The {what} {path.name!r} does not exist; check its path.")
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return path.read_text(encoding="latin-1").splitlines()


_TOKEN = re.compile(r'"([^"]*)"|(\S+)')


def tokens(text: str) -> list[str]:
    """Whitespace-separated tokens; a quoted token keeps its spaces and loses its quotes."""
    return [a if b == "" else b for a, b in _TOKEN.findall(text)]


def variable_keyword(variable: Any, key: str, args: list[str], where: str) -> bool:
    """Apply a keyword that microdata and table metadata share (``<DECIMALS>``,
    ``<TOTCODE>``, ``<HIERARCHICAL>``, ``<HIERCODELIST>``, ``<HIERLEADSTRING>``) to the
    variable being read; False for any other keyword."""
    if key == "<HIERARCHICAL>":
        variable.hierarchical = True
        return True
    needs = {"<DECIMALS>": "a whole number", "<TOTCODE>": "a code",
             "<HIERCODELIST>": "a file name", "<HIERLEADSTRING>": "a string"}  # fmt: skip
    if key not in needs:
        return False
    if not args or (key == "<DECIMALS>" and not args[0].isdigit()):
        raise DataError(f"{where}: {key} needs {needs[key]}.")
    if key == "<DECIMALS>":
        variable.decimals = int(args[0])
    elif key == "<TOTCODE>":
        variable.totcode = args[0]
    elif key == "<HIERCODELIST>":
        variable.hiercodelist = args[0]
        variable.hierarchical = True
    else:
        variable.leadstring = args[0]
    return True


def find_variable(variables: list[Any], name: str, path: Path, where: str = "") -> Any:
    """The variable of a metadata file (``.rda`` or table ``.rda``) called ``name``
    (case-insensitive, as tau-ARGUS); a :class:`ParameterError` naming the file otherwise."""
    for v in variables:
        if v.name.lower() == name.lower():
            return v
    prefix = f"{where}: " if where else ""
    raise ParameterError(
        f"{prefix}the variable {name!r} is not described in the metadata file "
        f"{path.name!r}; declare it there or correct the name."
    )
