"""Read and write microdata files: CSV, Parquet, SPSS, Stata and SAS, with atomic writes.

The format follows the file extension (or the ``format`` argument):

========== ======================== ==========================================
format     extensions               through
========== ======================== ==========================================
csv        ``.csv``                 polars (empty fields and ``NA`` are missing)
parquet    ``.parquet``, ``.pq``    polars
spss       ``.sav``, ``.zsav``      pyreadstat, value and column labels kept
stata      ``.dta``                 pyreadstat, value and column labels kept
sas        ``.sas7bdat``            pyreadstat, read only (with its labels)
sas_xport  ``.xpt``                 pyreadstat (SAS transport, no value labels)
========== ======================== ==========================================

Every write goes to a temporary file in the target directory that replaces the target only once
it is complete (:func:`atomic_path`: fsync, then ``os.replace``), so a failed or interrupted write
never leaves a half-written file, and an existing file is kept unchanged when writing fails; the
temporary files a killed process left behind are removed by the next write of the same target.
The same data give the same bytes: the time of writing that SPSS, Stata and SAS transport files
keep in their header is fixed to 1 January 1970 unless ``timestamp=True``.

A CSV file is checked before it is read: the header must name distinct columns, every row must
have as many fields as the header, quotes must be closed and the text must be UTF-8; otherwise a
:class:`~sdckit.errors.DataError` names the line and the fix (never a value of the file).  One
missing-value rule holds for every column: empty fields and the ``na_values`` (by default
:data:`DEFAULT_NA_VALUES`, ``NA``) are missing, in numeric and text columns alike.  Codes keep
every character: the ``text_columns`` (the key variables) are read as text exactly as written, and
any column in which a number is written with a leading zero (``007``) is read as text too.

In the statistical formats numbers are stored as doubles (Stata keeps 32-bit integers): numeric
columns written with an integer display format whose values are whole numbers are read back as
``Int64``, and an empty string in a string column is read as missing.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._files import atomic_path, check_column_names, check_output_path, fix_header_time
from sdckit._frames import to_polars
from sdckit.errors import ColumnError, DataError, ParameterError, SdcError

__all__ = [
    "DEFAULT_NA_VALUES",
    "FORMATS",
    "FileMetadata",
    "atomic_path",
    "check_column_names",
    "check_output_path",
    "detect_format",
    "read_data",
    "read_data_with_labels",
    "read_labels",
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
#: The values read as missing in every column of a CSV file, besides empty fields: ``NA``, as R
#: writes missing values (``write.csv``) and reads them (``read.csv``'s ``na.strings``).
DEFAULT_NA_VALUES: tuple[str, ...] = ("NA",)

#: A number written with a leading zero ("007", "-01.5"), which number inference would lose.
_LEADING_ZERO = r"^[-+]?0[0-9]"
#: The first bytes of the compressed files polars decompresses by itself.
_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
_ZLIB = (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")
#: How the files of each format begin: tells "not a file of that format" from "damaged".
_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "parquet": (b"PAR1",),
    "spss": (b"$FL2", b"$FL3"),
    "stata": (b"<stata_dta>",),
    "sas": (
        b"\x00" * 12
        + b"\xc2\xea\x81\x60\xb3\x14\x11\xcf\xbd\x92\x08\x00\x09\xc7\x31\x8c\x18\x1f\x10\x11",
    ),
    "sas_xport": (b"HEADER RECORD*******LIB",),
}
_STATA_OLD = frozenset({105, 108, 110, 111, 113, 114, 115})  # releases 105-115, binary headers
_KIND = {
    "csv": "CSV",
    "parquet": "Parquet",
    "spss": "SPSS",
    "stata": "Stata",
    "sas": "SAS",
    "sas_xport": "SAS transport",
}
_FIELD_LIMIT = 2**31 - 1  # the csv module's default limit (128 KiB a field) is too small


def read_data(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    na_values: str | Sequence[str] | None = None,
    text_columns: str | Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Read a microdata file into a polars DataFrame (the format from the extension).

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.parquet``/``.pq``, ``.sav``/``.zsav``, ``.dta``, ``.sas7bdat`` or
        ``.xpt`` file.
    format : str, optional
        Overrides the extension (see :func:`detect_format`).
    na_values : str or list of str, optional
        CSV only: the fields read as missing, in every column alike (numbers and text), in
        addition to empty fields (``,,`` and ``""``), which are always missing.  The default is
        :data:`DEFAULT_NA_VALUES`, ``["NA"]``: what R's ``write.csv`` writes for a missing value
        and ``read.csv`` reads as one (polars alone reads only empty fields as missing; pandas'
        longer list, with ``"N/A"``, ``"NULL"``, ``"nan"``..., is not used because such words
        can be real categories, and a category read as missing matches every value and
        understates the risk).  The fields must match exactly (case and spaces count).
        ``na_values=[]``: only empty fields are missing, ``"NA"`` is then text (or a code such
        as ``-9`` can be declared missing: ``na_values=["NA", "-9"]``).
    text_columns : str or list of str, optional
        CSV only: columns read as text exactly as written (codes such as ``007`` or ``1.0``
        keep every character; no number inference, no trimming of spaces), typically the key
        variables.  Names that are not in the file are ignored (the roles are checked where
        the data are used).
    columns : list of str, optional
        Keep only these columns, in the file's order (default: all).  A Parquet file reads
        nothing else from disk; other formats are read whole and then narrowed.  Names that
        are not in the file are ignored (the roles are checked where the data are used).

    Returns
    -------
    polars.DataFrame
        Labelled values come back as their codes; use :func:`read_data_with_labels` to get
        the labels too.

        In a CSV file the columns not in ``text_columns`` get polars' type inference over the
        whole file (integers, floats, booleans, else text), with one exception: a column in
        which a number is written with a leading zero (``007``, ``0012``, ``-01``) is read as
        text, since that is how a code is written and reading it as a number would merge
        ``01234`` with ``1234`` and write ``7`` for ``007``.  Blank lines are skipped (as R's
        ``read.csv`` does).  Parquet, SPSS, Stata and SAS files keep the types the file
        declares (``na_values`` and ``text_columns`` do not apply to them).

    Raises
    ------
    ParameterError
        Unknown format, or ``na_values``/``text_columns`` not strings.
    ColumnError
        The header repeats a column name.
    DataError
        The file does not exist, cannot be opened, is empty, is not UTF-8 text (CSV), has a
        row with fewer or more fields than the header or a quote that is never closed (CSV,
        naming the line), or is not a valid file of its format.  No message quotes a value of
        the file.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from sdckit.io import read_data, write_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "small.csv"
    >>> write_data(pl.DataFrame({"sex": [1, 2], "age": [30, None]}), path)
    >>> read_data(path).shape
    (2, 2)
    >>> _ = path.write_text("region,sex,age\\n007,1,NA\\n7,2,41\\n")
    >>> frame = read_data(path, text_columns=["sex"])
    >>> frame["region"].to_list(), frame["sex"].to_list(), frame["age"].to_list()
    (['007', '7'], ['1', '2'], [None, 41])
    """
    return read_data_with_labels(
        path, format=format, na_values=na_values, text_columns=text_columns, columns=columns
    )[0]


