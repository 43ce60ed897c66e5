"""The pages of the microdata workflow: open, roles, risk, protect, R-U map, release.

Each POST checks what it can at once (an error is shown next to its field, in the words of the
SdcError) and starts the long part as the background task, then redirects to the page that
shows it.  The small JSON API under ``/api`` drives the same workspace (the benchmark uses it).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import polars as pl
from fastapi import APIRouter, Request
from fastapi.responses import Response

from sdckit.errors import SdcError
from sdckit.protection import get_method
from sdckit.ui._forms import FormError, attach_error, fields_for, parse_fields
from sdckit.ui._render import fmt_number, form_dict, redirect, render, sdc_message, start_task
from sdckit.ui._workspace import Source, Workspace

__all__ = ["router"]

router = APIRouter()
PAGE_SIZE = 25


def _ws(request: Request) -> Workspace:
    return request.app.state.ws


def _na_values(text: str) -> tuple[str, ...] | None:
    text = text.strip()
    if not text:
        return None
    return tuple(v.strip() for v in text.split(",")) if text != "(none)" else ()


# ------------------------------------------------------------------ open
@router.get("/open")
def open_page(request: Request) -> Response:
    """Open a file: upload, path, or the demo data."""
    return render(request, "open.html.j2", page="open", errors={})


def _start_open(request: Request, source: Source) -> Response:
    ws = _ws(request)
    start_task(request, f"Opening {source.name}", lambda t: ws.open(source, t.progress), "/data")
    return redirect("/data")


@router.post("/open/demo")
def open_demo(request: Request) -> Response:
    """Open the bundled demo census (50,000 persons)."""
    return _start_open(request, Source(kind="demo", name="the sdckit demo data"))


@router.post("/open/path")
async def open_path(request: Request) -> Response:
    """Open a file given by its path on this computer."""
    form = await form_dict(request)
    text = str(form.get("path", "")).strip()
    errors: dict[str, str] = {}
    path = Path(text).expanduser()
    if not text:
        errors["path"] = "Give the path of a CSV, Parquet, SPSS, Stata or SAS file."
    elif not path.is_file():
        errors["path"] = f"The file {text!r} does not exist; check the path."
    if errors:
        return render(request, "open.html.j2", status=422, page="open", errors=errors)
    fmt = str(form.get("format", "")).strip() or None
    source = Source(
        kind="file", name=path.name, path=path.resolve(), format=fmt,
        na_values=_na_values(str(form.get("na_values", ""))),
    )  # fmt: skip
    return _start_open(request, source)


@router.post("/open/upload")
async def open_upload(request: Request) -> Response:
    """Open an uploaded file (stored under the output folder, which the job file names)."""
    ws = _ws(request)
    form = await request.form()
    upload = form.get("file")
    if upload is None or not getattr(upload, "filename", ""):
        return render(request, "open.html.j2", status=422, page="open",
                      errors={"file": "Choose a file to upload."})  # fmt: skip
    path = ws.save_upload(upload.filename, upload.file)  # type: ignore[union-attr]
    fmt = str(form.get("format", "") or "").strip() or None
    source = Source(
        kind="file", name=path.name, path=path, format=fmt,
        na_values=_na_values(str(form.get("na_values", "") or "")),
    )  # fmt: skip
    return _start_open(request, source)


# ------------------------------------------------------------------ roles
@router.get("/data")
def data_page(request: Request) -> Response:
    """The columns of the file, with their types and level counts, and the roles form."""
    ws = _ws(request)
    if not ws.has_data and not ws.tasks.busy:
        return redirect("/open")
    return render(request, "data.html.j2", page="data", errors={}, form_error=None, draft=None)


def _multipart_name(name: str) -> str:
    """A field name as a browser writes it in a multipart form (HTML's rule: ``"`` as
    ``%22``, line breaks as ``%0D`` / ``%0A``), which the form parser does not undo."""
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _form_value(form: dict[str, Any], name: str) -> Any:
    """The value of the input ``name``, however the browser sent it (url-encoded or
    multipart): a column called ``a"b`` is not dropped."""
    if name in form:
        return form[name]
    return form.get(_multipart_name(name))


