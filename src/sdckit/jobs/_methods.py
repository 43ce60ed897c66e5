"""Methods of a job file: names, parameters and the columns they name, from the declarations.

Every method class declares its parameters (:mod:`sdckit.protection`); a job's parameters are
checked against that declaration, and every column a parameter names is checked against the
input file's columns, before any work.  There is no list of column-valued parameters to keep
by hand and no interpretation of type hints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sdckit.errors import ParameterError, SdcError
from sdckit.protection import Parameterised, get_method, unknown_parameter

__all__ = ["instantiate", "merge_params", "method_class", "resolve_files", "with_seed"]


def method_class(name: object, where: str, family: str = "microdata") -> Any:
    """The class for a job's ``method`` name (class name, snake_case name or alias)."""
    return get_method(name, family, where=where)


def merge_params(spec: Mapping[str, Any], reserved: Sequence[str], where: str) -> dict[str, Any]:
    """The parameters of a step: its other keys plus its ``params`` table (which may hold a
    parameter called ``method``, such as the microaggregation method)."""
    params = {k: v for k, v in spec.items() if k not in reserved and k != "params"}
    extra = spec.get("params", {})
    if not isinstance(extra, dict):
        raise ParameterError(f"{where}: 'params' must be a table of parameters.")
    for key, value in extra.items():
        if key in params:
            raise ParameterError(f"{where}: the parameter {key!r} is given twice.")
        params[key] = value
    return params


def resolve_files(
    cls: type[Parameterised], params: dict[str, Any], base: Path, where: str
) -> dict[str, Any]:
    """``params`` with the file paths of the parameters a class lists in ``file_parameters``
    (``{column: path}`` tables, such as global recoding's ARX hierarchy files) made absolute:
    a job's relative paths are relative to the job file's directory, not to the working
    directory of whoever runs it."""
    out = dict(params)
    for name in getattr(cls, "file_parameters", ()):
        table = out.get(name)
        if not isinstance(table, Mapping):
            continue
        resolved = {}
        for column, value in table.items():
            if isinstance(value, str):
                if not value.strip():
                    raise ParameterError(f"{where}: the {name!r} file of {column!r} is empty.")
                path = Path(value).expanduser()
                value = str((path if path.is_absolute() else base / path).resolve())
            resolved[column] = value
        out[name] = resolved
    return out


def with_seed(
    cls: type[Parameterised], params: dict[str, Any], seed: int | None, override: bool
) -> dict[str, Any]:
    """``params`` with the job's seed for a method that takes one."""
    if seed is None or "seed" not in cls.parameters:
        return params
    if override or "seed" not in params:
        return {**params, "seed": seed}
    return params


def _unknown_parameters(cls: type[Parameterised], params: Mapping[str, Any], where: str) -> None:
    names = list(cls.parameters)
    for name in params:
        if name not in names:
            # the Python API's wording (set_params, the classes, the twins), placed in the job
            raise ParameterError(f"{where}: {unknown_parameter(cls.__name__, name, names)}")


def _required(cls: type[Parameterised], params: Mapping[str, Any], where: str) -> None:
    import inspect

    sig = inspect.signature(cls.__init__)
    missing = [
        name
        for name, p in sig.parameters.items()
        if name != "self" and p.default is inspect.Parameter.empty and name not in params
    ]
    if missing:
        raise ParameterError(
            f"{where}: {cls.__name__} needs the parameter(s) {', '.join(map(repr, missing))}."
        )


def instantiate(
    cls: type[Parameterised],
    params: dict[str, Any],
    where: str,
    columns: Sequence[str] | None = None,
) -> Any:
    """Build ``cls(**params)`` and check the values (and named columns) against the declaration.

    Raises
    ------
    ParameterError, ColumnError
        One line starting with ``where``, naming the parameter.
    """
    _unknown_parameters(cls, params, where)
    _required(cls, params, where)
    try:
        method = cls(**params)
    except SdcError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    method.validate_params(columns, where=where)
    return method


def describe_toml(value: Any) -> str:
    """A TOML value's kind in words (for messages)."""
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def snake(name: str) -> str:
    """``LocalSuppression`` -> ``local_suppression``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
