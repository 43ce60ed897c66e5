"""Job files for ``sdckit protect``: parsing and validating the whole job before any work.

The format is described in ``docs/job-files.md``.  :func:`load_job` reads a TOML job file,
checks every section, column, method and parameter, instantiates every method and tries the
steps on a small slice of the data, and raises :class:`~sdckit.errors.SdcError` (a one-line
message naming the problem) for anything wrong, so a bad job fails before the real work.
"""

from __future__ import annotations

import difflib
import itertools
import numbers
import re
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_int, check_real
from sdckit.errors import ColumnError, DataError, ParameterError, SdcError
from sdckit.microdata import Microdata
from sdckit.protection import ProtectionMethod

__all__ = [
    "CandidateSpec",
    "Job",
    "RUMapSpec",
    "RiskTarget",
    "StepSpec",
    "check_call_params",
    "load_job",
    "method_class",
    "method_registry",
]

_SECTIONS = {"seed", "title", "input", "roles", "steps", "target", "output", "ru_map"}
_ROLES = {"keys", "numeric", "weight", "strata", "household", "sensitive"}
_COLUMN_PARAMS = {"variables", "columns", "predictors", "strata", "synthesize", "risk_variables"}
_DRY_RUN_ROWS = 300


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def method_registry() -> dict[str, type[ProtectionMethod]]:
    """Every protection method by class name (imports each module of :mod:`sdckit.masking`)."""
    from sdckit.protection import registry

    return dict(registry())  # type: ignore[arg-type]


def method_class(name: object, where: str) -> type[ProtectionMethod]:
    """The method class for a class name (``LocalSuppression``) or snake_case alias."""
    if not isinstance(name, str) or not name:
        raise ParameterError(
            f"{where}: 'method' must be a method name such as 'local_suppression'."
        )
    registry = method_registry()
    aliases: dict[str, str] = {}
    for cls_name in registry:
        aliases[cls_name.lower()] = cls_name
        aliases[_snake(cls_name)] = cls_name
    key = name.strip().lower().replace("-", "_")
    if key in aliases:
        return registry[aliases[key]]
    known = sorted(_snake(c) for c in registry)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ParameterError(
        f"{where}: unknown method {name!r}.{hint} Known methods: {', '.join(known)}."
    )


# ------------------------------------------------------------------------- parameter types
def _type_ok(value: Any, hint: Any) -> bool:
    """Whether a TOML value fits a type hint (lenient where the hint is not simple)."""
    if hint is Any or hint is typing.Any:
        return True
    if hint is type(None) or hint is None:
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_type_ok(v, args[0]) for v in value)
        return len(args) == len(value) and all(
            _type_ok(v, a) for v, a in zip(value, args, strict=True)
        )
    if origin in (Sequence, list, typing.Sequence):
        if isinstance(value, str) or not isinstance(value, list | tuple):
            return False
        return not args or all(_type_ok(v, args[0]) for v in value)
    if origin in (Mapping, dict, typing.Mapping):
        if not isinstance(value, dict):
            return False
        return not args or all(_type_ok(v, args[1]) for v in value.values())
    if origin in (Callable, typing.Callable):
        return callable(value)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _type_name(hint: Any) -> str:
    text = str(hint).replace("typing.", "").replace("collections.abc.", "")
    text = text.replace("<class '", "").replace("'>", "")
    return text.replace("numpy.random._generator.Generator", "Generator")


