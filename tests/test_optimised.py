"""The verification tests hold under ``python -O`` (which removes bare ``assert``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_verification_errors_are_raised_under_python_O() -> None:
    proc = subprocess.run(
        [sys.executable, "-O", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s",
         "tests/masking/test_verification.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "optimize flag: 1" in proc.stdout
    assert "5 passed" in proc.stdout
