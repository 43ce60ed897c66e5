"""Table jobs (``sdckit table JOB.toml``): build a table, apply rules, suppress, audit, write.

The job names the input (microdata aggregated into a table, or a table given one row per
cell), the dimensions with optional hierarchies, the sensitivity rules, the secondary
suppression method and the outputs; ``docs/job-files.md`` describes the format.  Rules and
methods are found in the registry (:func:`sdckit.protection.registry`, families ``"rule"``
and ``"table"``) and their parameters checked against their declarations before the work.

Every pattern is audited by LP before anything is published: with the ``[audit]`` parameters
when the job has that section, else in the cheap ``intervals = "check"`` mode.  The published
table and the external report are written only when the audit finds every primary protected;
the internal exports (``table_full``, ``report_internal``) are always written.  No output may
be the input file, and no two outputs the same file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdckit.errors import ParameterError
from sdckit.jobs._methods import instantiate, method_class
from sdckit.jobs._outputs import check_outputs
from sdckit.jobs._table_build import Records, _build_table_where, _records
from sdckit.jobs._toml import path_of, read_toml, table_of, unknown_keys

__all__ = [
    "LINKED_AUDITS",
    "LINKED_SCHEMES",
    "Records",
    "TableJob",
    "TableJobResult",
    "job_audit",
    "load_table_job",
    "protect_table",
    "run_table_job",
    "run_table_jobs",
    "write_table_outputs",
]

_SECTIONS = {"title", "input", "table", "rules", "suppression", "audit", "output"}

#: ``[suppression] linked``: how tables of one file are protected together (the keyword
#: arguments of :meth:`LinkedTables.protect <sdckit.tables.LinkedTables.protect>`).
LINKED_SCHEMES: dict[str, dict[str, bool]] = {
    "iterative": {},
    "secondaries_as_primary": {"secondaries_as_primary": True},
    "joint_elimination": {"joint_elimination": True},
}

#: The joint audits of ``[suppression] linked_audit``: the tables' relations (always run),
#: also the LP audit over the records' code combinations (``"atoms"``: protection levels, for
#: small data), or also the rank test over them (``"atoms_exact"``: no primary exactly
#: computable, at any size).
LINKED_AUDITS = ("tables", "atoms", "atoms_exact")


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
    report_internal: Path | None = None
    report_external: Path | None = None
    linked: str = "iterative"
    records: Records | None = None
    linked_audit: str = "tables"
    #: How the published table shows an empty cell (``[output] empty``): "symbol" (``-``),
    #: "zero" or "omit" (:meth:`sdckit.tables.Table.published`).
    empty: str = "symbol"
    #: Where the table was built and why (``"streaming (the 3 columns used take ...)"``); None
    #: for a ``kind = "cells"`` input.
    engine: str | None = None

    @property
    def suppression_params(self) -> dict[str, Any]:
        """The parameters of the suppression method."""
        return self.suppression.get_params()


@dataclass(frozen=True)
class TableJobResult:
    """What a table job produced: the protected table, the suppression, the audit, the files.

    ``audit`` is always an :class:`~sdckit.tables.AuditResult` (check mode when the job has no
    ``[audit]`` section); ``withheld`` lists the outputs not written because the audit found
    an under-protected primary (the published table, the external report).
    """

    table: Any
    suppression: Any
    audit: Any
    written: list[Path]
    withheld: list[Path] = field(default_factory=list)
    joint_ok: bool = True

    @property
    def protected(self) -> bool:
        """True when the audit (and, for linked tables, the joint audit over the records'
        combinations asked for by ``linked_audit = "atoms"``) found every primary protected."""
        return bool(self.audit.ok) and self.joint_ok

    def __iter__(self) -> Any:  # (table, result, audit, written), as the former tuple
        return iter((self.table, self.suppression, self.audit, self.written))


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


_OUTPUTS = {
    "table": ("output table", (".csv", ".parquet")),
    "table_full": ("output table", (".csv", ".parquet")),
    "report_internal": ("report", (".html", ".htm")),
    "report_external": ("report", (".html", ".htm")),
}


#: ``[output] empty``: how the published table shows a cell without contributors.
EMPTY_CELLS = ("symbol", "zero", "omit")


def _empty(output: dict[str, Any]) -> str:
    """``[output] empty`` checked (default ``"symbol"``)."""
    value = output.get("empty", "symbol")
    if value not in EMPTY_CELLS:
        raise ParameterError(
            "[output] empty must be one of " + ", ".join(repr(v) for v in EMPTY_CELLS) + " ("
            "symbol: '-' without a value, zero: published as 0, omit: rows left out)."
        )
    return str(value)


def _outputs(base: Path, output: dict[str, Any], input_file: Any) -> dict[str, Path | None]:
    unknown_keys(output, {*_OUTPUTS, "empty"}, "output")
    paths: dict[str, Path | None] = {}
    for key, (label, suffixes) in _OUTPUTS.items():
        p = path_of(base, output[key], label) if key in output else None
        if p is not None and p.suffix.lower() not in suffixes:
            kind = "tables must be .csv or .parquet" if label != "report" else "reports must be"
            raise ParameterError(
                f"[output] {kind} files" + (" (.html)" if label == "report" else "") + "."
            )
        paths[key] = p
    if paths["table"] is None and paths["table_full"] is None:
        raise ParameterError("[output] needs 'table' (published) or 'table_full' (with status).")
    source = None
    if isinstance(input_file, str) and input_file.strip():
        source = path_of(base, input_file, "input file")
    # before any work: the same file twice, the input, a path under a file, a folder not
    # writable (the protection jobs' check)
    check_outputs(paths, input_path=source)
    return paths


def check_audit(params: dict[str, Any]) -> dict[str, Any]:
    """The ``[audit]`` parameters checked as a job's (a copy), against the declaration of
    :class:`sdckit.tables.audit.Audit`: the job names the same parameters as Python."""
    from sdckit.tables.audit import Audit

    audit_params = dict(params)
    unknown = sorted(set(audit_params) - set(Audit.parameters))
    if unknown:
        raise ParameterError(
            f"[audit] has no parameter {unknown[0]!r}; its parameters are "
            f"{', '.join(Audit.parameters)}."
        )
    _audit_of(audit_params)
    return audit_params


def _check_adjustment_job(spec: dict[str, Any], outputs: dict[str, Path | None]) -> None:
    """A controlled tabular adjustment (``method = "cta"``) has its own audit (every primary
    moved by its level, the relations, the bounds) and no report yet."""
    if "audit" in spec:
        raise ParameterError(
            '[suppression] method = "cta" publishes every cell and is audited by its own '
            "checks (levels, relations, bounds); remove the [audit] section."
        )
    reports = [k for k in ("report_internal", "report_external") if outputs.get(k)]
    if reports:
        raise ParameterError(
            f'[output] {", ".join(reports)}: no report is written for method = "cta" yet; '
            "remove it (the table and table_full outputs are written)."
        )


def _audit_of(params: dict[str, Any]) -> Any:
    """The :class:`~sdckit.tables.audit.Audit` of the ``[audit]`` parameters (errors name
    the section)."""
    from sdckit.tables.audit import Audit

    audit = Audit(**params)
    audit.check(where="[audit]")
    return audit


def load_table_job(path: str | Path) -> TableJob:
    """Read and validate a table job file; raise an :class:`SdcError` for anything wrong."""
    job_path, spec = read_toml(path)
    if "cellkey" in spec:  # jobs.cellkey reads this module, so it is not imported from here
        raise ParameterError(
            "The job has a [cellkey] section (a perturbed table): load it with "
            "sdckit.jobs.cellkey.load_cellkey_job (sdckit table runs both kinds of job)."
        )
    unknown_keys(spec, _SECTIONS, "top level")
    base = job_path.parent
    output = table_of(spec.get("output"), "output")
    input_spec = table_of(spec.get("input"), "input")
    outputs = _outputs(base, output, input_spec.get("file"))
    rules = _rules(spec.get("rules"))
    supp = dict(table_of(spec.get("suppression", {"method": "hypercube"}), "suppression"))
    name = supp.pop("method", "hypercube")
    linked = supp.pop("linked", "iterative")
    if not isinstance(linked, str) or linked not in LINKED_SCHEMES:
        raise ParameterError(
            "[suppression] 'linked' must be one of "
            f"{', '.join(repr(k) for k in LINKED_SCHEMES)} (how tables of one file are "
            "protected together)."
        )
    linked_audit = supp.pop("linked_audit", "tables")
    if linked_audit not in LINKED_AUDITS:
        raise ParameterError(
            "[suppression] 'linked_audit' must be \"tables\" (the joint audit over the tables' "
            'relations), "atoms" (also over the code combinations of the records) or '
            '"atoms_exact" (also the rank test over those combinations: no primary exactly '
            "computable)."
        )
    cls = method_class(name, "[suppression]", "table")
    if getattr(cls, "kind", "suppression") not in ("suppression", "adjustment"):
        raise ParameterError(
            f"[suppression] {name!r} is a rounding method; choose a secondary suppression "
            "method: hypercube, modular, optimal or gauss (or the adjustment: cta)."
        )
    suppression = instantiate(cls, supp, "[suppression]")
    audit_params = None
    if getattr(cls, "kind", "") == "adjustment":
        _check_adjustment_job(spec, outputs)
    if "audit" in spec:
        audit_params = check_audit(table_of(spec["audit"], "audit"))
    title = spec.get("title", "Table protection")
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    table_spec = table_of(spec.get("table"), "table")
    table, where = _build_table_where(base, input_spec, table_spec)
    return TableJob(
        job_path,
        title,
        table,
        rules,
        suppression,
        audit_params,
        outputs["table"],
        outputs["table_full"],
        outputs["report_internal"],
        outputs["report_external"],
        linked,
        _records(base, input_spec, table_spec),
        linked_audit,
        _empty(output),
        where,
    )


def _stage(progress: Any, prefix: str) -> Any:
    """``progress`` with its stages reported as "<prefix>: <stage>" (None stays None)."""
    if progress is None:
        return None

    def inner(stage: str, done: int, total: int) -> None:
        progress(f"{prefix}: {stage}", done, total)

    return inner


def _suppress(method: Any, marked: Any, progress: Any) -> Any:
    """``method.apply(marked)``; a method whose ``apply`` takes a ``progress`` call argument
    (``GaussSuppression``: the model and the elimination, the long part on a large table)
    reports its stages as "Secondary suppression: <stage>"."""
    import inspect

    if progress is None or "progress" not in inspect.signature(method.apply).parameters:
        return method.apply(marked)
    return method.apply(marked, progress=_stage(progress, "Secondary suppression"))


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
        The audit always runs (``[audit]`` parameters, else check mode); the published table
        and the external report are written only when it passes (else they are listed in
        ``withheld``).

    Raises
    ------
    InfeasibleError
        No pattern can protect some primary (the message names it by cell number and position).
    """
    result, checked = _protect_one(job, progress)
    return _finish(job, result, checked, write)


