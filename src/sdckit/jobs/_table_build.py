"""The table of a table job: built from records (in memory or on an engine) or read as cells.

:func:`_build_table_where` builds it and says where and why (``[input] engine``, ``"auto"`` by
default: :func:`sdckit.engines.engine_choice`); :class:`Records` says where the records are, to
read them again for the linked tables' joint elimination.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdckit._validation import check_columns_exist, check_int
from sdckit.errors import ParameterError
from sdckit.jobs._toml import path_of, unknown_keys

__all__ = ["Records"]


@dataclass(frozen=True)
class Records:
    """Where a job's microdata are, to read them again (``linked = "joint_elimination"``)."""

    file: Path
    format: str | None
    na_values: list[str] | None
    dimensions: tuple[str, ...]
    hierarchies: dict[str, Any]
    value: str | None
    weight: str | None
    missing: str
    missing_value: str = "error"

    def read(self, text_columns: Sequence[str] = ()) -> Any:
        """The records, read as the table job read them (the dimensions and the
        ``text_columns`` as text, so that codes such as ``"1.10"`` stay as written)."""
        from sdckit.io import read_data

        return read_data(
            self.file,
            format=self.format,
            na_values=self.na_values,
            text_columns=list(dict.fromkeys([*self.dimensions, *text_columns])),
        )


def _records(base: Path, input_spec: dict[str, Any], spec: dict[str, Any]) -> Records | None:
    """The microdata source of a job whose table was built from records by polars."""
    if input_spec.get("kind", "microdata") != "microdata" or input_spec.get("engine"):
        return None
    if "respondent" in spec or "holding" in spec:
        return None  # the joint elimination counts records, not respondents
    return Records(
        path_of(base, input_spec["file"], "input file").resolve(),
        input_spec.get("format"),
        input_spec.get("na_values"),
        tuple(spec["dimensions"]),
        dict(spec.get("hierarchies", {})),
        spec.get("value"),
        spec.get("weight"),
        spec.get("missing", "error"),
        spec.get("missing_value", "error"),
    )


def _build_table(base: Path, input_spec: dict[str, Any], spec: dict[str, Any]) -> Any:
    return _build_table_where(base, input_spec, spec)[0]


def _auto_engine(base: Path, input_spec: dict[str, Any], spec: dict[str, Any]) -> Any:
    """``[input] engine`` absent or ``"auto"``: in memory, or streaming for a Parquet file
    whose columns used would take more than a share of the free memory
    (:func:`sdckit.engines.engine_choice`); the options only the in-memory build reads keep
    it in memory, and the reason says so."""
    from sdckit.engines import EngineChoice, engine_choice

    path = path_of(base, input_spec["file"], "input file")
    fmt = input_spec.get("format") or path.suffix.lstrip(".").lower()
    if fmt != "parquet" and not path.is_dir():
        return EngineChoice("polars", "the file is not Parquet: it is read in memory")
    for key, why in (
        ("respondent", "[table] 'respondent' is built in memory"),
        ("holding", "[table] 'holding' is built in memory"),
    ):
        if key in spec:
            return EngineChoice("polars", why)
    if spec.get("missing_value", "error") != "error":
        return EngineChoice("polars", "[table] 'missing_value' = \"drop\" is built in memory")
    if "na_values" in input_spec:
        return EngineChoice("polars", "[input] 'na_values' is read in memory")
    dims = list(spec["dimensions"])
    used = [*dims, *(spec[k] for k in ("value", "weight") if isinstance(spec.get(k), str))]
    if not path.exists():
        return EngineChoice("polars", "in memory")  # the reader names the missing file
    return engine_choice(path, "auto", used)


