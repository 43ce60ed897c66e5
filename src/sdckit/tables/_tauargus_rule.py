"""tau-ARGUS's safety rules: ``<SAFETYRULE>`` parsed, and applied as tau-ARGUS's library does.

See :mod:`sdckit.tables.tauargus` (its module doc lists the rules); this module holds
:func:`parse_safety_rule` and :class:`TauArgusRule`, re-exported there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

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
from sdckit.tables._tauargus_tab import SAFE as SAFE_STATED
from sdckit.tables._tauargus_tab import UNSAFE as UNSAFE_STATED
from sdckit.tables._tauargus_tab import APriori
from sdckit.tables.rules import RuleOutcome, SensitivityRule, contributors_at
from sdckit.tables.table import CellStatus, Table

__all__ = ["TauArgusRule", "parse_safety_rule"]


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
