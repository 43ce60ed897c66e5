"""The outputs of a job, checked before any work, and how the protected file is written.

A job's outputs are checked when it is loaded, before a step runs: each can be written (its
folder exists or can be created, and a file can really be created in it), no two are the same
file (also after ``--out-dir`` moved them), none is the input, and the format of the protected
file can hold every column name the release keeps.  Each problem is a one-line
:class:`~sdckit.errors.SdcError` naming the output or the column and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import ParameterError
from sdckit.io import (
    FileMetadata,
    check_column_names,
    check_output_path,
    detect_format,
    read_labels,
)

__all__ = [
    "carry_labels",
    "check_data_columns",
    "check_outputs",
    "input_labels",
    "recoded_labels",
    "timestamp_of",
    "write_options",
]

_LABELLED = ("spss", "stata")


def _named(key: str, moved: bool) -> str:
    return f"output {key!r} (moved by --out-dir)" if moved else f"[output] {key!r} file"


def check_outputs(
    outputs: Mapping[str, Path | None],
    *,
    input_path: Path | None = None,
    moved: bool = False,
    section: str = "output",
    writable: bool = True,
) -> None:
    """Refuse outputs that are the same file, the input, or cannot be written.

    Parameters
    ----------
    outputs : dict of str to Path or None
        The outputs of the job by their key in ``[output]`` (None: not asked for).
    input_path : Path, optional
        The input file, which no output may replace.
    moved : bool, default False
        The paths were moved by ``--out-dir`` (the messages say so).
    section : str, default "output"
        The job file's section of the outputs (for the messages).
    writable : bool, default True
        Also check that each output can be written (False: the job is only read).

    Raises
    ------
    ParameterError
        Two outputs are one file, or an output is the input file.
    DataError
        An output cannot be written (a path under a file, a folder without write access, a
        file system that refuses new files).
    """
    source = input_path.resolve() if input_path is not None else None
    seen: dict[Path, str] = {}
    for key, path in outputs.items():
        if path is None:
            continue
        resolved = path.resolve()
        if source is not None and resolved == source:
            raise ParameterError(
                f"The {_named(key, moved)} is the input file; write the outputs to other files "
                "so that the input is not overwritten."
            )
        if resolved in seen:
            first = seen[resolved]
            if moved:
                raise ParameterError(
                    f"--out-dir puts [{section}] {first!r} and {key!r} into the same file "
                    f"{str(path)!r}; give them different file names, or leave out --out-dir."
                )
            raise ParameterError(
                f"[{section}] {first!r} and {key!r} are the same file ({str(path)!r}); give each "
                "output its own path."
            )
        seen[resolved] = key
    for key, path in outputs.items():
        if path is not None and writable:
            check_output_path(path, _named(key, moved))


def check_data_columns(path: Path | None, names: Sequence[str], *, moved: bool = False) -> None:
    """Refuse a protected file whose format cannot hold one of the column names ``names``."""
    if path is None:
        return
    check_column_names(names, detect_format(path), _named("data", moved))


def timestamp_of(spec: Mapping[str, Any], section: str = "output") -> bool:
    """``[output] timestamp`` (default false), checked."""
    value = spec.get("timestamp", False)
    if not isinstance(value, bool):
        raise ParameterError(
            f"[{section}] 'timestamp' must be true (write the time into the reports and the "
            "file headers) or false (the default: the same seed gives the same bytes)."
        )
    return value


def input_labels(path: Path | None, format: str | None = None) -> FileMetadata | None:
    """The value and variable labels of an SPSS or Stata input file (None for other inputs)."""
    if path is None or detect_format(path, format) not in _LABELLED:
        return None
    return read_labels(path, format=format)


def carry_labels(
    frame: pl.DataFrame, metadata: FileMetadata, format: str
) -> dict[str, dict[str, Any]]:
    """The labels of an input file that a file of ``format`` written from ``frame`` can keep.

    Variable labels are kept for the columns still in ``frame``.  Value labels are kept for
    the codes still present in a column (a category merged or suppressed away loses its label;
    a new category, such as a recoding's interval, gets none), converted to the column's type
    (a code recoded to text keeps its label as text); Stata files label integer columns only.

    Parameters
    ----------
    frame : polars.DataFrame
        The data to write.
    metadata : FileMetadata
        Labels of the input (:func:`sdckit.io.read_labels`).
    format : str
        The output format (:func:`sdckit.io.detect_format`).

    Returns
    -------
    dict
        ``{"value_labels": ..., "column_labels": ...}`` for :func:`sdckit.io.write_data`
        (empty when the format holds no labels or there are none to keep).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.io import FileMetadata
    >>> meta = FileMetadata("spss", {"sex": "Sex"}, {"sex": {1: "male", 2: "female", 3: "x"}})
    >>> carry_labels(pl.DataFrame({"sex": ["1", "2"]}), meta, "spss")
    {'value_labels': {'sex': {'1': 'male', '2': 'female'}}, 'column_labels': {'sex': 'Sex'}}
    """
    if format not in _LABELLED:
        return {}
    out: dict[str, dict[str, Any]] = {}
    columns = {c: label for c, label in metadata.column_labels.items() if c in frame.columns}
    values: dict[str, dict[Any, str]] = {}
    for name, labels in metadata.value_labels.items():
        if name not in frame.columns:
            continue
        series = frame.get_column(name)
        dtype = series.dtype
        if format == "stata" and not dtype.is_integer():
            continue
        present = set(series.drop_nulls().unique().to_list())
        kept = {}
        for key, label in labels.items():
            code = _code_as(key, dtype)
            if code is not None and code in present:
                kept[code] = label
        if kept:
            values[name] = kept
    if values:
        out["value_labels"] = values
    if columns:
        out["column_labels"] = columns
    return out


def _code_as(key: Any, dtype: Any) -> Any:
    """A value-label key as a value of a column of type ``dtype`` (None if it cannot be one)."""
    whole = isinstance(key, int) or (isinstance(key, float) and key.is_integer())
    if dtype == pl.String:
        return str(int(key)) if whole and not isinstance(key, str) else str(key)
    if isinstance(key, str):  # a recoding's new code given as text ("3") in a numeric column
        try:
            key = float(key)
        except ValueError:
            return None
        whole = key.is_integer()
    if dtype.is_integer():
        return int(key) if whole else None
    if dtype.is_float():
        return float(key)
    return None


def _code_key(value: Any) -> str:
    """A code as text, to compare the codes of a mapping (TOML text) with labelled numbers."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def recoded_labels(labels: FileMetadata, steps: Sequence[Any] = ()) -> FileMetadata:
    """The value labels of ``labels`` carried through the global recodings of ``steps``.

    A code mapped to another loses its label; the code it is mapped to gets the labels of every
    code merged into it, joined by " / " (``{"4": "3"}`` labels 3 "East / West"; a new code such
    as ``"north"`` for 1 and 2 gets "North / South").  A merged code gets no label when one of
    its codes has none.  Other methods keep the meaning of the codes, so their labels.

    Parameters
    ----------
    labels : FileMetadata
        The labels of the input.
    steps : sequence of Step
        The steps of the session, in order (:attr:`sdckit.session.Session.history`); a global
        recoding lists its ``{column: {old: new}}`` tables in ``result.details["mappings"]``.
    """
    values = {c: dict(v) for c, v in labels.value_labels.items()}
    for step in steps:
        details = getattr(getattr(step, "result", None), "details", None) or {}
        for column, table in (details.get("mappings") or {}).items():
            if column not in values:
                continue
            current = {_code_key(k): (k, label) for k, label in values[column].items()}
            mapped = {_code_key(old) for old in table}
            kept = {k: v for k, v in values[column].items() if _code_key(k) not in mapped}
            targets: dict[str, tuple[Any, list[str]]] = {}
            for old, new in table.items():
                targets.setdefault(_code_key(new), (new, []))[1].append(_code_key(old))
            for key, (new, sources) in targets.items():
                own = [key] if key in current and key not in mapped else []
                codes = own + [c for c in sources if c != key or not own]
                kept = {k: v for k, v in kept.items() if _code_key(k) != key}
                if all(c in current for c in codes):
                    kept[new] = " / ".join(dict.fromkeys(current[c][1] for c in codes))
            values[column] = kept
    return FileMetadata(labels.format, labels.column_labels, values, labels.file_label)


def write_options(
    frame: pl.DataFrame,
    path: Path,
    labels: FileMetadata | None,
    timestamp: bool,
    steps: Sequence[Any] = (),
) -> dict[str, Any]:
    """The keyword arguments of :func:`sdckit.io.write_data` for the protected file: the input's
    labels that the output format can hold (carried through the recodings of ``steps``, for the
    codes still present) and the timestamp."""
    options: dict[str, Any] = {"timestamp": timestamp}
    if labels is not None:
        options.update(carry_labels(frame, recoded_labels(labels, steps), detect_format(path)))
    return options
