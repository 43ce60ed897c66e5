"""A protection job run where the records are: ``sdckit protect`` on an engine.

``[input] engine`` in the job file (or ``--engine``) chooses the engine, ``"auto"`` by default
(:func:`sdckit.engines.choose_engine`).  The job runs on the engine when its input is Parquet,
the choice is not in memory and every step has an engine version
(:data:`sdckit.engines._protect.ENGINE_STEPS`); otherwise :func:`plan_engine_job` says why and
the job runs in memory as before.

On the engine the records are read with their row index, protected step by step (step ``i``
with the seed ``seed + i - 1`` of the in-memory runner, set by the job loader), released as the
in-memory runner releases them -- the released columns, new household ids and the record
order drawn from the same stream (:func:`sdckit.jobs.runner.seed_of_release`), so the file is
the same, record for record -- staged once on the streaming engine (the steps are lazy; the
check's passes and the write read the staged file, never the steps again) and written as
Parquet part files in a folder at the job's output path (a temporary folder renamed: never
half written).  The release check runs first,
from aggregates and a seeded sample (:func:`sdckit.engines.check_on_engine`), against the
job's target (the default one without a ``[target]``): a release it refuses is not written
(an older one is removed), as in memory; the reports are made from the same aggregates
(:func:`sdckit.report.write_engine_report`).  The k-anonymity of the written file is also
recounted on the engine before the folder is renamed into place.  The job is checked by
loading it on its first records (roles, steps, outputs), never on the whole file.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit.jobs._toml import path_of, read_toml, table_of
from sdckit.jobs.load import Job, load_job

__all__ = ["EngineJobResult", "plan_engine_job", "run_engine_job"]

#: Records of the sample a job is checked on.
SAMPLE_ROWS = 1000


@dataclass(frozen=True)
class EngineJobResult:
    """What a job run on an engine produced.

    Attributes
    ----------
    engine : str
    output : Path or None
        The folder of Parquet part files (None when the job writes no data, or when the file
        is not k-anonymous: then nothing is written, and an older output is removed).
    k : int or None
        The target's k; ``k_violations`` the records of the released file below it (recounted
        on the engine), None without a k.
    check : EngineReleaseCheck or None
        The release check computed from aggregates and a seeded sample
        (:func:`sdckit.engines.check_on_engine`); a release it refuses is not written.
    reports : list of Path
        The reports written (the external one only for a release the check passed).
    """

    engine: str
    output: Path | None
    records: int
    k: int | None = None
    k_violations: int | None = None
    check: Any = None
    notes: list[str] = field(default_factory=list)
    reports: list[Path] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """Whether the released file was withheld (below k, or refused by the check)."""
        return bool(self.k_violations) or (self.check is not None and not self.check.ok)


def _is_parquet(path: Path) -> bool:
    if path.is_dir():
        return any(path.glob("*.parquet"))
    return path.suffix.lower() in (".parquet", ".pq")


def plan_engine_job(
    job_file: str | Path, engine: str | None = None, seed: int | None = None,
    output_dir: str | Path | None = None,
) -> tuple[str | None, str, Job | None]:  # fmt: skip
    """The engine a job runs on, and why; ``(None, reason, None)``: in memory.

    Returns
    -------
    (engine or None, reason, job checked on its first records or None)
    """
    from sdckit.engines import ENGINES, choose_engine, unsupported_reason
    from sdckit.errors import ParameterError

    job_path, spec = read_toml(job_file)
    input_spec = table_of(spec.get("input"), "input")
    asked = engine if engine is not None else input_spec.get("engine", "auto")
    if asked not in ENGINES:
        raise ParameterError(f"[input] 'engine' must be one of {', '.join(map(repr, ENGINES))}.")
    if asked == "polars":
        return None, "engine 'polars' runs the job in memory", None
    if "file" not in input_spec:
        return None, "the input is a bundled dataset (in memory)", None
    source = path_of(job_path.parent, input_spec["file"], "input file")
    if not _is_parquet(source):
        if asked != "auto":
            raise ParameterError(
                f"[input] engine = {asked!r} needs a Parquet input file (or a folder of "
                "Parquet files); convert the file, or remove 'engine' (in memory)."
            )
        return None, "the input is not Parquet (engines read Parquet)", None
    # a protection job reads and writes every column
    columns = pl.scan_parquet(source / "*.parquet" if source.is_dir() else source)
    chosen = choose_engine(source, asked, columns.collect_schema().names())
    if output_dir is None and "output" in spec:  # load_job below sees the sample as input
        data = table_of(spec["output"], "output").get("data")
        if data is not None and path_of(job_path.parent, data, "output").resolve() == (
            source.resolve()
        ):
            raise ParameterError("The output data file must differ from the input file.")
    if chosen == "polars":
        return None, "'auto' chose memory: the file fits", None
    with tempfile.TemporaryDirectory(prefix="sdckit-") as tmp:
        sample = Path(tmp) / "sample.parquet"
        pl.scan_parquet(source).head(SAMPLE_ROWS).collect().write_parquet(sample)
        job = load_job(
            job_file, seed=seed, output_dir=output_dir, input_file=sample, writes=False,
            output_folder=True,
        )  # fmt: skip
    job = _with_input(job, source)
    for step in job.steps:
        reason = unsupported_reason(step.method, chosen)
        if reason is not None:
            if asked != "auto":
                from sdckit.engines import EngineError

                raise EngineError(
                    f"{reason}, so the job cannot run on engine={asked!r}; remove 'engine' "
                    "(the job runs in memory) or the step."
                )
            return None, f"{reason} (in memory)", None
    if job.ru_map is not None:
        return None, "an R-U map needs the records in memory", None
    return chosen, f"engine {chosen!r}" + (" (chosen by 'auto')" if asked == "auto" else ""), job


def _with_input(job: Job, source: Path) -> Job:
    from dataclasses import replace

    tables = dict(job.tables)
    tables["input"] = {**tables.get("input", {}), "file": str(source.resolve())}
    return replace(job, tables=tables)


def _spark_session() -> Any:
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    return session if session is not None else SparkSession.builder.getOrCreate()


def run_engine_job(
    job: Job, engine: str, *, progress: Callable[[str, int, int], None] | None = None
) -> EngineJobResult:
    """Run ``job`` (from :func:`plan_engine_job`) on ``engine``; write its protected file."""
    from sdckit.engines import read_with_row, run_steps, stage_records

    report = progress or (lambda stage, done, total: None)
    source = Path(job.tables["input"]["file"])
    if engine == "spark":
        _spark_session()
    md = job.microdata  # the first records: the roles and the columns
    roles = {k: v for k, v in md.roles().items() if v}
    report("Reading the input", 0, 1)
    frame = read_with_row(source, engine)
    if "rows" in job.tables["input"]:
        frame = _head(frame, engine, int(job.tables["input"]["rows"]))
    original = frame  # (lazy or distributed: read again where the check needs it)
    report("Reading the input", 1, 1)
    methods = [s.method for s in job.steps]
    seeds = [s.params.get("seed") for s in job.steps]
    frame = run_steps(frame, engine, methods, seeds, roles, report)
    released, records, order = _release(frame, engine, job)
    stage = None
    if engine == "streaming":
        # the steps are lazy: the check's passes and the write would each run them again
        # (and a frame-level map would make every pass read every column); they run once
        base = (
            job.output_data.parent if job.output_data is not None else Path(tempfile.gettempdir())
        )
        stage = base / f".sdckit-stage-{uuid.uuid4().hex}"
        report("Protecting the records", 0, 1)
        try:
            released = stage_records(released, stage)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        report("Protecting the records", 1, 1)
    try:
        return _check_and_write(job, engine, original, released, records, order, stage, report)
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


def _check_and_write(
    job: Job,
    engine: str,
    original: Any,
    released: Any,
    records: int,
    order: np.ndarray | None,
    stage: Path | None,
    report: Callable[[str, int, int], None],
) -> EngineJobResult:
    """The release check, the write (when the check passes) and the reports."""
    from sdckit.engines import (
        ROW,
        check_on_engine,
        k_violations_on_engine,
        remove_output,
        write_parts,
    )
    from sdckit.release import ReleaseTarget

    md = job.microdata
    k = job.target.k if job.target is not None else None
    # the release check from aggregates and a seeded sample, before anything is written
    check = check_on_engine(
        original, released, engine=engine, roles=md.roles(), k=None,
        seed=job.seed if job.seed is not None else 0,
        target=job.target if job.target is not None else ReleaseTarget.default(),
        progress=report,
    )  # fmt: skip
    counted: dict[str, int] = {}

    def k_anonymous(folder: Path) -> bool:
        # the file as written, read back (the steps are not run again), before it is renamed
        # into place: a file below k is never released
        if k is None or not md.keys:
            return True
        report("Recounting k-anonymity", 0, 1)
        counted["k"] = k_violations_on_engine(_read_back(folder, engine), engine, md.keys, k)
        report("Recounting k-anonymity", 1, 1)
        return counted["k"] == 0

    out = None
    if job.output_data is not None and not check.ok:
        # refused: nothing is written (no pass over the file), an older release is removed
        remove_output(job.output_data)
    elif job.output_data is not None:
        report("Writing outputs", 0, 1)
        staged = None if stage is None else stage / "records.parquet"
        out = write_parts(
            released, engine, job.output_data, order, accept=k_anonymous, staged=staged
        )
        report("Writing outputs", 1, 1)
    elif k is not None and md.keys:
        report("Recounting k-anonymity", 0, 1)
        counted["k"] = k_violations_on_engine(_drop(released, engine, ROW), engine, md.keys, k)
        report("Recounting k-anonymity", 1, 1)
    violations = counted.get("k")
    reports = _write_reports(job, check, report)
    return EngineJobResult(engine, out, records, k, violations, check, reports=reports)


def _write_reports(job: Job, check: Any, report: Callable[[str, int, int], None]) -> list[Path]:
    """The job's reports from the check's aggregates (the external one only for a release the
    check passed; an older one is removed otherwise)."""
    import contextlib

    from sdckit.report import write_engine_report

    steps = [{"method": type(s.method).__name__, "params": dict(s.params)} for s in job.steps]
    written: list[Path] = []
    for kind, path in (("internal", job.report_internal), ("external", job.report_external)):
        if path is None:
            continue
        if kind == "external" and not check.ok:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # never leave an older release's report behind
            continue
        report("Writing reports", len(written), 2)
        path.parent.mkdir(parents=True, exist_ok=True)
        written.append(write_engine_report(check, path, steps=steps, kind=kind, title=job.title))
    return written


def _read_back(path: Path, engine: str) -> Any:
    if engine == "dask":
        import dask.dataframe as dd

        return dd.read_parquet(str(path), dtype_backend="numpy_nullable")
    if engine == "spark":
        return _spark_session().read.parquet(str(path))
    return pl.scan_parquet(path / "*.parquet")


def _head(frame: Any, engine: str, rows: int) -> Any:
    from sdckit.engines import ROW, EngineError

    if engine == "streaming":
        return frame.head(rows)
    if engine == "spark":
        from pyspark.sql import functions as F

        return frame.filter(F.col(ROW) < rows)
    if engine == "dask":
        return frame[frame[ROW] < rows]
    raise EngineError(f"[input] 'rows' is not available on engine={engine!r}.")


def _drop(frame: Any, engine: str, column: str) -> Any:
    return frame.drop(columns=[column]) if engine == "dask" else frame.drop(column)


def _release(frame: Any, engine: str, job: Job) -> tuple[Any, int, np.ndarray | None]:
    """The released columns, new household ids and record order of the in-memory runner."""
    import narwhals.stable.v2 as nw

    from sdckit.engines import ROW, EngineError, native_table, with_columns
    from sdckit.jobs.runner import seed_of_release
    from sdckit.release import new_household_ids

    plan, md = job.release_plan, job.microdata
    if plan.household_size is not None:
        raise EngineError(
            "The release plan's 'household_size' counts household members, which the "
            "engines do not do yet; leave it out or run the job in memory."
        )
    columns = plan.released_columns(md)
    rng = seed_of_release(job.seed)
    if rng is None:
        rng = np.random.default_rng()
    nwf = nw.from_native(frame)
    records = int(nwf.select(nw.len()).collect().item())
    hh = md.household
    if hh is not None and hh in columns and plan.household_id == "new":
        # the distinct ids given new ones as in memory (the same draws: ids ranked as text)
        ids = nwf.select(nw.col(hh)).unique().collect().to_arrow()
        ids = pl.DataFrame(pl.from_arrow(ids)).get_column(hh)
        table = pl.DataFrame({hh: ids, "__sdckit_hh": new_household_ids(ids, rng)})
        frame = with_columns(
            frame, engine, [nw.col("__sdckit_hh").alias(hh)], table, ["__sdckit_hh"], on=hh
        )
    frame = nw.from_native(frame).select(*columns, ROW).to_native()
    if plan.order == "original":
        if engine == "streaming":  # already in file order
            return frame, records, None
        return nw.from_native(frame).sort(ROW).to_native(), records, None
    # as ReleasePlan.record_order: output record j is the protected record perm[j]
    perm = rng.permutation(records)
    if engine == "streaming":  # sorted part by part at the write (bounded memory)
        return frame, records, perm
    position = np.empty(records, dtype=np.int64)
    position[perm] = np.arange(records, dtype=np.int64)
    order = pl.DataFrame({ROW: np.arange(records, dtype=np.int64), "__sdckit_pos": position})
    if engine == "dask":
        frame = with_columns(frame, engine, [], order).sort_values("__sdckit_pos")
        return frame.drop(columns=["__sdckit_pos"]), records, None
    joined = nw.from_native(frame).join(
        nw.from_native(native_table(order, engine, frame)), on=ROW, how="left"
    )
    return joined.sort("__sdckit_pos").drop("__sdckit_pos").to_native(), records, None
