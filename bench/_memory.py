"""Peak resident memory of the benchmark process while a block runs (shared by the scripts)."""

from __future__ import annotations

import threading
import time

import psutil

__all__ = ["PeakMemory"]


class PeakMemory:
    """Peak resident memory (RSS) of this process while the block runs, sampled every 5 ms."""

    def __enter__(self) -> PeakMemory:
        self.process = psutil.Process()
        self.start = self.process.memory_info().rss
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)

    @property
    def extra_mb(self) -> float:
        return (self.peak - self.start) / 2**20
