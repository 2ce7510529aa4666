"""The synthetic data is a twin of the challenge data (source ``lfm``): the same tables,
columns, dtypes, index and unknown codes, and users in every play-count band.

The ``lfm`` side is the source's own reading path applied to files in the challenge's 2022
layout (``benchmarks/_challenge_files.py``), so a change to either side shows here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from benchmarks._challenge_files import write_2022
from evaluation import ChallengeDataset
from evaluation.data import Tables
from evaluation.data._lfm_columns import (
    GENDER_IDS,
    LFM_USER_COLUMNS,
    LFM_USER_DTYPES,
    PROFILE_COLUMNS,
    UNKNOWN,
)
from evaluation.data._local import load_challenge_dir
from evaluation.data._synthetic import SCALES, generate_tables
from tests.data._tables import assert_tables_equal

#: The bands of a 2022 model that trained one Word2Vec per band of the users' playcount.
BANDS = (-np.inf, 10, 100, 1_000, np.inf)


@pytest.fixture(scope="module")
def tiny() -> Tables:
    return generate_tables(SCALES["tiny"], 42)


@pytest.fixture(scope="module")
def lfm(tmp_path_factory) -> Tables:
    """Tables as the lfm source reads the challenge's 2022 files."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hand-written 2022 vectors name unknown tracks
        return load_challenge_dir(write_2022(tmp_path_factory.mktemp("lfm")), source="lfm")


def _layout(frame: pd.DataFrame) -> tuple:
    return (list(frame.columns), [str(d) for d in frame.dtypes], frame.index.name,
            str(frame.index.dtype), type(frame.index).__name__)


def test_every_table_has_the_lfm_sources_columns_dtypes_and_index(tiny, lfm):
    for name in ("events", "users", "tracks"):
        assert _layout(getattr(tiny, name)) == _layout(getattr(lfm, name)), name
    assert tiny.track_vectors.vectors.dtype == lfm.track_vectors.vectors.dtype


def test_the_declared_users_columns_are_what_the_lfm_source_gives(tiny, lfm):
    assert list(lfm.users.columns) == list(LFM_USER_COLUMNS)
    assert len(PROFILE_COLUMNS) == 42  # LFM-1b's listening-profile statistics
    for column, dtype in LFM_USER_DTYPES.items():
        assert lfm.users[column].dtype == dtype, column
        assert tiny.users[column].dtype == dtype, column


def test_unknown_values_have_the_lfm_sources_codes(tiny, lfm):
    for users in (lfm.users, tiny.users):
        assert users["age"].notna().all() and (users["age"] == UNKNOWN).any()
        no_country = users["country"].isna().to_numpy()
        assert no_country.any()
        assert ((users["country_id"] == UNKNOWN).to_numpy() == no_country).all()
        known_gender = users["gender"].notna().to_numpy()
        gender_ids = users["gender"][known_gender].map(GENDER_IDS).to_numpy()
        assert (users["gender_id"].to_numpy()[known_gender] == gender_ids).all()
        assert (users["gender_id"].to_numpy()[~known_gender] == UNKNOWN).all()


def test_one_code_per_country(tiny):
    users = tiny.users[tiny.users["country"].notna()]
    assert (users.groupby("country")["country_id"].nunique() == 1).all()
    assert (users.groupby("country_id")["country"].nunique() == 1).all()


def test_the_profile_statistics_agree_with_the_events(tiny):
    users, ev = tiny.users, tiny.events
    per_user = ev.groupby("user_id").agg(plays=("user_track_count", "sum"),
                                         rows=("track_id", "size"),
                                         artists=("artist_id", "nunique"))
    users = users.loc[per_user.index]
    assert (users["cnt_listeningevents"] >= per_user["plays"]).all()
    assert (users["cnt_distinct_tracks"] >= per_user["rows"]).all()
    assert (users["cnt_distinct_artists"] >= per_user["artists"]).all()
    assert (users["cnt_distinct_artists"] <= users["cnt_distinct_tracks"]).all()
    for prefix, n in (("relative_le_per_weekday", 7), ("relative_le_per_hour", 24)):
        shares = users[[c for c in users.columns if c.startswith(prefix)]]
        assert shares.shape[1] == n
        np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    bounded = users[[c for c in PROFILE_COLUMNS if c.startswith(("novelty", "mainstream"))]]
    assert ((bounded >= 0) & (bounded <= 1) | bounded.isna()).all().all()
    # a window's statistic is missing for the users whose activity is shorter than it
    assert users["novelty_artist_avg_year"].isna().any()
    assert users["novelty_artist_avg_month"].notna().all()


def test_every_play_count_band_has_users_at_the_default_scale():
    dataset = ChallengeDataset()  # the default: synthetic "small"
    users = dataset.df_users
    bands = pd.cut(users["playcount"], BANDS).value_counts(sort=False)
    assert (bands >= 50).all(), bands.to_dict()
    assert (users["playcount"] <= 10).mean() < 0.05  # a few, as a heavy tail has
    assert users["playcount"].median() > 1_000
    # A 2022 model (one Word2Vec per band, users of a known age) finds each band in each
    # fold's training users.
    for fold in range(dataset.num_folds):
        train = dataset.get_train_set(fold).join(users, on="user_id")
        known = train[train["age"] != -1].drop_duplicates("user_id")
        counts = pd.cut(known["playcount"], BANDS).value_counts(sort=False)
        assert (counts > 0).all(), (fold, counts.to_dict())


def test_the_2022_join_of_training_events_onto_users():
    dataset = ChallengeDataset(source="synthetic", scale="tiny", num_folds=1)
    train_df = dataset.get_train_set(0)
    joined = train_df.join(dataset.df_users, on="user_id")  # no suffixes: no shared column
    assert len(joined) == len(train_df)
    assert list(joined.columns) == [*train_df.columns, *LFM_USER_COLUMNS]
    assert (joined["timestamp"] == train_df["timestamp"]).all()
    assert (joined["registered_unixtime"] < joined["timestamp"]).all()


def test_same_seed_same_twin_other_seed_other_users(tiny):
    again = generate_tables(SCALES["tiny"], 42)
    assert_tables_equal(again, tiny)
    other = generate_tables(SCALES["tiny"], 43)
    assert not other.users["playcount"].equals(tiny.users["playcount"])
