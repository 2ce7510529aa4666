"""A dataset as a directory of files: the harness's own on-disk layout.

``write_tables`` writes the events as one NumPy ``.npy`` file per column (``events.0.npy``,
... in column order; their names are in the metadata), ``users.parquet``, ``tracks.parquet``,
``track_vectors.npy`` + ``track_vector_ids.npy`` (when the dataset has vectors) and
``evalrs_tables.json`` (format version, row counts, the dataset fingerprint and the size and
sha256 of every file). Events that are not plain number columns over the default index (a
nullable column, say) go to ``events.parquet`` instead. The directory appears atomically: it is
written under a temporary name beside its destination and renamed, so a reader never sees half
of it. Format 1 (the events always in ``events.parquet``) is still read.

``read_tables`` reads every file in a pool of threads. An events column is one read into its
final array, which pandas takes as it is (read-only: the tables are shared with the models);
the small tables are zstd parquet, the events of format 1 uncompressed plain-encoded parquet
streamed a column per thread. The stored fingerprint is reused only when every file still has
the content recorded at write time, otherwise ``Tables.fingerprint()`` rehashes the tables, or,
with ``strict=True`` (the harness's own caches), the read fails with a :class:`DataError`
naming the file. A file is hashed (in other threads, while the tables are read) unless its stat
signature is the one it had when it was last hashed and found right
(:mod:`evaluation._util.verified`: an unchanged signature means no write since);
``EVALRS_VERIFY=full`` hashes every file on every read.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation._util import verified
from evaluation._util.npy import load_npy
from evaluation.data._tables import Tables, TrackVectors
from evaluation.errors import ConfigError, DataError

META_FILE = "evalrs_tables.json"
FORMAT = "evalrs-tables"
FORMAT_VERSION = 2
#: Versions read: 1 kept the events in ``events.parquet`` too.
READABLE_VERSIONS = (1, 2)
_FRAMES = ("events", "users", "tracks")
#: The events' columns, one ``.npy`` file each (format 2), by position in the table.
_EVENT_COLUMN_FILE = "events.{}.npy"
_VECTORS = "track_vectors.npy"
_VECTOR_IDS = "track_vector_ids.npy"
_COMPRESSION = {"events": "none", "users": "zstd", "tracks": "zstd"}
_COLUMNWISE_ROWS = 1_000_000  # tables at least this long are read a column per thread


def is_tables_dir(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a dataset written by :func:`write_tables`."""
    return (Path(directory) / META_FILE).is_file()


def tables_format(directory: str | os.PathLike) -> int | None:
    """The format version of the dataset directory ``directory`` (None: unreadable)."""
    try:
        version = json.loads((Path(directory) / META_FILE).read_text(encoding="utf-8"))
        version = version.get("format_version") if isinstance(version, dict) else None
    except (OSError, ValueError):
        return None
    return version if isinstance(version, int) else None


