"""``reclist.utils.config`` of reclist 0.x: the addresses of reclist's example datasets, its
download helper, its cache folder and the ``Dataset`` names."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

COVEO_INTERACTION_DATASET_S3_URL = ("https://reclist-datasets-6d3c836d-6djh887d.s3.us-west-2."
                                    "amazonaws.com/coveo_sigir.zip")
SPOTIFY_PLAYLIST_DATASET_S3_URL = ("https://reclist-datasets-6d3c836d-6djh887d.s3.us-west-2."
                                   "amazonaws.com/small_spotify_playlist.zip")
MOVIELENS_DATASET_S3_URL = ("https://reclist-datasets-6d3c836d-6djh887d.s3.us-west-2."
                            "amazonaws.com/movielens_25m.zip")
MOVIELENS_UI_DATASET_S3_URL = ("https://reclist-datasets-6d3c836d-6djh887d.s3.us-west-2."
                               "amazonaws.com/movielens_25m_useritem.zip")

__all__ = ["COVEO_INTERACTION_DATASET_S3_URL", "MOVIELENS_DATASET_S3_URL",
           "MOVIELENS_UI_DATASET_S3_URL", "SPOTIFY_PLAYLIST_DATASET_S3_URL", "Dataset",
           "download_with_progress", "get_cache_directory"]


class Dataset(Enum):
    """reclist's example datasets."""

    COVEO = "coveo"
    COVEO_INTERNAL = "coveo-internal"
    MOVIELENS = "movielens"
    SPOTIFY = "spotify"


def download_with_progress(url: str, destination: str | os.PathLike) -> None:
    """Download ``url`` to the file ``destination`` with a progress bar; a failed request
    ends the program (``SystemExit`` with the error), as reclist 0.x did."""
    import requests
    from tqdm import tqdm

    try:
        response = requests.get(url, stream=True, timeout=60)
        response.raise_for_status()
    except requests.exceptions.RequestException as e:
        raise SystemExit(e) from e
    with tqdm.wrapattr(open(destination, "wb"), "write", miniters=1, desc=url.split("/")[-1],
                       total=int(response.headers.get("content-length", 0))) as out:
        for chunk in response.iter_content(chunk_size=4096):
            out.write(chunk)


def _user_cache_root() -> Path:
    """The user's cache folder of the platform (the rule of ``appdirs.user_cache_dir``)."""
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
        return Path(local) / "reclist" / "reclist" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "reclist"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reclist"


def get_cache_directory() -> str:
    """reclist's cache folder (created): ``~/.cache/reclist`` on Linux (``XDG_CACHE_HOME``
    respected), ``~/Library/Caches/reclist`` on macOS, ``%LOCALAPPDATA%\\reclist\\reclist\\Cache``
    on Windows."""
    folder = _user_cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    return os.fspath(folder)
