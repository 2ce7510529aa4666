"""A local directory of table files: the EvalRS schema, or the challenge's own files.

Each table is one file named ``events``, ``users`` and ``tracks`` (or the challenge's
``evalrs_events``, ``evalrs_users``, ``evalrs_tracks``) with the extension ``.parquet`` or
``.csv``. Track vectors are optional: ``track_vectors.parquet`` (a ``track_id`` column plus
the vector), ``track_vectors.npz``, ``track_vectors.npy`` with ``track_vector_ids.npy``, or the
challenge's ``song2vec.wv``. A directory written by ``write_tables`` (``python -m evaluation
data generate --out DIR``) is read with its fast reader.

The challenge's own files (``evalrs_*``, 2022 CSV or 2023 parquet) are read as the 2022 harness
read them, with pandas' default missing-value tokens: ``NA``, ``N/A``, ``NULL``, ``None``,
``nan`` or an empty field in ``country`` or ``gender`` is missing (so ``NA`` is never Namibia
there). Parquet values are taken as stored. Every column of the files is kept under its own
name, as the challenge's loaders gave them to participants: the users' ``registered_unixtime``,
``age`` (``-1`` when unknown), ``country_id`` and ``gender_id`` and listening-profile statistics
(``novelty_artist_avg_month``, ``relative_le_per_hour0``, ...), the 2023 tracks' ``urlSong``
and ``lastfm_id``. The 2023 song embeddings
(``evalrs_song_embeddings.parquet``, keyed by ``urlSong``) are mapped to track ids through the
tracks table's ``urlSong`` column, unless ``song2vec.wv`` sits beside them.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evaluation._util.atomic import atomic_path
from evaluation.data._parquet import is_tables_dir, read_tables
from evaluation.data._schema import (
    check_track_vectors,
    data_error,
    validate_tables,
)
from evaluation.data._tables import Tables, TrackVectors
from evaluation.data._vectors import VECTOR_FILES, load_vector_file, vectors_from_frame
from evaluation.errors import ConfigError, DataError

TABLES = ("events", "users", "tracks")
TEXT_COLUMNS = ("country", "gender", "track", "artist", "albums", "albums_id")
SONG_EMBEDDINGS = "evalrs_song_embeddings.parquet"
SONG_URL = "urlSong"
SONG_VECTOR = "song_embedding"


def table_candidates(name: str) -> list[str]:
    """The file names the table ``name`` may have, in the order they are looked for."""
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
    """The track vector file in ``directory`` (None when there is none); DataError if several."""
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
    """Load a dataset from a local directory of table files.

    Parameters
    ----------
    directory : str or path
        A directory in the EvalRS schema, one written by ``write_tables``, or a folder of
        the challenge's own ``evalrs_*`` files (see the module documentation).
    validate : bool, default True
        Check the fast-reader layout against the schema (the other layouts always are).

    Returns
    -------
    Tables
        The dataset, with track vectors when the directory has them.

    Raises
    ------
    ConfigError
        When ``directory`` is not a directory.
    DataError
        When a table is missing, ambiguous, unreadable or breaks the schema.
    """
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ConfigError(f"source {str(directory)!r}: no such directory. Fix: pass the path of "
                          "a directory holding events/users/tracks files")
    if is_tables_dir(root):
        tables = read_tables(root)
        return validate_tables(tables, files=_written_names(root)) if validate else tables
    files = find_table_files(root)
    challenge = any(path.name.startswith("evalrs_") for path in files.values())
    return _read_dir(root, files, challenge=challenge, source=str(root))


def load_challenge_dir(directory: str | os.PathLike, *, source: str | None = None) -> Tables:
    """Read the challenge's own files in ``directory`` (2022 CSV or 2023 parquet layout).

    Parameters
    ----------
    directory : str or path
        The folder holding ``evalrs_events``, ``evalrs_users`` and ``evalrs_tracks``.
    source : str, optional
        The source name recorded in the tables (default: the directory).

    Returns
    -------
    Tables
        The validated dataset, with the track vectors the folder provides.
    """
    directory = Path(directory)
    return _read_dir(directory, find_table_files(directory), challenge=True,
                     source=source or str(directory))


def _read_dir(root: Path, files: dict[str, Path], *, challenge: bool, source: str) -> Tables:
    """The validated tables (and vectors) of the table ``files`` found in ``root``."""
    raw = {name: read_table_file(path, pandas_na=challenge) for name, path in files.items()}
    names = {name: str(path) for name, path in files.items()}
    tables = validate_tables(Tables(raw["events"], raw["users"], raw["tracks"], source=source),
                             files=names)
    # vector ids are matched against the canonical (validated) tracks table
    track_ids = tables.tracks.index.to_numpy()
    vector_path = find_vector_file(root)
    vectors = None
    if vector_path is not None:
        vectors = load_vector_file(vector_path, track_ids)
    elif challenge and (root / SONG_EMBEDDINGS).is_file():
        vector_path = root / SONG_EMBEDDINGS
        vectors = song_embedding_vectors(vector_path, raw["tracks"], files["tracks"])
    if vectors is not None:
        tables.track_vectors = check_track_vectors(vectors, track_ids, str(vector_path),
                                                   names["tracks"])
    return tables


def _written_names(root: Path) -> dict[str, str]:
    """The file names ``write_tables`` gives each table, for error messages."""
    names = {name: str(root / f"{name}.parquet") for name in TABLES}
    names["track_vectors"] = str(root / "track_vectors.npy")
    return names


def write_csv_dir(tables: Tables, directory: str | os.PathLike) -> Path:
    """Write ``tables`` as CSV files readable by :func:`load_local` (for exchange, not speed)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        frame = getattr(tables, name)
        with atomic_path(root / f"{name}.csv") as tmp:
            frame.to_csv(tmp, index=not isinstance(frame.index, pd.RangeIndex))
    if tables.track_vectors is not None:
        with atomic_path(root / "track_vectors.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, track_ids=tables.track_vectors.track_ids,
                     vectors=tables.track_vectors.vectors)
    return root


