"""Small hand-written copies of the challenge's file layouts (2022 CSV + song2vec.wv, 2023
parquet + evalrs_song_embeddings.parquet), shared by the source and download tests and the
challenge-tables benchmark.

Column names and codes follow the public challenge code (RecList/evalRS-CIKM-2022 and
RecList/evalRS-KDD-2023, ``ChallengeDataset`` in ``evaluation/EvalRSRunner.py``, and the
participants' models that read the users' profile statistics): users carry ``country`` (missing
when unknown), ``age`` (-1 when unknown), ``gender``, ``playcount``, ``registered_unixtime``,
the listening-profile statistics of LFM-1b and ``country_id``/``gender_id`` (-1 when unknown);
the 2023 tracks table keeps ``track_id`` as a column next to ``urlSong`` and ``lastfm_id``;
the 2023 song embeddings are ``urlSong`` plus a list column ``song_embedding``."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

USERS = [11, 12, 13]
TRACKS = [501, 502, 503, 504]
# (user, track, count); artist = track // 100 * 7, album = track + 1000
PAIRS = [(12, 503, 4), (11, 501, 2), (11, 503, 1), (13, 502, 9), (12, 504, 3), (11, 504, 5)]
VECTOR_DIM = 5


def events_frame() -> pd.DataFrame:
    u, t, c = (np.array(x) for x in zip(*PAIRS, strict=True))
    return pd.DataFrame({
        "user_id": u, "artist_id": t // 100 * 7, "album_id": t + 1000, "track_id": t,
        "timestamp": 1_400_000_000 + np.arange(len(u)) * 60, "user_track_count": c,
    })


#: The LFM-1b listening-profile statistics of the challenge's users table (the names that
#: participants' models read).
PROFILE_COLUMNS = [
    "novelty_artist_avg_month", "novelty_artist_avg_6months", "novelty_artist_avg_year",
    "mainstreaminess_avg_month", "mainstreaminess_avg_6months", "mainstreaminess_avg_year",
    "mainstreaminess_global", "cnt_listeningevents", "cnt_distinct_tracks",
    "cnt_distinct_artists", "cnt_listeningevents_per_week",
    *[f"relative_le_per_weekday{d}" for d in range(1, 8)],
    *[f"relative_le_per_hour{h}" for h in range(24)],
]
#: The integer profile statistics (counts); the others are shares and averages (floats).
PROFILE_COUNTS = ("cnt_listeningevents", "cnt_distinct_tracks", "cnt_distinct_artists")


def users_frame() -> pd.DataFrame:
    """The challenge's users table: user 12 has an unknown country ("NA" in the 2022 CSV, read
    as missing) and age (-1); user 13 an unknown country (empty); both country id -1."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "user_id": USERS, "country": ["UK", "NA", None], "age": [25, -1, 40],
        "gender": ["m", "n", "f"], "playcount": [100, 50, 9],
        "registered_unixtime": [1_300_000_000, 1_300_000_500, 1_300_001_000],
    })
    for i, name in enumerate(PROFILE_COLUMNS):
        frame[name] = (rng.integers(1, 500, len(USERS)) if name in PROFILE_COUNTS
                       else np.round(rng.random(len(USERS)), 6))
        if name == "novelty_artist_avg_month":
            frame[name] = [0.1, 0.2, 0.3]
        if i == 1:
            frame.loc[2, name] = np.nan  # a statistic LFM-1b lacks for a user
    frame["country_id"] = [7, -1, -1]
    frame["gender_id"] = [0, 2, 1]
    return frame


def tracks_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "track_id": TRACKS, "track": ["One", "1999", "Three", "Four"],
        "artist_id": [35, 35, 35, 35], "artist": ["X", "X", "X", "X"],
        "albums": ["['A']", "['B']", "['C']", "['D']"],
        "albums_id": ["[1501]", "[1502]", "[1503]", "[1504]"],
    })


def vectors() -> dict[str, np.ndarray]:
    """Key -> vector: every track but 502, plus a key that is no id and one of no track."""
    rng = np.random.default_rng(7)
    keys = ["504", "501", "UNK", "503", "999"]
    return {k: rng.normal(size=VECTOR_DIM).astype(np.float32) for k in keys}


def write_keyed_vectors(path: Path) -> None:
    from gensim.models import KeyedVectors

    vecs = vectors()
    kv = KeyedVectors(vector_size=VECTOR_DIM)
    kv.add_vectors(list(vecs), np.stack(list(vecs.values())))
    kv.save(str(path))


def write_2022(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    events_frame().to_csv(directory / "evalrs_events.csv")  # with pandas' unnamed index
    users_frame().to_csv(directory / "evalrs_users.csv", index=False)
    tracks_frame().to_csv(directory / "evalrs_tracks.csv", index=False)
    write_keyed_vectors(directory / "song2vec.wv")
    return directory


# track -> song URL: 503 and 504 are one song (they share its vector); 502 has no URL
SONG_URLS = {501: "wasabi/song/a", 502: None, 503: "wasabi/song/c", 504: "wasabi/song/c"}


def song_embeddings() -> pd.DataFrame:
    """The 2023 song embeddings: one per URL, plus a URL of no track."""
    rng = np.random.default_rng(11)
    urls = ["wasabi/song/c", "wasabi/song/a", "wasabi/song/zzz"]
    return pd.DataFrame({"urlSong": urls,
                         "song_embedding": [rng.normal(size=VECTOR_DIM).astype(np.float32)
                                            for _ in urls]})


def write_2023(directory: Path, *, with_urls: bool = True) -> Path:
    """The 2023 layout. Its parquet files were written from frames read with pandas'
    defaults, so the country that the 2022 CSV spells ``NA`` is stored as a null here."""
    directory.mkdir(parents=True, exist_ok=True)
    events_frame().to_parquet(directory / "evalrs_events.parquet")
    users = users_frame()
    users["country"] = users["country"].replace({"NA": None})
    users.to_parquet(directory / "evalrs_users.parquet", index=False)
    tracks = tracks_frame()
    if with_urls:
        tracks["urlSong"] = tracks["track_id"].map(SONG_URLS)
    tracks["lastfm_id"] = tracks["track_id"] + 7_000
    tracks.to_parquet(directory / "evalrs_tracks.parquet", index=False)
    song_embeddings().to_parquet(directory / "evalrs_song_embeddings.parquet", index=False)
    return directory


def zip_directory(directory: Path, top: str = "evalrs_dataset") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                zf.write(path, f"{top}/{path.relative_to(directory)}")
    return buf.getvalue()
