"""A process's true peak resident memory, for the benchmarks of whole runs.

The runner resets the kernel's peak counter (``VmHWM``) at each stage, so a thread samples
``VmRSS`` every few milliseconds and the largest of the samples and of the ``VmHWM`` readings
is the peak. Used by ``benchmarks/bench_harness.py`` and ``benchmarks/bench_baselines.py``.
"""

from __future__ import annotations

import threading


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class PeakSampler:
    """The process's peak resident memory, whatever resets the kernel's counter meanwhile."""

    def __init__(self, every: float = 0.005) -> None:
        self.peak_kib = 0
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read()
            self._stop.wait(self._every)

    def read(self) -> int:
        """Take one sample now (also of ``VmHWM``, the peak since the last reset)."""
        self.peak_kib = max(self.peak_kib, _status_kib("VmRSS"), _status_kib("VmHWM"))
        return self.peak_kib

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.read() * 1024
