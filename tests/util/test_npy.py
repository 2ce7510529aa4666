"""Reading .npy/.npz files with headers parsed one thread at a time, as np.load reads them."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation._util import npy
from evaluation._util.npy import load_npy, load_npz
from evaluation._util.syntax_trees import SYNTAX_TREES


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.int64),
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)),
    np.zeros((0, 5), dtype=np.float64),
    np.array(7, dtype=np.int16),
    np.array([(1, 2.5), (3, -1.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
], ids=["int64", "2-D", "fortran", "empty", "0-d", "structured"])
def test_an_array_reads_back_as_np_load_gives_it(tmp_path, array):
    path = tmp_path / "a.npy"
    np.save(path, array)
    got = load_npy(path)
    expected = np.load(path)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected)
    assert got.flags.f_contiguous == expected.flags.f_contiguous


def test_a_version_2_header_is_read(tmp_path):
    path = tmp_path / "v2.npy"
    array = np.arange(10, dtype=np.uint8)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=(2, 0))
    assert np.array_equal(load_npy(path), array)


def test_a_truncated_file_and_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "cut.npy"
    np.save(path, np.arange(100, dtype=np.int64))
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated: 99 of 100"):
        load_npy(path)
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Python objects"):
        load_npy(objects)
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError):
        load_npy(tmp_path / "junk.npy")


def test_an_archive_reads_whole_and_pickles_are_refused(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(3), y=np.ones((2, 2)))
    got = load_npz(path)
    assert sorted(got) == ["x", "y"] and np.array_equal(got["y"], np.ones((2, 2)))
    np.savez(path, o=np.array([None], dtype=object))
    with pytest.raises(ValueError):
        load_npz(path)


def test_headers_are_parsed_while_the_lock_is_held(tmp_path, monkeypatch):
    # CPython 3.11 fails when two threads build syntax trees at once: NumPy parses a header
    # with ast.literal_eval, so that must happen under the process's lock
    held = []
    real = np.lib.format.read_array_header_1_0

    def spy(f, *args, **kwargs):
        held.append(SYNTAX_TREES.locked())
        return real(f, *args, **kwargs)

    monkeypatch.setattr(npy.np.lib.format, "read_array_header_1_0", spy)
    np.save(tmp_path / "a.npy", np.arange(4))
    load_npy(tmp_path / "a.npy")
    assert held == [True] and not SYNTAX_TREES.locked()
