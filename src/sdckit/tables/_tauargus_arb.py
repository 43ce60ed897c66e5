"""tau-ARGUS batch files (``.arb``): the commands that specify tables, rules and protection.

See :func:`read_arb`; the translation into jobs is :mod:`sdckit.jobs.tauargus`.  Messages name
the file, the line and the command at fault, never a data value.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sdckit.errors import DataError
from sdckit.tables._tauargus_io import read_lines

__all__ = ["SUPPRESS_METHODS", "ArbBatch", "ArbTable", "read_arb"]


# ---------------------------------------------------------------------- .arb
@dataclass
class ArbTable:
    """One ``<SPECIFYTABLE>`` of a batch with its rules, suppression and outputs.

    ``response`` is None for a frequency table (``<freq>``); ``cost`` is a variable name, or
    ``-1`` (frequency), ``-2`` (unity), ``-3`` (distance); ``suppress`` is ``(method, args)``
    (``("GH", [1, 75])``); ``writes`` holds ``(output type, options, file)``.
    """

    explanatory: list[str]
    response: str | None
    shadow: str | None = None
    cost: str | None = None
    cost_lambda: float = 1.0
    safety_rule: str = ""
    suppress: tuple[str, list[float]] | None = None
    writes: list[tuple[int, str, str]] = field(default_factory=list)
    line: int = 0
    #: ``<APRIORY>`` files: (path, separator, ignore errors, line)
    apriori: list[tuple[Path, str, bool, int]] = field(default_factory=list)
    #: ``<RECODE>``: (variable, recode file or digit level, line)
    recodes: list[tuple[str, str, int]] = field(default_factory=list)
    #: what follows ``CKM(t)`` in ``<SUPPRESS>``: the ptable file(s)
    suppress_files: str = ""


@dataclass
class ArbBatch:
    """The commands of a tau-ARGUS batch file that sdckit translates."""

    path: Path
    microdata: Path | None = None
    metadata: Path | None = None
    tables: list[ArbTable] = field(default_factory=list)
    #: ``<OPENTABLEDATA>``: a table given by its cells (instead of microdata)
    tabular: Path | None = None
    #: ``<READTABLE>``'s parameter: 0 totals read and checked, 1 totals computed
    read_table: int | None = None
    #: ``<READTABLE> 1T``: the statuses given for totals are kept
    keep_status: bool = False


_SUPPORTED = (
    "<OPENMICRODATA>",
    "<OPENTABLEDATA>",
    "<OPENMETADATA>",
    "<SPECIFYTABLE>",
    "<SAFETYRULE>",
    "<READMICRODATA>",
    "<READTABLE>",
    "<APRIORY>",
    "<APRIORI>",
    "<RECODE>",
    "<SUPPRESS>",
    "<WRITETABLE>",
)
_IGNORED = ("<LOGBOOK>", "<SOLVER>", "<GOINTERACTIVE>", "<VERSIONINFO>")
#: ``<SUPPRESS>`` methods: secondary suppression, controlled rounding, the cell key method
SUPPRESS_METHODS = ("GH", "MOD", "OPT", "RND", "CKM")


def _strip_comment(line: str) -> str:
    quoted = False
    for k, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", k):
            return line[:k]
    return line


def _commands(lines: list[str]) -> list[tuple[int, str, str]]:
    """``(line, COMMAND, argument)``; lines without a command continue the previous one."""
    out: list[tuple[int, str, str]] = []
    for n, raw in enumerate(lines, start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        m = re.match(r"^(<[A-Za-z]+>)\s*(.*)$", line)
        if m:
            out.append((n, m.group(1).upper(), m.group(2).strip()))
        elif out:
            n0, cmd, arg = out[-1]
            out[-1] = (n0, cmd, (arg + line).strip())
        else:
            raise DataError(f"Line {n} of the batch file does not start with a <COMMAND>.")
    return out


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    return text.strip('"')


def _resolve(base: Path, name: str) -> Path:
    """A file named in a batch: relative names from the batch's folder; Windows paths kept."""
    p = Path(name.replace("\\", os.sep)) if not re.match(r"^[A-Za-z]:", name) else Path(name)
    if p.is_absolute():
        return p
    if re.match(r"^[A-Za-z]:", name):
        # a Windows drive path: look for the file by its name next to the batch file
        return base / Path(name.replace("\\", "/")).name
    return base / p


