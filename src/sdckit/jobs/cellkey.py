"""Table jobs with a ``[cellkey]`` section: the cell key method for magnitudes, not suppression.

A table job whose file has a ``[cellkey]`` section perturbs its magnitude table
(:class:`~sdckit.tables.CellKeyMagnitudes`, ``docs/cellkey.md``) instead of suppressing cells:
``[input]`` (microdata), ``[table]`` (dimensions, hierarchies, ``value``, optional ``weight``
and ``missing``), optional ``[[rules]]`` (the cells they flag get the extra noise ``mu_c``),
``[cellkey]`` and ``[output]`` (``table``: the codes and the perturbed value; ``table_full``:
also the original value, the contributors, the cell key and the noise).  ``[cellkey]`` holds
the method's declared parameters, the record keys (``key_columns`` or ``record_key``,
``seed``, ``digits``, ``use_zero_keys``) and the ptables as sub-tables of the parameters of
:func:`~sdckit.tables.ptable_magnitudes` (``[cellkey.ptable]``, ``[cellkey.small_ptable]``,
``[cellkey.ptable_odd]``).
:func:`load_cellkey_job` reads such a job and :func:`run_cellkey_job` runs it; ``sdckit table``
runs it like any table job (:func:`is_cellkey_job_file` tells them apart).

Examples
--------
>>> import tempfile, pathlib, polars as pl
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> pl.DataFrame({"id": range(6), "g": ["a", "a", "a", "b", "b", "b"],
...               "v": [900.0, 5, 5, 30, 30, 40]}).write_csv(folder / "firms.csv")
>>> _ = (folder / "job.toml").write_text('''
... [input]
... file = "firms.csv"
... [table]
... dimensions = ["g"]
... value = "v"
... [cellkey]
... fp = 100
... key_columns = ["id"]
... [cellkey.ptable]
... D = 2
... V = 0.5
... [output]
... table = "published.csv"
... ''')
>>> out = run_cellkey_job(load_cellkey_job(folder / "job.toml"))
>>> pl.read_csv(folder / "published.csv").columns
['g', 'v']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdckit._validation import check_columns_exist, check_int
from sdckit.errors import ParameterError
from sdckit.jobs._methods import instantiate
from sdckit.jobs._toml import path_of, read_toml, table_of, unknown_keys

__all__ = [
    "CELLKEY_OPTIONS",
    "PTABLE_OPTIONS",
    "CellKeyJob",
    "CellKeyJobResult",
    "is_cellkey_job_file",
    "load_cellkey_job",
    "run_cellkey_job",
]

#: ``[cellkey]`` keys besides the method's parameters (where the record keys come from):
#: name -> (admissible values, meaning).
CELLKEY_OPTIONS: dict[str, tuple[str, str]] = {
    "key_columns": (
        "a list of column names",
        "columns hashed into the record keys (an identifier makes them unique)",
    ),
    "record_key": ("a column name", "a column of record keys in [0, 1) (instead of key_columns)"),
    "seed": ("an integer >= 0 (default 0)", "secret seed of the record keys"),
    "digits": ("an integer from 1 to 12 (default 8)", "decimals of the record keys"),
    "use_zero_keys": ("true or false (default false)", "records of value 0 count in the cell key"),
}
#: The keys of ``[cellkey.ptable]``, ``[cellkey.small_ptable]`` and ``[cellkey.ptable_odd]``.
PTABLE_OPTIONS = ("D", "V", "step", "icat", "optim", "mono")

_SECTIONS = {"title", "input", "table", "rules", "cellkey", "output"}
_TABLE_KEYS = {"dimensions", "hierarchies", "value", "weight", "missing"}


@dataclass(frozen=True)
class CellKeyJob:
    """A validated table job with a ``[cellkey]`` section."""

    path: Path
    title: str
    input_file: Path
    input_format: str | None
    na_values: list[str] | None
    dimensions: dict[str, Any]
    value: str
    weight: str | None
    missing: str
    rules: tuple[Any, ...]
    method: Any
    options: dict[str, Any]
    output_table: Path | None
    output_full: Path | None
    report_internal: Path | None = None
    report_external: Path | None = None
    cellkey: bool = True


@dataclass(frozen=True)
class CellKeyJobResult:
    """What a cell key job produced: the perturbation and the files written."""

    perturbation: Any
    written: list[Path]
    withheld: list[Path] = field(default_factory=list)

    @property
    def table(self) -> Any:
        """The original table (with the primaries of the job's rules)."""
        return self.perturbation.table


def is_cellkey_job_file(path: str | Path) -> bool:
    """Whether a TOML job file has a ``[cellkey]`` section (a missing file: False)."""
    p = Path(path)
    if not p.is_file() or p.suffix.lower() != ".toml":
        return False
    _, spec = read_toml(p)
    return "cellkey" in spec


def _ptable(spec: Any, where: str) -> Any:
    from sdckit.tables import ptable_magnitudes

    params = dict(table_of(spec, where))
    unknown_keys(params, PTABLE_OPTIONS, where)
    for need in ("D", "V"):
        if need not in params:
            raise ParameterError(f"[{where}] needs {need!r} (see ptable_magnitudes).")
    try:
        return ptable_magnitudes(**params)
    except ParameterError as exc:
        raise ParameterError(f"[{where}]: {exc}") from None


def load_cellkey_job(path: str | Path) -> CellKeyJob:
    """Read and validate a table job with a ``[cellkey]`` section (nothing is computed)."""
    from sdckit.jobs.tables import _outputs, _rules
    from sdckit.tables import CellKeyMagnitudes

    job_path, spec = read_toml(path)
    unknown_keys(spec, _SECTIONS, "top level")
    base = job_path.parent
    input_spec = table_of(spec.get("input"), "input")
    unknown_keys(input_spec, {"file", "format", "kind", "na_values"}, "input")
    if input_spec.get("kind", "microdata") != "microdata" or "file" not in input_spec:
        raise ParameterError(
            "[cellkey] needs the records: [input] must name a microdata 'file' (the cell keys "
            "are sums of the records' keys)."
        )
    table_spec = table_of(spec.get("table"), "table")
    unknown_keys(table_spec, _TABLE_KEYS, "table")
    dims = table_spec.get("dimensions")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise ParameterError("[table] 'dimensions' must be a list of column names.")
    hierarchies = table_of(table_spec.get("hierarchies", {}), "table.hierarchies")
    for name in hierarchies:
        if name not in dims:
            raise ParameterError(f"[table.hierarchies] {name!r} is not one of the dimensions.")
    value = table_spec.get("value")
    if not isinstance(value, str):
        raise ParameterError("[cellkey] perturbs magnitudes: [table] needs a 'value' column.")
    weight = table_spec.get("weight")
    if weight is not None and not isinstance(weight, str):
        raise ParameterError("[table] 'weight' must be a column name.")
    missing = table_spec.get("missing", "error")
    if missing not in ("error", "category", "drop"):
        raise ParameterError('[table] \'missing\' must be "error", "category" or "drop".')
    ck = dict(table_of(spec["cellkey"], "cellkey"))
    options = {k: ck.pop(k) for k in list(ck) if k in CELLKEY_OPTIONS}
    for key in ("ptable", "small_ptable", "ptable_odd"):
        if key in ck:
            ck[key] = _ptable(ck[key], f"cellkey.{key}")
    method = instantiate(CellKeyMagnitudes, ck, "[cellkey]")
    kc = options.get("key_columns")
    if isinstance(kc, str):
        options["key_columns"] = [kc]
    elif kc is not None and (not isinstance(kc, list) or not all(isinstance(c, str) for c in kc)):
        raise ParameterError("[cellkey] 'key_columns' must be a list of column names.")
    if "key_columns" in options and "record_key" in options:
        raise ParameterError("[cellkey] give 'key_columns' or 'record_key', not both.")
    if not isinstance(options.get("use_zero_keys", False), bool):
        raise ParameterError("[cellkey] 'use_zero_keys' must be true or false.")
    check_int(options.get("seed", 0), "[cellkey] seed", minimum=0)
    check_int(options.get("digits", 8), "[cellkey] digits", minimum=1, maximum=12)
    output = table_of(spec.get("output"), "output")
    outputs = _outputs(base, output, input_spec.get("file"))
    if outputs["report_internal"] or outputs["report_external"]:
        raise ParameterError(
            "[output] reports of a perturbed table are not available yet: remove "
            "'report_internal' and 'report_external' from a [cellkey] job."
        )
    title = spec.get("title", "Cell key method")
    if not isinstance(title, str):
        raise ParameterError("The job file's 'title' must be a string.")
    rules = _rules(spec["rules"]) if "rules" in spec else ()
    return CellKeyJob(
        path=job_path,
        title=title,
        input_file=path_of(base, input_spec["file"], "input file").resolve(),
        input_format=input_spec.get("format"),
        na_values=input_spec.get("na_values"),
        dimensions={d: hierarchies.get(d) for d in dims},
        value=value,
        weight=weight,
        missing=missing,
        rules=rules,
        method=method,
        options=options,
        output_table=outputs["table"],
        output_full=outputs["table_full"],
    )


def _write(frame: Any, path: Path) -> Path:
    from sdckit.io import atomic_path

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".parquet":
            frame.write_parquet(tmp)
        else:
            frame.write_csv(tmp)
    return path


def run_cellkey_job(
    job: CellKeyJob, *, progress: Any = None, write: bool = True
) -> CellKeyJobResult:
    """Read the records, perturb the table, write the outputs.

    The published table has the dimension codes and the perturbed value (under the value's
    name); the full table also the original value, the contributors, the first cell key and
    the noise of each cell.
    """
    from sdckit.io import read_data
    from sdckit.tables import cell_key_magnitudes

    report = progress or (lambda stage, done, total: None)
    report("Cell key method", 0, 2)
    dims = list(job.dimensions)
    frame = read_data(
        job.input_file, format=job.input_format, na_values=job.na_values, text_columns=dims
    )
    opts: Mapping[str, Any] = job.options
    cols = [*dims, job.value, *([job.weight] if job.weight else [])]
    cols += list(opts.get("key_columns") or []) + (
        [opts["record_key"]] if "record_key" in opts else []
    )
    check_columns_exist(cols, list(frame.columns), "table")
    result = cell_key_magnitudes(
        frame,
        job.dimensions,
        job.value,
        **job.method.get_params(),
        record_key=opts.get("record_key"),
        key_columns=opts.get("key_columns"),
        seed=opts.get("seed", 0),
        digits=opts.get("digits", 8),
        use_zero_keys=opts.get("use_zero_keys", False),
        weight=job.weight,
        sensitive=list(job.rules) or None,
        missing=job.missing,
    )
    report("Cell key method", 1, 2)
    written: list[Path] = []
    if write:
        full = result.to_frame()
        if job.output_table is not None:
            published = full.select([*dims, "perturbed"]).rename({"perturbed": job.value})
            written.append(_write(published, job.output_table))
        if job.output_full is not None:
            written.append(_write(full, job.output_full))
    report("Cell key method", 2, 2)
    return CellKeyJobResult(result, written)
