"""The 2023 last-interaction split (``folded_dataset_split=False``): built as the 2023
dataset built it, scored by the 2023 ``EvalRSReclist`` with the 2023 protocol (one case per
test row, several per user), checked against slow references written from the definitions,
and kept apart from the leaderboard's folds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evaluation
from evaluation.baselines import PopularityModel
from evaluation.compat import PROTOCOL_2023, case_predictions, forget_warnings
from evaluation.errors import ConfigError, PredictionError
from tests.compat._ties import tiny_with_ties

COUNTRIES_2023 = ["US", "RU", "DE", "UK", "PL", "BR", "FI", "NL", "ES", "SE", "UA", "CA", "FR"]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::UserWarning")


@pytest.fixture(autouse=True)
def _fresh_warnings():
    forget_warnings()
    yield
    forget_warnings()


@pytest.fixture(scope="module")
def ties():
    return tiny_with_ties()


@pytest.fixture(scope="module")
def notebook(ties, tmp_path_factory):
    import os

    import tests.compat._notebook_2023_last as code

    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("notebook"))  # reclist writes its report folder here
    try:
        dataset, predictions, cdf = code.run(ties)
    finally:
        os.chdir(here)
    return dataset, predictions, cdf


# ------------------------------------------------------------------ slow references

def reference_split(events: pd.DataFrame, frac: float, k: int) -> tuple[set, set]:
    """Row labels of train and test, as the 2023 dataset split: users sampled with
    random_state 42, the k-core of their events, every event at a user's latest time."""
    sampled = events["user_id"].drop_duplicates().sample(frac=frac, random_state=42)
    rows = events[events["user_id"].isin(sampled)]
    for _ in range(10):
        before = len(rows)
        track_rows = rows.groupby("track_id")["track_id"].transform("size")
        rows = rows[track_rows >= k]
        user_rows = rows.groupby("user_id")["user_id"].transform("size")
        rows = rows[user_rows >= k]
        if len(rows) == before:
            break
    test, train = set(), set()
    for _, group in rows.groupby("user_id"):
        latest = group["timestamp"].max()
        for label, time in group["timestamp"].items():
            (test if time == latest else train).add(label)
    return train, test


def reference_values(dataset, predictions: pd.DataFrame, k: int = 100) -> dict:
    """Each test of the 2023 RecList, case by case (a case: one test row and the prediction
    row at its position)."""
    train, test = dataset._get_train_set(), dataset._get_test_set()
    users, tracks = dataset.df_users, dataset.df_tracks
    ranks = []
    for (_, row), (_, pred) in zip(test.iterrows(), predictions.iterrows()):
        listed = [int(t) for t in pred.to_numpy()[:k]]
        ranks.append(listed.index(int(row["track_id"])) + 1 if row["track_id"] in listed else 0)
    missed = [r == 0 for r in ranks]
    out = {"HIT_RATE": sum(r > 0 for r in ranks) / len(ranks),
           "MRR": sum(1 / r if r else 0.0 for r in ranks) / len(ranks)}

    def mred(groups: list, considered: list) -> float:
        cases = [(g, m) for g, m, c in zip(groups, missed, considered) if c]
        mr = sum(m for _, m in cases) / len(cases)
        labels = sorted({g for g, _ in cases if g is not None})
        rates = [sum(m for g2, m in cases if g2 == g) / sum(1 for g2, _ in cases if g2 == g)
                 for g in labels]
        return -sum(abs(r - mr) for r in rates) / len(rates)

    def binned(value: float, edges: list) -> int:
        return max([e for e in edges if e <= value], default=0)

    case_users = test["user_id"].tolist()
    targets = test["track_id"].tolist()
    country = [users.loc[u, "country"] if isinstance(users.loc[u, "country"], str)
               else "missing" for u in case_users]
    out["MRED_COUNTRY"] = mred(country, [c in COUNTRIES_2023 + ["missing"] for c in country])
    gender = [users.loc[u, "gender"] if isinstance(users.loc[u, "gender"], str) else None
              for u in case_users]
    out["MRED_GENDER"] = mred(gender, [True] * len(ranks))
    plays_user = train.groupby("user_id")["user_track_count"].sum()
    plays_track = train.groupby("track_id")["user_track_count"].sum()
    plays_artist = train.groupby("artist_id")["user_track_count"].sum()
    every = [True] * len(ranks)
    out["MRED_USER_ACTIVITY"] = mred(
        [binned(plays_user.get(u, 0), [1, 100, 1000]) for u in case_users], every)
    out["MRED_TRACK_POPULARITY"] = mred(
        [binned(plays_track.get(t, 0), [1, 10, 100, 1000]) for t in targets], every)
    out["MRED_ARTIST_POPULARITY"] = mred(
        [binned(plays_artist.get(tracks.loc[t, "artist_id"], 0), [1, 100, 1000, 10000])
         for t in targets], every)
    vectors = dataset.song2vec
    cosines = []
    for (_, row), (_, pred), m in zip(test.iterrows(), predictions.iterrows(), missed):
        if m:
            u, v = vectors[int(row["track_id"])], vectors[int(pred["0"])]
            cosines.append(float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))))
    out["BEING_LESS_WRONG"] = sum(cosines) / len(cosines)
    return out


