"""Reading job files: TOML, tables, unknown keys and paths, with one-line errors."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sdckit.errors import DataError, ParameterError

__all__ = ["path_of", "read_toml", "table_of", "unknown_keys"]


def read_toml(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The job file's path and its parsed content."""
    job_path = Path(path)
    if not job_path.is_file():
        raise DataError(f"The job file {str(job_path)!r} does not exist; check the path.")
    try:
        spec = tomllib.loads(job_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"The job file {job_path.name!r} is not valid TOML: {exc}.") from None
    except UnicodeDecodeError:
        raise ParameterError(f"The job file {job_path.name!r} is not UTF-8 text.") from None
    return job_path, spec


def table_of(value: Any, name: str) -> dict[str, Any]:
    """``value`` if it is a TOML table, else a one-line error naming the section."""
    if not isinstance(value, dict):
        raise ParameterError(f"The job file's {name!r} must be a table ([{name}]).")
    return value


def unknown_keys(table: Mapping[str, Any], allowed: Iterable[str], name: str) -> None:
    """Refuse a key of ``table`` not in ``allowed``, suggesting the closest one."""
    allowed = set(allowed)
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(
                f"Unknown key {key!r} in [{name}] of the job file.{hint} "
                f"Allowed: {', '.join(sorted(allowed))}."
            )


def path_of(base: Path, value: Any, name: str) -> Path:
    """A path of the job file (relative to its directory)."""
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"The job file's {name} must be a file path (a string).")
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p