def _roles_form(ws: Workspace, form: dict[str, Any]) -> tuple[dict, list, list, dict]:
    assignments, household_level, linked_to = {}, [], {}
    drop, numeric_keys = [], []
    for c in ws.column_names:
        assignments[c] = str(_form_value(form, f"role:{c}") or "")
        if _form_value(form, f"hh:{c}"):
            household_level.append(c)
        if _form_value(form, f"link:{c}"):
            linked_to[c] = str(_form_value(form, f"link:{c}"))
        if _form_value(form, f"drop:{c}"):
            drop.append(c)
        if _form_value(form, f"num:{c}") and assignments[c] == "key":
            numeric_keys.append(c)
    draft = {"assign": assignments, "hh": household_level, "link": linked_to, "drop": drop,
             "num": numeric_keys}  # fmt: skip
    return assignments, household_level, linked_to, draft


def _column_errors(ws: Workspace, message: str) -> dict[str, str]:
    """Put a roles error on the column it names (else on the form)."""
    for c in ws.column_names:
        if f"'{c}'" in message:
            return {c: message}
    return {}


@router.post("/data/roles")
async def set_roles(request: Request) -> Response:
    """Assign the roles and the release plan; the risk is assessed as a task."""
    ws = _ws(request)
    form = await form_dict(request)
    assignments, hh, linked_to, draft = _roles_form(ws, form)
    try:
        roles = ws.roles_from_form(assignments, hh, linked_to)
        ws.check_roles(roles, draft["num"])
    except SdcError as exc:
        message = sdc_message(exc)
        errors = _column_errors(ws, message)
        return render(request, "data.html.j2", status=422, page="data", errors=errors,
                      form_error=None if errors else message, draft=draft)  # fmt: skip
    drop, numeric_keys = draft["drop"], draft["num"]
    start_task(
        request, "Assessing the disclosure risk",
        lambda t: ws.set_roles(roles, drop, numeric_keys, t.progress), "/risk",
    )  # fmt: skip
    return redirect("/risk")


@router.post("/data/demo-roles")
def demo_roles(request: Request) -> Response:
    """The roles and release plan the demo job uses (for the demo data)."""
    from sdckit.datasets import DEMO_ROLES

    ws = _ws(request)
    roles = dict(DEMO_ROLES)
    roles["identifiers"] = ["person_id"]
    roles["household_level"] = ["region", "urban_rural", "household_size", "household_income"]
    drop = ["district", "area", "stratum", "age"]
    start_task(request, "Assessing the disclosure risk",
               lambda t: ws.set_roles(roles, drop, [], t.progress), "/risk")  # fmt: skip
    return redirect("/risk")


# ------------------------------------------------------------------ risk
def records_view(ws: Workspace, query: dict[str, str]) -> dict[str, Any]:
    """One page of the records at risk, filtered and sorted (never the whole file)."""
    frame = ws.risk_frame()
    mode = query.get("mode", "k")
    k = _int(query.get("k"), ws.target.get("k") or 3, 2, 1000)
    threshold = _float(query.get("threshold"), 0.05)
    # a word typed as a number is said beside the filter (the default is used, and shown)
    filter_error: dict[str, str] = {}
    k_text, threshold_text = str(query.get("k", k)).strip(), str(query.get("threshold", threshold))
    if k_text and not k_text.isdigit():
        filter_error["k"] = "k takes a whole number such as 3; the records shown use k = " + str(k)
    if threshold_text.strip() and _float(threshold_text, -1.0) == -1.0:
        filter_error["threshold"] = (
            "The individual risk takes a number from 0 to 1 such as 0.05; the records shown use "
            f"{threshold:g}."
        )
    if "fk" not in frame.columns:
        mode = "all"
    if mode == "k":
        view = frame.filter(pl.col("fk") < k)
    elif mode == "risk":
        view = frame.filter(pl.col("risk") >= threshold)
    else:
        view = frame
    column = query.get("col", "")
    value = query.get("val", "")
    if column in frame.columns and value != "":
        text = pl.col(column).cast(pl.String)
        view = view.filter(text.is_null() if value == "(missing)" else text == value)
    sort = query.get("sort", "risk" if "risk" in frame.columns else "record")
    if sort not in frame.columns:
        sort = "record"
    desc = query.get("desc", "1" if sort in ("risk", "household_risk", "dis_suda") else "0") == "1"
    total = view.height
    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = _int(query.get("page"), 1, 1, pages)
    rows = view.sort(sort, descending=desc, nulls_last=True).slice(
        (page - 1) * PAGE_SIZE, PAGE_SIZE
    )
    shown = [[_cell(v) for v in row] for row in rows.iter_rows()]
    return {
        "columns": frame.columns, "rows": shown, "total": total, "page": page, "pages": pages,
        "sort": sort, "desc": desc, "mode": mode, "k": k, "threshold": threshold,
        "col": column, "val": value, "records": frame.height, "filter_error": filter_error,
        "k_text": k_text, "threshold_text": threshold_text,
    }  # fmt: skip


