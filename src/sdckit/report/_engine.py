"""The report of a protection job run on an engine, from the aggregates of its release check.

The job's records never come into memory, so the report is made of what the engine counted
(:class:`~sdckit.engines.EngineReleaseCheck`): the risk recounted on every record, the margins,
the changed values and the moments, and the attacks of a seeded sample, labelled as such.  It
is rendered with the template of the in-memory report (:mod:`sdckit.report._html`), so both
look alike; what needs every record in memory (the R-U map, the figures, the PRAM matrices of
the steps) is left out and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from sdckit import __version__
from sdckit._validation import check_choice
from sdckit.errors import ParameterError
from sdckit.report._html import (
    _ROLE_LABELS,
    ReportKind,
    _environment,
    _figure_label,
    _format_measure,
    _format_param,
    _table,
    describe_step,
)

__all__ = ["render_engine_report", "write_engine_report"]

#: Categories of one variable shown in the margins table of the report.
MAX_MARGIN_ROWS = 40


def _steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The steps as the template's history rows (method, params, values changed)."""
    out = []
    for i, step in enumerate(steps, start=1):
        if not isinstance(step, Mapping) or "method" not in step:
            raise ParameterError(
                "Each entry of 'steps' must be a dict with a 'method' (and optionally "
                "'params', 'variables', 'changed')."
            )
        changed = dict(step.get("changed") or {})
        params = dict(step.get("params") or {})
        out.append({
            "number": i,
            "method": str(step["method"]),
            "params": ", ".join(f"{n}={_format_param(v)}" for n, v in params.items()
                                if v is not None),
            "changed": ", ".join(f"{n}: {int(c):,}" for n, c in changed.items()) or "-",
            "records": f"{int(step['records']):,}" if step.get("records") is not None else "-",
            "variables": list(step.get("variables") or changed),
        })  # fmt: skip
    return out


def _sentence(check: Any) -> str:
    s = check.sample
    k_part = (
        f"{check.k_violations} records break {check.k}-anonymity (every record), "
        if check.k
        else ""
    )
    read = "every record" if check.whole_file else f"a sample of {check.sample_records:,} records"
    return (
        f"{k_part}{s.recoverable_values} protected values can be got back from the released "
        f"columns, its record order or its households beyond chance, "
        f"{s.perturbed_values} perturbed numbers can be estimated more closely, and "
        f"{len(s.identifiers)} identifiers are in the file (the attacks read {read})."
    )


def _release(check: Any, kind: str) -> dict[str, Any]:
    sentence = _sentence(check)
    if kind == "external":
        return {"sentence": sentence}
    rows = [(label, _format_measure(value, label)) for label, value in check.summary().rows]
    findings = check.to_frame().select("source", "check", "column", "target", "count", "chance",
                                       "how", "fix")  # fmt: skip
    attacks = check.sample.attacks_frame().with_columns(pl.col("chance").round(1))
    original, released = check.columns
    roles = [(c, "released" if c in released else "not released") for c in original]
    roles += [(c, "released (not in the original)") for c in released if c not in original]
    refusal = None
    if not check.ok:
        first = check.findings or check.sample.findings
        refusal = first[0].line() if first else "the release target is not met"
    return {
        "ok": check.ok,
        "refusal": refusal,
        "rows": rows,
        "target": check.target_lines(),
        "reconcile": [],
        "findings": _table(findings),
        "attacks": _table(attacks),
        "roles": roles,
        "sentence": sentence,
        "sample": check.sample_notes(),
    }


