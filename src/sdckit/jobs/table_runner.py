"""The stepwise runner of a table job: one implementation under every face.

A :class:`TableRunner` holds the state of a table being protected: the table built from an
``[input]`` and a ``[table]`` table (read exactly as :func:`~sdckit.jobs.load_table_job`
reads them), the ``[[rules]]`` and the primaries they mark, the ``[suppression]`` method,
the ``[audit]`` parameters, the suppression and its audit, and the outputs.  It is built
from a loaded :class:`~sdckit.jobs.TableJob` (:meth:`TableRunner.from_job`) or from the
tables of a job (:meth:`TableRunner.from_input`).

:func:`~sdckit.jobs.run_table_job` runs a job through it; the browser interface keeps one and
calls the same methods one request at a time (the secondary suppression in a child process:
:meth:`TableRunner.protect_arguments` gives the arguments of
:func:`~sdckit.jobs.tables.protect_table`, :meth:`TableRunner.set_result` takes its result
back).  :meth:`TableRunner.to_toml` writes the table job that reproduces the state, so an
exported job gives the same published table with ``sdckit table`` (a property test checks
this).  A withheld published table is refused in one sentence, :func:`table_refusal`, the one
``sdckit table`` prints.

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> pl.DataFrame({"region": ["N", "N", "S", "S", "S"]}).write_csv(folder / "r.csv")
>>> run = TableRunner.from_input({"file": str(folder / "r.csv")}, {"dimensions": ["region"]})
>>> run.set_rules([{"rule": "min_frequency", "threshold": 3}])
>>> int(run.marked.primary.sum())
1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdckit.errors import ParameterError
from sdckit.jobs._methods import instantiate, method_class
from sdckit.jobs._toml import path_of, read_toml

__all__ = ["DEFAULT_TABLE_TITLE", "TableOutputs", "TableRunner", "table_refusal"]

#: The title of a table job that gives none.
DEFAULT_TABLE_TITLE = "Table protection"


@dataclass(frozen=True)
class TableOutputs:
    """Where a table job writes (the ``[output]`` table; None: not written)."""

    table: Path | None = None
    table_full: Path | None = None
    report_internal: Path | None = None
    report_external: Path | None = None
    #: How the published table shows an empty cell ("symbol", "zero" or "omit").
    empty: str = "symbol"

    def paths(self) -> dict[str, Path]:
        """The outputs given, by their ``[output]`` key."""
        keys = ("table", "table_full", "report_internal", "report_external")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}


def table_refusal(
    audit: Any,
    withheld: Sequence[Path],
    *,
    joint_ok: bool = True,
    details: Mapping[str, Any] | None = None,
    where: str = "",
) -> str | None:
    """Why the published outputs of a protected table were withheld (None: they were not).

    The sentence ``sdckit table`` prints after ``Error:``, and the browser interface shows.

    Parameters
    ----------
    audit : AuditResult
        The job's audit of the pattern.
    withheld : list of Path
        The outputs not written.
    joint_ok : bool, default True
        Whether the joint audit of linked tables passed.
    details : dict, optional
        The suppression's details (the joint audit's counts of linked tables).
    where : str
        A prefix naming the table (a tau-ARGUS batch's table: ``"title: "``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> table_refusal(SimpleNamespace(ok=False, intervals="check", under_protected=[3, 5]),
    ...               [Path("pub.csv")])
    'the audit found 2 under-protected primary cell(s); not written: pub.csv. Do not publish this pattern.'
    """  # noqa: E501
    names = " and ".join(str(p) for p in withheld) or "no published output"
    if not audit.ok:
        found = "exactly computable" if audit.intervals == "rank" else "under-protected"
        return (
            f"{where}the audit found {len(audit.under_protected)} {found} primary cell(s); "
            f"not written: {names}. Do not publish this pattern."
        )
    if not joint_ok:
        details = details or {}
        found = (
            f"{details['atom_audit_under_protected']} under-protected"
            if "atom_audit_under_protected" in details
            else f"{details.get('atom_audit_computable')} exactly computable"
        )
        return (
            f"{where}the joint audit over the records' code combinations found {found} "
            f"primary cell(s) of the linked tables; not written: {names}. Try "
            'linked = "joint_elimination".'
        )
    return None


class TableRunner:
    """The state of one table protection, changed one section at a time (see the module
    docstring).

    Parameters
    ----------
    table : Table
        The table as built (never changed).
    input : dict, optional
        The ``[input]`` table that reads the file (needed by :meth:`to_toml` only).
    table_spec : dict, optional
        The ``[table]`` table (needed by :meth:`to_toml` only).
    title : str
    outputs : TableOutputs, optional
        Where :meth:`write` writes by default.
    """

    def __init__(
        self,
        table: Any,
        *,
        input: Mapping[str, Any] | None = None,
        table_spec: Mapping[str, Any] | None = None,
        title: str = DEFAULT_TABLE_TITLE,
        outputs: TableOutputs | None = None,
    ) -> None:
        self.table = table
        self.input = dict(input) if input is not None else None
        self.table_spec = dict(table_spec) if table_spec is not None else None
        self.title = title
        self.outputs = outputs if outputs is not None else TableOutputs()
        self.rules: list[dict[str, Any]] = []
        self.marked: Any = None
        self.suppression: dict[str, Any] = {"method": "hypercube"}
        self.method: Any = None
        #: The ``[audit]`` table (None: the job has none and audits in check mode).
        self.audit_params: dict[str, Any] | None = None
        self.result: Any = None
        self.audit: Any = None
        self.version = 0

    # ------------------------------------------------------------------ building
    @classmethod
    def from_input(
        cls, input: Mapping[str, Any], table: Mapping[str, Any], *, base: Path = Path("."),
        **options: Any,
    ) -> TableRunner:  # fmt: skip
        """A runner on the table an ``[input]`` and a ``[table]`` table build, read exactly as
        :func:`~sdckit.jobs.load_table_job` reads them (paths relative to ``base``);
        ``options`` as for :class:`TableRunner`."""
        from sdckit.jobs._table_build import _build_table

        built = _build_table(base, dict(input), dict(table))
        return cls(built, input=_absolute(input, base), table_spec=table, **options)

    @classmethod
    def from_job(cls, job: Any) -> TableRunner:
        """A runner holding a loaded table job's table, rules (primaries marked), method,
        ``[audit]`` and outputs, before the secondary suppression."""
        run = cls(
            job.table,
            title=job.title,
            outputs=TableOutputs(
                job.output_table,
                job.output_full,
                job.report_internal,
                job.report_external,
                job.empty,
            ),
        )
        run._set_rule_objects(job.rules, None)
        run.method = job.suppression
        run.audit_params = None if job.audit_params is None else dict(job.audit_params)
        path = job.path
        if path is not None and path.suffix.lower() == ".toml":
            # the tables that write the job again (a later set_rules or set_suppression
            # replaces them, as on a runner built from its tables)
            tables = read_toml(path)[1]
            if tables.get("input") is not None:
                run.input = _absolute(tables["input"], path.parent)
            run.table_spec = tables.get("table")
            run.rules = [dict(r) for r in tables.get("rules", [])]
            run.suppression = dict(tables.get("suppression", {"method": "hypercube"}))
        return run

    def _changed(self) -> None:
        self.version += 1

    def set_rules(self, rules: Sequence[Mapping[str, Any]]) -> None:
        """Replace the rules (checked as a job's ``[[rules]]``) and mark the primaries (an
        empty list: no primaries marked).  The suppression is forgotten."""
        tables = [dict(r) for r in rules]
        built = self.check_rules(tables) if tables else ()
        self._set_rule_objects(built, tables)

    def _set_rule_objects(
        self, built: tuple[Any, ...], tables: list[dict[str, Any]] | None
    ) -> None:
        from sdckit.tables import apply_rules

        self.rules = tables if tables is not None else []
        self.marked = apply_rules(self.table, list(built)) if built else None
        self.result = self.audit = None
        self._changed()

    @staticmethod
    def prepare_suppression(name: str, params: Mapping[str, Any]) -> Any:
        """The ``[suppression]`` method built and checked as a job's, without keeping it."""
        cls = method_class(name, "[suppression]", "table")
        if getattr(cls, "kind", "suppression") != "suppression":
            raise ParameterError(
                f"[suppression] {name!r} is a rounding method; choose a secondary suppression "
                "method: hypercube, modular, optimal or gauss."
            )
        return instantiate(cls, dict(params), "[suppression]")

    def set_suppression(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        """The secondary suppression method (checked as a job's ``[suppression]``)."""
        self.method = self.prepare_suppression(name, dict(params or {}))
        self.suppression = {"method": name, **dict(params or {})}
        self.result = self.audit = None
        self._changed()

    def set_audit(self, params: Mapping[str, Any] | None) -> None:
        """The ``[audit]`` parameters, checked as a job's (None: none, the job audits in
        check mode).  An audit run with other parameters is forgotten."""
        from sdckit.jobs.tables import check_audit

        self.audit_params = None if params is None else check_audit(dict(params))
        self.audit = None
        self._changed()

    # ------------------------------------------------------------------ the work
    def _check_ready(self) -> None:
        if self.marked is None:
            raise ParameterError("Add a sensitivity rule first: it marks the primary cells.")
        if self.method is None:
            self.set_suppression(self.suppression.get("method", "hypercube"), {
                k: v for k, v in self.suppression.items() if k != "method"
            })  # fmt: skip

    def job_audit_params(self) -> dict[str, Any]:
        """The parameters of the audit a job runs (check mode without ``[audit]``)."""
        return dict(self.audit_params) if self.audit_params is not None else {"intervals": "check"}

    def protect_arguments(
        self,
        name: str | None = None,
        params: Mapping[str, Any] | None = None,
        *,
        audit: bool | Mapping[str, Any] = True,
    ) -> tuple[Any, Any, dict[str, Any] | None]:
        """The arguments of :func:`~sdckit.jobs.tables.protect_table` (to run it elsewhere,
        e.g. in a child process; :meth:`set_result` takes the result back), with the state's
        method or with method ``name`` and its ``params`` (checked; the state is unchanged).

        ``audit``: True, the job's audit of the state; a mapping, those ``[audit]``
        parameters; False, no audit there (:meth:`write` runs the job's before writing).
        """
        self._check_ready()
        method = self.method if name is None else self.prepare_suppression(name, params or {})
        if isinstance(audit, Mapping):
            return self.marked, method, dict(audit)
        return self.marked, method, self.job_audit_params() if audit else None

    @staticmethod
    def check_rules(rules: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
        """The rules of ``[[rules]]`` tables, built and checked as a job's."""
        from sdckit.jobs.tables import _rules

        return _rules([dict(r) for r in rules])

    def set_result(self, result: Any, audit: Any = None) -> None:
        """The secondary suppression (and its audit) of the current state, computed
        elsewhere from :meth:`protect_arguments`."""
        self.result, self.audit = result, audit
        self._changed()

    def protect(self, progress: Any = None) -> tuple[Any, Any]:
        """The secondary suppression of the marked table and the job's audit of the pattern,
        as ``sdckit table`` runs them; ``progress(stage, done, total)``.

        Returns
        -------
        (SuppressionResult, AuditResult)
        """
        from sdckit.jobs.tables import protect_marked

        self._check_ready()
        result, checked = protect_marked(self.marked, self.method, self.audit_params, progress)
        self.set_result(result, checked)
        return result, checked

    def checked(self) -> Any:
        """The job's audit of the pattern (run now in check mode if none was run)."""
        from sdckit.jobs.tables import job_audit

        if self.result is None:
            raise ParameterError("Run the secondary suppression first.")
        if self.audit is None:
            self.audit = job_audit(self.result.table, self.audit_params)
        return self.audit

    # ------------------------------------------------------------------ writing
    def write(self, outputs: TableOutputs | None = None) -> tuple[list[Path], str | None]:
        """Write the outputs as ``sdckit table`` does: the internal ones always, the published
        table and the external report only when the audit passed (an older one removed).

        Every output is checked first (distinct paths, not the input file, writable).

        Returns
        -------
        (list of Path, str or None)
            The files written, and why the published outputs were withheld
            (:func:`table_refusal`; None: written).
        """
        from sdckit._files import check_output_path
        from sdckit.jobs.tables import write_table_outputs

        out = outputs if outputs is not None else self.outputs
        checked = self.checked()
        source = (self.input or {}).get("file")
        seen: dict[Path, str] = {}
        for key, path in out.paths().items():
            resolved = path.resolve()
            if source is not None and resolved == Path(source).resolve():
                raise ParameterError(
                    f"[output] {key!r} is the input file; write the outputs to other files so "
                    "that the input is not overwritten."
                )
            if resolved in seen:
                raise ParameterError(
                    f"[output] {seen[resolved]!r} and {key!r} are the same file; give each "
                    "output its own path."
                )
            seen[resolved] = key
            check_output_path(path, f"[output] {key!r} file")
        for path in out.paths().values():
            path.parent.mkdir(parents=True, exist_ok=True)
        _, written, withheld = write_table_outputs(
            self.result, checked, table=out.table, table_full=out.table_full,
            report_internal=out.report_internal, report_external=out.report_external,
            title=self.title, empty=out.empty,
        )  # fmt: skip
        return written, table_refusal(checked, withheld) if withheld else None

    # ------------------------------------------------------------------ the job file
    def to_document(self, outputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The table job that reproduces the state, as a dict of TOML tables.

        Parameters
        ----------
        outputs : dict, optional
            The ``[output]`` entries (``table``, ``table_full``, ``report_internal``,
            ``report_external``) as they should be written (e.g. names relative to the job
            file); default: the runner's outputs as absolute paths.
        """
        if self.input is None or self.table_spec is None:
            raise ParameterError(
                "The runner was built without its [input] and [table] tables: build it with "
                "TableRunner.from_input to write a job file."
            )
        if not self.rules:
            raise ParameterError("A table job needs at least one sensitivity rule ([[rules]]).")
        if outputs is None:
            outputs = {k: str(p.resolve()) for k, p in self.outputs.paths().items()}
        document: dict[str, Any] = {
            "title": self.title,
            "input": dict(self.input),
            "table": dict(self.table_spec),
            "rules": [dict(r) for r in self.rules],
            "suppression": dict(self.suppression),
            "audit": None if self.audit_params is None else dict(self.audit_params),
            "output": {k: v for k, v in outputs.items() if v is not None} or None,
        }
        if self.outputs.empty != "symbol":
            document["output"] = {**(document["output"] or {}), "empty": self.outputs.empty}
        return document

    def to_toml(self, outputs: Mapping[str, Any] | None = None, header: str = "") -> str:
        """The TOML text of :meth:`to_document` (read back exactly by :mod:`tomllib`)."""
        from sdckit.jobs.toml_writer import faithful_dumps

        return faithful_dumps(self.to_document(outputs), header, "table job")


def _absolute(input: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """An ``[input]`` table with its file as an absolute path (read from ``base``): the job
    written again reads the same file wherever it is saved, and no output may replace it."""
    table = dict(input)
    if isinstance(table.get("file"), str):
        table["file"] = str(path_of(base, table["file"], "input file").resolve())
    return table