def _cell(v: Any) -> str:
    if v is None:
        return "(missing)"
    if isinstance(v, float):
        return fmt_number(v)
    return str(v)


def _int(text: Any, default: int, low: int, high: int) -> int:
    try:
        value = int(str(text))
    except (TypeError, ValueError):
        return default
    return min(max(value, low), high)


def _float(text: Any, default: float) -> float:
    try:
        value = float(str(text))
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


@router.get("/risk")
def risk_page(request: Request) -> Response:
    """The disclosure risk now and before any step, and the records at risk."""
    ws = _ws(request)
    if ws.session is None:
        if ws.tasks.busy:
            return render(request, "risk.html.j2", page="risk", view=None)
        return redirect("/data")
    view = records_view(ws, dict(request.query_params))
    return render(request, "risk.html.j2", page="risk", view=view)


@router.post("/risk/suda2")
def run_suda2(request: Request) -> Response:
    """SUDA2 scores of the current file (a task in a child process)."""
    ws = _ws(request)
    start_task(request, "SUDA2", lambda t: ws.run_suda2(t.progress, t.cancel_event),
               "/risk?sort=dis_suda&desc=1&mode=all")  # fmt: skip
    return redirect("/risk")


# ------------------------------------------------------------------ protect
def _method_fields(name: str) -> tuple[Any, list[Any]]:
    cls = get_method(name)
    return cls, fields_for(cls, skip=("seed",))


def _levels(ws: Workspace, column: str, limit: int = 300) -> list[tuple[str, int]]:
    if ws.session is None or column not in ws.session.current.frame.columns:
        return []
    counts = (
        ws.session.current.frame.get_column(column).drop_nulls().cast(pl.String)
        .value_counts(sort=False).sort(column)
    )  # fmt: skip
    if counts.height > 10 * limit:  # not a list of categories: no numeric sort of them all
        counts = counts.head(limit)
    rows = [(str(v), int(n)) for v, n in counts.iter_rows()]
    numbers = [_as_number(v) for v, _ in rows]
    if rows and all(x is not None for x in numbers):  # -1, 0, 1, 2, ..., 10, not 1, 10, 11
        rows = [r for _, r in sorted(zip(numbers, rows, strict=True), key=lambda t: t[0])]
    return rows[:limit]


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _protect_context(ws: Workspace, query: dict[str, Any], fields: Any = None) -> dict:
    name = str(query.get("method") or "global_recoding")
    try:
        cls, default_fields = _method_fields(name)
    except SdcError:
        name = "global_recoding"
        cls, default_fields = _method_fields(name)
    fields = fields if fields is not None else default_fields
    level_column = ""
    for f in fields:
        if f.widget == "levels":
            raw = f.raw if isinstance(f.raw, dict) else {}
            level_column = str(query.get(f"p-{f.name}.column") or raw.get("column") or "")
            keys = ws.columns_of_role("keys")
            if not level_column and keys:
                level_column = keys[0]
    return {
        "method": name, "cls": cls, "fields": fields, "level_column": level_column,
        "levels": _levels(ws, level_column) if level_column else [],
        "stochastic": "seed" in cls.parameters,
        "searches": _searches(ws),
    }  # fmt: skip