def write_tables(tables: Tables, directory: str | os.PathLike, *, replace: bool = False) -> Path:
    """Write ``tables`` to ``directory`` atomically; return the directory.

    An existing directory is replaced only if it is empty or was itself written by
    ``write_tables`` (or, with ``replace=True``, whatever it holds: for caches the harness
    owns); any other existing path is left alone (``ConfigError``).

    Parameters
    ----------
    tables : Tables
        The dataset.
    directory : str or path
        Where to write it.
    replace : bool, default False
        Replace whatever the directory holds.

    Returns
    -------
    pathlib.Path
        The directory written.

    Raises
    ------
    ConfigError
        When ``directory`` exists and may not be replaced.
    """
    target = Path(directory)
    if target.exists() and not (target.is_dir() and (replace or is_tables_dir(target)
                                                    or not any(target.iterdir()))):
        raise ConfigError(
            f"write_tables: {str(target)!r} exists and is not a dataset directory written by "
            f"the harness (no {META_FILE}); choose a new or empty directory"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _fresh_dir(target, ".tmp")
    try:
        # file name -> its size and sha256, filled in once every file is written
        files: dict[str, dict[str, Any] | None] = {}
        event_columns = None
        for name in _FRAMES:
            frame = getattr(tables, name)
            if name == "events" and _plain_columns(frame):
                event_columns = [str(c) for c in frame.columns]
                for i, column in enumerate(frame.columns):
                    fname = _EVENT_COLUMN_FILE.format(i)
                    np.save(tmp / fname, frame[column].to_numpy())
                    files[fname] = None
                continue
            fname = f"{name}.parquet"
            _write_frame(frame, tmp / fname, _COMPRESSION[name])
            files[fname] = None
        if tables.track_vectors is not None:
            np.save(tmp / _VECTOR_IDS, tables.track_vectors.track_ids)
            np.save(tmp / _VECTORS, tables.track_vectors.vectors)
            files[_VECTOR_IDS] = files[_VECTORS] = None
        for fname in files:
            files[fname] = {"size": (tmp / fname).stat().st_size,
                            "sha256": file_sha256(tmp / fname)}
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "source": tables.source,
            "rows": {name: len(getattr(tables, name)) for name in _FRAMES},
            "fingerprint": tables.fingerprint(),
            "files": files,
        }
        if event_columns is not None:
            meta["event_columns"] = event_columns
        with open(tmp / META_FILE, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        _replace_dir(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _plain_columns(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` is plain NumPy number columns with string names over the default
    index: what one ``.npy`` file per column holds without loss."""
    return (isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
            and frame.index.step == 1 and frame.index.name is None
            and all(isinstance(c, str) for c in frame.columns) and frame.columns.is_unique
            and all(isinstance(dt, np.dtype) and dt.kind in "biuf" for dt in frame.dtypes))


def _write_frame(frame: pd.DataFrame, path: Path, compression: str) -> None:
    keep_index = not isinstance(frame.index, pd.RangeIndex)
    table = pa.Table.from_pandas(frame, preserve_index=keep_index)
    # One row group: each column reads back as one contiguous array that pandas adopts
    # without a copy. Plain encoding for numbers (decoding is a memcpy), dictionaries for
    # the repetitive strings of the small tables.
    dictionary = [f.name for f in table.schema if not pa.types.is_integer(f.type)
                  and not pa.types.is_floating(f.type)]
    pq.write_table(table, path, compression=compression, use_dictionary=dictionary or False,
                   row_group_size=max(len(table), 1))


def _start_frame(path: Path, pool: ThreadPoolExecutor) -> Callable[[], pd.DataFrame]:
    """Start reading one parquet file in ``pool``; return the function that finishes it.

    A long table is read a column per task (pyarrow releases the GIL). A numeric column
    without nulls is streamed in batches into its final NumPy array, which pandas then adopts:
    the peak is the decoded table plus a few batches, not the file plus the table. Any other
    column is read whole from a memory map of its own that is closed once it is decoded. A
    short table is one task.
    """
    with pq.ParquetFile(path, memory_map=True) as pf:
        schema = pf.schema_arrow
        n_rows = pf.metadata.num_rows
    if n_rows < _COLUMNWISE_ROWS:
        whole = pool.submit(_read_whole, path)
        return whole.result

    def column(name: str) -> pa.Array | pa.ChunkedArray:
        field = schema.field(name)
        if pa.types.is_integer(field.type) or pa.types.is_floating(field.type):
            values = _stream_column(path, name, field.type.to_pandas_dtype(), n_rows)
            if values is not None:
                return pa.array(values, type=field.type)  # no copy
        with pq.ParquetFile(path, memory_map=True) as f:
            return f.read(columns=[name], use_threads=False).column(0)

    columns = [pool.submit(column, name) for name in schema.names]

    def finish() -> pd.DataFrame:
        table = pa.Table.from_arrays([c.result() for c in columns], schema=schema)
        columns.clear()
        return table.to_pandas(split_blocks=True, self_destruct=True)

    return finish


def _start_columns(root: Path, names: list, pool: ThreadPoolExecutor
                   ) -> Callable[[], pd.DataFrame]:
    """Start reading the events' ``.npy`` columns in ``pool``; return what finishes it.

    Each file is one read into its final array (no decoding, no second copy); pandas takes
    the arrays as they are. They are made read-only: the tables are shared with models.
    """
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"event_columns in {META_FILE} is not a list of column names")
    columns = [pool.submit(_read_column, root, root / _EVENT_COLUMN_FILE.format(i))
               for i in range(len(names))]

    def finish() -> pd.DataFrame:
        arrays = [c.result() for c in columns]
        if len({len(a) for a in arrays}) > 1:
            raise ValueError(f"the events' columns have different lengths "
                             f"{[len(a) for a in arrays]}")
        # copy=False: the arrays themselves, not a consolidated copy of them
        return pd.DataFrame(dict(zip(names, arrays)), copy=False)

    return finish


def _read_column(root: Path, path: Path) -> np.ndarray:
    """One events column, read-only; a ``DataError`` naming the file when it is unreadable."""
    try:
        values = load_npy(path)
        if values.ndim != 1:
            raise ValueError(f"it holds a {values.ndim}-D array, not a column")
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(
            f"{path}: cannot read this column of the events table ({type(exc).__name__}: "
            f"{exc}); the file is truncated, damaged or missing: delete {root} to regenerate "
            f"or re-download it"
        ) from exc
    values.flags.writeable = False
    return values


def _read_whole(path: Path) -> pd.DataFrame:
    """A short parquet file into pandas, in one piece."""
    with pq.ParquetFile(path, memory_map=True) as pf:
        return pf.read(use_threads=False).to_pandas(split_blocks=True, self_destruct=True)


_HASH_BUFFER = 1 << 22  # bytes per read when hashing a file


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (hashlib releases the GIL: threads hash in parallel)."""
    h = hashlib.sha256()
    buffer = bytearray(_HASH_BUFFER)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buffer):
            h.update(view[:n])
    return h.hexdigest()


_STREAM_ROWS = 1 << 18  # rows per batch when streaming a column (a batch stays in cache)
_STREAM_BUFFER = 1 << 20  # bytes per file read


def _stream_column(path: Path, name: str, dtype: np.dtype, n_rows: int) -> np.ndarray | None:
    """Column ``name`` as a NumPy array, decoded batch by batch (``None``: it has nulls)."""
    out = np.empty(n_rows, dtype=dtype)
    pos = 0
    with pq.ParquetFile(path, memory_map=False, buffer_size=_STREAM_BUFFER,
                        pre_buffer=False) as f:
        for batch in f.iter_batches(batch_size=_STREAM_ROWS, columns=[name], use_threads=False):
            values = batch.column(0)
            if values.null_count or pos + len(values) > n_rows:
                return None
            out[pos:pos + len(values)] = values.to_numpy(zero_copy_only=True)
            pos += len(values)
    return out if pos == n_rows else None


def _fresh_dir(target: Path, suffix: str) -> Path:
    """A new hidden directory beside ``target`` (created with the usual umask permissions)."""
    while True:
        path = target.parent / f".{target.name}.{secrets.token_hex(4)}{suffix}"
        try:
            path.mkdir()
            return path
        except FileExistsError:  # pragma: no cover - 32 random bits
            continue


def _replace_dir(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` onto ``target``; an existing ``target`` is moved aside first."""
    try:
        os.rename(tmp, target)
        return
    except OSError:
        if not target.exists():
            raise
    old = _fresh_dir(target, ".old")
    os.rename(target, old / "d")
    try:
        os.rename(tmp, target)
    except OSError:
        os.rename(old / "d", target)  # put the previous dataset back
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def read_tables(directory: str | os.PathLike, *, use_threads: bool = True,
                strict: bool = False, upgrade: bool = False) -> Tables:
    """Read a dataset directory written by :func:`write_tables`.

    The fingerprint stored at write time is reused when each file's sha256 matches the one
    recorded then; otherwise it is recomputed from the tables, or, with ``strict=True``, a
    :class:`DataError` names the file whose content changed (or that lacks a recorded hash: a
    directory of an older harness). The files are hashed while the tables are decoded, except
    those that provably have not been written since they were last hashed and found to match
    (same stat signature: see :mod:`evaluation._util.verified`; ``EVALRS_VERIFY=full`` hashes
    them all).

    Parameters
    ----------
    directory : str or path
        A directory written by :func:`write_tables`.
    use_threads : bool, default True
        Decode and hash the files in parallel.
    strict : bool, default False
        Refuse a file whose content no longer matches its recorded hash.
    upgrade : bool, default False
        Rewrite a directory of an older format in the current one once it is read (for the
        caches the harness owns).

    Returns
    -------
    Tables
        The dataset, fingerprint included.

    Raises
    ------
    DataError
        When a file is missing or unreadable (or, with ``strict``, changed).
    """
    root = Path(directory)
    meta = _read_meta(root)
    recorded = meta["files"]
    hashing = ThreadPoolExecutor(2 if use_threads else 1)
    try:
        # submitted first: the hashes are computed while the tables are decoded
        digests = {fname: hashing.submit(_content_sha256, root / fname,
                                         recorded[fname]["sha256"])
                   for fname in recorded
                   if isinstance(recorded[fname], dict) and "sha256" in recorded[fname]}
        tables = _read_content(root, meta, use_threads)
        changed = [fname for fname in recorded if fname not in digests
                   or _digest(digests[fname]) != recorded[fname]["sha256"]]
    finally:
        hashing.shutdown(wait=True, cancel_futures=True)
    if changed and strict:
        fname = changed[0]
        what = ("has no sha256 in the metadata (written by an older harness)"
                if fname not in digests else "differs from what was written (sha256 mismatch)")
        raise DataError(f"{root / fname}: the content {what}; the file was damaged, replaced "
                        f"or modified: delete {root} and write it again")
    if not changed:
        tables._fingerprint = meta["fingerprint"]
    # The reader's scratch buffers stay in Arrow's pool otherwise (~0.2 GiB at full scale).
    pa.default_memory_pool().release_unused()
    if upgrade and meta["format_version"] < FORMAT_VERSION:
        try:
            write_tables(tables, root, replace=True)
        except OSError:
            pass  # a read-only cache is read in its older format again next time
    return tables


def _content_sha256(path: Path, expected: str) -> str:
    """The sha256 of ``path``: ``expected``, without reading the file, when it has not been
    written since it was last found to have it; otherwise hashed, and remembered if it matches.

    A missing or unreadable file raises OSError (from the signature or the hash).
    """
    if verified.recall(path, expected):
        return expected
    since = time.time_ns()  # before the signature: see verified.remember
    before = verified.signature(path)
    digest = file_sha256(path)
    if digest == expected:
        verified.remember(path, before, digest, since_ns=since)
    return digest


def _digest(future) -> str | None:
    try:
        return future.result()
    except OSError:  # a missing or unreadable file: not the recorded content
        return None


def _read_content(root: Path, meta: dict, use_threads: bool) -> Tables:
    workers = max(2, os.cpu_count() or 2) if use_threads else 1
    with ThreadPoolExecutor(workers) as pool:
        # every table (the events a column per task) and the vectors share the threads, the
        # short ones started first: they are read while the events are, not after them
        started = {name: _guarded(root, name, _start_frame, root / f"{name}.parquet", pool)
                   if name != "events" or "event_columns" not in meta
                   else _guarded(root, name, _start_columns, root, meta["event_columns"], pool)
                   for name in ("tracks", "events", "users")}
        vectors = pool.submit(_read_vectors, root) if _VECTORS in meta["files"] else None
        frames = {name: _guarded(root, name, started[name]) for name in _FRAMES}
        for name, frame in frames.items():
            expected = meta["rows"].get(name)
            if expected is not None and len(frame) != expected:
                raise DataError(
                    f"{root / f'{name}.parquet'}: {len(frame)} rows, but {META_FILE} records "
                    f"{expected}; the directory was modified after it was written: delete "
                    f"{root} and write it again"
                )
        return Tables(events=frames["events"], users=frames["users"], tracks=frames["tracks"],
                      track_vectors=None if vectors is None else vectors.result(),
                      source=meta.get("source") or str(root))


def _guarded(root: Path, name: str, read: Callable, *args):
    """``read(*args)``; a ``DataError`` naming the file when it cannot be read."""
    path = root / f"{name}.parquet"
    try:
        return read(*args)
    except DataError:
        raise  # names its file already
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise DataError(
            f"{path}: cannot read the {name} table ({type(exc).__name__}: {exc}); the file "
            f"is truncated, damaged or missing: delete {root} to regenerate or re-download it"
        ) from exc


def _read_vectors(root: Path) -> TrackVectors:
    """The track vectors and their ids; a ``DataError`` when they cannot be read."""
    try:
        return TrackVectors(load_npy(root / _VECTOR_IDS), load_npy(root / _VECTORS))
    except (OSError, ValueError, EOFError, MemoryError) as exc:
        raise DataError(
            f"{root / _VECTORS} or {_VECTOR_IDS}: cannot read the track vectors "
            f"({type(exc).__name__}: {exc}); the files are truncated, damaged or missing: "
            f"delete {root} to regenerate or re-download it"
        ) from exc


def _read_meta(root: Path) -> dict:
    path = root / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(
            f"{root}: not a dataset directory written by the harness (no {META_FILE}); "
            f"write one with `python -m evaluation data generate --out DIR`"
        ) from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: unreadable metadata ({exc}); write the directory again") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataError(f"{path}: not an {FORMAT} metadata file (format={meta.get('format')!r})"
                        if isinstance(meta, dict) else f"{path}: not an {FORMAT} metadata file")
    if meta.get("format_version") not in READABLE_VERSIONS:
        raise DataError(
            f"{path}: format_version {meta.get('format_version')!r}, this harness reads "
            f"{' and '.join(map(str, READABLE_VERSIONS))}; write the directory again with "
            f"this version"
        )
    for key, kind in (("rows", dict), ("files", dict), ("fingerprint", str)):
        if not isinstance(meta.get(key), kind):
            raise DataError(f"{path}: metadata lacks {key!r} (or it is not a {kind.__name__}); "
                            "write the directory again")
    return meta
