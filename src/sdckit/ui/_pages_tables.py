"""The pages of the tables workflow: build, rules, primaries, suppression, audit, export."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from sdckit.errors import ParameterError, SdcError
from sdckit.protection import get_method, registry
from sdckit.ui._forms import FormError, attach_error, fields_for, method_names, parse_fields
from sdckit.ui._render import form_dict, redirect, render, sdc_message, start_task
from sdckit.ui._tables import hierarchy_text, parse_hierarchy, safe_stem
from sdckit.ui._words import controls_words
from sdckit.ui._workspace import Workspace

__all__ = ["router"]

router = APIRouter()
AUDIT_ROWS = 30


def _ws(request: Request) -> Workspace:
    return request.app.state.ws


def _table_input(ws: Workspace) -> dict[str, Any]:
    """The ``[input]`` of a table job reading the open file (the demo is written out once)."""
    source = ws.source
    if source is None:
        raise ParameterError("Open a file first.")
    if source.kind == "demo":
        from sdckit.datasets import load_demo
        from sdckit.io import write_data

        path = ws.out_dir / "input" / "sdckit_demo.parquet"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_data(load_demo(), path)
        return {"file": str(path.resolve())}
    spec: dict[str, Any] = {"file": str(source.path)}
    if source.format:
        spec["format"] = source.format
    return spec


def _suppression_methods() -> list[tuple[str, str, str]]:
    return [m for m in method_names(registry("table"))
            if getattr(registry("table")[m[1]], "kind", "") == "suppression"]  # fmt: skip


def _context(ws: Workspace, query: dict[str, Any], *, rule_fields: Any = None,
             method_fields: Any = None) -> dict[str, Any]:  # fmt: skip
    ts = ws.tables
    rule = str(query.get("rule") or "min_frequency")
    try:
        rule_cls = get_method(rule, "rule")
    except SdcError:
        rule, rule_cls = "min_frequency", get_method("min_frequency", "rule")
    method = str(query.get("method") or ts.suppression.get("method", "hypercube"))
    try:
        method_cls = get_method(method, "table")
    except SdcError:
        method, method_cls = "hypercube", get_method("hypercube", "table")
    layer = {k[6:]: int(v) for k, v in query.items() if k.startswith("layer:") and str(v).isdigit()}
    audit_view = None
    if ts.audit is not None:
        frame = ts.audit.to_frame()
        pages = max(1, math.ceil(frame.height / AUDIT_ROWS))
        page = min(max(int(query.get("apage", 1) or 1), 1), pages)
        part = frame.slice((page - 1) * AUDIT_ROWS, AUDIT_ROWS)
        audit_view = {
            "columns": part.columns, "rows": [list(r) for r in part.iter_rows()],
            "page": page, "pages": pages, "total": frame.height,
        }  # fmt: skip
    return {
        "ts": ts,
        "grid": ts.grid(layer) if ts.shown is not None else {},
        "rule": rule,
        "rule_fields": rule_fields if rule_fields is not None else fields_for(rule_cls),
        "rule_methods": method_names(registry("rule")),
        "method": method,
        "method_fields": method_fields if method_fields is not None else fields_for(method_cls),
        "methods": _suppression_methods(),
        "hierarchy_text": hierarchy_text,
        "audit_view": audit_view,
        "errors": {},
        "form_error": None,
    }


@router.get("/tables")
def tables_page(request: Request) -> Response:
    """The tables workflow on one page."""
    ws = _ws(request)
    if not ws.has_data and not ws.tasks.busy:
        return redirect("/open")
    return render(
        request, "tables.html.j2", page="tables", **_context(ws, dict(request.query_params))
    )


@router.post("/tables/build")
async def build(request: Request) -> Response:
    """Build the table from the open file (dimensions, hierarchies, magnitude, weight)."""
    ws = _ws(request)
    form = await form_dict(request)
    dims = form.get("dimensions", [])
    dims = [dims] if isinstance(dims, str) else list(dims)
    spec: dict[str, Any] = {"dimensions": dims}
    errors: dict[str, str] = {}
    hierarchies: dict[str, Any] = {}
    for d in dims:
        try:
            tree = parse_hierarchy(str(form.get(f"h:{d}", "")), d)
        except SdcError as exc:
            errors[f"h:{d}"] = sdc_message(exc)
            continue
        if tree:
            hierarchies[d] = tree
    if hierarchies:
        spec["hierarchies"] = hierarchies
    for key in ("value", "weight", "respondent", "holding"):
        if str(form.get(key, "")).strip():
            spec[key] = str(form[key]).strip()
    for key in ("missing", "missing_value"):
        choice = str(form.get(key, "")).strip()
        if choice:
            spec[key] = choice
    if str(form.get("n_top", "")).strip():
        try:
            spec["n_top"] = int(str(form["n_top"]))
        except ValueError:
            errors["n_top"] = "The number of largest contributions kept must be an integer >= 1."
    if not dims:
        errors["dimensions"] = "[table] 'dimensions' must be a list of column names."
    if not errors:
        try:
            ws.tables.build(_table_input(ws), spec)
        except SdcError as exc:
            message = sdc_message(exc)
            key = next((k for k in ("value", "weight", "n_top") if f"'{k}'" in message or
                        f"table.{k}" in message), "dimensions")  # fmt: skip
            if message.startswith("The value column"):
                # beside the control that leaves the records without a value out
                key = "missing_value" if "missing_value" in message else "value"
            elif "missing_value" in message:
                key = "missing_value"
            elif "missing =" in message or "'missing'" in message:
                key = "missing"  # said beside the control that sets it, in its words
            if message.startswith(("The respondent column", "The holding column")):
                key = message.split()[1]  # beside the id control it names
            errors[key] = controls_words(message)
    if errors:
        context = _context(ws, {})
        context["errors"] = errors
        context["draft"] = {"spec": spec, "form": form}
        return render(request, "tables.html.j2", status=422, page="tables", **context)
    return redirect("/tables")


@router.post("/tables/rules/add")
async def add_rule(request: Request) -> Response:
    """Add a sensitivity rule (its parameters from its declaration)."""
    ws = _ws(request)
    form = await form_dict(request)
    name = str(form.get("rule", "min_frequency"))
    cls = get_method(name, "rule")
    fields = fields_for(cls)
    try:
        params = parse_fields(fields, form)
        ws.tables.set_rules([*ws.tables.rules, {"rule": name, **params}])
    except FormError as exc:
        for f in fields:
            if f.name == exc.field:
                f.error = exc.message
        context = _context(ws, {"rule": name}, rule_fields=fields)
        return render(request, "tables.html.j2", status=422, page="tables", **context)
    except SdcError as exc:
        message = sdc_message(exc).replace(f"rule {len(ws.tables.rules) + 1} ", "rule ")
        context = _context(ws, {"rule": name}, rule_fields=fields)
        context["form_error"] = attach_error(fields, sdc_message(exc)) and message
        return render(request, "tables.html.j2", status=422, page="tables", **context)
    return redirect(f"/tables?rule={name}")


@router.post("/tables/rules/remove")
async def remove_rule(request: Request) -> Response:
    """Remove a rule."""
    ws = _ws(request)
    form = await form_dict(request)
    i = int(str(form.get("index", "-1")))
    rules = [r for j, r in enumerate(ws.tables.rules) if j != i]
    ws.tables.set_rules(rules)
    return redirect("/tables")


@router.post("/tables/protect")
async def protect(request: Request) -> Response:
    """Secondary suppression and audit, in a child process (Cancel stops it at once)."""
    ws = _ws(request)
    form = await form_dict(request)
    name = str(form.get("method", "hypercube"))
    cls = get_method(name, "table")
    fields = fields_for(cls)
    try:
        params = parse_fields(fields, form)
        ws.tables.check_method(name, params)
    except FormError as exc:
        for f in fields:
            if f.name == exc.field:
                f.error = exc.message
        context = _context(ws, {"method": name}, method_fields=fields)
        return render(request, "tables.html.j2", status=422, page="tables", **context)
    except SdcError as exc:
        context = _context(ws, {"method": name}, method_fields=fields)
        context["form_error"] = attach_error(fields, sdc_message(exc))
        return render(request, "tables.html.j2", status=422, page="tables", **context)
    audit = bool(form.get("audit"))
    start_task(
        request, f"Secondary suppression ({name})",
        lambda t: ws.tables.protect(name, params, audit, t.progress, t.cancel_event),
        f"/tables?method={name}",
    )  # fmt: skip
    return redirect(f"/tables?method={name}")


@router.post("/tables/export")
def export(request: Request) -> Response:
    """Write the table job, the internal table and (if protected) the published table."""
    ws = _ws(request)
    stem = safe_stem(f"{ws.file_stem()}_{'_'.join(ws.tables.spec.get('dimensions', []))}")
    title = "Table: " + " by ".join(ws.tables.spec.get("dimensions", []))
    start_task(request, "Exporting the table",
               lambda t: ws.tables.export_all(ws.out_dir / "tables", stem, title, t.progress),
               "/tables#export")  # fmt: skip
    return redirect("/tables")
