"""Track vectors from files, keyed by track id — never by row number.

A vector file says explicitly which track each vector belongs to: a gensim KeyedVectors file
(``song2vec.wv``) by its keys (track ids written as decimal strings), a parquet file by its
``track_id`` column, a ``.npz`` by its ``track_ids`` array, a ``.npy`` matrix by a
``track_vector_ids.npy`` file beside it. Keys of a KeyedVectors file that are not track ids of
the dataset are dropped with a warning; every other problem is a :class:`DataError`.
"""

from __future__ import annotations

import contextlib
import pickle
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evaluation._util.int64 import as_int64
from evaluation._util.npy import load_npy, load_npz
from evaluation.data._schema import data_error, known_mask
from evaluation.data._tables import TrackVectors
from evaluation.errors import DataError, show_values

# What NumPy, gensim and pyarrow raise for truncated, foreign or garbage files.
READ_ERRORS = (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError,
               IndexError, zipfile.BadZipFile, zlib.error, pickle.UnpicklingError, MemoryError,
               pa.ArrowException)

VECTOR_FILES = ("track_vectors.parquet", "track_vectors.npz", "track_vectors.npy",
                "song2vec.wv")
NPY_IDS = "track_vector_ids.npy"


def vectors_from_arrays(track_ids, vectors, file: str) -> TrackVectors:
    """TrackVectors from an id array and a matrix with one row per id (shapes checked)."""
    ids = np.asarray(track_ids)
    vecs = np.asarray(vectors)
    if ids.ndim != 1:
        raise data_error(file, "track_id", f"track ids must be a 1-d array, got shape {ids.shape}",
                         fix="store one id per vector")
    if ids.dtype.kind not in "iuf":
        raise data_error(file, "track_id", f"track ids must be integers, got {ids.dtype}",
                         ids[:5].tolist(), fix="store the track ids as integers")

    def fail(rule: str, bad: np.ndarray, values: np.ndarray) -> DataError:
        return data_error(file, "track_id", f"track ids must be integers that fit in int64; "
                          f"{int(bad.sum())} are {rule}", values[bad][:5],
                          fix="store the track ids of the tracks table as integers")

    ids = as_int64(ids, fail)
    if vecs.ndim != 2:
        raise data_error(file, "vector", f"wrong dimension: vectors must form a 2-d matrix "
                         f"(one row per track), got shape {vecs.shape}",
                         fix="store one fixed-length vector per track")
    if len(vecs) != len(ids):
        raise data_error(file, "vector", f"{len(vecs)} vectors for {len(ids)} track ids",
                         fix="store exactly one vector per track id")
    if vecs.dtype.kind not in "fiu":
        raise data_error(file, "vector", f"vectors must be numbers, got {vecs.dtype}",
                         fix="store the vectors as floats")
    return TrackVectors(track_ids=ids, vectors=vecs.astype(np.float32))


def vectors_from_frame(frame: pd.DataFrame, file: str) -> TrackVectors:
    """From a table with a ``track_id`` column (or index) and either one list column or
    one numeric column per dimension."""
    if "track_id" not in frame.columns:
        if frame.index.name != "track_id":
            raise data_error(file, "track_id", "required column missing",
                             [str(c) for c in frame.columns],
                             fix="add a 'track_id' column naming the track of each vector")
        frame = frame.reset_index()
    ids = frame["track_id"].to_numpy()
    rest = frame.drop(columns="track_id")
    if rest.shape[1] == 1 and not pd.api.types.is_numeric_dtype(rest.iloc[:, 0]):
        column = rest.columns[0]
        cells = rest.iloc[:, 0].to_list()
        lengths = np.fromiter((len(c) if c is not None else -1 for c in cells), dtype=np.int64,
                              count=len(cells))
        dim = np.bincount(lengths[lengths >= 0]).argmax() if np.any(lengths >= 0) else 0
        bad = np.flatnonzero(lengths != dim)
        if len(bad):
            raise data_error(file, str(column),
                             f"wrong dimension: vectors must all have length {dim}; "
                             f"track ids {show_values(ids[bad])} have lengths",
                             lengths[bad][:5], fix="store one vector of the same length per track")
        vecs = (np.concatenate([np.asarray(c, dtype=np.float32) for c in cells])
                if cells else np.zeros(0, np.float32)).reshape(len(cells), dim)
    else:
        non_numeric = [c for c in rest.columns if not pd.api.types.is_numeric_dtype(rest[c])]
        if non_numeric:
            raise data_error(file, str(non_numeric[0]), "vector columns must be numeric",
                             rest[non_numeric[0]].head(3).tolist(),
                             fix="store a 'track_id' column and one float column per dimension "
                             "(or a single list column)")
        vecs = rest.to_numpy(dtype=np.float32)
    return vectors_from_arrays(ids, vecs, file)