def _protect_one(job: TableJob, progress: Any) -> tuple[Any, Any]:
    """The rules, the secondary suppression and the audit of one job (nothing written)."""
    from sdckit.tables import apply_rules

    report = progress or (lambda stage, done, total: None)
    report("Table protection", 0, 3)
    marked = apply_rules(job.table, list(job.rules))
    return protect_marked(marked, job.suppression, job.audit_params, progress)


def protect_marked(
    marked: Any, method: Any, audit_params: dict[str, Any] | None, progress: Any = None
) -> tuple[Any, Any]:
    """The secondary suppression of a marked table and the job's audit (check mode without
    ``[audit]`` parameters), with the stages of a table job: what ``sdckit table`` and the
    stepwise runner (:class:`~sdckit.jobs.table_runner.TableRunner`) run."""
    from sdckit.tables.audit import check_rank_levels

    report = progress or (lambda stage, done, total: None)
    params = audit_params if audit_params is not None else {"intervals": "check"}
    audit = _audit_of(params)
    if audit.effective_method == "rank":
        check_rank_levels(marked, where=f"[audit] {audit.spelling()}")  # before the long part
    report("Table protection", 1, 3)
    result, checked = protect_table(marked, method, params, progress=progress)
    report("Table protection", 3, 3)
    return result, checked


