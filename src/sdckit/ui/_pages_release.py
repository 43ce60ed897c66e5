"""The pages after the protection steps: the R-U map, the release check and the exports, the
figures, and the small JSON API (which the benchmark drives)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from sdckit.errors import ParameterError, SdcError
from sdckit.ui._forms import FormError, _number, attach_error, parse_fields
from sdckit.ui._pages_md import _int, _protect_context, _ws
from sdckit.ui._render import form_dict, redirect, render, sdc_message, start_task
from sdckit.ui._workspace import WRITABLE, Source

__all__ = ["router"]

router = APIRouter()


# ------------------------------------------------------------------ R-U map
@router.get("/rumap")
def rumap_page(request: Request) -> Response:
    """Candidates of the R-U map, their risk and loss, and the map."""
    ws = _ws(request)
    if ws.session is None and not ws.tasks.busy:
        return redirect("/data")
    context = _protect_context(ws, dict(request.query_params))
    return render(request, "rumap.html.j2", page="rumap", form_error=None, **context)


def _grid(text: str) -> dict[str, list[Any]]:
    """``k = 2, 3, 5; p = 1, 5`` -> ``{"k": [2, 3, 5], "p": [1, 5]}``."""
    from sdckit.ui._forms import _number

    grid: dict[str, list[Any]] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        items = [_number(v) for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not items:
            raise ParameterError(
                "The grid must read 'parameter = value, value; parameter = value, ...', "
                "for example k = 2, 3, 5."
            )
        grid[name.strip()] = items
    return grid


@router.post("/rumap/add")
async def rumap_add(request: Request) -> Response:
    """Add a candidate (a method with its parameters, and a grid of values)."""
    ws = _ws(request)
    form = await form_dict(request)
    context = _protect_context(ws, form)
    fields = context["fields"]
    try:
        params = parse_fields(fields, form)
        grid = _grid(str(form.get("grid", "")))
        ws.add_candidate(context["method"], params, str(form.get("label", "")).strip(), grid)
    except FormError as exc:
        for f in fields:
            if f.name == exc.field:
                f.error = exc.message
        return render(request, "rumap.html.j2", status=422, page="rumap", form_error=None,
                      **context)  # fmt: skip
    except SdcError as exc:
        message = attach_error(fields, sdc_message(exc))
        return render(request, "rumap.html.j2", status=422, page="rumap",
                      form_error=message, **context)  # fmt: skip
    return redirect(f"/rumap?method={context['method']}")


@router.post("/rumap/remove")
async def rumap_remove(request: Request) -> Response:
    """Remove a candidate."""
    ws = _ws(request)
    form = await form_dict(request)
    i = _int(form.get("index"), -1, -1, 10_000)
    with ws.lock:
        if 0 <= i < len(ws.ru_candidates):
            ws.ru_candidates.pop(i)
            ws.ru_result = None
    return redirect("/rumap")


@router.post("/rumap/settings")
async def rumap_settings(request: Request) -> Response:
    """The risk and loss measures and the maximum tolerable risk."""
    from sdckit.utility.rumap import LOSS_MEASURES, RISK_MEASURES

    ws = _ws(request)
    form = await form_dict(request)
    risk = str(form.get("risk", "global_risk"))
    loss = str(form.get("loss", "share_changed"))
    max_risk = str(form.get("max_risk", "")).strip()
    value = _number(max_risk) if max_risk else None
    if isinstance(value, str) or (value is not None and not 0 <= value < float("inf")):
        # never silently 0 (nothing admissible) or the default: said beside the box
        context = _protect_context(ws, {})
        return render(request, "rumap.html.j2", status=422, page="rumap", form_error=None,
                      ru_error="The maximum tolerable risk takes a number >= 0 written in "
                      "digits (such as 1.5); empty: no maximum.", ru_max_text=max_risk,
                      **context)  # fmt: skip
    if value is not None and risk == "global_risk":
        value = value / 100  # the page says percent of the records; the job holds a share
    with ws.lock:
        if risk in RISK_MEASURES:
            ws.ru_settings["risk"] = risk
        if loss in LOSS_MEASURES:
            ws.ru_settings["loss"] = loss
        ws.ru_settings["max_risk"] = value
        ws.ru_result = None
    return redirect("/rumap")


@router.post("/rumap/build")
def rumap_build(request: Request) -> Response:
    """Compute the R-U map (a task: every candidate run is a checkpoint)."""
    ws = _ws(request)
    start_task(request, "Building the R-U map", lambda t: ws.build_ru(t.progress), "/rumap")
    return redirect("/rumap")


# ------------------------------------------------------------------ release and export
@router.get("/export")
def export_page(request: Request) -> Response:
    """The release plan, the target, the release check and the exports."""
    ws = _ws(request)
    if ws.session is None and not ws.tasks.busy:
        return redirect("/data")
    job_text, job_error = "", None
    if ws.session is not None:
        try:
            job_text = ws.job_text()
        except SdcError as exc:
            job_error = sdc_message(exc)
    return render(request, "export.html.j2", page="export", errors={}, job_text=job_text,
                  job_error=job_error, writable=WRITABLE)  # fmt: skip


_TARGET_FIELDS = (
    ("k", "k-anonymity: every key combination shared by at least k records", "integer"),
    ("max_global_risk_pct", "largest global risk (%)", "number"),
    ("max_household_risk_pct", "largest household risk (% of the persons)", "number"),
    ("max_individual_risk", "largest individual risk (a probability)", "number"),
)


@router.post("/export/settings")
async def export_settings(request: Request) -> Response:
    """Title, seed, target, household ids, record order, file format, report figures."""
    from sdckit.jobs.target import parse_target

    ws = _ws(request)
    form = await form_dict(request)
    errors: dict[str, str] = {}
    target: dict[str, Any] = {}
    for name, _, kind in _TARGET_FIELDS:
        text = str(form.get(f"t-{name}", "")).strip()
        if text:
            try:
                target[name] = int(text) if kind == "integer" else float(text)
            except ValueError:
                target[name] = text
    try:
        if target:
            parse_target(dict(target))
    except SdcError as exc:
        message = sdc_message(exc)
        name = next((n for n, _, _ in _TARGET_FIELDS if f"target.{n}" in message), "k")
        errors[f"t-{name}"] = message
    seed_text = str(form.get("seed", "")).strip()
    if not seed_text.isdigit():
        errors["seed"] = "The seed must be an integer >= 0."
    title = str(form.get("title", "")).strip()
    if not title:
        errors["title"] = "The title must be a non-empty string."
    fmt = str(form.get("format", ".csv"))
    if fmt not in WRITABLE:
        errors["format"] = f"Choose one of {', '.join(WRITABLE)}."
    if errors:
        draft = {k: str(v) for k, v in form.items() if isinstance(v, str)}  # kept as typed
        return render(request, "export.html.j2", status=422, page="export", errors=errors,
                      job_text="", job_error=None, writable=WRITABLE, draft=draft)  # fmt: skip
    with ws.lock:
        ws.target = target
        ws.seed = int(seed_text)
        ws.title = title
        ws.output_format = fmt
        ws.household_id = "drop" if form.get("household_id") == "drop" else "new"
        ws.order = "original" if form.get("order") == "original" else "shuffled"
        ws.plots_in_report = bool(form.get("plots"))
        ws.release = None
        ws.touch()
    return redirect("/export")


@router.post("/export/check")
def export_check(request: Request) -> Response:
    """Run the independent release check on the file as it would be released."""
    ws = _ws(request)
    start_task(request, "Release check", lambda t: ws.compute_release(t.progress), "/export")
    return redirect("/export")


@router.post("/export/run")
async def export_run(request: Request) -> Response:
    """Write the job file, the reports and, if the check passes, the protected file."""
    ws = _ws(request)
    try:
        ws.job_text()
    except SdcError as exc:
        return render(request, "export.html.j2", status=422, page="export", errors={},
                      job_text="", job_error=sdc_message(exc), writable=WRITABLE)  # fmt: skip
    start_task(request, "Exporting", lambda t: ws.export_all(t.progress), "/export")
    return redirect("/export")


@router.get("/job.toml")
def job_file(request: Request) -> Response:
    """The job file of the session as it is now (TOML)."""
    try:
        text = _ws(request).job_text()
    except SdcError as exc:
        return PlainTextResponse(sdc_message(exc), status_code=409)
    return PlainTextResponse(text, media_type="application/toml")


# ------------------------------------------------------------------ plots
@router.get("/plot/{name}.png")
def plot(request: Request, name: str) -> Response:
    """A figure of the current state (sdckit.plots), as PNG."""
    from sdckit import plots

    ws = _ws(request)
    session = ws.session
    if session is None:
        return PlainTextResponse("No data.", status_code=404)
    cache = request.app.state.plots
    version = ws.version
    if name in ("risk-original", "risk-current"):
        if session.initial_risk.individual is None:
            return PlainTextResponse("No key variables.", status_code=404)
        figs = lambda: plots.risk_distributions(  # noqa: E731
            session.initial_risk.individual, session.risk.individual,
            titles=["Individual risk: original file", "Individual risk: now"],
        )  # fmt: skip
        index = 0 if name == "risk-original" else 1
        png = cache.get((name, version), lambda: figs()[index])
    elif name == "variable":
        column = request.query_params.get("col", "")
        md = session.current
        if column not in md.frame.columns:
            return PlainTextResponse("No such column.", status_code=404)
        numeric = md.frame.schema[column].is_numeric() and column not in md.keys
        draw = (
            (lambda: plots.histogram(session.original, md, column)) if numeric
            else (lambda: plots.bar_chart(session.original, md, column))
        )  # fmt: skip
        png = cache.get((f"var:{column}", version), draw)
    elif name == "rumap":
        if ws.ru_result is None:
            return PlainTextResponse("No R-U map.", status_code=404)
        png = cache.get(("rumap", id(ws.ru_result)), lambda: plots.ru_map_plot(ws.ru_result))
    else:
        return PlainTextResponse("No such figure.", status_code=404)
    return Response(png, media_type="image/png")


# ------------------------------------------------------------------ JSON API
@router.post("/api/open")
async def api_open(request: Request) -> Response:
    """``{"dataset": "demo"}`` or ``{"path": ..., "format": ..., "na_values": [...]}``."""
    ws = _ws(request)
    body = await request.json()
    if body.get("dataset") == "demo":
        source = Source(kind="demo", name="the sdckit demo data")
    else:
        path = Path(str(body.get("path", ""))).expanduser()
        if not path.is_file():
            return JSONResponse({"error": "The file does not exist."}, status_code=422)
        na = body.get("na_values")
        source = Source(kind="file", name=path.name, path=path.resolve(),
                        format=body.get("format"),
                        na_values=tuple(na) if na is not None else None)  # fmt: skip
    task = start_task(request, f"Opening {source.name}", lambda t: ws.open(source, t.progress),
                      "/data")  # fmt: skip
    return JSONResponse({"task": task.id})


@router.post("/api/roles")
async def api_roles(request: Request) -> Response:
    """``{"roles": {...[roles] of a job...}, "drop": [...]}``: assess the risk (a task)."""
    ws = _ws(request)
    body = await request.json()
    roles = dict(body.get("roles", {}))
    try:
        ws.check_roles(roles, [])
    except SdcError as exc:
        return JSONResponse({"error": sdc_message(exc)}, status_code=422)
    drop = list(body.get("drop", []))
    task = start_task(request, "Assessing the disclosure risk",
                      lambda t: ws.set_roles(roles, drop, [], t.progress), "/risk")  # fmt: skip
    return JSONResponse({"task": task.id})


@router.get("/api/risk")
def api_risk(request: Request) -> Response:
    """The file-level risk figures of the original and the current file."""
    ws = _ws(request)
    if ws.session is None:
        return JSONResponse({"error": "Assign the roles first."}, status_code=409)
    return JSONResponse({
        "original": ws.session.initial_figures, "current": ws.session.figures,
        "steps": len(ws.steps),
    })  # fmt: skip
