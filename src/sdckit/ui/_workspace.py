"""The state of the one user of a UI process: the file, its roles, the session, the exports.

:class:`Workspace` holds what the pages show and the requests change.  Its job-shaped parts
(the input, the roles, the steps with their parameters, the target, the release plan, the R-U
map) are kept as the tables of a job file, so that :meth:`Workspace.job_document` is the job
that reproduces the session, and they are validated by the jobs layer's own functions
(:mod:`sdckit.jobs.sections`).  Work that takes time runs as a background task
(:mod:`sdckit.ui._tasks`); a task changes the state only once it has finished, under the lock.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import sdckit.jobs.sections as _jobs
from sdckit.errors import DataError, ParameterError, SdcError
from sdckit.microdata import Microdata
from sdckit.protection import registry
from sdckit.ui._session import UISession
from sdckit.ui._tables import TableState
from sdckit.ui._tasks import Cancelled, TaskManager, run_in_process
from sdckit.ui._toml import dumps, same_document

__all__ = ["PRIMARY_ROLES", "ColumnInfo", "Source", "Workspace"]

#: The roles a column can have in the roles form (one each), with their labels.
PRIMARY_ROLES: dict[str, str] = {
    "": "not used",
    "key": "key variable",
    "numeric": "numeric variable",
    "weight": "sampling weight",
    "strata": "strata",
    "household": "household id",
    "sensitive": "sensitive variable",
    "identifier": "direct identifier",
    "linked": "linked to a key",
}

#: File formats the protected file can be written in (by extension).
WRITABLE = (".csv", ".parquet", ".sav", ".dta", ".xpt")


@dataclass(frozen=True)
class Source:
    """Where the data came from: the demo, or a file (with how to read it)."""

    kind: str
    name: str
    path: Path | None = None
    format: str | None = None
    na_values: tuple[str, ...] | None = None

    def input_spec(self, numeric_keys: list[str] | None = None) -> dict[str, Any]:
        """The ``[input]`` table of a job reading this source."""
        if self.kind == "demo":
            return {"dataset": "demo"}
        spec: dict[str, Any] = {"file": str(self.path)}
        if self.format:
            spec["format"] = self.format
        if self.na_values is not None:
            spec["na_values"] = list(self.na_values)
        if numeric_keys:
            spec["numeric_keys"] = list(numeric_keys)
        return spec

    @property
    def is_csv(self) -> bool:
        """Whether the file is read as CSV (text columns and missing-value words apply)."""
        from sdckit.io import detect_format

        return self.kind == "file" and detect_format(self.path, self.format) == "csv"  # type: ignore[arg-type]


@dataclass(frozen=True)
class ColumnInfo:
    """One column of the file as the data page shows it."""

    name: str
    dtype: str
    levels: int
    missing: int
    numeric: bool


@dataclass
class ExportRecord:
    """The files of the last export and what the release check said."""

    files: dict[str, Path] = field(default_factory=dict)
    refusal: str | None = None
    verified: bool | None = None
    verify_note: str = ""
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
        self.columns: list[ColumnInfo] = []
        self.roles: dict[str, Any] = {}
        self.drop: list[str] = []
        self.numeric_keys: list[str] = []
        self.household_id = "new"
        self.order = "shuffled"
        self.target: dict[str, Any] = {"k": 3}
        self._csv_text: pl.DataFrame | None = None
        self.session: UISession | None = None
        self.steps: list[dict[str, Any]] = []
        self.redo_stack: list[tuple[dict[str, Any], Any]] = []
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
        from sdckit.io import read_data

        progress("Reading the file", 0, 3)
        if source.kind == "demo":
            from sdckit.datasets import load_demo

            frame = load_demo()
        else:
            frame = read_data(
                source.path,  # type: ignore[arg-type]
                format=source.format,
                na_values=list(source.na_values) if source.na_values is not None else None,
            )
        if frame.height == 0 or frame.width == 0:
            raise DataError("The file has no records or no columns.")
        text = None
        if source.is_csv:
            # the columns a job may read as text (codes such as 007), read as text once now,
            # so that assigning the roles does not read the file again
            progress("Reading the number columns as text too", 1, 3)
            numbers = [c for c in frame.columns if frame.schema[c] != pl.String]
            if numbers:
                text = read_data(
                    source.path,  # type: ignore[arg-type]
                    format=source.format,
                    na_values=list(source.na_values) if source.na_values is not None else None,
                    text_columns=numbers,
                ).select(numbers)
        progress("Counting the levels of each column", 2, 3)
        counts = frame.select(
            [pl.col(c).n_unique().alias(f"u{i}") for i, c in enumerate(frame.columns)]
            + [pl.col(c).null_count().alias(f"m{i}") for i, c in enumerate(frame.columns)]
        ).row(0)
        n = frame.width
        info = [
            ColumnInfo(
                name=c,
                dtype=str(frame.schema[c]),
                levels=int(counts[i]),
                missing=int(counts[n + i]),
                numeric=frame.schema[c].is_numeric(),
            )
            for i, c in enumerate(frame.columns)
        ]
        progress("Done", 3, 3)
        with self.lock:
            self.reset_data()
            self.source, self.raw, self.columns = source, frame, info
            self._csv_text = text
            self.title = f"Protection of {source.name}"

    def save_upload(self, filename: str, chunks: Any) -> Path:
        """Store an uploaded file under ``out_dir/input`` (under a name no earlier upload has:
        ``data-2.csv`` after ``data.csv``) and return its path."""
        name = Path(filename or "upload").name
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "upload"
        folder = self.out_dir / "input"
        folder.mkdir(parents=True, exist_ok=True)
        # an earlier upload of the same name stays (a job exported from it still reads it)
        stem, suffix = Path(name).stem, Path(name).suffix
        target, n = folder / name, 1
        while target.exists():
            n += 1
            target = folder / f"{stem}-{n}{suffix}"
        with open(target, "xb") as out:
            shutil.copyfileobj(chunks, out, length=1 << 20)
        return target

    # ------------------------------------------------------------------ roles
    def roles_of(self, column: str) -> tuple[str, bool]:
        """The primary role of a column and whether it is household-level."""
        r = self.roles
        if column in r.get("keys", []):
            role = "key"
        elif column in r.get("numeric", []):
            role = "numeric"
        elif column == r.get("weight"):
            role = "weight"
        elif column == r.get("strata"):
            role = "strata"
        elif column == r.get("household"):
            role = "household"
        elif column in r.get("sensitive", []):
            role = "sensitive"
        elif column in r.get("identifiers", []):
            role = "identifier"
        elif column in r.get("linked", {}):
            role = "linked"
        else:
            role = ""
        return role, column in r.get("household_level", [])

    @staticmethod
    def roles_from_form(
        assignments: dict[str, str], household_level: list[str], linked_to: dict[str, str]
    ) -> dict[str, Any]:
        """The ``[roles]`` table from one role per column (in column order)."""
        roles: dict[str, Any] = {}
        lists = {"key": "keys", "numeric": "numeric", "sensitive": "sensitive",
                 "identifier": "identifiers"}  # fmt: skip
        singles = {"weight": "weight", "strata": "strata", "household": "household"}
        for column, role in assignments.items():
            if role in lists:
                roles.setdefault(lists[role], []).append(column)
            elif role in singles:
                if singles[role] in roles:
                    raise ParameterError(
                        f"Only one column can be the {PRIMARY_ROLES[role]}; "
                        f"{roles[singles[role]]!r} and {column!r} are both."
                    )
                roles[singles[role]] = column
            elif role == "linked":
                key = linked_to.get(column, "")
                if not key:
                    raise ParameterError(
                        f"The column {column!r} is linked to a key: choose the key variable "
                        "it is linked to."
                    )
                roles.setdefault("linked", {})[column] = key
            elif role:
                raise ParameterError(f"Unknown role {role!r} for the column {column!r}.")
        if household_level:
            roles["household_level"] = list(household_level)
        return roles

    @staticmethod
    def text_columns(roles: dict[str, Any], numeric_keys: list[str]) -> list[str]:
        """The columns a job with these roles reads from a CSV file as text (the rule of
        ``[input]`` in docs/job-files.md: key, linked, household-level and identifier columns,
        unless they are numeric variables, the weight or listed in ``numeric_keys``)."""
        coded: list[str] = []
        for role in ("keys", "linked", "household_level", "identifiers"):
            value = roles.get(role) or []
            coded += [value] if isinstance(value, str) else [c for c in value if isinstance(c, str)]
        weight = roles.get("weight")
        numeric = (
            set(numeric_keys) | set(roles.get("numeric") or []) | ({weight} if weight else set())
        )
        return [c for c in dict.fromkeys(coded) if c not in numeric]

    def _frame_for(self, roles: dict[str, Any], numeric_keys: list[str]) -> pl.DataFrame:
        """The file as a job with these roles reads it (CSV: those columns as text, taken from
        the text read made when the file was opened; the export checks the equality)."""
        source = self.source
        if source is None or self.raw is None:
            raise DataError("Open a file first.")
        text = getattr(self, "_csv_text", None)
        if not source.is_csv or text is None:
            return self.raw
        wanted = [c for c in self.text_columns(roles, numeric_keys) if c in text.columns]
        return self.raw.with_columns([text.get_column(c) for c in wanted])

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
        """Assess the file with new roles (a task); the steps are applied again."""
        kwargs = self.check_roles(roles, numeric_keys)
        progress("Reading the file with the roles", 0, 2 + len(self.steps))
        frame = self._frame_for(roles, numeric_keys)
        md = Microdata(frame, **kwargs)
        if drop or self.household_id != "new" or self.order != "shuffled":
            _jobs.build_release_plan(self._output_plan(drop), md)
        progress("Assessing the disclosure risk", 1, 2 + len(self.steps))
        session = UISession(md)
        kept: list[dict[str, Any]] = []
        note = None
        for i, spec in enumerate(self.steps, start=1):
            progress(f"Applying step {i} again", 1 + i, 2 + len(self.steps))
            try:
                method = self._method(spec, i, frame.columns)
                session.apply_with_progress(method, lambda *a: None)
            except SdcError as exc:
                note = f"Step {i} could not be applied with the new roles and was removed: {exc}"
                break
            kept.append(spec)
        with self.lock:
            self.roles, self.drop, self.numeric_keys = roles, list(drop), list(numeric_keys)
            self.session, self.steps, self.redo_stack = session, kept, []
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
    def _method(self, spec: dict[str, Any], number: int, columns: Any) -> Any:
        where = f"step {number} ({spec['method']})"
        return _jobs.build_method(spec["method"], spec["params"], where, list(columns))

    def prepare_step(self, name: str, params: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The step's spec (with its seed) and its method, checked as a job's step is.

        Raises
        ------
        SdcError
            In the words of ``sdckit protect`` ("step 2 (pram): The 'min_diagonal' ...").
        """
        if self.session is None:
            raise ParameterError("Assign the roles first: the steps work on the key variables.")
        number = len(self.steps) + 1
        seeded = _jobs.step_params(name, params, self.seed + number - 1)
        spec = {"method": name, "params": seeded}
        return spec, self._method(spec, number, self.session.current.frame.columns)

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
        from sdckit.protection import get_method

        if self.session is None or self._csv_text is None:
            return []
        wanted: list[str] = []
        for pname, param in get_method(name).parameters.items():
            forms = param.schema()["forms"]
            if not any(f.get("role") == "numeric" and f["kind"] in ("column", "columns")
                       for f in forms):  # fmt: skip
                continue
            value = params.get(pname)
            wanted += [value] if isinstance(value, str) else [v for v in value or [] if
                                                               isinstance(v, str)]  # fmt: skip
        as_text = set(self.text_columns(self.roles, self.numeric_keys))
        numeric_in_file = {c.name for c in self.columns if c.numeric}
        needed = [c for c in dict.fromkeys(wanted) if c in as_text and c in numeric_in_file]
        changed = {c for step in self.session.history for c in step.changed}
        for c in needed:
            if c in changed:
                raise ParameterError(
                    f"The key {c!r} is read as text and an earlier step changed it; to work on "
                    f"it as a number, tick “read as a number” for {c!r} on the Roles page "
                    "(the steps are then applied again), or undo the earlier step."
                )
        return needed

    def apply_step_reading_numbers(
        self, spec: dict[str, Any], method: Any, needed: list[str], progress: Any
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

    def apply_step(self, spec: dict[str, Any], method: Any, progress: Any) -> None:
        """Apply a prepared step (a task)."""
        session = self.session
        if session is None:
            raise ParameterError("Assign the roles first.")
        with self.lock:
            if len(session.history) != len(self.steps):  # pragma: no cover - defensive
                raise ParameterError("The session changed; apply the step again.")
        session.apply_with_progress(method, progress)
        with self.lock:
            self.steps.append(spec)
            self.redo_stack = []
            self._changed()

    def _changed(self) -> None:
        self.suda, self.release = None, None
        self.touch()

    def undo(self) -> None:
        """Undo the last step (it can be redone)."""
        with self.lock:
            if self.session is None or not self.steps:
                raise ParameterError("There is no step to undo.")
            step = self.session.undo()
            self.redo_stack.append((self.steps.pop(), step))
            self._changed()

    def back_to(self, number: int) -> None:
        """Undo the steps after step ``number`` (0: back to the original file)."""
        with self.lock:
            while len(self.steps) > max(0, number):
                self.undo()

    def redo(self) -> None:
        """Put back the last undone step."""
        with self.lock:
            if self.session is None or not self.redo_stack:
                raise ParameterError("There is no undone step to redo.")
            spec, step = self.redo_stack.pop()
            self.session.redo(step)
            self.steps.append(spec)
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

    def _need_session(self) -> UISession:
        if self.session is None:
            raise ParameterError("Assign the roles first.")
        return self.session

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
        with self.lock:
            self.ru_candidates.append(item)
            self.ru_result = None

    def build_ru(self, progress: Any) -> None:
        """Compute the R-U map (a task; every run is a checkpoint)."""
        session = self._need_session()
        spec = self.ru_spec()
        if spec is None:
            raise ParameterError("Add at least one candidate to the R-U map.")
        ru_spec = _jobs.build_ru_map(spec, session.original.frame.columns, self.seed)
        result = _jobs.run_ru_map(ru_spec, session, progress)
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

    def compute_release(self, progress: Any) -> Any:
        """The released file and its independent check (a task)."""
        from sdckit.release import ReleaseTarget, release

        session = self._need_session()
        version = self.version
        target = self.risk_target()
        progress("Release check: reading the file as an attacker would", 0, 1)
        released = release(
            session.original,
            session.current,
            self.release_plan(),
            target=target if target is not None else ReleaseTarget.default(),
            seed=_jobs.release_seed(self.seed),
        )
        progress("Release check", 1, 1)
        # the page words the fix for a person; the exported job says it in job syntax
        refusal = released.refusal(style="words")
        met = bool(released.check.target_met and released.check.k_violations == 0)
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
        session = self._need_session()
        if self.source is None:
            raise DataError("Open a file first.")
        if not self.steps:
            raise ParameterError(
                "Apply at least one protection step: a job file needs a [[steps]] table."
            )
        del session
        names = self.export_names()
        steps = []
        for spec in self.steps:
            table: dict[str, Any] = {"method": spec["method"]}
            params = dict(spec["params"])
            if "method" in params:
                table["params"] = {"method": params.pop("method")}
            table.update(params)
            steps.append(table)
        output: dict[str, Any] = {
            "data": names["data"],
            "report_internal": names["report_internal"],
            "report_external": names["report_external"],
        }
        if not self.plots_in_report:
            output["plots"] = False
        output.update(self._output_plan())
        target = {k: v for k, v in self.target.items() if v is not None}
        return {
            "title": self.title,
            "seed": self.seed,
            "input": self.source.input_spec(self.numeric_keys),
            "roles": self.roles,
            "steps": steps,
            "target": target or None,
            "output": output,
            "ru_map": self.ru_spec(),
        }

    def job_text(self) -> str:
        """The TOML text of :meth:`job_document`."""
        document = self.job_document()
        header = (
            "# sdckit job file written by the browser interface (sdckit ui).\n"
            "# Run it again with: sdckit protect <this file>   (docs/job-files.md)\n"
        )
        text = dumps(document, header=header)
        if not same_document(document, text):  # pragma: no cover - the writer's own check
            raise DataError("The job file could not be written faithfully; please report it.")
        return text

    def export_all(self, progress: Any, *, verify: bool = True) -> ExportRecord:
        """Write the job, the reports and (if the release check passes) the protected file."""
        from sdckit.io import atomic_path
        from sdckit.report import write_report

        session = self._need_session()
        text = self.job_text()
        names = self.export_names()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        total = 5 if verify else 4
        progress("Writing the job file", 0, total)
        files: dict[str, Path] = {}
        job_path = self.out_dir / names["job"]
        with atomic_path(job_path) as tmp:
            tmp.write_text(text, encoding="utf-8")
        files["job"] = job_path
        released, refusal, met = self.compute_release(progress)
        target = self.risk_target()
        described = (target.describe(), bool(met)) if target is not None else None
        progress("Writing the internal report", 2, total)
        internal = self.out_dir / names["report_internal"]
        write_report(
            session, internal, kind="internal", ru_map=self.ru_result, title=self.title,
            target=described, plots=self.plots_in_report, release=released,
        )  # fmt: skip
        files["report_internal"] = internal
        record = ExportRecord(files=files, refusal=refusal, job_text=text)
        if refusal is None:
            progress("Writing the protected file and the external report", 3, total)
            data = self.out_dir / names["data"]
            released.write(data)
            files["data"] = data
            external = self.out_dir / names["report_external"]
            write_report(session, external, kind="external", title=self.title, release=released)
            files["report_external"] = external
        else:
            for key in ("data", "report_external"):  # never leave an older release behind
                with contextlib.suppress(FileNotFoundError):
                    (self.out_dir / names[key]).unlink()
        if verify:
            progress("Checking that the job file reproduces the session", 4, total)
            record.verified, record.verify_note = self._verify(job_path, released, progress)
        progress("Done", total, total)
        with self.lock:
            self.export = record
        return record

    def _verify(self, job_path: Path, released: Any, progress: Any) -> tuple[bool, str]:
        """Run the exported job (without writing) and compare its file with this one."""
        from sdckit.jobs import load_job, run_job

        def inner(stage: str, done: int, total: int) -> None:
            progress(f"Checking the job file: {stage.lower()}", 4, 5)

        try:
            job = load_job(job_path)
            result = run_job(job, progress=inner, write=False)
        except Cancelled:
            raise
        except SdcError as exc:
            return False, f"The job file does not run: {exc}"
        if result.release is None or not result.release.output.equals(released.output):
            return False, (
                "The job file gives a different file than this session; export again, or report it."
            )
        return True, "sdckit protect on the job file gives the same file."

    # ------------------------------------------------------------------ helpers for pages
    def methods(self) -> list[tuple[str, str, str]]:
        """The microdata methods (job name, class name, description)."""
        from sdckit.ui._forms import method_names

        return method_names(registry("microdata"))

    def columns_of_role(self, role: str) -> list[str]:
        """The columns a column picker of ``role`` offers."""
        if self.session is not None:
            md = self.session.current
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
