"""Helpers of the engine tests: cases, a random file with missing keys, the comparisons."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.risk import assess_risk
from sdckit.tables import Table

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
RANDOM_KEYS = ["ka", "kb", "kc", "kd"]

#: The per-record columns compared with the in-process assessment.
RISK_COLUMNS = ("fk", "Fk_hat", "risk")


def random_frame(n: int = 3000, seed: int = 12) -> pl.DataFrame:
    """Random keys with missing values (integer, text and float keys, NaN and -0.0 included),
    weights that are multiples of 1/4 (their sums are exact in any order), a sensitive
    variable with missing values and a household id."""
    rng = np.random.default_rng(seed)
    ka = rng.integers(1, 4, n).astype(np.float64)
    kb = rng.choice(np.array(["x", "y", "z"]), n)
    kc = rng.integers(0, 3, n).astype(np.float64)
    kc[kc == 0] = -0.0
    kd = rng.integers(1, 6, n)
    frame = pl.DataFrame(
        {
            "rid": np.arange(n, dtype=np.int64),
            "ka": ka,
            "kb": kb,
            "kc": kc,
            "kd": kd,
            "w": rng.integers(4, 800, n) / 4.0,
            "disease": rng.choice(np.array(["a", "b", "c", "d"]), n),
            "hh": rng.integers(0, n // 3, n),
        }
    )
    miss = rng.random((n, 5))
    return frame.with_columns(
        pl.when(pl.lit(miss[:, 0] < 0.08)).then(None).otherwise(pl.col("ka")).alias("ka"),
        pl.when(pl.lit(miss[:, 1] < 0.05)).then(None).otherwise(pl.col("kb")).alias("kb"),
        pl.when(pl.lit(miss[:, 2] < 0.04)).then(float("nan")).otherwise(pl.col("kc")).alias("kc"),
        pl.when(pl.lit(miss[:, 3] < 0.06)).then(None).otherwise(pl.col("kd")).alias("kd"),
        pl.when(pl.lit(miss[:, 4] < 0.1)).then(None).otherwise(pl.col("disease")).alias("disease"),
    )


CASES = {
    "testdata": {"keys": TESTDATA_KEYS, "weight": "sampling_weight", "household": "ori_hid"},
    "testdata_sensitive": {
        "keys": TESTDATA_KEYS,
        "weight": "sampling_weight",
        "sensitive": ["hhcivil", "age"],
    },
    "random": {"keys": RANDOM_KEYS, "weight": "w", "household": "hh", "sensitive": ["disease"]},
    "random_unweighted": {"keys": RANDOM_KEYS, "missing": "wildcard"},
    "random_alpha": {"keys": RANDOM_KEYS, "weight": "w", "alpha": 0.5},
    "testdata_exact": {"keys": TESTDATA_KEYS, "weight": "sampling_weight", "method": "exact"},
    "random_category": {"keys": RANDOM_KEYS, "weight": "w", "missing": "category"},
}


def case_data(case: str, testdata: pl.DataFrame, random_data: pl.DataFrame) -> pl.DataFrame:
    return testdata if case.startswith("testdata") else random_data


def assert_same_risk(result, frame: pl.DataFrame, records: pl.DataFrame, **roles) -> None:
    """The engine's figures and per-record columns against ``assess_risk`` in memory.

    ``fk`` and ``Fk_hat`` must be identical, every risk within 1e-12 (relative to 1).
    """
    ref = assess_risk(frame, **roles)
    want = ref.figures()
    got = result.figures()
    assert set(got) == set(want)
    for name, value in want.items():
        if isinstance(value, int):
            assert got[name] == value, name
        else:
            assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True), name
    records = records.sort("rid")
    assert records.height == frame.height
    assert records.get_column("rid").to_list() == frame.get_column("rid").to_list()
    per_record = ref.to_frame()
    for name in per_record.columns:
        a = records.get_column(name).to_numpy().astype(np.float64)
        b = per_record.get_column(name).to_numpy().astype(np.float64)
        if name in ("fk", "Fk_hat") or name.startswith("l_distinct") or "recursive" in name:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=name)
    # the input columns come back unchanged (NaN and null alike: pandas has only NaN)
    for name in frame.columns:
        a, b = records.get_column(name), frame.get_column(name)
        if b.dtype.is_float():
            a, b = a.cast(pl.Float64).fill_nan(None), b.fill_nan(None)
        assert a.equals(b, check_names=False, check_dtypes=False), name


def java_home() -> str | None:
    """JAVA_HOME, or the Java found on PATH (Debian's openjdk installed by .ci/run)."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(java).resolve().parents[1])


WATER = {"Total": ["piped", "other"], "piped": ["1", "2", "3"], "other": ["4", "5", "6", "7", "9"]}

TABLE_CASES = {
    "testdata_magnitude": (
        "testdata",
        {"dimensions": {"urbrur": None, "water": WATER, "sex": None}, "value": "income",
             "weight": "sampling_weight"},
    ),
    "testdata_count": ("testdata", {"dimensions": ["roof", "walls"]}),
    "random_category": (
        "random",
        {"dimensions": {"kb": None, "kd": {"Total": ["1", "2", "3", "4", "5"]}}, "value": "w",
             "missing": "category"},
    ),
    "random_drop": ("random", {"dimensions": ["kb", "ka"], "weight": "w", "missing": "drop"}),
}  # fmt: skip


def assert_same_table(result, frame: pl.DataFrame, args: dict) -> None:
    """The engine's cells against Table.from_microdata on the same records (exact sums)."""
    want = Table.from_microdata(frame, **args)
    got = result.to_table()
    assert got.dimensions == want.dimensions
    assert [h.codes for h in got.hierarchies] == [h.codes for h in want.hierarchies]
    np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(got.n_contributors, want.n_contributors)
    np.testing.assert_array_equal(got.top, want.top)
    np.testing.assert_array_equal(got.weights, want.weights)
    np.testing.assert_array_equal(got.status, want.status)
    assert (got.kind, got.weighted, got.records_dropped) == (
        want.kind,
        want.weighted,
        want.records_dropped,
    )
    cells = result.cells
    assert cells.height == want.n_cells
    np.testing.assert_array_equal(cells.get_column("value").to_numpy(), want.values)


def spark_session(app: str, **config: str):
    """A local[2] SparkSession for a test module (generator for a fixture: yields it, stops
    it).  Skips where there is no Java, except in CI (``.ci/run`` installs it: a missing Java
    there is a failure).  The workers run this Python (they import sdckit and numba); ``config``
    adds Spark settings to the small defaults."""
    import sys

    if java_home() is None and not os.environ.get("CI"):  # pragma: no cover - CI has Java
        pytest.skip("PySpark needs a Java runtime (.ci/run installs openjdk)")
    sql = pytest.importorskip("pyspark.sql", reason="the dev extra installs pyspark")
    home = java_home()
    if home is not None:
        os.environ.setdefault("JAVA_HOME", home)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "1g",
        **config,
    }
    builder = sql.SparkSession.builder.master("local[2]").appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def released_in_memory(job_file: Path) -> tuple[object, object, pl.DataFrame]:
    """The in-memory runner of ``job_file`` after its steps, its release, and the released
    file as written (records in the released order): what an engine job must equal."""
    from sdckit.jobs import load_job
    from sdckit.jobs.runner import Runner

    runner = Runner.from_job(load_job(job_file, writes=False, output_folder=True))
    runner.apply_job_steps()
    released = runner.release()
    want = released.frame if released.order is None else released.frame[released.order]
    return runner, released, want
