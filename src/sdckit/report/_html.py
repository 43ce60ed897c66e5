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

from sdckit import __version__
from sdckit._codes import encode_column, first_index, group_ids
from sdckit._results import Summary, format_value
from sdckit._validation import check_choice
from sdckit.errors import ParameterError, SdcError
from sdckit.microdata import Microdata
from sdckit.utility.rumap import REFERENCE

__all__ = ["describe_step", "render_report", "write_report"]

ReportKind = Literal["internal", "external"]

#: The figures of the steps, by name: (label with its unit, factor from the value to the unit).
#: Every risk and share is shown in percent, here and in the figures (see sdckit.plots).
_FIGURES: dict[str, tuple[str, float]] = {
    "records": ("records", 1.0),
    "sample_uniques": ("sample uniques (records)", 1.0),
    "k2_violations": ("records violating 2-anonymity", 1.0),
    "k3_violations": ("records violating 3-anonymity", 1.0),
    "k5_violations": ("records violating 5-anonymity", 1.0),
    "expected_reidentifications": ("expected re-identifications (persons)", 1.0),
    "global_risk_pct": ("global risk (%)", 1.0),
    "highest_risk": ("highest individual risk (%)", 100.0),
    "household_expected_reidentifications": (
        "expected re-identifications through households (persons)",
        1.0,
    ),
    "household_risk_pct": ("global household risk (%)", 1.0),
    "sse_sst_pct": ("SSE/SST of numeric variables (%)", 1.0),
    "il1s": ("IL1s of numeric variables", 1.0),
    "share_keys_changed": ("share of key values changed (%)", 100.0),
    "key_values_suppressed": ("key values suppressed", 1.0),
}
_L_DIVERSITY = {
    "l_distinct_": "smallest distinct l-diversity of {}",
    "l_entropy_": "smallest entropy l-diversity of {}",
    "l_recursive_": "smallest recursive (c, l)-diversity of {}",
}
#: Rows of the utility summaries shown with the label (and unit) of the figures table.
_SUMMARY_ROWS: dict[str, tuple[str, float]] = {
    "share of changed values": _FIGURES["share_keys_changed"],
    "values suppressed": _FIGURES["key_values_suppressed"],
    "SSE/SST (%)": _FIGURES["sse_sst_pct"],
    "IL1s (size-corrected, per value)": _FIGURES["il1s"],
}
#: Columns of the per-variable utility tables that are shares: shown in percent.
_PERCENT_COLUMNS = {"share_changed": "share changed (%)"}
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


def _format_pct(value: float) -> str:
    """A percentage with three significant digits and at least two decimals (0.0814, 16.01)."""
    v = float(value)
    if not np.isfinite(v):
        return "n/a"
    if v == 0:
        return "0"
    decimals = max(2, 2 - int(np.floor(np.log10(abs(v)))))
    return f"{v:,.{decimals}f}"


