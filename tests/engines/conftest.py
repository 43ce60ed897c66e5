"""Fixtures of the engine tests: the reference file and a random file with missing keys.

The helpers live in ``engine_helpers`` (this folder is put on ``sys.path`` for them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_helpers import random_frame


@pytest.fixture(scope="session")
def testdata(shared_data: Path) -> pl.DataFrame:
    """sdcMicro's testdata with a row number (engines need not keep the row order)."""
    df = pl.read_csv(shared_data / "testdata.csv", null_values="NA")
    return df.with_row_index("rid").with_columns(pl.col("rid").cast(pl.Int64))


@pytest.fixture(scope="session")
def random_data() -> pl.DataFrame:
    """The random file with missing key values (see ``engine_helpers.random_frame``)."""
    return random_frame()


@pytest.fixture(scope="session")
def census_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated census (4,000 persons, seeded) as Parquet in row groups of 500 records,
    so that Dask and Spark read it as several partitions; ``rid`` is the row number.

    The weights are rounded to quarters and the incomes to whole numbers: their sums and
    products are then exact in any order, so the engines' results can be compared for equality
    (partitions add in another order than the in-memory path)."""
    from sdckit.datasets import generate_census

    frame = generate_census(4_000, seed=30).with_row_index("rid")
    path = tmp_path_factory.mktemp("census") / "census.parquet"
    frame.with_columns(
        pl.col("rid").cast(pl.Int64),
        (pl.col("weight") * 4).round() / 4,
        pl.col("income").round(),
    ).write_parquet(path, row_group_size=500)
    return path
