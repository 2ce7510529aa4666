"""Files already verified, remembered by their stat signature (``evaluation._util.verified``).

A record lets a later check skip the hash only while the file provably was not written: the
same size, mtime, ctime, inode and device, and the digest the caller expects. The helpers
that change a file under its record are in ``tests/_verified_files.py`` (shared with the tests
of the dataset and fold caches).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from evaluation._util import verified
from tests._verified_files import (
    flip_byte_in_place,
    own_cache,
    records,
    replace_by_a_copy,
    rewrite_in_place,
    settle,
)

DIGEST = "d" * 64


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    return own_cache(monkeypatch, tmp_path)


@pytest.fixture
def file(tmp_path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 64)
    return path


def hashed(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_signature_is_size_times_inode_and_device(file):
    st = os.stat(file)
    assert verified.signature(file) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                        st.st_dev)
    assert verified.signature(str(file)) == verified.signature(file)
    with pytest.raises(OSError):
        verified.signature(file.with_name("missing"))


def test_a_remembered_file_is_recalled_for_its_digest_only(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    assert not verified.recall(file, digest)  # no record yet
    verified.remember(file, verified.signature(file), digest)
    [record] = records(cache)
    assert record.name == hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:32] + ".json"
    assert verified.recall(file, digest)
    assert verified.recall(str(file), digest)
    assert not verified.recall(file, DIGEST)  # the caller expects other content
    assert not verified.recall(file, "")


def test_a_record_is_kept_by_the_resolved_path(cache, file, monkeypatch, tmp_path):
    settle(monkeypatch)
    digest = hashed(file)
    link = tmp_path / "link.bin"
    link.symlink_to(file)
    verified.remember(link, verified.signature(link), digest)
    assert verified.recall(file, digest)
    monkeypatch.chdir(tmp_path)
    assert verified.recall(Path("data.bin"), digest)
    other = tmp_path / "other.bin"
    shutil.copy2(file, other)
    assert not verified.recall(other, digest)  # same bytes, another file: no record


@pytest.mark.parametrize("keep_mtime", [True, False])
def test_a_file_written_after_its_record_is_not_recalled(cache, file, monkeypatch, keep_mtime):
    settle(monkeypatch)
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)
    assert verified.recall(file, digest)
    flip_byte_in_place(file, 1000, keep_mtime=keep_mtime)  # same size, same inode
    assert hashed(file) != digest
    assert not verified.recall(file, digest)


def test_a_file_rewritten_with_the_same_bytes_is_not_recalled(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)
    rewrite_in_place(file, {0: file.read_bytes()[:10]})  # a write, whatever it wrote
    assert hashed(file) == digest
    assert not verified.recall(file, digest)


def test_a_file_replaced_by_a_copy_is_not_recalled(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)
    before = os.stat(file)
    replace_by_a_copy(file)
    after = os.stat(file)
    assert after.st_ino != before.st_ino and after.st_mtime_ns == before.st_mtime_ns
    assert not verified.recall(file, digest)


def test_a_file_changed_while_it_was_hashed_is_not_remembered(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    before = verified.signature(file)
    rewrite_in_place(file, {0: b"\x00"})  # first byte was 0 already: same content, new ctime
    verified.remember(file, before, digest)
    assert records(cache) == []
    assert not verified.recall(file, digest)


def test_a_recently_changed_file_is_not_remembered(cache, file):
    digest = hashed(file)
    before = verified.signature(file)
    changed = max(before[1], before[2])
    verified.remember(file, before, digest, since_ns=changed + verified.RACY_NS - 1)
    assert records(cache) == []
    assert not verified.recall(file, digest)
    # a modification time in the future is racy too, whatever the ctime, and so it is by
    # default (the clock read by ``remember`` itself)
    future = time.time_ns() + 3600 * 10**9
    os.utime(file, ns=(future, future))
    future_sig = verified.signature(file)
    verified.remember(file, future_sig, digest, since_ns=future_sig[2] + 10 * verified.RACY_NS)
    verified.remember(file, future_sig, digest)
    assert records(cache) == []
    # an old modification time put back by ``utime``: the ctime (now) is what counts
    os.utime(file, ns=(before[1] - 3600 * 10**9, before[1] - 3600 * 10**9))
    put_back = verified.signature(file)
    assert put_back[1] + 10 * verified.RACY_NS < put_back[2]
    verified.remember(file, put_back, digest, since_ns=put_back[2] + verified.RACY_NS - 1)
    assert records(cache) == []
    # 2 s after the last change (as the hash began), the same file is remembered
    os.utime(file, ns=(before[1], before[1]))
    settled = verified.signature(file)
    verified.remember(file, settled, digest, since_ns=settled[2] + verified.RACY_NS)
    assert len(records(cache)) == 1
    assert verified.recall(file, digest)


def test_full_verification_never_recalls(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)
    assert verified.recall(file, digest)
    for value in ("full", "FULL", " full\n"):
        monkeypatch.setenv("EVALRS_VERIFY", value)
        assert not verified.recall(file, digest)
    monkeypatch.setenv("EVALRS_VERIFY", "")
    assert verified.recall(file, digest)


@pytest.mark.parametrize("garble", ["not json", "truncated", "a list", "other path",
                                    "bad signature", "binary"])
def test_a_garbled_record_is_ignored(cache, file, monkeypatch, garble):
    settle(monkeypatch)
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)
    [record] = records(cache)
    text = record.read_text()
    if garble == "not json":
        record.write_text("{not json")
    elif garble == "truncated":
        record.write_text(text[: len(text) // 2])
    elif garble == "a list":
        record.write_text("[1, 2, 3]")
    elif garble == "other path":
        record.write_text(text.replace(str(file.resolve()), str(file.resolve()) + "x"))
    elif garble == "bad signature":
        record.write_text(text.replace('"signature": [', '"signature": ["x", '))
    else:
        record.write_bytes(b"\xff\xfe\x00garbage")
    assert record.read_text(errors="replace") != text
    assert not verified.recall(file, digest)
    verified.remember(file, verified.signature(file), digest)  # made again, sound
    assert verified.recall(file, digest)


def test_a_missing_file_is_neither_recalled_nor_remembered(cache, file, monkeypatch):
    settle(monkeypatch)
    digest = hashed(file)
    before = verified.signature(file)
    verified.remember(file, before, digest)
    file.unlink()
    assert not verified.recall(file, digest)
    verified.remember(file, before, digest)  # no error


def test_an_unwritable_cache_only_costs_a_hash(file, monkeypatch, tmp_path):
    settle(monkeypatch)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("EVALRS_CACHE_DIR", str(blocker / "cache"))
    digest = hashed(file)
    verified.remember(file, verified.signature(file), digest)  # no error
    assert not verified.recall(file, digest)