def _toml_type(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def check_call_params(
    fn: Callable[..., Any],
    params: Mapping[str, Any],
    where: str,
    label: str,
    skip: Sequence[str] = ("self",),
) -> None:
    """Check parameter names and TOML value types against the signature of ``fn``."""
    import inspect

    names = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name not in skip and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    for name in params:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(
                f"{where}: unknown parameter {name!r} of {label}.{hint} "
                f"Valid parameters: {', '.join(names)}."
            )
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: leave the checks to the callee
        hints = {}
    for name, value in params.items():
        hint = hints.get(name)
        if hint is not None and not _type_ok(value, hint):
            raise ParameterError(
                f"{where}: parameter {name!r} of {label} must be of type "
                f"{_type_name(hint)}; the job gives {_toml_type(value)}."
            )


def _check_params(cls: type[ProtectionMethod], params: dict[str, Any], where: str) -> None:
    check_call_params(cls.__init__, params, where, cls.__name__)


def _check_param_columns(params: Mapping[str, Any], columns: Sequence[str], where: str) -> None:
    for name, value in params.items():
        if name in _COLUMN_PARAMS:
            listed = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            cols = [c for c in listed if isinstance(c, str)]
        elif name == "mapping" and isinstance(value, dict):
            cols = list(value)
        else:
            continue
        for col in cols:
            if col not in columns:
                close = difflib.get_close_matches(col, list(columns), n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ColumnError(
                    f"{where}: parameter {name!r} names the column {col!r}, which is not in "
                    f"the input file.{hint}"
                )


def _instantiate(
    cls: type[ProtectionMethod], params: dict[str, Any], where: str
) -> ProtectionMethod:
    _check_params(cls, params, where)
    try:
        return cls(**params)
    except TypeError as exc:
        message = str(exc)
        missing = re.search(r"missing \d+ required keyword-only argument[s]?: (.*)", message)
        if missing:
            raise ParameterError(
                f"{where}: {cls.__name__} needs the parameter(s) {missing.group(1)}."
            ) from None
        raise ParameterError(f"{where}: bad parameters for {cls.__name__} ({message}).") from None
    except SdcError as exc:
        raise type(exc)(f"{where}: {exc}") from None


# ------------------------------------------------------------------------------- job parts
@dataclass(frozen=True)
class StepSpec:
    """One protection step of a job."""

    number: int
    method: ProtectionMethod
    params: dict[str, Any]

    @property
    def where(self) -> str:
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
class RiskTarget:
    """The risk the protected file must meet (every given bound)."""

    k: int | None = None
    max_global_risk_pct: float | None = None
    max_expected_reidentifications: float | None = None
    max_individual_risk: float | None = None

    def describe(self) -> str:
        """The target in words."""
        parts = []
        if self.k is not None:
            parts.append(f"{self.k}-anonymity")
        if self.max_global_risk_pct is not None:
            parts.append(f"global risk <= {self.max_global_risk_pct:g} %")
        if self.max_expected_reidentifications is not None:
            parts.append(f"expected re-identifications <= {self.max_expected_reidentifications:g}")
        if self.max_individual_risk is not None:
            parts.append(f"individual risk <= {self.max_individual_risk:g}")
        return ", ".join(parts)

    def check(self, md: Microdata) -> tuple[bool, list[str]]:
        """Whether ``md`` meets the target, and one line per bound with the reached value."""
        from sdckit.risk import frequencies, individual_risk

        lines: list[str] = []
        ok = True
        if self.k is not None:
            reached = int(np.floor(frequencies(md).fk.min()))
            met = reached >= self.k
            ok &= met
            lines.append(f"k-anonymity: smallest class {reached} (target {self.k})")
        if (
            self.max_global_risk_pct is not None
            or self.max_expected_reidentifications is not None
            or self.max_individual_risk is not None
        ):
            res = individual_risk(md)
            for bound, value, label in (
                (self.max_global_risk_pct, res.global_risk_pct, "global risk (%)"),
                (
                    self.max_expected_reidentifications,
                    res.expected_reidentifications,
                    "expected re-identifications",
                ),
                (self.max_individual_risk, float(np.max(res.risk)), "highest individual risk"),
            ):
                if bound is not None:
                    ok &= bool(value <= bound)
                    lines.append(f"{label}: {value:.6g} (target <= {bound:g})")
        return ok, lines


@dataclass(frozen=True)
class Job:
    """A validated job: the data, its roles, the steps, the target and the outputs."""

    path: Path
    title: str
    data: pl.DataFrame
    input_name: str
    roles: dict[str, Any]
    steps: tuple[StepSpec, ...]
    target: RiskTarget | None
    output_data: Path | None
    report_internal: Path | None
    report_external: Path | None
    ru_map: RUMapSpec | None
    seed: int | None = None
    plots: bool = True
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------- parsing
def _table(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParameterError(f"The job file's {name!r} must be a table ([{name}]).")
    return value


def _unknown_keys(table: Mapping[str, Any], allowed: set[str], name: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParameterError(
                f"Unknown key {key!r} in [{name}] of the job file.{hint} "
                f"Allowed: {', '.join(sorted(allowed))}."
            )


def _path(base: Path, value: Any, name: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"The job file's {name} must be a file path (a string).")
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p


def _read_input(base: Path, spec: dict[str, Any]) -> tuple[pl.DataFrame, str]:
    from sdckit.io import read_data

    _unknown_keys(spec, {"file", "format", "dataset", "rows"}, "input")
    if ("file" in spec) == ("dataset" in spec):
        raise ParameterError("[input] of the job file needs either 'file' or 'dataset'.")
    if "dataset" in spec:
        if spec["dataset"] != "demo":
            raise ParameterError("[input] 'dataset' can only be \"demo\" (the bundled demo data).")
        from sdckit.datasets import load_demo

        frame, name = load_demo(), "the sdckit demo data"
    else:
        path = _path(base, spec["file"], "input file")
        fmt = spec.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise ParameterError("[input] 'format' must be a string such as \"csv\".")
        frame, name = read_data(path, format=fmt), path.name
    if "rows" in spec:
        rows = check_int(spec["rows"], "input.rows", minimum=2)
        frame = frame.head(rows)
    return frame, name


def _roles(spec: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    _unknown_keys(spec, _ROLES, "roles")
    roles: dict[str, Any] = {}
    for role, value in spec.items():
        many = role in ("keys", "numeric", "sensitive")
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


def _merge_params(spec: Mapping[str, Any], reserved: Sequence[str], where: str) -> dict[str, Any]:
    """The parameters of a step: its other keys plus its ``params`` table (which may hold a
    parameter called ``method``, such as the microaggregation method)."""
    params = {k: v for k, v in spec.items() if k not in reserved and k != "params"}
    extra = spec.get("params", {})
    if not isinstance(extra, dict):
        raise ParameterError(f"{where}: 'params' must be a table of parameters.")
    for key, value in extra.items():
        if key in params:
            raise ParameterError(f"{where}: the parameter {key!r} is given twice.")
        params[key] = value
    return params


def _with_seed(
    cls: type[ProtectionMethod], params: dict[str, Any], seed: int | None, override: bool
) -> dict[str, Any]:
    if seed is None or "seed" not in cls._param_names():
        return params
    if override or "seed" not in params:
        return {**params, "seed": seed}
    return params


def _steps(
    specs: Any, columns: Sequence[str], seed: int | None, override: bool
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
        params = _merge_params(spec, ("method",), where)
        _check_param_columns(params, columns, where)
        step_seed = None if seed is None else seed + number - 1
        params = _with_seed(cls, params, step_seed, override)
        steps.append(StepSpec(number, _instantiate(cls, params, where), params))
    return tuple(steps)


def _label(value: Any) -> str:
    if isinstance(value, dict | list):
        return "..."
    return f"{value:g}" if isinstance(value, float) else str(value)


def _ru_map(
    spec: dict[str, Any], columns: Sequence[str], seed: int | None, override: bool
) -> RUMapSpec:
    from sdckit.utility.rumap import LOSS_MEASURES, RISK_MEASURES

    _unknown_keys(spec, {"risk", "loss", "seeds", "max_risk", "candidates"}, "ru_map")
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
        label = item.get("label", _snake(cls.__name__))
        if not isinstance(label, str):
            raise ParameterError(f"{where}: 'label' must be a string.")
        grid = item.get("grid", {})
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ParameterError(
                f"{where}: 'grid' must be a table of non-empty lists, e.g. grid = {{ k = [2, 3] }}."
            )
        fixed = _merge_params(item, ("method", "label", "grid"), where)
        _check_param_columns({**fixed, **{k: v[0] for k, v in grid.items()}}, columns, where)
        for combo in itertools.product(*grid.values()):
            params = dict(fixed, **dict(zip(grid, combo, strict=True)))
            _check_param_columns(params, columns, where)
            if "seed" in cls._param_names():
                params.pop("seed", None)  # the map's seeds are used for random methods
            name = " ".join(
                [label, *(f"{k}={_label(v)}" for k, v in zip(grid, combo, strict=True))]
            )
            candidates.append(CandidateSpec(name, _instantiate(cls, params, where)))
    labels = [c.label for c in candidates]
    if len(set(labels)) != len(labels):
        raise ParameterError("[ru_map] two candidates have the same label; give each a 'label'.")
    return RUMapSpec(tuple(candidates), risk, loss, seeds, max_risk)


def _target(spec: dict[str, Any]) -> RiskTarget:
    allowed = {"k", "max_global_risk_pct", "max_expected_reidentifications", "max_individual_risk"}
    _unknown_keys(spec, allowed, "target")
    if not spec:
        raise ParameterError("[target] is empty; give k or a maximum risk, or remove it.")
    k = spec.get("k")
    return RiskTarget(
        k=None if k is None else check_int(k, "target.k", minimum=2),
        **{
            name: check_real(spec[name], f"target.{name}", minimum=0.0)
            for name in allowed - {"k"}
            if name in spec
        },
    )


def _outputs(
    base: Path, spec: dict[str, Any], input_path: Path | None
) -> tuple[Path | None, Path | None, Path | None, str | None]:
    from sdckit.io import detect_format

    _unknown_keys(spec, {"data", "report_internal", "report_external", "title", "plots"}, "output")
    data = _path(base, spec["data"], "output data") if "data" in spec else None
    internal = (
        _path(base, spec["report_internal"], "internal report")
        if "report_internal" in spec
        else None
    )
    external = (
        _path(base, spec["report_external"], "external report")
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


def _dry_run(md: Microdata, steps: Sequence[StepSpec], ru: RUMapSpec | None) -> None:
    """Apply the steps (and candidates) to a small slice to catch bad parameter values early."""
    n = min(md.n_records, _DRY_RUN_ROWS)
    if n < 2:
        return
    current = md.with_frame(md.frame.head(n))
    start = current
    jobs = [(s.where, s.method, True) for s in steps]
    if ru is not None:
        jobs += [(f"R-U map candidate {c.label!r}", c.method, False) for c in ru.candidates]
    for where, method, chained in jobs:
        try:
            result = method.apply(current if chained else start)
        except (ColumnError, ParameterError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
        except TypeError as exc:
            raise ParameterError(
                f"{where}: a parameter has the wrong type ({' '.join(str(exc).split())})."
            ) from None
        except Exception:  # a small slice may be infeasible; the real run decides
            continue
        if chained and result.microdata.n_records >= 2:
            current = result.microdata


def load_job(
    path: str | Path, *, seed: int | None = None, output_dir: str | Path | None = None
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

    Returns
    -------
    Job
    """
    job_path = Path(path)
    if not job_path.is_file():
        raise DataError(f"The job file {str(job_path)!r} does not exist; check the path.")
    try:
        spec = tomllib.loads(job_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"The job file {job_path.name!r} is not valid TOML: {exc}.") from None
    except UnicodeDecodeError:
        raise ParameterError(f"The job file {job_path.name!r} is not UTF-8 text.") from None
    _unknown_keys(spec, _SECTIONS, "top level")
    override = seed is not None
    if seed is not None:
        seed = check_int(seed, "--seed", minimum=0)
    elif "seed" in spec:
        seed = check_int(spec["seed"], "seed", minimum=0)
    base = job_path.parent
    input_spec = _table(spec.get("input"), "input")
    output_spec = _table(spec.get("output"), "output")
    input_path = _path(base, input_spec["file"], "input file") if "file" in input_spec else None
    output_data, internal, external, out_title = _outputs(base, output_spec, input_path)
    if output_dir is not None:
        moved = Path(output_dir)
        output_data, internal, external = (
            None if p is None else moved / p.name for p in (output_data, internal, external)
        )
    same = output_data is not None and input_path is not None
    if same and output_data.resolve() == input_path.resolve():  # type: ignore[union-attr]
        raise ParameterError("The output data file must differ from the input file.")
    for p in (output_data, internal, external):
        if p is not None and p.exists() and p.is_dir():
            raise ParameterError(f"The output {str(p)!r} is a directory; give a file name.")
    frame, input_name = _read_input(base, input_spec)
    roles = _roles(_table(spec.get("roles"), "roles"), frame.columns)
    md = Microdata(frame, **roles)
    steps = _steps(spec.get("steps"), frame.columns, seed, override)
    target = _target(_table(spec["target"], "target")) if "target" in spec else None
    if target is not None and target.k is not None and not md.keys:
        raise ParameterError("[target] 'k' needs key variables in [roles].")
    ru = (
        _ru_map(_table(spec["ru_map"], "ru_map"), frame.columns, seed, override)
        if "ru_map" in spec
        else None
    )
    title = spec.get("title", out_title) or "Statistical disclosure control report"
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    _dry_run(md, steps, ru)
    return Job(
        path=job_path,
        title=title,
        data=frame,
        input_name=input_name,
        roles=roles,
        steps=steps,
        target=target,
        output_data=output_data,
        report_internal=internal,
        report_external=external,
        ru_map=ru,
        seed=seed,
        plots=output_spec.get("plots", True),
    )
