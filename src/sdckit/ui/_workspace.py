"""The state of the one user of a UI process: the file, its roles, the protection, the exports.

:class:`Workspace` holds what the pages show and the requests change.  The protection itself
(reading the file as a job does, the steps, undo and redo, the release and its check, the R-U
map, the outputs and the job file that reproduces the state) is a :class:`sdckit.jobs.Runner`,
the one that ``sdckit protect`` drives: the workspace keeps the page settings (the target, the
release plan, the R-U map candidates, the seed and the title), hands them to the runner and
delegates the work to it.  Work that takes time runs as a background task
(:mod:`sdckit.ui._tasks`); a task changes the state only once it has finished, under the lock.
"""

from __future__ import annotations

import re
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import sdckit.jobs.sections as _jobs
from sdckit.errors import DataError, ParameterError, SdcError
from sdckit.jobs import Outputs, Runner
from sdckit.protection import registry
from sdckit.ui._roles import PRIMARY_ROLES, role_of, roles_from_form
from sdckit.ui._source import ColumnInfo, OpenedFile, Source, read_source, save_upload
from sdckit.ui._tables import TableState
from sdckit.ui._tasks import TaskManager, run_in_process

__all__ = ["PRIMARY_ROLES", "WRITABLE", "ColumnInfo", "Source", "Workspace"]

#: File formats the protected file can be written in (by extension).
WRITABLE = (".csv", ".parquet", ".sav", ".dta", ".xpt")


@dataclass
class ExportRecord:
    """The files of the last export and what the release check said."""

    files: dict[str, Path] = field(default_factory=dict)
    refusal: str | None = None
    job_text: str = ""