def _build_table_where(
    base: Path, input_spec: dict[str, Any], spec: dict[str, Any]
) -> tuple[Any, str | None]:
    """The table of a job and where it was built and why (None for a cells input)."""
    from sdckit.io import read_data
    from sdckit.tables import Table

    unknown_keys(input_spec, {"file", "format", "kind", "na_values", "engine"}, "input")
    unknown_keys(
        spec,
        {
            "dimensions",
            "hierarchies",
            "value",
            "weight",
            "n_top",
            "n_contributors",
            "top",
            "missing",
            "missing_value",
            "respondent",
            "holding",
        },
        "table",
    )
    if "file" not in input_spec:
        raise ParameterError("[input] of the table job needs a 'file'.")
    kind = input_spec.get("kind", "microdata")
    if kind not in ("microdata", "cells"):
        raise ParameterError('[input] \'kind\' must be "microdata" or "cells".')
    for key in ("respondent", "holding"):
        if key in spec and kind == "cells":
            raise ParameterError(
                f'[table] {key!r} is for microdata inputs: a kind = "cells" input gives the '
                "contributor counts and largest contributions per cell (n_contributors, top)."
            )
    dims = spec.get("dimensions")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError("[table] 'dimensions' must be a list of column names.")
    na_values = input_spec.get("na_values")
    if na_values is not None and (
        not isinstance(na_values, list) or not all(isinstance(v, str) for v in na_values)
    ):
        raise ParameterError("[input] 'na_values' must be a list of strings.")
    engine = input_spec.get("engine")
    where = None
    if engine is not None and engine != "auto":
        table = _build_on_engine(base, input_spec, spec, dims, engine)
        return table, f"{engine} (asked for)"
    if kind == "microdata":
        choice = _auto_engine(base, input_spec, spec)
        if choice.engine == "streaming":
            table = _build_on_engine(base, input_spec, spec, dims, "streaming")
            return table, str(choice)
        where = f"in memory ({choice.reason})"
    # the codes of the dimensions are read exactly as written (text), as key variables are
    frame = read_data(
        path_of(base, input_spec["file"], "input file"),
        format=input_spec.get("format"),
        na_values=na_values,
        text_columns=dims,
    )
    hierarchies = spec.get("hierarchies", {})
    if not isinstance(hierarchies, dict):
        raise ParameterError("[table] 'hierarchies' must be a table: column -> hierarchy.")
    for name in hierarchies:
        if name not in dims:
            raise ParameterError(f"[table.hierarchies] {name!r} is not one of the dimensions.")
    value = spec.get("value")
    roles = ("value", "weight", "n_contributors", "respondent", "holding")
    for key in roles:
        if key in spec and not isinstance(spec[key], str):
            raise ParameterError(f"[table] {key!r} must be a column name.")
    cols = [*dims, *(spec[k] for k in roles if k in spec)]
    check_columns_exist(cols, list(frame.columns), "table")
    dimensions = {d: hierarchies.get(d) for d in dims}
    missing = spec.get("missing", "error")
    if missing not in ("error", "category", "drop"):
        raise ParameterError(
            '[table] \'missing\' must be "error", "category" (a level of its own) or "drop" '
            "(leave the records out)."
        )
    missing_value = spec.get("missing_value", "error")
    if missing_value not in ("error", "drop"):
        raise ParameterError(
            '[table] \'missing_value\' must be "error" or "drop" (leave the records without a '
            "value out)."
        )
    if kind == "microdata":
        if "n_contributors" in spec or "top" in spec:
            raise ParameterError(
                "[table] 'n_contributors' and 'top' are for kind = \"cells\" inputs."
            )
        n_top = check_int(spec.get("n_top", 3), "table.n_top", minimum=1)
        table = Table.from_microdata(
            frame, dimensions, value, weight=spec.get("weight"), n_top=n_top, missing=missing,
            missing_value=missing_value, respondent=spec.get("respondent"),
            holding=spec.get("holding"),
        )  # fmt: skip
        return table, where
    if "missing_value" in spec:
        raise ParameterError(
            "[table] 'missing_value' is for microdata inputs; a kind = \"cells\" input needs "
            "a value in every row."
        )
    if "missing" in spec:
        raise ParameterError(
            "[table] 'missing' is for microdata inputs; a kind = \"cells\" input needs a code "
            "in every dimension of every row."
        )
    if value is None:
        raise ParameterError("[table] a kind = \"cells\" input needs the 'value' column.")
    table = Table.from_frame(
        frame, dimensions, value, n_contributors=spec.get("n_contributors"), top=spec.get("top")
    )
    return table, None


def _build_on_engine(
    base: Path, input_spec: dict[str, Any], spec: dict[str, Any], dims: list[str], engine: Any
) -> Any:
    """``[input] engine = "..."``: the cells aggregated where the records are (Parquet only)."""
    from sdckit.engines import ENGINES, table_on_engine

    if not isinstance(engine, str) or engine not in ENGINES:
        raise ParameterError(
            f"[input] 'engine' must be one of {', '.join(repr(e) for e in ENGINES)}."
        )
    if input_spec.get("kind", "microdata") != "microdata":
        raise ParameterError("[input] 'engine' is for microdata inputs (kind = \"microdata\").")
    path = path_of(base, input_spec["file"], "input file")
    fmt = input_spec.get("format") or path.suffix.lstrip(".").lower()
    if fmt != "parquet" and not path.is_dir():
        raise ParameterError(
            "[input] 'engine' needs a Parquet file (or a directory of Parquet files): the "
            "engines read the dimension codes with their stored types; convert the file or "
            "remove 'engine'."
        )
    if "na_values" in input_spec:
        raise ParameterError(
            "[input] 'na_values' is for text files; a Parquet file read by an engine has its "
            "missing values stored as nulls: remove 'na_values'."
        )
    for key in ("n_contributors", "top"):
        if key in spec:
            raise ParameterError(f'[table] {key!r} is for kind = "cells" inputs.')
    for key in ("respondent", "holding"):
        if key in spec:
            raise ParameterError(
                f"[table] {key!r} is not available with [input] 'engine' yet: the engines "
                "aggregate records, not respondents; remove 'engine' (in-memory build)."
            )
    if spec.get("missing_value", "error") != "error":
        raise ParameterError(
            "[table] 'missing_value' = \"drop\" is not available with [input] 'engine' yet: "
            "leave the records without a value out of the Parquet file, or remove 'engine'."
        )
    hierarchies = spec.get("hierarchies", {})
    if not isinstance(hierarchies, dict):
        raise ParameterError("[table] 'hierarchies' must be a table: column -> hierarchy.")
    for key in ("value", "weight"):
        if key in spec and not isinstance(spec[key], str):
            raise ParameterError(f"[table] {key!r} must be a column name.")
    n_top = check_int(spec.get("n_top", 3), "table.n_top", minimum=1)
    cells = table_on_engine(
        str(path),
        {d: hierarchies.get(d) for d in dims},
        spec.get("value"),
        weight=spec.get("weight"),
        n_top=n_top,
        missing=spec.get("missing", "error"),
        engine=engine,
    )
    return cells.to_table()
