"""Record-level methods within strata, in parallel processes (shared by the masking methods).

Local suppression, microaggregation, PRAM and noise can work within the strata of a file (a
column whose values split the records into sub-files protected separately).  This module gives
them one way of doing so:

* :func:`split` finds the records of each stratum (strata numbered in the sorted order of the
  column's values, records in file order), so that results go back to their positions;
* :func:`stratum_seeds` derives one :class:`numpy.random.SeedSequence` per stratum from the
  method's seed: stratum ``s`` always gets the same stream, whatever the number of workers and
  whatever the order in which strata finish, so a parallel run gives the same output as a serial
  one (bit for bit);
* :func:`run` calls a function once per stratum, in the calling process (``n_jobs=1``) or in a
  pool of processes (:class:`concurrent.futures.ProcessPoolExecutor`, started with
  ``forkserver`` where available, else ``spawn``: never a bare ``fork`` of a process whose
  polars or numba threads may be running), returns the results in stratum order, and reports
  progress over strata.

Progress: a callable ``progress(done, total)`` (strata finished, strata in all) is called in
the calling process after each stratum.  It is a call argument, ``progress=`` of the ``apply``
of the methods that work within strata (:class:`ReportsStrata`), passed down to :func:`run`;
never a parameter of the method (it says how far the work is, not how to do it).

``n_jobs``: the number of processes, ``-1`` for one per available core; the declared parameter
:data:`N_JOBS` is shared by the methods.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._workers import AllCores, n_workers
from sdckit.errors import DataError, ParameterError
from sdckit.protection import Integer, Param

__all__ = [
    "N_JOBS",
    "ReportsStrata",
    "Strata",
    "base_sequence",
    "n_workers",
    "run",
    "split",
    "stratum_seeds",
    "stream_seed",
]

Progress = Callable[[int, int], object]


#: The declared ``n_jobs`` parameter of the methods that work within strata.
N_JOBS = Param(
    Integer(minimum=1),
    AllCores(),
    help="processes working on the strata at the same time (-1: one per core); "
    "the output does not depend on it",
)


# ------------------------------------------------------------------------------ strata
@dataclass(frozen=True)
class Strata:
    """The strata of a file: the stratum of every record and the records of every stratum.

    Attributes
    ----------
    codes : numpy.ndarray
        Stratum number of each record (``0 .. n_strata - 1``, in the sorted order of the
        values).
    levels : list
        The value of each stratum.
    rows : list of numpy.ndarray
        Positions of the records of each stratum, in file order.
    """

    codes: np.ndarray
    levels: list[Any]
    rows: list[np.ndarray]

    @property
    def n_strata(self) -> int:
        """Number of strata."""
        return len(self.rows)

    def sizes(self) -> np.ndarray:
        """Number of records of each stratum."""
        return np.array([len(r) for r in self.rows], dtype=np.int64)

    def position(self) -> np.ndarray:
        """Position of each record within its stratum."""
        out = np.empty(len(self.codes), dtype=np.int64)
        for rows in self.rows:
            out[rows] = np.arange(len(rows))
        return out


def split(values: pl.Series | np.ndarray, name: str = "strata") -> Strata:
    """The strata defined by a column (a polars Series) or by stratum codes (``0..S-1``).

    Raises
    ------
    DataError
        The column has missing values (every record needs a stratum).
    """
    if isinstance(values, pl.Series):
        codes, levels = encode_column(values)
        level_list = levels.to_list()
        if (codes < 0).any():
            raise DataError(
                f"The strata column {name!r} has missing values; every record needs a stratum."
            )
    else:
        codes = np.asarray(values)
        level_list = list(range(int(codes.max(initial=-1)) + 1))
    codes = codes.astype(np.int64, copy=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=len(level_list)))))
    rows = [order[bounds[s] : bounds[s + 1]] for s in range(len(level_list))]
    return Strata(codes=codes, levels=level_list, rows=rows)


# ------------------------------------------------------------------------------ seeds
def base_sequence(seed: object) -> np.random.SeedSequence:
    """The seed sequence the strata's streams are derived from.

    An integer gives a fixed sequence; a Generator gives one drawn from it (so its state
    advances, as when it is used directly); None gives fresh entropy.
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise ParameterError(
            "The 'seed' parameter must be a non-negative integer or a numpy.random.Generator."
        )
    return np.random.SeedSequence(int(seed))


