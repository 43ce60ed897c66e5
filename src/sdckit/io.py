"""Read and write microdata files: CSV, Parquet, SPSS, Stata and SAS, with atomic writes.

The format follows the file extension (or the ``format`` argument):

========== ======================== ==========================================
format     extensions               through
========== ======================== ==========================================
csv        ``.csv``                 polars (``NA`` and empty fields are missing)
parquet    ``.parquet``, ``.pq``    polars
spss       ``.sav``, ``.zsav``      pyreadstat, value and column labels kept
stata      ``.dta``                 pyreadstat, value and column labels kept
sas        ``.sas7bdat``            pyreadstat, read only (with its labels)
sas_xport  ``.xpt``                 pyreadstat (SAS transport, no value labels)
========== ======================== ==========================================

Every write goes to a temporary file in the target directory that replaces the target only once
it is complete (``os.replace``), so a failed or interrupted write never leaves a half-written
file, and an existing file is kept unchanged when writing fails.

In the statistical formats numbers are stored as doubles (Stata keeps 32-bit integers): numeric
columns written with an integer display format whose values are whole numbers are read back as
``Int64``, and an empty string in a string column is read as missing.
"""

from __future__ import annotations

import contextlib
import csv
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._frames import to_polars
from sdckit.errors import ColumnError, DataError, ParameterError, SdcError

__all__ = [
    "FORMATS",
    "FileMetadata",
    "atomic_path",
    "detect_format",
    "read_data",
    "read_data_with_labels",
    "write_data",
]

#: The formats sdckit reads and writes, and their file extensions.
FORMATS: dict[str, tuple[str, ...]] = {
    "csv": (".csv",),
    "parquet": (".parquet", ".pq"),
    "spss": (".sav", ".zsav"),
    "stata": (".dta",),
    "sas": (".sas7bdat",),
    "sas_xport": (".xpt",),
}
_READ_ONLY = frozenset({"sas"})
_LABELLED = frozenset({"spss", "stata"})
_ALIASES = {ext.lstrip("."): name for name, exts in FORMATS.items() for ext in exts}
_ALIASES.update({"sav": "spss", "dta": "stata", "sas7bdat": "sas", "xport": "sas_xport"})
_ALIASES.update({name: name for name in FORMATS})
_MAX_EXACT = 2.0**53  # doubles hold every integer up to this magnitude
_STATA_LONG = 2_147_483_620


@dataclass(frozen=True)
class FileMetadata:
    """Labels and format information read from a file.

    Attributes
    ----------
    format : str
        One of :data:`FORMATS` (``"csv"``, ``"parquet"``, ``"spss"``, ...).
    column_labels : dict of str to str
        Variable labels (only columns that have one).
    value_labels : dict of str to dict
        ``value_labels[column][value] = label`` for labelled columns (SPSS, Stata, SAS).
    file_label : str or None
        The file label, if the format has one.
    """

    format: str
    column_labels: dict[str, str] = field(default_factory=dict)
    value_labels: dict[str, dict[Any, str]] = field(default_factory=dict)
    file_label: str | None = None


def detect_format(path: str | os.PathLike[str], format: str | None = None) -> str:
    """The format name of ``path``: ``format`` if given, else from the file extension.

    Parameters
    ----------
    path : str or path-like
    format : str, optional
        A format name (``"csv"``, ``"parquet"``, ``"spss"``, ``"stata"``, ``"sas"``,
        ``"sas_xport"``) or an extension without the dot (``"sav"``, ``"dta"``, ...).

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        Unknown format or extension.

    Examples
    --------
    >>> from sdckit.io import detect_format
    >>> detect_format("survey.SAV"), detect_format("x.txt", format="csv")
    ('spss', 'csv')
    """
    if format is not None:
        if not isinstance(format, str) or format.lower().lstrip(".") not in _ALIASES:
            raise ParameterError(
                f"The 'format' parameter must be one of {', '.join(map(repr, FORMATS))}; "
                f"got {format!r}."
            )
        return _ALIASES[format.lower().lstrip(".")]
    suffix = Path(path).suffix.lower()
    for name, extensions in FORMATS.items():
        if suffix in extensions:
            return name
    known = ", ".join(ext for exts in FORMATS.values() for ext in exts)
    raise ParameterError(
        f"Cannot tell the format of {Path(path).name!r} from its extension "
        f"{suffix or '(none)'!r}; use one of {known}, or pass format=..."
    )