def protect_table(
    marked: Any, method: Any, audit_params: dict[str, Any] | None, *, progress: Any = None
) -> tuple[Any, Any]:
    """The secondary suppression of a table whose primaries are marked, then the job's audit
    of the pattern: what a table job does after its rules, and what a browser interface runs
    (in a child process, which this function's plain arguments allow).

    Parameters
    ----------
    marked : Table
        The table with its primaries (:func:`sdckit.tables.apply_rules`).
    method : TableMethod
        The secondary suppression.
    audit_params : dict or None
        The ``[audit]`` parameters (a job always gives some: check mode by default); None:
        no audit.
    progress : callable, optional
        ``progress(stage, done, total)``.

    Returns
    -------
    (SuppressionResult, AuditResult or None)
    """
    result = _suppress(method, marked, progress)
    if getattr(method, "kind", "") == "adjustment":  # CTA: its own audit (levels, relations)
        return result, result.audit()
    checked = None if audit_params is None else _audit(result.table, audit_params, progress)
    if checked is not None and _insiders_only(checked):
        # the method's pattern holds for an outsider, not for some respondent using its own
        # contributions: suppress more until it does (the repair of the insider audit)
        from sdckit.tables.suppression.repair import repair_for_insiders

        result = repair_for_insiders(result, cost=getattr(method, "cost", "value"))
        checked = _audit(result.table, audit_params, progress)
    return result, checked


