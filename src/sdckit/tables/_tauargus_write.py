"""Tables written in tau-ARGUS's output formats, and a table written as a tau-ARGUS batch.

``<WRITETABLE> (t, kind, options, "file")`` kinds, as tau-ARGUS writes them (manual 4.1,
sections 4.6 and 5.7; the layouts of libtauargus's ``WriteCSV`` and ``WriteCellRecords``):

1. **CSV file**: the table as tau-ARGUS shows it: the last spanning variable across, the one
   before it down, one block per combination of the codes of the others (a line ``Var k,code``
   names the block) followed by an empty line; the first line of a block is an empty label
   and the codes across.  A one-dimensional table is one line of codes and one of values.
2. **CSV file for a pivot table**: one line per cell: the codes, the value and (``AS+``) the
   status; the first line names the columns (the response is ``Freq`` for a frequency table).
3. **Code-value file**: as 2, without the first line unless ``FL+``.
4. **SBS format**: one line per non-empty cell: the codes (``HL+``: each followed by its level
   in the hierarchy), the value, the number of contributors and a letter: ``V`` safe, ``A``
   unsafe by the frequency rule, ``B`` unsafe by another rule (request, zero, manual, or a
   dominance rule on the largest contribution), ``C`` unsafe by a dominance rule on two or more
   largest contributions, ``F`` unsafe by a p% rule, ``D`` secondary; after ``B``, ``C``, ``F``
   the share of the largest contribution(s) in percent (two shares for a p% rule).

Symbols: a suppressed value is written ``x`` and an empty cell ``-``.  With ``AS+`` every value
is written, followed by tau-ARGUS's status number (``CellStatus``): 1 safe, 3 unsafe by a
dominance or p% rule, 4 by the request rule, 5 by the frequency rule, 6 by the zero rule,
9 stated unsafe, 10 protected, 11 secondary, 14 empty.  Options: ``AS`` add the status, ``SE``
leave out empty cells, ``FL`` names on the first line, ``QU`` codes in quotes (default on),
``HL`` hierarchical levels (SBS).  Kinds 5 (intermediate), 6 (JJ) and 7 (cell key) are refused.

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

__all__ = ["STATUS_NUMBERS", "parse_write_options", "write_tauargus_batch", "write_tauargus_table"]

#: tau-ARGUS's status number (``CellStatus``) of each sdckit status; a primary's number
#: depends on the rule that flagged it (3 when not known).
STATUS_NUMBERS = {
    CellStatus.SAFE: 1,
    CellStatus.PRIMARY: 3,
    CellStatus.SECONDARY: 11,
    CellStatus.EMPTY: 14,
    CellStatus.PROTECTED: 10,
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


def _label(code: str, quote: bool) -> str:
    code = code.replace('"', "'")  # tau-ARGUS's labels cannot hold a double quote
    return f'"{code}"' if quote else code


def _codes(table: Table, quote: bool) -> list[list[str]]:
    cols = []
    for d, h in enumerate(table.hierarchies):
        labels = [_label(c, quote) for c in h.codes]
        cols.append([labels[i] for i in table.node_index[:, d].tolist()])
    return [list(row) for row in zip(*cols, strict=True)]


def _statuses(table: Table, codes: np.ndarray | None) -> np.ndarray:
    """tau-ARGUS's status number of every cell."""
    out = np.array([STATUS_NUMBERS[CellStatus(s)] for s in table.status.tolist()], dtype=np.int64)
    if codes is not None:
        given = (table.status == CellStatus.PRIMARY) & (np.asarray(codes) > 0)
        out = np.where(given, codes, out)
    return out


def _value(table: Table, i: int, decimals: int, show: bool) -> str:
    s = table.status[i]
    if s == CellStatus.EMPTY:
        return "-"
    if not show and s in (CellStatus.PRIMARY, CellStatus.SECONDARY):
        return "x"
    return _fmt(float(table.values[i]), decimals)


