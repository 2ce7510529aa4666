"""NumPy's huge-page advice, switched off around the harness's own work where it stalls.

NumPy advises the kernel to back each large array with transparent huge pages
(``madvise(MADV_HUGEPAGE)``). Where the kernel's huge-page defrag setting is ``madvise`` or
``defer+madvise`` (the default of many distributions), every such allocation may first compact
memory, synchronously, to find free 2 MiB pages. The harness allocates and frees large arrays
all the time (each fold's training frame, the scoring's temporaries): on a 2-core machine
the compaction made a full-scale run 13-19 % slower, for no gain, since those arrays are read
once or twice. :func:`no_hugepage_advice` switches the advice off for a block of the
harness's own work and puts NumPy's setting back afterwards; a participant's model trains and
predicts with NumPy's setting unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

#: The kernel's transparent huge page defrag setting (the chosen value is in brackets).
DEFRAG_FILE = Path("/sys/kernel/mm/transparent_hugepage/defrag")

#: Defrag settings under which an ``madvise``'d allocation compacts memory synchronously.
STALLING = ("madvise", "defer+madvise")


def advice_stalls(defrag_file: Path = DEFRAG_FILE) -> bool:
    """Whether NumPy's huge-page advice makes allocations compact memory synchronously."""
    try:
        text = defrag_file.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return False  # not Linux, or no transparent huge pages
    chosen = [word.strip("[]") for word in text.split() if word.startswith("[")]
    return bool(chosen) and chosen[0] in STALLING


def _numpy_switch():
    """NumPy's (getter, setter) of its huge-page advice; None where this NumPy has none."""
    try:
        from numpy._core import multiarray
    except ImportError:  # pragma: no cover - NumPy 1.x names it numpy.core
        return None
    get = getattr(multiarray, "_get_madvise_hugepage", None)
    set_ = getattr(multiarray, "_set_madvise_hugepage", None)
    return (get, set_) if callable(get) and callable(set_) else None


_STALLS = advice_stalls()


@contextlib.contextmanager
def no_hugepage_advice() -> Iterator[None]:
    """Within the block, NumPy gives no huge-page advice when that advice would stall.

    Nothing changes where it would not stall (another defrag setting, no transparent huge
    pages, another OS) or where this NumPy has no such switch.
    """
    switch = _numpy_switch() if _STALLS else None
    if switch is None:
        yield
        return
    get, set_ = switch
    before = bool(get())
    set_(False)
    try:
        yield
    finally:
        set_(before)
