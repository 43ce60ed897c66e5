"""Jobs: load, validate and run a protection job or a table job (the layer under the faces).

A job file (TOML, ``docs/job-files.md``) names the input and its roles, the steps and their
parameters, a risk target, an R-U map and the outputs.  :func:`load_job` validates all of it
against the methods' declared constraints before any work; :class:`Runner` holds the state of
a protection and changes it one step at a time (built from a job or from objects; undo, redo,
the release, the R-U map, the outputs and the job file of the state); :func:`run_job` is a loop
over it with a progress callback and returns a :class:`JobResult`.  :class:`TableRunner` does
the same for a table job (the table, the rules, the suppression and its audit, the outputs and
the job file), and :func:`run_table_job` runs a table job through it.  The command line
(``sdckit protect``, ``sdckit table``), the demo and a browser interface all drive these.

Examples
--------
>>> from importlib import resources
>>> from sdckit.jobs import load_job
>>> with resources.as_file(resources.files("sdckit").joinpath("demo_job.toml")) as path:
...     job = load_job(path)
>>> [type(s.method).__name__ for s in job.steps][:2]
['GlobalRecoding', 'GlobalRecoding']
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdckit.jobs.load import CandidateSpec, Job, RUMapSpec, StepSpec, load_job
    from sdckit.jobs.run import JobResult, Progress, run_job
    from sdckit.jobs.runner import Outputs, Runner
    from sdckit.jobs.table_runner import TableOutputs, TableRunner
    from sdckit.jobs.tables import (
        TableJob,
        TableJobResult,
        load_table_job,
        run_table_job,
        run_table_jobs,
    )
    from sdckit.jobs.target import RiskTarget

# Imported on first use: a table job (``sdckit table``) needs neither the microdata methods
# nor the risk measures that a protection job imports (a second of start-up).
_WHERE = {
    "CandidateSpec": "load",
    "Job": "load",
    "RUMapSpec": "load",
    "StepSpec": "load",
    "load_job": "load",
    "JobResult": "run",
    "Progress": "run",
    "run_job": "run",
    "Outputs": "runner",
    "Runner": "runner",
    "TableOutputs": "table_runner",
    "TableRunner": "table_runner",
    "TableJob": "tables",
    "TableJobResult": "tables",
    "load_table_job": "tables",
    "run_table_job": "tables",
    "run_table_jobs": "tables",
    "RiskTarget": "target",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(f"sdckit.jobs.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sdckit.jobs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "CandidateSpec",
    "Job",
    "JobResult",
    "Outputs",
    "Progress",
    "RUMapSpec",
    "RiskTarget",
    "Runner",
    "StepSpec",
    "TableJob",
    "TableJobResult",
    "TableOutputs",
    "TableRunner",
    "load_job",
    "load_table_job",
    "run_job",
    "run_table_job",
    "run_table_jobs",
]
