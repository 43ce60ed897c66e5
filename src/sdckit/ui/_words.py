"""Words for a person: a step's parameters, numbers, and the job-file syntax of messages.

The pages show what the job file holds in the words of the page's own controls: a step's
parameters as ``k = 3; importance: age 1, sex 2`` rather than TOML, numbers with thousands
separators and never in scientific notation, and the messages of the jobs layer (which speak
job-file syntax, ``[roles] linked = {...}``) with the names of the controls that set them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "candidate_text",
    "controls_words",
    "finding_fix",
    "fmt_number",
    "params_text",
    "remedy_words",
    "risk_label",
]

#: Parameters not worth a word in the history (the session's seed rule sets them).
_QUIET = frozenset({"seed"})
#: A step's parameters longer than this are cut (the job file has them all).
_MAX_CHARS = 240


def fmt_number(value: Any, digits: int = 4) -> str:
    """A number for reading: thousands separators, ``digits`` significant digits, never
    scientific notation (``110,429,231`` and ``0.0003877``, not ``1.10429e+08``).

    Examples
    --------
    >>> fmt_number(110429230.61999997), fmt_number(0.003877), fmt_number(367628)
    ('110,429,231', '0.003877', '367,628')
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return "–" if x != x else ("∞" if x > 0 else "−∞")
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    # decimals so that `digits` significant digits show (none past the units for big numbers)
    magnitude = math.floor(math.log10(abs(x))) if x else 0
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("0", "-0") else f"{x:.{digits}f}".rstrip("0")


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return fmt_number(value, 6)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k} {_value_text(v)}" for k, v in value.items())
        return inner
    if isinstance(value, list | tuple):
        return ", ".join(_value_text(v) for v in value)
    return str(value)


def params_text(params: Mapping[str, Any]) -> str:
    """A step's parameters in words, one ``name = value`` a parameter, ``;`` between them.

    Examples
    --------
    >>> params_text({"k": 3, "importance": {"age": 1, "sex": 2}, "seed": 7})
    'k = 3; importance: age 1, sex 2'
    >>> params_text({"mapping": {"age": {"0": "0-14", "1": "0-14"}}})
    'mapping: age (0 → 0-14, 1 → 0-14)'
    """
    parts = []
    for name, value in params.items():
        if name in _QUIET:
            continue
        if name == "mapping" and isinstance(value, Mapping):
            cols = []
            for column, table in value.items():
                if isinstance(table, Mapping):
                    pairs = ", ".join(f"{old} → {new}" for old, new in table.items())
                else:
                    pairs = _value_text(table)
                cols.append(f"{column} ({pairs})")
            parts.append(f"{name}: " + "; ".join(cols))
        elif isinstance(value, Mapping):
            parts.append(f"{name}: {_value_text(value)}")
        else:
            parts.append(f"{name} = {_value_text(value)}")
    text = "; ".join(parts) or "defaults"
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 1] + "…"


def risk_label(label: str) -> str:
    """A risk figure's label with its unit said: global and household risks in percent of the
    records, an individual risk as a probability.

    Examples
    --------
    >>> risk_label("global risk (%)"), risk_label("highest individual risk")
    ('global risk (% of records)', 'highest individual risk (a probability)')
    """
    if label.endswith("risk (%)"):
        return label[: -len("(%)")] + "(% of records)"
    if label == "highest individual risk":
        return label + " (a probability)"
    return label


def candidate_text(candidate: Mapping[str, Any]) -> str:
    """An R-U map candidate's parameters and grid in words (``k = 3; grid: k 2, 3, 5``)."""
    params = dict(candidate.get("params") or {})
    params.update({k: v for k, v in candidate.items() if k not in ("method", "label", "params")})
    return params_text(params)


