"""Long work off the request: one background task at a time, with progress and a real cancel.

A :class:`Task` runs a function ``fn(task)`` in a thread.  ``task.progress(stage, done, total)``
records where the work is (the page polls it) and raises :class:`Cancelled` once the user has
pressed *Cancel*: the work stops at its next checkpoint, and the runner catches the exception
and leaves the state as it was before the task.

Work that has no checkpoints of its own and can run for minutes (secondary suppression by a
mixed-integer model, SUDA2) runs in a child process (:func:`run_in_process`): *Cancel*
terminates the child, so the work really stops, and the thread returns at once.  The children
come from a fork server that has imported sdckit once, so starting one costs milliseconds.

One user per process: a second task is refused while one runs (the page says so).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdckit.errors import SdcError

__all__ = ["Busy", "Cancelled", "Task", "TaskManager", "run_in_process", "warm_up"]

log = logging.getLogger("sdckit.ui")

Progress = Callable[[str, int, int], None]


class Cancelled(Exception):
    """Raised by the progress callback once the user has cancelled the task."""


class Busy(SdcError):
    """Another task is running (one task at a time)."""


@dataclass
class Task:
    """One piece of background work and where it is.

    Attributes
    ----------
    id : str
    label : str
        What the work is ("Applying local suppression").
    next_url : str
        The page to show when the work ends.
    state : {"running", "done", "failed", "cancelled"}
    stage, done, total
        The last progress report (``total`` 0: no measure of progress).
    error : str or None
        The message of the error that stopped it (an SdcError's own words).
    """

    label: str
    next_url: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: str = "running"
    stage: str = "starting"
    done: int = 0
    total: int = 0
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    result: Any = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def running(self) -> bool:
        """Whether the work goes on."""
        return self.state == "running"

    @property
    def cancel_event(self) -> threading.Event:
        """Set once the user pressed Cancel (for :func:`run_in_process`)."""
        return self._cancel

    @property
    def cancel_requested(self) -> bool:
        """Whether the user pressed Cancel."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Ask the work to stop (at its next checkpoint, or at once for a child process)."""
        self._cancel.set()

    def progress(self, stage: str, done: int, total: int) -> None:
        """Record the progress; raise :class:`Cancelled` if the user cancelled."""
        if self._cancel.is_set():
            raise Cancelled()
        self.stage, self.done, self.total = str(stage), int(done), int(total)

    def elapsed(self) -> float:
        """Seconds since the start (until the end once finished)."""
        end = self.finished if self.finished is not None else time.monotonic()
        return end - self.started

    def as_json(self) -> dict[str, Any]:
        """What the page polls."""
        return {
            "id": self.id,
            "label": self.label,
            "state": self.state,
            "stage": self.stage,
            "done": self.done,
            "total": self.total,
            "error": self.error,
            "elapsed": round(self.elapsed(), 2),
            "next": self.next_url,
        }


class TaskManager:
    """Runs one :class:`Task` at a time in a background thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] = {}
        self.current: Task | None = None

    def get(self, task_id: str) -> Task | None:
        """The task with this id (None if unknown)."""
        return self._tasks.get(task_id)

    @property
    def busy(self) -> bool:
        """Whether a task is running."""
        return self.current is not None and self.current.running

    def start(
        self,
        label: str,
        fn: Callable[[Task], Any],
        next_url: str,
        on_done: Callable[[Task], None] | None = None,
    ) -> Task:
        """Start ``fn(task)`` in a thread; raise :class:`Busy` if a task is running.

        ``fn`` reports its progress with ``task.progress(stage, done, total)``, which raises
        :class:`Cancelled` once the user cancelled."""
        with self._lock:
            if self.busy:
                raise Busy(
                    f"Wait for '{self.current.label}' to finish or cancel it first."  # type: ignore[union-attr]
                )
            task = Task(label=label, next_url=next_url)
            self._tasks[task.id] = task
            self.current = task
        thread = threading.Thread(
            target=self._run, args=(task, fn, on_done), name=f"sdckit-ui-{task.id}", daemon=True
        )
        thread.start()
        return task

    def _run(
        self, task: Task, fn: Callable[[Task], Any], on_done: Callable[[Task], None] | None
    ) -> None:
        try:
            task.result = fn(task)
            task.state = "cancelled" if task.cancel_requested else "done"
        except Cancelled:
            task.state = "cancelled"
        except SdcError as exc:
            task.state, task.error = "failed", str(exc)
        except Exception as exc:  # an unexpected failure: say what, log the trace (no data)
            task.state = "failed"
            task.error = f"Unexpected error ({type(exc).__name__}); see the console log."
            log.error("task %s failed:\n%s", task.label, _trace_without_values(exc))
        finally:
            task.finished = time.monotonic()
            if on_done is not None:
                try:
                    on_done(task)
                except Exception as exc:  # pragma: no cover - defensive
                    log.error("after task %s: %s", task.label, type(exc).__name__)
            log.info("task %s: %s in %.2f s", task.label, task.state, task.elapsed())

    def wait(self, task: Task, timeout: float = 60.0) -> Task:
        """Block until ``task`` ends (for tests and the benchmark)."""
        end = time.monotonic() + timeout
        while task.running and time.monotonic() < end:
            time.sleep(0.01)
        return task


def _trace_without_values(exc: BaseException) -> str:
    """The traceback's frames (files, lines, functions) without the exception's message,
    which may quote a data value."""
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f"  {f.filename}:{f.lineno} in {f.name}" for f in frames]
    return "\n".join([*lines, f"{type(exc).__name__}"])


# ------------------------------------------------------------------ child processes
_CONTEXT: Any = None
_CONTEXT_LOCK = threading.Lock()
_PRELOAD = ["sdckit.ui._work", "sdckit.tables", "sdckit.risk"]


def _context() -> Any:
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            methods = mp.get_all_start_methods()
            if "forkserver" in methods:
                ctx = mp.get_context("forkserver")
                ctx.set_forkserver_preload(_PRELOAD)
            else:  # pragma: no cover - Windows
                ctx = mp.get_context("spawn")
            _CONTEXT = ctx
        return _CONTEXT


def warm_up() -> None:
    """Start the fork server in the background (it imports sdckit once)."""

    def start() -> None:
        try:
            run_in_process("sdckit.ui._work:noop", (), lambda *a: None, None)
        except Exception as exc:  # pragma: no cover - the first real task will say it
            log.warning("the worker process could not start (%s)", type(exc).__name__)

    threading.Thread(target=start, name="sdckit-ui-warm-up", daemon=True).start()


def _child(conn: Any, target: str, args: tuple[Any, ...]) -> None:
    import importlib

    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)

    def progress(stage: str, done: int, total: int) -> None:
        conn.send(("progress", stage, done, total))

    try:
        conn.send(("result", fn(*args, progress=progress)))
    except SdcError as exc:
        conn.send(("sdc_error", type(exc).__name__, str(exc)))
    except Exception as exc:
        conn.send(("error", type(exc).__name__, _trace_without_values(exc)))
    finally:
        conn.close()


def run_in_process(
    target: str,
    args: tuple[Any, ...],
    progress: Progress,
    cancel: threading.Event | None = None,
    *,
    poll: float = 0.05,
) -> Any:
    """Run ``module:function(*args, progress=...)`` in a child process and return its result.

    The child's progress reports are passed to ``progress`` (which raises :class:`Cancelled`
    when the task is cancelled); on cancellation the child is terminated at once.

    Raises
    ------
    SdcError
        The child's SdcError, with its message.
    Cancelled
    """
    import sdckit.errors as errors

    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, target, args), daemon=True)
    proc.start()
    child.close()
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            if parent.poll(poll):
                try:
                    message = parent.recv()
                except EOFError:
                    raise SdcError("The worker process ended without a result.") from None
                kind = message[0]
                if kind == "progress":
                    progress(*message[1:])
                    continue
                if kind == "result":
                    return message[1]
                if kind == "sdc_error":
                    cls = getattr(errors, message[1], SdcError)
                    raise cls(message[2])
                log.error("worker failed:\n%s", message[2])
                raise SdcError(f"Unexpected error in the worker ({message[1]}).")
            if not proc.is_alive() and not parent.poll():
                raise SdcError("The worker process ended without a result.")
    finally:
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
            if proc.is_alive():  # pragma: no cover - SIGTERM ignored
                proc.kill()
                proc.join(1.0)
        parent.close()