def _insiders_only(checked: Any) -> bool:
    """Whether an LP audit failed by its insider audit alone."""
    insider = getattr(checked, "insider_audit", None)
    single = getattr(checked, "single_cell_protected", None)
    return (
        insider is not None and not insider.ok and single is not None and bool(single.all())
        and getattr(checked, "intervals", "") != "rank"
    )  # fmt: skip


def job_audit(table: Any, audit_params: dict[str, Any] | None) -> Any:
    """The audit a table job runs on a pattern (check mode without ``[audit]`` parameters)."""
    return _audit(table, audit_params if audit_params is not None else {"intervals": "check"})


def _audit(table: Any, params: dict[str, Any], progress: Any = None) -> Any:
    """The job's audit of a pattern: :class:`~sdckit.tables.audit.Audit` with the ``[audit]``
    parameters (its stages reported as "Audit: <stage>")."""

    def inner(stage: str, done: int, total: int) -> None:
        progress(f"Audit: {stage}", done, total)

    return _audit_of(params).apply(table, progress=None if progress is None else inner)


def _finish(
    job: TableJob, result: Any, checked: Any, write: bool, joint_ok: bool = True
) -> TableJobResult:
    """Write a protected table's outputs (the published ones only when ``checked`` passed,
    and the joint audit of its linked tables, ``joint_ok``)."""
    protected_table, written, withheld = write_table_outputs(
        result, checked, table=job.output_table if write else None,
        table_full=job.output_full if write else None,
        report_internal=job.report_internal if write else None,
        report_external=job.report_external if write else None,
        title=job.title, joint_ok=joint_ok, empty=job.empty,
    )  # fmt: skip
    return TableJobResult(protected_table, result, checked, written, withheld, joint_ok)


