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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit.errors import DataError, ParameterError
from sdckit.protection import (
    Boolean,
    Instance,
    Integer,
    ListOf,
    MapOf,
    Options,
    Param,
    Real,
    TupleOf,
)
from sdckit.tables._tauargus_arb import ArbBatch, ArbTable, read_arb
from sdckit.tables._tauargus_io import find_variable, variable_keyword
from sdckit.tables._tauargus_io import read_lines as _read_lines
from sdckit.tables._tauargus_io import tokens as _tokens
from sdckit.tables._tauargus_recode import recode_codes
from sdckit.tables._tauargus_tab import SAFE as SAFE_STATED
from sdckit.tables._tauargus_tab import UNSAFE as UNSAFE_STATED
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
from sdckit.tables.rules import RuleOutcome, SensitivityRule, contributors_at
from sdckit.tables.table import CellStatus, Table

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


# ---------------------------------------------------------------------- safety rules
_RULE = re.compile(r"^\s*([A-Za-z]+)\s*\(([^()]*)\)\s*$")


def parse_safety_rule(text: str, where: str = "<SAFETYRULE>") -> dict[str, Any]:
    """The parameters of a ``<SAFETYRULE>`` (``P(15,3)|NK(3,75)|FREQ(3,20)|ZERO(10)|MIS(1)``).

    Returns the keyword arguments of :class:`TauArgusRule` (plus ``"weights"``: WGT(1), and
    ``"request"``: REQ(p1, p2, minimum frequency, margin) when given;
    ``"holding"``: the holding-level rules, tau-ARGUS's 3rd and 4th NK and P rules and 2nd FREQ
    rule, as ``dominance``, ``pq``, ``min_frequency`` and ``frequency_range``).

    Examples
    --------
    >>> parse_safety_rule("P(15,3)|FREQ(3,20)|ZERO(10)")["pq"]
    [(15.0, 100.0, 3)]
    """
    out: dict[str, Any] = {
        "dominance": [],
        "pq": [],
        "min_frequency": 0,
        "frequency_range": 0.0,
        "zero_unsafe": False,
        "zero_range": 0.0,
        "manual_range": 20.0,
        "missing_safe": False,
        "weights": False,
        "holding": {"dominance": [], "pq": [], "min_frequency": 0, "frequency_range": 0.0},
    }
    n_freq = n_nk = n_p = 0
    for part in [s for s in text.split("|") if s.strip()]:
        m = _RULE.match(part)
        if not m:
            raise ParameterError(
                f"{where}: a rule must read NAME(parameters), such as P(15,3) or FREQ(3,20)."
            )
        name = m.group(1).upper()
        try:
            args = [float(a) for a in m.group(2).split(",") if a.strip()]
        except ValueError:
            raise ParameterError(
                f"{where}: the parameters of {name}(...) must be numbers."
            ) from None

        def need(k: int, name: str = name, args: list[float] = args) -> None:
            if len(args) < k:
                raise ParameterError(f"{where}: {name}(...) needs {k} parameter(s).")

        if name == "NK":
            need(2)
            n_nk += 1
            if n_nk > 4:
                raise ParameterError(f"{where}: more than 4 NK rules (2 + 2 at holding level).")
            # tau-ARGUS: the 1st and 2nd NK rules apply to records, the 3rd and 4th to holdings
            into = out if n_nk <= 2 else out["holding"]
            if args[0] > 0 and args[1] > 0:
                into["dominance"].append((int(args[0]), float(args[1])))
        elif name == "P":
            need(1)
            p, q, n = args[0], 100.0, 1
            if len(args) == 2:
                n = int(args[1])
            elif len(args) >= 3:
                q, n = args[1], int(args[2])
            n_p += 1
            if n_p > 4:
                raise ParameterError(f"{where}: more than 4 P rules (2 + 2 at holding level).")
            into = out if n_p <= 2 else out["holding"]
            if p > 0 and n > 0:
                into["pq"].append((float(p), float(q), int(n)))
        elif name == "FREQ":
            need(2)
            n_freq += 1
            if n_freq > 2:
                raise ParameterError(f"{where}: more than 2 FREQ rules (1 + 1 at holding level).")
            into = out if n_freq == 1 else out["holding"]
            into["min_frequency"] = int(args[0])
            into["frequency_range"] = float(args[1])
        elif name == "ZERO":
            need(1)
            out["zero_unsafe"] = True
            out["zero_range"] = float(args[0])
        elif name == "MIS":
            need(1)
            out["missing_safe"] = args[0] == 1
        elif name == "MAN":
            need(1)
            out["manual_range"] = float(args[0])
        elif name == "WGT":
            need(1)
            out["weights"] = args[0] == 1
        elif name == "REQ":
            need(4)
            if "request" in out:
                raise ParameterError(
                    f"{where}: a second REQ rule would apply at the holding level, which sdckit "
                    "does not support."
                )
            out["request"] = (float(args[0]), float(args[1]), int(args[2]), float(args[3]))
        else:
            raise ParameterError(
                f"{where}: unknown rule {name}(...); tau-ARGUS rules are P, NK, FREQ, ZERO, "
                "MIS, MAN, WGT and REQ."
            )
    return out