def _specify_table(arg: str, n: int, name: str) -> ArbTable:
    parts = arg.split("|")
    expl = re.findall(r'"([^"]*)"', parts[0])
    if not expl:
        expl = parts[0].split()
    if not expl or len(parts) < 2:
        raise DataError(
            f"Line {n} of the batch file {name!r}: <SPECIFYTABLE> needs the explanatory variables "
            'and the response ("Region""Size"|"Turnover"|...).'
        )
    response = _unquote(parts[1])
    resp = None if response.lower() in ("<freq>", "freq", "") else response
    shadow = _unquote(parts[2]) if len(parts) > 2 and _unquote(parts[2]) else None
    cost: str | None = None
    lam = 1.0
    if len(parts) > 3:
        tail = parts[3]
        if "," in tail:
            tail, lam_text = tail.split(",", 1)
            try:
                lam = float(lam_text.strip()) if lam_text.strip() else 1.0
            except ValueError:
                raise DataError(
                    f"Line {n} of the batch file {name!r}: the lambda of <SPECIFYTABLE> must be a "
                    "number."
                ) from None
        cost = _unquote(tail) or None
    if len(parts) > 4 and parts[4].strip():
        try:
            lam = float(parts[4].strip())
        except ValueError:
            raise DataError(
                f"Line {n} of the batch file {name!r}: the lambda of <SPECIFYTABLE> must be a "
                "number."
            ) from None
    return ArbTable(expl, resp, shadow, cost, lam, line=n)


def _table_number(text: str, batch: ArbBatch, where: str, cmd: str) -> int:
    tab = int(text)
    if tab < 1 or tab > len(batch.tables):
        raise DataError(
            f"{where}: {cmd} names table {tab}, but {len(batch.tables)} table(s) are specified "
            "before it."
        )
    return tab


