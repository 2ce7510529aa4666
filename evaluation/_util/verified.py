"""Files already verified, remembered by their stat signature.

Checking that a file still holds the content recorded when it was written means hashing it
again: about a second of CPU for the ~1 GB dataset cache, on every run. Instead, once a file has
been hashed and found right, :func:`remember` records its stat signature (size, modification
and status-change times in nanoseconds, inode, device) with the digest it was found to have;
a later :func:`recall` that finds the same signature knows the file has not been written since,
and the caller skips the hash. This is the quick check of git's index and of rsync.

Why it is sound: any write through the file system (``write``, ``truncate``, a store through a
shared memory map once it is written back) sets the file's mtime and ctime. ``utime`` can put
the mtime back, but it sets the ctime to now, and the ctime cannot be set from user space at
all. Replacing the file (a rename onto its path, a copy, delete and re-create) gives the path
another inode, or, if the inode number is reused, a new ctime. Two cases need care:

* a file changed while it is being hashed: the caller takes the signature *before* hashing
  and :func:`remember` records nothing unless the file still has it afterwards;
* a change within the same timestamp tick as the previous one, same size: nothing in the
  signature would differ (git's "racy clean" entries). :func:`remember` records only files
  whose mtime and ctime are at least ``RACY_NS`` (2 s) older than the moment the hash began,
  so any later write falls in a later tick and changes the signature.

What it does not catch: content that changes without a write through the file system (bits
flipped on the medium, a disk image edited underneath), and, on a network file system whose
server clock lags this machine's by more than 2 s, the racy case above. ``EVALRS_VERIFY=full``
makes :func:`recall` always answer no, so every file is hashed on every read.

A record is a small JSON file, ``cache_dir()/verified/<sha256 of the path>.json`` (one per
file path, written atomically), and it vouches only for the digest the caller expects: a
dataset whose metadata now records another sha256 is hashed again. A record that is missing,
unreadable or garbled just means one more hash; deleting the folder is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from evaluation._util.atomic import write_json
from evaluation._util.paths import cache_dir

VERIFY_ENV = "EVALRS_VERIFY"
#: How much older than the start of its hash a file's last change must be to be remembered.
#: Larger than any file system's timestamp granularity (FAT's 2 s included) and the kernel's
#: coarse clock tick, so a write after the hash began cannot leave the signature unchanged.
RACY_NS = 2_000_000_000


def signature(path: str | os.PathLike) -> tuple[int, int, int, int, int]:
    """The stat signature of a file: ``(size, mtime_ns, ctime_ns, inode, device)``.

    Parameters
    ----------
    path : str or path
        The file (a symbolic link is followed).

    Returns
    -------
    tuple of int
        ``(st_size, st_mtime_ns, st_ctime_ns, st_ino, st_dev)``.

    Raises
    ------
    OSError
        When the file is missing or cannot be stat'ed.
    """
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def recall(path: str | os.PathLike, digest: str) -> bool:
    """Whether ``path`` provably still has ``digest``, without reading it.

    True when a record made by :func:`remember` for this file (by its resolved absolute path)
    holds the file's current signature and ``digest``. Any trouble (no record, an unreadable
    or garbled one, a missing file) answers False: the caller then hashes the file.

    Parameters
    ----------
    path : str or path
        The file.
    digest : str
        The digest the caller expects the file to have (e.g. the sha256 recorded when it was
        written); a record made for another digest does not count.

    Returns
    -------
    bool
        False as well whenever ``$EVALRS_VERIFY`` is ``full``.
    """
    if os.environ.get(VERIFY_ENV, "").strip().lower() == "full":
        return False
    if not isinstance(digest, str) or not digest:
        return False
    try:
        resolved = Path(path).resolve()
        record = json.loads(_record_path(resolved).read_text(encoding="utf-8"))
        return (isinstance(record, dict) and record.get("path") == str(resolved)
                and record.get("digest") == digest
                and record.get("signature") == list(signature(resolved)))
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def remember(path: str | os.PathLike, before: tuple[int, int, int, int, int], digest: str,
             *, since_ns: int | None = None) -> None:
    """Record that ``path``, with signature ``before``, was hashed and found to have ``digest``.

    Nothing is recorded when the file's signature is no longer ``before`` (it changed while
    it was hashed) or when its mtime or ctime is less than ``RACY_NS`` older than
    ``since_ns`` (a change in the same timestamp tick could go unnoticed). A cache that cannot
    be written is not an error: the file is only hashed again next time.

    Parameters
    ----------
    path : str or path
        The file.
    before : tuple of int
        Its :func:`signature`, taken before it was hashed.
    digest : str
        The digest it was found to have; call this only when that is the expected one.
    since_ns : int, optional
        ``time.time_ns()`` read just before ``before`` was taken. Default: now, which is as
        strict only when the hash took no time; callers that hash should pass it.
    """
    if not isinstance(digest, str) or not digest:
        return
    try:
        resolved = Path(path).resolve()
        current = signature(resolved)
    except (OSError, RuntimeError):
        return
    if current != tuple(before):
        return
    start = time.time_ns() if since_ns is None else since_ns
    if max(current[1], current[2]) > start - RACY_NS:
        return
    try:
        write_json(_record_path(resolved),
                   {"path": str(resolved), "signature": list(current), "digest": digest})
    except (OSError, ValueError, RuntimeError):
        pass  # a read-only or full cache only costs a hash next time


def _record_path(resolved: Path) -> Path:
    """Where the record of the file at the absolute path ``resolved`` is kept."""
    name = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return cache_dir() / "verified" / f"{name}.json"
