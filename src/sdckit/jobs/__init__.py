"""Jobs: load, validate and run a protection job or a table job (the layer under the faces).

A job file (TOML, ``docs/job-files.md``) names the input and its roles, the steps and their
parameters, a risk target, an R-U map and the outputs.  :func:`load_job` validates all of it
against the methods' declared constraints before any work; :func:`run_job` runs it with a
progress callback and returns a :class:`JobResult`.  The command line (``sdckit protect``,
``sdckit table``), the demo and a browser interface all drive these functions.

Examples
--------
>>> from importlib import resources
>>> from sdckit.jobs import load_job
>>> with resources.as_file(resources.files("sdckit").joinpath("demo_job.toml")) as path:
...     job = load_job(path)
>>> [type(s.method).__name__ for s in job.steps][:2]
['GlobalRecoding', 'GlobalRecoding']
"""

from sdckit.jobs.load import CandidateSpec, Job, RUMapSpec, StepSpec, load_job
from sdckit.jobs.run import JobResult, Progress, run_job
from sdckit.jobs.tables import TableJob, TableJobResult, load_table_job, run_table_job
from sdckit.jobs.target import RiskTarget

__all__ = [
    "CandidateSpec",
    "Job",
    "JobResult",
    "Progress",
    "RUMapSpec",
    "RiskTarget",
    "StepSpec",
    "TableJob",
    "TableJobResult",
    "load_job",
    "load_table_job",
    "run_job",
    "run_table_job",
]