def _searches(ws: Workspace) -> list[dict[str, Any]]:
    """What each automatic protection step chose, why, and the lattice's frontier."""
    return [] if ws.session is None or ws.runner is None else ws.runner.searches()


@router.get("/protect")
def protect_page(request: Request) -> Response:
    """The protection methods with their forms, the history of steps, undo and redo."""
    ws = _ws(request)
    if ws.session is None and not ws.tasks.busy:
        return redirect("/data")
    query = dict(request.query_params)
    draft = getattr(ws, "step_draft", None)
    form_error = None
    task = ws.tasks.current
    if (
        draft is not None and task is not None and task.id == draft["task"]
        and not task.running and str(query.get("method") or "") == draft["form"]["method"]
    ):  # fmt: skip
        # the step failed: its form again with its values and the message beside it
        query = {**draft["form"], **{k: v for k, v in query.items() if k != "method"}}
        task.shown = True  # type: ignore[attr-defined]
        ws.step_draft = None
        form_error = draft["error"]
    context = _protect_context(ws, query)
    if any(k.startswith("p-") for k in query):
        with contextlib.suppress(FormError):
            parse_fields(context["fields"], query)  # a draft shown again (levels chosen)
    if form_error is not None:
        form_error = attach_error(context["fields"], form_error)
    return render(request, "protect.html.j2", page="protect", form_error=form_error,
                  plot_var=query.get("plot", ""), **context)  # fmt: skip


@router.post("/protect/apply")
async def apply_step(request: Request) -> Response:
    """Check the parameters (errors next to their fields), then apply the step as a task."""
    ws = _ws(request)
    form = await form_dict(request)
    context = _protect_context(ws, form)
    name, fields = context["method"], context["fields"]
    try:
        params = parse_fields(fields, form)
        spec, method = ws.prepare_step(name, params)
        needed = ws.numbers_needed(name, params)
    except FormError as exc:
        for f in fields:
            if f.name == exc.field:
                f.error = exc.message
        return render(request, "protect.html.j2", status=422, page="protect", form_error=None,
                      plot_var="", **context)  # fmt: skip
    except SdcError as exc:
        message = attach_error(fields, sdc_message(exc))
        return render(request, "protect.html.j2", status=422, page="protect",
                      form_error=message, plot_var="", **context)  # fmt: skip
    draft = {k: v for k, v in form.items() if k == "method" or k.startswith("p-")}

    def work(task: Any) -> None:
        try:
            ws.apply_step_reading_numbers(spec, method, needed, task.progress)
        except SdcError as exc:
            # shown again beside the form, with what was typed (not a banner at the top)
            ws.step_draft = {"form": draft, "error": sdc_message(exc), "task": task.id}
            raise

    ws.step_draft = None
    start_task(request, f"Applying {method.name}", work,
               f"/protect?method={name}")  # fmt: skip
    return redirect(f"/protect?method={name}")


@router.post("/protect/undo")
def undo(request: Request) -> Response:
    """Undo the last step."""
    return _history_action(request, lambda ws: ws.undo())


@router.post("/protect/redo")
def redo(request: Request) -> Response:
    """Redo the last undone step."""
    return _history_action(request, lambda ws: ws.redo())


@router.post("/protect/back")
async def back_to(request: Request) -> Response:
    """Undo every step after the chosen one."""
    form = await form_dict(request)
    number = _int(form.get("step"), 0, 0, 10_000)
    return _history_action(request, lambda ws: ws.back_to(number))


def _history_action(request: Request, action: Any) -> Response:
    ws = _ws(request)
    if ws.tasks.busy:
        message = "Wait for the running task to finish or cancel it first."
        return render(request, "busy.html.j2", status=409, message=message)
    try:
        action(ws)
    except SdcError as exc:
        ws.notice = sdc_message(exc)
    return redirect("/protect")