def song_embedding_vectors(path: Path, tracks: pd.DataFrame,
                           tracks_file: Path) -> TrackVectors | None:
    """Track vectors from the 2023 song embeddings (keyed by ``urlSong``) via the tracks table.

    Returns None, with a warning that the vector tests cannot be computed, when the tracks
    table has no ``urlSong`` column to map the songs to track ids with.
    """
    tracks = tracks.reset_index() if "track_id" not in tracks.columns else tracks
    if SONG_URL not in tracks.columns or "track_id" not in tracks.columns:
        warnings.warn(f"{path}: the song embeddings are keyed by {SONG_URL!r}, but {tracks_file} "
                      f"has no {SONG_URL!r} column to map them to track ids; the dataset is "
                      "loaded without track vectors and the vector tests (BEING_LESS_WRONG, "
                      "LATENT_DIVERSITY) cannot be computed. Fix: use the tracks table of the "
                      "same zip, or put song2vec.wv beside it", UserWarning, stacklevel=3)
        return None
    try:
        songs = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise data_error(str(path), None, f"cannot read the file ({exc})",
                         fix="check that it is a complete parquet file") from exc
    if SONG_URL not in songs.columns and songs.index.name == SONG_URL:
        songs = songs.reset_index()
    missing = [c for c in (SONG_URL, SONG_VECTOR) if c not in songs.columns]
    if missing:
        found = list(map(str, songs.columns))
        raise data_error(str(path), missing[0], "column missing (the 2023 song embeddings have "
                         f"{SONG_URL!r} and {SONG_VECTOR!r}; found {found})",
                         fix="use the evalrs_song_embeddings.parquet of the 2023 zip")
    songs = songs[[SONG_URL, SONG_VECTOR]].dropna()
    duplicated = songs[SONG_URL].duplicated()
    if duplicated.any():
        example = songs[SONG_URL][duplicated].iloc[0]
        warnings.warn(f"{path}: {int(duplicated.sum())} song URLs appear more than once; the "
                      f"first vector of each is used (e.g. {example!r})",
                      UserWarning, stacklevel=3)
        songs = songs[~duplicated]
    pairs = tracks[["track_id", SONG_URL]].dropna().merge(songs, on=SONG_URL, how="inner")
    if pairs.empty:
        warnings.warn(f"{path}: no song URL matches the {SONG_URL!r} of any track in "
                      f"{tracks_file}; the vector tests cannot be computed", UserWarning,
                      stacklevel=3)
        return None
    return vectors_from_frame(pairs[["track_id", SONG_VECTOR]], str(path))

