"""Build the HTML report of a protection session (see :mod:`sdckit.report`)."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import jinja2
import numpy as np
import polars as pl
from markupsafe import Markup

from sdckit import __version__
from sdckit._results import format_value
from sdckit._validation import check_choice
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata

__all__ = ["describe_step", "render_report", "write_report"]

ReportKind = Literal["internal", "external"]

_FIGURE_LABELS = {
    "records": "records",
    "sample_uniques": "sample uniques",
    "k2_violations": "records violating 2-anonymity",
    "k3_violations": "records violating 3-anonymity",
    "k5_violations": "records violating 5-anonymity",
    "expected_reidentifications": "expected re-identifications",
    "global_risk_pct": "global risk (%)",
    "highest_risk": "highest individual risk",
    "sse_sst_pct": "SSE/SST of numeric variables (%)",
    "il1s": "IL1s of numeric variables",
    "share_keys_changed": "share of key values changed",
    "key_values_suppressed": "key values suppressed",
}

_ROLE_LABELS = {
    "keys": "key variables",
    "numeric": "numeric variables",
    "weight": "weight",
    "strata": "strata",
    "household": "household id",
    "sensitive": "sensitive variables",
}
_MAX_BAR_CHARTS = 3
_MAX_BAR_CATEGORIES = 30
_MAX_HISTOGRAMS = 2
_DPI = 90


@dataclass(frozen=True)
class _Plot:
    title: str
    data: str
    width: int
    height: int


def _method_class(method_name: str) -> Any:
    from sdckit.protection import registry

    for cls_name, cls in registry().items():
        if cls.name == method_name or cls_name == method_name:
            return cls
    return None


def describe_step(method: str, variables: Sequence[str]) -> str:
    """A general description of a protection step, without any parameter.

    Parameters
    ----------
    method : str
        The method's display name (``Step.method``, e.g. ``"PRAM"``) or class name.
    variables : list of str
        The variables the step changed.

    Returns
    -------
    str

    Examples
    --------
    >>> describe_step("PRAM", ["marital_status"])  # doctest: +ELLIPSIS
    'Changes some values of marital_status at random ...'
    """
    cls = _method_class(method)
    if cls is not None:
        return str(cls.describe(variables))
    names = ", ".join(variables) if variables else "some variables"
    return f"The method '{method}' was applied to {names}."


def _format_param(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    if isinstance(value, np.random.Generator):
        return "numpy Generator"
    text = repr(value)
    return text if len(text) <= 400 else text[:397] + "..."


def _render_png(fig: Any, title: str) -> _Plot:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    width, height = (round(float(v) * _DPI) for v in fig.get_size_inches())
    return _Plot(title, base64.b64encode(buffer.getvalue()).decode("ascii"), width, height)


def _table(frame: pl.DataFrame, caption: str = "") -> dict[str, Any]:
    rows = [
        [v if isinstance(v, str) else format_value(v) for v in row] for row in frame.iter_rows()
    ]
    return {"caption": caption, "columns": frame.columns, "rows": rows}


def _changed_variables(session: Any) -> list[str]:
    """Variables changed by any step, the most changed first."""
    counts: dict[str, int] = {}
    for step in session.history:
        for name, count in step.changed.items():
            counts[name] = counts.get(name, 0) + int(count)
    return sorted(counts, key=lambda name: -counts[name])


def _figures_table(session: Any) -> dict[str, Any]:
    states = [("original", session.initial_figures)]
    states += [(f"{s.number}. {s.method}", s.figures) for s in session.history]
    labels = list(dict.fromkeys(k for _, fig in states for k in fig))
    rows = []
    for key in labels:
        cells = [_FIGURE_LABELS.get(key, key.replace("_", " "))]
        for _, fig in states:
            value = fig.get(key)
            cells.append("" if value is None else format_value(value))
        rows.append(cells)
    return {"columns": ["measure", *(name for name, _ in states)], "rows": rows}


def _utility(original: Microdata, current: Microdata) -> tuple[list[Markup], list[dict[str, Any]]]:
    summaries: list[Markup] = []
    tables: list[dict[str, Any]] = []
    if current.n_records != original.n_records:
        return summaries, tables
    if current.numeric:
        from sdckit.utility import continuous_loss

        cont = continuous_loss(original, current)
        summaries.append(Markup(cont.summary().as_html()))
        tables.append(_table(_as_polars(cont.to_frame()), "Numeric variables"))
    if current.keys:
        from sdckit.utility import categorical_loss

        cat = categorical_loss(original, current)
        summaries.append(Markup(cat.summary().as_html()))
        tables.append(_table(_as_polars(cat.per_variable), "Key variables"))
    return summaries, tables


def _as_polars(frame: Any) -> pl.DataFrame:
    return frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)


def _plots(session: Any, ru_map: Any) -> list[_Plot]:
    from sdckit import plots

    original, current = session.original, session.current
    aligned = original.n_records == current.n_records
    changed = _changed_variables(session)
    out: list[_Plot] = []
    before, after = session.initial_risk.individual, session.risk.individual
    if before is not None:
        out.append(
            _render_png(
                plots.risk_distribution(before),
                "Individual re-identification risk of the original file",
            )
        )
        if session.history and after is not None:
            out.append(
                _render_png(
                    plots.risk_distribution(after),
                    "Individual re-identification risk of the protected file",
                )
            )
    categorical = [
        v
        for v in changed
        if (v in original.keys or v in original.sensitive)
        and original.frame.get_column(v).n_unique() <= _MAX_BAR_CATEGORIES
    ]
    for var in categorical[:_MAX_BAR_CHARTS]:
        out.append(_render_png(plots.bar_chart(original, current, var), f"Categories of {var}"))
    numeric = [v for v in changed if v in original.numeric]
    if numeric:
        out.append(
            _render_png(
                plots.boxplots(original, current, numeric[:6]),
                "Box plots of the changed numeric variables",
            )
        )
        for var in numeric[:_MAX_HISTOGRAMS]:
            out.append(
                _render_png(plots.histogram(original, current, var), f"Distribution of {var}")
            )
    if aligned and len(original.numeric) >= 2 and numeric:
        num = list(original.numeric)
        out.append(
            _render_png(
                plots.correlation_heatmaps(original, current, num),
                "Correlations of the numeric variables and their change",
            )
        )
        out.append(
            _render_png(
                plots.pca_plane(original, current, num),
                "Original and protected records on the first two principal components",
            )
        )
    if ru_map is not None:
        out.append(_render_png(plots.ru_map_plot(ru_map), "R-U confidentiality map"))
    return out


def _release_context(release: Any, kind: str) -> dict[str, Any] | None:
    if release is None:
        return None
    check = release.check
    counts = check.counts()
    sentence = (
        f"{counts['k_violations']} records break the k-anonymity target, "
        f"{counts['recoverable_values']} protected values can be read back from other released "
        f"columns or from the household, and {counts['identifiers']} direct identifiers are in "
        "the file."
    )
    if kind == "external":
        return {"sentence": sentence}
    rows: list[tuple[str, str]] = [
        (label, value if isinstance(value, str) else format_value(value))
        for label, value in check.summary().rows
    ]
    findings = check.to_frame().select("check", "column", "target", "count", "how")
    return {
        "ok": check.ok,
        "refusal": release.refusal(),
        "rows": rows,
        "findings": _table(findings),
        "roles": list(release.roles.items()),
        "sentence": sentence,
    }


def _external_context(session: Any) -> dict[str, Any]:
    methods = []
    for step in session.history:
        method = step.protection
        variables = list(step.changed)
        text = (
            method.describe(variables)
            if method is not None
            else describe_step(step.method, variables)
        )
        if text not in methods:
            methods.append(text)
    current = session.current
    outcome: list[tuple[str, str]] = [("records released", f"{current.n_records:,}")]
    k = session.risk.smallest_class
    if k is not None:
        label = "k-anonymity reached on the key variables"
        outcome.append((label, f"k = {k}" if k >= 2 else "not k-anonymous (k = 1)"))
    share = session.utility.share_keys_changed
    if share:
        outcome.append(("key values changed or suppressed", f"{100.0 * share:.1f} %"))
    return {"methods": methods, "outcome": outcome}


def _internal_context(
    session: Any, ru_map: Any, target: tuple[str, bool] | None, plots: bool
) -> dict[str, Any]:
    original, current = session.original, session.current
    roles = original.roles()
    file_rows: list[tuple[str, str]] = [
        ("records (original)", f"{original.n_records:,}"),
        ("records (protected)", f"{current.n_records:,}"),
        ("columns", f"{len(original.frame.columns):,}"),
    ]
    for role in ("keys", "numeric", "weight", "strata", "household", "sensitive"):
        value = roles.get(role)
        if value:
            text = value if isinstance(value, str) else ", ".join(value)
            file_rows.append((_ROLE_LABELS[role], text))
    k = session.risk.smallest_class
    if k is not None:
        file_rows.append(("k-anonymity of the protected file", f"k = {k}"))
    history = [
        {
            "number": s.number,
            "method": s.method,
            "params": ", ".join(
                f"{name}={_format_param(v)}" for name, v in s.params.items() if v is not None
            ),
            "changed": ", ".join(f"{name}: {count:,}" for name, count in s.changed.items()) or "-",
            "records": f"{s.n_changed_records:,}",
        }
        for s in session.history
    ]
    utility, utility_tables = _utility(original, current)
    ru = None
    if ru_map is not None:
        ru = _table(ru_map.to_frame())
        ru["summary"] = Markup(ru_map.summary().as_html())
    return {
        "file_rows": file_rows,
        "figures_table": _figures_table(session),
        "target": {"text": target[0], "met": bool(target[1])} if target else None,
        "history": history,
        "utility": utility,
        "utility_tables": utility_tables,
        "ru": ru,
        "plots": _plots(session, ru_map) if plots else [],
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("sdckit.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def render_report(
    session: Any,
    *,
    kind: ReportKind = "internal",
    ru_map: Any = None,
    title: str = "Statistical disclosure control report",
    target: tuple[str, bool] | None = None,
    plots: bool = True,
    release: Any = None,
) -> str:
    """The HTML text of the report of a protection session.

    Parameters
    ----------
    session : sdckit.session.Session
    kind : {"internal", "external"}
        ``"internal"``: every risk and utility figure, the history with all parameters, the
        figures and the R-U map.  ``"external"``: what may be published: the methods in
        general terms, the k-anonymity level reached and the share of key values changed; no
        parameter, no record-level data, no figure, no small count.
    ru_map : sdckit.utility.RUMapResult, optional
        An R-U map to show (internal report only).
    title : str
    target : (str, bool), optional
        A risk target as ``(description, met)``, shown in the internal report.
    plots : bool, default True
        Draw the figures of the internal report (False: tables only, much faster).
    release : sdckit.release.Release, optional
        The released file and its independent check: the counts go into both reports (the
        internal one also lists the findings and the release role of every column).

    Returns
    -------
    str
        A self-contained HTML document (figures are embedded PNG images).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.session import Session
    >>> s = Session(pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2]}), keys=["a", "b"])
    >>> "<html" in render_report(s, kind="external")
    True
    """
    from sdckit.session import Session

    if not isinstance(session, Session):
        raise ParameterError("The 'session' parameter must be an sdckit.session.Session.")
    check_choice(kind, "kind", ("internal", "external"))
    if not isinstance(title, str) or not title.strip():
        raise ParameterError("The 'title' parameter must be a non-empty string.")
    if target is not None and (
        not isinstance(target, tuple) or len(target) != 2 or not isinstance(target[0], str)
    ):
        raise ParameterError("The 'target' parameter must be a (description, met) pair.")
    context: dict[str, Any] = {
        "title": title,
        "kind": kind,
        "version": __version__,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if kind == "internal":
        context.update(_internal_context(session, ru_map, target, plots))
    else:
        context.update(_external_context(session))
    context["release"] = _release_context(release, kind)
    return _environment().get_template("report.html.j2").render(**context)


def write_report(
    session: Any,
    path: str | Path,
    *,
    kind: ReportKind = "internal",
    ru_map: Any = None,
    title: str = "Statistical disclosure control report",
    target: tuple[str, bool] | None = None,
    plots: bool = True,
    release: Any = None,
) -> Path:
    """Write the HTML report of a session to ``path`` (atomically) and return the path.

    See :func:`render_report` for the parameters and the content of each kind.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> from sdckit.session import Session
    >>> s = Session(pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2]}), keys=["a", "b"])
    >>> out = write_report(s, pathlib.Path(tempfile.mkdtemp()) / "r.html", kind="external")
    >>> out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    from sdckit.io import atomic_path

    text = render_report(
        session, kind=kind, ru_map=ru_map, title=title, target=target, plots=plots,
        release=release,
    )  # fmt: skip
    target_path = Path(path)
    with atomic_path(target_path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target_path