def _utility(check: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    figures = check.figures()
    summary = {
        "caption": "Information loss, counted on the engine (every record)",
        "rows": [
            ("share of key values changed (%)",
             _format_measure(figures["share_keys_changed"], "(%)", 100.0)),
            ("key values suppressed", _format_measure(figures["key_values_suppressed"], "")),
        ],
        "notes": [
            "Counted on every record by the engine: the frequency table of every key and "
            "stratum, the values changed record by record, and means, variances and "
            "correlations from sums; no figure here is a sample's.",
            *check.notes,
        ],
    }  # fmt: skip
    margins = check.margins.with_columns(pl.col("value").fill_null("(missing)"))
    kept = margins.group_by("variable", maintain_order=True).head(MAX_MARGIN_ROWS)
    caption = "Margins of the key variables and strata (records per value)"
    if kept.height < margins.height:
        caption += f"; at most {MAX_MARGIN_ROWS} values a variable shown"
    tables = [_table(check.changes, "Values changed per variable")]
    if check.numeric.height:
        tables.append(_table(check.numeric, "Numeric variables: means and variances"))
    if check.correlations.height:
        tables.append(_table(check.correlations, "Correlations (records with every numeric "
                                                 "variable present)"))  # fmt: skip
    tables.append(_table(kept, caption))
    return [summary], tables


def _internal(check: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    original = check.columns[0]
    file_rows = [
        ("records (original)", f"{check.n_records:,}"),
        ("records (protected)", f"{check.n_records:,}"),
        ("columns", f"{len(original):,}"),
        ("engine", check.engine),
    ]
    for role in ("keys", "numeric", "weight", "strata", "household", "sensitive"):
        value = check.roles.get(role)
        if value:
            file_rows.append(
                (_ROLE_LABELS[role], value if isinstance(value, str) else ", ".join(value))
            )
    if check.smallest_class is not None:
        file_rows.append(("k-anonymity of the protected file", f"k = {check.smallest_class}"))
    figures = check.figures()
    rows = []
    for key, value in figures.items():
        if key.startswith("sample_") or value is None:
            continue
        label, factor = _figure_label(key)
        rows.append([label, _format_measure(value, label, factor)])
    utility, tables = _utility(check)
    return {
        "file_rows": file_rows,
        "figures_table": {"columns": ["measure", "protected file (every record)"], "rows": rows},
        "target": {"text": check.target.describe(), "met": bool(check.target_met)},
        "history": steps,
        "utility": utility,
        "utility_tables": tables,
        "ru": None,
        "transitions": [],
        "plots": [],
    }


def _external(check: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    methods: list[str] = []
    for s in steps:
        text = describe_step(s["method"], s["variables"])
        if text not in methods:
            methods.append(text)
    outcome = [("records released", f"{check.n_records:,}")]
    k = check.smallest_class
    if k is not None:
        outcome.append(("k-anonymity reached on the key variables",
                        f"k = {k}" if k >= 2 else "not k-anonymous (k = 1)"))  # fmt: skip
    share = check.figures()["share_keys_changed"]
    if share:
        outcome.append(("share of key values changed or suppressed (%)", f"{100.0 * share:.1f}"))
    if check.risk.get("global_risk_pct") is not None:
        outcome.append(("estimated re-identification risk: global risk (%)",
                        f"{check.risk['global_risk_pct']:.2f}"))  # fmt: skip
    if check.risk.get("household_risk_pct") is not None:
        outcome.append(("estimated re-identification risk through households: global household "
                        "risk (%)", f"{check.risk['household_risk_pct']:.2f}"))  # fmt: skip
    return {"methods": methods, "outcome": outcome}


def render_engine_report(
    check: Any,
    *,
    steps: Sequence[Mapping[str, Any]] = (),
    kind: ReportKind = "internal",
    title: str = "Statistical disclosure control report",
    timestamp: bool = False,
) -> str:
    """The HTML text of the report of an engine job (see :func:`write_engine_report`)."""
    from sdckit.engines import EngineReleaseCheck

    if not isinstance(check, EngineReleaseCheck):
        raise ParameterError(
            "The 'check' parameter must be the result of sdckit.engines.check_on_engine."
        )
    check_choice(kind, "kind", ("internal", "external"))
    if not isinstance(title, str) or not title.strip():
        raise ParameterError("The 'title' parameter must be a non-empty string.")
    history = _steps(steps)
    context: dict[str, Any] = {
        "title": title,
        "kind": kind,
        "version": __version__,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else "",
    }
    context.update(_internal(check, history) if kind == "internal" else _external(check, history))
    context["release"] = _release(check, kind)
    return _environment().get_template("report.html.j2").render(**context)


def write_engine_report(
    check: Any,
    path: str | Path,
    *,
    steps: Sequence[Mapping[str, Any]] = (),
    kind: ReportKind = "internal",
    title: str = "Statistical disclosure control report",
    timestamp: bool = False,
) -> Path:
    """Write the report of a protection job run on an engine (atomically); return the path.

    The same template as :func:`sdckit.report.write_report`, filled from the aggregates of
    :func:`sdckit.engines.check_on_engine`: the risk recounted on every record, the margins,
    the changed values, means, variances and correlations (every record), and the attacks of a
    seeded sample (each figure of the sample says so).  The R-U map, the figures and the PRAM
    transition matrices need every record in memory and are not in it.

    Parameters
    ----------
    check : EngineReleaseCheck
        The result of :func:`sdckit.engines.check_on_engine` on the job's files.
    path : str or Path
    steps : sequence of dict, optional
        The job's steps, in order: ``{"method": "LocalSuppression", "params": {...},
        "variables": [...], "changed": {"age": 12, ...}, "records": 10}`` (all but
        ``method`` optional; the external report describes each method without parameters).
    kind : {"internal", "external"}
        As in :func:`sdckit.report.render_report`.
    title : str
    timestamp : bool, default False
        Show the time of writing (False: the same check gives the same bytes).

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> from sdckit.engines import check_on_engine
    >>> lf = pl.LazyFrame({"__sdckit_row": list(range(30)), "sex": [1, 2, 2] * 10})
    >>> res = check_on_engine(lf, lf, engine="streaming", roles={"keys": ["sex"]}, k=3,
    ...                       seed=1, sample_size=10)
    >>> out = write_engine_report(res, pathlib.Path(tempfile.mkdtemp()) / "r.html",
    ...                           steps=[{"method": "LocalSuppression", "params": {"k": 3}}])
    >>> "sample of" in out.read_text(encoding="utf-8")
    True
    """
    from sdckit.io import atomic_path

    text = render_engine_report(check, steps=steps, kind=kind, title=title, timestamp=timestamp)
    target = Path(path)
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target
