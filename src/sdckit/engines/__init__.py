"""Risk and tables on an engine: polars (in memory or streaming), Dask, Spark.

The records never leave the engine.  The engine groups them by the key variables (one row per
key combination: the *class table*, which is small); the per-class figures -- ``fk``/``Fk_hat``
with missing values as wildcards, Benedetti-Franconi risk, l-diversity, table cells and their
margins -- are computed in memory on that table, then joined back to the records on the engine.
The per-record result comes back as the caller's (lazy) frame or is written as Parquet.

* :func:`risk_on_engine`: the figures of :meth:`sdckit.risk.RiskAssessment.figures` and the
  per-record ``fk``, ``Fk_hat``, ``risk`` (household risk, l-diversity);
* :func:`table_on_engine`: every cell of a table, totals and sub-totals included, ready for
  :class:`sdckit.tables.Table`;
* :func:`choose_engine`: what ``engine="auto"`` picks; :func:`engine_choice` also says why
  (:class:`EngineChoice`: the input's kind, or the size of the columns used against
  :data:`MEMORY_SHARE` of the free memory);
* the pieces of protection where the records are, for :mod:`sdckit.jobs.engine_job`
  (``read_with_row``, ``run_steps``, ``write_parts``, ``k_violations_on_engine``, ...: see
  ``_PROTECTION``; imported on first use);
* :func:`check_on_engine`: the release check of a file protected on an engine, from class
  tables, margins, sums and a seeded sample (:class:`EngineReleaseCheck`).

Dask (``pip install 'sdckit[dask]'``) and PySpark (``'sdckit[spark]'``, plus a Java runtime)
are optional; importing this package imports neither.
"""

from sdckit.engines._api import (
    ENGINES,
    STREAMING_THRESHOLD_BYTES,
    EngineChoice,
    EngineError,
    EngineRisk,
    choose_engine,
    engine_choice,
    risk_on_engine,
    table_on_engine,
)
from sdckit.engines._choice import MEMORY_SHARE, free_memory

__all__ = [
    "ENGINES",
    "MEMORY_SHARE",
    "STREAMING_THRESHOLD_BYTES",
    "EngineChoice",
    "EngineError",
    "EngineReleaseCheck",
    "EngineRisk",
    "EngineTable",
    "check_on_engine",
    "choose_engine",
    "engine_choice",
    "free_memory",
    "risk_on_engine",
    "table_on_engine",
]


#: The public names of protection on an engine, and their modules.
_PROTECTION = {
    "ROW": "_rows",
    "read_with_row": "_rows",
    "write_parts": "_rows",
    "remove_output": "_rows",
    "stage_records": "_rows",
    "native_table": "_rows",
    "with_columns": "_steps",
    "run_steps": "_protect",
    "unsupported_reason": "_protect",
    "k_violations_on_engine": "_protect",
}


def __getattr__(name: str) -> object:
    # EngineTable lives with the table building, which imports sdckit.tables (about a second):
    # the risk engines do not need it
    if name == "EngineTable":
        from sdckit.engines._tables import EngineTable

        return EngineTable
    # protection where the records are (the engine job of sdckit.jobs): the masking methods
    # are imported when it is first used
    if name in _PROTECTION:
        import importlib

        return getattr(importlib.import_module(f"sdckit.engines.{_PROTECTION[name]}"), name)
    # the release check imports sdckit.release (scikit-learn): only when it is used
    if name in ("check_on_engine", "EngineReleaseCheck"):
        from sdckit.engines import _release

        return getattr(_release, name)
    raise AttributeError(f"module 'sdckit.engines' has no attribute {name!r}")