def read_data_with_labels(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    na_values: str | Sequence[str] | None = None,
    text_columns: str | Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, FileMetadata]:
    """Read a microdata file and its column and value labels.

    Parameters
    ----------
    path : str or path-like
    format : str, optional
        Overrides the extension (see :func:`detect_format`).
    na_values, text_columns : list of str, optional
        How a CSV file is read, as in :func:`read_data`.
    columns : list of str, optional
        The columns to keep, as in :func:`read_data`.

    Returns
    -------
    frame : polars.DataFrame
    metadata : FileMetadata
        Column labels and value labels (empty for CSV and Parquet).

    Raises
    ------
    ParameterError, ColumnError, DataError
        As :func:`read_data`.

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
    missing = _strings(DEFAULT_NA_VALUES if na_values is None else na_values, "na_values")
    text = _strings(() if text_columns is None else text_columns, "text_columns")
    wanted = None if columns is None else _strings(columns, "columns")
    p = Path(path)
    head = _first_bytes(p)
    try:
        if fmt == "parquet":
            return _read_parquet(p, wanted), FileMetadata(fmt)
        if fmt == "csv":
            frame, meta = _read_csv(p, head, missing, text), FileMetadata(fmt)
        else:
            frame, meta = _read_statistical(p, fmt)
        return _keep_columns(frame, meta, wanted)
    except SdcError:
        raise
    except MemoryError:
        raise DataError(
            f"The file {p.name!r} is too large to read into memory; use a machine with more "
            "memory or read a subset of its columns or rows."
        ) from None
    except OSError as exc:
        raise DataError(_os_message(p, exc)) from None
    except Exception as exc:  # polars, pyarrow and pyreadstat errors may quote values
        raise DataError(_unreadable_message(p, fmt, head, exc)) from None


def _strings(value: Any, name: str) -> list[str]:
    """``value`` as a list of strings (a single string is one entry)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple | set | frozenset) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ParameterError(
        f"The {name!r} parameter must be a list of strings (for example ['NA']); got "
        f"{type(value).__name__}."
    )


