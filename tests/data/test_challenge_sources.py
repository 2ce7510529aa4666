"""The real challenge sources checked against the public 2022 and 2023 challenge code: the
2023 split (every event at a user's latest timestamp), the 2023 layout with its song
embeddings keyed by ``urlSong``, the named ``lfm2023`` source, the default URLs, and the
2022 missing-value tokens."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.errors import ConfigError
from evaluation.splits import kcore_filter, leave_last_one_out, leave_last_out
from tests._shared_data import shared_dataset

# --- the 2023 split ----------------------------------------------------------------------------


def _hand_events() -> pd.DataFrame:
    return pd.DataFrame({
        "user_id":   [1, 1, 1, 2, 2, 3, 3],
        "track_id":  [5, 6, 7, 8, 9, 4, 2],
        "timestamp": [10, 30, 30, 5, 4, 7, 7],
    }, index=[100, 101, 102, 103, 104, 105, 106])


def test_leave_last_out_keeps_every_tie_at_the_latest_time():
    split = leave_last_out(_hand_events())
    # user 1: both events at t=30; user 2: the one at t=5; user 3: both at t=7 (no train left)
    assert split.test.index.tolist() == [101, 102, 103, 105, 106]
    assert split.train.index.tolist() == [100, 104]
    assert split.params["kind"] == "leave_last_out"
    # the one-event variant keeps its own name: ties go to the largest track id
    one = leave_last_one_out(_hand_events(), min_events=1)
    assert one.test.index.tolist() == [102, 103, 105]


def _reference_2023(events: pd.DataFrame, frac: float, k: int | None) -> tuple[set, set]:
    """The 2023 ``split_train_test_last_interaction`` in plain pandas (merge on the max)."""
    ev = events
    if frac < 1.0:
        sampled = ev["user_id"].drop_duplicates().sample(frac=frac, random_state=42)
        ev = ev[ev["user_id"].isin(sampled)]
    if k is not None:
        ev = ev[kcore_filter(ev, k)]
    last = ev.groupby("user_id")["timestamp"].max().reset_index()
    merged = ev.reset_index().merge(last, on=["user_id", "timestamp"], how="outer",
                                    indicator=True)
    test = set(merged.loc[merged["_merge"] == "both", "index"])
    train = set(merged.loc[merged["_merge"] == "left_only", "index"])
    return train, test


@pytest.mark.parametrize("frac,k", [(1.0, None), (0.25, None), (0.5, 3)])
def test_leave_last_out_equals_the_2023_merge(rng, frac, k):
    n = 3_000
    events = pd.DataFrame({"user_id": rng.integers(0, 150, n), "track_id": rng.integers(0, 90, n),
                           "timestamp": rng.integers(0, 40, n)})  # many ties
    events = events.drop_duplicates(["user_id", "track_id"])
    split = leave_last_out(events, frac=frac, seed=42, k_core=k)
    train, test = _reference_2023(events, frac, k)
    assert set(split.test.index) == test and set(split.train.index) == train
    assert split.test["user_id"].is_monotonic_increasing
    assert split.test.groupby("user_id").size().max() > 1  # several targets per user


@pytest.mark.realdata
def test_leave_last_out_on_ml_100k_matches_the_2023_merge():
    from evaluation.data import load_source

    events = load_source(f"movielens:{shared_dataset('ml-100k')}").events
    split = leave_last_out(events, frac=0.25, seed=42, k_core=10)
    train, test = _reference_2023(events, 0.25, 10)
    assert set(split.test.index) == test and set(split.train.index) == train
    assert len(test) > split.test["user_id"].nunique()  # ml-100k has same-second ratings


def test_challenge_dataset_split_last_is_refused_with_the_reason():
    from evaluation import ChallengeDataset

    with pytest.raises(ConfigError, match=r"latest timestamp.*split='last_one'.*leave_last_out"):
        ChallengeDataset("synthetic", scale="tiny", split="last")


def test_leave_last_out_bad_arguments():
    with pytest.raises(ConfigError, match="'frac' parameter"):
        leave_last_out(_hand_events(), frac=0)
    with pytest.raises(ConfigError, match="'k_core' parameter"):
        leave_last_out(_hand_events(), k_core=0)


# --- the 2023 layout and the named sources -----------------------------------------------------

def test_2023_song_embeddings_are_mapped_through_urlsong(tmp_path):
    from benchmarks._challenge_files import song_embeddings, write_2023
    from evaluation.data import load_source

    tables = load_source(write_2023(tmp_path / "d"))
    # the tracks keep the 2023 columns that map them to songs and tags
    assert tables.tracks.loc[503, "urlSong"] == "wasabi/song/c"
    assert pd.isna(tables.tracks.loc[502, "urlSong"])
    assert tables.tracks["lastfm_id"].tolist() == [7_501, 7_502, 7_503, 7_504]
    songs = song_embeddings().set_index("urlSong")["song_embedding"]
    tv = tables.track_vectors
    assert tv.track_ids.tolist() == [501, 503, 504]  # 502 has no URL
    got, found = tv.lookup([501, 502, 503, 504])
    assert found.tolist() == [True, False, True, True]
    np.testing.assert_array_equal(got[0], songs["wasabi/song/a"])
    np.testing.assert_array_equal(got[2], songs["wasabi/song/c"])
    np.testing.assert_array_equal(got[3], songs["wasabi/song/c"])  # one song, two tracks


def test_2023_without_urlsong_says_the_vector_tests_cannot_be_computed(tmp_path):
    import warnings

    from benchmarks._challenge_files import write_2023
    from evaluation.data import load_source

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables = load_source(write_2023(tmp_path / "d", with_urls=False))
    assert tables.track_vectors is None
    assert any("vector tests" in str(w.message) and "cannot be computed" in str(w.message)
               for w in caught)


def test_song2vec_beside_the_2023_files_is_preferred(tmp_path):
    import warnings

    from benchmarks._challenge_files import vectors, write_2023, write_keyed_vectors
    from evaluation.data import load_source

    root = write_2023(tmp_path / "d")
    write_keyed_vectors(root / "song2vec.wv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = load_source(root)
    got, found = tables.track_vectors.lookup([501])
    np.testing.assert_array_equal(got[0], vectors()["501"])


def test_default_urls():
    from evaluation.data._lfm import lfm_url

    assert lfm_url() == ("https://evarl-2022-public-dataset.s3.us-east-1.amazonaws.com/"
                         "evalrs_dataset.zip")
    assert lfm_url(source="lfm2023") == ("https://evalrs.object.lga1.coreweave.com/"
                                         "evalrs_dataset_KDD_2023.zip")


def test_lfm2023_source_downloads_once_and_caches_apart_from_lfm(server, tmp_path, monkeypatch):
    import warnings

    from benchmarks._challenge_files import write_2022, write_2023, zip_directory
    from evaluation import ChallengeDataset
    from evaluation.data import load_source

    server.files["/evalrs_dataset_KDD_2023.zip"] = zip_directory(
        write_2023(tmp_path / "s23"), top="evalrs_dataset_KDD_2023")
    server.files["/evalrs_dataset.zip"] = zip_directory(write_2022(tmp_path / "s22"))
    monkeypatch.setenv("EVALRS_LFM2023_URL", server.base + "/evalrs_dataset_KDD_2023.zip")
    monkeypatch.setenv("EVALRS_LFM_URL", server.base + "/evalrs_dataset.zip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t23 = load_source("lfm2023", cache_dir=tmp_path / "c", progress=False)
        t22 = load_source("lfm", cache_dir=tmp_path / "c", progress=False)
        again = ChallengeDataset("lfm2023", cache_dir=tmp_path / "c", progress=False, k_core=1)
    assert [p for p, _ in server.log] == ["/evalrs_dataset_KDD_2023.zip", "/evalrs_dataset.zip"]
    assert t23.source == again.tables.source == "lfm2023" and t22.source == "lfm"
    assert again.fingerprint == t23.fingerprint()
    assert len({p.parent for p in (tmp_path / "c").glob("*/tables-2")}) == 2


# --- missing-value tokens ----------------------------------------------------------------------

@pytest.mark.parametrize("token", ["NA", "None", "nan", "N/A", "NULL", ""])
def test_challenge_csv_reads_missing_tokens_as_2022_did(tmp_path, token):
    import warnings

    from benchmarks._challenge_files import write_2022
    from evaluation.data import load_source

    root = write_2022(tmp_path / "d")
    users = pd.read_csv(root / "evalrs_users.csv", keep_default_na=False)
    users["country"] = users["country"].astype(str)
    users.loc[0, "country"] = token  # user 11, "UK" before
    users.loc[1, "gender"] = token   # user 12
    users.to_csv(root / "evalrs_users.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = load_source(root)
    reference = pd.read_csv(root / "evalrs_users.csv").set_index("user_id")  # the 2022 read
    assert reference.loc[11, "country"] != reference.loc[11, "country"]  # NaN
    assert pd.isna(tables.users.loc[11, "country"]) and pd.isna(tables.users.loc[12, "gender"])
    assert tables.users.loc[13, "gender"] == "f"


def test_a_local_csv_directory_keeps_na_as_namibia(tmp_path):
    from evaluation.data import load_source
    from evaluation.data._local import write_csv_dir
    from tests.data._tables import good_tables

    root = write_csv_dir(good_tables(vectors=False), tmp_path / "d")
    assert "NA" in (root / "users.csv").read_text()
    assert load_source(root).users["country"].tolist().count("NA") == 1


# --- unknown keyword arguments to ChallengeDataset ---------------------------------------------

def test_unknown_keyword_lists_what_the_source_accepts():
    from evaluation import ChallengeDataset

    with pytest.raises(ConfigError, match=r"unknown keyword argument\(s\) \['num_fold'\] for "
                                          r"source 'synthetic'.*num_folds.*no other options"):
        ChallengeDataset("synthetic", scale="tiny", num_fold=2)
    with pytest.raises(ConfigError, match=r"\['sha'\] for source 'lfm'.*"
                                          r"\['url', 'sha256', 'cache_dir', 'progress'\]"):
        ChallengeDataset("lfm", sha="0" * 64)


@pytest.mark.realdata
def test_unknown_keyword_on_a_real_movielens_folder():
    from evaluation import ChallengeDataset

    with pytest.raises(ConfigError, match=r"\['url'\] for source 'movielens:.*no other options"):
        ChallengeDataset(f"movielens:{shared_dataset('ml-100k')}", url="http://127.0.0.1/x")