class Workspace:
    """Everything of the one user of a UI process (see the module docstring).

    Parameters
    ----------
    out_dir : Path
        Where exports (the job, the protected file, the reports, the tables) and uploaded
        files are written.
    """

    def __init__(self, out_dir: Path, *, seed: int | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.lock = threading.RLock()
        self.tasks = TaskManager()
        self.version = 0
        self.seed = int(seed) if seed is not None else secrets.randbelow(10**8)
        self.title = "Statistical disclosure control report"
        self.notice: str | None = None
        self.reset_data()

    # ------------------------------------------------------------------ state
    def reset_data(self) -> None:
        """Forget the file and everything derived from it."""
        self.source: Source | None = None
        self.raw: pl.DataFrame | None = None
        self.opened: OpenedFile | None = None
        self.columns: list[ColumnInfo] = []
        self.roles: dict[str, Any] = {}
        self.drop: list[str] = []
        self.numeric_keys: list[str] = []
        self.household_id = "new"
        self.order = "shuffled"
        self.target: dict[str, Any] = {"k": 3}
        self.runner: Runner | None = None
        #: a step that failed as a task: its form values and message (shown beside the form)
        self.step_draft: dict[str, Any] | None = None
        self.suda: tuple[int, Any] | None = None
        self.ru_candidates: list[dict[str, Any]] = []
        self.ru_settings: dict[str, Any] = {
            "risk": "global_risk", "loss": "share_changed", "seeds": [0, 1, 2], "max_risk": None,
        }  # fmt: skip
        self.ru_result: Any = None
        self.release: tuple[int, Any] | None = None
        self.export = ExportRecord()
        self.plots_in_report = True
        self.output_format = ".csv"
        self.tables = TableState()
        self.touch()

    def touch(self) -> None:
        """A new version of the state (caches keyed by it are stale)."""
        self.version += 1

    @property
    def session(self) -> Any:
        """The protection session of the runner (None before the roles are given)."""
        return None if self.runner is None else self.runner.session

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The steps applied, as a job's steps (method name and parameters)."""
        if self.runner is None:
            return []
        return [
            {"method": name, "params": dict(spec.params)}
            for spec, name in zip(self.runner.steps, self.runner.step_names, strict=True)
        ]

    @property
    def redo_stack(self) -> list[tuple[dict[str, Any], Any]]:
        """The undone steps (the next to redo last), each as (job step, session step)."""
        if self.runner is None:
            return []
        return [
            ({"method": name, "params": dict(spec.params)}, step)
            for spec, name, step in self.runner.undone
        ]

    @property
    def has_data(self) -> bool:
        """Whether a file is open."""
        return self.raw is not None

    @property
    def column_names(self) -> list[str]:
        """The columns of the open file."""
        return [] if self.raw is None else list(self.raw.columns)

    # ------------------------------------------------------------------ opening
    def open(self, source: Source, progress: Any) -> None:
        """Read ``source`` (a task) and replace the open file."""
        opened = read_source(source, progress)
        with self.lock:
            self.reset_data()
            self.opened = opened
            self.source, self.raw, self.columns = source, opened.frame, opened.columns
            self.title = f"Protection of {source.name}"

    def save_upload(self, filename: str, chunks: Any) -> Path:
        """Store an uploaded file under ``out_dir/input`` (under a name no earlier upload has)
        and return its path."""
        return save_upload(self.out_dir / "input", filename, chunks)

    # ------------------------------------------------------------------ roles
    def roles_of(self, column: str) -> tuple[str, bool]:
        """The primary role of a column and whether it is household-level."""
        return role_of(self.roles, column)

    roles_from_form = staticmethod(roles_from_form)

    def check_roles(self, roles: dict[str, Any], numeric_keys: list[str]) -> dict[str, Any]:
        """Validate a ``[roles]`` table as a job does; return Microdata's keyword arguments."""
        if not roles.get("keys") and not roles.get("numeric"):
            raise ParameterError(
                "Give at least one key variable (or numeric variable): the risk is measured on "
                "them."
            )
        return _jobs.build_roles(roles)

    def set_roles(
        self,
        roles: dict[str, Any],
        drop: list[str],
        numeric_keys: list[str],
        progress: Any,
    ) -> None:
        """Read the file with new roles as a job does, and assess it (a task); the steps are
        applied again."""
        self.check_roles(roles, numeric_keys)
        if self.source is None:
            raise DataError("Open a file first.")
        steps = self.steps
        total = 2 + len(steps)
        progress("Reading the file with the roles", 0, total)
        runner = Runner.from_input(
            self.source.input_spec(numeric_keys), roles, seed=self.seed, title=self.title,
            reader=None if self.opened is None else self.opened.read,
        )  # fmt: skip
        if drop or self.household_id != "new" or self.order != "shuffled":
            _jobs.build_release_plan(self._output_plan(drop), runner.original)
        progress("Assessing the disclosure risk", 1, total)
        note = None
        for i, spec in enumerate(steps, start=1):
            progress(f"Applying step {i} again", 1 + i, total)
            try:
                runner.apply_step(spec["method"], spec["params"])
            except SdcError as exc:
                note = f"Step {i} could not be applied with the new roles and was removed: {exc}"
                break
        with self.lock:
            self.roles, self.drop, self.numeric_keys = roles, list(drop), list(numeric_keys)
            self.runner = runner
            self.suda, self.release, self.ru_result = None, None, None
            self.notice = note
            self.touch()

    def _output_plan(self, drop: list[str] | None = None) -> dict[str, Any]:
        plan: dict[str, Any] = {}
        drop = self.drop if drop is None else drop
        if drop:
            plan["drop"] = list(drop)
        if self.household_id != "new":
            plan["household_id"] = self.household_id
        if self.order != "shuffled":
            plan["order"] = self.order
        return plan

    # ------------------------------------------------------------------ steps
    def prepare_step(self, name: str, params: dict[str, Any]) -> tuple[Any, Any]:
        """The next step (with its seed) and its method, checked as a job's step is.

        Raises
        ------
        SdcError
            In the words of ``sdckit protect`` ("step 2 (pram): The 'min_diagonal' ...").
        """
        runner = self._need_runner()
        runner.seed = self.seed
        spec, label = runner.prepare_step(name, params)
        return (spec, label), spec.method

    def numbers_needed(self, name: str, params: dict[str, Any]) -> list[str]:
        """The key columns a step works on as numbers (a parameter of the numeric role, such
        as interval recoding's ``columns``) that are read from the CSV file as text, though the
        file holds them as numbers: the step reads them as numbers instead (``[input]
        numeric_keys``), without a separate declaration on the Roles page.

        Raises
        ------
        ParameterError
            When an earlier step changed such a column (reading it again as a number would
            change what that step did): the message names the box on the Roles page.
        """
        source = self.source
        if self.runner is None or source is None or not source.is_csv:
            return []
        wanted = _jobs.numeric_columns(name, params)
        as_text = set(_jobs.text_columns(self.roles, self.numeric_keys))
        numeric_in_file = {c.name for c in self.columns if c.numeric}
        needed = [c for c in wanted if c in as_text and c in numeric_in_file]
        changed = {c for step in self.runner.session.history for c in step.changed}
        for c in needed:
            if c in changed:
                raise ParameterError(
                    f"The key {c!r} is read as text and an earlier step changed it; to work on "
                    f"it as a number, tick “read as a number” for {c!r} on the Roles page "
                    "(the steps are then applied again), or undo the earlier step."
                )
        return needed

    def apply_step_reading_numbers(
        self, spec: Any, method: Any, needed: list[str], progress: Any
    ) -> None:
        """Apply a prepared step (a task), first reading the key columns ``needed`` as numbers
        (the roles are assessed again with them in ``numeric_keys``, which the exported job
        lists, so that ``sdckit protect`` reads the file the same way)."""
        if not needed:
            self.apply_step(spec, method, progress)
            return
        before = list(self.numeric_keys)
        self.set_roles(self.roles, self.drop, [*before, *needed], progress)
        try:
            self.apply_step(spec, method, progress)
        except Exception:
            # the step failed: the keys are read as before (nothing changed but the message)
            self.set_roles(self.roles, self.drop, before, lambda *a: None)
            raise

    def apply_step(self, prepared: Any, method: Any, progress: Any) -> None:
        """Apply a prepared step (a task)."""
        runner = self._need_runner()
        spec, label = prepared
        runner.apply_step(spec, name=label, progress=progress)
        with self.lock:
            self._changed()

    def _changed(self) -> None:
        self.suda, self.release = None, None
        self.touch()

    def undo(self) -> None:
        """Undo the last step (it can be redone)."""
        with self.lock:
            if self.runner is None or not self.runner.steps:
                raise ParameterError("There is no step to undo.")
            self.runner.undo()
            self._changed()

    def back_to(self, number: int) -> None:
        """Undo the steps after step ``number`` (0: back to the original file)."""
        with self.lock:
            while self.runner is not None and len(self.runner.steps) > max(0, number):
                self.undo()

    def redo(self) -> None:
        """Put back the last undone step."""
        with self.lock:
            if self.runner is None or not self.runner.redo_steps:
                raise ParameterError("There is no undone step to redo.")
            self.runner.redo()
            self._changed()

    # ------------------------------------------------------------------ risk views
    def risk_frame(self) -> pl.DataFrame:
        """The current file's key variables with the risk of every record (cached)."""
        session = self._need_session()
        cache = getattr(self, "_risk_cache", None)
        if cache is not None and cache[0] == self.version:
            return cache[1]
        md, risk = session.current, session.risk
        cols = list(md.keys) + [c for c in md.linked if c in md.frame.columns]
        frame = md.frame.select(cols).with_row_index("record", offset=1)
        extra: list[pl.Series] = []
        if risk.individual is not None:
            extra += [
                pl.Series("fk", np.asarray(risk.individual.fk)),
                pl.Series("Fk", np.asarray(risk.individual.Fk_hat)),
                pl.Series("risk", np.asarray(risk.individual.risk)),
            ]
        if risk.household is not None:
            extra.append(pl.Series("household_risk", np.asarray(risk.household.household_risk)))
        if self.suda is not None and self.suda[0] == self.version:
            extra.append(pl.Series("dis_suda", np.asarray(self.suda[1].dis_score)))
        frame = frame.with_columns(extra)
        self._risk_cache = (self.version, frame)
        return frame

    def _need_runner(self) -> Runner:
        if self.runner is None:
            raise ParameterError("Assign the roles first: the steps work on the key variables.")
        return self.runner

    def _need_session(self) -> Any:
        return self._need_runner().session

    def run_suda2(self, progress: Any, cancel: Any) -> None:
        """SUDA2 scores of the current file (a task, in a child process)."""
        session = self._need_session()
        version = self.version
        keys = list(session.current.keys)
        if not keys:
            raise ParameterError("SUDA2 needs key variables.")
        frame = session.current.frame.select(keys)
        result = run_in_process("sdckit.ui._work:suda2_scores", (frame, keys), progress, cancel)
        with self.lock:
            if self.version == version:
                self.suda = (version, result)
                self._risk_cache = None

    # ------------------------------------------------------------------ R-U map
    def ru_spec(self) -> dict[str, Any] | None:
        """The ``[ru_map]`` table (None without candidates)."""
        if not self.ru_candidates:
            return None
        spec: dict[str, Any] = {k: v for k, v in self.ru_settings.items() if v is not None}
        spec["candidates"] = [dict(c) for c in self.ru_candidates]
        return spec

    def add_candidate(self, name: str, params: dict[str, Any], label: str, grid: dict) -> None:
        """Add an R-U map candidate (checked as a job's candidate is)."""
        session = self._need_session()
        item: dict[str, Any] = {"method": name}
        flat = dict(params)
        flat.pop("seed", None)
        if "method" in flat:
            item["params"] = {"method": flat.pop("method")}
        item.update(flat)
        if label:
            item["label"] = label
        if grid:
            item["grid"] = grid
        trial = {**self.ru_settings, "candidates": [*self.ru_candidates, item]}
        trial = {k: v for k, v in trial.items() if v is not None}
        _jobs.build_ru_map(trial, session.current.frame.columns, self.seed)
        for column in self.numbers_needed(name, flat):
            # a candidate is tried on the current state, where the key is still text: say the
            # fix now rather than "not numeric" when the map is built
            raise ParameterError(
                f"The key {column!r} is read from the file as text; to band it in a candidate, "
                f"tick “read as a number” for {column!r} on the Roles page first (the steps are "
                "then applied again)."
            )
        with self.lock:
            self.ru_candidates.append(item)
            self.ru_result = None

    def build_ru(self, progress: Any) -> None:
        """Compute the R-U map on the current state (a task; every run is a checkpoint)."""
        if self.ru_spec() is None:
            raise ParameterError("Add at least one candidate to the R-U map.")
        result = self._synced().ru_map(progress)
        with self.lock:
            self.ru_result = result

    # ------------------------------------------------------------------ release and export
    def risk_target(self) -> Any:
        """The target as a job's ``[target]`` (None when empty)."""
        spec = {k: v for k, v in self.target.items() if v is not None}
        return _jobs.parse_target(spec) if spec else None

    def release_plan(self) -> Any:
        """The release plan of the ``[output]`` settings."""
        return _jobs.build_release_plan(self._output_plan(), self._need_session().original)

    def _synced(self) -> Runner:
        """The runner with the page settings (seed, title, target, release plan, R-U map,
        report figures) handed to it; it checks its release again only when they changed."""
        runner = self._need_runner()
        runner.set_seed(self.seed)  # a new seed: the release is made again
        runner.title = self.title
        runner.outputs = Outputs(plots=self.plots_in_report)
        target = self.risk_target()
        if target != runner.target:
            runner.set_target(target)
        plan = self.release_plan()
        if plan != runner.plan:
            runner.set_plan(plan)
        table = self.ru_spec()
        if table != runner.ru_table:
            runner.set_ru_map(table)
        return runner

    def compute_release(self, progress: Any) -> Any:
        """The released file and its independent check (a task)."""
        runner = self._synced()
        version = self.version
        released = runner.release(progress)
        # the fix in words (the release page names its own controls, ui._words)
        refusal = released.refusal()
        met = runner.target_met()
        with self.lock:
            if self.version == version:
                self.release = (version, (released, refusal, met))
        return released, refusal, met

    def file_stem(self) -> str:
        """The stem of the export file names."""
        base = "demo" if self.source is None or self.source.kind == "demo" else self.source.name
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", Path(base).stem).strip("_") or "data"
        return stem

    def export_names(self) -> dict[str, str]:
        """The file names of the exports (in ``out_dir``)."""
        stem = self.file_stem()
        return {
            "job": f"{stem}_job.toml",
            "data": f"{stem}_protected{self.output_format}",
            "report_internal": f"{stem}_report_internal.html",
            "report_external": f"{stem}_report_external.html",
        }

    def job_document(self) -> dict[str, Any]:
        """The job file that reproduces the session (the tables of ``docs/job-files.md``)."""
        if self.source is None:
            raise DataError("Open a file first.")
        names = self.export_names()
        return self._synced().to_document(
            {k: names[k] for k in ("data", "report_internal", "report_external")}
        )

    def job_text(self) -> str:
        """The TOML text of :meth:`job_document`."""
        if self.source is None:
            raise DataError("Open a file first.")
        names = self.export_names()
        header = (
            "# sdckit job file written by the browser interface (sdckit ui).\n"
            "# Run it again with: sdckit protect <this file>   (docs/job-files.md)\n"
        )
        return self._synced().to_toml(
            {k: names[k] for k in ("data", "report_internal", "report_external")}, header
        )

    def export_all(self, progress: Any) -> ExportRecord:
        """Write the job, the reports and (if the release check passes) the protected file.

        The outputs are written by the runner, as ``sdckit protect`` writes them from the job
        file; that the job file reproduces them is the runner's round-trip property (tested in
        tests/test_runner.py), not a second run here.
        """
        from sdckit.io import atomic_path

        text = self.job_text()
        runner = self._synced()
        names = self.export_names()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        progress("Writing the job file", 0, 2)
        job_path = self.out_dir / names["job"]
        with atomic_path(job_path) as tmp:
            tmp.write_text(text, encoding="utf-8")
        outputs = Outputs(
            data=self.out_dir / names["data"],
            report_internal=self.out_dir / names["report_internal"],
            report_external=self.out_dir / names["report_external"],
            plots=self.plots_in_report,
        )
        written, _ = runner.write(outputs, progress=progress)
        _, refusal, _ = self.compute_release(progress)
        files = {"job": job_path}
        for key in ("report_internal", "data", "report_external"):
            if getattr(outputs, key) in written:
                files[key] = getattr(outputs, key)
        record = ExportRecord(files=files, refusal=refusal, job_text=text)
        progress("Done", 2, 2)
        with self.lock:
            self.export = record
        return record

    # ------------------------------------------------------------------ helpers for pages
    def methods(self) -> list[tuple[str, str, str]]:
        """The microdata methods (job name, class name, description)."""
        from sdckit.ui._forms import method_names

        return method_names(registry("microdata"))

    def columns_of_role(self, role: str) -> list[str]:
        """The columns a column picker of ``role`` offers."""
        if self.runner is not None:
            md = self.runner.current
            if role == "keys":
                return list(md.keys)
            if role == "numeric":
                # with the keys the file holds as numbers (a CSV key read as text is read as a
                # number by a step that needs one: numbers_needed)
                in_file = {c.name for c in self.columns if c.numeric}
                keys = [c for c in md.keys if c in in_file or md.frame.schema[c].is_numeric()]
                numeric = list(dict.fromkeys([*md.numeric, *keys]))
                return numeric or [c.name for c in self.columns if c.numeric]
            return list(md.frame.columns)
        return self.column_names