def _format_measure(value: Any, label: str, factor: float = 1.0) -> str:
    """A value in the unit of its label: percent (``... (%)``) or as it is."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if label.endswith("(%)"):
        return _format_pct(float(value) * factor)
    return format_value(value if factor == 1.0 else float(value) * factor)


def _figure_label(key: str) -> tuple[str, float]:
    if key in _FIGURES:
        return _FIGURES[key]
    for prefix, text in _L_DIVERSITY.items():
        if key.startswith(prefix):
            rest = key[len(prefix) :]
            return text.format("the sensitive variables" if rest == "multi" else rest), 1.0
    return key.replace("_", " "), 1.0


def _table(frame: pl.DataFrame, caption: str = "") -> dict[str, Any]:
    """A frame as a table; share columns (``_PERCENT_COLUMNS``) in percent, labelled so."""
    columns = [_PERCENT_COLUMNS.get(c, c) for c in frame.columns]
    rows = [
        [
            _format_measure(v, label, 100.0 if name in _PERCENT_COLUMNS else 1.0)
            for name, label, v in zip(frame.columns, columns, row, strict=True)
        ]
        for row in frame.iter_rows()
    ]
    return {"caption": caption, "columns": columns, "rows": rows}


def _summary(summary: Summary, relabel: dict[str, tuple[str, float]] | None = None) -> dict:
    """A printable summary as a table, its rows relabelled with their units."""
    rows = []
    for label, value in summary.rows:
        shown, factor = (relabel or {}).get(label, (label, 1.0))
        rows.append((shown, _format_measure(value, shown, factor)))
    return {"caption": summary.title, "rows": rows, "notes": list(summary.notes)}


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
    keys = list(dict.fromkeys(k for _, fig in states for k in fig))
    rows = []
    for key in keys:
        label, factor = _figure_label(key)
        rows.append([label, *(_format_measure(fig.get(key), label, factor) for _, fig in states)])
    return {"columns": ["measure", *(name for name, _ in states)], "rows": rows}


def _utility(
    original: Microdata, current: Microdata
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    summaries: list[dict[str, Any]] = []
    tables: list[dict[str, Any]] = []
    if current.n_records != original.n_records:
        return summaries, tables
    from sdckit.utility.assessment import compared_variables

    numeric, keys = compared_variables(original, current)
    if numeric:
        from sdckit.utility import continuous_loss

        cont = continuous_loss(original, current, numeric=numeric)
        summaries.append(_summary(cont.summary(), _SUMMARY_ROWS))
        tables.append(_table(_as_polars(cont.to_frame()), "Numeric variables"))
    if keys:
        from sdckit.utility import categorical_loss

        cat = categorical_loss(original, current, variables=keys)
        summaries.append(_summary(cat.summary(), _SUMMARY_ROWS))
        tables.append(_table(_as_polars(cat.per_variable), "Key variables"))
    return summaries, tables


def _as_polars(frame: Any) -> pl.DataFrame:
    return frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)


def _step_input(session: Any, step: Any) -> Microdata:
    """The file a step was applied to."""
    if step.number == 1:
        return session.original
    return session.history[step.number - 2].result.microdata


def _strata_names(md: Microdata, n: int) -> list[str]:
    """Names of the ``n`` strata of ``md``, in the order of PRAM's per-stratum matrices."""
    if md.strata is not None:
        column = md.frame.get_column(md.strata)
        ids, n_groups = group_ids(encode_column(column)[0][:, None])
        if n_groups == n:
            values = column.gather(pl.Series(first_index(ids, n_groups))).to_list()
            return [f"stratum {'missing' if v is None else v}" for v in values]
    return [f"stratum {i + 1}" for i in range(n)]


def _transition_matrices(session: Any) -> list[dict[str, Any]]:
    """The transition matrices of every PRAM step, per variable (and stratum), as tables.

    Rows are the original categories, columns the released ones; probabilities with three
    decimals.  Confidential (they help to undo the protection): internal report only.
    """
    out: list[dict[str, Any]] = []
    for step in session.history:
        details = step.result.details
        transition, levels = details.get("transition"), details.get("levels")
        if not isinstance(transition, dict) or not isinstance(levels, dict):
            continue
        expected = details.get("expected_share_changed") or {}
        for variable, value in transition.items():
            matrices = [np.asarray(m, dtype=np.float64) for m in
                        (value if isinstance(value, list | tuple) else [value])]  # fmt: skip
            if len(matrices) > 1:  # one matrix per stratum
                strata = _strata_names(_step_input(session, step), len(matrices))
            else:
                strata = [""]
            names = [str(v) for v in levels.get(variable, [])]
            tables = []
            for matrix, stratum in zip(matrices, strata, strict=True):
                if matrix.ndim != 2 or not matrix.size:
                    continue
                labels = (
                    names
                    if len(names) == matrix.shape[0]
                    else [str(i + 1) for i in range(matrix.shape[0])]
                )
                rows = [
                    (label, [(f"{p:.3f}", i == j) for j, p in enumerate(row)])
                    for i, (label, row) in enumerate(zip(labels, matrix, strict=True))
                ]
                tables.append({"caption": stratum, "columns": labels, "rows": rows})
            if not tables:
                continue
            share = expected.get(variable)
            out.append(
                {
                    "step": step.number,
                    "method": step.method,
                    "variable": variable,
                    "tables": tables,
                    "expected_change": None if share is None else _format_pct(100.0 * share),
                }
            )
    return out


#: The disclosure measures of a synthesis step shown in the internal report (synthpop's).
_SYNTHETIC_MEASURES = {
    "UiO": "unique in the original, UiO (%)",
    "repU": "replicated uniques, repU (%)",
    "Dorig": "disclosive in the original, Dorig (%)",
    "DiSCO": "disclosive in synthetic, correct, DiSCO (%)",
    "DiSDiO": "also disclosive in the original, DiSDiO (%)",
    "TCAP": "TCAP (%)",
}