# ------------------------------------------------------------------ the split

def test_the_split_is_every_event_at_a_sampled_users_latest_time(notebook, ties):
    dataset, _, _ = notebook
    train, test = dataset.get_sample_train_test()
    want_train, want_test = reference_split(ties.events, 0.5, 10)
    assert set(train.index) == want_train and set(test.index) == want_test
    per_user = test.groupby("user_id").size()
    assert set(per_user.unique()) == {1, 2, 3}  # the data has several targets per user
    assert list(test.columns) == list(ties.events.columns)  # whole events, as in 2023
    assert test["user_id"].is_monotonic_increasing
    pd.testing.assert_frame_equal(dataset._get_test_set(fold=3, limit=5), test)
    pd.testing.assert_frame_equal(dataset._get_train_set(), train)


# ------------------------------------------------------------------ the 2023 RecList

def test_the_notebook_runs_unchanged_and_scores_each_target(notebook, capsys):
    dataset, predictions, cdf = notebook
    results = cdf.results()
    want = reference_values(dataset, predictions)
    for name, value in want.items():
        # the vectors are float32: the reference's cosines are summed in another order
        rel = 1e-6 if name == "BEING_LESS_WRONG" else 1e-12
        assert results[name] == pytest.approx(value, rel=rel, abs=1e-15), name
    test = dataset._get_test_set()
    assert results["TARGETS_PER_USER"] == pytest.approx(len(test) / test["user_id"].nunique())
    assert results["stats"]["num_targets"] == len(test)
    assert results["stats"]["max_targets"] == 3
    # the 2023 RecList's mred_gender, through the helpers a 2023 custom test calls
    genders = dataset.df_users.loc[cdf._y_test.index, ['gender']]
    by_helper = cdf.miss_rate_equality_difference(cdf._y_preds, cdf._y_test, genders, 'gender')
    assert by_helper["mred"] == pytest.approx(results["MRED_GENDER"], rel=1e-12)
    assert "LATENT_DIVERSITY" not in results  # the 2023 RecList had none
    assert 0 < results["HIT_RATE"] < 1
    assert cdf.protocol == PROTOCOL_2023


def test_the_report_and_the_printed_table_name_the_protocol(ties, tmp_path, monkeypatch,
                                                            capsys):
    import tests.compat._notebook_2023_last as code

    monkeypatch.chdir(tmp_path)
    dataset, _, cdf = code.run(ties)
    lines = capsys.readouterr().out.splitlines()
    # the notebook's own print, then the RecList's output, whose first line is the protocol
    assert lines[0] == f"{len(dataset._get_train_set())} {len(dataset._get_test_set())}"
    assert lines[1].startswith(f"protocol {PROTOCOL_2023}:")
    report = json.loads((Path(cdf.meta_store_path) / "results" / "report.json").read_text())
    assert report["metadata"]["protocol"] == PROTOCOL_2023
    assert "HIT_RATE" in [r["name"] for r in report["data"]]


