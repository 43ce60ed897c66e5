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
