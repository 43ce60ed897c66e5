"""Reading tau-ARGUS text files: lines in UTF-8 or Latin-1, tokens with quoted strings."""

from __future__ import annotations

import re
from pathlib import Path

from sdckit.errors import ParameterError

__all__ = ["read_lines", "tokens"]


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
