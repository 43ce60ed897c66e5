"""tau-ARGUS tabular input and a priori files: table metadata (.rda), cells (.tab), .hst.

* :func:`read_table_rda`: the metadata of a table given by its cells (tau-ARGUS manual 4.1,
  section 5.3): ``<SEPARATOR>``; one variable per line (name, then up to two missing codes) and
  its keywords ``<RECODEABLE>``, ``<TOTCODE>``, ``<HIERARCHICAL>``, ``<HIERCODELIST>``,
  ``<HIERLEADSTRING>``, ``<HIERLEVELS>``, ``<NUMERIC>`` (optionally followed by ``<SHADOW>``,
  ``<COST>`` / ``<COSTVAR>``, ``<LOWERPL>``, ``<UPPERPL>``), ``<FREQUENCY>``, ``<MAXSCORE>``
  (``<TOPN>``), ``<STATUS>``, ``<DECIMALS>``; ``<CODELIST>`` and ``<DISTANCE>`` are read and
  ignored; the status codes ``<SAFE>``, ``<UNSAFE>``, ``<PROTECT>`` (default ``S``, ``U``, ``P``).
* :func:`read_tab`: the cells, one line per cell, the fields in the order of the metadata
  (a decimal comma is read when the separator is not a comma).
* :func:`table_from_tab`: the :class:`Table` of those cells, with the totals as given (their
  additivity checked) or computed from the bottom cells, and the statuses, protection levels and
  costs of the file as an :class:`APriori`.
* :func:`read_hst`: an a priori file: ``code_1 SEP ... code_d SEP type [SEP x [SEP y]]`` with
  type ``S`` (safe), ``U`` (unsafe), ``P`` (protected), ``M`` / ``ML`` (secondary), ``C`` /
  ``W`` (cost ``x``), ``PL`` (lower and upper protection levels ``x``, ``y``) or ``AB`` (a priori
  bounds ``x``, ``y``: an sdckit addition, tau-ARGUS 4.2 refuses it).

Messages name the file, the line and the keyword or field at fault, never a data value.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import DataError, ParameterError
from sdckit.tables._build import roll_up
from sdckit.tables._status import CellStatus
from sdckit.tables._tauargus_io import find_variable, read_lines, tokens, variable_keyword
from sdckit.tables.table import Table

__all__ = [
    "APriori",
    "TabMetadata",
    "TabVariable",
    "apply_apriori",
    "read_hst",
    "read_tab",
    "read_table_rda",
    "table_from_tab",
]

#: Manual statuses of an :class:`APriori` (-1: none).
SAFE, UNSAFE, PROTECTED, SECONDARY = 0, 1, 2, 3

_NUMERIC_ROLES = {
    "<SHADOW>": "shadow",
    "<COST>": "cost",
    "<COSTVAR>": "cost",
    "<LOWERPL>": "lower_level",
    "<UPPERPL>": "upper_level",
}


@dataclass
class TabVariable:
    """One variable of a table's metadata: a spanning variable (``role="code"``), the response
    (``"response"``) or a cell attribute (``"shadow"``, ``"cost"``, ``"lower_level"``,
    ``"upper_level"``, ``"frequency"``, ``"top"``, ``"status"``)."""

    name: str
    missing: tuple[str, ...] = ()
    role: str | None = None
    decimals: int = 0
    hierarchical: bool = False
    hierlevels: tuple[int, ...] = ()
    hiercodelist: str | None = None
    leadstring: str = "@"
    totcode: str = "Total"
    line: int = 0

    @property
    def width(self) -> int:
        """The code length of a ``<HIERLEVELS>`` variable (0 otherwise)."""
        return sum(self.hierlevels)

    @property
    def numeric(self) -> bool:
        """True for the response and the numeric cell attributes."""
        return self.role not in ("code", "status")

    @property
    def recodeable(self) -> bool:
        """True for a spanning variable."""
        return self.role == "code"


@dataclass
class TabMetadata:
    """The metadata of a table given by its cells."""

    path: Path
    separator: str = ","
    variables: list[TabVariable] = field(default_factory=list)
    safe: str = "S"
    unsafe: str = "U"
    protect: str = "P"

    def variable(self, name: str, where: str = "") -> TabVariable:
        """The variable called ``name`` (case-insensitive, as tau-ARGUS)."""
        return find_variable(self.variables, name, self.path, where)

    def with_role(self, role: str) -> list[TabVariable]:
        """The variables of one role, in file order."""
        return [v for v in self.variables if v.role == role]


def read_table_rda(path: str | os.PathLike[str]) -> TabMetadata:
    """The metadata (.rda) of a table given by its cells (see the module doc).

    Raises
    ------
    DataError
        A keyword sdckit does not read or a line that cannot be read (named by file and line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.rda"
    >>> _ = p.write_text('<SEPARATOR> ";"\\nSize "99"\\n <RECODEABLE>\\nTurnover\\n <NUMERIC>\\n'
    ...                  "Freq\\n <FREQUENCY>\\nTop1\\n <MAXSCORE>\\n")
    >>> meta = read_table_rda(p)
    >>> meta.separator, [(v.name, v.role) for v in meta.variables]
    (';', [('Size', 'code'), ('Turnover', 'response'), ('Freq', 'frequency'), ('Top1', 'top')])
    """
    p = Path(path)
    meta = TabMetadata(p)
    current: TabVariable | None = None
    for n, raw in enumerate(read_lines(p, "metadata file"), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        toks = tokens(line)
        where = f"Line {n} of the metadata file {p.name!r}"
        if not toks[0].startswith("<"):
            if len(toks) > 3:
                raise DataError(
                    f"{where}: a variable of a table's metadata is its name and at most two "
                    "missing codes."
                )
            current = TabVariable(toks[0], tuple(toks[1:3]), line=n)
            meta.variables.append(current)
            continue
        k = 0
        while k < len(toks):
            key, args = toks[k].upper(), toks[k + 1 :]
            k = len(toks)  # one keyword per line, except <NUMERIC> <SHADOW> and the like
            if key in ("<SEPARATOR>", "<SAFE>", "<UNSAFE>", "<PROTECT>"):
                if not args:
                    raise DataError(f"{where}: {key} needs a character.")
                attr = {"<SEPARATOR>": "separator", "<SAFE>": "safe"}.get(key, key[1:-1].lower())
                setattr(meta, attr, args[0])
                continue
            if current is None:
                raise DataError(f"{where}: {key} comes before any variable; declare it first.")
            if key in ("<RECODEABLE>", "<RECODABLE>"):
                current.role = "code"
            elif key == "<NUMERIC>":
                current.role = "response"
                if args and args[0].upper() in _NUMERIC_ROLES:
                    current.role = _NUMERIC_ROLES[args[0].upper()]
            elif key in _NUMERIC_ROLES:
                current.role = _NUMERIC_ROLES[key]
            elif key == "<FREQUENCY>":
                current.role = "frequency"
            elif key in ("<MAXSCORE>", "<TOPN>"):
                current.role = "top"
            elif key == "<STATUS>":
                current.role = "status"
            elif variable_keyword(current, key, args, where):
                continue
            elif key == "<HIERLEVELS>":
                if not args or not all(a.isdigit() for a in args):
                    raise DataError(f"{where}: <HIERLEVELS> needs whole numbers.")
                current.hierlevels = tuple(int(a) for a in args)
                current.hierarchical = True
            elif key in ("<CODELIST>", "<DISTANCE>"):
                continue
            else:
                raise DataError(
                    f"{where}: the keyword {key} is not one sdckit reads in a table's metadata "
                    "(RECODEABLE, TOTCODE, HIERARCHICAL, HIERCODELIST, HIERLEADSTRING, "
                    "HIERLEVELS, NUMERIC, SHADOW, COST, LOWERPL, UPPERPL, FREQUENCY, MAXSCORE, "
                    "STATUS, DECIMALS, SAFE, UNSAFE, PROTECT, SEPARATOR, CODELIST, DISTANCE)."
                )
    if not meta.variables:
        raise DataError(f"The metadata file {p.name!r} describes no variable.")
    for v in meta.variables:
        if v.role is None:
            raise DataError(
                f"Line {v.line} of the metadata file {p.name!r}: the variable {v.name!r} has no "
                "role; mark it <RECODEABLE>, <NUMERIC>, <FREQUENCY>, <MAXSCORE> or <STATUS>."
            )
    return meta


def _number(text: str, sep: str) -> float:
    if text == "":
        return float("nan")
    try:
        return float(text)
    except ValueError:
        if sep != "," and "," in text:  # tau-ARGUS writes the decimal separator of its locale
            return float(text.replace(".", "").replace(",", "."))
        raise


def read_tab(path: str | os.PathLike[str], metadata: TabMetadata) -> pl.DataFrame:
    """The cells of a table (.tab): codes as text (stripped), numbers as floats (empty: NaN),
    plus the column ``__line__`` (the line of each cell in the file, for messages).

    Raises
    ------
    DataError
        A line with another number of fields than the metadata describes, or a numeric field
        that is not a number (named by file, line and variable).
    """
    p = Path(path)
    sep = metadata.separator
    names = [v.name for v in metadata.variables]
    cols: dict[str, list[Any]] = {name: [] for name in names}
    where_line: list[int] = []
    lines = read_lines(p, "table file")
    for n, fields in enumerate(csv.reader(lines, delimiter=sep, quotechar='"'), start=1):
        if not fields or all(not f.strip() for f in fields):
            continue
        if len(fields) != len(names):
            raise DataError(
                f"Line {n} of the table file {p.name!r} has {len(fields)} fields; the metadata "
                f"file describes {len(names)}."
            )
        for v, text in zip(metadata.variables, fields, strict=True):
            text = text.strip()
            if v.numeric:
                try:
                    cols[v.name].append(_number(text, sep))
                except ValueError:
                    raise DataError(
                        f"Line {n} of the table file {p.name!r}: the field of {v.name!r} is not "
                        "a number."
                    ) from None
            else:
                cols[v.name].append(text)
        where_line.append(n)
    if not where_line:
        raise DataError(f"The table file {p.name!r} has no cells.")
    series = [
        pl.Series(v.name, cols[v.name], dtype=pl.Float64 if v.numeric else pl.String)
        for v in metadata.variables
    ]
    return pl.DataFrame([*series, pl.Series("__line__", where_line, dtype=pl.Int64)])


@dataclass(frozen=True, eq=False)
class APriori:
    """What a user states about the cells of a table (a priori file, status column).

    One entry per cell of the table (C order); ``status`` holds ``-1`` (nothing stated),
    ``0`` safe, ``1`` unsafe, ``2`` protected or ``3`` secondary; the other arrays hold NaN where
    nothing is stated.
    """

    status: np.ndarray
    lower_level: np.ndarray
    upper_level: np.ndarray
    cost: np.ndarray
    lower_bound: np.ndarray
    upper_bound: np.ndarray
    skipped: int = 0

    @classmethod
    def empty(cls, n: int) -> APriori:
        """Nothing stated about ``n`` cells."""
        nan = np.full(n, np.nan)
        return cls(np.full(n, -1, np.int8), nan, nan.copy(), nan.copy(), nan.copy(), nan.copy())

    def then(self, other: APriori) -> APriori:
        """These statements overridden by ``other``'s where it states something."""

        def pick(a: np.ndarray, b: np.ndarray, none: Any) -> np.ndarray:
            given = ~np.isnan(b) if none is np.nan else b != none
            return np.where(given, b, a)

        return APriori(
            pick(self.status, other.status, -1).astype(np.int8),
            pick(self.lower_level, other.lower_level, np.nan),
            pick(self.upper_level, other.upper_level, np.nan),
            pick(self.cost, other.cost, np.nan),
            pick(self.lower_bound, other.lower_bound, np.nan),
            pick(self.upper_bound, other.upper_bound, np.nan),
            self.skipped + other.skipped,
        )

    @property
    def any_cost(self) -> bool:
        """True when some cell has a cost stated."""
        return bool(np.any(~np.isnan(self.cost)))


def _positions(
    frame: pl.DataFrame, names: list[str], table_dims: list[Any], totals: list[str]
) -> np.ndarray:
    """Node index of every row's code in every dimension (-1: not a code of the hierarchy)."""
    pos = []
    for name, h, total in zip(names, table_dims, totals, strict=True):
        index = dict(h.index)
        index[total] = 0
        codes = frame.get_column(name).to_list()
        pos.append([index.get(c, -1) for c in codes])
    return np.array(pos, dtype=np.int64).T.reshape(len(frame), len(names))


def table_from_tab(
    frame: pl.DataFrame,
    metadata: TabMetadata,
    hierarchies: dict[str, Any],
    response: str | None,
    *,
    compute_totals: bool = False,
    keep_status: bool = False,
    where: str = "",
) -> tuple[Table, APriori]:
    """The table of the cells :func:`read_tab` read, and what the file states about them.

    Parameters
    ----------
    frame : polars.DataFrame
        From :func:`read_tab`.
    metadata : TabMetadata
    hierarchies : dict
        ``spanning variable -> Hierarchy`` (its total is the variable's ``<TOTCODE>``).
    response : str or None
        The response variable; None: a frequency table (the ``<FREQUENCY>`` variable's counts).
    compute_totals : bool
        Compute every total from the bottom cells (``<READTABLE> 1``) instead of reading them
        (``<READTABLE> 0``: the given totals must add up).
    keep_status : bool
        With ``compute_totals``, keep the statuses, levels and costs the file gives for
        totals (``<READTABLE> 1T``); otherwise only the bottom cells' are read.

    Returns
    -------
    (Table, APriori)
        The status column's ``<SAFE>``, ``<UNSAFE>`` and ``<PROTECT>`` codes, the
        ``<LOWERPL>`` / ``<UPPERPL>`` levels and the ``<COST>`` variable as statements.
    """
    prefix = f"{where}: " if where else ""
    names = list(hierarchies)
    hier = [hierarchies[d] for d in names]
    totals = [metadata.variable(d).totcode for d in names]
    pos = _positions(frame, names, hier, totals)
    lines = frame.get_column("__line__").to_numpy()
    bad = np.flatnonzero((pos < 0).any(axis=1))
    if bad.size:
        raise DataError(
            f"{prefix}line {int(lines[bad[0]])} of the table file has a code that is not in its "
            "variable's hierarchy (or codelist); correct the code or the hierarchy."
        )
    shape = tuple(h.size for h in hier)
    freq_vars = metadata.with_role("frequency")
    top_vars = metadata.with_role("top")
    if response is None:
        if not freq_vars:
            raise ParameterError(
                f"{prefix}a frequency table needs a <FREQUENCY> variable in the metadata file."
            )
        value = frame.get_column(freq_vars[0].name).fill_nan(0.0).to_numpy()
    else:
        resp = metadata.variable(response, where)
        if resp.role != "response":
            raise ParameterError(
                f"{prefix}the response {resp.name!r} is not a <NUMERIC> response variable."
            )
        value = frame.get_column(resp.name).to_numpy()
        if np.any(np.isnan(value)):
            first = int(lines[np.flatnonzero(np.isnan(value))[0]])
            raise DataError(f"{prefix}line {first} of the table file has no response value.")
    freq = frame.get_column(freq_vars[0].name).fill_nan(0.0).to_numpy() if freq_vars else None
    top = (
        -np.sort(-np.column_stack([frame.get_column(v.name).fill_nan(0.0).to_numpy()
                                   for v in top_vars]), axis=1)
        if top_vars
        else None
    )  # fmt: skip
    if compute_totals:
        leaf = np.ones(len(frame), dtype=bool)
        for d, h in enumerate(hier):
            leaf &= np.isin(pos[:, d], h.leaves)
        rows = np.flatnonzero(leaf)
    else:
        rows = np.arange(len(frame))
    cell = np.ravel_multi_index(tuple(pos[rows].T), shape)
    if len(np.unique(cell)) != len(cell):
        dup = np.setdiff1d(np.arange(len(cell)), np.unique(cell, return_index=True)[1])[0]
        raise DataError(
            f"{prefix}line {int(lines[rows][dup])} of the table file gives a cell a second time."
        )
    n = int(np.prod(shape))
    k = 0 if top is None else top.shape[1]
    if compute_totals:
        counts = freq[rows] if freq is not None else np.ones(len(rows))
        tops = top[rows] if top is not None else np.zeros((len(rows), 0))
        full, full_top = roll_up(cell, counts, value[rows], value[rows], tops, hier, shape, k)
        values, n_contrib = full["total"], full["count"]
        top_full = full_top if k else None
    else:
        values = np.zeros(n)
        values[cell] = value
        n_contrib = np.zeros(n)
        if freq is not None:
            n_contrib[cell] = freq
        top_full = None
        if top is not None:
            top_full = np.zeros((n, k))
            top_full[cell] = top
    # a response equal to the frequency in every cell is a frequency table (tau-ARGUS reads
    # tabular input with a numeric response only, so a frequency table is written that way)
    counts_twice = freq is not None and bool(np.array_equal(value, freq))
    table = Table.from_array(
        values.reshape(shape),
        dict(zip(names, hier, strict=True)),
        n_contributors=None if freq is None else n_contrib.reshape(shape).astype(np.int64),
        top=None if top_full is None else top_full.reshape(*shape, k),
        kind="count" if response is None or counts_twice else "magnitude",
    )
    stated = APriori.empty(n)
    if compute_totals and keep_status:  # the statements of every row, totals included
        rows = np.arange(len(frame))
        cell = np.ravel_multi_index(tuple(pos.T), shape)
    status_vars = metadata.with_role("status")
    if status_vars:
        codes = np.array(frame.get_column(status_vars[0].name).to_list(), dtype=object)[rows]
        st = np.full(len(rows), -1, dtype=np.int8)
        st[codes == metadata.safe] = SAFE
        st[codes == metadata.unsafe] = UNSAFE
        st[codes == metadata.protect] = PROTECTED
        stated.status[cell] = st
    for role, arr in (
        ("lower_level", stated.lower_level),
        ("upper_level", stated.upper_level),
        ("cost", stated.cost),
    ):
        found = metadata.with_role(role)
        if found:
            arr[cell] = frame.get_column(found[0].name).to_numpy()[rows]
    return table, stated


_TYPES = {"S": SAFE, "U": UNSAFE, "P": PROTECTED, "M": SECONDARY, "ML": SECONDARY}
_ARGS = {"S": 0, "U": 0, "P": 0, "M": 0, "ML": 0, "C": 1, "W": 1, "PL": 2, "AB": 2}


def read_hst(
    path: str | os.PathLike[str],
    table: Table,
    *,
    separator: str = ",",
    totals: Any = None,
    ignore_errors: bool = True,
) -> APriori:
    """The statements of an a priori file (``.hst``) about the cells of ``table``.

    Parameters
    ----------
    path : path
    table : Table
        The table the codes refer to (its dimensions in order).
    separator : str, default ","
    totals : sequence of str, optional
        The total code of each dimension as the file writes it (default: each hierarchy's).
    ignore_errors : bool, default True
        Skip a line whose codes are not in the table (tau-ARGUS's default; counted in
        ``skipped``); False: such a line is an error.

    Raises
    ------
    DataError
        A line with too few fields, an unknown type, a value that is not a number or a negative
        protection level (named by file and line); a code not in the table with
        ``ignore_errors=False``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> t = Table.from_array(np.array([9.0, 7.0, 2.0]), {"x": ["a", "b"]})
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.hst"
    >>> _ = p.write_text("a,u\\nb,c,5\\nTotal,p\\nzz,s\\n")
    >>> ap = read_hst(p, t)
    >>> ap.status.tolist(), ap.cost.tolist()[2], ap.skipped
    ([2, 1, -1], 5.0, 1)
    """
    p = Path(path)
    d = len(table.dimensions)
    tot = list(totals) if totals is not None else [h.total for h in table.hierarchies]
    out = APriori.empty(table.n_cells)
    skipped = 0
    lines = read_lines(p, "a priori file")
    if lines and not any(separator in ln for ln in lines if ln.strip()):
        raise DataError(
            f"The a priori file {p.name!r} has no separator {separator!r}; give the separator "
            "of the file in <APRIORY>."
        )
    for n, fields in enumerate(csv.reader(lines, delimiter=separator, quotechar='"'), start=1):
        fields = [f.strip() for f in fields]
        if not fields or not any(fields):
            continue
        where = f"Line {n} of the a priori file {p.name!r}"
        if len(fields) < d + 1:
            raise DataError(f"{where} needs {d} code(s) and a type (S, U, P, M, C, PL, AB).")
        kind = fields[d].upper()
        if kind not in _ARGS:
            raise DataError(
                f"{where}: the type must be S, U, P, M, ML, C, W, PL or AB (field {d + 1})."
            )
        need = _ARGS[kind]
        if len(fields) < d + 1 + need:
            raise DataError(f"{where}: the type {kind} needs {need} number(s) after it.")
        try:
            nums = [_number(f, separator) for f in fields[d + 1 : d + 1 + need]]
        except ValueError:
            raise DataError(f"{where}: the values after the type {kind} must be numbers.") from None
        if any(np.isnan(x) for x in nums):
            raise DataError(f"{where}: the values after the type {kind} must be numbers.")
        pos = []
        for j, h in enumerate(table.hierarchies):
            code = fields[j]
            pos.append(0 if code == tot[j] else h.index.get(code, -1))
        if min(pos) < 0:
            if ignore_errors:
                skipped += 1
                continue
            raise DataError(f"{where}: a code is not in the table (field {pos.index(-1) + 1}).")
        c = int(np.ravel_multi_index(tuple(pos), table.shape))
        if kind in _TYPES:
            out.status[c] = _TYPES[kind]
        elif kind in ("C", "W"):
            if nums[0] < 0:
                raise DataError(f"{where}: a cost must not be negative.")
            out.cost[c] = nums[0] if nums[0] > 0 else 1.0  # tau-ARGUS: a zero cost is 1
        elif kind == "PL":
            if nums[0] < 0 or nums[1] < 0:
                raise DataError(f"{where}: protection levels must not be negative.")
            out.lower_level[c], out.upper_level[c] = nums
        else:
            if nums[0] > nums[1]:
                raise DataError(f"{where}: the lower a priori bound exceeds the upper one.")
            out.lower_bound[c], out.upper_bound[c] = nums
    return replace(out, skipped=skipped)


def apply_apriori(table: Table, stated: APriori) -> Table:
    """The table with the stated protected and secondary cells and a priori bounds.

    Safe and unsafe statements and protection levels are applied by the tau-ARGUS rule (after
    its verdicts, which they override); costs by the suppression method.  A status is
    stated only for a cell that is not empty (tau-ARGUS refuses the others).
    """
    status = table.status.copy()
    open_ = status != CellStatus.EMPTY
    status[open_ & (stated.status == PROTECTED)] = CellStatus.PROTECTED
    status[open_ & (stated.status == SECONDARY)] = CellStatus.SECONDARY
    lower = np.where(np.isnan(stated.lower_bound), table.lower_bounds, stated.lower_bound)
    upper = np.where(np.isnan(stated.upper_bound), table.upper_bounds, stated.upper_bound)
    out = table.with_status(status=status)
    return replace(out, lower_bounds=lower, upper_bounds=upper)