# ---------------------------------------------------------------------------------- reading
def read_data(path: str | os.PathLike[str], *, format: str | None = None) -> pl.DataFrame:
    """Read a microdata file into a polars DataFrame (the format from the extension).

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.parquet``/``.pq``, ``.sav``/``.zsav``, ``.dta``, ``.sas7bdat`` or
        ``.xpt`` file.
    format : str, optional
        Overrides the extension (see :func:`detect_format`).

    Returns
    -------
    polars.DataFrame
        Labelled values come back as their codes; use :func:`read_data_with_labels` to get
        the labels too.  In a CSV file an empty field is missing, and ``NA`` (as R writes it)
        is missing in a column that otherwise holds numbers; in a column of words ``NA`` is
        kept as text, because it may be a real category (treating it as missing would make it
        match any value and understate the risk).

    Raises
    ------
    ParameterError
        Unknown format.
    ColumnError
        A CSV header repeats a column name.
    DataError
        The file does not exist or cannot be read in that format.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from sdckit.io import read_data, write_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "small.csv"
    >>> write_data(pl.DataFrame({"sex": [1, 2], "age": [30, None]}), path)
    >>> read_data(path).shape
    (2, 2)
    """
    return read_data_with_labels(path, format=format)[0]


def read_data_with_labels(
    path: str | os.PathLike[str], *, format: str | None = None
) -> tuple[pl.DataFrame, FileMetadata]:
    """Read a microdata file and its column and value labels.

    Parameters
    ----------
    path : str or path-like
    format : str, optional
        Overrides the extension (see :func:`detect_format`).

    Returns
    -------
    frame : polars.DataFrame
    metadata : FileMetadata
        Column labels and value labels (empty for CSV and Parquet).

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from sdckit.io import read_data_with_labels, write_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "small.sav"
    >>> write_data(pl.DataFrame({"sex": [1, 2]}), path,
    ...            value_labels={"sex": {1: "male", 2: "female"}})
    >>> frame, meta = read_data_with_labels(path)
    >>> meta.value_labels
    {'sex': {1: 'male', 2: 'female'}}
    """
    fmt = detect_format(path, format)
    p = Path(path)
    if not p.exists():
        raise DataError(f"The file {str(p)!r} does not exist; check the path.")
    if p.is_dir():
        raise DataError(f"{str(p)!r} is a directory, not a data file.")
    try:
        if fmt == "csv":
            _check_csv_header(p)
            frame = pl.read_csv(p, infer_schema_length=None)
            return _na_as_missing_in_numbers(frame), FileMetadata(fmt)
        if fmt == "parquet":
            return pl.read_parquet(p), FileMetadata(fmt)
        return _read_statistical(p, fmt)
    except SdcError:
        raise
    except Exception as exc:
        raise DataError(
            f"Could not read {str(p)!r} as a {fmt} file ({type(exc).__name__}); check that "
            "the file is complete and of that format, or pass format=..."
        ) from None


def _na_as_missing_in_numbers(frame: pl.DataFrame) -> pl.DataFrame:
    """R writes missing values as ``NA``: a text column that holds only numbers and ``NA``
    becomes a numeric column with missing values.  A real category ``"NA"`` in a column of
    words (Namibia, not applicable) is kept as text.
    """
    fixed = []
    for name, dtype in frame.schema.items():
        if dtype != pl.String:
            continue
        s = frame.get_column(name)
        if not bool((s == "NA").any()):
            continue
        rest = s.filter(s != "NA").drop_nulls().str.strip_chars()
        parsed = rest.cast(pl.Float64, strict=False)
        if len(rest) and parsed.null_count() == 0:
            values = pl.when(s == "NA").then(None).otherwise(s).alias(name)
            as_float = pl.select(values.str.strip_chars().cast(pl.Float64)).to_series()
            whole = as_float.drop_nulls()
            if (
                len(whole)
                and bool((whole == whole.round(0)).all())
                and (not bool(rest.str.contains(r"[.eE]").any()))
            ):
                as_float = as_float.cast(pl.Int64)
            fixed.append(as_float)
        elif len(rest) == 0:
            fixed.append(pl.Series(name, [None] * len(s), dtype=pl.String))
    return frame.with_columns(fixed) if fixed else frame


