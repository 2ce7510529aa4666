"""Every source through ``load_source``: local directories (parquet, CSV, harness layout),
the challenge layouts (2022 CSV + song2vec.wv, 2023 parquet), MovieLens (real copies and a
hand-written ml-1m), the real HetRec Last.fm file, synthetic, and the dispatch errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks._challenge_files import (
    PAIRS,
    VECTOR_DIM,
    users_frame,
    vectors,
    write_2022,
    write_2023,
)
from evaluation.data import (
    Tables,
    load_source,
    synthetic_tables,
    validate_tables,
    write_tables,
)
from evaluation.data._local import write_csv_dir
from evaluation.errors import ConfigError, DataError
from tests._shared_data import shared_dataset
from tests.data._tables import good_tables, hetrec_tables


def _write_parquet_dir(tables: Tables, root: Path) -> Path:
    root.mkdir()
    tables.events.to_parquet(root / "events.parquet")
    tables.users.to_parquet(root / "users.parquet")
    tables.tracks.reset_index().to_parquet(root / "tracks.parquet")  # id as a column
    tv = tables.track_vectors
    pd.DataFrame({"track_id": tv.track_ids, "vector": list(tv.vectors)}).to_parquet(
        root / "track_vectors.parquet")
    return root


# --- local directories -------------------------------------------------------------------------

def test_local_parquet_round_trip(tmp_path):
    expected = validate_tables(good_tables())
    loaded = load_source(_write_parquet_dir(good_tables(), tmp_path / "d"))
    assert loaded.fingerprint() == expected.fingerprint()
    np.testing.assert_array_equal(loaded.track_vectors.vectors, expected.track_vectors.vectors)


def test_local_csv_round_trip(tmp_path):
    expected = validate_tables(good_tables())
    root = write_csv_dir(good_tables(), tmp_path / "d")
    loaded = load_source(str(root))
    assert loaded.fingerprint() == expected.fingerprint()
    assert loaded.users["country"].tolist()[2] == "NA"  # Namibia, not a missing value
    assert loaded.track_vectors is not None


def test_local_directory_written_by_write_tables(tmp_path):
    expected = validate_tables(good_tables())
    write_tables(expected, tmp_path / "d")
    assert load_source(tmp_path / "d").fingerprint() == expected.fingerprint()


def test_local_npy_vectors_need_their_ids(tmp_path):
    root = write_csv_dir(good_tables(vectors=False), tmp_path / "d")
    np.save(root / "track_vectors.npy", np.ones((3, 4), dtype=np.float32))
    with pytest.raises(DataError, match="track_vector_ids.npy is missing.*never matched"):
        load_source(root)
    np.save(root / "track_vector_ids.npy", np.array([1002, 1000, 1001]))
    vecs = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(root / "track_vectors.npy", vecs)
    loaded = load_source(root)
    np.testing.assert_array_equal(loaded.track_vectors.lookup([1002])[0], vecs[:1])


def test_local_ragged_vectors_are_a_dimension_error(tmp_path):
    root = write_csv_dir(good_tables(vectors=False), tmp_path / "d")
    pd.DataFrame({"track_id": [1000, 1001, 1002],
                  "vector": [[1.0, 2.0], [1.0, 2.0, 3.0], [0.0, 1.0]]}).to_parquet(
        root / "track_vectors.parquet")
    with pytest.raises(DataError, match=r"track_vectors\.parquet, column 'vector': wrong "
                                        r"dimension.*\[1001\].*\[3\]"):
        load_source(root)


def test_local_bad_value_names_the_file(tmp_path):
    root = write_csv_dir(good_tables(vectors=False), tmp_path / "d")
    text = (root / "events.csv").read_text().replace("1300000300,5", "1300000300,5x")
    (root / "events.csv").write_text(text)
    with pytest.raises(DataError, match=r"events\.csv, column 'user_track_count'.*'5x'"):
        load_source(root)


def test_local_missing_and_ambiguous_tables(tmp_path):
    root = write_csv_dir(good_tables(vectors=False), tmp_path / "d")
    (root / "users.csv").rename(root / "people.csv")
    with pytest.raises(DataError, match=r"no users table; expected one of \['users.parquet'"):
        load_source(root)
    (root / "people.csv").rename(root / "users.csv")
    good_tables().events.to_parquet(root / "events.parquet")
    with pytest.raises(DataError, match="several files for the events table"):
        load_source(root)


# --- the challenge layouts ---------------------------------------------------------------------

def test_2022_csv_layout_with_keyed_vectors(tmp_path):
    root = write_2022(tmp_path / "lfm2022")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables = load_source(root)
    messages = [str(w.message) for w in caught]
    assert not any("novelty_artist_avg_month" in m for m in messages)  # nothing dropped
    assert any("not track ids" in m and "'UNK'" in m for m in messages)
    assert any("not in the tracks table" in m and "999" in m for m in messages)

    assert len(tables.events) == len(PAIRS)
    assert tables.events["user_id"].tolist() == [p[0] for p in PAIRS]  # file order kept
    assert pd.isna(tables.users.loc[12, "country"])  # "NA" is missing, as the 2022 harness read it
    # every column of the file, under its own name, in the file's order
    assert list(tables.users.columns) == list(users_frame().columns.drop("user_id"))
    assert tables.users["registered_unixtime"].tolist() == [1_300_000_000, 1_300_000_500,
                                                            1_300_001_000]
    assert tables.users["age"].dtype == np.int32 and tables.users.loc[12, "age"] == -1
    assert tables.users["country_id"].tolist() == [7, -1, -1]
    assert tables.users["cnt_listeningevents"].dtype == np.int32
    assert tables.users["relative_le_per_hour23"].dtype == np.float64
    assert tables.users["novelty_artist_avg_6months"].isna().tolist() == [False, False, True]
    assert tables.tracks.loc[502, "track"] == "1999"  # a numeric title stays text

    tv = tables.track_vectors
    assert tv.dim == VECTOR_DIM
    assert tv.track_ids.tolist() == [501, 503, 504]
    expected = vectors()
    got, found = tv.lookup([503, 502, 504, 501])
    assert found.tolist() == [True, False, True, True]  # 502 has no vector: no row fallback
    np.testing.assert_array_equal(got[0], expected["503"])
    np.testing.assert_array_equal(got[2], expected["504"])
    np.testing.assert_array_equal(got[3], expected["501"])
    np.testing.assert_array_equal(got[1], np.zeros(VECTOR_DIM))


def test_2023_parquet_layout(tmp_path):
    root = write_2023(tmp_path / "lfm2023")
    tables = load_source(root)
    assert tables.track_vectors is not None  # song embeddings mapped through urlSong
    assert list(tables.users.columns) == list(users_frame().columns.drop("user_id"))
    assert {"urlSong", "lastfm_id"} <= set(tables.tracks.columns)
    assert len(tables.events) == len(PAIRS) and len(tables.users) == 3
    assert tables.events["user_track_count"].dtype == np.int32


def test_2022_and_2023_layouts_give_the_same_tables(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = load_source(write_2022(tmp_path / "a"))
        b = load_source(write_2023(tmp_path / "b"))
    a.track_vectors = None
    # the 2023 tracks add urlSong and lastfm_id; everything else is the same content
    tracks = b.tracks.drop(columns=["urlSong", "lastfm_id"])
    assert a.fingerprint() == Tables(b.events, b.users, tracks).fingerprint()


# --- MovieLens ---------------------------------------------------------------------------------

@pytest.mark.realdata
def test_movielens_100k():
    tables = load_source(f"movielens:{shared_dataset('ml-100k')}")
    assert (len(tables.events), len(tables.users), len(tables.tracks)) == (100_000, 943, 1_682)
    ev = tables.events
    first = ev.iloc[0]  # the line with the stray space: "196\t242\t3 \t881250949"
    assert (first.user_id, first.track_id, first.rating, first.timestamp) == (
        196, 242, 3.0, 881250949)
    np.testing.assert_array_equal(ev["user_track_count"], np.ceil(ev["rating"]))
    assert (ev["track_id"] == ev["artist_id"]).all() and (ev["track_id"] == ev["album_id"]).all()
    assert set(tables.users["gender"]) == {"m", "f"}
    assert tables.users.loc[1, "age"] == 24.0 and tables.users["country"].isna().all()
    assert tables.tracks.loc[1, "track"] == "Toy Story (1995)"
    counts = ev.groupby("user_id")["user_track_count"].sum()
    assert (tables.users["playcount"] == counts.reindex(tables.users.index)).all()
    assert tables.track_vectors is None


@pytest.mark.realdata
def test_movielens_latest_small():
    tables = load_source(f"movielens:{shared_dataset('ml-latest-small')}")
    assert (len(tables.events), len(tables.users), len(tables.tracks)) == (100_836, 610, 9_742)
    ev = tables.events
    half = ev["rating"] == 0.5
    assert half.any() and (ev.loc[half, "user_track_count"] == 1).all()
    assert (ev["user_track_count"] >= 1).all()
    assert tables.users["gender"].isna().all() and tables.users["age"].isna().all()


def test_movielens_1m_format(tmp_path):
    root = tmp_path / "ml-1m"
    root.mkdir()
    (root / "ratings.dat").write_text("1::10::5::978300760\n1::20::3::978302109\n"
                                      "2::20::4::978301968\n")
    (root / "movies.dat").write_bytes("10::Café Society (1999)::Comedy\n"
                                      "20::Heat (1995)::Action|Crime\n".encode("latin-1"))
    (root / "users.dat").write_text("1::F::1::10::48067\n2::M::56::16::70072\n")
    tables = load_source(f"movielens:{root}")
    assert tables.tracks.loc[10, "track"] == "Café Society (1999)"
    assert tables.users["gender"].tolist() == ["f", "m"]
    assert tables.users["age"].tolist() == [1.0, 56.0]
    assert tables.users["playcount"].tolist() == [8, 4]
    assert tables.users["timestamp"].tolist() == [978300760, 978301968]
    assert tables.events["rating"].tolist() == [5.0, 3.0, 4.0]


def test_movielens_unknown_folder(tmp_path):
    with pytest.raises(DataError, match="not a MovieLens directory.*u.data"):
        load_source(f"movielens:{tmp_path}")
    with pytest.raises(ConfigError, match="no such directory"):
        load_source(f"movielens:{tmp_path / 'nope'}")


# --- the real HetRec Last.fm file, mapped onto the schema by _tables --------------------------


@pytest.mark.realdata
def test_hetrec_lastfm_through_the_validator():
    tables = validate_tables(hetrec_tables(shared_dataset("hetrec2011-lastfm-2k")),
                             files={"events": "user_artists.dat", "tracks": "artists.dat"})
    assert len(tables.events) == 92_834
    assert tables.events["user_id"].nunique() == len(tables.users) == 1_892
    assert tables.events["track_id"].nunique() == 17_632
    assert tables.events["user_track_count"].dtype == np.int32


# --- synthetic and dispatch --------------------------------------------------------------------

def test_synthetic_source_is_validated_and_canonical():
    tables = load_source("synthetic", scale="tiny", seed=3)
    assert all(tables.events[c].dtype == np.int32 for c in tables.events.columns)
    raw = synthetic_tables("tiny", 3)
    assert len(raw.events) == len(tables.events)
    assert validate_tables(raw).fingerprint() == tables.fingerprint()


@pytest.mark.parametrize("source", ["lfm2022", "synthetic:tiny", "", "/no/such/dir"])
def test_unknown_sources_list_the_accepted_forms(source):
    with pytest.raises(ConfigError, match=r"'synthetic'.*'lfm'.*directory.*'movielens:PATH'"):
        load_source(source)


def test_movielens_prefix_without_path():
    with pytest.raises(ConfigError, match="the path is missing"):
        load_source("movielens:")


def test_a_file_is_not_a_directory_source(tmp_path):
    (tmp_path / "f.csv").write_text("x\n")
    with pytest.raises(ConfigError, match="not a directory"):
        load_source(tmp_path / "f.csv")