def _first_bytes(path: Path) -> bytes:
    """The first bytes of ``path``; a DataError if it is missing, unreadable or empty."""
    if not path.exists():
        raise DataError(f"The file {str(path)!r} does not exist; check the path.")
    if path.is_dir():
        raise DataError(f"{str(path)!r} is a directory, not a data file.")
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        raise DataError(_os_message(path, exc)) from None
    if not head:
        raise DataError(
            f"The file {path.name!r} is empty (0 bytes); check that it was written or copied "
            "completely."
        )
    return head


def _os_message(path: Path, exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return (
            f"Could not open {path.name!r}: permission denied; check the file's permissions "
            "or read it as a user who may."
        )
    reason = exc.strerror or type(exc).__name__
    return f"Could not read {path.name!r}: {reason}; check the file and the disk it is on."


def _has_signature(fmt: str, head: bytes) -> bool:
    if fmt == "stata" and len(head) > 1 and head[0] in _STATA_OLD and head[1] in (1, 2):
        return True
    return any(head.startswith(sig) for sig in _SIGNATURES.get(fmt, ()))


def _unreadable_message(path: Path, fmt: str, head: bytes, exc: Exception) -> str:
    """A DataError message for a file its reader refused, without the reader's message."""
    kind = _KIND[fmt]
    start = f"Could not read {path.name!r} as a {kind} file"
    if fmt == "csv":
        return (
            f"{start} ({type(exc).__name__}); check that it is standard comma-separated text "
            "(RFC 4180, UTF-8), in which a field holding a quote is quoted and the quote doubled "
            '(""), or give its real format with format=...'
        )
    if not _has_signature(fmt, head):
        return (
            f"{start}: it does not begin like one (it may be another kind of file with the wrong "
            "extension); check the file, or give its real format with format=..."
        )
    if fmt == "parquet" and not _ends_with(path, b"PAR1"):
        return f"{start}: it is incomplete (the Parquet footer is missing); copy it again."
    return (
        f"{start} ({type(exc).__name__}): it is damaged, incomplete or uses a feature the "
        "reader does not support; export or copy it again."
    )


def _ends_with(path: Path, tail: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - len(tail), 0))
            return size >= 2 * len(tail) and handle.read() == tail
    except OSError:
        return False


def _check_unique_names(path: Path, names: Sequence[str]) -> None:
    """Raise ColumnError for repeated column names (polars would rename or refuse them)."""
    counts = Counter(names)
    repeated = sorted(name for name, n in counts.items() if n > 1)
    if repeated:
        unnamed = " (columns without a name count as '')" if "" in repeated else ""
        raise ColumnError(
            f"The file {path.name!r} has duplicate column names: "
            f"{', '.join(map(repr, repeated))}{unnamed}. Rename them so that every column is "
            "unique."
        )