def _synthetic_disclosure(session: Any) -> list[dict[str, Any]]:
    """synthpop's disclosure measures of every synthesis step against the file it replaced.

    Keys: the original's keys; targets: the synthesised variables that are not keys (numeric
    ones in 20 quantile groups, as synthpop's vignette does for income).
    """
    from sdckit.masking import Synthesis
    from sdckit.utility import synthetic_disclosure

    out: list[dict[str, Any]] = []
    for step in session.history:
        if not isinstance(step.protection, Synthesis):
            continue
        before = _step_input(session, step)
        keys = list(before.keys)
        order = step.result.details.get("visit_sequence") or []
        targets = [c for c in order if c not in keys]
        if not keys or not targets:
            continue
        numeric = {c: 20 for c in targets if c in before.numeric}
        try:
            res = synthetic_disclosure(
                before, step.result.microdata, keys=keys, targets=targets, ngroups_targets=numeric
            )
        except SdcError:  # e.g. a numeric variable with no value to group: no table, no crash
            continue
        table = res.measures.select("target", *_SYNTHETIC_MEASURES)
        table = table.rename(_SYNTHETIC_MEASURES)
        flagged = sorted(
            set(res.checks_1way.get_column("target")) | set(res.checks_2way.get_column("target"))
        )
        out.append(
            {
                "step": step.number,
                "method": step.method,
                "key_variables": ", ".join(keys),
                "table": _table(table, "Disclosure measures of the synthetic file"),
                "flagged": ", ".join(flagged),
            }
        )
    return out


def _figures(session: Any, ru_map: Any) -> list[tuple[Any, str]]:
    """The figures of the internal report with their captions (matplotlib Figures)."""
    from sdckit import plots

    original, current = session.original, session.current
    aligned = original.n_records == current.n_records
    changed = _changed_variables(session)
    out: list[tuple[Any, str]] = []
    before, after = session.initial_risk.individual, session.risk.individual
    if before is not None:
        # the original and the protected file on the same bins, risk range and count range
        risks, captions = [before], ["Individual re-identification risk of the original file"]
        if session.history and after is not None:
            risks.append(after)
            captions.append("Individual re-identification risk of the protected file")
        titles = [c.replace(" re-identification", "") for c in captions]
        figures = plots.risk_distributions(*risks, titles=titles)
        out += list(zip(figures, captions, strict=True))
    # a numeric variable cut into intervals is a key of the protected file (bars, not boxes)
    categorical = [
        v
        for v in changed
        if (v in current.keys or v in original.sensitive)
        and current.frame.get_column(v).n_unique() <= _MAX_BAR_CATEGORIES
        and original.frame.get_column(v).n_unique() <= _MAX_BAR_CATEGORIES
    ]
    for var in categorical[:_MAX_BAR_CHARTS]:
        out.append((plots.bar_chart(original, current, var), f"Categories of {var}"))
    numeric = [v for v in changed if v in original.numeric and v in current.numeric]
    if numeric:
        out.append(
            (
                plots.boxplots(original, current, numeric[:6]),
                "Box plots of the changed numeric variables",
            )
        )
        for var in numeric[:_MAX_HISTOGRAMS]:
            out.append((plots.histogram(original, current, var), f"Distribution of {var}"))
    num = [v for v in original.numeric if v in current.numeric]
    if aligned and len(num) >= 2 and numeric:
        out.append(
            (
                plots.correlation_heatmaps(original, current, num),
                "Correlations of the numeric variables and their change",
            )
        )
        out.append(
            (
                plots.pca_plane(original, current, num),
                "Original and protected records on the first two principal components",
            )
        )
    if ru_map is not None:
        caption = "R-U confidentiality map"
        if ru_map.best is not None:
            what = "recommended" if ru_map.max_risk is not None else "least loss"
            caption += f" (circled: the {what} candidate, {ru_map.best})"
        out.append((plots.ru_map_plot(ru_map), caption))
    return out


def _plots(session: Any, ru_map: Any) -> list[_Plot]:
    return [_render_png(fig, caption) for fig, caption in _figures(session, ru_map)]


