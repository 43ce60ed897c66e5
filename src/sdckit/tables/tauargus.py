"""tau-ARGUS files: hierarchies (.hrc), record descriptions (.rda), microdata (.asc), batch files.

Readers for the files a tau-ARGUS user has (formats of the tau-ARGUS 4.1 manual, chapter 5):

* :func:`read_hrc`: a hierarchy file, one code per line, each ``@`` (the lead string) in front of
  a code one level deeper; the total is not listed (it is the ``<TOTCODE>``, default
  ``"Total"``).
* :func:`read_rda`: the metadata of fixed-format (name, start position, width, missing codes)
  or free-format (``<SEPARATOR>`` on the first line; name, width, missing codes) microdata,
  with the keywords ``<RECODEABLE>`` (``<RECODABLE>``), ``<NUMERIC>``, ``<WEIGHT>``,
  ``<DECIMALS>``, ``<HIERARCHICAL>``, ``<HIERLEVELS>``, ``<HIERCODELIST>``,
  ``<HIERLEADSTRING>``, ``<TOTCODE>``, ``<CODELIST>`` (labels, ignored), ``<DISTANCE>``,
  ``<TRUNCABLE>`` and ``<RECORDKEY>`` (ignored), ``<HOLDING>`` (the holding variable: records
  with one holding code are one contributor in the holding-level rules); ``<REQUEST>`` and SPSS
  metadata are refused.
* :func:`read_asc`: the microdata the .rda describes, as a polars frame (codes as text, numeric
  variables as numbers; missing numeric codes become nulls).
* :func:`read_arb`: the commands of a batch file that specify tables, rules and suppression:
  ``<OPENMICRODATA>``, ``<OPENMETADATA>``, ``<SPECIFYTABLE>``, ``<SAFETYRULE>``,
  ``<READMICRODATA>``, ``<SUPPRESS>`` (``GH``, ``MOD``, ``OPT``), ``<WRITETABLE>``; ``<LOGBOOK>``,
  ``<SOLVER>`` and ``<GOINTERACTIVE>`` are accepted and ignored.  Other commands (tabular
  input, a priori files, rounding, CTA, the cell key method) are refused with the line number.

:class:`TauArgusRule` applies a ``<SAFETYRULE>`` exactly as tau-ARGUS's library does
(``CTable::ComputeCellSafeCode`` and ``SetProtectionLevelCell``): ``NK(n, k)`` dominance,
``P(p, n)`` / ``P(p, q, n)`` prior-posterior rules with ``n`` intruders in coalition,
``FREQ(m, range)``, ``ZERO(range)``, ``MIS``, ``MAN``.  The batch-to-job translation is
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
from sdckit.tables.hierarchy import Hierarchy
from sdckit.tables.rules import RuleOutcome, SensitivityRule, contributors_at
from sdckit.tables.table import Table

__all__ = [
    "ArbBatch",
    "ArbTable",
    "RdaMetadata",
    "RdaVariable",
    "TauArgusRule",
    "parse_safety_rule",
    "read_arb",
    "read_asc",
    "read_hrc",
    "read_rda",
]


def _read_lines(path: Path, what: str) -> list[str]:
    if not path.is_file():
        raise ParameterError(f"The {what} {path.name!r} does not exist; check its path.")
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return path.read_text(encoding="latin-1").splitlines()


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


@dataclass
class RdaMetadata:
    """A record description: the separator (None: fixed format) and the variables."""

    path: Path
    separator: str | None
    variables: list[RdaVariable] = field(default_factory=list)

    def variable(self, name: str, where: str = "") -> RdaVariable:
        """The variable called ``name`` (case-insensitive, as tau-ARGUS)."""
        for v in self.variables:
            if v.name.lower() == name.lower():
                return v
        prefix = f"{where}: " if where else ""
        raise ParameterError(
            f"{prefix}the variable {name!r} is not described in the metadata file "
            f"{self.path.name!r}; declare it there or correct the name."
        )

    @property
    def weight(self) -> RdaVariable | None:
        """The ``<WEIGHT>`` variable, if any."""
        return next((v for v in self.variables if v.weight), None)

    @property
    def holding(self) -> RdaVariable | None:
        """The ``<HOLDING>`` variable (enterprise group), if any."""
        return next((v for v in self.variables if v.holding), None)


_TOKEN = re.compile(r'"([^"]*)"|(\S+)')


def _tokens(text: str) -> list[str]:
    return [a if b == "" else b for a, b in _TOKEN.findall(text)]


_IGNORED_KEYWORDS = {"<CODELIST>", "<DISTANCE>", "<TRUNCABLE>", "<RECORDKEY>"}
_REFUSED_KEYWORDS = {
    "<REQUEST>": "the request rule",
    "<SPSS>": "SPSS system files",
    "<PFILE>": "the cell key method",
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
        if key in ("<RECODEABLE>", "<RECODABLE>"):
            current.recodeable = True
        elif key == "<NUMERIC>":
            current.numeric = True
        elif key == "<WEIGHT>":
            current.weight = True
            current.numeric = True
        elif key == "<HOLDING>":
            current.holding = True
        elif key == "<DECIMALS>":
            if not args or not args[0].isdigit():
                raise DataError(f"Line {n} of {p.name!r}: <DECIMALS> needs a whole number.")
            current.decimals = int(args[0])
        elif key == "<HIERARCHICAL>":
            current.hierarchical = True
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
        elif key == "<HIERCODELIST>":
            if not args:
                raise DataError(f"Line {n} of {p.name!r}: <HIERCODELIST> needs a file name.")
            current.hiercodelist = args[0]
            current.hierarchical = True
        elif key == "<HIERLEADSTRING>":
            if not args:
                raise DataError(f"Line {n} of {p.name!r}: <HIERLEADSTRING> needs a string.")
            current.leadstring = args[0]
        elif key == "<TOTCODE>":
            if not args:
                raise DataError(f"Line {n} of {p.name!r}: <TOTCODE> needs a code.")
            current.totcode = args[0]
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
            raise ParameterError(f"{where}: the request rule REQ(...) is not supported by sdckit.")
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
        self.validate_params()
        n = table.n_cells
        # individual rules read the records' (respondents'), holding rules the holdings'
        freq, top = contributors_at(table, self.level, "tau-ARGUS rule")
        if np.any(freq < 0):
            if table.kind != "count":
                raise DataError(
                    "The tau-ARGUS rule needs the number of contributors of each cell; build "
                    "the table from microdata."
                )
            freq = np.rint(table.values).astype(np.int64)
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
        by_freq = ~by_rule & nonempty & (freq < max(self.min_frequency, 1))
        by_zero = ~by_rule & ~by_freq & nonempty & (value == 0) & bool(self.zero_unsafe)
        unsafe = by_rule | by_freq | by_zero
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
        perc = np.abs(perc)
        level = np.maximum(np.abs(value) * perc, float(self.minimum_level))
        upper = np.where(value != 0, level, self.zero_range)
        lower = np.where(value != 0, level, 0.0)
        upper = np.where(unsafe, upper, 0.0)
        lower = np.where(unsafe, lower, 0.0)
        return RuleOutcome(unsafe, upper.astype(float), lower.astype(float), np.zeros(n))

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


@dataclass
class ArbBatch:
    """The commands of a tau-ARGUS batch file that sdckit translates."""

    path: Path
    microdata: Path | None = None
    metadata: Path | None = None
    tables: list[ArbTable] = field(default_factory=list)


_SUPPORTED = (
    "<OPENMICRODATA>",
    "<OPENMETADATA>",
    "<SPECIFYTABLE>",
    "<SAFETYRULE>",
    "<READMICRODATA>",
    "<SUPPRESS>",
    "<WRITETABLE>",
)
_IGNORED = ("<LOGBOOK>", "<SOLVER>", "<GOINTERACTIVE>")


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
    for n, cmd, arg in _commands(_read_lines(p, "batch file")):
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
        elif cmd == "<SUPPRESS>":
            m = re.match(r"^([A-Za-z]+)\s*\(([^()]*)\)\s*$", arg)
            if not m:
                raise DataError(f"{where}: <SUPPRESS> must read METHOD(table, ...), e.g. GH(1,75).")
            method = m.group(1).upper()
            if method not in ("GH", "MOD", "OPT"):
                raise DataError(
                    f"{where}: the suppression method {method} is not supported (GH, MOD and OPT "
                    "are)."
                )
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
            batch.tables[tab - 1].suppress = (method, args)
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
