"""Writing files safely: the one atomic writer, the checks of an output before any work.

Every file sdckit writes goes through :func:`atomic_path`: the content goes to a temporary file
beside the target, named ``.<target>.sdckit-tmp-<pid>.<start>-<random>``, that is flushed to
disk and renamed over the target only when it is complete.  A process killed in the middle
(``kill -9``) leaves such a file behind; the next write of the same target removes the ones whose
process is gone (the pid and its start time in the name tell), never one that a live process is
still writing.

:func:`check_output_path` and :func:`check_column_names` are what a job checks before it runs:
that a file can be created where it should go, and that the output format can hold every column
name.  Both raise a one-line :class:`~sdckit.errors.SdcError` naming the path or the column and
the fix.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from sdckit.errors import ColumnError, DataError

__all__ = [
    "TEMP_TAG",
    "atomic_path",
    "check_column_names",
    "check_output_path",
    "leftover_temp_files",
]

#: The tag in the names of the temporary files: ``.<target>.sdckit-tmp-<pid>.<start>-<random>``
#: (``<start>``: when the process started, in clock ticks since boot, where /proc tells).
TEMP_TAG = "sdckit-tmp"
_TEMP_NAME = re.compile(rf"\.{TEMP_TAG}-(?P<pid>[0-9]+)(?:\.(?P<start>[0-9]+))?-[0-9a-f]{{8}}$")


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (None where there is none)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_time(pid: int) -> str | None:
    fields = _proc_stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def _temp_path(target: Path) -> Path:
    pid = os.getpid()
    start = _start_time(pid)
    who = f"{pid}.{start}" if start is not None else str(pid)
    return target.with_name(f".{target.name}.{TEMP_TAG}-{who}-{secrets.token_hex(4)}")


def _process_alive(pid: int, start: str | None = None) -> bool:
    """True if the process ``pid`` (started at ``start``, if known) runs: a zombie (killed but
    not yet reaped) does not, nor a new process that got the pid of a dead writer."""
    if pid == os.getpid():
        return True  # another write of this process (a thread) may be under way
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive, unless /proc says otherwise
    except OSError:  # pragma: no cover - platforms without signals to pids
        return True
    fields = _proc_stat(pid)
    if fields is None:
        return True
    if fields[0] == "Z":
        return False
    return start is None or len(fields) <= 19 or fields[19] == start


def leftover_temp_files(target: str | os.PathLike[str]) -> list[Path]:
    """The temporary files of earlier writes of ``target`` whose process is gone."""
    path = Path(target)
    prefix = f".{path.name}.{TEMP_TAG}-"
    found = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        match = _TEMP_NAME.search(entry.name)
        mine = match is not None and entry.name[: match.start()] == f".{path.name}"
        if mine and not _process_alive(int(match["pid"]), match["start"]):  # type: ignore[index]
            found.append(Path(entry.path))
    return sorted(found)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


def _fsync(path: Path, *, contents: bool = True) -> None:
    """Flush ``path`` to disk (for a directory with ``contents``, every file in it too)."""
    paths = [path]
    if path.is_dir() and contents:
        paths = [Path(root) / name for root, _, names in os.walk(path) for name in names]
        paths += [Path(root) for root, _, _ in os.walk(path)]
    for p in paths:
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if p.is_dir() else os.O_RDONLY
        try:
            fd = os.open(p, flags)
        except OSError:  # pragma: no cover - directories cannot be opened on Windows
            continue
        try:
            os.fsync(fd)
        except OSError:  # pragma: no cover - file systems without fsync of directories
            pass
        finally:
            os.close(fd)


def _failure(target: Path, exc: OSError) -> DataError:
    reason = exc.strerror or type(exc).__name__
    return DataError(
        f"Could not write {target.name!r} in {str(target.parent)!r} ({reason}); nothing was "
        "written: choose a folder you may write to, with enough free space."
    )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` that replaces ``path`` only on success.

    Write the whole file to the yielded path inside the ``with`` block; when the block ends
    without an exception the temporary file is flushed to disk (``fsync``) and renamed over
    ``path`` (atomic on POSIX and Windows), and the folder is flushed too.  On an exception it
    is deleted and ``path`` is untouched.  A new file gets the usual permissions of a new file
    (``0o666`` less the umask); a file replaced keeps its permissions.  Temporary files of
    earlier writes of ``path`` whose process is gone (killed during a write) are removed first.

    Parameters
    ----------
    path : str or path-like
        The file to write.  Its folder must exist.
    directory : bool, default False
        The target is a folder (a Parquet data set written by Dask or Spark): the yielded path
        does not exist yet and the writer creates it.

    Raises
    ------
    DataError
        The folder does not exist, ``path`` is a folder (for a file), or the file cannot be
        written (no permission, no space): nothing is written, and the message says so.

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
    folder = target.parent
    if not folder.is_dir():
        raise DataError(
            f"The directory {str(folder)!r} does not exist (or is a file); create it before "
            f"writing {target.name!r}."
        )
    if target.is_dir() and not directory:
        raise DataError(f"{str(target)!r} is a directory; give a file name to write.")
    for old in leftover_temp_files(target):
        _remove(old)
    tmp = _temp_path(target)
    mode = None
    try:
        if not directory:
            # created with 0666 so that the umask tells the usual permissions of a new file
            # (given to it at the rename), then private while the data is written: a temporary
            # file (or one left by a killed writer) is never readable by other users
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            mode = stat.S_IMODE(tmp.stat().st_mode)
            os.chmod(tmp, 0o600)
    except OSError as exc:
        raise _failure(target, exc) from None
    try:
        yield tmp
        if target.exists() and not target.is_dir():
            mode = stat.S_IMODE(target.stat().st_mode)
        _fsync(tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
        _fsync(folder, contents=False)  # the rename itself
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError):
            raise _failure(target, exc) from None
        raise


def check_output_path(path: str | os.PathLike[str], what: str) -> None:
    """Check, before any work, that the file ``path`` can be written; create nothing.

    The nearest existing folder on the way to ``path`` must be a folder (not a file) in which
    a file can really be created: a probe file is created and removed, since permissions alone
    do not tell (root writes to a read-only folder; ``/proc`` refuses everyone).

    Parameters
    ----------
    path : str or path-like
        The output file.
    what : str
        How messages name the output (``"[output] 'data'"``).

    Raises
    ------
    DataError
        ``path`` is a folder, lies under a file, or its folder cannot be written or created.
    """
    target = Path(path)
    if target.is_dir():
        raise DataError(f"The {what} {str(target)!r} is a folder; give a file name.")
    existing = target.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise DataError(
            f"The {what} {str(target)!r} cannot be written: {str(existing)!r} is a file, not a "
            "folder; choose another path."
        )
    # named as a temporary file of the target: one left by a killed check goes with the next write
    probe = _temp_path(existing / target.name)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DataError(
            f"The {what} {str(target)!r} cannot be written: no file can be created in "
            f"{str(existing)!r} ({reason}); choose a folder you may write to."
        ) from None
    os.close(fd)
    os.unlink(probe)


#: Column-name rules of the statistical formats: (limit, unit, the words of the format).
_NAME_LIMITS = {
    "spss": (64, "bytes", "SPSS (.sav)"),
    "stata": (32, "characters", "Stata (.dta)"),
    "sas_xport": (32, "characters", "SAS transport (.xpt, version 8)"),
}


def _name_problem(name: str, fmt: str) -> str | None:
    """Why ``name`` cannot be a variable name of ``fmt`` (None if it can, as far as we know)."""
    limit, unit, kind = _NAME_LIMITS[fmt]
    size = len(name.encode("utf-8")) if unit == "bytes" else len(name)
    if size > limit:
        return f"it has {size} {unit}; {kind} names have at most {limit} {unit}"
    if not name or not (name[0].isalpha() or name[0] == "_") or (fmt == "spss" and name[0] == "_"):
        start = "a letter" if fmt == "spss" else "a letter or _"
        return f"{kind} names must start with {start}"
    if any(c.isspace() for c in name):
        return f"{kind} names cannot contain spaces"
    return None


def check_column_names(names: Sequence[str], fmt: str, what: str) -> None:
    """Check that a file of format ``fmt`` can hold every column name of ``names``.

    The rules are those of the writer (pyreadstat, ReadStat): SPSS names have at most 64 bytes
    (UTF-8), Stata names 32 characters, SAS transport names 32 ASCII characters (version 8, what
    sdckit writes); the writer itself is asked about every name, so that no rule is missed.
    CSV and Parquet hold any name.

    Parameters
    ----------
    names : list of str
    fmt : str
        A format name of :data:`sdckit.io.FORMATS`.
    what : str
        How messages name the output (``"[output] 'data'"``).

    Raises
    ------
    ColumnError
        Naming the first column the format cannot hold, and the fix.
    """
    if fmt not in _NAME_LIMITS:
        return
    problems = {name: _name_problem(name, fmt) for name in names}
    if not any(problems.values()) and _writer_refuses(list(names), fmt) is None:
        return  # one empty file with every name: the usual case costs one write
    for name in names:
        problem = problems[name] or _writer_refuses([name], fmt)
        if problem is not None:
            raise ColumnError(
                f"The column {name!r} cannot be written to the {what} ({problem}); rename it "
                "in the input file, leave it out ([output] drop), or write a .parquet or "
                ".csv file."
            )


def _writer_refuses(names: list[str], fmt: str) -> str | None:
    """Ask pyreadstat to write an empty file with the columns ``names``: why not, if refused."""
    import polars as pl
    import pyreadstat

    writer = {
        "spss": pyreadstat.write_sav,
        "stata": pyreadstat.write_dta,
        "sas_xport": pyreadstat.write_xport,
    }[fmt]
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_TAG}-names-") as folder:
        try:
            empty = pl.DataFrame({n: pl.Series([], dtype=pl.Float64) for n in names})
            writer(empty, Path(folder) / "x")
        except Exception as exc:  # pyreadstat's messages quote the name, ours quotes it once
            text = str(exc)
            for name in names:
                text = text.replace(repr(name), "it").replace(f"'{name}'", "it").strip()
            return f"{_NAME_LIMITS[fmt][2]}: {text.splitlines()[0][:120] if text else 'refused'}"
    return None


# ------------------------------------------------------------------ fixed header times
#: Where the statistical formats keep the time of writing, and the fixed time written instead
#: (1 January 1970, 00:00), so that the same data give the same bytes.
_SPSS_TIME = (92, b"01 Jan 7000:00:00")  # creation date (9 bytes) and time (8) of the header
_STATA_TIME = re.compile(rb"(<timestamp>\x11)[^<]{17}(</timestamp>)")
_XPORT_TIME = re.compile(rb"[0-9]{2}[A-Z]{3}[0-9]{2}:[0-9]{2}:[0-9]{2}:[0-9]{2}")


def fix_header_time(path: str | os.PathLike[str], fmt: str) -> None:
    """Replace the time of writing in the header of an SPSS, Stata or SAS transport file.

    pyreadstat (ReadStat) writes the current time into the header and has no option to set
    it; the header layout is fixed, so the bytes are overwritten in place with 1 January 1970,
    00:00.  Other formats are left as they are.
    """
    p = Path(path)
    if fmt == "spss":
        offset, fixed = _SPSS_TIME
        with open(p, "r+b") as handle:
            head = handle.read(4)
            if head in (b"$FL2", b"$FL3"):
                handle.seek(offset)
                handle.write(fixed)
    elif fmt == "stata":
        with open(p, "r+b") as handle:
            head = handle.read(512)
            match = _STATA_TIME.search(head)
            if match:
                handle.seek(match.end(1))
                handle.write(b"01 Jan 1970 00:00")
    elif fmt == "sas_xport":
        with open(p, "r+b") as handle:
            # the dates are in the library and member headers: the first 8 records of 80 bytes
            head = handle.read(8 * 80)
            for match in _XPORT_TIME.finditer(head):
                handle.seek(match.start())
                handle.write(b"01JAN70:00:00:00")
