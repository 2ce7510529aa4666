"""Helpers for the tests of files remembered as verified (``evaluation._util.verified``) and of
the caches built on them (datasets, folds): a cache folder of the test's own, the records in
it, and the ways a file can change under a record (rewritten in place with or without its old
modification time, replaced by a copy)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from evaluation._util import verified


def settle(monkeypatch) -> None:
    """Count every file as changed long enough ago to be remembered.

    In a test the files are milliseconds old, so the racy rule (``RACY_NS``) would keep every
    record out; a test that then changes a file makes sure its ctime moved
    (:func:`rewrite_in_place`), which the 2 s rule guarantees outside tests.
    """
    monkeypatch.setattr(verified, "RACY_NS", 0)


def own_cache(monkeypatch, tmp_path: Path) -> Path:
    """A cache directory of this test's own (the session's is shared by all tests)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALRS_CACHE_DIR", str(cache))
    return cache


def records(cache: Path) -> list[Path]:
    return sorted((cache / "verified").glob("*.json"))


def rewrite_in_place(path: Path, patches: Mapping[int, bytes], *,
                     keep_mtime: bool = True) -> None:
    """Write each ``{offset: data}`` of ``patches`` into ``path`` (same file, same size), then
    put the old modification time back when ``keep_mtime``: only the ctime tells of the write.

    Written again until the ctime differs from the one before (in a test the previous write can
    be in the same clock tick; outside tests the racy rule keeps such a file unrecorded).
    """
    old = os.stat(path)
    assert all(at + len(data) <= old.st_size for at, data in patches.items())
    fd = os.open(path, os.O_WRONLY)
    try:
        while True:
            for at, data in patches.items():
                assert os.pwrite(fd, data, at) == len(data)
            if keep_mtime:
                os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
            now = os.stat(path)
            if now.st_ctime_ns != old.st_ctime_ns:
                break
            time.sleep(0.002)
    finally:
        os.close(fd)
    assert now.st_size == old.st_size and now.st_ino == old.st_ino
    assert not keep_mtime or now.st_mtime_ns == old.st_mtime_ns


def flip_byte_in_place(path: Path, offset: int, *, keep_mtime: bool = True) -> None:
    with open(path, "rb") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
    rewrite_in_place(path, {offset: bytes([byte ^ 0x01])}, keep_mtime=keep_mtime)


def replace_by_a_copy(path: Path) -> None:
    """Replace ``path`` by a copy of itself (same bytes, same mtime, another inode)."""
    copy = path.with_name(path.name + ".copy")
    shutil.copy2(path, copy)
    os.replace(copy, path)
