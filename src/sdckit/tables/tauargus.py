"""tau-ARGUS files: hierarchies (.hrc), record descriptions (.rda), microdata (.asc), batch files.

Readers for the files a tau-ARGUS user has (formats of the tau-ARGUS 4.1 manual, chapter 5):

* :func:`read_hrc`: a hierarchy file, one code per line, each ``@`` (the lead string) in front of
  a code one level deeper; the total is not listed (it is the ``<TOTCODE>``, default
  ``"Total"``).
* :func:`read_rda`: the metadata of fixed-format (name, start position, width, missing codes)
  or free-format (``<SEPARATOR>`` on the first line; name, width, missing codes) microdata,
  with the keywords ``<RECODEABLE>`` (``<RECODABLE>``), ``<NUMERIC>``, ``<WEIGHT>``,
  ``<DECIMALS>``, ``<HIERARCHICAL>``, ``<HIERLEVELS>``, ``<HIERCODELIST>``,
  ``<HIERLEADSTRING>``, ``<TOTCODE>``, ``<RECORDKEY>`` and ``<PFILE>`` (the cell key
  method), ``<CODELIST>`` (labels, ignored), ``<DISTANCE>`` and ``<TRUNCABLE>`` (ignored);
  ``<REQUEST>`` (the request rule's codes); ``<HOLDING>`` (the holding variable: records with
  one holding code are one contributor in the holding-level rules); ``<CKM>`` (magnitudes) and
  SPSS metadata are refused.
* :func:`read_table_rda`, :func:`read_tab`, :func:`table_from_tab`: tabular input (a table's
  metadata and cells); :func:`read_hst`, :func:`apply_apriori`: a priori files;
  :func:`recode_codes`: ``<RECODE>``; :func:`write_tauargus_table`: tau-ARGUS's output formats;
  :func:`write_tauargus_batch`: a table as a batch on tabular input.
* :func:`read_asc`: the microdata the .rda describes, as a polars frame (codes as text, numeric
  variables as numbers; missing numeric codes become nulls).
* :func:`read_arb`: the commands of a batch file that specify tables, rules and protection:
  ``<OPENMICRODATA>``, ``<OPENTABLEDATA>``, ``<OPENMETADATA>``, ``<SPECIFYTABLE>``,
  ``<SAFETYRULE>``, ``<READMICRODATA>``, ``<READTABLE>``, ``<APRIORY>``, ``<RECODE>``,
  ``<SUPPRESS>`` (``GH``, ``MOD``, ``OPT``, ``RND``, ``CKM``), ``<WRITETABLE>``; ``<LOGBOOK>``,
  ``<SOLVER>``, ``<VERSIONINFO>`` and ``<GOINTERACTIVE>`` are accepted and ignored.  Other
  commands (CTA, the network method, ``<CLEAR>``) are refused with the line number.

:class:`TauArgusRule` applies a ``<SAFETYRULE>`` exactly as tau-ARGUS's library does
(``CTable::ComputeCellSafeCode`` and ``SetProtectionLevelCell``): ``NK(n, k)`` dominance,
``P(p, n)`` / ``P(p, q, n)`` prior-posterior rules with ``n`` intruders in coalition,
``FREQ(m, range)``, ``ZERO(range)``, ``MIS``, ``MAN`` and ``REQ(p1, p2, m, margin)`` (the
request rule, ``UnsafeCellPeep``).  The batch-to-job translation is
:func:`sdckit.jobs.tauargus.load_arb`.

Messages name the file, the line and the keyword at fault, never a data value.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import DataError, ParameterError
from sdckit.tables._tauargus_arb import ArbBatch, ArbTable, read_arb
from sdckit.tables._tauargus_io import find_variable, variable_keyword
from sdckit.tables._tauargus_io import read_lines as _read_lines
from sdckit.tables._tauargus_io import tokens as _tokens
from sdckit.tables._tauargus_recode import recode_codes
from sdckit.tables._tauargus_rule import TauArgusRule, parse_safety_rule
from sdckit.tables._tauargus_tab import (
    APriori,
    TabMetadata,
    TabVariable,
    apply_apriori,
    read_hst,
    read_tab,
    read_table_rda,
    table_from_tab,
)
from sdckit.tables._tauargus_write import (
    STATUS_NUMBERS,
    parse_write_options,
    write_tauargus_batch,
    write_tauargus_table,
)
from sdckit.tables.hierarchy import Hierarchy

__all__ = [
    "STATUS_NUMBERS",
    "APriori",
    "ArbBatch",
    "ArbTable",
    "RdaMetadata",
    "RdaVariable",
    "TabMetadata",
    "TabVariable",
    "TauArgusRule",
    "apply_apriori",
    "parse_safety_rule",
    "parse_write_options",
    "read_arb",
    "read_asc",
    "read_hrc",
    "read_hst",
    "read_rda",
    "read_tab",
    "read_table_rda",
    "recode_codes",
    "table_from_tab",
    "write_tauargus_batch",
    "write_tauargus_table",
]


# ---------------------------------------------------------------------- .hrc
def read_hrc(path: str | os.PathLike[str], *, lead: str = "@", total: str = "Total") -> Hierarchy:
    """A hierarchy from a tau-ARGUS ``.hrc`` file.

    Parameters
    ----------
    path : path
    lead : str, default "@"
        The ``<HIERLEADSTRING>``: each repetition in front of a code puts it one level deeper.
    total : str, default "Total"
        The code of the total (``<TOTCODE>``), which the file does not list.

    Codes are read without surrounding spaces (fixed-format files pad codes such as ``" 1"``).

    Raises
    ------
    DataError
        A code more than one level deeper than the line before it, a code listed twice, or
        an empty file (named by file and line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "region.hrc"
    >>> _ = p.write_text("North\\n@N1\\n@N2\\nSouth\\n@S1\\n")
    >>> read_hrc(p).codes
    ('Total', 'North', 'N1', 'N2', 'South', 'S1')
    """
    p = Path(path)
    if not lead:
        raise ParameterError("The 'lead' string of a hierarchy file must not be empty.")
    tree: dict[str, list[str]] = {str(total): []}
    stack: list[str] = [str(total)]
    seen: set[str] = {str(total)}
    for n, raw in enumerate(_read_lines(p, "hierarchy file"), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        depth = 0
        while line.startswith(lead, depth * len(lead)):
            depth += 1
        code = line[depth * len(lead) :].strip()
        if not code:
            raise DataError(f"Line {n} of the hierarchy file {p.name!r} has no code.")
        if depth + 1 > len(stack):
            raise DataError(
                f"Line {n} of the hierarchy file {p.name!r} is more than one level deeper than "
                f"the line before it; each code may have at most one more {lead!r} than the code "
                "above it."
            )
        if code in seen:
            raise DataError(
                f"Line {n} of the hierarchy file {p.name!r} lists a code a second time; every "
                "code must appear once."
            )
        seen.add(code)
        del stack[depth + 1 :]
        tree.setdefault(stack[depth], []).append(code)
        stack.append(code)
        tree.setdefault(code, [])
    if not tree[str(total)]:
        raise DataError(f"The hierarchy file {p.name!r} lists no code.")
    return Hierarchy.from_dict({k: v for k, v in tree.items() if v})


# ---------------------------------------------------------------------- .rda
@dataclass
class RdaVariable:
    """One variable of a record description (``.rda``).

    ``start`` is the 1-based position in a fixed-format record (None for free format);
    ``line`` the line of the .rda where the variable is declared.
    """

    name: str
    width: int
    start: int | None = None
    missing: tuple[str, ...] = ()
    recodeable: bool = False
    numeric: bool = False
    weight: bool = False
    holding: bool = False
    decimals: int = 0
    hierarchical: bool = False
    hierlevels: tuple[int, ...] = ()
    hiercodelist: str | None = None
    leadstring: str = "@"
    totcode: str = "Total"
    line: int = 0
    recordkey: bool = False
    pfile: str | None = None
    #: ``<REQUEST>``: the codes of a record asking for protection (first, second)
    request: tuple[str, ...] = ()


@dataclass
class RdaMetadata:
    """A record description: the separator (None: fixed format) and the variables."""

    path: Path
    separator: str | None
    variables: list[RdaVariable] = field(default_factory=list)

    def variable(self, name: str, where: str = "") -> RdaVariable:
        """The variable called ``name`` (case-insensitive, as tau-ARGUS)."""
        return find_variable(self.variables, name, self.path, where)

    @property
    def weight(self) -> RdaVariable | None:
        """The ``<WEIGHT>`` variable, if any."""
        return next((v for v in self.variables if v.weight), None)

    @property
    def holding(self) -> RdaVariable | None:
        """The ``<HOLDING>`` variable (enterprise group), if any."""
        return next((v for v in self.variables if v.holding), None)


_IGNORED_KEYWORDS = {"<CODELIST>", "<DISTANCE>", "<TRUNCABLE>"}
_REFUSED_KEYWORDS = {
    "<SPSS>": "SPSS system files",
    "<CKM>": "the cell key method",
}


def read_rda(path: str | os.PathLike[str]) -> RdaMetadata:
    """The record description of tau-ARGUS microdata (``.rda``; see the module doc).

    Raises
    ------
    DataError
        A line that cannot be read (named by file, line and keyword).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.rda"
    >>> _ = p.write_text("Region 1 2 99\\n  <RECODEABLE>\\n  <TOTCODE> All\\nIncome 3 6\\n"
    ...                  "  <NUMERIC>\\n  <DECIMALS> 1\\n")
    >>> meta = read_rda(p)
    >>> [(v.name, v.start, v.width, v.recodeable, v.numeric) for v in meta.variables]
    [('Region', 1, 2, True, False), ('Income', 3, 6, False, True)]
    >>> meta.variables[0].missing, meta.variables[0].totcode
    (('99',), 'All')
    """
    p = Path(path)
    lines = _read_lines(p, "metadata file")
    meta = RdaMetadata(p, None)
    current: RdaVariable | None = None
    first = True
    for n, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        toks = _tokens(line)
        key = toks[0].upper() if toks[0].startswith("<") else None
        if first:
            first = False
            if key == "<SEPARATOR>":
                if len(toks) < 2:
                    raise DataError(f"Line {n} of {p.name!r}: <SEPARATOR> needs a character.")
                meta.separator = toks[1]
                continue
        if key is None:
            fixed = meta.separator is None
            need = 3 if fixed else 2
            nums = toks[1:need]
            if len(toks) < need or not all(t.isdigit() for t in nums):
                layout = "name, start position and width" if fixed else "name and width"
                raise DataError(
                    f"Line {n} of the metadata file {p.name!r} declares a variable without its "
                    f"{layout} (as whole numbers)."
                )
            current = RdaVariable(
                name=toks[0],
                start=int(toks[1]) if fixed else None,
                width=int(toks[need - 1]),
                missing=tuple(t for t in toks[need : need + 2] if t != ""),
                line=n,
            )
            meta.variables.append(current)
            continue
        if key in _REFUSED_KEYWORDS:
            raise DataError(
                f"Line {n} of the metadata file {p.name!r}: {key} ({_REFUSED_KEYWORDS[key]}) is "
                "not supported by sdckit's reader of tau-ARGUS files."
            )
        if current is None:
            raise DataError(
                f"Line {n} of the metadata file {p.name!r}: {key} comes before any variable; "
                "declare the variable first."
            )
        args = toks[1:]
        if variable_keyword(current, key, args, f"Line {n} of {p.name!r}"):
            continue
        if key in ("<RECODEABLE>", "<RECODABLE>"):
            current.recodeable = True
        elif key == "<NUMERIC>":
            current.numeric = True
        elif key == "<WEIGHT>":
            current.weight = True
            current.numeric = True
        elif key == "<HOLDING>":
            current.holding = True
        elif key == "<HIERLEVELS>":
            if not args or not all(a.isdigit() for a in args):
                raise DataError(f"Line {n} of {p.name!r}: <HIERLEVELS> needs whole numbers.")
            levels = tuple(int(a) for a in args)
            if sum(levels) != current.width:
                raise DataError(
                    f"Line {n} of the metadata file {p.name!r}: the <HIERLEVELS> of "
                    f"{current.name!r} must add up to its width ({current.width})."
                )
            current.hierlevels = levels
            current.hierarchical = True
        elif key == "<REQUEST>":
            if not args:
                raise DataError(f"Line {n} of {p.name!r}: <REQUEST> needs one or two codes.")
            current.request = tuple(args[:2])
        elif key == "<RECORDKEY>":
            current.recordkey = True
            current.numeric = True
        elif key in ("<PFILE>", "<PFILE_FREQ>"):
            if not args:
                raise DataError(f"Line {n} of {p.name!r}: {key} needs a file name.")
            current.pfile = args[0]
        elif key in _IGNORED_KEYWORDS:
            continue
        else:
            raise DataError(
                f"Line {n} of the metadata file {p.name!r}: the keyword {key} is not one sdckit "
                "reads (RECODEABLE, NUMERIC, WEIGHT, DECIMALS, HIERARCHICAL, HIERLEVELS, "
                "HIERCODELIST, HIERLEADSTRING, TOTCODE, CODELIST, DISTANCE)."
            )
    if not meta.variables:
        raise DataError(f"The metadata file {p.name!r} describes no variable.")
    return meta


# ---------------------------------------------------------------------- .asc
def read_asc(
    path: str | os.PathLike[str], metadata: RdaMetadata, *, columns: Sequence[str] | None = None
) -> pl.DataFrame:
    """The microdata an .rda describes: codes as text (stripped), numbers as floats.

    A numeric field equal to one of the variable's missing codes is null.

    Raises
    ------
    DataError
        A record too short for a fixed-format field, with too few fields, or with a numeric
        field that is not a number (named by file, line and variable).
    """
    p = Path(path)
    wanted = [metadata.variable(c) for c in columns] if columns else list(metadata.variables)
    lines = [ln for ln in _read_lines(p, "microdata file") if ln.strip()]
    if not lines:
        raise DataError(f"The microdata file {p.name!r} has no records.")
    sep = metadata.separator
    out: dict[str, list[Any]] = {v.name: [] for v in wanted}
    if sep is None:
        for v in wanted:
            if v.start is None or v.start < 1:
                raise DataError(f"The variable {v.name!r} has no start position in the .rda.")
        for n, line in enumerate(lines, start=1):
            for v in wanted:
                a = int(v.start) - 1  # type: ignore[arg-type]
                if len(line) < a + 1:
                    raise DataError(
                        f"Record {n} of {p.name!r} is too short for the variable {v.name!r} "
                        f"(positions {a + 1} to {a + v.width}); check the .rda layout."
                    )
                out[v.name].append(line[a : a + v.width])
    else:
        index = {v.name: metadata.variables.index(v) for v in wanted}
        need = max(index.values()) + 1
        for n, line in enumerate(lines, start=1):
            fields = line.split(sep)
            if len(fields) < need:
                raise DataError(
                    f"Record {n} of {p.name!r} has {len(fields)} fields; the metadata file "
                    f"describes at least {need}."
                )
            for v in wanted:
                out[v.name].append(fields[index[v.name]])
    series = []
    for v in wanted:
        raw = [s.strip().strip('"') for s in out[v.name]]
        if v.numeric and not v.recodeable:
            missing = {m.strip() for m in v.missing}
            values: list[float | None] = []
            for n, s in enumerate(raw, start=1):
                if s in missing or s == "":
                    values.append(None)
                    continue
                try:
                    values.append(float(s))
                except ValueError:
                    raise DataError(
                        f"Record {n} of {p.name!r}: the numeric variable {v.name!r} holds "
                        "something that is not a number; correct the record or the .rda."
                    ) from None
            series.append(pl.Series(v.name, values, dtype=pl.Float64))
        else:
            series.append(pl.Series(v.name, raw, dtype=pl.String))
    return pl.DataFrame(series)