def stratum_seeds(seed: object, n_strata: int, stream: int = 0) -> list[np.random.SeedSequence]:
    """One seed sequence per stratum: stratum ``s`` gets spawn key ``(stream, s)``.

    The sequence of stratum ``s`` depends only on the seed, ``stream`` and ``s`` (not on the
    number of strata, of workers, or on the order in which strata finish).  ``stream`` tells
    apart several per-stratum passes of one method.
    """
    base = seed if isinstance(seed, np.random.SeedSequence) else base_sequence(seed)
    return [
        np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, stream, s))
        for s in range(n_strata)
    ]


def stream_seed(seed: np.random.SeedSequence, stream: int) -> np.random.SeedSequence:
    """A sequence for work done once for the whole file (spawn key ``(stream,)``)."""
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, stream))


# ------------------------------------------------------------------------------ progress
class ReportsStrata:
    """Mixin: ``apply(data, *, progress=None, **roles)`` reports progress over strata."""

    def apply(self, data: Any, *, progress: Progress | None = None, **roles: Any) -> Any:
        """Protect ``data`` (see :meth:`sdckit.protection.ProtectionMethod.apply`).

        ``progress(done, total)``, if given, is called after each stratum is done.
        """
        if progress is not None and not callable(progress):
            raise ParameterError(
                "The 'progress' argument must be a callable progress(done, total)."
            )
        return self._protect(data, roles, progress=progress)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ running
def _context() -> Any:
    """``forkserver`` where there is one (its server imports sdckit once, and every worker is a
    fork of it, quick to start), else ``spawn``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sdckit.masking"])
    return ctx


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start worker processes without running the caller's main script in them again.

    ``spawn`` and ``forkserver`` workers re-run ``__main__`` (unless it is guarded by
    ``if __name__ == "__main__"``) so that functions defined there can be found; the work sent
    here is made of sdckit's own functions and data, so the main script is not needed, and a
    script without the guard would start workers without end.
    """
    main = sys.modules.get("__main__")
    saved: dict[str, Any] = {}
    if main is not None:
        for name in ("__file__", "__spec__"):
            if name in vars(main):
                saved[name] = vars(main)[name]
        main.__spec__ = None
        if "__file__" in saved:
            del main.__file__
    try:
        yield
    finally:
        if main is not None:
            for name, value in saved.items():
                setattr(main, name, value)


def run(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    n_jobs: object = 1,
    *,
    done: int = 0,
    total: int | None = None,
    weights: Sequence[float] | None = None,
    progress: Progress | None = None,
) -> list[Any]:
    """``[fn(*task) for task in tasks]``, in ``n_jobs`` processes when more than one.

    ``fn`` must be a module-level function and the tasks picklable.  The results come back in
    task order whatever the order in which they finish; if tasks fail, the error of the first
    failing task in task order is raised (as a serial run would).  ``progress``, if given, is
    called in this process with ``(done + tasks finished, total)`` (``total`` defaults to
    ``done`` plus the number of tasks: give both when one method makes several passes).
    ``weights`` (the records of each stratum) orders the submission, largest first, to balance
    the workers.
    """
    n = len(tasks)
    total = done + n if total is None else total
    workers = n_workers(n_jobs, n)
    results: list[Any] = [None] * n
    if workers <= 1 or n <= 1:
        for i, task in enumerate(tasks):
            results[i] = fn(*task)
            if progress is not None:
                progress(done + i + 1, total)
        return results
    order = range(n) if weights is None else np.argsort(-np.asarray(weights), kind="stable")
    failed: dict[int, BaseException] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        with _main_hidden():  # (these submissions start the workers)
            futures = {pool.submit(fn, *tasks[int(i)]): int(i) for i in order}
        finished = 0
        for future in as_completed(futures):
            i = futures[future]
            error = future.exception()
            if error is not None:  # (the others still run: the first failure in task order
                failed[i] = error  # is raised, as in a serial run)
                continue
            results[i] = future.result()
            finished += 1
            if progress is not None:
                progress(done + finished, total)
    if failed:
        raise failed[min(failed)]
    return results
