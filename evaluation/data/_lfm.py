"""The real EvalRS challenge data (Last.fm LFM-1b subsets): download, convert, cache.

Two editions are named sources: ``"lfm"`` (the 2022 challenge zip) and ``"lfm2023"`` (the 2023
one). A zip is downloaded once (resumable, verified; see :mod:`._download`) into
``cache_dir()/lfm/<name>-<hash of the URL>/`` (one folder per URL, so the editions never share
a cache) and converted to the harness's parquet layout beside it, so every later load reads
parquet and makes no network request. Two layouts are understood, wherever they sit inside
the zip:

* 2022: ``evalrs_events.csv``, ``evalrs_users.csv``, ``evalrs_tracks.csv`` and ``song2vec.wv``
  (gensim KeyedVectors whose keys are track ids written as strings);
* 2023: ``evalrs_events.parquet``, ``evalrs_users.parquet``, ``evalrs_tracks.parquet`` and
  ``evalrs_song_embeddings.parquet`` (columns ``urlSong`` and ``song_embedding``), keyed by
  the song's URL and mapped to track ids through the tracks table's ``urlSong`` column (tracks
  sharing a URL share its vector). When the folder also holds ``song2vec.wv`` (the vectors
  the 2023 tests compared tracks with) that file is used instead.

The challenge CSV files are read as the 2022 harness read them, with pandas' default
missing-value tokens: ``NA``, ``N/A``, ``NULL``, ``None``, ``nan`` or an empty field in
``country`` or ``gender`` is missing (so ``NA`` is never Namibia there). Parquet values are
taken as stored. Columns of the challenge files beyond the EvalRS schema (user profile
statistics, ``urlSong``, ``lastfm_id``, ...) are dropped with a warning;
``registered_unixtime`` is read as the users' ``timestamp``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import warnings
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from evaluation._util.paths import cache_dir as default_cache_dir
from evaluation.data._download import download, verify_file
from evaluation.data._local import find_table_files, find_vector_file, read_table_file
from evaluation.data._parquet import is_tables_dir, read_tables, write_tables
from evaluation.data._schema import (
    EVENT_SCHEMA,
    OPTIONAL_EVENT_SCHEMA,
    TRACK_SCHEMA,
    USER_SCHEMA,
    check_track_vectors,
    validate_tables,
)
from evaluation.data._tables import Tables
from evaluation.data._vectors import load_vector_file
from evaluation.errors import DataError, DownloadError

DEFAULT_URL = "https://evarl-2022-public-dataset.s3.us-east-1.amazonaws.com/evalrs_dataset.zip"
URL_ENV = "EVALRS_LFM_URL"
DEFAULT_URL_2023 = "https://evalrs.object.lga1.coreweave.com/evalrs_dataset_KDD_2023.zip"
URL_ENV_2023 = "EVALRS_LFM2023_URL"
#: source name -> (default URL, environment variable overriding it)
EDITIONS = {"lfm": (DEFAULT_URL, URL_ENV), "lfm2023": (DEFAULT_URL_2023, URL_ENV_2023)}
SONG_EMBEDDINGS = "evalrs_song_embeddings.parquet"
SONG_URL = "urlSong"
SONG_VECTOR = "song_embedding"
ALIASES = {"users": {"registered_unixtime": "timestamp"}}
KEEP = {
    "events": [*EVENT_SCHEMA, *OPTIONAL_EVENT_SCHEMA],
    "users": ["user_id", *USER_SCHEMA],
    "tracks": ["track_id", *TRACK_SCHEMA],
}


def lfm_url(url: str | None = None, source: str = "lfm") -> str:
    """The dataset URL of ``source``: the argument, else its environment variable
    (``$EVALRS_LFM_URL``, ``$EVALRS_LFM2023_URL``), else the edition's public bucket."""
    default, env = EDITIONS[source]
    return url or os.environ.get(env) or default


