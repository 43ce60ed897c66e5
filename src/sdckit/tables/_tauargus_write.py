"""Tables written in tau-ARGUS's output formats, and a table written as a tau-ARGUS batch.

``<WRITETABLE> (t, kind, options, "file")`` kinds (tau-ARGUS manual 4.1, section 4.6 and 5.7):

1. **CSV file**: the table as tau-ARGUS shows it: the last spanning variable across, one line
   per combination of the codes of the others; the first line names those variables and the
   codes across.
2. **CSV file for a pivot table**: one line per cell: the codes, the value and (``AS+``) the
   status; the first line names the columns.
3. **Code-value file**: as 2, without the first line unless ``FL+``.
4. **SBS format**: one line per non-empty cell: the codes, the value, the number of
   contributors and the status (and with ``HL+`` the level of each code in its hierarchy).

Symbols: a suppressed value is written ``x`` and an empty cell ``-`` (tau-ARGUS's defaults),
unless the status is added (``AS+``, or the SBS format), in which case every value is written
and the status says what is published: ``S`` safe, ``U`` unsafe (primary), ``M`` secondary,
``P`` protected, ``E`` empty.  Options: ``AS`` add the status, ``SE`` leave out empty cells,
``FL`` names on the first line, ``QU`` codes in quotes (default on), ``HL`` hierarchical levels
(SBS).  Kinds 5 (intermediate), 6 (JJ) and 7 (cell key) are refused.

:func:`write_tauargus_batch` writes a table with its primaries as tau-ARGUS tabular input: the
metadata (``.rda``), the cells (``.tab``: codes, value, contributors, largest contributions,
status ``S`` / ``U`` / ``P`` with the protection levels), a hierarchy file (``.hrc``) for every
hierarchical variable and the batch (``.arb``) with the suppression method's counterpart.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.errors import DataError, ParameterError
from sdckit.tables._status import CellStatus
from sdckit.tables.table import Table

__all__ = ["STATUS_LETTERS", "parse_write_options", "write_tauargus_batch", "write_tauargus_table"]

#: The status letter of each :class:`CellStatus` in tau-ARGUS outputs.
STATUS_LETTERS = {
    CellStatus.SAFE: "S",
    CellStatus.PRIMARY: "U",
    CellStatus.SECONDARY: "M",
    CellStatus.EMPTY: "E",
    CellStatus.PROTECTED: "P",
}
_KINDS = {1: "CSV file", 2: "CSV file for a pivot table", 3: "code-value file", 4: "SBS format"}
_OPTIONS = ("AS", "SE", "FL", "QU", "HL", "SO", "AR", "HI", "TR", "AO", "AD", "AC")


def parse_write_options(kind: int, text: str, where: str = "<WRITETABLE>") -> dict[str, bool]:
    """The options of a ``<WRITETABLE>`` (``"AS+SE-"``) with tau-ARGUS's defaults.

    Examples
    --------
    >>> parse_write_options(2, "AS+")
    {'AS': True, 'SE': False, 'FL': True, 'QU': True, 'HL': False}
    """
    if kind not in _KINDS:
        raise DataError(
            f"{where}: output type {kind} is not supported (1 CSV, 2 CSV for a pivot table, "
            "3 code-value, 4 SBS are; the intermediate, JJ and cell-key files are not)."
        )
    out = {"AS": False, "SE": False, "FL": kind == 2, "QU": True, "HL": False}
    rest = text.replace(" ", "").upper()
    while rest:
        opt, sign, rest = rest[:2], rest[2:3], rest[3:]
        if opt not in _OPTIONS or sign not in ("+", "-"):
            raise DataError(
                f"{where}: the options must read like AS+SE- (AS, SE, FL, QU, HL, each with + "
                "or -)."
            )
        if opt in out:
            out[opt] = sign == "+"
    return out


def _fmt(x: float, decimals: int) -> str:
    return f"{x:.{decimals}f}"


def _atomic_write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _codes(table: Table, quote: bool) -> list[list[str]]:
    q = '"' if quote else ""
    cols = []
    for d, h in enumerate(table.hierarchies):
        codes = np.asarray(h.codes, dtype=object)[table.node_index[:, d]]
        cols.append([f"{q}{c}{q}" for c in codes])
    return [list(row) for row in zip(*cols, strict=True)]


def _cells(table: Table, decimals: int, status: bool) -> list[str]:
    """Each cell's value as written: the number, or (without the status) ``x`` / ``-``."""
    out = []
    for v, s in zip(table.values.tolist(), table.status.tolist(), strict=True):
        if not status and s in (CellStatus.PRIMARY, CellStatus.SECONDARY):
            out.append("x")
        elif not status and s == CellStatus.EMPTY:
            out.append("-")
        else:
            out.append(_fmt(v, decimals))
    return out