class TauArgusRule(SensitivityRule):
    """A tau-ARGUS ``<SAFETYRULE>``, with tau-ARGUS's verdicts and protection levels.

    A cell with contributors is unsafe when (in this order, as ``ComputeCellSafeCode``): a
    dominance rule ``NK(n, k)`` finds its ``n`` largest contributions above ``k`` % of its
    value; a prior-posterior rule ``P(p, q, n)`` finds ``p/100 x_1 > q/100 (T - x_1 - ... -
    x_{n+1})`` (``n`` intruders in coalition; ``P(p, n)`` has ``q = 100``); it has fewer than
    ``min_frequency`` contributors; or (``ZERO``) its value is 0.  With ``missing_safe`` (MIS(1))
    cells with a missing code in some spanning variable are safe.

    Protection levels (``SetProtectionLevelCell``; upper = lower): for a dominance or p% cell
    the largest ``100/k (x_1 + .. + x_n) - T`` and ``p/q x_1 - (T - x_1 - .. - x_{n+1})``,
    or when that is not positive ``frequency_range`` % (few contributors) or ``manual_range`` %
    of the value; for a frequency cell ``frequency_range`` % of the value; never below
    ``minimum_level`` (tau-ARGUS: ``10^-decimals`` of the response).  An unsafe zero has upper
    level ``zero_range`` and lower level 0.

    Not registered for job files (a tau-ARGUS batch builds it): use
    :func:`sdckit.jobs.tauargus.load_arb`.

    Examples
    --------
    >>> import numpy as np
    >>> t = Table.from_array(np.array([100.0, 90.0, 10.0]), {"x": ["a", "b"]},
    ...                      top=[[50, 30], [89, 1], [6, 4]], n_contributors=[5, 2, 3])
    >>> out = TauArgusRule(dominance=[(1, 75.0)]).evaluate(t)
    >>> out.unsafe.tolist(), round(float(out.upper[1]), 4)
    ([False, True, False], 28.6667)
    """

    name: ClassVar[str] = "tau_argus"
    alias: ClassVar[str] = "tau_argus"
    family: ClassVar[str | None] = None
    description: ClassVar[str] = (
        "Marks as unsafe the cells a tau-ARGUS safety rule finds unsafe, with tau-ARGUS's "
        "protection levels."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "dominance": Param(
            ListOf(TupleOf((Integer(minimum=1), Real(minimum=0, maximum=100)))),
            help="NK rules: (n, k) pairs",
        ),
        "pq": Param(
            ListOf(TupleOf((Real(minimum=0), Real(minimum=0, min_open=True), Integer(minimum=1)))),
            help="P rules: (p, q, n) triples",
        ),
        "min_frequency": Param(Integer(minimum=0), help="FREQ: cells with 1..m-1 contributors"),
        "frequency_range": Param(Real(minimum=0), help="FREQ: safety range in percent"),
        "zero_unsafe": Param(Boolean(), help="ZERO: zero cells with contributors are unsafe"),
        "zero_range": Param(Real(minimum=0), help="ZERO: upper protection level of a zero"),
        "manual_range": Param(Real(minimum=0, maximum=100), help="MAN: safety range in percent"),
        "missing_safe": Param(Boolean(), help="MIS(1): cells with a missing code are safe"),
        "missing_codes": Param(
            MapOf(ListOf(Instance((str,), "a code"))),
            help="per spanning variable, its missing codes (for missing_safe)",
        ),
        "minimum_level": Param(Real(minimum=0), help="smallest protection level"),
        "request": Param(
            TupleOf((Real(minimum=0), Real(minimum=0), Integer(minimum=0), Real(minimum=0))),
            None,
            help="REQ: (p1, p2, minimum frequency, safety margin %) of the request rule",
        ),
        "request_top": Param(
            Instance((np.ndarray,), "an (n_cells, 2) array"),
            None,
            help="per cell, the largest contribution of a record with the first and the second "
            "request code (0: none)",
        ),
        "manual": Param(
            Instance((APriori,), "a priori statements (read_hst, a status column)"),
            None,
            help="stated safe and unsafe cells and protection levels, overriding the rules",
        ),
        "level": Param(
            Options("respondent", "holding"),
            help="contributors the rules count: records/respondents or holdings (<HOLDING>)",
        ),
    }

    def __init__(
        self,
        *,
        dominance: Sequence[tuple[int, float]] = (),
        pq: Sequence[tuple[float, float, int]] = (),
        min_frequency: int = 0,
        frequency_range: float = 0.0,
        zero_unsafe: bool = False,
        zero_range: float = 0.0,
        manual_range: float = 20.0,
        missing_safe: bool = False,
        missing_codes: Mapping[str, Sequence[str]] | None = None,
        minimum_level: float = 1.0,
        request: tuple[float, float, int, float] | None = None,
        request_top: np.ndarray | None = None,
        manual: APriori | None = None,
        level: str = "respondent",
    ) -> None:
        self.dominance = list(dominance)
        self.pq = list(pq)
        self.min_frequency = min_frequency
        self.frequency_range = frequency_range
        self.zero_unsafe = zero_unsafe
        self.zero_range = zero_range
        self.manual_range = manual_range
        self.missing_safe = missing_safe
        self.missing_codes = dict(missing_codes or {})
        self.minimum_level = minimum_level
        self.request = request
        self.request_top = request_top
        self.manual = manual
        self.level = level

    @staticmethod
    def _top(top: np.ndarray, k: int) -> np.ndarray:
        if top.shape[1] < k:
            raise DataError(
                f"The tau-ARGUS rule needs the {k} largest contributions of each cell; build the "
                f"table with n_top={k} or more."
            )
        return top[:, :k].sum(axis=1)

    def evaluate(self, table: Table) -> RuleOutcome:
        return self._evaluate(table)[0]

    def status_codes(self, table: Table) -> np.ndarray:
        """tau-ARGUS's status number of each cell this rule finds unsafe (``CellStatus``:
        3 dominance or p%, 4 request rule, 5 frequency, 6 zero, 9 stated unsafe; 0 for the
        others), as its output files and the SBS format tell them apart.

        Examples
        --------
        >>> import numpy as np
        >>> t = Table.from_array(np.array([100.0, 90.0, 10.0]), {"x": ["a", "b"]},
        ...                      top=[[50, 30], [89, 1], [6, 4]], n_contributors=[5, 2, 3])
        >>> TauArgusRule(dominance=[(1, 75.0)], min_frequency=3).status_codes(t).tolist()
        [0, 3, 0]
        """
        return self._evaluate(table)[1]

    def _evaluate(self, table: Table) -> tuple[RuleOutcome, np.ndarray]:
        self.validate_params()
        n = table.n_cells
        # individual rules read the records' (respondents'), holding rules the holdings'
        freq, top = contributors_at(table, self.level, "tau-ARGUS rule")
        if np.any(freq < 0):
            if table.kind == "count":
                freq = np.rint(table.values).astype(np.int64)
            elif self.min_frequency > 0 or self.request is not None:
                raise DataError(
                    "The tau-ARGUS rule needs the number of contributors of each cell; build "
                    "the table from microdata (or give a <FREQUENCY> variable)."
                )
            else:  # no rule counts contributors: the non-empty cells have "many"
                many = np.iinfo(np.int64).max
                freq = np.where(table.status == CellStatus.EMPTY, 0, many)
        value = table.values
        nonempty = freq > 0
        rule_level = np.zeros(n)  # the largest value level a dominance or p% rule asks for
        by_rule = np.zeros(n, dtype=bool)
        x1 = top[:, 0] if top.shape[1] else np.zeros(n)
        for k_n, k_pct in self.dominance:
            big = self._top(top, k_n)
            ok = (x1 != 0) & (value != 0)
            share = np.divide(big * 100.0, value, out=np.zeros(n), where=ok)
            by_rule |= ok & (share > k_pct)
            level = 100.0 * big / k_pct
            rule_level = np.where(level - value > 0, np.maximum(rule_level, level), rule_level)
        for p, q, k_n in self.pq:
            big = self._top(top, k_n + 1)
            by_rule |= (p / 100.0) * x1 + (q / 100.0) * (big - value) > 0
            level = p * x1 / q + big
            rule_level = np.where(level - value > 0, np.maximum(rule_level, level), rule_level)
        by_rule &= nonempty
        by_request = ~by_rule & nonempty & self._requested(table, freq)
        by_freq = ~by_rule & ~by_request & nonempty & (freq < max(self.min_frequency, 1))
        by_zero = ~by_rule & ~by_freq & nonempty & (value == 0) & bool(self.zero_unsafe)
        by_zero &= ~by_request
        unsafe = by_rule | by_request | by_freq | by_zero
        if self.missing_safe and self.missing_codes:
            missing = np.zeros(n, dtype=bool)
            for d, h in zip(table.dimensions, table.hierarchies, strict=True):
                codes = {str(c).strip() for c in self.missing_codes.get(d, ())}
                if not codes:
                    continue
                hit = np.array([c in codes for c in h.codes])
                missing |= hit[table.node_index[:, table.dimensions.index(d)]]
            unsafe &= ~missing
        # protection levels, as SetProtectionLevelCell
        distance = rule_level - value
        fallback_pct = np.where(
            freq <= max(self.min_frequency, 1), self.frequency_range, self.manual_range
        )
        fallback = value * fallback_pct / 100.0
        fallback = np.where(fallback == 0, 1.0, fallback)
        distance = np.where(distance <= 0, fallback, distance)
        perc = np.where(
            value == 0,
            self.manual_range / 100.0,
            np.divide(distance, value, out=np.zeros(n), where=value != 0),
        )
        perc = np.where(by_rule, perc, self.frequency_range / 100.0)
        if self.request is not None:
            perc = np.where(by_request, self.request[3] / 100.0, perc)
        perc = np.abs(perc)
        level = np.maximum(np.abs(value) * perc, float(self.minimum_level))
        upper = np.where(value != 0, level, self.zero_range)
        lower = np.where(value != 0, level, 0.0)
        codes = np.select([by_rule, by_request, by_freq, by_zero], [3, 4, 5, 6], 0)
        if self.manual is not None:
            unsafe, upper, lower = self._stated(table, unsafe, upper, lower)
        codes = np.where(unsafe, np.where(codes == 0, 9, codes), 0)
        upper = np.where(unsafe, upper, 0.0)
        lower = np.where(unsafe, lower, 0.0)
        out = RuleOutcome(unsafe, upper.astype(float), lower.astype(float), np.zeros(n))
        return out, codes.astype(np.int64)

    def _requested(self, table: Table, freq: np.ndarray) -> np.ndarray:
        """REQ(p1, p2, m, margin) as tau-ARGUS's ``UnsafeCellPeep``: a cell with a contributor
        that asked for protection (request code 1 or 2) is unsafe when that contribution
        exceeds p1 % (code 1) or p2 % (code 2) of the cell value, or when the cell has fewer
        than m contributors."""
        n = table.n_cells
        if self.request is None:
            return np.zeros(n, dtype=bool)
        top = self.request_top
        if top is None or top.shape != (n, 2):
            raise ParameterError(
                "The request rule needs, per cell, the largest contribution of a requesting "
                "record of each code ('request_top', shape (n_cells, 2)); a batch gives it from "
                "the .rda's <REQUEST> variable."
            )
        p1, p2, m, _ = self.request
        value = np.abs(table.values)
        asked = (top[:, 0] > 0) | (top[:, 1] > 0)
        out = (p1 > 0) & (top[:, 0] > p1 / 100.0 * value)
        out |= (p2 > 0) & (top[:, 1] > p2 / 100.0 * value)
        return out | (asked & (freq < m))

    def _stated(
        self, table: Table, unsafe: np.ndarray, upper: np.ndarray, lower: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The verdicts and levels with the a priori statements applied over them: a stated
        safe cell is safe, a stated unsafe one unsafe (level ``manual_range`` % of its value,
        as tau-ARGUS's manual status), stated levels replace the rule's."""
        m = self.manual
        if m is None:
            return unsafe, upper, lower
        if m.status.size != table.n_cells:
            raise ParameterError(
                "The tau-ARGUS rule's a priori statements ('manual') are for another table; "
                "read them for this one."
            )
        forced = (m.status == UNSAFE_STATED) & ~unsafe
        level = np.maximum(np.abs(table.values) * self.manual_range / 100.0, self.minimum_level)
        upper = np.where(forced, level, upper)
        lower = np.where(forced, level, lower)
        unsafe = (unsafe & (m.status != SAFE_STATED)) | forced
        upper = np.where(np.isnan(m.upper_level), upper, m.upper_level)
        lower = np.where(np.isnan(m.lower_level), lower, m.lower_level)
        return unsafe, upper, lower

    @classmethod
    def contract_example(cls) -> tuple[SensitivityRule, Table]:
        """A one-dimensional magnitude table where one cell is dominated by one contributor."""
        t = Table.from_array(
            np.array([100.0, 90.0, 10.0]),
            {"x": ["a", "b"]},
            top=[[50, 30], [89, 1], [6, 4]],
            n_contributors=[5, 2, 3],
        )
        return cls(dominance=[(1, 75.0)]), t
