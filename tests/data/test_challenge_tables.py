"""Participants' code reads the challenge's own tables on the ``lfm`` source, unchanged.

The 2022 and 2023 loaders (RecList/evalRS-CIKM-2022 and RecList/evalRS-KDD-2023) gave models
every column of the files: these tests run model code written against those tables (a join of
the training events onto the users, an age binned from its ``-1``, profile statistics read by
name, the 2023 tracks' song URLs) on small files in the challenge's own formats, read by the
``lfm`` source's own path (the downloaded zip, converted and cached).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from benchmarks._challenge_files import (
    PROFILE_COLUMNS,
    USERS,
    users_frame,
    write_2022,
    write_2023,
    zip_directory,
)
from evaluation import ChallengeDataset
from evaluation.data._lfm import tables_from_zip
from evaluation.data._parquet import read_tables, write_tables


@pytest.fixture(params=["2022", "2023"])
def edition(request) -> str:
    return request.param


@pytest.fixture
def dataset(edition, tmp_path) -> ChallengeDataset:
    """The challenge dataset of one edition, as the lfm source reads it from its zip (and
    then from its parquet cache, as every later load does)."""
    write = write_2022 if edition == "2022" else write_2023
    zip_path = tmp_path / "evalrs_dataset.zip"
    zip_path.write_bytes(zip_directory(write(tmp_path / "files")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hand-written 2022 vectors name unknown tracks
        converted = tables_from_zip(zip_path, source="lfm", progress=False)
    cached = read_tables(write_tables(converted, tmp_path / "tables-2"), upgrade=True)
    assert cached.fingerprint() == converted.fingerprint()
    return ChallengeDataset(cached, num_folds=1, frac=1.0, k_core=1, fold_cache=False)


def test_a_2022_model_joins_the_training_events_onto_the_users(dataset):
    # the 2022 templates' feature step: no suffixes, so no column may repeat
    train_df = dataset.get_train_set(0)
    users = dataset.df_users
    joined = train_df.join(users, on="user_id")
    assert len(joined) == len(train_df)
    assert joined["registered_unixtime"].notna().all()
    assert (joined["timestamp"] == train_df["timestamp"]).all()  # the events' own time
    expected = users_frame().set_index("user_id")["playcount"]
    assert (joined["playcount"].to_numpy() == expected.loc[train_df["user_id"]].to_numpy()).all()


def test_a_model_bins_age_from_its_unknown_code(dataset):
    users = dataset.df_users
    ages = users["age"].to_numpy()
    assert ages.dtype.kind == "i" and ages.tolist() == [25, -1, 40]
    # -1 (unknown) falls in its own bin 0; an embedding table wants int64 indices
    bins = np.digitize(ages, [0, 18, 25, 35, 50]).astype(np.int64)
    assert bins.tolist() == [3, 0, 4]
    known = users.loc[users["age"] != -1, "age"]
    assert known.mean() == 32.5


def test_profile_statistics_are_read_by_name(dataset):
    users = dataset.df_users
    assert users.loc[USERS, "novelty_artist_avg_month"].tolist() == [0.1, 0.2, 0.3]
    hours = users[[f"relative_le_per_hour{h}" for h in range(24)]]
    assert hours.shape == (3, 24) and (hours.dtypes == np.float64).all()
    assert set(PROFILE_COLUMNS) <= set(users.columns)
    features = users[PROFILE_COLUMNS].fillna(0.0).to_numpy(np.float32)  # a model's user tower
    assert features.shape == (3, len(PROFILE_COLUMNS)) and np.isfinite(features).all()
    assert users["country_id"].tolist() == [7, -1, -1] and users["gender_id"].min() >= 0
    assert pd.isna(users.loc[12, "country"]) and users.loc[11, "country"] == "UK"


def test_the_tracks_keep_their_columns(dataset, edition):
    tracks = dataset.df_tracks
    assert tracks.index.name == "track_id" and tracks.loc[502, "track"] == "1999"
    if edition == "2023":  # the song URL and Last.fm id that the 2023 topic and tag tables use
        assert tracks["lastfm_id"].tolist() == (tracks.index + 7_000).tolist()
        assert tracks.loc[501, "urlSong"] == "wasabi/song/a"
    else:
        assert list(tracks.columns) == ["track", "artist_id", "artist", "albums", "albums_id"]


def test_a_pickled_challenge_dataset_keeps_its_tables_and_folds(dataset, tmp_path):
    # a participant caching the loaded dataset between notebook sessions
    import pickle

    path = tmp_path / "lfm.pkl"
    with open(path, "wb") as fh:
        pickle.dump(dataset, fh)
    with open(path, "rb") as fh:
        back = pickle.load(fh)
    assert back.fingerprint == dataset.fingerprint
    pd.testing.assert_frame_equal(back.df_users, dataset.df_users)
    pd.testing.assert_frame_equal(back.get_train_set(0), dataset.get_train_set(0))
    pd.testing.assert_frame_equal(back.get_test_set(0), dataset.get_test_set(0))
    joined = back.get_train_set(0).join(back.df_users, on="user_id")
    assert "registered_unixtime" in joined.columns