def lfm_cache_dir(url: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Directory caching the dataset at ``url``: one per URL, under ``cache_dir()/lfm``."""
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir() / "lfm"
    name = Path(urlparse(url).path).stem or "dataset"
    return root / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:10]}"


def load_lfm(*, url: str | None = None, sha256: str | None = None,
             cache_dir: str | os.PathLike | None = None, progress: bool = True,
             source: str = "lfm") -> Tables:
    """The challenge dataset ``source`` (``"lfm"``: 2022, ``"lfm2023"``): from the parquet
    cache, else downloaded, converted and cached."""
    url = lfm_url(url, source)
    root = lfm_cache_dir(url, cache_dir)
    tables_dir = root / "tables"
    if is_tables_dir(tables_dir):
        try:
            tables = read_tables(tables_dir)
            tables.source = source
            return tables
        except DataError as exc:
            warnings.warn(f"{tables_dir}: damaged cache, converting the dataset again ({exc})",
                          UserWarning, stacklevel=2)
    zip_path = root / (Path(urlparse(url).path).name or "dataset.zip")
    if zip_path.exists():
        try:
            verify_file(zip_path, url=url, sha256=sha256, check_zip=True)
        except DownloadError:
            pass  # the damaged cached download was removed: fetch it again
    if not zip_path.exists():
        download(url, zip_path, sha256=sha256, progress=progress, check_zip=True)
    tables = tables_from_zip(zip_path, source=source, progress=progress)
    try:
        write_tables(tables, tables_dir)
    except OSError as exc:
        warnings.warn(f"could not cache the converted dataset in {tables_dir} ({exc}); the next "
                      "load converts it again", UserWarning, stacklevel=2)
    return tables


def tables_from_zip(zip_path: str | os.PathLike, *, source: str = "lfm",
                    progress: bool = True) -> Tables:
    """Extract the challenge zip to a temporary directory and read it (2022 or 2023 layout)."""
    zip_path = Path(zip_path)
    work = Path(tempfile.mkdtemp(prefix=".extract-", dir=zip_path.parent))
    try:
        try:
            with zipfile.ZipFile(zip_path) as zf:
                _safe_extract(zf, work)
        except zipfile.BadZipFile as exc:
            raise DownloadError(f"{zip_path}: not a readable zip ({exc}). Fix: delete it and "
                                "load again to download it afresh") from exc
        return load_challenge_dir(_find_layout(work, zip_path), source=source)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _safe_extract(zf: zipfile.ZipFile, target: Path) -> None:
    root = target.resolve()
    for member in zf.infolist():
        dest = (target / member.filename).resolve()
        if root not in dest.parents and dest != root:
            raise DownloadError(f"zip member {member.filename!r} points outside the archive's "
                                "folder; refusing to extract it")
    zf.extractall(target)


def _find_layout(work: Path, zip_path: Path) -> Path:
    """The folder of the extracted zip that holds ``evalrs_events.csv|parquet``."""
    hits = sorted(p.parent for pattern in ("evalrs_events.csv", "evalrs_events.parquet")
                  for p in work.rglob(pattern) if "__MACOSX" not in p.parts)
    if not hits:
        names = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())[:20]
        raise DataError(f"{zip_path}: no evalrs_events.csv or evalrs_events.parquet inside "
                        f"(found {names}). Fix: check that the URL points at the EvalRS dataset")
    return hits[0]


def load_challenge_dir(directory: str | os.PathLike, *, source: str | None = None) -> Tables:
    """Read the challenge files in ``directory`` (2022 CSV or 2023 parquet layout)."""
    directory = Path(directory)
    files = find_table_files(directory)
    raw = {name: read_table_file(path, pandas_na=True) for name, path in files.items()}
    frames = {name: _project(name, frame, files[name]) for name, frame in raw.items()}
    names = {name: str(path) for name, path in files.items()}
    tables = validate_tables(Tables(frames["events"], frames["users"], frames["tracks"],
                                    source=source or str(directory)), files=names)
    track_ids = tables.tracks.index.to_numpy()
    vector_path = find_vector_file(directory)
    vectors = None
    if vector_path is not None:
        vectors = load_vector_file(vector_path, track_ids)
    elif (directory / SONG_EMBEDDINGS).is_file():
        vector_path = directory / SONG_EMBEDDINGS
        vectors = song_embedding_vectors(vector_path, raw["tracks"], files["tracks"])
    if vectors is not None:
        tables.track_vectors = check_track_vectors(vectors, track_ids, str(vector_path),
                                                   names["tracks"])
    return tables


def song_embedding_vectors(path: Path, tracks: pd.DataFrame, tracks_file: Path):
    """Track vectors from the 2023 song embeddings (keyed by ``urlSong``) via the tracks table.

    Returns None, with a warning that the vector tests cannot be computed, when the tracks
    table has no ``urlSong`` column to map the songs to track ids with.
    """
    from evaluation.data._schema import data_error
    from evaluation.data._vectors import vectors_from_frame

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


def _project(name: str, frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Keep the schema's columns of a challenge file (renaming known aliases)."""
    aliases = {old: new for old, new in ALIASES.get(name, {}).items()
               if old in frame.columns and new not in frame.columns}
    frame = frame.rename(columns=aliases)
    keep = KEEP[name]
    dropped = [c for c in frame.columns if c not in keep and c != frame.index.name]
    if dropped:
        warnings.warn(f"{path}: ignoring {len(dropped)} columns outside the EvalRS schema: "
                      f"{dropped[:8]}{' ...' if len(dropped) > 8 else ''}", UserWarning,
                      stacklevel=3)
        frame = frame.drop(columns=dropped)
    return frame
