"""MovieLens ratings mapped onto the EvalRS schema.

Formats, detected from the files present:

* ml-100k: ``u.data`` (user, item, rating, unix time; whitespace-separated), ``u.user`` and
  ``u.item`` (pipe-separated, latin-1);
* ml-1m (and ml-10m): ``ratings.dat``, ``movies.dat`` and, if present, ``users.dat``
  (``::``-separated, latin-1);
* ml-latest / ml-latest-small / ml-25m: ``ratings.csv`` and ``movies.csv``.

Mapping: movies are tracks (``track`` = the title). MovieLens has no artists or albums, so each
movie is its own artist and its own album (``artist_id`` = ``album_id`` = the movie id,
``artist`` = ``albums`` = the title): artist-level statistics then equal movie-level ones,
rather than pooling unrelated movies under a genre. Events keep the real timestamps, the
rating as a float ``rating`` column, and ``user_track_count`` = the rating rounded up to an
integer >= 1 (so 0.5 -> 1, 3.5 -> 4). Users get ``gender`` ('m'/'f') and ``age`` where the
dataset has them (ml-1m's age is the lower edge of its age band, 1 meaning "under 18"),
no country, ``playcount`` = the sum of their ``user_track_count`` and ``timestamp`` = their
first rating. There are no track vectors.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation.data._schema import data_error, validate_tables
from evaluation.data._tables import Tables
from evaluation.errors import ConfigError, DataError

FORMATS: dict[str, tuple[str, ...]] = {
    "ml-100k": ("u.data",), "ml-1m": ("ratings.dat",), "ml-latest": ("ratings.csv",)}


def detect_format(directory: Path) -> str:
    """Which MovieLens format ``directory`` holds (by the ratings file present)."""
    for name, (ratings, *_rest) in FORMATS.items():
        if (directory / ratings).is_file():
            return name
    found = sorted(p.name for p in directory.iterdir())[:20] if directory.is_dir() else []
    raise DataError(f"{directory}: not a MovieLens directory: expected u.data (ml-100k), "
                    f"ratings.dat (ml-1m) or ratings.csv (ml-latest), found {found}. Fix: pass "
                    "the folder that holds the ratings file")


def load_movielens(directory: str | os.PathLike) -> Tables:
    """Load a MovieLens directory (format detected from its files) in the EvalRS schema."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ConfigError(f"source 'movielens:{directory}': no such directory. Fix: pass the "
                          "folder of an extracted MovieLens dataset, e.g. movielens:data/ml-100k")
    fmt = detect_format(root)
    reader = {"ml-100k": _read_100k, "ml-1m": _read_1m, "ml-latest": _read_latest}[fmt]
    ratings, movies, users, files = reader(root)
    tables = _to_schema(ratings, movies, users, source=f"movielens:{root}")
    return validate_tables(tables, files=files)


# --- readers: ratings [user_id, movie_id, rating, timestamp], movies [movie_id, title],
#     users [user_id, age, gender] or None; plus file names for messages -------------------

def _read_100k(root: Path):
    data, item, user = root / "u.data", root / "u.item", root / "u.user"
    # Whitespace, not just tabs: one line of the published file has a stray space.
    ratings = _read(data, sep=r"\s+", names=["user_id", "movie_id", "rating", "timestamp"])
    movies = _read(item, sep="|", names=["movie_id", "title"], usecols=[0, 1],
                   encoding="latin-1", quoting=3)  # titles may hold quote characters
    users = None
    if user.is_file():
        users = _read(user, sep="|", names=["user_id", "age", "gender"], usecols=[0, 1, 2])
    files = {"events": str(data), "tracks": str(item), "users": str(user)}
    return ratings, movies, users, files


def _read_1m(root: Path):
    data, item, user = root / "ratings.dat", root / "movies.dat", root / "users.dat"
    ratings = _read_dat(data, ["user_id", "movie_id", "rating", "timestamp"])
    movies = _read_dat(item, ["movie_id", "title", "genres"])[["movie_id", "title"]]
    users = None
    if user.is_file():
        users = _read_dat(user, ["user_id", "gender", "age", "occupation", "zip"])
        users = users[["user_id", "age", "gender"]]
    files = {"events": str(data), "tracks": str(item), "users": str(user)}
    return ratings, movies, users, files


