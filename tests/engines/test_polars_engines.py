"""Risk and tables on the polars engines (in memory and streaming) against the in-process ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from engine_helpers import (
    CASES,
    RANDOM_KEYS,
    TABLE_CASES,
    TESTDATA_KEYS,
    assert_same_risk,
    assert_same_table,
    case_data,
)

from sdckit.engines import (
    EngineError,
    choose_engine,
    risk_on_engine,
    table_on_engine,
)
from sdckit.errors import ColumnError, DataError, ParameterError, SdcError
from sdckit.tables import Table


@pytest.mark.parametrize("engine", ["polars", "streaming", "streaming-sliced"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_risk_equals_in_process(case, engine, testdata, random_data, monkeypatch) -> None:
    frame = case_data(case, testdata, random_data)
    roles = CASES[case]
    if engine == "streaming-sliced":  # the group-by slice by slice (700 records each)
        monkeypatch.setenv("SDCKIT_STREAM_CHUNK_ROWS", "700")
        engine = "streaming"
    res = risk_on_engine(frame.lazy(), engine=engine, **roles)
    assert res.engine == engine
    assert isinstance(res.records, pl.LazyFrame)
    assert_same_risk(res, frame, res.records.collect(), **roles)


def test_testdata_matches_sdcmicro(testdata) -> None:
    res = risk_on_engine(testdata, keys=TESTDATA_KEYS, weight="sampling_weight")
    fig = res.figures()
    assert res.classes.height == 412
    assert (fig["sample_uniques"], fig["k2_violations"], fig["k3_violations"]) == (157, 157, 281)
    assert fig["k5_violations"] == 458
    assert fig["expected_reidentifications"] == pytest.approx(10.77829892, abs=1e-8)
    assert fig["global_risk_pct"] == pytest.approx(0.2353340, abs=1e-7)
    assert isinstance(res.records, pl.DataFrame)  # a frame for a frame, in its row order
    assert res.records.get_column("rid").to_list() == list(range(testdata.height))
    assert "Risk assessment" in str(res.summary())


def test_parquet_path_and_sink(tmp_path: Path, random_data) -> None:
    src = tmp_path / "in.parquet"
    random_data.write_parquet(src)
    out = tmp_path / "out" / "risk.parquet"
    roles = CASES["random"]
    res = risk_on_engine(src, engine="streaming", output=out, **roles)
    assert res.records is None and res.output == out
    assert_same_risk(res, random_data, pl.read_parquet(out), **roles)


def test_auto_chooses_streaming_for_large_input(monkeypatch, random_data) -> None:
    lf = random_data.lazy()
    assert choose_engine(lf, "auto", ["ka"]) == "polars"
    monkeypatch.setenv("SDCKIT_STREAMING_BYTES", "1000")
    assert choose_engine(lf, "auto", ["ka"]) == "streaming"
    res = risk_on_engine(lf, keys=RANDOM_KEYS)
    assert res.engine == "streaming"
    assert choose_engine(random_data, "auto") == "polars"  # in memory stays in memory


def test_pandas_input_runs_in_memory(random_data) -> None:
    roles = CASES["random"]
    res = risk_on_engine(random_data.to_pandas(), **roles)
    assert res.engine == "polars"
    assert_same_risk(res, random_data, res.records, **roles)


def test_errors_are_sdc_errors(random_data) -> None:
    lf = random_data.lazy()
    with pytest.raises(ParameterError, match="engine"):
        risk_on_engine(lf, keys=RANDOM_KEYS, engine="duckdb")
    with pytest.raises(ParameterError, match="Dask DataFrame"):
        risk_on_engine(lf, keys=RANDOM_KEYS, engine="dask")
    with pytest.raises(ColumnError, match="Did you mean"):
        risk_on_engine(lf, keys=["kaa"])
    with pytest.raises(ColumnError, match="'fk'"):
        risk_on_engine(lf.with_columns(fk=pl.lit(1)), keys=RANDOM_KEYS)
    with pytest.raises(DataError, match="zero or negative"):
        risk_on_engine(lf.with_columns(w=pl.col("w") - 100), keys=RANDOM_KEYS, weight="w")
    with pytest.raises(DataError, match="missing value"):
        risk_on_engine(
            lf.with_columns(w=pl.when(pl.col("rid") == 3).then(None).otherwise("w")),
            keys=RANDOM_KEYS,
            weight="w",
        )
    with pytest.raises(DataError, match="household"):
        risk_on_engine(
            lf.with_columns(hh=pl.when(pl.col("rid") == 3).then(None).otherwise("hh")),
            keys=RANDOM_KEYS,
            household="hh",
        )
    with pytest.raises(DataError, match="missing for every record"):
        risk_on_engine(lf.with_columns(ka=pl.lit(None, pl.Float64)), keys=RANDOM_KEYS)


def test_too_many_missing_patterns_is_refused() -> None:
    rng = np.random.default_rng(3)
    n, m = 4000, 8
    values = rng.integers(1, 3, (n, m)).astype(np.float64)
    values[rng.random((n, m)) < 0.4] = np.nan
    frame = pl.DataFrame({f"k{j}": values[:, j] for j in range(m)})
    with pytest.raises(EngineError, match="wildcards") as info:
        risk_on_engine(frame, keys=list(frame.columns))
    assert isinstance(info.value, SdcError)
    assert 'missing="category"' in str(info.value) and "assess_risk" in str(info.value)
    res = risk_on_engine(frame, keys=list(frame.columns), missing="category")
    assert res.figures()["records"] == n


@pytest.mark.parametrize("engine", ["polars", "streaming"])
@pytest.mark.parametrize("case", sorted(TABLE_CASES))
def test_table_equals_from_microdata(case, engine, testdata, random_data) -> None:
    which, args = TABLE_CASES[case]
    frame = testdata if which == "testdata" else random_data
    res = table_on_engine(frame.lazy(), engine=engine, **args)
    assert res.engine == engine
    assert_same_table(res, frame, args)


def test_streaming_table_slice_by_slice(monkeypatch, testdata) -> None:
    """Many small slices, merged as they come, give the same cells and largest values."""
    monkeypatch.setenv("SDCKIT_STREAM_CHUNK_ROWS", "300")
    _which, args = TABLE_CASES["testdata_magnitude"]
    res = table_on_engine(testdata.lazy(), engine="streaming", **args)
    assert_same_table(res, testdata, args)


def test_table_errors(random_data) -> None:
    with pytest.raises(DataError, match="missing values"):
        table_on_engine(random_data.lazy(), ["kb"])
    with pytest.raises(DataError, match="not leaves"):
        table_on_engine(random_data.lazy(), {"kd": ["1", "2"]}, missing="drop")
    with pytest.raises(DataError, match="value column"):
        table_on_engine(random_data.lazy(), ["rid"], value="ka")
    t = table_on_engine(random_data, ["kd"], missing="drop", n_top=0)
    assert t.top.shape[1] == 0 and isinstance(t.to_table(), Table)


def test_importing_engines_imports_neither_dask_nor_spark() -> None:
    code = (
        "import sys, sdckit.engines\n"
        "print(','.join(m for m in ('dask', 'distributed', 'pyspark', 'py4j', 'sdckit.tables')"
        " if m in sys.modules))"
    )  # the risk engines need neither the cluster libraries nor the tables (a second to import)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