def write_tauargus_table(
    table: Table,
    path: str | os.PathLike[str],
    kind: int,
    options: str = "",
    *,
    response: str = "Freq",
    decimals: int = 0,
) -> Path:
    """Write ``table`` in one of tau-ARGUS's output formats (see the module doc), atomically.

    Parameters
    ----------
    table : Table
        The protected table.
    path : path
    kind : int
        1 CSV, 2 CSV for a pivot table, 3 code-value, 4 SBS.
    options : str
        ``<WRITETABLE>`` options such as ``"AS+SE+"``.
    response : str
        The name of the value column (first lines).
    decimals : int
        Decimals of the values.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sdckit.tables import Table
    >>> t = Table.from_array(np.array([9.0, 7.0, 2.0]), {"x": ["a", "b"]}).suppress([1, 2])
    >>> p = write_tauargus_table(t, pathlib.Path(tempfile.mkdtemp()) / "t.csv", 2)
    >>> print(p.read_text())
    "x","Freq"
    "Total",9
    "a",x
    "b",x
    <BLANKLINE>
    """
    opts = parse_write_options(kind, options)
    quote = opts["QU"]
    q = '"' if quote else ""
    lines: list[str] = []
    if kind == 1:
        values = _cells(table, decimals, False)
        *rows_dims, across = list(range(len(table.dimensions)))
        h_across = table.hierarchies[across]
        head = [f"{q}{table.dimensions[d]}{q}" for d in rows_dims]
        lines.append(",".join([*head, *(f"{q}{c}{q}" for c in h_across.codes)]))
        grid = np.array(values, dtype=object).reshape(-1, h_across.size)
        codes = _codes(table, quote)
        for r in range(grid.shape[0]):
            first = codes[r * h_across.size][: len(rows_dims)]
            lines.append(",".join([*first, *grid[r].tolist()]))
    else:
        add_status = opts["AS"] or kind == 4
        values = _cells(table, decimals, add_status)
        codes = _codes(table, quote)
        letters = [STATUS_LETTERS[CellStatus(s)] for s in table.status.tolist()]
        if opts["FL"] and kind != 4:
            names = [f"{q}{d}{q}" for d in table.dimensions] + [f"{q}{response}{q}"]
            if add_status:
                names.append(f"{q}Status{q}")
            lines.append(",".join(names))
        depth = [h.depth[table.node_index[:, d]] for d, h in enumerate(table.hierarchies)]
        for i in range(table.n_cells):
            empty = table.status[i] == CellStatus.EMPTY
            if empty and (opts["SE"] or kind == 4):
                continue
            row = [*codes[i], values[i]]
            if kind == 4:
                known = table.n_contributors[i] >= 0
                row.append(str(int(table.n_contributors[i])) if known else "")
            if add_status:
                row.append(letters[i])
            if kind == 4 and opts["HL"]:
                row.extend(str(int(dep[i])) for dep in depth)
            lines.append(",".join(row))
    return _atomic_write(Path(path), "\n".join(lines) + "\n")


# ---------------------------------------------------------------------- a batch from a table
def _hrc(h: Any) -> str:
    depth = h.depth
    return "".join("@" * (int(depth[i]) - 1) + h.codes[i] + "\n" for i in range(1, h.size))


def _flat(h: Any) -> bool:
    return bool(np.all(h.parent[1:] == 0))