def _check_csv_header(path: Path) -> None:
    """Raise ColumnError for repeated names in a CSV header (polars would rename them)."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        header = next(csv.reader(handle), [])
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise ColumnError(
            f"The file {path.name!r} has duplicate column names: "
            f"{', '.join(map(repr, repeated))}. Rename them so that every column is unique."
        )


def _read_statistical(path: Path, fmt: str) -> tuple[pl.DataFrame, FileMetadata]:
    import pyreadstat

    reader = {
        "spss": pyreadstat.read_sav,
        "stata": pyreadstat.read_dta,
        "sas": pyreadstat.read_sas7bdat,
        "sas_xport": pyreadstat.read_xport,
    }[fmt]
    frame, meta = reader(str(path), output_format="polars")
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - older pyreadstat
        frame = pl.from_pandas(frame)
    formats = dict(getattr(meta, "original_variable_types", None) or {})
    exprs = []
    for name, dtype in frame.schema.items():
        col = pl.col(name)
        if dtype == pl.String:
            exprs.append(pl.when(col == "").then(None).otherwise(col).alias(name))
        elif (
            dtype.is_float()
            and _integer_format(formats.get(name, ""), fmt)
            and _whole(frame.get_column(name))
        ):
            exprs.append(col.cast(pl.Int64))
    if exprs:
        frame = frame.with_columns(exprs)
    value_labels: dict[str, dict[Any, str]] = {}
    for name, labels in (meta.variable_value_labels or {}).items():
        integer = name in frame.columns and frame.schema[name].is_integer()
        value_labels[name] = {_label_key(k, integer): str(v) for k, v in labels.items()}
    column_labels = {
        name: label for name, label in (meta.column_names_to_labels or {}).items() if label
    }
    file_label = getattr(meta, "file_label", None) or None
    return frame, FileMetadata(fmt, column_labels, value_labels, file_label)


def _integer_format(display: str | None, fmt: str) -> bool:
    """True if a display format shows no decimals (SPSS ``F8.0``, Stata ``%12.0f``...)."""
    display = (display or "").strip().upper()
    if fmt == "spss":
        return display.startswith("F") and (display.endswith(".0") or "." not in display)
    if fmt == "stata":
        return display.endswith(".0F")
    return False


def _whole(series: pl.Series) -> bool:
    """True if every non-missing value is a whole number of exactly representable size."""
    values = series.drop_nulls().drop_nans().to_numpy()
    if len(values) == 0:
        return False
    if series.is_nan().any():
        return False
    return bool(np.all(np.abs(values) < _MAX_EXACT) and np.all(values == np.round(values)))


def _label_key(value: Any, integer: bool) -> Any:
    if integer and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# ---------------------------------------------------------------------------------- writing
@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` that replaces ``path`` only on success.

    Write the whole file to the yielded path inside the ``with`` block; when the block ends
    without an exception the temporary file is flushed to disk and renamed over ``path``
    (atomic on POSIX and Windows).  On an exception it is deleted and ``path`` is untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sdckit.io import atomic_path
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("complete")
    >>> target.read_text()
    'complete'
    """
    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        raise DataError(
            f"The directory {str(directory)!r} does not exist; create it before writing "
            f"{target.name!r}."
        )
    if target.is_dir():
        raise DataError(f"{str(target)!r} is a directory; give a file name to write.")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if target.exists():
            mode = stat.S_IMODE(target.stat().st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def write_data(
    data: Any,
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    value_labels: Mapping[str, Mapping[Any, str]] | None = None,
    column_labels: Mapping[str, str] | None = None,
) -> None:
    """Write a data frame to a file, atomically (the format from the extension).

    Parameters
    ----------
    data : DataFrame
        pandas, polars or pyarrow table.
    path : str or path-like
        Target file; an existing file is replaced only once the new one is complete.
    format : str, optional
        Overrides the extension (see :func:`detect_format`).  SAS ``.sas7bdat`` is read only.
    value_labels : dict, optional
        ``{column: {value: label}}``, for SPSS and Stata files (Stata labels integer columns
        only).
    column_labels : dict, optional
        ``{column: label}`` variable labels, for SPSS and Stata files.

    Raises
    ------
    ParameterError
        Unknown format, a read-only format, or labels for a format that cannot hold them.
    DataError
        The directory does not exist or the writer failed (nothing is left behind).

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from sdckit.io import read_data, write_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.parquet"
    >>> write_data(pl.DataFrame({"fk": [1, 2, 2]}), path)
    >>> read_data(path)["fk"].to_list()
    [1, 2, 2]
    """
    fmt = detect_format(path, format)
    if fmt in _READ_ONLY:
        raise ParameterError(
            f"{fmt.upper()} files (.sas7bdat) can be read but not written; write .sav, .dta, "
            ".xpt, .csv or .parquet instead."
        )
    if (value_labels or column_labels) and fmt not in _LABELLED:
        raise ParameterError(
            f"A {fmt} file cannot hold value or column labels; write a .sav or .dta file, or "
            "drop the value_labels/column_labels arguments."
        )
    frame, _ = to_polars(data)
    for role, mapping in (("value_labels", value_labels), ("column_labels", column_labels)):
        for name in mapping or {}:
            if name not in frame.columns:
                raise ParameterError(
                    f"The {role} argument names the column {name!r}, which is not in the data."
                )
    with atomic_path(path) as tmp:
        try:
            if fmt == "csv":
                frame.write_csv(tmp)
            elif fmt == "parquet":
                frame.write_parquet(tmp)
            else:
                compress = Path(path).suffix.lower() == ".zsav"
                _write_statistical(frame, tmp, fmt, value_labels, column_labels, compress)
        except SdcError:
            raise
        except Exception as exc:
            raise DataError(
                f"Could not write {Path(path).name!r} as a {fmt} file ({type(exc).__name__}: "
                f"{_first_line(exc)}); nothing was written."
            ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else "no details"


def _write_statistical(
    frame: pl.DataFrame,
    path: Path,
    fmt: str,
    value_labels: Mapping[str, Mapping[Any, str]] | None,
    column_labels: Mapping[str, str] | None,
    compress: bool,
) -> None:
    import pyreadstat

    columns = []
    display: dict[str, str] = {}
    for name in frame.columns:
        s = frame.get_column(name)
        if s.dtype == pl.Boolean:
            s = s.cast(pl.Int8)
        if s.dtype.is_integer():
            lo, hi = s.min(), s.max()
            if lo is not None and max(abs(int(lo)), abs(int(hi))) > 2**53:  # type: ignore[arg-type]
                raise DataError(
                    f"The column {name!r} has integers beyond 2**53, which SPSS and Stata "
                    "files store as doubles (they would be rounded); write it as text or "
                    "use Parquet."
                )
            # Stata's long type keeps its largest values for missing-value codes
            fits32 = lo is None or (int(lo) >= -_STATA_LONG and int(hi) <= _STATA_LONG)  # type: ignore[arg-type]
            if fmt == "stata" and fits32:
                s = s.cast(pl.Int32)
            else:
                s = s.cast(pl.Float64)
                width = max(len(str(lo)), len(str(hi)), 1) + 1 if lo is not None else 8
                display[name] = f"F{max(width, 8)}.0" if fmt == "spss" else f"%{width + 1}.0f"
        elif s.dtype in (pl.Categorical, pl.Enum):
            s = s.cast(pl.String)
        columns.append(s)
    out = pl.DataFrame(columns)
    labels = {k: dict(v) for k, v in (value_labels or {}).items()} or None
    col_labels = dict(column_labels) if column_labels else None
    if fmt == "spss":
        pyreadstat.write_sav(
            out,
            str(path),
            column_labels=col_labels,
            variable_value_labels=labels,
            variable_format=display or None,
            compress=compress,
        )
    elif fmt == "stata":
        pyreadstat.write_dta(
            out,
            str(path),
            column_labels=col_labels,
            variable_value_labels=labels,
            variable_format=display or None,
        )
    else:
        pyreadstat.write_xport(out, str(path), column_labels=col_labels)
