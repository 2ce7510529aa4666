"""Folds cached on disk: read back bit for bit, and refused (then recomputed) when damaged."""

from __future__ import annotations

import re
import shutil
import struct
import warnings
import zipfile
import zlib

import numpy as np
import pytest

import evaluation.dataset as dataset_module
import evaluation.splits._cache as fold_cache
from benchmarks._folds_2022 import folds_reference
from evaluation import ChallengeDataset, FoldCacheWarning
from evaluation._util import verified
from evaluation.data import synthetic_tables
from evaluation.splits import FoldParams, fold_cache_path, read_fold
from tests._verified_files import (
    own_cache,
    records,
    replace_by_a_copy,
    rewrite_in_place,
    settle,
)


@pytest.fixture(scope="module")
def tables():
    return synthetic_tables("tiny")


def dataset(tables, **kwargs) -> ChallengeDataset:
    return ChallengeDataset(tables, validate=False, **kwargs)


def same_fold(a, b) -> None:
    assert a.train_rows.dtype == b.train_rows.dtype and a.test_rows.dtype == b.test_rows.dtype
    np.testing.assert_array_equal(a.train_rows, b.train_rows)
    np.testing.assert_array_equal(a.test_rows, b.test_rows)
    assert (a.index, a.sampled_users, a.kcore_rounds, a.kcore_converged) == \
        (b.index, b.sampled_users, b.kcore_rounds, b.kcore_converged)


def cached_paths(ds: ChallengeDataset):
    return [fold_cache_path(ds.fingerprint, ds.params, f) for f in range(ds.num_folds)]