def _read_parquet(path: Path, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """Read a Parquet file: every column, or only those of ``columns`` that it has."""
    try:
        if columns is None:
            return pl.read_parquet(path)
        wanted = set(columns)
        names = [name for name in pl.read_parquet_schema(path) if name in wanted]
        return pl.read_parquet(path, columns=names)
    except pl.exceptions.DuplicateError:
        import pyarrow.parquet as pq

        _check_unique_names(path, pq.read_schema(path).names)
        raise


def _keep_columns(
    frame: pl.DataFrame, meta: FileMetadata, columns: Sequence[str] | None
) -> tuple[pl.DataFrame, FileMetadata]:
    """``frame`` narrowed to the ``columns`` it has (all when None), labels narrowed alike."""
    if columns is None:
        return frame, meta
    wanted = set(columns)
    frame = frame.select([name for name in frame.columns if name in wanted])
    return frame, replace(
        meta,
        column_labels={k: v for k, v in meta.column_labels.items() if k in wanted},
        value_labels={k: v for k, v in meta.value_labels.items() if k in wanted},
    )


# ------------------------------------------------------------------------------------- CSV
@dataclass(frozen=True)
class _CsvLayout:
    """What the structural check of a CSV file found: header width, records, blank lines."""

    columns: int
    records: int
    blank: tuple[int, ...]  # the data records (0-based) that are blank lines


def _read_csv(
    path: Path, head: bytes, missing: Sequence[str], text_columns: Sequence[str]
) -> pl.DataFrame:
    layout = _check_csv(path, head)
    nulls = list(dict.fromkeys([*missing, ""]))  # "" also makes a quoted empty field missing
    raw = pl.read_csv(path, infer_schema=False, null_values=nulls, raise_if_empty=False)
    _check_shape(path, raw, layout)
    declared = set(text_columns)
    text = {
        name
        for name in raw.columns
        if name in declared or bool(raw.get_column(name).str.contains(_LEADING_ZERO).any())
    }
    inferred = [i for i, name in enumerate(raw.columns) if name not in text]
    frame = raw
    if inferred:
        typed = pl.read_csv(
            path,
            columns=inferred,
            infer_schema_length=None,
            null_values=nulls,
            raise_if_empty=False,
        )
        _check_shape(path, typed, layout, width=len(inferred))
        frame = raw.with_columns(typed.get_columns())
    if layout.blank:
        keep = np.ones(frame.height, dtype=bool)
        keep[list(layout.blank)] = False
        frame = frame.filter(pl.Series(keep))
    return frame


def _check_shape(
    path: Path, frame: pl.DataFrame, layout: _CsvLayout, width: int | None = None
) -> None:
    """polars must see the records and columns the csv module saw (a safety net)."""
    if frame.height != layout.records or frame.width != (width or layout.columns):
        raise DataError(
            f"Could not read {path.name!r} as a CSV file: its rows cannot be told apart "
            "reliably (unusual line endings or quoting); save it as standard CSV (RFC 4180) "
            "with \\n or \\r\\n line endings."
        )


@contextlib.contextmanager
def _open_csv(path: Path, head: bytes, *, text: bool = True) -> Iterator[Any]:
    """The CSV file, decompressed as polars does; as text: UTF-8, a byte-order mark dropped."""
    options: dict[str, Any] = {"encoding": "utf-8-sig", "newline": ""} if text else {}
    mode = "rt" if text else "rb"
    if head.startswith(_GZIP):
        with gzip.open(path, mode, **options) as handle:
            yield handle
    elif head[:2] in _ZLIB:
        data = io.BytesIO(zlib.decompress(path.read_bytes()))
        with io.TextIOWrapper(data, **options) if text else data as handle:
            yield handle
    else:
        with open(path, mode, **options) as handle:
            yield handle


def _check_csv(path: Path, head: bytes) -> _CsvLayout:
    """Check the structure of a CSV file; raise an SdcError naming the line for a bad one.

    The header must name distinct columns; every record must have as many fields as the header
    (a truncated row would otherwise be read with missing values, which match every value);
    quotes must be closed; the text must be UTF-8.  Blank lines are noted, to be skipped.
    """
    if head.startswith(_ZSTD):
        raise DataError(
            f"The file {path.name!r} is compressed with zstd; decompress it first (zstd -d) "
            "and read the .csv file."
        )
    name = path.name
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, _FIELD_LIMIT))
    records = 0
    blank: list[int] = []
    ragged = 0
    first_bad: tuple[int, int] | None = None  # (record, number of fields)
    try:
        with _open_csv(path, head) as handle:
            reader = csv.reader(handle, strict=True)
            try:
                header = next(reader, None)
            except csv.Error:
                raise DataError(_quote_message(name, 1)) from None
            if not header:
                raise DataError(
                    f"The first line of {name!r} is empty; it must be the header with the "
                    "column names (remove the empty lines above it)."
                )
            _check_unique_names(path, header)
            width = len(header)
            try:
                for records, row in enumerate(reader, start=1):
                    if len(row) != width:
                        if not row:
                            blank.append(records - 1)
                            continue
                        ragged += 1
                        if first_bad is None:
                            first_bad = (records - 1, len(row))
            except csv.Error:
                raise DataError(_quote_message(name, _record_line(path, head, records))) from None
    except UnicodeDecodeError:
        raise DataError(
            f"Line {_bad_utf8_line(path, head)} of {name!r} is not UTF-8 text (the file may be "
            "in Latin-1 or Windows-1252); save it as UTF-8 (for example as 'CSV UTF-8' in "
            "Excel, or with iconv -f WINDOWS-1252 -t UTF-8) and read it again."
        ) from None
    finally:
        csv.field_size_limit(limit)
    if first_bad is not None:
        record, fields = first_bad
        more = (
            f" (and {ragged - 1} more row{'s' if ragged > 2 else ''} that do not match it)"
            if ragged > 1
            else ""
        )
        fix = (
            "complete the row or remove it"
            if fields < width
            else "remove the extra fields, or put fields that contain a comma in double quotes"
        )
        raise DataError(
            f"Line {_record_line(path, head, record)} of {name!r} has {fields} field"
            f"{'s' if fields != 1 else ''} but the header has {width} columns{more}; {fix}."
        )
    return _CsvLayout(width, records, tuple(blank))


