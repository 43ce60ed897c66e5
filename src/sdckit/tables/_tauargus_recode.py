"""tau-ARGUS ``<RECODE>``: a spanning variable recoded to fewer codes for one table.

Three forms (tau-ARGUS manual 4.1, sections 4.3 and 5.7):

* a digit ``L`` (1 to 9) for a hierarchical variable: the hierarchy is cut below level ``L``
  (the total is level 0), every code deeper down counted in its ancestor at level ``L``;
* a recode file (``.grc``) starting with ``<TREERECODE>`` for a hierarchical variable: the codes
  listed (one a line) are closed, their descendants counted in them;
* a recode file for a flat variable: lines ``new: old, old-old, -old, old-`` (codes or ranges
  of codes; a range compares numbers as numbers, other codes as text); codes no line names stay
  as they are; ``<MISSING>`` lines are refused.

:func:`recode_codes` gives the new hierarchy and the map ``old leaf code -> new code``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sdckit.errors import DataError
from sdckit.tables._tauargus_io import read_lines
from sdckit.tables.hierarchy import Hierarchy

__all__ = ["recode_codes"]


def _tree(h: Hierarchy, closed: set[int]) -> tuple[Hierarchy, dict[str, str]]:
    """``h`` with the descendants of the ``closed`` nodes removed, and each removed leaf's new
    code (its closed ancestor)."""
    keep = np.ones(h.size, dtype=bool)
    target = np.arange(h.size)
    for i in range(1, h.size):  # parents come before children (depth-first order)
        p = int(h.parent[i])
        if not keep[p] or p in closed:
            keep[i] = False
            target[i] = target[p] if not keep[p] else p
    tree: dict[str, list[str]] = {}
    for i in range(1, h.size):
        if keep[i]:
            tree.setdefault(h.codes[int(h.parent[i])], []).append(h.codes[i])
    mapping = {h.codes[i]: h.codes[int(target[i])] for i in h.leaves.tolist()}
    return Hierarchy.from_dict(tree), mapping


def _key(code: str) -> tuple[int, float, str]:
    try:
        return (0, float(code), "")
    except ValueError:
        return (1, 0.0, code)


def _in_range(code: str, lo: str, hi: str) -> bool:
    """``lo <= code <= hi`` (an empty end is open); numbers compare with numbers, text with
    text, and a number is never in a range of text (nor the reverse)."""
    k = _key(code)
    for end, sign in ((lo, 1), (hi, -1)):
        if not end:
            continue
        e = _key(end)
        if e[0] != k[0] or sign * ((k > e) - (k < e)) < 0:
            return False
    return True


def _flat_recode(path: Path, h: Hierarchy) -> tuple[Hierarchy, dict[str, str]]:
    leaves = [h.codes[i] for i in h.leaves.tolist()]
    mapping = {c: c for c in leaves}
    for n, raw in enumerate(read_lines(path, "recode file"), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        where = f"Line {n} of the recode file {path.name!r}"
        if line.startswith("<"):
            raise DataError(f"{where}: only lines 'new: old, old-old' are supported here.")
        if ":" not in line:
            raise DataError(f"{where} must read 'new: old, old-old, ...'.")
        new, spec = (s.strip() for s in line.split(":", 1))
        if not new or not spec:
            raise DataError(f"{where} needs a new code and the old codes it takes.")
        for part in (s.strip() for s in spec.split(",")):
            if not part:
                continue
            if "-" in part:
                lo, hi = (s.strip() for s in part.split("-", 1))
                hit = [c for c in leaves if _in_range(c, lo, hi)]
            else:
                hit = [c for c in leaves if c == part]
            for c in hit:
                mapping[c] = new
    new_codes = sorted(set(mapping.values()), key=_key)
    return Hierarchy.flat(new_codes, total=h.total), mapping


def recode_codes(h: Hierarchy, spec: str | os.PathLike[str]) -> tuple[Hierarchy, dict[str, str]]:
    """A spanning variable's hierarchy recoded by a ``<RECODE>`` (see the module doc).

    Parameters
    ----------
    h : Hierarchy
        The variable's hierarchy (flat or not).
    spec : str or path
        A level ``"1"`` .. ``"9"``, or a recode file.

    Returns
    -------
    (Hierarchy, dict)
        The new hierarchy and ``old leaf code -> new code``.

    Examples
    --------
    >>> h = Hierarchy.from_dict({"Total": ["A", "B"], "A": ["A1", "A2"], "B": ["B1"]})
    >>> new, mapping = recode_codes(h, "1")
    >>> new.codes, mapping["A2"]
    (('Total', 'A', 'B'), 'A')
    """
    text = str(spec)
    flat = bool(np.all(h.parent[1:] == 0))
    if len(text) == 1 and text.isdigit():
        if flat:
            raise DataError(
                "A <RECODE> by level applies to a hierarchical variable only; give a recode file."
            )
        level = int(text)
        depth = h.depth
        closed = {i for i in range(h.size) if depth[i] == level}
        return _tree(h, closed)
    path = Path(spec)
    lines = [ln.strip() for ln in read_lines(path, "recode file") if ln.strip()]
    if lines and lines[0].upper() == "<TREERECODE>":
        closed = set()
        for n, code in enumerate(lines[1:], start=2):
            if code not in h.index:
                raise DataError(
                    f"Line {n} of the recode file {path.name!r} names a code that is not in the "
                    "variable's hierarchy."
                )
            closed.add(h.index[code])
        return _tree(h, closed)
    if not flat:
        raise DataError(
            f"The recode file {path.name!r} recodes a hierarchical variable: start it with "
            "<TREERECODE> and list the codes to close."
        )
    return _flat_recode(path, h)