def test_multi_target_values_by_hand():
    # user 1 has targets 10 and 30, user 2 has target 50: three cases
    case_users = np.array([1, 1, 2])
    per_user = pd.DataFrame([[30, 20, 10], [60, 70, 80]], index=pd.Index([1, 2], name="user_id"),
                            columns=["0", "1", "2"])
    lists = case_predictions(per_user, case_users, k=3)
    np.testing.assert_array_equal(lists.to_numpy(), [[30, 20, 10], [30, 20, 10],
                                                     [60, 70, 80]])
    from evaluation.challenge import hit_ranks

    ranks = hit_ranks(lists.to_numpy(), np.array([10, 30, 50]))
    np.testing.assert_array_equal(ranks, [3, 1, 0])
    # hit rate over cases 2/3 (over users it would be 1/2); MRR (1/3 + 1 + 0) / 3
    assert (ranks > 0).mean() == pytest.approx(2 / 3)
    assert np.where(ranks > 0, 1 / np.maximum(ranks, 1), 0).mean() == pytest.approx(4 / 9)
    # one row per case, in the test order, each its own list
    per_row = pd.DataFrame([[10, 1, 2], [3, 4, 5], [50, 6, 7]],
                           index=pd.Index([1, 1, 2], name="user_id"), columns=["0", "1", "2"])
    np.testing.assert_array_equal(case_predictions(per_row, case_users, 3).to_numpy(),
                                  per_row.to_numpy())
    with pytest.raises(PredictionError, match="neither one row per test row"):
        case_predictions(per_row.iloc[[1, 0, 2]].set_axis(pd.Index([1, 2, 1],
                                                                   name="user_id")),
                         case_users, 3)


def test_one_list_per_user_scores_as_that_list_on_each_of_its_rows(notebook):
    from evaluation.EvalRSReclist import EvalRSReclist

    dataset, _, _ = notebook
    test = dataset._get_test_set()
    users = test["user_id"].unique()
    rng = np.random.default_rng(5)
    top = dataset._get_train_set()["track_id"].value_counts().index.to_numpy()[:200]
    per_user = pd.DataFrame(rng.choice(top, size=(len(users), 100)),
                            index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(100)])
    per_row = per_user.loc[test["user_id"].to_numpy()]
    a = EvalRSReclist(dataset=dataset, model_name="m", predictions=per_user).results()
    b = EvalRSReclist(dataset=dataset, model_name="m", predictions=per_row).results()
    assert a == b
    want = reference_values(dataset, per_row)
    assert a["HIT_RATE"] == pytest.approx(want["HIT_RATE"], rel=1e-12)
    assert a["MRED_USER_ACTIVITY"] == pytest.approx(want["MRED_USER_ACTIVITY"], rel=1e-12)


# ------------------------------------------------------------------ kept apart

def test_the_split_never_reaches_the_leaderboards_folds(notebook, tmp_path):
    from evaluation.EvalRSRunner import EvalRSRunner

    dataset, predictions, _ = notebook
    with pytest.raises(ConfigError, match="folded_dataset_split=False.*EvalRSReclist"):
        dataset.get_test_set(0)
    with pytest.raises(ConfigError, match="folded_dataset_split=False"):
        evaluation.EvalRSRecList(dataset, 0, predictions)
    with pytest.raises(ConfigError, match="folded_dataset_split=False"):
        EvalRSRunner(dataset=dataset)
    runner = evaluation.EvalRSRunner(dataset, results_dir=tmp_path / "results",
                                     progress=False, verbose=False)
    with pytest.raises(ConfigError, match="folded_dataset_split=False"):
        runner.evaluate(PopularityModel())
    assert not list((tmp_path / "results").rglob("results.json"))
    with pytest.raises(ConfigError, match=r"from evaluation.EvalRSRunner import ChallengeDataset"):
        evaluation.ChallengeDataset(scale="tiny", folded_dataset_split=False)
