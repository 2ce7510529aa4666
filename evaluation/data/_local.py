"""A local directory of parquet or CSV files in the EvalRS schema.

Each table is one file named ``events``, ``users`` and ``tracks`` (or the challenge's
``evalrs_events``, ``evalrs_users``, ``evalrs_tracks``) with the extension ``.parquet`` or
``.csv``. Track vectors are optional: ``track_vectors.parquet`` (a ``track_id`` column plus
the vector), ``track_vectors.npz``, ``track_vectors.npy`` with ``track_vector_ids.npy``, or the
challenge's ``song2vec.wv``. A directory written by ``write_tables`` (``python -m evaluation
data generate --out DIR``) is read with its fast reader.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evaluation.data._parquet import is_tables_dir, read_tables
from evaluation.data._schema import check_track_vectors, data_error, validate_tables
from evaluation.data._tables import Tables
from evaluation.data._vectors import VECTOR_FILES, load_vector_file
from evaluation.errors import ConfigError, DataError

TABLES = ("events", "users", "tracks")
TEXT_COLUMNS = ("country", "gender", "track", "artist", "albums", "albums_id")


def table_candidates(name: str) -> list[str]:
    return [f"{stem}{ext}" for stem in (name, f"evalrs_{name}") for ext in (".parquet", ".csv")]


def find_table_files(directory: Path) -> dict[str, Path]:
    """The file of each table in ``directory``; a DataError when one is missing or ambiguous."""
    found = {}
    for name in TABLES:
        candidates = [directory / c for c in table_candidates(name)]
        present = [p for p in candidates if p.is_file()]
        if not present:
            listing = sorted(p.name for p in directory.iterdir())[:20]
            raise DataError(f"{directory}: no {name} table; expected one of "
                            f"{table_candidates(name)}, found {listing}. Fix: put the {name} "
                            "table in the directory under one of those names")
        if len(present) > 1:
            raise DataError(f"{directory}: several files for the {name} table: "
                            f"{[p.name for p in present]}. Fix: keep only one of them")
        found[name] = present[0]
    return found


def find_vector_file(directory: Path) -> Path | None:
    present = [directory / n for n in VECTOR_FILES if (directory / n).is_file()]
    if len(present) > 1:
        raise DataError(f"{directory}: several track vector files: {[p.name for p in present]}. "
                        "Fix: keep only one of them")
    return present[0] if present else None


def read_table_file(path: Path, *, pandas_na: bool = False) -> pd.DataFrame:
    """Read one parquet or CSV table; unreadable files become DataErrors naming the file.

    CSV fields are missing when empty; with ``pandas_na`` (the challenge's own CSV files) also
    when they hold one of pandas' default missing-value tokens (``NA``, ``N/A``, ``NULL``,
    ``None``, ``nan``, ``NaN``, ``-nan``, ``#N/A``, ``<NA>`` ...), as the 2022 harness read
    them. Parquet values are taken as stored: only nulls are missing.
    """
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        header = pd.read_csv(path, nrows=0).columns
        dtype = {c: "str" for c in TEXT_COLUMNS if c in header}
        if pandas_na:
            frame = pd.read_csv(path, engine="pyarrow", dtype=dtype)
        else:
            # Only empty fields are missing: "NA" is Namibia's country code, "n" a gender.
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""], engine="pyarrow",
                                dtype=dtype)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise data_error(str(path), None, f"cannot read the file ({exc})",
                         fix="check that it is a complete parquet/CSV file") from exc
    return _drop_saved_index(frame)


def _drop_saved_index(frame: pd.DataFrame) -> pd.DataFrame:
    """A leading unnamed column is a pandas index written with ``to_csv``: not data."""
    if len(frame.columns) and str(frame.columns[0]) in ("", "Unnamed: 0"):
        return frame.drop(columns=frame.columns[0])
    return frame


def load_local(directory: str | os.PathLike, *, validate: bool = True) -> Tables:
    """Load a dataset from a local directory in the EvalRS schema (see the module doc)."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ConfigError(f"source {str(directory)!r}: no such directory. Fix: pass the path of "
                          "a directory holding events/users/tracks files")
    if is_tables_dir(root):
        tables = read_tables(root)
        return validate_tables(tables, files=_written_names(root)) if validate else tables
    files = find_table_files(root)
    if any(path.name.startswith("evalrs_") for path in files.values()):
        from evaluation.data._lfm import load_challenge_dir  # the challenge's own files

        return load_challenge_dir(root)
    frames = {name: read_table_file(path) for name, path in files.items()}
    names = {name: str(path) for name, path in files.items()}
    vector_path = find_vector_file(root)
    tables = validate_tables(Tables(frames["events"], frames["users"], frames["tracks"],
                                    source=str(root)), files=names)
    if vector_path is not None:
        # Vector ids are matched against the canonical (validated) tracks table.
        vectors = load_vector_file(vector_path, tables.tracks.index.to_numpy())
        tables.track_vectors = check_track_vectors(vectors, tables.tracks.index.to_numpy(),
                                                   str(vector_path), names["tracks"])
    return tables


def _written_names(root: Path) -> dict[str, str]:
    names = {name: str(root / f"{name}.parquet") for name in TABLES}
    names["track_vectors"] = str(root / "track_vectors.npy")
    return names


def write_csv_dir(tables: Tables, directory: str | os.PathLike) -> Path:
    """Write ``tables`` as CSV files readable by :func:`load_local` (for exchange, not speed)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    from evaluation._util.atomic import atomic_path

    for name in TABLES:
        frame = getattr(tables, name)
        with atomic_path(root / f"{name}.csv") as tmp:
            frame.to_csv(tmp, index=not isinstance(frame.index, pd.RangeIndex))
    if tables.track_vectors is not None:
        with atomic_path(root / "track_vectors.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, track_ids=tables.track_vectors.track_ids,
                     vectors=tables.track_vectors.vectors)
    return root
