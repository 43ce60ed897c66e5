"""``risk_on_engine`` and ``table_on_engine``: the file-level figures, per-record results, cells."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_choice, check_columns_exist, check_int, check_real, column_list
from sdckit.engines._choice import (
    ENGINES,
    STREAMING_THRESHOLD_BYTES,
    EngineChoice,
    choose_engine,
    data_kind,
    engine_choice,
)
from sdckit.engines._classes import check_finest, class_figures
from sdckit.errors import ColumnError, ParameterError, SdcError

__all__ = [
    "ENGINES",
    "STREAMING_THRESHOLD_BYTES",
    "EngineChoice",
    "EngineRisk",
    "choose_engine",
    "engine_choice",
    "risk_on_engine",
    "table_on_engine",
]

#: With missing key values as wildcards, each pair of missing-value patterns is one join; above
#: this many patterns the plan is refused (see :func:`risk_on_engine`).
MAX_PATTERNS = 64


class EngineError(SdcError, ValueError):
    """A measure cannot run on the engine asked for (the message names an alternative)."""


def _backend(data: Any, engine: str) -> Any:
    kind = data_kind(data)
    if engine == "dask":
        from sdckit.engines._dask import DaskEngine

        if kind == "path":
            import dask.dataframe as dd

            data = dd.read_parquet(str(data))
        return DaskEngine(data)
    if engine == "spark":
        from sdckit.engines._spark import SparkEngine

        if kind == "path":
            from pyspark.sql import SparkSession

            session = SparkSession.getActiveSession()
            if session is None:
                raise ParameterError(
                    "engine='spark' with a Parquet path needs an active SparkSession; start one "
                    "or pass a Spark DataFrame."
                )
            data = session.read.parquet(str(data))
        return SparkEngine(data)
    from sdckit.engines._polars_stream import PolarsEngine

    if kind == "path":
        data = pl.scan_parquet(data)
    elif kind == "other":
        from sdckit._frames import to_polars

        data = to_polars(data)[0]
    return PolarsEngine(data, streaming=engine == "streaming")


@dataclass(frozen=True, repr=False)
class EngineRisk:
    """Frequency-based risk computed on an engine.

    Attributes
    ----------
    engine : str
        The engine that ran (``"polars"``, ``"streaming"``, ``"dask"`` or ``"spark"``).
    reason : str
        Why that engine (:class:`EngineChoice`): ``"asked for"``, or what ``"auto"`` saw.
    keys : tuple of str
    records : object or None
        The per-record result in the caller's form: every input column plus ``fk``,
        ``Fk_hat``, ``risk`` (``household_risk`` with a household id, the l-diversity columns
        with sensitive variables) -- a polars DataFrame for a DataFrame, a LazyFrame for a
        LazyFrame or a path, a Dask or Spark DataFrame for those.  None when written to
        ``output``.
    output : pathlib.Path or None
        Where the per-record result was written.
    classes : polars.DataFrame
        One row per equivalence class: the key values, its number of records and the
        per-class columns.
    """

    engine: str
    keys: tuple[str, ...]
    records: Any
    output: Path | None
    classes: pl.DataFrame
    _figures: dict[str, float | int] = field(default_factory=dict)
    method: str = "approx"
    missing: str = "wildcard"
    reason: str = ""

    def figures(self) -> dict[str, float | int]:
        """The file-level figures, by the names of :meth:`sdckit.risk.RiskAssessment.figures`."""
        return dict(self._figures)

    def to_frame(self) -> Any:
        """The per-record result (see ``records``); None when it was written to ``output``."""
        return self.records

    def summary(self) -> Summary:
        """The file-level figures as a printable summary."""
        labels = {
            "records": "records",
            "sample_uniques": "sample uniques (fk = 1)",
            "expected_reidentifications": "expected re-identifications",
            "global_risk_pct": "global risk (%)",
            "highest_risk": "highest individual risk",
            "household_expected_reidentifications": "expected re-identifications (households)",
            "household_risk_pct": "global household risk (%)",
        }
        rows = []
        for name, value in self._figures.items():
            if name.startswith("k") and name.endswith("_violations"):
                label = f"records violating {name[1:-11]}-anonymity"
            else:
                label = labels.get(name, name.replace("_", " "))
            rows.append((label, value))
        rows.insert(1, ("equivalence classes", self.classes.height))
        notes = [
            f"key variables: {', '.join(self.keys)}; missing values: {self.missing}; "
            f"Benedetti-Franconi risk, method {self.method!r}; engine {self.engine!r}"
            + (f" ({self.reason})" if self.reason else "")
        ]
        if self.output is not None:
            notes.append(f"per-record result written to {self.output}")
        return Summary("Risk assessment", rows, notes)

    def __repr__(self) -> str:
        return (
            f"EngineRisk(engine={self.engine!r}, records={self._figures.get('records')}, "
            f"classes={self.classes.height})"
        )


def risk_on_engine(
    data: Any,
    *,
    keys: str | Sequence[str],
    weight: str | None = None,
    household: str | None = None,
    sensitive: str | Sequence[str] | None = None,
    missing: str = "wildcard",
    alpha: float = 1.0,
    method: str = "approx",
    ks: Sequence[int] = (2, 3, 5),
    c: float = 2.0,
    engine: str = "auto",
    output: str | os.PathLike | None = None,
) -> EngineRisk:
    """Frequency-based risk of a file on an engine: fk, Fk_hat, individual and global risk.

    The figures equal those of :func:`sdckit.risk.assess_risk` (``fk`` and ``Fk_hat`` exactly,
    up to the order of floating-point additions of the weights; risks to 1e-12), but the
    records never leave the engine: the engine groups them by the key (and sensitive)
    variables, the per-class figures are computed on that small table, and they are joined back
    to the records on the engine.

    Parameters
    ----------
    data : DataFrame, LazyFrame, path, Dask or PySpark DataFrame
        A polars DataFrame or LazyFrame, a Parquet path (file, directory or glob), a Dask
        DataFrame, a PySpark DataFrame (or pandas / pyarrow, run in memory).
    keys, weight, household, sensitive
        Column roles, as in :class:`sdckit.Microdata`.
    missing : {"wildcard", "category"}, default "wildcard"
        A missing key value matches any value (sdcMicro), or is a category of its own.
    alpha : float, default 1.0
        sdcMicro's weight of wildcard matches (see :func:`sdckit.risk.frequencies`).
    method : {"approx", "exact"}, default "approx"
        Benedetti-Franconi risk formula.
    ks : sequence of int, default (2, 3, 5)
        The k's whose violations are counted.
    c : float, default 2.0
        Constant of recursive (c, l)-diversity.
    engine : {"auto", "polars", "streaming", "dask", "spark"}, default "auto"
        See :func:`choose_engine`.
    output : path, optional
        Write the per-record result as Parquet instead of returning it (one file on the polars
        engines, written with ``sink_parquet`` without holding the records; a directory of
        part files on Dask and Spark).

    Returns
    -------
    EngineRisk

    Raises
    ------
    EngineError
        With ``missing="wildcard"``, more than 64 missing-value patterns among the keys
        (the message names the alternatives).

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"a": [1, 1, 2, 2, 2], "w": [10.0, 30.0, 5.0, 5.0, 5.0]})
    >>> res = risk_on_engine(lf, keys=["a"], weight="w", engine="streaming")
    >>> res.figures()["k3_violations"], round(res.figures()["expected_reidentifications"], 6)
    (2, 0.361394)
    >>> res.records.collect().get_column("fk").to_list()
    [2.0, 2.0, 3.0, 3.0, 3.0]
    """
    key_list = list(column_list(keys, "keys"))
    if not key_list:
        raise ColumnError("risk_on_engine needs key variables; pass keys=[...].")
    sens = list(column_list(sensitive, "sensitive"))
    check_choice(method, "method", ("approx", "exact"))
    check_choice(missing, "missing", ("wildcard", "category"))
    alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    c = check_real(c, "c", minimum=0.0, min_inclusive=False)
    ks_tuple = tuple(sorted({check_int(k, "ks", minimum=1) for k in ks}))
    used = [*key_list, *sens, *(x for x in (weight, household) if x)]
    if len(set(used)) != len(used):
        raise ColumnError("A column is given two roles; give each column one role.")
    choice = engine_choice(data, engine, used)
    chosen = choice.engine
    backend = _backend(data, chosen)
    check_columns_exist(used, backend.columns, "data")
    finest = backend.finest([*key_list, *sens], weight)
    check_finest(finest, key_list, weight)
    if missing == "wildcard":
        bits = finest.select(
            pl.sum_horizontal(
                [pl.col(k).is_null().cast(pl.Int64) * (1 << j) for j, k in enumerate(key_list)]
            ).n_unique()
        ).item()
        if bits > MAX_PATTERNS:
            raise EngineError(
                f"fk with missing values as wildcards: the keys have {bits} patterns of missing "
                f"values (at most {MAX_PATTERNS} run on an engine, one join per pair). Use "
                'missing="category", or sdckit.risk.assess_risk in memory on a file that fits.'
            )
    cf = class_figures(
        finest,
        key_list,
        sensitive=sens,
        weighted=weight is not None,
        missing=missing,
        alpha=alpha,
        method=method,
        ks=ks_tuple,
        c=c,
    )
    records = backend.attach(finest, key_list, cf.first, cf.columns)
    figures = dict(cf.figures)
    if household is not None:
        hh_figures, records = backend.household(records, household)
        figures.update(hh_figures)
    # the order of RiskAssessment.figures(): household figures before l-diversity
    order = [n for n in figures if not n.startswith("l_")] + [
        n for n in figures if n.startswith("l_")
    ]
    figures = {n: figures[n] for n in order}
    out_path = None
    if output is not None:
        out_path = Path(output)
        backend.write(records, out_path)
        records = None
    else:
        records = backend.result(records)
    classes = finest.select(key_list)[cf.first].with_columns(
        pl.Series("records", cf.n.astype(np.int64)),
        *(pl.Series(name, values) for name, values in cf.columns.items()),
    )
    return EngineRisk(
        engine=chosen,
        keys=tuple(key_list),
        records=records,
        output=out_path,
        classes=classes,
        _figures=figures,
        method=method,
        missing=missing,
        reason=choice.reason,
    )


def table_on_engine(
    data: Any,
    dimensions: Sequence[str] | Mapping[str, Any],
    value: str | None = None,
    *,
    weight: str | None = None,
    n_top: int = 3,
    missing: str = "error",
    engine: str = "auto",
) -> Any:
    """The cells of a table (every total and sub-total) aggregated on an engine.

    The engine groups the records by the dimension codes; the margins of the hierarchies are
    added to those leaf cells in memory.  The result builds the same
    :class:`~sdckit.tables.Table` as :meth:`~sdckit.tables.Table.from_microdata` (up to the
    order of floating-point additions).

    Parameters
    ----------
    data : DataFrame, LazyFrame, path, Dask or PySpark DataFrame
    dimensions, value, weight, n_top, missing
        As in :meth:`sdckit.tables.Table.from_microdata` (``n_top=0`` skips the largest
        contributions).
    engine : {"auto", "polars", "streaming", "dask", "spark"}, default "auto"

    Returns
    -------
    EngineTable
        ``cells`` (one row per cell: codes, value, contributors, weight, largest
        contributions) and ``to_table()``.

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"r": ["a", "a", "b"], "v": [5.0, 1.0, 2.0]})
    >>> t = table_on_engine(lf, ["r"], "v", engine="streaming")
    >>> t.values.tolist(), t.top[0].tolist()
    ([8.0, 6.0, 2.0], [5.0, 2.0, 1.0])
    >>> t.to_table().n_contributors.tolist()
    [3, 2, 1]
    """
    spec = dict(dimensions) if isinstance(dimensions, Mapping) else dict.fromkeys(dimensions)
    dims = list(column_list(list(spec), "dimensions"))
    if not dims:
        raise ParameterError("The 'dimensions' parameter needs at least one column.")
    n_top = check_int(n_top, "n_top", minimum=0)
    check_choice(missing, "missing", ("error", "category", "drop"))
    used = [*dims, *(x for x in (value, weight) if x)]
    if len(set(used)) != len(used):
        raise ColumnError("A column is given two roles; give each column one role.")
    chosen = choose_engine(data, engine, used)
    backend = _backend(data, chosen)
    check_columns_exist(used, backend.columns, "data")
    leaf, tops = backend.leaf_cells(dims, value, weight, n_top)
    from sdckit.engines._tables import build_table  # imports sdckit.tables: only for tables

    return build_table(
        leaf,
        tops,
        dims,
        spec,
        value=value,
        weight=weight,
        n_top=n_top,
        missing=missing,
        engine=chosen,
    )
