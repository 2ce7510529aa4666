"""Where the harness keeps downloaded and generated data."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "EVALRS_CACHE_DIR"


def cache_dir() -> Path:
    """Cache root: ``$EVALRS_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalrs`` or ``~/.cache/evalrs``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "evalrs"
