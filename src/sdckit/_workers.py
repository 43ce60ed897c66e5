"""How many workers a method may use: the ``n_jobs`` convention shared by the packages.

``n_jobs`` is a positive integer or ``-1`` for one worker per core this process may run on.
Methods that work in parallel (strata in processes, sub-tables in threads) give the same
output whatever the number of workers.
"""

from __future__ import annotations

import os

import numpy as np

from sdckit._constraints import Integer
from sdckit.errors import ParameterError

__all__ = ["AllCores", "available_cores", "n_workers"]


class AllCores(Integer):
    """The integer -1: one worker per available core."""

    def __init__(self) -> None:
        super().__init__(minimum=-1, maximum=-1)

    def describe(self) -> str:
        return "-1 (every core)"

    def out_of_range_example(self) -> object | None:
        return -2


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def n_workers(n_jobs: object, n_tasks: int | None = None) -> int:
    """The number of workers for ``n_jobs`` (-1: the available cores), at most ``n_tasks``.

    Examples
    --------
    >>> n_workers(8, n_tasks=3)
    3
    >>> n_workers(-1) == available_cores()
    True
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer):
        raise ParameterError("The 'n_jobs' parameter must be a positive integer or -1.")
    jobs = int(n_jobs)
    if jobs == -1:
        jobs = available_cores()
    elif jobs < 1:
        raise ParameterError(f"The 'n_jobs' parameter must be >= 1 or -1; got {jobs}.")
    if n_tasks is not None:
        jobs = min(jobs, max(n_tasks, 1))
    return max(jobs, 1)