def _ru_context(ru_map: Any) -> dict[str, Any]:
    """The R-U map's summary and table, risks and losses in the unit of the plot's axes."""
    from sdckit.plots import measure_display

    risk_label, rf = measure_display(ru_map.risk_name)
    loss_label, lf = measure_display(ru_map.loss_name)
    points, best = ru_map.to_frame(), ru_map.best
    candidates = points.filter(~pl.col("candidate").is_in(REFERENCE))
    rows: list[tuple[str, str]] = [
        ("candidates", format_value(candidates.height)),
        ("on the Pareto front", format_value(int(candidates["pareto"].sum()))),
        (f"risk of the original file: {risk_label}",
         _format_measure(float(points["risk"][0]), risk_label, rf)),
    ]  # fmt: skip
    if ru_map.max_risk is not None:
        rows += [
            (f"maximum tolerable risk: {risk_label}",
             _format_measure(float(ru_map.max_risk), risk_label, rf)),
            ("admissible candidates", format_value(int(candidates["admissible"].sum()))),
            ("recommended (least loss below the maximum risk)", best or "none"),
        ]  # fmt: skip
    elif best is not None:
        rows.append(("least loss (no maximum tolerable risk given)", best))
    columns = ["candidate", "method", risk_label, "sd of the risk", loss_label,
               "sd of the loss", "replicates", "Pareto front", "admissible"]  # fmt: skip
    table = []
    for r in points.iter_rows(named=True):
        cells = [
            str(r["candidate"]),
            str(r["method"]),
            _format_measure(r["risk"], risk_label, rf),
            _format_measure(r["risk_sd"], risk_label, rf),
            _format_measure(r["loss"], loss_label, lf),
            _format_measure(r["loss_sd"], loss_label, lf),
            format_value(r["replicates"]),
            format_value(bool(r["pareto"])),
            format_value(bool(r["admissible"])),
        ]
        table.append({"cells": cells, "best": best is not None and r["candidate"] == best})
    notes = [f"risk measure: {risk_label}; loss measure: {loss_label}"]
    if best is not None:
        notes.append(f"In bold: {best}, the candidate circled in the R-U map figure.")
    return {"rows": rows, "notes": notes, "columns": columns, "table": table, "best": best}


def _release_context(release: Any, kind: str, session: Any = None) -> dict[str, Any] | None:
    if release is None:
        return None
    check = release.check
    counts = check.counts()
    k_part = f"{counts['k_violations']} records break {check.k}-anonymity, " if check.k else ""
    sentence = (
        f"{k_part}{counts['recoverable_values']} protected values can be got back from the "
        f"released columns, its record order or its households beyond chance, "
        f"{counts['perturbed_values']} perturbed numbers can be estimated more closely, and "
        f"{counts['identifiers']} identifiers are in the file."
    )
    if kind == "external":
        return {"sentence": sentence}
    rows = [(label, _format_measure(value, label)) for label, value in check.summary().rows]
    findings = check.to_frame().select("check", "column", "target", "count", "chance", "how",
                                       "fix")  # fmt: skip
    attacks = check.attacks_frame().with_columns(pl.col("chance").round(1))
    reconcile = []
    if session is not None:
        original = session.original
        reconcile = check.reconcile(original.keys, session.figures, original.household is not None)
    return {
        "ok": check.ok,
        "refusal": release.refusal(),
        "rows": rows,
        "target": check.target_lines(),
        "reconcile": reconcile,
        "findings": _table(findings),
        "attacks": _table(attacks),
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
    # the same labels and unit (percent) as the internal report, rounded
    share = session.utility.share_keys_changed
    if share:
        outcome.append(("share of key values changed or suppressed (%)", f"{100.0 * share:.1f}"))
    risk = session.risk
    if risk.global_risk_pct is not None:
        label = "estimated re-identification risk: global risk (%)"
        outcome.append((label, f"{risk.global_risk_pct:.2f}"))
    if risk.household_risk_pct is not None:
        label = "estimated re-identification risk through households: global household risk (%)"
        outcome.append((label, f"{risk.household_risk_pct:.2f}"))
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
    return {
        "file_rows": file_rows,
        "figures_table": _figures_table(session),
        "target": {"text": target[0], "met": bool(target[1])} if target else None,
        "history": history,
        "utility": utility,
        "utility_tables": utility_tables,
        "ru": None if ru_map is None else _ru_context(ru_map),
        "transitions": _transition_matrices(session),
        "synthetic": _synthetic_disclosure(session),
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
    timestamp: bool = False,
) -> str:
    """The HTML text of the report of a protection session.

    Parameters
    ----------
    session : sdckit.session.Session
    kind : {"internal", "external"}
        ``"internal"``: every risk and utility figure, the history with all parameters, the
        transition matrices of the PRAM steps, the figures and the R-U map (its recommended
        candidate in bold and circled).  ``"external"``: what may be published: the methods in
        general terms, the k-anonymity level reached, the share of key values changed and the
        global risks; no parameter, no record-level data, no figure, no small count.  Risks
        and shares are in percent everywhere, tables and figures, with the unit in the label.
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
    timestamp : bool, default False
        Show the time of writing (False: the same session gives the same bytes).

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
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else "",
    }
    if kind == "internal":
        context.update(_internal_context(session, ru_map, target, plots))
    else:
        context.update(_external_context(session))
    context["release"] = _release_context(release, kind, session)
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
    timestamp: bool = False,
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
        release=release, timestamp=timestamp,
    )  # fmt: skip
    target_path = Path(path)
    with atomic_path(target_path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target_path
