"""Shared test fixtures: paths to the reference data in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("SDCKIT_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Directory of the reference data sets (read-only)."""
    if not SHARED_DATA.is_dir():  # pragma: no cover - CI always has it
        pytest.skip("../shared/data is not available")
    return SHARED_DATA