def _read_latest(root: Path):
    data, item = root / "ratings.csv", root / "movies.csv"
    ratings = _read(data, sep=",", header=0, usecols=["userId", "movieId", "rating",
                                                       "timestamp"])
    ratings.columns = ["user_id", "movie_id", "rating", "timestamp"]
    movies = _read(item, sep=",", header=0, usecols=["movieId", "title"])
    movies.columns = ["movie_id", "title"]
    files = {"events": str(data), "tracks": str(item), "users": str(data)}
    return ratings, movies, None, files


def _read(path: Path, **kwargs) -> pd.DataFrame:
    if not path.is_file():
        raise data_error(str(path), None, "file missing",
                         fix="extract the complete MovieLens archive into the folder")
    kwargs.setdefault("header", None)
    try:
        frame = pd.read_csv(path, engine="c", **kwargs)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise data_error(str(path), None, f"cannot parse the file ({exc})",
                         fix="check that it is an unmodified MovieLens file") from exc
    if "title" in frame.columns:
        frame["title"] = frame["title"].astype("str")
    return frame


def _read_dat(path: Path, names: list[str]) -> pd.DataFrame:
    """``::``-separated latin-1 files: turned into tabs so that the fast C parser reads them."""
    if not path.is_file():
        raise data_error(str(path), None, "file missing",
                         fix="extract the complete MovieLens archive into the folder")
    text = path.read_bytes().decode("latin-1").replace("::", "\t")
    try:
        frame = pd.read_csv(io.StringIO(text), sep="\t", header=None, names=names,
                            engine="c", quoting=3)
    except ValueError as exc:
        raise data_error(str(path), None, f"cannot parse the file ({exc})",
                         fix="check that it is an unmodified MovieLens file") from exc
    return frame


# --- mapping -----------------------------------------------------------------------------------

def _to_schema(ratings: pd.DataFrame, movies: pd.DataFrame, users: pd.DataFrame | None,
               source: str) -> Tables:
    rating = pd.to_numeric(ratings["rating"], errors="coerce").to_numpy(dtype=np.float64)
    count = np.maximum(np.ceil(rating), 1.0)  # NaN stays NaN: validation names the rows
    movie = ratings["movie_id"]
    events = pd.DataFrame({
        "user_id": ratings["user_id"], "artist_id": movie, "album_id": movie,
        "track_id": movie, "timestamp": ratings["timestamp"], "user_track_count": count,
        "rating": rating,
    })
    title = movies["title"].astype("str").to_numpy()
    tracks = pd.DataFrame({
        "track": title, "artist_id": movies["movie_id"].to_numpy(), "artist": title,
        "albums": title, "albums_id": movies["movie_id"].to_numpy(),
    }, index=pd.Index(movies["movie_id"].to_numpy(), name="track_id"))

    per_user = pd.DataFrame({"user_id": ratings["user_id"], "count": count,
                             "timestamp": ratings["timestamp"]}).groupby("user_id", sort=True)
    stats = per_user.agg(playcount=("count", "sum"), timestamp=("timestamp", "min"))
    if users is None:
        users = pd.DataFrame({"user_id": stats.index.to_numpy()})
        users["age"] = np.nan
        users["gender"] = pd.Series([np.nan] * len(users), dtype="str")
    users = users.set_index("user_id")
    gender = users["gender"].astype("str").str.lower()
    frame = pd.DataFrame({
        "country": pd.Series(np.nan, index=users.index, dtype="str"),
        "age": pd.to_numeric(users["age"], errors="coerce").astype(np.float64),
        "gender": gender,
    }, index=users.index)
    # Users without ratings (none in the published files) get playcount 0 and timestamp 0.
    frame["playcount"] = stats["playcount"].reindex(frame.index).fillna(0)
    frame["timestamp"] = stats["timestamp"].reindex(frame.index).fillna(0)
    return Tables(events=events, users=frame, tracks=tracks, source=source)
