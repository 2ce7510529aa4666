"""What a run cost and where it ran: stage timings, peak memory per stage, the environment.

Each fold is timed stage by stage (data, train, predict, validate, score). On Linux the peak
resident memory of the process is reset before each stage (``/proc/self/clear_refs``), so the
peak recorded for a stage is that stage's own; elsewhere it is the peak of the process so far.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import os
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from evaluation.participant import PeakMemory

#: Libraries whose versions can change a run's numbers; recorded with every run.
LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "scikit-learn", "gensim", "reclist")


@dataclass
class Stage:
    """Seconds one stage took and the peak resident memory during it (None if unknown)."""

    seconds: float = 0.0
    peak_rss_bytes: int | None = None


@dataclass
class FoldProfile:
    """The stages of one fold, in the order they ran."""

    stages: dict[str, Stage] = field(default_factory=dict)
    memory: PeakMemory = field(default_factory=lambda: PeakMemory())

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the ``with`` block as stage ``name`` and record its peak memory."""
        self.memory.reset()
        t0 = time.perf_counter()
        yield
        self.stages[name] = Stage(time.perf_counter() - t0, self.memory.read())

    def seconds(self) -> float:
        """Total seconds of the recorded stages."""
        return sum(s.seconds for s in self.stages.values())

    def to_dict(self) -> dict:
        """``{stage: {"seconds", "peak_rss_mib"}}``, as the fold's results file records it."""
        return {name: {"seconds": s.seconds, "peak_rss_mib": _mib(s.peak_rss_bytes)}
                for name, s in self.stages.items()}


def _mib(n: int | None) -> float | None:
    """``n`` bytes in MiB, rounded to 0.1; None stays None."""
    return None if n is None else round(n / 2**20, 1)


def environment() -> dict:
    """Describe where a run ran.

    Returns
    -------
    dict
        ``{"python", "platform", "machine", "cpu_count", "libraries"}``; ``libraries`` maps
        each of ``LIBRARIES`` to its installed version, or None when it is not installed.
    """
    libs: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            libs[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(), "libraries": libs}