def write_table_outputs(
    result: Any,
    checked: Any,
    *,
    table: Path | None = None,
    table_full: Path | None = None,
    report_internal: Path | None = None,
    report_external: Path | None = None,
    title: str = "",
    joint_ok: bool = True,
    empty: str = "symbol",
) -> tuple[Any, list[Path], list[Path]]:
    """The outputs of a protected table: the internal table and report always, the published
    table and the external report only when the audit ``checked`` passed (and the joint
    audit of linked tables, ``joint_ok``).  A published output withheld is removed if an
    earlier run left one, so that no earlier table stands as if it were this one.

    Returns
    -------
    (Table, list of Path, list of Path)
        The table with the audit's verdict, the files written, the files withheld.
    """
    from sdckit.tables import AdjustmentResult

    adjusted = isinstance(result, AdjustmentResult)
    # the table with the audit's verdict (for CTA: the adjusted values, every cell published)
    protected_table = result.adjusted_table if adjusted else checked.table
    if not joint_ok:
        protected_table = protected_table.with_verdict(False)
    publish = bool(checked.ok) and joint_ok
    written: list[Path] = []
    withheld: list[Path] = []
    if table_full is not None:  # CTA's internal export: true and published values
        full = result.write(table_full) if adjusted else None
        written.append(full or protected_table.write(table_full, published=False))
    if table is not None:
        if publish:
            written.append(protected_table.write(table, published=True, empty=empty))
        else:
            withheld.append(table)
    if report_internal is not None or report_external is not None:
        from sdckit.report import write_table_report

        # the report recomputes a check-mode audit where that is cheap (its intervals are
        # inner approximations), else reports the job's audit as it is
        if report_internal is not None:
            written.append(
                write_table_report(
                    result, report_internal, kind="internal", audit=checked, title=title
                )
            )
        if report_external is not None:
            if publish:
                written.append(
                    write_table_report(
                        result, report_external, kind="external", audit=checked, title=title
                    )
                )
            else:
                withheld.append(report_external)
    for path in withheld:  # never leave an earlier published output behind
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return protected_table, written, withheld


def _linked_groups(tables: Sequence[Any]) -> list[list[int]]:
    """The jobs whose tables come from the same records and response: each group is
    protected as linked tables (every pair's common cells agree in value); the others alone."""
    from sdckit.errors import DataError
    from sdckit.tables import LinkedTables

    groups: list[list[int]] = []
    for k, t in enumerate(tables):
        for g in groups:
            first = tables[g[0]]
            if t.kind != first.kind:
                continue
            try:
                LinkedTables([first, t])
            except DataError:  # common cells differ: other records or another response
                continue
            except ParameterError:
                raise ParameterError(
                    f"Tables {g[0] + 1} and {k + 1} share a variable with two different "
                    "hierarchies. Tables of one file are protected together (linked tables: "
                    "an intruder reads them side by side), which needs one hierarchy per "
                    "variable; give that variable the same hierarchy in both."
                ) from None
            g.append(k)
            break
        else:
            groups.append([k])
    return groups


def _linked_tables(
    jobs: Sequence[TableJob], group: list[int], marked: list[Any]
) -> tuple[Any, str]:
    """The linked tables of a group of jobs and their scheme (``[suppression] linked``)."""
    from sdckit.tables import LinkedTables

    schemes = sorted({jobs[k].linked for k in group})
    audits = sorted({jobs[k].linked_audit for k in group})
    for key, found in (("linked", schemes), ("linked_audit", audits)):
        if len(found) > 1:
            raise ParameterError(
                f"[suppression] {key!r} differs ({', '.join(repr(s) for s in found)}) between "
                "tables that are protected together; give them the same value."
            )
    linked = LinkedTables(marked)
    if schemes[0] != "joint_elimination" and audits[0] == "tables":
        return linked, schemes[0]
    sources = [jobs[k].records for k in group]
    first = sources[0]
    key = None if first is None else (first.file, first.format, first.weight, first.missing)
    if first is None or any(
        r is None or (r.file, r.format, r.weight, r.missing) != key for r in sources
    ):
        raise ParameterError(
            '[suppression] linked = "joint_elimination" (and linked_audit = "atoms") needs '
            "tables built from the records of one microdata file (the same [input] file, "
            'weight and missing; no engine, respondent or holding); use "iterative" or '
            '"secondaries_as_primary" '
            '(and linked_audit = "tables") for the others.'
        )
    if any(r is not None and r.missing_value != "error" for r in sources):
        raise ParameterError(
            '[suppression] linked = "joint_elimination" reads the records again and does not '
            'leave out records without a value ([table] missing_value = "drop") yet: leave '
            'them out of the input file, or use linked = "iterative".'
        )
    hierarchies: dict[str, Any] = {}
    for r in sources:
        hierarchies.update(r.hierarchies if r is not None else {})
    records = first.read([d for r in sources if r is not None for d in r.dimensions])
    linked = linked.with_records(
        records, first.value, hierarchies=hierarchies, weight=first.weight, missing=first.missing
    )
    return linked, schemes[0]


