"""The stepwise runner of a protection job: one implementation under every face.

A :class:`Runner` holds the state of a protection: the original file with its roles, the
steps applied (each with the job-file method name and parameters that reproduce it), the
undone steps, the target, the release plan, the R-U map and the outputs.  It is built from a
loaded job (:meth:`Runner.from_job`), from the ``[input]`` and ``[roles]`` tables of a job
(:meth:`Runner.from_input`, reading the file exactly as :func:`~sdckit.jobs.load_job` does),
or from objects (a :class:`~sdckit.microdata.Microdata` or a frame with roles).

:func:`~sdckit.jobs.run_job` is a loop over :meth:`Runner.apply_step` followed by
:meth:`Runner.write`; the browser interface keeps a runner and calls the same methods one
request at a time; :meth:`Runner.to_toml` writes the job file that reproduces the state, so an
exported job gives the same file with ``sdckit protect`` (a property test checks this).

Progress is one runtime argument: ``progress(stage, done, total)`` given to the call that does
the work, never a parameter of a method.

Examples
--------
>>> import polars as pl
>>> from sdckit.jobs import Runner
>>> df = pl.DataFrame({"sex": ["1", "2"] * 50, "region": ["1", "2", "3", "4", "5"] * 20})
>>> run = Runner(df, keys=["sex", "region"], seed=7)
>>> _ = run.apply_step("pram", {"variables": ["region"]})
>>> [s.params["seed"] for s in run.steps]
[7]
>>> _ = run.undo(); len(run.steps), len(run.redo_steps)
(0, 1)
>>> _ = run.redo(); len(run.steps)
1
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdckit.errors import ParameterError
from sdckit.jobs._methods import (
    instantiate,
    merge_params,
    method_class,
    resolve_files,
    with_seed,
)
from sdckit.jobs._toml import path_of
from sdckit.jobs.auto import auto_params, is_auto
from sdckit.jobs.load import Job, RUMapSpec, StepSpec, _ru_map, read_microdata
from sdckit.jobs.target import target_table
from sdckit.microdata import Microdata, as_microdata
from sdckit.protection import ProtectionMethod, snake_name
from sdckit.release import Release, ReleasePlan, ReleaseTarget
from sdckit.risk.assessment import DEFAULT_KS, RiskAssessment
from sdckit.session import Progress, Session, Step

__all__ = ["DEFAULT_TITLE", "Outputs", "Runner", "seed_of_release"]

#: The title of a job that gives none.
DEFAULT_TITLE = "Statistical disclosure control report"


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class Outputs:
    """Where a job writes: the protected file and the two reports (None: not written)."""

    data: Path | None = None
    report_internal: Path | None = None
    report_external: Path | None = None
    plots: bool = True
    #: Embed the time of writing in the outputs (``[output] timestamp``; default: the same
    #: seed gives the same bytes).
    timestamp: bool = False


def seed_of_release(seed: int | None) -> Any:
    """The seed of the new household ids and the record order of a job with this seed:
    its own stream of the job's seed (fresh randomness without one)."""
    import numpy as np

    return None if seed is None else np.random.default_rng((seed, 0x5DC))


