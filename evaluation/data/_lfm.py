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

Every column of the challenge files is kept under its own name (the users' profile statistics,
``registered_unixtime``, ``country_id``, ``gender_id``; the 2023 tracks' ``urlSong`` and
``lastfm_id``). Reading the extracted folder (missing-value tokens, dtypes, the vectors) is
:func:`evaluation.data._local.load_challenge_dir`'s work; this module only downloads, unpacks
and caches.
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

from evaluation._util.paths import cache_dir as default_cache_dir
from evaluation.data._download import download, verify_file
from evaluation.data._local import load_challenge_dir
from evaluation.data._parquet import is_tables_dir, read_tables, write_tables
from evaluation.data._tables import Tables
from evaluation.errors import DataError, DownloadError

DEFAULT_URL = "https://evarl-2022-public-dataset.s3.us-east-1.amazonaws.com/evalrs_dataset.zip"
URL_ENV = "EVALRS_LFM_URL"
DEFAULT_URL_2023 = "https://evalrs.object.lga1.coreweave.com/evalrs_dataset_KDD_2023.zip"
URL_ENV_2023 = "EVALRS_LFM2023_URL"
#: The folder of the converted tables beside the zip. Versioned: ``tables`` (before) held only
#: the EvalRS schema's columns, ``tables-2`` every column of the challenge files.
CONVERTED = "tables-2"
#: source name -> (default URL, environment variable overriding it)
EDITIONS = {"lfm": (DEFAULT_URL, URL_ENV), "lfm2023": (DEFAULT_URL_2023, URL_ENV_2023)}


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
    tables_dir = root / CONVERTED
    if is_tables_dir(tables_dir):
        try:
            tables = read_tables(tables_dir, upgrade=True)
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
