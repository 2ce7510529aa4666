"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Mode of a file the harness writes, before the umask: what ``open(path, "w")`` would give.
PUBLIC_MODE = 0o666
#: Mode of a file that holds a secret, whatever the umask.
PRIVATE_MODE = 0o600


def _create_beside(path: Path, suffix: str, mode: int) -> Path:
    """Create an empty, uniquely named file beside ``path`` with ``mode`` (less the umask).

    ``tempfile.mkstemp`` would make it 0600 whatever the umask, and the rename keeps the
    mode: every result file would be private. Opening with ``mode`` lets the kernel apply the
    process's umask, as for any other file, without reading or changing the umask (which
    other threads share).
    """
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{suffix}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name beside {path} after 100 tries")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "", *,
                private: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` if the block succeeds.

    The file gets the mode any new file gets under the process's umask (0644 under the usual
    022); ``private=True`` makes it 0600, for a file that holds a secret.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_beside(path, suffix, PRIVATE_MODE if private else PUBLIC_MODE)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes(path: str | os.PathLike, data: bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (fsynced before the rename); see ``atomic_path``."""
    with atomic_path(path, private=private) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def write_text(path: str | os.PathLike, text: str, *, private: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    write_bytes(path, text.encode("utf-8"), private=private)


def write_json(path: str | os.PathLike, obj: Any, *, private: bool = False) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n",
               private=private)
