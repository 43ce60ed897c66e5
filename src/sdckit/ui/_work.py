"""The work done in child processes (see :func:`sdckit.ui._tasks.run_in_process`).

Each function takes picklable arguments and a ``progress(stage, done, total)`` keyword and
returns a picklable result.  They hold no state: cancelling terminates the process.
"""

from __future__ import annotations

from typing import Any

__all__ = ["noop", "pause", "suda2_scores"]


def noop(*, progress: Any) -> None:
    """Nothing (starts the fork server)."""
    return None


def pause(seconds: float, *, progress: Any) -> None:
    """Wait ``seconds``, reporting progress (shows that cancelling stops a child at once)."""
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        progress("pausing", 0, 1)
        time.sleep(0.05)


def suda2_scores(frame: Any, keys: list[str], *, progress: Any) -> Any:
    """SUDA2 of the key variables (missing values match any value, as the risk measures)."""
    from sdckit.risk import suda2

    progress("SUDA2: minimal sample uniques", 0, 1)
    result = suda2(frame, keys=keys, missing="wildcard")
    progress("SUDA2", 1, 1)
    return result
