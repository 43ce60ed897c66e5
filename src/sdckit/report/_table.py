"""HTML report of a table protection (cell suppression): internal and external versions.

:func:`write_table_report` writes one self-contained HTML file (no scripts, no external files)
from a :class:`~sdckit.tables.SuppressionResult`:

* ``kind="internal"`` (for the methodologist): the table with every value, the primary and the
  secondary suppressions told apart, the LP audit (the feasibility interval of every suppressed
  cell, its required protection levels and whether it is protected) and the information loss
  (suppressed cells, their value and shares).
* ``kind="external"`` (publishable): the published table with one symbol (``x``) for every
  suppressed cell and another (``-``) for an empty cell (no contributor, not a zero), a
  legend of the symbols, the number and share of suppressed cells and the audit's verdict; nothing
  that tells primary from secondary suppressions (no status, no levels, no per-cell intervals,
  no suppressed values or value shares, which would narrow the intervals).  It is refused
  (:class:`~sdckit.errors.VerificationError`) for a pattern that is not protected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import jinja2
import numpy as np

from sdckit import __version__
from sdckit._results import format_value
from sdckit._validation import check_choice
from sdckit.errors import DataError, ParameterError, VerificationError

__all__ = ["render_table_report", "write_table_report"]

ReportKind = Literal["internal", "external"]

#: Largest number of cells shown as grids; larger tables list their suppressed cells only.
MAX_GRID_CELLS = 20_000
#: Largest number of rows of the audit table of the internal report.
MAX_AUDIT_ROWS = 5_000
#: A check-mode audit of a pattern with more suppressed cells than this is reported as it is
#: (its intervals are inner approximations, said so) instead of an exact audit run for the
#: report, which takes one LP per cell and direction.
EXACT_FOR_REPORT_UP_TO = 2_000


@dataclass(frozen=True)
class _Cell:
    text: str
    css: str


@dataclass(frozen=True)
class _Grid:
    caption: str
    columns: list[str]
    rows: list[tuple[str, int, list[_Cell]]]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("sdckit.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _unpack(result: Any) -> tuple[Any, Any]:
    from sdckit.tables import SuppressionResult, Table

    if isinstance(result, SuppressionResult):
        return result.table, result
    if isinstance(result, Table):
        return result, None
    raise ParameterError(
        "The 'result' parameter must be a SuppressionResult (from a suppression method) or a "
        "Table with its suppressed cells."
    )


def _cell(table: Any, i: int, kind: str) -> _Cell:
    from sdckit.tables import EMPTY_SYMBOL, SUPPRESSED_SYMBOL, CellStatus

    status = int(table.status[i])
    value = format_value(float(table.values[i]))
    if kind == "external":
        # the symbols of the published file: one for every suppressed cell, one for an empty
        # cell (known to have no contributor), so that it is not read as a true zero
        if table.suppressed[i]:
            return _Cell(SUPPRESSED_SYMBOL, "suppressed")
        if status == CellStatus.EMPTY and table.n_contributors[i] >= 0:
            return _Cell(EMPTY_SYMBOL, "empty")
        return _Cell(value, "")
    if status == CellStatus.PRIMARY:
        return _Cell(value, "primary")
    if status == CellStatus.SECONDARY:
        return _Cell(value, "secondary")
    if status == CellStatus.EMPTY:
        return _Cell(value, "empty")
    if status == CellStatus.PROTECTED:
        return _Cell(value, "frozen")
    return _Cell(value, "")


def _grids(table: Any, kind: str) -> list[_Grid]:
    dims, hier = table.dimensions, table.hierarchies
    grid = np.arange(table.n_cells).reshape(table.shape)
    if len(dims) == 1:
        h = hier[0]
        rows = [
            (h.codes[i], int(h.depth[i]), [_cell(table, int(grid[i]), kind)]) for i in range(h.size)
        ]
        return [_Grid(dims[0], ["value"], rows)]
    out = []
    rest = [range(h.size) for h in hier[2:]]
    for combo in np.ndindex(*[len(r) for r in rest]) if rest else [()]:
        sub = grid[(slice(None), slice(None), *combo)]
        caption = ", ".join(
            f"{d} = {h.codes[i]}" for d, h, i in zip(dims[2:], hier[2:], combo, strict=True)
        )
        columns = list(hier[1].codes)
        rows = [
            (
                hier[0].codes[r],
                int(hier[0].depth[r]),
                [_cell(table, int(sub[r, c]), kind) for c in range(hier[1].size)],
            )
            for r in range(hier[0].size)
        ]
        out.append(_Grid(caption or f"{dims[0]} by {dims[1]}", columns, rows))
    return out


def _suppressed_list(table: Any, kind: str) -> list[list[str]]:
    rows = []
    for i in np.flatnonzero(table.suppressed).tolist():
        codes = [h.codes[n] for h, n in zip(table.hierarchies, table.node_index[i], strict=True)]
        if kind == "internal":
            c = _cell(table, i, kind)
            rows.append([*codes, c.css, c.text])
        else:
            rows.append(codes)
    return rows


def _audit_rows(table: Any, checked: Any) -> list[list[str]]:
    from sdckit.tables._output import STATUS_NAMES
    from sdckit.tables.table import CellStatus

    rows = []
    rank = checked.intervals == "rank"  # decides the primaries only
    for k, i in enumerate(checked.cells[:MAX_AUDIT_ROWS].tolist()):
        decided = not rank or table.status[i] == CellStatus.PRIMARY
        codes = [h.codes[n] for h, n in zip(table.hierarchies, table.node_index[i], strict=True)]
        rows.append(
            [
                *codes,
                str(STATUS_NAMES[table.status[i]]),
                format_value(float(table.values[i])),
                format_value(float(checked.minimum[k])),
                format_value(float(checked.maximum[k])),
                format_value(float(table.upper[i])),
                format_value(float(table.lower[i])),
                format_value(float(table.sliding[i])),
                ("yes" if checked.exact[k] else "no") if decided else "n/a",
                ("yes" if checked.protected[k] else "NO") if decided else "n/a",
            ]
        )
    return rows


def render_table_report(
    result: Any,
    *,
    kind: ReportKind = "internal",
    audit: Any = None,
    title: str = "Table protection report",
    timestamp: bool = False,
) -> str:
    """The HTML text of the report of a table protection.

    Parameters
    ----------
    result : SuppressionResult or Table
        A protected table (the result of a suppression method, or a table whose suppressed
        cells carry their status).
    kind : {"internal", "external"}
        See :mod:`sdckit.report._table`.
    audit : AuditResult, optional
        An exact audit of the pattern (``audit(table)``); computed when not given (or given
        in check mode, whose intervals are only inner approximations, on a pattern of up to
        ``EXACT_FOR_REPORT_UP_TO`` suppressed cells; above, a check-mode audit is reported
        as it is, its intervals marked as inner approximations).  A rank-test audit
        (:func:`~sdckit.tables.suppression.rank_audit`, for tables too large for the LP) is
        reported as it is: exact disclosure of the primaries, no intervals.
    title : str
    timestamp : bool, default False
        Show the time of writing (False: the same result gives the same bytes).

    Returns
    -------
    str
        A self-contained HTML document.

    Raises
    ------
    VerificationError
        ``kind="external"`` for a pattern that does not protect every primary.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_optimal
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = suppress_optimal(apply_rules(t, MarkedCells(cells=[4], upper=1)), cost="unity")
    >>> html = render_table_report(res, kind="external")
    >>> "primary" in html, html.count('suppressed">x</td>')
    (False, 4)
    """
    from sdckit.tables import audit as run_audit
    from sdckit.tables import suppression_loss

    table, suppression = _unpack(result)
    check_choice(kind, "kind", ("internal", "external"))
    if not isinstance(title, str) or not title.strip():
        raise ParameterError("The 'title' parameter must be a non-empty string.")
    checked = audit
    kept = {"exact", "rank"}
    if table.suppressed.sum() > EXACT_FOR_REPORT_UP_TO:
        kept.add("check")
    if checked is None or getattr(checked, "intervals", "exact") not in kept:
        # the same audit (insider, unions, ...) with every interval computed
        params = {**getattr(checked, "parameters", {}), "intervals": "exact"}
        checked = run_audit(table, **params)
    elif checked.table.n_cells != table.n_cells or not np.array_equal(
        checked.table.status, table.status
    ):
        raise ParameterError("The 'audit' must be an audit of the reported table's pattern.")
    if kind == "external" and not checked.ok:
        raise VerificationError(
            "The pattern does not protect every primary cell, so no external report is written; "
            "the internal report lists the under-protected cells."
        )
    loss = suppression_loss(table)
    n_supp = int(table.suppressed.sum())
    facts: list[tuple[str, str]] = [
        ("dimensions", ", ".join(table.dimensions)),
        ("cells (totals included)", format_value(table.n_cells)),
        ("suppressed cells", format_value(n_supp)),
        ("share of cells suppressed (%)", format_value(100.0 * loss.share_cells)),
        ("share of interior cells suppressed (%)", format_value(100.0 * loss.share_interior_cells)),
    ]
    if suppression is not None:
        facts.insert(2, ("suppression method", suppression.method))
    if kind == "internal":
        facts += [
            ("weighted table", format_value(table.weighted)),
            ("primary suppressions", format_value(loss.n_primary)),
            ("secondary suppressions", format_value(loss.n_secondary)),
            ("value of primary suppressions", format_value(loss.value_primary)),
            ("value of secondary suppressions", format_value(loss.value_secondary)),
            ("share of interior value suppressed (%)", format_value(100.0 * loss.share_value)),
        ]
        if suppression is not None:
            facts += [
                ("cost of the secondary suppressions", format_value(suppression.cost)),
                ("proven optimal", format_value(suppression.optimal)),
                ("seconds", format_value(suppression.seconds)),
            ]
            if suppression.time_limited:
                facts.append(
                    (
                        "cut short by a wall-clock limit (the pattern may differ on another run)",
                        suppression.time_limited,
                    )
                )
    show_grids = table.n_cells <= MAX_GRID_CELLS
    from sdckit.tables import EMPTY_SYMBOL, SUPPRESSED_SYMBOL

    context = {
        "suppressed_symbol": SUPPRESSED_SYMBOL,
        "empty_symbol": EMPTY_SYMBOL,
        "title": title,
        "kind": kind,
        "version": __version__,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else "",
        "facts": facts,
        "dimensions": list(table.dimensions),
        "grids": _grids(table, kind) if show_grids else [],
        "suppressed_list": [] if show_grids else _suppressed_list(table, kind),
        "audit_ok": checked.ok,
        "rank": checked.intervals == "rank",
        "approximate": checked.intervals == "check",
        "n_primary": format_value(int(table.primary.sum())),
        "n_audited": len(checked.cells),
        "n_under": int((~checked.protected).sum()),
        "audit_rows": _audit_rows(table, checked) if kind == "internal" else [],
        "audit_truncated": kind == "internal" and len(checked.cells) > MAX_AUDIT_ROWS,
        "integer": checked.integer,
        "insider": _insider_facts(checked),
        "n_computable_secondaries": len(getattr(checked, "computable_secondaries", ())),
    }
    return _environment().get_template("table_report.html.j2").render(**context)


def write_table_report(
    result: Any,
    path: str | os.PathLike[str],
    *,
    kind: ReportKind = "internal",
    audit: Any = None,
    title: str = "Table protection report",
    timestamp: bool = False,
) -> Path:
    """Write the HTML report of a table protection (see :func:`render_table_report`).

    The file is written atomically (a temporary file renamed over ``path``; nothing is left
    half-written) and its directory created if needed.

    Examples
    --------
    >>> import numpy as np, pathlib, tempfile
    >>> from sdckit.tables import Table, MarkedCells, apply_rules, suppress_optimal
    >>> t = Table.from_array(np.array([[9, 4, 5], [5, 2, 3], [4, 2, 2]]),
    ...                      {"r": ["a", "b"], "c": ["x", "y"]})
    >>> res = suppress_optimal(apply_rules(t, MarkedCells(cells=[4], upper=1)), cost="unity")
    >>> out = write_table_report(res, pathlib.Path(tempfile.mkdtemp()) / "r" / "table.html")
    >>> out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    from sdckit.io import atomic_path

    target = Path(path)
    if target.suffix.lower() not in (".html", ".htm"):
        raise ParameterError("The report 'path' must end in .html.")
    text = render_table_report(result, kind=kind, audit=audit, title=title, timestamp=timestamp)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise DataError(
            f"The directory of {str(target)!r} cannot be created; choose a writable 'path'."
        ) from None
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def _insider_facts(checked: Any) -> dict[str, Any] | None:
    """What the report says of the insider audit (None: not run)."""
    found = getattr(checked, "insider_audit", None)
    if found is None:
        return None
    return {
        "level": found.level,
        "n_units": found.n_units,
        "ok": found.ok,
        "below": len(found.under_protected),
        "exact": len(found.disclosed),
    }