def run_table_jobs(
    jobs: Sequence[TableJob], *, progress: Any = None, write: bool = True
) -> list[TableJobResult]:
    """Run several table jobs; tables from the same records are protected as linked tables.

    Tables of one microdata file with the same response share cells (at least the grand
    total; a shared variable's margin), and an intruder reads them together.  Such jobs are
    protected by :meth:`LinkedTables.protect <sdckit.tables.LinkedTables.protect>` (each with
    its own method, every common cell suppressed in all or none, the joint LP audit and
    repair; the scheme of the jobs' ``[suppression] linked``, see :data:`LINKED_SCHEMES`:
    ``"joint_elimination"`` reads the records again for their code combinations; with
    ``[suppression] linked_audit = "atoms"`` the joint audit over those combinations runs
    too, and when it fails the group's published outputs are withheld), then each table is
    audited on its own as well; a job whose tables share no cell
    value with another runs as :func:`run_table_job`.  Tables that share a variable with two
    different hierarchies cannot be linked: a :class:`ParameterError`.  Every table is
    protected and audited before the first output is written, so an error (it names the
    jobs) leaves no file behind.

    Returns
    -------
    list of TableJobResult
        In the order of ``jobs``; ``suppression.details["linked_with"]`` lists the other jobs
        (0-based) a table was protected with.
    """

    from sdckit.errors import SdcError
    from sdckit.tables import apply_rules

    report = progress or (lambda stage, done, total: None)
    groups = _linked_groups([job.table for job in jobs])
    done: dict[int, tuple[Any, Any]] = {}
    joint: dict[int, bool] = {}
    for group in groups:
        names = ", ".join(repr(jobs[k].title) for k in group)
        try:
            if len(group) == 1:
                done[group[0]] = _protect_one(jobs[group[0]], progress)
                continue
            if any(getattr(jobs[k].suppression, "kind", "") == "adjustment" for k in group):
                raise ParameterError(
                    'tables of one file share cells, and method = "cta" adjusts one table '
                    "at a time; run these jobs one by one or choose a suppression method."
                )
            report("Linked tables", 0, 2)
            marked = [apply_rules(jobs[k].table, list(jobs[k].rules)) for k in group]
            methods = [jobs[k].suppression for k in group]
            linked, scheme = _linked_tables(jobs, group, marked)
            protection = linked.protect(
                methods, progress=_stage(progress, "Secondary suppression"),
                **LINKED_SCHEMES[scheme],
            )  # fmt: skip
            extra: dict[str, Any] = {}
            if jobs[group[0]].linked_audit == "atoms":
                over_atoms = protection.linked.audit(model="atoms", intervals="check")
                extra["atom_audit_under_protected"] = int((~over_atoms.protected).sum())
            elif jobs[group[0]].linked_audit == "atoms_exact":
                computable = protection.linked.computable_primaries()
                extra["atom_audit_computable"] = len(computable)
            report("Linked tables", 1, 2)
        except SdcError as exc:
            # nothing is written before every table is protected: name the jobs here
            raise type(exc)(f"{names}: {exc}") from None
        for pos, k in enumerate(group):
            job = jobs[k]
            result = protection.results[pos].with_details(
                linked_with=[j for j in group if j != k], linked_scheme=scheme, **extra
            )
            params = job.audit_params if job.audit_params is not None else {"intervals": "check"}
            done[k] = (result, _audit(result.table, params, progress))
            joint[k] = (
                extra.get("atom_audit_under_protected", 0) == 0
                and extra.get("atom_audit_computable", 0) == 0
            )
        report("Linked tables", 2, 2)
    results = {k: _finish(jobs[k], *done[k], write, joint.get(k, True)) for k in range(len(jobs))}
    return [results[k] for k in range(len(jobs))]