def write_tauargus_batch(
    table: Table,
    directory: str | os.PathLike[str],
    name: str,
    *,
    suppress: str,
    response: str = "value",
    cost: str | Sequence[float] = "value",
    decimals: int = 0,
) -> list[Path]:
    """Write a table with its primaries as a tau-ARGUS batch on tabular input.

    Parameters
    ----------
    table : Table
        The table with its primaries marked (after the rules, before the suppression).
    directory : path
        Where the files go (created).
    name : str
        The stem of the files: ``name.arb``, ``name.rda``, ``name.tab``, ``<dimension>.hrc``.
    suppress : str
        The ``<SUPPRESS>`` command's method and parameters, e.g. ``"MOD(1,5,1,0,0)"``.
    response : str
        The name of the value variable.
    cost : {"value", "unity", "contributors"} or array
        The cost of each cell (an array is written as a ``<COST>`` variable).
    decimals : int

    Returns
    -------
    list of Path
        The files written (the batch first).

    The batch reads the cells with their status (no ``<SAFETYRULE>``: the primaries are the
    table's, with its protection levels), suppresses, and writes ``name_status.csv`` (pivot
    table with the status) and ``name_published.csv`` (published pivot table).
    """
    out = Path(directory)
    if not name or any(c in name for c in "\\/\"'"):
        raise ParameterError("The name of a tau-ARGUS batch must be a plain file name.")
    if np.any(~np.isfinite(table.values)):
        raise DataError("The table has missing or infinite values; it cannot be written.")
    dims = list(table.dimensions)
    if any('"' in c for h in table.hierarchies for c in h.codes) or any('"' in d for d in dims):
        raise DataError(
            "A code or dimension name holds a double quote, which tau-ARGUS files cannot quote; "
            "recode it first."
        )
    if len({d.lower() for d in [*dims, response]}) != len(dims) + 1:
        raise ParameterError("The response name clashes with a dimension; rename it.")
    k = table.top.shape[1]
    cost_array = None if isinstance(cost, str) else np.asarray(cost, dtype=float)
    rda = ['<SEPARATOR> ","']
    written: list[Path] = []
    for d, h in zip(dims, table.hierarchies, strict=True):
        rda += [f'"{d}"', "  <RECODEABLE>", f'  <TOTCODE> "{h.total}"']
        if not _flat(h):
            hrc = _atomic_write(out / f"{name}_{d}.hrc", _hrc(h))
            written.append(hrc)
            rda += ["  <HIERARCHICAL>", f'  <HIERCODELIST> "{hrc.name}"', '  <HIERLEADSTRING> "@"']
    count = table.kind == "count"
    if not count:
        rda += [f'"{response}"', "  <NUMERIC>", f"  <DECIMALS> {decimals}"]
    freq_known = count or bool(np.all(table.n_contributors >= 0))
    if freq_known:
        rda += ['"Freq"', "  <FREQUENCY>"]
    rda += [f'"Top{j + 1}"\n  <MAXSCORE>' for j in range(k)]
    if cost_array is not None:
        rda += ['"Cost"', "  <NUMERIC> <COST>"]
    rda += ['"Status"', "  <STATUS>", '"LowerPL"', "  <NUMERIC> <LOWERPL>"]
    rda += ['"UpperPL"', "  <NUMERIC> <UPPERPL>"]
    codes = _codes(table, True)
    rows = []
    for i in range(table.n_cells):
        s = table.status[i]
        if s == CellStatus.EMPTY:
            continue
        letter = {CellStatus.PRIMARY: "U", CellStatus.PROTECTED: "P"}.get(CellStatus(s), "S")
        row = list(codes[i])
        if not count:
            row.append(repr(float(table.values[i])))
        if count:
            row.append(str(round(table.values[i])))
        elif freq_known:
            row.append(str(int(table.n_contributors[i])))
        row += [repr(float(x)) for x in table.top[i]]
        if cost_array is not None:
            row.append(repr(float(cost_array[i])))
        row += [letter, repr(float(table.lower[i])), repr(float(table.upper[i]))]
        rows.append(",".join(row))
    written.append(_atomic_write(out / f"{name}.rda", "\n".join(rda) + "\n"))
    written.append(_atomic_write(out / f"{name}.tab", "\n".join(rows) + "\n"))
    explanatory = "".join(f'"{d}"' for d in dims)
    cost_part = {"value": "" if count else f'"{response}"', "unity": "-2", "contributors": "-1"}
    cost_text = cost_part.get(cost, '"Cost"') if isinstance(cost, str) else '"Cost"'
    response_part = "<freq>" if count else f'"{response}"'

    arb = [
        f"// {name}: written by sdckit (table with its primaries; tau-ARGUS tabular input)",
        f'<OPENTABLEDATA> "{name}.tab"',
        f'<OPENMETADATA> "{name}.rda"',
        f"<SPECIFYTABLE> {explanatory}|{response_part}||{cost_text}",
        "<READTABLE> 0",
        f"<SUPPRESS> {suppress}",
        f'<WRITETABLE> (1,2,AS+,"{name}_status.csv")',
        f'<WRITETABLE> (1,2,AS-,"{name}_published.csv")',
    ]
    written.insert(0, _atomic_write(out / f"{name}.arb", "\n".join(arb) + "\n"))
    return written
