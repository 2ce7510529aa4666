"""The peak resident memory of the process that trains and predicts.

On Linux the peak (VmHWM) is reset with ``/proc/self/clear_refs``, so that a stage's peak is
its own; elsewhere it is the peak of the process so far (``getrusage``).
"""

from __future__ import annotations

import sys


class PeakMemory:
    """Peak resident memory of this process per stage (Linux: VmHWM, reset between stages)."""

    def __init__(self) -> None:
        self.resettable = self._reset()

    @staticmethod
    def _reset() -> bool:
        """Whether the peak counter could be reset (it is, when it can)."""
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # resets the peak RSS (VmHWM) counter
            return True
        except OSError:
            return False

    def reset(self) -> None:
        """Start a new peak, where the platform allows it."""
        if self.resettable:
            self._reset()

    @staticmethod
    def read() -> int | None:
        """The peak resident memory in bytes since the last reset; None when unknown."""
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        try:
            import resource
        except ImportError:  # Windows has no resource module
            return None
        try:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        except OSError:
            return None
        # ru_maxrss is in bytes on macOS and in KiB elsewhere
        return rss if sys.platform == "darwin" else rss * 1024
