"""A dataset as a directory of parquet files: the harness's own on-disk layout.

``write_tables`` writes ``events.parquet``, ``users.parquet``, ``tracks.parquet``,
``track_vectors.npy`` + ``track_vector_ids.npy`` (when the dataset has vectors) and
``evalrs_tables.json`` (format version, row counts, the dataset fingerprint and the size and
sha256 of every file). The directory appears atomically: it is written under a temporary name
beside its destination and renamed, so a reader never sees half of it.

``read_tables`` reads it back with pyarrow, a column per thread. Events are stored
uncompressed and plain-encoded in one row group, so reading is little more than a memcpy and
pandas adopts the arrays without another copy; the small tables use zstd. The files are
hashed while they are read (in other threads): the stored fingerprint is reused only when every
file still has the content recorded at write time, otherwise ``Tables.fingerprint()`` rehashes
the tables, or, with ``strict=True`` (the harness's own caches), the read fails with a
:class:`DataError` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.data._tables import Tables, TrackVectors
from evaluation.errors import ConfigError, DataError

META_FILE = "evalrs_tables.json"
FORMAT = "evalrs-tables"
FORMAT_VERSION = 1
_FRAMES = ("events", "users", "tracks")
_VECTORS = "track_vectors.npy"
_VECTOR_IDS = "track_vector_ids.npy"
_COMPRESSION = {"events": "none", "users": "zstd", "tracks": "zstd"}
_COLUMNWISE_ROWS = 1_000_000  # tables at least this long are read a column per thread


def is_tables_dir(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a dataset written by :func:`write_tables`."""
    return (Path(directory) / META_FILE).is_file()


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
        files = {}
        for name in _FRAMES:
            frame = getattr(tables, name)
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


def _read_frame(path: Path, use_threads: bool) -> pd.DataFrame:
    """Read one parquet file into pandas, a column at a time.

    Long tables are read a column per thread (pyarrow releases the GIL). A numeric column
    without nulls is streamed in batches into its final NumPy array, which pandas then adopts:
    the peak is the decoded table plus a few batches, not the file plus the table. Any other
    column is read whole from a memory map of its own that is closed once it is decoded.
    """
    with pq.ParquetFile(path, memory_map=True) as pf:
        schema = pf.schema_arrow
        n_rows = pf.metadata.num_rows
        if n_rows < _COLUMNWISE_ROWS:
            return pf.read(use_threads=use_threads).to_pandas(split_blocks=True,
                                                              self_destruct=True)

    def column(name: str) -> pa.Array | pa.ChunkedArray:
        field = schema.field(name)
        if pa.types.is_integer(field.type) or pa.types.is_floating(field.type):
            values = _stream_column(path, name, field.type.to_pandas_dtype(), n_rows)
            if values is not None:
                return pa.array(values, type=field.type)  # no copy
        with pq.ParquetFile(path, memory_map=True) as f:
            return f.read(columns=[name], use_threads=False).column(0)

    workers = min(len(schema.names), max(2, os.cpu_count() or 2)) if use_threads else 1
    with ThreadPoolExecutor(workers) as pool:
        columns = list(pool.map(column, schema.names))
    table = pa.Table.from_arrays(columns, schema=schema)
    del columns
    return table.to_pandas(split_blocks=True, self_destruct=True)


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


_STREAM_ROWS = 1 << 20  # rows per batch when streaming a column
_STREAM_BUFFER = 1 << 22  # bytes per file read


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
                strict: bool = False) -> Tables:
    """Read a dataset directory written by :func:`write_tables`.

    Every file is hashed while the tables are decoded. The fingerprint stored at write time is
    reused when each file's sha256 matches the one recorded then; otherwise it is recomputed
    from the tables, or, with ``strict=True``, a :class:`DataError` names the file whose
    content changed (or that lacks a recorded hash: a directory of an older harness).

    Parameters
    ----------
    directory : str or path
        A directory written by :func:`write_tables`.
    use_threads : bool, default True
        Decode and hash the files in parallel.
    strict : bool, default False
        Refuse a file whose content no longer matches its recorded hash.

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
        digests = {fname: hashing.submit(file_sha256, root / fname) for fname in recorded
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
    return tables


def _digest(future) -> str | None:
    try:
        return future.result()
    except OSError:  # a missing or unreadable file: not the recorded content
        return None


def _read_content(root: Path, meta: dict, use_threads: bool) -> Tables:
    frames = {}
    for name in _FRAMES:
        path = root / f"{name}.parquet"
        try:
            frames[name] = _read_frame(path, use_threads)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise DataError(
                f"{path}: cannot read the {name} table ({type(exc).__name__}: {exc}); the file "
                f"is truncated, damaged or missing: delete {root} to regenerate or re-download it"
            ) from exc
        expected = meta["rows"].get(name)
        if expected is not None and len(frames[name]) != expected:
            raise DataError(
                f"{path}: {len(frames[name])} rows, but {META_FILE} records {expected}; "
                f"the directory was modified after it was written: delete {root} and write it again"
            )
    vectors = None
    if _VECTORS in meta["files"]:
        try:
            ids = np.load(root / _VECTOR_IDS)
            vecs = np.load(root / _VECTORS)
            vectors = TrackVectors(ids, vecs)
        except (OSError, ValueError, EOFError, MemoryError) as exc:
            raise DataError(
                f"{root / _VECTORS} or {_VECTOR_IDS}: cannot read the track vectors "
                f"({type(exc).__name__}: {exc}); the files are truncated, damaged or missing: "
                f"delete {root} to regenerate or re-download it"
            ) from exc
    return Tables(events=frames["events"], users=frames["users"], tracks=frames["tracks"],
                  track_vectors=vectors, source=meta.get("source") or str(root))


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
    if meta.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"{path}: format_version {meta.get('format_version')!r}, this harness reads "
            f"{FORMAT_VERSION}; write the directory again with this version"
        )
    for key, kind in (("rows", dict), ("files", dict), ("fingerprint", str)):
        if not isinstance(meta.get(key), kind):
            raise DataError(f"{path}: metadata lacks {key!r} (or it is not a {kind.__name__}); "
                            "write the directory again")
    return meta