def read_arb(path: str | os.PathLike[str]) -> ArbBatch:
    """The tables, rules, suppressions and outputs a tau-ARGUS batch file specifies.

    Raises
    ------
    DataError
        A command sdckit does not translate, or one that cannot be read (named by line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "job.arb").write_text(
    ...     '<OPENMICRODATA> "data.asc"\\n<OPENMETADATA> "data.rda"\\n'
    ...     '<SPECIFYTABLE> "Region""Size"|"Income"|"Income"|"Income"\\n'
    ...     '<SAFETYRULE> P(15,1)|FREQ(3,20)\\n<READMICRODATA>\\n<SUPPRESS> MOD(1)\\n'
    ...     '<WRITETABLE> (1,2,AS+,"out.csv")\\n')
    >>> b = read_arb(d / "job.arb")
    >>> b.tables[0].explanatory, b.tables[0].suppress, b.tables[0].writes[0][:2]
    (['Region', 'Size'], ('MOD', [1.0]), (2, 'AS+'))
    """
    p = Path(path)
    base = p.parent
    batch = ArbBatch(p)
    for n, cmd, arg in _commands(read_lines(p, "batch file")):
        where = f"Line {n} of the batch file {p.name!r}"
        if cmd in _IGNORED:
            continue
        if cmd not in _SUPPORTED:
            raise DataError(
                f"{where}: {cmd} is not supported by sdckit's translation of tau-ARGUS batches "
                f"(supported: {', '.join(_SUPPORTED)}; ignored: {', '.join(_IGNORED)})."
            )
        if cmd == "<OPENMICRODATA>":
            batch.microdata = _resolve(base, _unquote(arg))
        elif cmd == "<OPENTABLEDATA>":
            batch.tabular = _resolve(base, _unquote(arg))
        elif cmd == "<OPENMETADATA>":
            batch.metadata = _resolve(base, _unquote(arg))
        elif cmd == "<SPECIFYTABLE>":
            batch.tables.append(_specify_table(arg, n, p.name))
        elif cmd == "<SAFETYRULE>":
            if not batch.tables:
                raise DataError(f"{where}: <SAFETYRULE> comes before any <SPECIFYTABLE>.")
            batch.tables[-1].safety_rule = arg
        elif cmd == "<READMICRODATA>":
            continue
        elif cmd == "<READTABLE>":
            m = re.match(r"^([012]?)\s*([TtFf]?)$", arg.strip())
            if not m:
                raise DataError(
                    f"{where}: <READTABLE> takes 0 (totals read), 1 (totals computed) or 2, "
                    "optionally followed by T or F."
                )
            batch.read_table = int(m.group(1) or 0)
            batch.keep_status = m.group(2).upper() == "T" and batch.read_table == 1
        elif cmd in ("<APRIORY>", "<APRIORI>"):
            fields = [f.strip() for f in re.findall(r'"[^"]*"|[^,]+', arg)]
            if len(fields) < 3 or not fields[1].isdigit():
                raise DataError(
                    f'{where}: {cmd} must read "file.hst", table, "separator"[, ignore errors]'
                    "[, expand trivial levels]."
                )
            tab = _table_number(fields[1], batch, where, cmd)
            ignore = True
            if len(fields) > 3 and fields[3]:
                if fields[3] not in ("0", "1"):
                    raise DataError(f"{where}: the 'ignore errors' field of {cmd} is 0 or 1.")
                ignore = fields[3] == "1"
            if len(fields) > 4 and fields[4] == "1":
                raise DataError(
                    f"{where}: the expansion of trivial levels (last field 1) of {cmd} is not "
                    "supported; give 0."
                )
            sep = _unquote(fields[2])
            if not sep:
                raise DataError(f"{where}: {cmd} needs a separator.")
            hst = _resolve(base, _unquote(fields[0]))
            batch.tables[tab - 1].apriori.append((hst, sep, ignore, n))
        elif cmd == "<RECODE>":
            fields = [f.strip() for f in arg.split(",", 2)]
            if len(fields) != 3 or not fields[0].isdigit() or not fields[1] or not fields[2]:
                raise DataError(
                    f'{where}: <RECODE> must read table, variable, "recode file" (or a level 1-9).'
                )
            tab = _table_number(fields[0], batch, where, cmd)
            target = _unquote(fields[2])
            if not re.fullmatch(r"[1-9]", target):
                target = str(_resolve(base, target))
            batch.tables[tab - 1].recodes.append((_unquote(fields[1]), target, n))
        elif cmd == "<SUPPRESS>":
            m = re.match(r"^([A-Za-z]+)\s*\(([^()]*)\)\s*(.*)$", arg)
            if not m:
                raise DataError(f"{where}: <SUPPRESS> must read METHOD(table, ...), e.g. GH(1,75).")
            method = m.group(1).upper()
            if method not in SUPPRESS_METHODS:
                raise DataError(
                    f"{where}: the method {method} is not supported ({', '.join(SUPPRESS_METHODS)} "
                    "are)."
                )
            if m.group(3).strip() and method != "CKM":
                raise DataError(f"{where}: nothing may follow {method}(...) on the line.")
            try:
                args = [float(a) for a in m.group(2).split(",") if a.strip()]
            except ValueError:
                raise DataError(
                    f"{where}: the parameters of {method}(...) must be numbers."
                ) from None
            tab = int(args[0]) if args else 0
            if tab < 1 or tab > len(batch.tables):
                raise DataError(
                    f"{where}: {method}(...) names table {tab}, but {len(batch.tables)} table(s) "
                    "are specified before it."
                )
            if method == "RND" and len(args) < 2:
                raise DataError(f"{where}: RND(table, base, ...) needs the rounding base.")
            batch.tables[tab - 1].suppress = (method, args)
            batch.tables[tab - 1].suppress_files = m.group(3).strip()
        elif cmd == "<WRITETABLE>":
            inner = arg.strip()
            if inner.startswith("(") and inner.endswith(")"):
                inner = inner[1:-1]
            fields = [s.strip() for s in inner.split(",", 3)]
            if len(fields) != 4 or not fields[0].isdigit() or not fields[1].isdigit():
                raise DataError(
                    f'{where}: <WRITETABLE> must read (table, output type, options, "file").'
                )
            tab = int(fields[0])
            if tab < 1 or tab > len(batch.tables):
                raise DataError(f"{where}: <WRITETABLE> names a table that is not specified.")
            batch.tables[tab - 1].writes.append(
                (int(fields[1]), fields[2].upper(), _unquote(fields[3]))
            )
    return batch