def _quote_message(name: str, line: int) -> str:
    return (
        f"Line {line} of {name!r} has a quoted field that is not closed, or text after a "
        'closing quote; close the quote, or double the quotes inside a quoted field ("").'
    )


def _record_line(path: Path, head: bytes, record: int) -> int:
    """The line (1-based) on which the data record ``record`` (0-based) begins."""
    with _open_csv(path, head) as handle:
        reader = csv.reader(handle, strict=True)
        end = 0
        try:
            next(reader)
            end = reader.line_num
            for index, _ in enumerate(reader):
                if index == record:
                    break
                end = reader.line_num
        except csv.Error:
            pass
    return end + 1


def _bad_utf8_line(path: Path, head: bytes) -> int:
    """The first line (1-based) that is not UTF-8."""
    with _open_csv(path, head, text=False) as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return 1  # pragma: no cover - only called after a decoding error


# ------------------------------------------------------------------------- SPSS, Stata, SAS


def _pyreadstat_reader(fmt: str) -> Any:
    """pyreadstat's reader of a statistical format (imported when used)."""
    import pyreadstat

    return {
        "spss": pyreadstat.read_sav,
        "stata": pyreadstat.read_dta,
        "sas": pyreadstat.read_sas7bdat,
        "sas_xport": pyreadstat.read_xport,
    }[fmt]


def _read_statistical(path: Path, fmt: str) -> tuple[pl.DataFrame, FileMetadata]:
    reader = _pyreadstat_reader(fmt)
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
def write_data(
    data: Any,
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    value_labels: Mapping[str, Mapping[Any, str]] | None = None,
    column_labels: Mapping[str, str] | None = None,
    timestamp: bool = False,
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
    timestamp : bool, default False
        Keep the time of writing in the header of an SPSS, Stata or SAS transport file.  By
        default it is 1 January 1970, 00:00, so that the same data give the same bytes.

    Raises
    ------
    ParameterError
        Unknown format, a read-only format, or labels for a format that cannot hold them.
    ColumnError
        A column name the format cannot hold (too long for SPSS, Stata or SAS transport, or
        with characters they do not allow), named with the fix.
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
    check_column_names(frame.columns, fmt, f"{_KIND[fmt]} file {Path(path).name!r}")
    with atomic_path(path) as tmp:
        try:
            if fmt == "csv":
                frame.write_csv(tmp)
            elif fmt == "parquet":
                frame.write_parquet(tmp)
            else:
                compress = Path(path).suffix.lower() == ".zsav"
                _write_statistical(frame, tmp, fmt, value_labels, column_labels, compress)
                if not timestamp:
                    fix_header_time(tmp, fmt)
        except SdcError:
            raise
        except Exception as exc:
            raise DataError(
                f"Could not write {Path(path).name!r} as a {fmt} file ({type(exc).__name__}: "
                f"{_first_line(exc)}); nothing was written."
            ) from None


def read_labels(path: str | os.PathLike[str], *, format: str | None = None) -> FileMetadata:
    """The column and value labels of a file, without reading its data.

    Parameters
    ----------
    path : str or path-like
    format : str, optional
        Overrides the extension (see :func:`detect_format`).

    Returns
    -------
    FileMetadata
        Empty for CSV and Parquet files; value labels of whole numbers have integer keys.
    """
    fmt = detect_format(path, format)
    if fmt in ("csv", "parquet"):
        return FileMetadata(fmt)
    reader = _pyreadstat_reader(fmt)
    p = Path(path)
    _first_bytes(p)
    try:
        _, meta = reader(str(p), metadataonly=True)
    except Exception as exc:  # pyreadstat errors may quote values
        raise DataError(_unreadable_message(p, fmt, _first_bytes(p), exc)) from None
    value_labels = {
        name: {_label_key(k, True): str(v) for k, v in labels.items()}
        for name, labels in (meta.variable_value_labels or {}).items()
    }
    column_labels = {n: lab for n, lab in (meta.column_names_to_labels or {}).items() if lab}
    return FileMetadata(fmt, column_labels, value_labels, getattr(meta, "file_label", None) or None)


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
