"""Table jobs (``sdckit table JOB.toml``): build a table, apply rules, suppress, audit, write.

The job names the input (microdata aggregated into a table, or a table given one row per
cell), the dimensions with optional hierarchies, the sensitivity rules, the secondary
suppression method and the outputs; ``docs/job-files.md`` describes the format.  Rules and
methods are found in the registry (:func:`sdckit.protection.registry`, families ``"rule"``
and ``"table"``) and their parameters checked against their declarations before the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdckit._constraints import Boolean, Options, Param, Real, validate_parameters
from sdckit._validation import check_columns_exist, check_int
from sdckit.errors import ParameterError
from sdckit.jobs._methods import instantiate, method_class
from sdckit.jobs._toml import path_of, read_toml, table_of, unknown_keys

__all__ = ["AUDIT_PARAMETERS", "TableJob", "TableJobResult", "load_table_job", "run_table_job"]

_SECTIONS = {"title", "input", "table", "rules", "suppression", "audit", "output"}

#: The parameters of ``[audit]`` (those of :func:`sdckit.tables.audit`).
AUDIT_PARAMETERS: dict[str, Param] = {
    "integer": Param(Boolean(), help="cells take integer values (small tables only)"),
    "tolerance": Param(Real(minimum=0.0), help="relative tolerance of the checks"),
    "check_secondary": Param(Boolean(), help="secondaries must not be disclosed exactly"),
    "primaries_only": Param(Boolean(), help="compute the intervals of the primaries only"),
    "intervals": Param(Options("exact", "check"), help="compute every interval, or decide"),
}
_AUDIT_DEFAULTS = {
    "integer": False,
    "tolerance": 1e-6,
    "check_secondary": False,
    "primaries_only": False,
    "intervals": "exact",
}


@dataclass(frozen=True)
class TableJob:
    """A validated table job."""

    path: Path
    title: str
    table: Any
    rules: tuple[Any, ...]
    suppression: Any
    audit_params: dict[str, Any] | None
    output_table: Path | None
    output_full: Path | None

    @property
    def suppression_params(self) -> dict[str, Any]:
        """The parameters of the suppression method."""
        return self.suppression.get_params()


@dataclass(frozen=True)
class TableJobResult:
    """What a table job produced: the protected table, the suppression, the audit, the files."""

    table: Any
    suppression: Any
    audit: Any
    written: list[Path]

    def __iter__(self) -> Any:  # (table, result, audit, written), as the former tuple
        return iter((self.table, self.suppression, self.audit, self.written))


def _build_table(base: Path, input_spec: dict[str, Any], spec: dict[str, Any]) -> Any:
    from sdckit.io import read_data
    from sdckit.tables import Table

    unknown_keys(input_spec, {"file", "format", "kind"}, "input")
    unknown_keys(
        spec,
        {"dimensions", "hierarchies", "value", "weight", "n_top", "n_contributors", "top"},
        "table",
    )
    if "file" not in input_spec:
        raise ParameterError("[input] of the table job needs a 'file'.")
    kind = input_spec.get("kind", "microdata")
    if kind not in ("microdata", "cells"):
        raise ParameterError('[input] \'kind\' must be "microdata" or "cells".')
    frame = read_data(
        path_of(base, input_spec["file"], "input file"), format=input_spec.get("format")
    )
    dims = spec.get("dimensions")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError("[table] 'dimensions' must be a list of column names.")
    hierarchies = spec.get("hierarchies", {})
    if not isinstance(hierarchies, dict):
        raise ParameterError("[table] 'hierarchies' must be a table: column -> hierarchy.")
    for name in hierarchies:
        if name not in dims:
            raise ParameterError(f"[table.hierarchies] {name!r} is not one of the dimensions.")
    value = spec.get("value")
    for key in ("value", "weight", "n_contributors"):
        if key in spec and not isinstance(spec[key], str):
            raise ParameterError(f"[table] {key!r} must be a column name.")
    cols = [*dims, *(spec[k] for k in ("value", "weight", "n_contributors") if k in spec)]
    check_columns_exist(cols, list(frame.columns), "table")
    dimensions = {d: hierarchies.get(d) for d in dims}
    if kind == "microdata":
        if "n_contributors" in spec or "top" in spec:
            raise ParameterError(
                "[table] 'n_contributors' and 'top' are for kind = \"cells\" inputs."
            )
        n_top = check_int(spec.get("n_top", 3), "table.n_top", minimum=1)
        return Table.from_microdata(
            frame, dimensions, value, weight=spec.get("weight"), n_top=n_top
        )
    if value is None:
        raise ParameterError("[table] a kind = \"cells\" input needs the 'value' column.")
    return Table.from_frame(
        frame, dimensions, value, n_contributors=spec.get("n_contributors"), top=spec.get("top")
    )


def _rules(specs: Any) -> tuple[Any, ...]:
    if not isinstance(specs, list) or not specs:
        raise ParameterError("The table job needs at least one [[rules]] table.")
    rules = []
    for i, spec in enumerate(specs, start=1):
        where = f"rule {i}"
        if not isinstance(spec, dict) or "rule" not in spec:
            raise ParameterError(f"{where}: a [[rules]] table needs a 'rule' name.")
        name = spec["rule"]
        try:
            cls = method_class(name, where, "rule")
        except ParameterError as exc:
            raise ParameterError(str(exc).replace("unknown method", "unknown rule")) from None
        params = {k: v for k, v in spec.items() if k != "rule"}
        rules.append(instantiate(cls, params, f"{where} ({name})"))
    return tuple(rules)


def load_table_job(path: str | Path) -> TableJob:
    """Read and validate a table job file; raise an :class:`SdcError` for anything wrong."""
    job_path, spec = read_toml(path)
    unknown_keys(spec, _SECTIONS, "top level")
    base = job_path.parent
    output = table_of(spec.get("output"), "output")
    unknown_keys(output, {"table", "table_full"}, "output")
    out_table = path_of(base, output["table"], "output table") if "table" in output else None
    out_full = (
        path_of(base, output["table_full"], "output table") if "table_full" in output else None
    )
    if out_table is None and out_full is None:
        raise ParameterError("[output] needs 'table' (published) or 'table_full' (with status).")
    for p in (out_table, out_full):
        if p is not None and p.suffix.lower() not in (".csv", ".parquet"):
            raise ParameterError("[output] tables must be .csv or .parquet files.")
    rules = _rules(spec.get("rules"))
    supp = dict(table_of(spec.get("suppression", {"method": "hypercube"}), "suppression"))
    name = supp.pop("method", "hypercube")
    cls = method_class(name, "[suppression]", "table")
    if getattr(cls, "kind", "suppression") != "suppression":
        raise ParameterError(
            f"[suppression] {name!r} is a rounding method; choose a secondary suppression "
            "method: hypercube, modular or optimal."
        )
    suppression = instantiate(cls, supp, "[suppression]")
    audit_params = None
    if "audit" in spec:
        audit_params = dict(table_of(spec["audit"], "audit"))
        validate_parameters(
            "audit", AUDIT_PARAMETERS, {**_AUDIT_DEFAULTS, **audit_params}, where="[audit]"
        )
    table = _build_table(
        base, table_of(spec.get("input"), "input"), table_of(spec.get("table"), "table")
    )
    title = spec.get("title", "Table protection")
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    return TableJob(job_path, title, table, rules, suppression, audit_params, out_table, out_full)


def run_table_job(job: TableJob, *, progress: Any = None, write: bool = True) -> TableJobResult:
    """Apply the rules, the secondary suppression and the audit; write the outputs.

    Parameters
    ----------
    job : TableJob
    progress : callable, optional
        ``progress(stage, done, total)``.
    write : bool, default True

    Returns
    -------
    TableJobResult
        The published table is written only when the audit (if asked) passes.
    """
    from sdckit.tables import apply_rules, audit

    report = progress or (lambda stage, done, total: None)
    stages: Sequence[str] = ("Sensitivity rules", "Secondary suppression", "Audit")
    report("Table protection", 0, len(stages))
    marked = apply_rules(job.table, list(job.rules))
    report("Table protection", 1, len(stages))
    result = job.suppression.apply(marked)
    report("Table protection", 2, len(stages))
    checked = audit(result.table, **job.audit_params) if job.audit_params is not None else None
    report("Table protection", 3, len(stages))
    written: list[Path] = []
    if write:
        if job.output_full is not None:
            job.output_full.parent.mkdir(parents=True, exist_ok=True)
            written.append(result.table.write(job.output_full, published=False))
        if job.output_table is not None and (checked is None or checked.ok):
            job.output_table.parent.mkdir(parents=True, exist_ok=True)
            written.append(result.table.write(job.output_table, published=True))
    return TableJobResult(result.table, result, checked, written)
