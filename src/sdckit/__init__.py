"""sdckit: statistical disclosure control for microdata and statistical tables."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sdckit.errors import (
    ColumnError,
    DataError,
    InfeasibleError,
    ParameterError,
    SdcError,
    SdcWarning,
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from sdckit.hierarchies import GeneralisationHierarchy
    from sdckit.microdata import Microdata, as_microdata

__version__ = "0.1.0"

# Imported on first use, so that ``import sdckit`` (and ``sdckit --help``) stays light: the data
# classes need polars and numpy.
_LAZY = {
    "GeneralisationHierarchy": "sdckit.hierarchies",
    "Microdata": "sdckit.microdata",
    "as_microdata": "sdckit.microdata",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:  # a subpackage or module not imported yet: sdckit.risk, sdckit.io, ...
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ColumnError",
    "DataError",
    "GeneralisationHierarchy",
    "InfeasibleError",
    "Microdata",
    "ParameterError",
    "SdcError",
    "SdcWarning",
    "__version__",
    "as_microdata",
]
