"""``engine="auto"``: the engine chosen by the input and the free memory, with its reason; and
the streaming engine's class lookup (a hash of the packed key codes instead of a join)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.engines import (
    MEMORY_SHARE,
    EngineChoice,
    choose_engine,
    engine_choice,
    free_memory,
    risk_on_engine,
)
from sdckit.engines._choice import estimated_bytes
from sdckit.errors import ParameterError

GB = 10**9


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    """1,000 records: two Int32 keys, an Int64 key, a Float64 weight and a text column."""
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "a": rng.integers(0, 4, 1000).astype(np.int32),
            "b": rng.integers(0, 3, 1000).astype(np.int32),
            "c": rng.integers(0, 5, 1000),
            "w": rng.uniform(1, 9, 1000),
            "t": ["x"] * 1000,
        }
    )
    path = tmp_path / "d.parquet"
    frame.write_parquet(path)
    return path


def test_the_size_is_rows_times_the_widths_of_the_columns_used(parquet: Path) -> None:
    lf = pl.scan_parquet(parquet)
    assert estimated_bytes(lf, ["a", "b"]) == 1000 * (4 + 4)
    assert estimated_bytes(lf, ["a", "c", "w"]) == 1000 * (4 + 8 + 8)
    assert estimated_bytes(lf, ["t"]) == 1000 * 24  # text: the view and a short string
    assert estimated_bytes(lf, []) == 1000 * (4 + 4 + 8 + 8 + 24)  # all columns


def test_a_small_file_runs_in_memory_a_large_one_streams(
    parquet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SDCKIT_STREAMING_BYTES", raising=False)
    cols = ["a", "b", "w"]  # 16,000 bytes
    small = engine_choice(parquet, "auto", cols, free=lambda: 18 * GB)
    assert small == EngineChoice(
        "polars", "the 3 columns used take about 16000 bytes, within 25 % of the 18.0 GB free"
    )
    # the bound is the share of the free memory: 16,000 bytes are more than 25 % of 63,999
    large = engine_choice(parquet, "auto", cols, free=lambda: 63_999)
    assert large.engine == "streaming"
    assert large.reason == (
        "the 3 columns used take about 16000 bytes, more than 25 % of the 63999 bytes free"
    )
    assert engine_choice(parquet, "auto", cols, free=lambda: 64_000).engine == "polars"
    assert MEMORY_SHARE == 0.25
    assert str(large).startswith("streaming (the 3 columns used take about")
    # a LazyFrame is judged the same way; a frame in memory stays in memory
    lf = pl.scan_parquet(parquet)
    assert engine_choice(lf, "auto", cols, free=lambda: 63_999).engine == "streaming"
    frame = lf.collect()
    assert engine_choice(frame, "auto", cols, free=lambda: 1) == EngineChoice(
        "polars", "the data is in memory"
    )
    assert engine_choice(frame.to_pandas(), free=lambda: 1).engine == "polars"


def test_the_environment_bound_and_an_unknown_free_memory(
    parquet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cols = ["a", "b", "w"]
    monkeypatch.setenv("SDCKIT_STREAMING_BYTES", "15999")
    choice = engine_choice(parquet, "auto", cols, free=lambda: 100 * GB)
    assert choice.engine == "streaming" and "SDCKIT_STREAMING_BYTES" in choice.reason
    monkeypatch.setenv("SDCKIT_STREAMING_BYTES", "16000")
    assert engine_choice(parquet, "auto", cols, free=lambda: 1).engine == "polars"
    monkeypatch.delenv("SDCKIT_STREAMING_BYTES")
    unknown = engine_choice(parquet, "auto", cols, free=lambda: None)
    assert unknown.engine == "polars" and "free memory unknown" in unknown.reason


def test_forced_engines_are_respected_and_checked(parquet: Path) -> None:
    for engine in ("polars", "streaming"):
        assert engine_choice(parquet, engine, free=lambda: 1) == EngineChoice(engine, "asked for")
        assert choose_engine(pl.DataFrame({"a": [1]}), engine) == engine
    with pytest.raises(ParameterError, match="this data is in memory"):
        engine_choice(pl.DataFrame({"a": [1]}), "dask")
    with pytest.raises(ParameterError, match="'engine'"):
        engine_choice(parquet, "gpu")


def test_a_file_of_another_format_is_read_in_memory(tmp_path: Path) -> None:
    choice = engine_choice(tmp_path / "d.csv", free=lambda: 1)
    assert choice == EngineChoice("polars", "the file is not Parquet: it is read in memory")


def test_dask_and_spark_frames_stay_where_they_are(parquet: Path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.read_parquet(str(parquet))
    choice = engine_choice(frame, free=lambda: 1)
    assert choice == EngineChoice("dask", "the data is a Dask DataFrame: it stays on Dask")
    with pytest.raises(ParameterError, match="Dask DataFrame"):
        engine_choice(frame, "streaming")


def test_spark_frames_stay_on_spark() -> None:
    class DataFrame:  # the module of the class decides, not an import of pyspark
        __module__ = "pyspark.sql.dataframe"

    choice = engine_choice(DataFrame(), free=lambda: 1)
    assert choice == EngineChoice("spark", "the data is a Spark DataFrame: it stays on Spark")
    with pytest.raises(ParameterError, match="Spark DataFrame"):
        engine_choice(DataFrame(), "polars")


def test_free_memory_reads_the_machine() -> None:
    free = free_memory()
    assert free is not None and 0 < free < 2**50


def test_risk_on_engine_reports_its_choice(parquet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDCKIT_STREAMING_BYTES", "1")
    res = risk_on_engine(parquet, keys=["a", "b"], weight="w")
    assert res.engine == "streaming" and "more than SDCKIT_STREAMING_BYTES" in res.reason
    assert "engine 'streaming' (the 3 columns used" in "\n".join(res.summary().notes)


@pytest.mark.parametrize("kind", ["int", "uint8", "bool", "date", "text", "categorical", "enum"])
def test_the_lookup_equals_the_join_for_every_key_type(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys of every type that packs, with missing values: the streaming engine's lookup gives
    the records, in their order, the per-class columns the in-memory join gives."""
    from sdckit.engines import _lookup

    rng = np.random.default_rng(7)
    n = 3000
    raw = rng.integers(-3, 4, n)
    if kind == "int":
        col = pl.Series("k", raw * 1_000_003)
    elif kind == "uint8":
        col = pl.Series("k", (raw + 3).astype(np.uint8))
    elif kind == "bool":
        col = pl.Series("k", raw > 0)
    elif kind == "date":
        col = pl.Series("k", raw * 400).cast(pl.Date)
    else:
        col = pl.Series("k", [f"v{x}" for x in raw])
        if kind == "categorical":
            col = col.cast(pl.Categorical)
        elif kind == "enum":
            col = col.cast(pl.Enum([f"v{x}" for x in range(-3, 4)]))
    col = col.scatter(np.arange(0, n, 11), None)  # missing values: wildcards
    frame = pl.DataFrame(
        {"k": col, "g": rng.integers(0, 6, n), "w": rng.uniform(1, 50, n)}
    ).with_row_index("rid")
    calls = []
    monkeypatch.setattr(_lookup.ClassLookup, "__init__", _spy(_lookup.ClassLookup.__init__, calls))
    lookup = risk_on_engine(frame.lazy(), keys=["k", "g"], weight="w", engine="streaming")
    assert calls, "the streaming engine did not use the lookup"
    joined = risk_on_engine(frame, keys=["k", "g"], weight="w", engine="polars")
    a, b = lookup.records.collect(), joined.records
    assert a.columns == b.columns
    assert a["rid"].to_list() == list(range(n))  # the records' order
    np.testing.assert_array_equal(a["fk"].to_numpy(), b["fk"].to_numpy())
    assert a["fk"].min() < a["fk"].max()  # classes of several sizes
    for name in ("Fk_hat", "risk"):  # weights summed in another order: the last bit
        np.testing.assert_allclose(a[name].to_numpy(), b[name].to_numpy(), rtol=1e-12)


def _spy(init, calls):  # type: ignore[no-untyped-def]
    def wrapped(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        init(self, *args, **kwargs)

    return wrapped


def test_float_keys_keep_the_join() -> None:
    from sdckit.engines._lookup import packed_codes

    frame = pl.DataFrame({"x": [0.5, None, 1.5], "k": [1, 2, 3]})
    assert packed_codes(frame.schema, ["x", "k"], frame) is None
    codes = packed_codes(frame.schema, ["k"], frame)
    assert codes is not None and codes[1].tolist() == [1, 2, 3]  # value - min + 1; 0: missing
    wide = pl.DataFrame({"a": [0, 2**40], "b": [0, 2**40], "c": [0, 2**40]})
    assert packed_codes(wide.schema, ["a", "b", "c"], wide) is None  # the product passes 2**62