class Runner:
    """The state of one protection, changed one step at a time (see the module docstring).

    Parameters
    ----------
    data : Microdata or DataFrame
        The original file (a frame takes its roles from ``**roles``).  It is never changed.
    seed : int, optional
        The job's seed: a step ``i`` of a method that takes a seed and is given none gets
        ``seed + i - 1`` (:func:`sdckit.jobs._methods.with_seed`), the R-U map uses
        ``seed, seed + 1, ...`` and the release its own stream of it.
    target : ReleaseTarget, optional
        The job's ``[target]`` (None: the default target of the release check).
    plan : ReleasePlan, optional
        The job's release plan (``[output]`` keep, drop, household id, order).
    ru_map : dict, optional
        The job's ``[ru_map]`` table.
    outputs : Outputs, optional
        Where :meth:`write` writes by default.
    title : str
    input : dict, optional
        The ``[input]`` table that reads ``data`` (needed by :meth:`to_toml` only).
    roles_table : dict, optional
        The ``[roles]`` table (default: the roles of ``data``).
    notes : list of str
        Notes on how the input was read (shown by the command line).
    labels : FileMetadata, optional
        The value and variable labels of an SPSS or Stata input, written back with a protected
        file whose format holds them.
    ks : tuple of int
        The k's whose violations each step counts.
    **roles
        Column roles when ``data`` is a frame.
    """

    def __init__(
        self,
        data: Any,
        *,
        seed: int | None = None,
        target: ReleaseTarget | None = None,
        plan: ReleasePlan | None = None,
        ru_map: Mapping[str, Any] | None = None,
        outputs: Outputs | None = None,
        title: str = DEFAULT_TITLE,
        input: Mapping[str, Any] | None = None,
        roles_table: Mapping[str, Any] | None = None,
        notes: list[str] | None = None,
        labels: Any = None,
        ks: tuple[int, ...] = DEFAULT_KS,
        **roles: Any,
    ) -> None:
        md = as_microdata(data, **roles)
        self.session = Session(md, ks=ks)
        self.seed = seed
        self.target = target
        self.plan = plan if plan is not None else ReleasePlan()
        self.plan.validate(md)
        self.outputs = outputs if outputs is not None else Outputs()
        self.title = title
        self.input = dict(input) if input is not None else None
        self.roles_table = (
            dict(roles_table)
            if roles_table is not None
            else {k: v for k, v in md.roles().items() if v}
        )
        self.notes = list(notes or [])
        self.labels = labels
        self.version = 0
        self._specs: list[StepSpec] = []
        self._names: list[str] = []
        self._redo: list[tuple[StepSpec, str, Step]] = []
        self._release: tuple[int, Release] | None = None
        self._ru: tuple[int, Any] | None = None
        self._job_steps: tuple[StepSpec, ...] = ()  # the steps of the job it was made from
        self.ru_table: dict[str, Any] | None = None
        self.set_ru_map(ru_map)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_job(cls, job: Job) -> Runner:
        """A runner holding a loaded job's file, target, plan, R-U map and outputs, before any
        step (:meth:`apply_job_steps` applies the job's steps)."""
        tables = job.tables or {}
        run = cls(
            job.microdata,
            seed=job.seed,
            target=job.target,
            plan=job.release_plan,
            outputs=Outputs(
                job.output_data,
                job.report_internal,
                job.report_external,
                job.plots,
                job.timestamp,
            ),
            title=job.title,
            input=tables.get("input"),
            roles_table=tables.get("roles"),
            notes=job.notes,
            labels=job.labels,
        )
        run.ru_table = tables.get("ru_map")
        run._ru_spec = job.ru_map
        run._job_steps = job.steps
        return run

    @classmethod
    def from_input(
        cls,
        input: Mapping[str, Any],
        roles: Mapping[str, Any],
        *,
        base: Path = Path("."),
        reader: Any = None,
        **options: Any,
    ) -> Runner:
        """A runner on the file an ``[input]`` table names, read and given the ``[roles]``
        exactly as a job reads it (the key columns of a CSV file as text unless numeric, the
        household-wide variables detected); ``reader`` as for
        :func:`~sdckit.jobs.load.read_microdata`; ``options`` as for :class:`Runner`."""
        from sdckit.jobs._outputs import input_labels

        md, _, notes = read_microdata(dict(input), dict(roles), base, reader=reader)
        path = input.get("file")
        labels = None if path is None else input_labels(base / path, input.get("format"))
        table = dict(input)
        if isinstance(table.get("file"), str):  # read from base: absolute, as a job keeps it
            table["file"] = str(path_of(base, table["file"], "input file").resolve())
        return cls(md, input=table, roles_table=roles, notes=notes, labels=labels, **options)

    def apply_job_steps(self, progress: Progress | None = None) -> None:
        """Apply the steps of the job the runner was made from (:meth:`from_job`)."""
        report = progress or _no_progress
        specs = self._job_steps
        report("Protection steps", 0, len(specs))
        for i, spec in enumerate(specs, start=1):

            def step_progress(stage: str, done: int, total: int, i: int = i) -> None:
                if ": " in stage:  # the method's own progress (per stratum, the search)
                    report(f"Step {i}: {stage.split(': ', 1)[1]}", done, total)

            self._apply(spec, _job_name(type(spec.method)), step_progress)
            report("Protection steps", i, len(specs))

    # ------------------------------------------------------------------ state
    @property
    def original(self) -> Microdata:
        """The original file with its roles."""
        return self.session.original

    @property
    def current(self) -> Microdata:
        """The file after the steps applied."""
        return self.session.current

    @property
    def risk(self) -> RiskAssessment:
        """The risk assessment of the current file."""
        return self.session.risk

    @property
    def steps(self) -> tuple[StepSpec, ...]:
        """The steps applied, with the parameters that reproduce them."""
        return tuple(self._specs)

    @property
    def step_names(self) -> tuple[str, ...]:
        """The job-file method name of each step (as it was given)."""
        return tuple(self._names)

    @property
    def redo_steps(self) -> tuple[StepSpec, ...]:
        """The undone steps, the next to redo last."""
        return tuple(s for s, _, _ in self._redo)

    @property
    def undone(self) -> tuple[tuple[StepSpec, str, Step], ...]:
        """The undone steps (the next to redo last): the step, its name, what it did."""
        return tuple(self._redo)

    def _changed(self) -> None:
        self.version += 1

    def set_seed(self, seed: int | None) -> None:
        """A new job seed: the steps still to come, the R-U map and the release (its record
        order and household ids) follow it; the steps applied keep the seeds they ran with."""
        if seed == self.seed:
            return
        self.seed = seed
        self.set_ru_map(self.ru_table)
        self._changed()

    def set_target(self, target: ReleaseTarget | None) -> None:
        """A new target (the release is checked again)."""
        self.target = target
        self._changed()

    def set_plan(self, plan: ReleasePlan) -> None:
        """A new release plan, checked against the file."""
        plan.validate(self.original)
        self.plan = plan
        self._changed()

    def set_ru_map(self, table: Mapping[str, Any] | None) -> None:
        """A new ``[ru_map]`` table, checked as a job's (None: no R-U map)."""
        self._ru_spec: RUMapSpec | None = None
        if table is not None:
            target = None if self.target is None else target_table(self.target)
            self._ru_spec = _ru_map(
                dict(table), self.original.frame.columns, self.seed, False, target
            )
        self.ru_table = None if table is None else dict(table)
        self._ru = None

    # ------------------------------------------------------------------ steps
    def prepare_step(
        self, method: str | ProtectionMethod, params: Mapping[str, Any] | None = None
    ) -> tuple[StepSpec, str]:
        """The next step built and checked as a job's step is, without applying it.

        Parameters
        ----------
        method : str or ProtectionMethod
            A job-file method name (with ``params``, a step's TOML table: a ``params``
            sub-table is merged) or a method object (its parameters are read from it).
        params : dict, optional

        Returns
        -------
        (StepSpec, str)
            The step (its method, and the parameters with the job's seed rule applied) and
            the job-file method name.

        Raises
        ------
        SdcError
            One line naming the step and the parameter (``step 2 (pram): ...``).
        """
        number = len(self._specs) + 1
        if isinstance(method, ProtectionMethod):
            if params:
                raise ParameterError("Give a method object or a method name with parameters.")
            cls: Any = type(method)
            name = _job_name(cls)
            defaults = _defaults(cls)
            given = {
                k: v for k, v in method.get_params().items()
                if not (k in defaults and _same(defaults[k], v))
            }  # fmt: skip
        elif isinstance(method, str):
            name = method
            cls = method_class(name, f"step {number}")
            # the parameters flat, or a step's TOML table (its ``params`` sub-table merged: a
            # parameter called ``method``, such as microaggregation's, may stand there)
            given = merge_params(dict(params or {}), (), f"step {number} ({name})")
            if is_auto(cls) and "models" not in given and self.target is not None:
                # the lattice search meets the k of the runner's target
                given = auto_params(given, target_table(self.target), None, f"step {number}")
        else:
            raise ParameterError(
                "A step is a method name such as 'pram' with its parameters, or a method "
                "object such as Pram(variables=['region'])."
            )
        seed = None if self.seed is None else self.seed + number - 1
        where = f"step {number} ({name})"
        # file paths made absolute (from the working directory), so the exported job finds them
        seeded = with_seed(cls, resolve_files(cls, dict(given), Path.cwd(), where), seed, False)
        built = instantiate(cls, dict(seeded), where, list(self.original.frame.columns))
        return StepSpec(number, built, seeded), name

    def apply_step(
        self,
        method: str | ProtectionMethod | StepSpec,
        params: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        progress: Progress | None = None,
    ) -> Step:
        """Apply the next step (see :meth:`prepare_step`) and forget the undone steps.

        ``progress(stage, done, total)`` is passed to :meth:`sdckit.session.Session.apply`;
        it may raise to stop the step (nothing changes then).  A prepared
        :class:`~sdckit.jobs.StepSpec` (with its ``name``) is applied as it is.
        """
        if isinstance(method, StepSpec):
            spec, label = method, name or _job_name(type(method.method))
            if spec.number != len(self._specs) + 1:
                raise ParameterError(
                    "The file changed since the step was prepared; apply it again."
                )
        else:
            spec, label = self.prepare_step(method, params)
        step = self._apply(spec, label, progress)
        self._redo.clear()
        return step

    def _apply(self, spec: StepSpec, name: str, progress: Progress | None) -> Step:
        step = self.session.apply(spec.method, progress=progress)
        self._specs.append(spec)
        self._names.append(name)
        self._changed()
        return step

    def undo(self) -> Step:
        """Undo the last step (:meth:`redo` puts it back)."""
        if not self._specs:
            raise ParameterError("There is no step to undo.")
        step = self.session.undo()
        self._redo.append((self._specs.pop(), self._names.pop(), step))
        self._changed()
        return step

    def redo(self) -> Step:
        """Put back the last undone step (not computed again)."""
        if not self._redo:
            raise ParameterError("There is no undone step to redo.")
        spec, name, step = self._redo.pop()
        self.session.redo(step)
        self._specs.append(spec)
        self._names.append(name)
        self._changed()
        return step

    # ------------------------------------------------------------------ release
    @property
    def release_target(self) -> ReleaseTarget:
        """The target the release is checked against (the default one without a target)."""
        return self.target if self.target is not None else ReleaseTarget.default()

    def release_seed(self) -> Any:
        """The seed of the new household ids and the record order (:func:`seed_of_release`)."""
        return seed_of_release(self.seed)

    def release(self, progress: Progress | None = None) -> Release:
        """The released file and its independent check (cached until the state changes)."""
        from sdckit.release import release

        if self._release is not None and self._release[0] == self.version:
            return self._release[1]
        report = progress or _no_progress
        report("Release check", 0, 1)
        released = release(
            self.original, self.current, self.plan, target=self.release_target,
            seed=self.release_seed(),
        )  # fmt: skip
        report("Release check", 1, 1)
        self._release = (self.version, released)
        return released

    def target_met(self) -> bool:
        """Whether the released file meets the target (and is k-anonymous where asked)."""
        check = self.release().check
        return bool(check.target_met and check.k_violations == 0)

    def target_lines(self) -> list[str]:
        """One line per bound of the target, with the released file's value."""
        lines = self.release().check.target_lines()
        if self.target is None:
            described = self.release_target.describe()
            lines.insert(0, f"The job gives no [target]: the default target ({described}).")
        return lines

    # ------------------------------------------------------------------ R-U map
    def ru_map(self, progress: Progress | None = None) -> Any:
        """The R-U map of the job's candidates applied to the current file (after the steps
        already applied), risk and loss measured against the original; None without an
        ``[ru_map]``.  Cached until the state changes."""
        from sdckit.jobs._rumap import run_ru_map

        spec = self._ru_spec
        if spec is None:
            return None
        if self._ru is not None and self._ru[0] == self.version:
            return self._ru[1]
        result = run_ru_map(spec, self.session, progress or _no_progress)
        self._ru = (self.version, result)
        return result

    def searches(self) -> list[dict[str, Any]]:
        """Per automatic protection step: the transformation chosen, why, what else was close
        and the lattice's frontier (the report's section, for the browser's page)."""
        from sdckit.report import search_sections

        return search_sections(self.session)

    # ------------------------------------------------------------------ writing
    def write(
        self,
        outputs: Outputs | None = None,
        *,
        progress: Progress | None = None,
    ) -> tuple[list[Path], str | None]:
        """Write the outputs: the internal report always, the protected file and the external
        report only when the release may go out.

        The outputs are checked first (distinct paths, not the input file, writable, column
        names the data format holds); when the release is refused, an older protected file and
        external report at those paths are removed, so that no earlier release is left behind
        as if it were this one.

        Raises
        ------
        ParameterError, DataError
            An output that cannot be written as asked (nothing is written then).

        Returns
        -------
        (list of Path, str or None)
            The files written, in order, and why the release was refused (None: released).
        """
        from sdckit.jobs._outputs import check_data_columns, check_outputs, write_options
        from sdckit.report import write_report

        out = outputs if outputs is not None else self.outputs
        report = progress or _no_progress
        # every output checked before any work, as load_job checks a job's (distinct, not the
        # input, writable, column names the format holds)
        source = (self.input or {}).get("file")
        check_outputs(
            {"data": out.data, "report_internal": out.report_internal,
             "report_external": out.report_external},
            input_path=None if source is None else Path(source),
        )  # fmt: skip
        check_data_columns(out.data, self.plan.released_columns(self.original))
        ru = self.ru_map(progress)
        released = self.release(progress)
        refusal = released.refusal()
        met = self.target_met()
        written: list[Path] = []
        paths = [p for p in (out.data, out.report_internal, out.report_external) if p]
        total, done = len(paths), 0
        report("Writing outputs", 0, total)
        session = self.session
        if out.report_internal is not None:
            out.report_internal.parent.mkdir(parents=True, exist_ok=True)
            write_report(
                session, out.report_internal, kind="internal", ru_map=ru, title=self.title,
                target=(self.release_target.describe(), met), plots=out.plots,
                release=released, timestamp=out.timestamp,
            )  # fmt: skip
            written.append(out.report_internal)
            done += 1
            report("Writing outputs", done, total)
        if refusal is not None:
            for path in (out.data, out.report_external):  # never leave an older release behind
                if path is not None:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            return written, refusal
        if out.data is not None:
            out.data.parent.mkdir(parents=True, exist_ok=True)
            released.write(out.data, **write_options(
                released.output, out.data, self.labels, out.timestamp, session.history
            ))  # fmt: skip
            written.append(out.data)
            done += 1
            report("Writing outputs", done, total)
        if out.report_external is not None:
            out.report_external.parent.mkdir(parents=True, exist_ok=True)
            write_report(
                session, out.report_external, kind="external", title=self.title,
                release=released, timestamp=out.timestamp,
            )  # fmt: skip
            written.append(out.report_external)
            done += 1
            report("Writing outputs", done, total)
        return written, refusal

    # ------------------------------------------------------------------ the job file
    def to_document(self, outputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The job file that reproduces the state, as a dict of TOML tables.

        Parameters
        ----------
        outputs : dict, optional
            The ``[output]`` file entries (``data``, ``report_internal``,
            ``report_external``) as they should be written (e.g. names relative to the job
            file); default: the runner's outputs as absolute paths.
        """
        if self.input is None:
            raise ParameterError(
                "The runner was built from objects without an [input] table: give input= "
                '(e.g. {"file": "data.csv"}) to write a job file.'
            )
        if not self._specs:
            raise ParameterError(
                "Apply at least one protection step: a job file needs a [[steps]] table."
            )
        steps = []
        for spec, name in zip(self._specs, self._names, strict=True):
            table: dict[str, Any] = {"method": name}
            params = dict(spec.params)
            if "method" in params:  # a parameter called method goes in the params sub-table
                table["params"] = {"method": params.pop("method")}
            table.update(params)
            steps.append(table)
        if outputs is None:
            outputs = {
                key: str(path.resolve())
                for key, path in (
                    ("data", self.outputs.data),
                    ("report_internal", self.outputs.report_internal),
                    ("report_external", self.outputs.report_external),
                )
                if path is not None
            }
        output: dict[str, Any] = {k: v for k, v in outputs.items() if v is not None}
        if not self.outputs.plots:
            output["plots"] = False
        if self.outputs.timestamp:
            output["timestamp"] = True
        output.update(_plan_table(self.plan))
        document: dict[str, Any] = {
            "title": self.title,
            "seed": self.seed,
            "input": dict(self.input),
            "roles": dict(self.roles_table),
            "steps": steps,
            "target": target_table(self.target) if self.target is not None else None,
            "output": output or None,
            "ru_map": self.ru_table,
        }
        return document

    def to_toml(self, outputs: Mapping[str, Any] | None = None, header: str = "") -> str:
        """The TOML text of :meth:`to_document` (read back exactly by :mod:`tomllib`)."""
        from sdckit.jobs.toml_writer import faithful_dumps

        return faithful_dumps(self.to_document(outputs), header, "job file")


def _job_name(cls: type) -> str:
    """The name a job file gives a method: its alias (``auto``) or its snake_case name."""
    return getattr(cls, "alias", None) or snake_name(cls.__name__)


def _plan_table(plan: ReleasePlan) -> dict[str, Any]:
    """The ``[output]`` entries of a release plan that differ from the default."""
    table: dict[str, Any] = {}
    if plan.keep is not None:
        table["keep"] = list(plan.keep)
    if plan.drop:
        table["drop"] = list(plan.drop)
    if plan.household_id != "new":
        table["household_id"] = plan.household_id
    if plan.order != "shuffled":
        table["order"] = plan.order
    if plan.household_size is not None:
        table["household_size"] = plan.household_size
    return table


def _defaults(cls: Any) -> dict[str, Any]:
    """The parameters of ``cls`` that have a default, with it (left out of a job file)."""
    import inspect

    return {
        n: p.default
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if n != "self" and p.default is not inspect.Parameter.empty
    }


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):  # arrays and the like: written out
        return False
