"""Warnings shown once per process: a deprecated spelling, a difference from 2022.

A 2022 notebook calls the old names in loops and once per fold; the warning that says what
the modern spelling is helps once, not four hundred times. The runner (its deprecated
keywords) and the 2022/2023 compatibility layer share this record.
"""

from __future__ import annotations

import threading
import warnings

_SEEN: set[str] = set()
_LOCK = threading.Lock()


def warn_once(kind: str, message: str, category: type[Warning] = DeprecationWarning,
              stacklevel: int = 2) -> bool:
    """Warn ``message`` unless a warning of ``kind`` was already given in this process.

    Parameters
    ----------
    kind : str
        What the warning is about (e.g. ``"module:evaluation.EvalRSRunner"``).
    message : str
        The text: what is deprecated or different, and the modern spelling.
    category : type of Warning
        ``DeprecationWarning`` for an old spelling, a ``UserWarning`` for a difference.
    stacklevel : int
        As for :func:`warnings.warn`, counted from the caller of ``warn_once``.

    Returns
    -------
    bool
        Whether the warning was given now.
    """
    with _LOCK:
        if kind in _SEEN:
            return False
        _SEEN.add(kind)
    warnings.warn(message, category, stacklevel=stacklevel + 1)
    return True


def forget_warnings() -> None:
    """Let every kind warn again (a new run in the same process, or a test)."""
    with _LOCK:
        _SEEN.clear()
