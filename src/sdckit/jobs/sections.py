"""A job one section at a time: for interfaces that build a job interactively (the browser UI).

An interface that lets the user build a job step by step must give what ``sdckit protect`` gives
on the job file it exports, byte for byte.  So it does not re-implement how a job reads its
input (which columns of a CSV file are read as text), checks its roles, builds a step's method
(parameters, columns, seeds), its release plan or its R-U map: these functions are the ones
:func:`~sdckit.jobs.load_job` uses, one section of a job file (as a dict of the TOML table) at
a time, to check a form's values.  The protection itself (the steps, the release, the R-U map,
the outputs, the job file) is a :class:`sdckit.jobs.Runner`, and a table job's (the table, the
rules, the suppression, the outputs, the job file) a :class:`sdckit.jobs.TableRunner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.jobs import load as _load
from sdckit.jobs._methods import instantiate, merge_params, method_class, with_seed
from sdckit.jobs.target import RiskTarget, parse_target

__all__ = [
    "AUDIT_PARAMETERS",  # noqa: F822 (a module __getattr__: read when asked)
    "RiskTarget",
    "build_method",
    "build_release_plan",
    "build_roles",
    "build_ru_map",
    "numeric_columns",
    "parse_target",
    "read_input",
    "text_columns",
]


def __getattr__(name: str) -> Any:
    """``AUDIT_PARAMETERS``: the parameters of ``[audit]``, the declaration of
    :class:`sdckit.tables.audit.Audit` (read when asked: the tables package is heavy)."""
    if name == "AUDIT_PARAMETERS":
        from sdckit.tables.audit import Audit

        return Audit.parameters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_input(input_spec: dict[str, Any], roles_spec: dict[str, Any] | None) -> pl.DataFrame:
    """The input file read exactly as a job with this ``[input]`` and ``[roles]`` reads it."""
    frame, _ = _load._read_input(Path("."), dict(input_spec), roles_spec)
    return frame


def text_columns(roles_spec: dict[str, Any], numeric_keys: Sequence[str] = ()) -> list[str]:
    """The columns a job with this ``[roles]`` table reads from a CSV file as text."""
    return _load.text_columns(roles_spec, numeric_keys)


def numeric_columns(name: str, params: dict[str, Any]) -> list[str]:
    """The columns a step of method ``name`` with these parameters works on as numbers."""
    return _load.numeric_columns(method_class(name, "step"), params)


def build_roles(roles_spec: dict[str, Any]) -> dict[str, Any]:
    """The ``[roles]`` table checked as a job checks it (keyword arguments of Microdata)."""
    return _load._roles(dict(roles_spec))


def build_method(
    name: str, params: dict[str, Any], where: str, columns: Sequence[str], family: str = "microdata"
) -> Any:
    """A method built and checked as a job's step (or rule, or table method) is."""
    cls = method_class(name, where, family)
    return instantiate(cls, dict(params), where, list(columns) if columns is not None else None)


def step_params(name: str, params: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """A step's parameters with the seed a job gives it (when the method takes one)."""
    cls = method_class(name, "step")
    return with_seed(cls, dict(params), seed, False)


def build_release_plan(output_spec: dict[str, Any], md: Any) -> Any:
    """The release plan of an ``[output]`` table."""
    return _load._release_plan(dict(output_spec), md)


def build_ru_map(spec: dict[str, Any], columns: Sequence[str], seed: int | None) -> Any:
    """The ``[ru_map]`` table as a job reads it (candidates, labels, seeds)."""
    return _load._ru_map(dict(spec), list(columns), seed, False)


def merged(spec: dict[str, Any]) -> dict[str, Any]:
    """A step's parameters from its TOML table (its ``params`` sub-table merged)."""
    return merge_params(spec, ("method",), "step")