def _csv_table(table: Table, decimals: int, quote: bool) -> str:
    """Kind 1: the last dimension across, the one before down, blocks for the others."""
    shape = table.shape
    labels = [[_label(c, quote) for c in h.codes] for h in table.hierarchies]
    grid = np.arange(table.n_cells).reshape(shape)
    if len(shape) == 1:
        cells = ",".join(_value(table, int(i), decimals, False) for i in grid)
        return "," + ",".join(labels[0]) + "\n," + cells
    lines: list[str] = []
    across = ",".join(labels[-1])
    for block in np.ndindex(*shape[:-2]):
        if block:  # the block's codes, as tau-ARGUS: Var k,code, Var l,code
            lines.append(", ".join(f"Var {d + 1},{labels[d][j]}" for d, j in enumerate(block)))
        lines.append("," + across)
        for r in range(shape[-2]):
            row = grid[(*block, r)]
            cells = ",".join(_value(table, int(i), decimals, False) for i in row)
            lines.append(f"{labels[-2][r]},{cells}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _sbs_tail(table: Table, i: int, status: int, n_top: int, pq: bool) -> str:
    """The SBS fields after the value: contributors, the letter, the dominance shares."""
    freq = int(table.n_contributors[i]) if table.n_contributors[i] >= 0 else 0
    letter = {1: "V", 2: "V", 10: "V", 13: "V", 5: "A", 11: "D", 12: "D", 14: "-"}.get(status, "B")
    rule = status == 3
    if rule:
        letter = "F" if pq else ("C" if n_top > 1 else "B")
    out = f",{freq},{letter}"
    if status in (3, 4, 6, 7, 8, 9):
        top = table.top[i] if table.top.shape[1] else np.zeros(2)
        top = np.r_[top, 0.0, 0.0]
        x1 = 0.0 if n_top == 0 else (top[0] if (n_top == 1 or pq) else top[0] + top[1])
        shares = [x1] + ([top[1]] if pq else [])
        v = float(table.values[i])
        out += "".join(f",{0.0 if v == 0 else 100.0 * x / v:.1f}" for x in shares)
    return out


def write_tauargus_table(
    table: Table,
    path: str | os.PathLike[str],
    kind: int,
    options: str = "",
    *,
    response: str = "Freq",
    decimals: int = 0,
    status_codes: np.ndarray | None = None,
    n_top: int | None = None,
    pq: bool = False,
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
    status_codes : numpy.ndarray, optional
        tau-ARGUS's status number of each primary
        (:meth:`~sdckit.tables.tauargus.TauArgusRule.status_codes`); default 3.
    n_top, pq : int, bool
        For the SBS letters and shares: how many largest contributions the rules use (default
        the table's) and whether a p% rule is among them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sdckit.tables import Table
    >>> t = Table.from_array(np.array([9.0, 7.0, 2.0]), {"x": ["a", "b"]}).suppress([1, 2])
    >>> p = write_tauargus_table(t, pathlib.Path(tempfile.mkdtemp()) / "t.csv", 2, "AS+")
    >>> print(p.read_text())
    "x","Freq","Status"
    "Total",9,1
    "a",7,11
    "b",2,11
    <BLANKLINE>
    """
    opts = parse_write_options(kind, options)
    quote = opts["QU"]
    if kind == 1:
        return _atomic_write(Path(path), _csv_table(table, decimals, quote))
    q = '"' if quote else ""
    statuses = _statuses(table, status_codes)
    top_n = table.top.shape[1] if n_top is None else n_top
    show = opts["AS"] or kind == 4
    lines: list[str] = []
    if kind == 2 or (kind == 3 and opts["FL"]):
        names = [f"{q}{d}{q}" for d in table.dimensions] + [f"{q}{response}{q}"]
        if opts["AS"]:
            names.append(f"{q}Status{q}")
        lines.append(",".join(names))
    # levels as tau-ARGUS counts them: 0 for the total and for every code of a flat variable
    depth = [
        np.zeros(table.n_cells, dtype=np.int64) if _flat(h) else h.depth[table.node_index[:, d]]
        for d, h in enumerate(table.hierarchies)
    ]
    codes = _codes(table, quote)
    empty_freq = table.n_contributors == 0
    if np.all(table.n_contributors < 0):  # contributors unknown: the empty cells
        empty_freq = table.status == CellStatus.EMPTY
    for i in range(table.n_cells):
        if (opts["SE"] or kind == 4) and empty_freq[i]:
            continue
        fields = []
        for d in range(len(table.dimensions)):
            fields.append(codes[i][d])
            if kind == 4 and opts["HL"]:
                fields.append(str(int(depth[d][i])))
        line = ",".join(fields) + "," + _value(table, i, decimals, show)
        if kind == 4:
            line += _sbs_tail(table, i, int(statuses[i]), top_n, pq)
        elif opts["AS"]:
            line += f",{statuses[i]}"
        lines.append(line)
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
    # tau-ARGUS reads a table given by its cells with a numeric response only: a frequency
    # table's counts are written twice, as the response and as the frequency
    count = table.kind == "count"
    rda += [f'"{response}"', "  <NUMERIC>", f"  <DECIMALS> {0 if count else decimals}"]
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
        if count:
            row += [str(round(table.values[i]))] * 2
        else:
            row.append(repr(float(table.values[i])))
            if freq_known:
                row.append(str(int(table.n_contributors[i])))
        row += [repr(float(x)) for x in table.top[i]]
        if cost_array is not None:
            row.append(repr(float(cost_array[i])))
        row += [letter, repr(float(table.lower[i])), repr(float(table.upper[i]))]
        rows.append(",".join(row))
    written.append(_atomic_write(out / f"{name}.rda", "\n".join(rda) + "\n"))
    written.append(_atomic_write(out / f"{name}.tab", "\n".join(rows) + "\n"))
    explanatory = "".join(f'"{d}"' for d in dims)
    cost_part = {"value": f'"{response}"', "unity": "-2", "contributors": "-1"}
    cost_text = cost_part.get(cost, '"Cost"') if isinstance(cost, str) else '"Cost"'
    response_part = f'"{response}"'
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
