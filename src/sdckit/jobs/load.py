"""Loading a protection job (``sdckit protect JOB.toml``): parse and validate before any work.

The format is described in ``docs/job-files.md``.  :func:`load_job` reads a TOML job file and
checks every section, column, method and parameter against the methods' declared constraints
(:mod:`sdckit.protection`), and raises :class:`~sdckit.errors.SdcError` (a one-line message
naming the problem) for anything wrong, so a bad job fails before the real work.  The input file
is read and validated once; the steps then work on that validated file.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from sdckit._validation import check_int, check_real
from sdckit.errors import ParameterError
from sdckit.io import FileMetadata
from sdckit.jobs._methods import (
    instantiate,
    merge_params,
    method_class,
    resolve_files,
    with_seed,
)
from sdckit.jobs._outputs import check_data_columns, check_outputs, input_labels, timestamp_of
from sdckit.jobs._toml import path_of, read_toml, table_of, unknown_keys
from sdckit.jobs.auto import auto_params, check_search_only_keys, is_auto
from sdckit.jobs.target import parse_target
from sdckit.microdata import Microdata
from sdckit.protection import ProtectionMethod, snake_name
from sdckit.release import ReleasePlan, ReleaseTarget

__all__ = ["CandidateSpec", "Job", "RUMapSpec", "StepSpec", "load_job", "read_microdata"]

_SECTIONS = {"seed", "title", "input", "roles", "steps", "target", "output", "ru_map"}
_ROLES = {
    "keys",
    "numeric",
    "weight",
    "strata",
    "household",
    "sensitive",
    "linked",
    "household_level",
    "identifiers",
    "detect_household_level",
}
_OUTPUT_KEYS = {
    "data",
    "report_internal",
    "report_external",
    "title",
    "plots",
    "keep",
    "drop",
    "household_id",
    "household_size",
    "order",
    "timestamp",
}


@dataclass(frozen=True)
class StepSpec:
    """One protection step of a job."""

    number: int
    method: ProtectionMethod
    params: dict[str, Any]

    @property
    def where(self) -> str:
        """How messages name the step (``"step 3 (Pram)"``)."""
        return f"step {self.number} ({type(self.method).__name__})"


@dataclass(frozen=True)
class CandidateSpec:
    """One candidate release of the R-U map."""

    label: str
    method: ProtectionMethod


@dataclass(frozen=True)
class RUMapSpec:
    """The R-U map of a job: candidates, measures, seeds and the tolerable risk."""

    candidates: tuple[CandidateSpec, ...]
    risk: str = "global_risk"
    loss: str = "share_changed"
    seeds: tuple[int, ...] = (0, 1, 2)
    max_risk: float | None = None


@dataclass(frozen=True)
class Job:
    """A validated job: the data with its roles, the steps, the target and the outputs."""

    path: Path
    title: str
    microdata: Microdata
    input_name: str
    steps: tuple[StepSpec, ...]
    target: ReleaseTarget | None
    output_data: Path | None
    report_internal: Path | None
    report_external: Path | None
    ru_map: RUMapSpec | None
    seed: int | None = None
    plots: bool = True
    release_plan: ReleasePlan = field(default_factory=ReleasePlan)
    notes: list[str] = field(default_factory=list)
    #: The job's ``[input]`` (its file as an absolute path), ``[roles]`` and ``[ru_map]``
    #: tables as read: what :meth:`sdckit.jobs.Runner.to_toml` writes back.
    tables: dict[str, Any] = field(default_factory=dict)
    labels: FileMetadata | None = None
    timestamp: bool = False

    @property
    def data(self) -> pl.DataFrame:
        """The input data (polars)."""
        return self.microdata.frame

    @property
    def roles(self) -> dict[str, Any]:
        """The column roles given in ``[roles]``."""
        return {k: v for k, v in self.microdata.roles().items() if v}


# ------------------------------------------------------------------------------- parsing
def _read_input(
    base: Path, spec: dict[str, Any], roles: Any = None, reader: Any = None
) -> tuple[pl.DataFrame, str]:
    """The input data and its name.  ``roles`` is the job's ``[roles]`` table (not validated
    yet): the key, linked, household-level and identifier columns of a CSV file are read as
    text exactly as written (codes such as ``007``), except the columns with a numeric or
    weight role and those listed in ``[input] numeric_keys``.  ``reader`` replaces
    :func:`sdckit.io.read_data` (same keywords): an interface that has read the file already.
    """
    from sdckit.io import read_data

    read = read_data if reader is None else reader

    allowed = {"file", "format", "dataset", "rows", "na_values", "numeric_keys", "engine"}
    unknown_keys(spec, allowed, "input")
    if ("file" in spec) == ("dataset" in spec):
        raise ParameterError("[input] of the job file needs either 'file' or 'dataset'.")
    if "dataset" in spec:
        if spec["dataset"] not in ("demo", "survey"):
            raise ParameterError(
                '[input] \'dataset\' can only be "demo" (the bundled census) or "survey" (the '
                "bundled household survey)."
            )
        for key in ("na_values", "numeric_keys"):
            if key in spec:
                raise ParameterError(f"[input] {key!r} applies to an input 'file', not a dataset.")
        from sdckit.datasets import load_demo, load_survey

        if spec["dataset"] == "survey":
            frame, name = load_survey(), "the sdckit household survey"
        else:
            frame, name = load_demo(), "the sdckit demo data"
    else:
        path = path_of(base, spec["file"], "input file")
        fmt = spec.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise ParameterError("[input] 'format' must be a string such as \"csv\".")
        na_values = spec.get("na_values")
        numeric_keys = spec.get("numeric_keys", [])
        for key, value in (("na_values", na_values), ("numeric_keys", numeric_keys)):
            if value is not None and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                example = '["NA", "-9"]' if key == "na_values" else '["age"]'
                raise ParameterError(f"[input] {key!r} must be a list of strings, e.g. {example}.")
        coded, _ = _coded_and_numeric(roles)
        for col in numeric_keys:
            if col not in coded:
                raise ParameterError(
                    f"[input] 'numeric_keys' names {col!r}, which is not a key (or linked, "
                    "household-level) variable in [roles]."
                )
        text = text_columns(roles, numeric_keys)
        frame = read(path, format=fmt, na_values=na_values, text_columns=text)
        name = path.name
    if "rows" in spec:
        rows = check_int(spec["rows"], "input.rows", minimum=2)
        frame = frame.head(rows)
    return frame, name


def _coded_and_numeric(roles: Any) -> tuple[list[str], set[str]]:
    """The columns of a ``[roles]`` table (not validated yet) whose values are codes (keys,
    linked, household-level, identifiers) and those with a numeric role (numeric, weight)."""
    table = roles if isinstance(roles, dict) else {}
    coded: list[str] = []
    numeric: set[str] = set()
    for role in ("keys", "linked", "household_level", "identifiers", "numeric", "weight"):
        value = table.get(role)
        names = [value] if isinstance(value, str) else value
        found = [n for n in names if isinstance(n, str)] if isinstance(names, list | dict) else []
        if role in ("numeric", "weight"):
            numeric.update(found)
        else:
            coded.extend(found)
    return coded, numeric


def text_columns(roles: Any, numeric_keys: Sequence[str] = ()) -> list[str]:
    """The columns a job with this ``[roles]`` table reads from a CSV file as text, exactly as
    written (codes such as ``007``): the key, linked, household-level and identifier columns,
    unless they have a numeric role or are listed in ``[input] numeric_keys``."""
    coded, numeric = _coded_and_numeric(roles)
    numeric |= set(numeric_keys)
    return [c for c in dict.fromkeys(coded) if c not in numeric]


def _detect_household_level(spec: dict[str, Any]) -> bool:
    """``[roles] detect_household_level`` (default true), checked."""
    value = spec.get("detect_household_level", True)
    if not isinstance(value, bool):
        raise ParameterError(
            "[roles] 'detect_household_level' must be true (add the household-wide variables "
            "found in the data to 'household_level', the default) or false."
        )
    return value


def _with_detected_household_level(md: Microdata, detect: bool) -> tuple[Microdata, list[str]]:
    """The job's data with the household-wide variables found in it added to its
    household-level ones (with a household id, unless ``detect`` is false), and the note
    naming them (none when nothing was added)."""
    if not detect or md.household is None:
        return md, []
    declared = md.household_level
    added = [c for c in md.detect_household_level() if c not in declared]
    if not added:
        return md, []
    md = md.with_frame(md.frame, household_level=[*declared, *added])
    names = ", ".join(map(repr, added))
    note = (
        f"Household-wide variables found in the data (the same for every member of every "
        f"household), treated per household like the declared household-level ones: {names}. "
        "Set [roles] detect_household_level = false to treat them per person."
    )
    return md, [note]


def read_microdata(
    input_spec: dict[str, Any],
    roles_spec: dict[str, Any],
    base: Path = Path("."),
    *,
    reader: Any = None,
) -> tuple[Microdata, str, list[str]]:
    """The input of a job with these ``[input]`` and ``[roles]`` tables, read and given its
    roles exactly as :func:`load_job` does (CSV codes as text, household-wide variables
    detected), with its name and the notes on what was detected.

    ``reader``, when given, is called instead of :func:`sdckit.io.read_data` with the same
    arguments (``path, format=, na_values=, text_columns=``): an interface that holds the file
    already answers from memory, under the same rule of which columns are text.
    """
    frame, input_name = _read_input(base, dict(input_spec), roles_spec, reader)
    roles_spec = table_of(roles_spec, "roles")
    md = Microdata(frame, **_roles(roles_spec))
    md, notes = _with_detected_household_level(md, _detect_household_level(roles_spec))
    return md, input_name, notes


def _roles(spec: dict[str, Any]) -> dict[str, Any]:
    """The ``[roles]`` table checked: the keyword arguments of :class:`Microdata`
    (``detect_household_level`` is checked, and left out)."""
    unknown_keys(spec, _ROLES, "roles")
    _detect_household_level(spec)
    roles: dict[str, Any] = {}
    for role, value in spec.items():
        if role == "detect_household_level":
            continue
        if role == "linked":
            if not isinstance(value, dict) or not all(
                isinstance(c, str) and isinstance(k, str) for c, k in value.items()
            ):
                raise ParameterError(
                    "[roles] 'linked' must be a table { column = \"key variable\" }, e.g. "
                    'linked = { district = "region" }.'
                )
            roles[role] = dict(value)
            continue
        many = role in ("keys", "numeric", "sensitive", "household_level", "identifiers")
        if many and isinstance(value, str):
            value = [value]
        ok = (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
            if many
            else isinstance(value, str)
        )
        if not ok:
            kind = "a list of column names" if many else "a column name"
            raise ParameterError(f"[roles] {role!r} must be {kind}.")
        roles[role] = value
    if not roles.get("keys") and not roles.get("numeric"):
        raise ParameterError("[roles] needs key variables ('keys') or numeric variables.")
    return roles


def _steps(
    specs: Any,
    columns: Sequence[str],
    seed: int | None,
    override: bool,
    base: Path | None = None,
    target: dict[str, Any] | None = None,
) -> tuple[StepSpec, ...]:
    if not isinstance(specs, list) or not specs:
        raise ParameterError("The job file needs at least one [[steps]] table.")
    steps = []
    for number, spec in enumerate(specs, start=1):
        where = f"step {number}"
        if not isinstance(spec, dict) or "method" not in spec:
            raise ParameterError(f"{where}: a [[steps]] table needs a 'method'.")
        cls = method_class(spec["method"], where)
        where = f"step {number} ({spec['method']})"
        params = merge_params(spec, ("method",), where)
        if is_auto(cls):  # the lattice search: its models from [target], hierarchy files
            params = auto_params(params, target, base, where)
        else:  # relative file paths are relative to the job file (else the working directory)
            params = resolve_files(cls, params, base or Path.cwd(), where)
        step_seed = None if seed is None else seed + number - 1
        params = with_seed(cls, params, step_seed, override)
        steps.append(StepSpec(number, instantiate(cls, params, where, columns), params))
    return tuple(steps)


def numeric_columns(cls: type[ProtectionMethod], params: dict[str, Any]) -> list[str]:
    """The columns a method with these parameters works on as numbers (its parameters of the
    numeric role, such as interval recoding's ``columns``), in order."""
    names: list[str] = []
    for name, param in cls.parameters.items():
        forms = param.schema()["forms"]
        if not any(f.get("role") == "numeric" and f["kind"] in ("column", "columns")
                   for f in forms):  # fmt: skip
            continue
        value = params.get(name)
        names += [value] if isinstance(value, str) else [v for v in value or [] if
                                                          isinstance(v, str)]  # fmt: skip
    return list(dict.fromkeys(names))


def _check_numbers_read_as_text(
    methods: Sequence[tuple[str, ProtectionMethod]], frame: pl.DataFrame, input_spec: dict[str, Any]
) -> None:
    """A step or an R-U map candidate (``(where, method)``) that works on a column as numbers
    (a parameter of the numeric role, such as interval recoding's ``columns``) naming a key the
    CSV file holds as numbers but the job reads as text (the rule of ``[input]``): say the fix
    now, not "not numeric" after the steps before it have run."""
    from sdckit.io import detect_format

    if (
        "file" not in input_spec
        or detect_format(str(input_spec["file"]), input_spec.get("format")) != "csv"
    ):
        return  # only a CSV file's keys are read as text
    for where, method in methods:
        for col in numeric_columns(type(method), method.get_params()):
            if col in frame.columns:
                s = frame.get_column(col)
                if s.dtype == pl.String and (
                    s.str.strip_chars().cast(pl.Float64, strict=False).null_count()
                    == s.null_count()
                ):
                    raise ParameterError(
                        f"{where}: the key {col!r} is read from "
                        "the file as text (key columns are, to keep codes such as 007); to work "
                        f'on it as numbers, add [input] numeric_keys = ["{col}"] to the job file.'
                    )


def _label(value: Any) -> str:
    if isinstance(value, dict | list):
        return "..."
    return f"{value:g}" if isinstance(value, float) else str(value)


def _ru_map(
    spec: dict[str, Any],
    columns: Sequence[str],
    seed: int | None,
    override: bool,
    target: dict[str, Any] | None = None,
    base: Path | None = None,
) -> RUMapSpec:
    from sdckit.utility.rumap import LOSS_MEASURES, RISK_MEASURES

    unknown_keys(spec, {"risk", "loss", "seeds", "max_risk", "candidates"}, "ru_map")
    risk = spec.get("risk", "global_risk")
    loss = spec.get("loss", "share_changed")
    if risk not in RISK_MEASURES:
        raise ParameterError(
            f"[ru_map] unknown risk measure {risk!r}; choose one of {', '.join(RISK_MEASURES)}."
        )
    if loss not in LOSS_MEASURES:
        raise ParameterError(
            f"[ru_map] unknown loss measure {loss!r}; choose one of {', '.join(LOSS_MEASURES)}."
        )
    seeds_value = spec.get("seeds", [0, 1, 2])
    if not isinstance(seeds_value, list) or not seeds_value:
        raise ParameterError("[ru_map] 'seeds' must be a non-empty list of integers.")
    seeds = tuple(check_int(s, "ru_map.seeds", minimum=0) for s in seeds_value)
    if seed is not None:
        seeds = tuple(seed + i for i in range(len(seeds)))
    max_risk = spec.get("max_risk")
    if max_risk is not None:
        max_risk = check_real(max_risk, "ru_map.max_risk", minimum=0.0)
    items = spec.get("candidates")
    if not isinstance(items, list) or not items:
        raise ParameterError("[ru_map] needs at least one [[ru_map.candidates]] table.")
    candidates: list[CandidateSpec] = []
    for i, item in enumerate(items, start=1):
        where = f"R-U map candidate {i}"
        if not isinstance(item, dict) or "method" not in item:
            raise ParameterError(f"{where}: a [[ru_map.candidates]] table needs a 'method'.")
        cls = method_class(item["method"], where)
        where = f"R-U map candidate {i} ({item['method']})"
        label = item.get("label", getattr(cls, "alias", None) or snake_name(cls.__name__))
        if not isinstance(label, str):
            raise ParameterError(f"{where}: 'label' must be a string.")
        grid = item.get("grid", {})
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ParameterError(
                f"{where}: 'grid' must be a table of non-empty lists, e.g. grid = {{ k = [2, 3] }}."
            )
        fixed = merge_params(item, ("method", "label", "grid"), where)
        for combo in itertools.product(*grid.values()):
            params = dict(fixed, **dict(zip(grid, combo, strict=True)))
            if "seed" in cls.parameters:
                params.pop("seed", None)  # the map's seeds are used for random methods
            if is_auto(cls):  # the lattice search: its models from [target], as a step's
                params = auto_params(params, target, base, where)
            else:  # file paths relative to the job file, as a step's
                params = resolve_files(cls, params, base or Path.cwd(), where)
            # readable: "local_suppression k = 3", "pram min_diagonal = 0.8, alpha = 0.5"
            values = ", ".join(f"{k} = {_label(v)}" for k, v in zip(grid, combo, strict=True))
            name = f"{label} {values}" if values else label
            candidates.append(CandidateSpec(name, instantiate(cls, params, where, columns)))
    labels = [c.label for c in candidates]
    if len(set(labels)) != len(labels):
        raise ParameterError("[ru_map] two candidates have the same label; give each a 'label'.")
    return RUMapSpec(tuple(candidates), risk, loss, seeds, max_risk)


def _outputs(
    base: Path, spec: dict[str, Any], input_path: Path | None
) -> tuple[Path | None, Path | None, Path | None, str | None]:
    from sdckit.io import detect_format

    unknown_keys(spec, _OUTPUT_KEYS, "output")
    data = path_of(base, spec["data"], "output data") if "data" in spec else None
    internal = (
        path_of(base, spec["report_internal"], "internal report")
        if "report_internal" in spec
        else None
    )
    external = (
        path_of(base, spec["report_external"], "external report")
        if "report_external" in spec
        else None
    )
    if data is None and internal is None and external is None:
        raise ParameterError("[output] needs 'data', 'report_internal' or 'report_external'.")
    if data is not None:
        if detect_format(data) == "sas":
            raise ParameterError("[output] 'data' cannot be a .sas7bdat file (read only).")
        if input_path is not None and data.resolve() == input_path.resolve():
            raise ParameterError("[output] 'data' must differ from the input file.")
    for p, name in ((internal, "report_internal"), (external, "report_external")):
        if p is not None and p.suffix.lower() not in (".html", ".htm"):
            raise ParameterError(f"[output] {name!r} must be an .html file.")
    title = spec.get("title")
    if title is not None and not isinstance(title, str):
        raise ParameterError("[output] 'title' must be a string.")
    if not isinstance(spec.get("plots", True), bool):
        raise ParameterError("[output] 'plots' must be true or false.")
    return data, internal, external, title


def _release_plan(spec: dict[str, Any], md: Microdata) -> ReleasePlan:
    for key in ("keep", "drop"):
        value = spec.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise ParameterError(f"[output] {key!r} must be a list of column names.")
    household_id = spec.get("household_id", "new")
    if household_id not in ("new", "drop"):
        raise ParameterError(
            '[output] \'household_id\' must be "new" (a new random id, the default) or "drop".'
        )
    order = spec.get("order", "shuffled")
    if order not in ("shuffled", "original"):
        raise ParameterError(
            "[output] 'order' must be \"shuffled\" (records in a random order, the default) or "
            '"original".'
        )
    size = spec.get("household_size")
    if size is not None and not isinstance(size, str):
        raise ParameterError(
            "[output] 'household_size' must be the name of the household size column."
        )
    plan = ReleasePlan(
        keep=spec.get("keep"), drop=spec.get("drop", ()), household_id=household_id,
        order=order, household_size=size,
    )  # fmt: skip
    plan.validate(md)
    return plan


def load_job(
    path: str | Path,
    *,
    seed: int | None = None,
    output_dir: str | Path | None = None,
    input_file: str | Path | None = None,
    writes: bool = True,
    output_folder: bool = False,
) -> Job:
    """Read and validate a job file; raise an :class:`SdcError` for anything wrong.

    Parameters
    ----------
    path : str or Path
        The TOML job file.  Relative paths in it are relative to its directory.
    seed : int, optional
        Overrides the seeds of the job (``--seed``): step ``i`` gets ``seed + i - 1`` and the
        R-U map uses ``seed, seed + 1, ...``.
    output_dir : str or Path, optional
        Write the outputs into this directory (keeping their file names) instead of where the
        job file says (``--out-dir``).
    input_file : str or Path, optional
        Read this file instead of the job's ``[input]`` file or dataset, with the job's other
        ``[input]`` options (``rows``, ``na_values``, ``numeric_keys``, ``format``): how
        ``sdckit check`` reads the original exactly as the job did.
    writes : bool, default True
        The job will write its outputs: check that each can be written and that the format of
        ``data`` holds every released column name (False: the job is only read, as by
        ``sdckit check``).
    output_folder : bool, default False
        The protected file is a folder of Parquet part files (a job run on an engine,
        :mod:`sdckit.jobs.engine_job`): an existing folder at that path is not an error.

    Returns
    -------
    Job
    """
    job_path, spec = read_toml(path)
    unknown_keys(spec, _SECTIONS, "top level")
    override = seed is not None
    if seed is not None:
        seed = check_int(seed, "--seed", minimum=0)
    elif "seed" in spec:
        seed = check_int(spec["seed"], "seed", minimum=0)
    base = job_path.parent
    input_spec = table_of(spec.get("input"), "input")
    if input_file is not None:
        input_spec = {k: v for k, v in input_spec.items() if k != "dataset"}
        input_spec["file"] = str(Path(input_file).resolve())
    output_spec = table_of(spec.get("output"), "output")
    input_path = path_of(base, input_spec["file"], "input file") if "file" in input_spec else None
    output_data, internal, external, out_title = _outputs(base, output_spec, input_path)
    if output_dir is not None:
        moved = Path(output_dir)
        output_data, internal, external = (
            None if p is None else moved / p.name for p in (output_data, internal, external)
        )
    if (
        output_data is not None
        and input_path is not None
        and output_data.resolve() == input_path.resolve()
    ):
        raise ParameterError("The output data file must differ from the input file.")
    for p in (internal, external) if output_folder else (output_data, internal, external):
        if p is not None and p.exists() and p.is_dir():
            raise ParameterError(f"The output {str(p)!r} is a directory; give a file name.")
    outputs = {"data": output_data, "report_internal": internal, "report_external": external}
    check_outputs(outputs, input_path=input_path, moved=output_dir is not None, writable=writes)
    timestamp = timestamp_of(output_spec)
    roles_spec = table_of(spec.get("roles"), "roles")
    md, input_name, notes = read_microdata(input_spec, roles_spec, base)
    frame = md.frame
    target_spec = table_of(spec["target"], "target") if "target" in spec else None
    steps = _steps(spec.get("steps"), frame.columns, seed, override, base, target_spec)
    target = parse_target(target_spec) if target_spec is not None else None
    if target is not None and target.k is not None and not md.keys:
        raise ParameterError("[target] 'k' needs key variables in [roles].")
    if target is not None and target.needs_household and md.household is None:
        raise ParameterError("[target] a household bound needs 'household' in [roles].")
    ru = (
        _ru_map(
            table_of(spec["ru_map"], "ru_map"), frame.columns, seed, override, target_spec, base
        )
        if "ru_map" in spec
        else None
    )
    candidates = [] if ru is None else ru.candidates
    searched = [s.method for s in steps] + [c.method for c in candidates]
    check_search_only_keys(target_spec, any(is_auto(type(m)) for m in searched))
    _check_numbers_read_as_text(
        [(s.where, s.method) for s in steps]
        + [(f"[ru_map] candidate {c.label!r}", c.method) for c in candidates],
        frame,
        input_spec,
    )
    title = spec.get("title", out_title) or "Statistical disclosure control report"
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    plan = _release_plan(output_spec, md)
    if writes:
        check_data_columns(output_data, plan.released_columns(md), moved=output_dir is not None)
    labels = None if input_path is None else input_labels(input_path, input_spec.get("format"))
    return Job(
        path=job_path,
        title=title,
        microdata=md,
        input_name=input_name,
        steps=steps,
        target=target,
        output_data=output_data,
        report_internal=internal,
        report_external=external,
        ru_map=ru,
        seed=seed,
        plots=output_spec.get("plots", True),
        release_plan=plan,
        notes=notes,
        tables=_tables_of(base, input_spec, roles_spec, spec.get("ru_map")),
        labels=labels,
        timestamp=timestamp,
    )


def _tables_of(
    base: Path, input_spec: dict[str, Any], roles_spec: dict[str, Any], ru: Any
) -> dict[str, Any]:
    """The tables a runner writes back (the input file made absolute)."""
    input_table = dict(input_spec)
    if "file" in input_table:
        input_table["file"] = str(path_of(base, input_table["file"], "input file").resolve())
    return {"input": input_table, "roles": dict(roles_spec), "ru_map": ru}