#: Job-file syntax -> the words of the interface's controls (the pages that have them).
_CONTROLS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[roles\] linked = \{[^}]*\}"), "the role “linked to a key” on the Roles page"),
    (re.compile(r"\[roles\] '?linked'?"), "the role “linked to a key” on the Roles page"),
    (re.compile(r"\[roles\] '?household_level'?"), "the “household-level” boxes on the Roles page"),
    (re.compile(r"\[roles\] '?numeric'?"), "the role “numeric variable” on the Roles page"),
    (re.compile(r"\[roles\] '?keys'?"), "the role “key variable” on the Roles page"),
    (re.compile(r"\[roles\] '?weight'?"), "the role “sampling weight” on the Roles page"),
    (re.compile(r"\[roles\] '?household'?"), "the role “household id” on the Roles page"),
    (re.compile(r"\[roles\] '?identifiers'?"), "the role “direct identifier” on the Roles page"),
    (re.compile(r"\[output\] '?drop'? = \[[^\]]*\]"), "the “drop” boxes on the Roles page"),
    (re.compile(r"\[output\] '?drop'?"), "the “drop” boxes on the Roles page"),
    (re.compile(r"\[output\] '?household_id'?"), "the household ids setting on the Release page"),
    (re.compile(r"\[output\] '?order'?"), "the record order setting on the Release page"),
    (
        re.compile(r"\[input\] '?numeric_keys'?( = \[[^\]]*\])?"),
        "the box “read as a number” of the key on the Roles page",
    ),
    (re.compile(r"\[target\] '?(\w+)'?"), r"the risk target “\1” on the Release page"),
    # the tables page: its "Records with a missing code in a dimension" list
    (
        re.compile(
            r'Set missing = "category" \(a level of its own, labelled (\S+)\) or '
            r'missing = "drop" \(leave those records out\)'
        ),
        r"Choose “count them in a category of their own, \1” or “leave those records out” under "
        "“Records with a missing code in a dimension”",
    ),
    # its "Records without a value" list (before 'missing = "drop"', which it contains)
    (
        re.compile(r'set missing_value = "drop" \(leave the records without a value out\)'),
        "choose “leave those records out” under “Records without a value”",
    ),
    (re.compile(r'missing = "category"'), "“count them in a category of their own”"),
    (re.compile(r'missing = "drop"'), "“leave those records out”"),
)


def controls_words(message: str) -> str:
    """``message`` with the job-file syntax it names replaced by the controls that set it.

    Examples
    --------
    >>> controls_words("Add it to [output] drop.")
    'Add it to the “drop” boxes on the Roles page.'
    """
    for pattern, words in _CONTROLS:
        message = pattern.sub(words, message)
    return message


def remedy_words(remedy: Any) -> str:
    """A release check's remedy (:class:`sdckit.release` ``Remedy``) in the words of the
    interface's controls where it has one (the Roles page's boxes, this page's settings), else
    in the remedy's own words (:meth:`Remedy.words`).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> remedy_words(R(action="drop", column="dob", target=None, words=lambda: ""))
    "tick “drop” for 'dob' on the Roles page"
    """
    c, t = remedy.column, remedy.target
    controls = {
        "drop": f"tick “drop” for {c!r} on the Roles page",
        "link": f"give {c!r} the role “linked to a key”, linked to {t!r}, on the Roles page",
        "household_level": f"tick “household-level” for {t!r} on the Roles page",
        "identifier": f"give {c!r} the role “direct identifier” on the Roles page",
        "shuffle": "choose “random” as the record order (Release plan, on this page)",
        "drop_household_id": "choose “left out” for the household id (Release plan, on this page)",
        "calibrate_weights": (
            f"apply “weight calibration” to {c!r} on the Protect page, after the other steps"
        ),
    }
    return controls.get(remedy.action) or remedy.words()


def finding_fix(finding: Any) -> str:
    """All the remedies of a release finding, best first, in the controls' words."""
    return " or ".join(remedy_words(r) for r in getattr(finding, "remedies", ()))
