"""Files the harness writes get the mode the umask gives any new file; secrets stay 0600."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation._util.atomic import atomic_path, write_bytes, write_json, write_text


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600),
                                                (0o027, 0o640)])
def test_atomic_writes_respect_the_umask(tmp_path, mask, expected):
    with umask(mask):
        write_json(tmp_path / "a.json", {"x": 1})
        write_text(tmp_path / "b.txt", "hello")
        write_bytes(tmp_path / "c.bin", b"\x00")
        with atomic_path(tmp_path / "d.npz", suffix=".npz") as tmp:
            tmp.write_bytes(b"npz")
    for name in ("a.json", "b.txt", "c.bin", "d.npz"):
        assert mode(tmp_path / name) == expected, name
    # what a plain open() gives under the same umask: the harness's files are no different
    with umask(mask):
        (tmp_path / "plain").write_text("x")
    assert mode(tmp_path / "plain") == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.txt", "c.bin", "d.npz",
                                                          "plain"]


def test_private_files_are_0600_whatever_the_umask(tmp_path):
    with umask(0o000):
        write_text(tmp_path / "secret", "token", private=True)
        write_text(tmp_path / "public", "score")
    assert mode(tmp_path / "secret") == 0o600
    assert mode(tmp_path / "public") == 0o666


def test_replacing_a_file_takes_the_new_mode_and_content(tmp_path):
    target = tmp_path / "results.json"
    with umask(0o077):
        write_json(target, {"v": 1})
    with umask(0o022):
        write_json(target, {"v": 2})
    assert mode(target) == 0o644
    assert target.read_text() == '{\n  "v": 2\n}\n'


def test_a_failed_write_leaves_neither_the_target_nor_a_temporary_file(tmp_path):
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "x.json") as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_run_directory_follows_the_umask(tmp_path):
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.baselines import PopularityModel

    dataset = ChallengeDataset(source="synthetic", scale="tiny")
    with umask(0o027):
        result = EvalRSRunner(dataset, results_dir=tmp_path / "results", progress=False,
                              verbose=False).evaluate(PopularityModel(), limit=20, upload=False)
    files = [p for p in Path(result.path).parent.rglob("*") if p.is_file()]
    assert len(files) >= 6  # run.json, results.json, checksums.json and the folds' files
    assert {p.name: oct(mode(p)) for p in files} == {p.name: oct(0o640) for p in files}