def no_fold_cutting(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the fold was cut again instead of read from the cache")
    monkeypatch.setattr(dataset_module, "make_fold", refuse)


def test_cached_folds_are_read_back_bit_for_bit_without_cutting_them(tables, monkeypatch):
    computed = dataset(tables, seed=5, fold_cache=False).compute_folds()
    first = dataset(tables, seed=5).compute_folds()  # computes and writes the cache
    assert all(p.is_file() for p in cached_paths(dataset(tables, seed=5)))
    no_fold_cutting(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound cache reads without a warning
        again = dataset(tables, seed=5).compute_folds()
    for a, b, c in zip(computed, first, again):
        same_fold(a, b)
        same_fold(a, c)
        assert not c.train_rows.flags.writeable and not c.test_rows.flags.writeable
    # and they are still the 2022 procedure's folds
    reference = folds_reference(tables.events, 4, 5)
    for fold, (train, test) in zip(again, reference):
        np.testing.assert_array_equal(fold.train_rows, train.index.to_numpy())
        np.testing.assert_array_equal(fold.test_rows, test.index.to_numpy())


def test_other_parameters_and_other_data_have_their_own_files(tables):
    ds = dataset(tables, seed=6)
    ds.compute_folds()
    other_params = dataset(tables, seed=6, k_core=5)
    assert set(cached_paths(ds)).isdisjoint(cached_paths(other_params))
    for f, fold in enumerate(other_params.compute_folds()):
        same_fold(fold, dataset(tables, seed=6, k_core=5, fold_cache=False).fold(f))
    smaller = tables.events.iloc[: len(tables.events) // 2].reset_index(drop=True)
    assert fold_cache_path("a" * 64, ds.params, 0) != fold_cache_path("b" * 64, ds.params, 0)
    with pytest.warns(FoldCacheWarning, match="n_events"):
        assert read_fold(cached_paths(ds)[0], ds.fingerprint, ds.params, 0, len(smaller)) is None


def _flip_a_byte_of_the_rows(path) -> None:
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("train_rows.npy")
    raw = bytearray(path.read_bytes())
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 200
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "not a zip", "foreign fold",
                                    "other parameters", "record not an object"])
def test_a_damaged_or_foreign_cache_file_is_refused_and_replaced(tables, monkeypatch, damage):
    seed = 7
    ds = dataset(tables, seed=seed)
    truth = ds.compute_folds()
    path = cached_paths(ds)[1]
    if damage == "flipped byte":
        _flip_a_byte_of_the_rows(path)
        why = "sha256 mismatch|cannot be read"
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
        why = "cannot be read"
    elif damage == "not a zip":
        path.write_text("hello")
        why = "cannot be read"
    elif damage == "foreign fold":
        shutil.copyfile(cached_paths(ds)[2], path)
        why = "its fold is 2, expected 1"
    elif damage == "record not an object":
        with np.load(path) as npz:
            rows = {name: npz[name] for name in ("train_rows", "test_rows")}
        np.savez(path, **rows, meta=np.frombuffer(b"[1, 2]", dtype=np.uint8))
        why = "its record is not a JSON object"
    else:
        other = dataset(tables, seed=seed, frac=0.5)
        other.compute_folds()
        shutil.copyfile(cached_paths(other)[1], path)
        why = "its params"
    with pytest.warns(FoldCacheWarning, match=why) as caught:
        again = dataset(tables, seed=seed).compute_folds()
    assert str(path) in str(caught[0].message)
    for a, b in zip(truth, again):
        same_fold(a, b)
    # the file was replaced by a sound one: the next run reads it without cutting the fold
    no_fold_cutting(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_fold(dataset(tables, seed=seed).fold(1), truth[1])


def _change_train_rows_in_place(path, *, fix_crc: bool, keep_mtime: bool) -> None:
    """Flip a bit of a stored training row in place (same size; the modification time put
    back when ``keep_mtime``); with ``fix_crc`` the archive's CRC-32 of the member is updated
    too, so that only the fold's own sha256 can tell."""
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("train_rows.npy")
    assert info.compress_type == zipfile.ZIP_STORED
    local = info.header_offset
    name_len, extra_len = struct.unpack_from("<HH", raw, local + 26)
    start = local + 30 + name_len + extra_len
    member = bytearray(raw[start:start + info.compress_size])
    member[200] ^= 0x01
    patches = {start + 200: bytes(member[200:201])}
    if fix_crc:
        crc = struct.pack("<I", zlib.crc32(member))
        # the member's entry in the central directory holds the CRC-32 too
        central = [m.start() for m in re.finditer(re.escape(b"PK\x01\x02"), raw)
                   if raw[m.start() + 46:m.start() + 46 + name_len] == b"train_rows.npy"]
        assert len(central) == 1
        patches.update({local + 14: crc, central[0] + 16: crc})
    rewrite_in_place(path, patches, keep_mtime=keep_mtime)


def _counting_array_hashes(monkeypatch) -> list[int]:
    counted = []
    real = fold_cache._sha256

    def counting(arr):
        counted.append(len(arr))
        return real(arr)

    monkeypatch.setattr(fold_cache, "_sha256", counting)
    return counted


@pytest.fixture
def verified_fold(tables, tmp_path, monkeypatch):
    """A cached fold file read once (old enough to be remembered), how to read it, the fold,
    and the list of arrays hashed from then on."""
    own_cache(monkeypatch, tmp_path)
    settle(monkeypatch)
    ds = dataset(tables, seed=9)
    truth = ds.fold(0)  # computes and caches it
    path = cached_paths(ds)[0]
    key = (ds.fingerprint, ds.params, 0, len(tables.events))
    hashed = _counting_array_hashes(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_fold(read_fold(path, *key), truth)
    assert hashed == [len(truth.train_rows), len(truth.test_rows)]  # both arrays, once
    hashed.clear()
    return path, key, truth, hashed


def test_a_verified_fold_file_is_not_hashed_again(verified_fold, tables, monkeypatch):
    path, key, truth, hashed = verified_fold
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            found = read_fold(path, *key)
            same_fold(found, truth)
            assert not found.train_rows.flags.writeable
    assert hashed == []
    # the cheap checks still run: other parameters or data are refused as before
    with pytest.warns(FoldCacheWarning, match="n_events"):
        assert read_fold(path, *key[:3], key[3] - 1) is None
    # and through the dataset, the fold is read, not cut
    no_fold_cutting(monkeypatch)
    same_fold(dataset(tables, seed=9).fold(0), truth)
    assert hashed == []
    monkeypatch.setenv("EVALRS_VERIFY", "full")
    same_fold(read_fold(path, *key), truth)
    assert len(hashed) == 2


@pytest.mark.parametrize("keep_mtime", [True, False])
@pytest.mark.parametrize("fix_crc", [True, False])
def test_a_fold_file_changed_in_place_after_it_was_verified_is_refused(verified_fold, fix_crc,
                                                                       keep_mtime):
    path, key, truth, hashed = verified_fold
    _change_train_rows_in_place(path, fix_crc=fix_crc, keep_mtime=keep_mtime)
    why = "train_rows differs.*sha256 mismatch" if fix_crc else "cannot be read.*CRC"
    with pytest.warns(FoldCacheWarning, match=why) as caught:
        assert read_fold(path, *key) is None
    assert str(path) in str(caught[0].message)
    assert hashed == ([len(truth.train_rows)] if fix_crc else [])


def test_a_fold_file_replaced_by_a_copy_is_hashed_again(verified_fold):
    path, key, truth, hashed = verified_fold
    replace_by_a_copy(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_fold(read_fold(path, *key), truth)
        assert len(hashed) == 2
        same_fold(read_fold(path, *key), truth)  # remembered in turn
    assert len(hashed) == 2


def test_a_just_written_fold_file_is_not_remembered(tables, tmp_path, monkeypatch):
    cache = own_cache(monkeypatch, tmp_path)
    monkeypatch.setattr(verified, "RACY_NS", 3600 * 10**9)  # every file counts as just written
    ds = dataset(tables, seed=9)
    truth = ds.fold(0)
    hashed = _counting_array_hashes(monkeypatch)
    for _ in range(2):
        same_fold(read_fold(cached_paths(ds)[0], ds.fingerprint, ds.params, 0,
                            len(tables.events)), truth)
    assert len(hashed) == 4
    assert records(cache) == []


def test_rows_that_do_not_fit_the_events_are_refused(tables, tmp_path):
    ds = dataset(tables, seed=8)
    fold = ds.fold(0)
    path = cached_paths(ds)[0]
    key = (ds.fingerprint, ds.params, 0)
    with pytest.warns(FoldCacheWarning, match="n_events"):
        assert read_fold(path, *key, int(fold.train_rows[-1])) is None
    params = FoldParams(seed=8, k_core=3)
    with pytest.warns(FoldCacheWarning, match="its params"):
        assert read_fold(path, ds.fingerprint, params, 0, len(tables.events)) is None
    assert read_fold(tmp_path / "missing.npz", *key, len(tables.events)) is None


def test_unknown_keyword_names_fold_cache_among_the_expected(tables):
    with pytest.raises(Exception, match="fold_cache"):
        ChallengeDataset("synthetic", scale="tiny", fold_cahce=False)