def vectors_from_keyed(keys, vectors, track_ids: np.ndarray, file: str) -> TrackVectors:
    """From gensim-style string keys: keys are track ids written in decimal.

    Keys that are not decimal integers, or are ids of no track in ``track_ids``, are dropped
    with a warning (a vector file may cover more tracks than the dataset has).
    """
    keys = pd.Series(list(keys), dtype="str")
    parsed = pd.to_numeric(keys, errors="coerce")
    # "012" or "12.0" would silently alias track 12: only canonical decimal strings count.
    # (and below 2**63: a larger key would wrap to another id in int64)
    canonical = parsed.notna() & (parsed == parsed.round()) & (parsed.abs() < 2.0**63)
    ok = canonical.to_numpy(dtype=bool, copy=True)
    ids = np.full(len(keys), -1, dtype=np.int64)
    ids[ok] = parsed[ok].astype(np.int64).to_numpy()
    ok &= (keys == pd.Series(ids).astype("str")).to_numpy(dtype=bool)
    if not ok.all():
        warnings.warn(f"{file}: {int((~ok).sum())} vector keys are not track ids and were "
                      f"dropped: {show_values(keys[~ok])}", UserWarning, stacklevel=3)
    known = ok & known_mask(ids, np.asarray(track_ids))
    stray = ok & ~known
    if stray.any():
        warnings.warn(f"{file}: {int(stray.sum())} vectors belong to track ids that are not in "
                      f"the tracks table and were dropped: {show_values(ids[stray])}",
                      UserWarning, stacklevel=3)
    vecs = np.asarray(vectors)
    return vectors_from_arrays(ids[known], vecs[known], file)


def load_keyed_vectors(path: Path, track_ids: np.ndarray) -> TrackVectors:
    """Read a gensim KeyedVectors file (``song2vec.wv``) and key it by track id."""
    try:
        from gensim.models import KeyedVectors
    except ImportError as exc:  # gensim is a requirement, but say what to do if it's gone
        raise data_error(str(path), None, "reading a KeyedVectors file needs gensim",
                         fix="pip install gensim") from exc
    with _reading(path, "a gensim KeyedVectors file (song2vec.wv)"):
        kv = KeyedVectors.load(str(path), mmap="r")
        if not isinstance(kv, KeyedVectors):
            raise data_error(str(path), None, f"expected a gensim KeyedVectors file, found a "
                             f"pickled {type(kv).__name__}",
                             fix="save the vectors with model.wv.save(path)")
        keys, vectors = list(kv.index_to_key), np.asarray(kv.vectors)
    return vectors_from_keyed(keys, vectors, track_ids, str(path))


@contextlib.contextmanager
def _reading(path: Path, expected: str):
    """Turn what a reader raises on a damaged file into a DataError naming the file."""
    try:
        yield
    except DataError:
        raise
    except READ_ERRORS as exc:
        raise data_error(str(path), None, f"cannot read the file as {expected}: it is truncated, "
                         f"damaged or of another kind ({type(exc).__name__}: {exc})",
                         fix="write the file again (or re-download the dataset), or remove it"
                         ) from exc


def load_vector_file(path: Path, track_ids: np.ndarray) -> TrackVectors:
    """Read vectors from ``path`` (any of :data:`VECTOR_FILES`)."""
    name = path.name
    if name.endswith(".wv"):
        return load_keyed_vectors(path, track_ids)
    if name.endswith(".parquet"):
        return vectors_from_frame(_read_parquet(path), str(path))
    if name.endswith(".npz"):
        with _reading(path, "an .npz archive (np.savez) of 'track_ids' and 'vectors'"):
            data = load_npz(path)
            if "track_ids" not in data or "vectors" not in data:
                raise data_error(str(path), None, "an .npz of track vectors needs the arrays "
                                 f"'track_ids' and 'vectors', found {sorted(data)}",
                                 fix="np.savez(path, track_ids=ids, vectors=matrix)")
            ids, vectors = data["track_ids"], data["vectors"]
        return vectors_from_arrays(ids, vectors, str(path))
    if name.endswith(".npy"):
        ids_path = path.with_name(NPY_IDS)
        if not ids_path.exists():
            raise data_error(str(path), "track_id", "a .npy matrix does not say which track each "
                             f"row belongs to, and {NPY_IDS} is missing beside it",
                             fix=f"save the track id of each row with np.save('{NPY_IDS}', ids)"
                             " (rows are never matched to tracks by position)")
        with _reading(ids_path, "a .npy array of track ids (np.save)"):
            ids = load_npy(ids_path)
        with _reading(path, "a .npy matrix of vectors (np.save)"):
            vectors = load_npy(path)
        return vectors_from_arrays(ids, vectors, str(path))
    raise data_error(str(path), None, "unknown vector file type",
                     fix=f"use one of {list(VECTOR_FILES)}")


def _read_parquet(path: Path) -> pd.DataFrame:
    with _reading(path, "a parquet table with a 'track_id' column and the vectors"):
        return pd.read_parquet(path)
