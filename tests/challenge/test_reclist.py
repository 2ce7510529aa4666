"""EvalRSRecList, score() and the score CLI on hand-made folds; RecModel; a custom test."""

from __future__ import annotations

import importlib
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reclist.charts import CHART_TYPE
from reclist.reclist import rec_test

import evaluation
from evaluation import EvalRSRecList, RecModel, predictions_frame, score
from evaluation.challenge import LEADERBOARD_TESTS, TESTS
from evaluation.data import Tables, TrackVectors
from evaluation.errors import ConfigError, PredictionError, ScoringWarning
from evaluation.predictions import PredictionWarning


class HandDataset:
    """One hand-made fold: four test users, six tracks (105 has no vector)."""

    num_folds = 1
    fingerprint = "hand"
    fold_params = {"seed": 0}

    def __init__(self, with_vectors: bool = True):
        self.df_users = pd.DataFrame(
            {"country": ["US", "RU", None, "IT"], "gender": ["m", "f", None, "n"]},
            index=pd.Index([1, 2, 3, 4], name="user_id"))
        self.df_tracks = pd.DataFrame(
            {"artist_id": [10, 10, 11, 12, 12, 13]},
            index=pd.Index([100, 101, 102, 103, 104, 105], name="track_id"))
        # 100: (1, 0), 101: (0, 1), 102: (1, 1), 103: (-1, 0), 104: (1, 0)
        self.track_vectors = TrackVectors(
            np.array([100, 101, 102, 103, 104]),
            np.array([[1, 0], [0, 1], [1, 1], [-1, 0], [1, 0]], dtype=np.float32),
        ) if with_vectors else None
        self.train = pd.DataFrame({
            "user_id": [1, 1, 2, 3, 4, 4],
            "artist_id": [10, 10, 11, 12, 12, 10],
            "track_id": [100, 101, 102, 103, 104, 100],
            "user_track_count": [5, 200, 3, 1, 1, 1],
        })
        self.test = pd.DataFrame({"user_id": [1, 2, 3, 4], "track_id": [102, 100, 105, 101]})

    def get_train_set(self, fold):
        return self.train

    def get_test_set(self, fold, limit=None):
        return self.test.head(limit) if limit else self.test


def hand_predictions():
    # user 1 hits at 1, user 2 at 2, users 3 and 4 miss
    return pd.DataFrame([[102, 103, -1], [101, 100, -1], [104, -1, -1], [103, -1, -1]],
                        index=pd.Index([1, 2, 3, 4], name="user_id"), columns=["0", "1", "2"])


@pytest.fixture
def reclist(tmp_path):
    return EvalRSRecList(HandDataset(), 0, hand_predictions(), k=3, model_name="hand",
                         meta_data_folder=tmp_path / "reports")


def test_results_by_hand(reclist):
    res = reclist.results()
    assert list(res) == list(TESTS)
    assert res["HIT_RATE"] == pytest.approx(2 / 4)
    assert res["MRR"] == pytest.approx((1 + 1 / 2) / 4)
    # country: US hit, RU hit, missing miss; IT left out
    assert res["MRED_COUNTRY"] == pytest.approx(-(1 / 3 + 1 / 3 + 2 / 3) / 3)
    # activity 205, 3, 1, 2 -> groups "100": {hit}, "1": {hit, miss, miss}
    assert res["MRED_USER_ACTIVITY"] == pytest.approx(-(abs(2 / 3 - 1 / 2) + 1 / 2) / 2)
    # target popularity 3, 6, 0, 200 -> "1": {hit, hit}, "0": {miss}, "100": {miss}
    assert res["MRED_TRACK_POPULARITY"] == pytest.approx(-0.5)
    # artist popularity 3, 206, 0, 206 -> "1": {hit}, "100": {hit, miss}, "0": {miss}
    assert res["MRED_ARTIST_POPULARITY"] == pytest.approx(-(0.5 + 0 + 0.5) / 3)
    assert res["MRED_GENDER"] == pytest.approx(-0.5)
    # misses: user 3 (target 105 without vector: out), user 4: cos((0,1), (-1,0)) = 0
    assert res["BEING_LESS_WRONG"] == 0.0
    c = 1 / math.sqrt(2)
    ld_user1 = 0.3 * ((1 - c) + 1) / 2 - 0.7 * (1 - c)  # 102, 103: m = (0, .5)
    ld_user2 = 0.3 * (1 - c) - 0.7 * (1 - c)  # m = (.5, .5)
    ld_user4 = 0.3 * 0 - 0.7 * (1 - 0)        # m = (-1, 0), target (0, 1)
    assert res["LATENT_DIVERSITY"] == pytest.approx((ld_user1 + ld_user2 + ld_user4) / 3)
    assert res["stats"] == {"num_users": 4, "k": 3, "min_predictions": 1, "max_predictions": 2}
    json.dumps(res, allow_nan=False)


def test_details_hold_every_group(reclist):
    det = reclist.details()
    country = det["MRED_COUNTRY"]
    assert country["groups"] == {"US": 0.0, "RU": 0.0, "missing": 1.0}
    assert country["counts"] == {"US": 1, "RU": 1, "missing": 1}
    assert country["MR"] == pytest.approx(1 / 3) and country["n_users"] == 3
    assert det["MRED_GENDER"]["n_ungrouped"] == 1
    assert det["BEING_LESS_WRONG"] == {"value": 0.0, "n_users": 1, "n_missed": 2,
                                       "n_first_without_vector": 0}
    assert det["LATENT_DIVERSITY"]["n_users"] == 3
    json.dumps(det, allow_nan=False)


def test_row_order_does_not_change_scores(tmp_path):
    a = EvalRSRecList(HandDataset(), 0, hand_predictions(), k=3).results()
    shuffled = hand_predictions().iloc[[3, 1, 0, 2]]
    b = EvalRSRecList(HandDataset(), 0, shuffled, k=3).results()
    assert a == b


def test_call_prints_table_and_writes_report_folder(reclist, tmp_path, capsys):
    reclist()
    out = capsys.readouterr().out
    assert "MRED_COUNTRY" in out and "-0.4444" in out and "LATENT_DIVERSITY" in out
    run_dirs = list((tmp_path / "reports" / "EvalRSRecList" / "hand").iterdir())
    assert len(run_dirs) == 1
    report = json.loads((run_dirs[0] / "results" / "report.json").read_text())
    by_name = {row["name"]: row for row in report["data"]}
    assert list(by_name) == list(TESTS)
    assert by_name["MRED_COUNTRY"]["result"]["MRED"] == pytest.approx(-4 / 9)
    assert by_name["MRED_COUNTRY"]["display_type"] == str(CHART_TYPE.BARS)
    assert by_name["HIT_RATE"]["result"] == 0.5
    plots = sorted(p.name for p in (run_dirs[0] / "plots").iterdir())
    assert plots == sorted(f"{t}.png" for t in TESTS if t.startswith("MRED"))
    assert all((run_dirs[0] / "plots" / p).stat().st_size > 1000 for p in plots)


def test_report_folder_defaults_to_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RECLIST_META_DATA_FOLDER", str(tmp_path / "env-reports"))
    rl = EvalRSRecList(HandDataset(), 0, hand_predictions(), k=3, model_name="m")
    assert rl.META_DATA_FOLDER == str(tmp_path / "env-reports")


class MyRecList(EvalRSRecList):
    """The documented custom-test example (docs/participants/custom-tests.md)."""

    @rec_test(test_type="HIT_RATE_AT_1", display_type=CHART_TYPE.SCALAR)
    def hit_rate_at_1(self):
        """Share of test users whose target is the first prediction."""
        return float((self.ranks == 1).mean())

    @rec_test(test_type="MISSES_BY_COUNTRY", display_type=CHART_TYPE.BARS)
    def misses_by_country(self):
        """Number of misses per user country (2022-style access to the frames)."""
        country = self.dataset.df_users["country"].reindex(self._y_test.index).fillna("?")
        missed = self.ranks == 0
        assert (self.y_preds.index == self.y_test.index).all()
        return {str(c): int(n) for c, n in pd.Series(missed, index=country).groupby(level=0).sum()
                .items()}


def test_custom_test_subclass(tmp_path, capsys):
    rl = MyRecList(HandDataset(), 0, hand_predictions(), k=3, model_name="custom",
                   meta_data_folder=tmp_path)
    res = rl.results()
    assert list(res)[: len(TESTS)] == list(TESTS)  # the challenge's tests first
    assert res["HIT_RATE_AT_1"] == 0.25
    assert res["MISSES_BY_COUNTRY"] == {"?": 1, "IT": 1, "RU": 0, "US": 0}
    rl()
    assert "HIT_RATE_AT_1" in capsys.readouterr().out
    plots = next((tmp_path / "MyRecList" / "custom").iterdir()) / "plots"
    assert (plots / "MISSES_BY_COUNTRY.png").exists()
    # the runner's path works with a custom class too
    report = score(HandDataset(), 0, hand_predictions(), k=3, reclist_cls=MyRecList)
    assert report["tests"]["HIT_RATE_AT_1"] == 0.25


class NanRecList(EvalRSRecList):
    @rec_test(test_type="BROKEN", display_type=CHART_TYPE.SCALAR)
    def broken(self):
        """A custom test that divides by zero."""
        return float(np.float64(0) / np.float64(0))


def test_custom_test_returning_nan_is_a_clear_error(tmp_path):
    from evaluation.errors import EvalRSError

    rl = NanRecList(HandDataset(), 0, hand_predictions(), k=3, meta_data_folder=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(EvalRSError, match="test 'BROKEN' returned nan"):
            rl.results()
        with pytest.raises(EvalRSError, match="test 'BROKEN'"):
            rl()


def test_validate_false_requires_normalised_predictions():
    with pytest.raises(PredictionError, match="validate=False"):
        EvalRSRecList(HandDataset(), 0, hand_predictions().iloc[::-1], k=3, validate=False)
    from evaluation import validate_predictions

    ok = validate_predictions(hand_predictions(), [1, 2, 3, 4], k=3)
    assert EvalRSRecList(HandDataset(), 0, ok, k=3, validate=False).results()["HIT_RATE"] == 0.5


def test_invalid_predictions_fail_before_scoring():
    bad = hand_predictions()
    bad.iloc[0, 0] = 999
    with pytest.raises(PredictionError, match="not tracks of the catalog"):
        EvalRSRecList(HandDataset(), 0, bad, k=3)


def test_dataset_without_vectors_has_not_applicable_vector_tests():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScoringWarning)  # said once per run, not per fold
        rl = EvalRSRecList(HandDataset(with_vectors=False), 0, hand_predictions(), k=3)
        res, details = rl.results(), rl.details()
    assert res["BEING_LESS_WRONG"] is None and res["LATENT_DIVERSITY"] is None
    assert details["BEING_LESS_WRONG"] == {"not_applicable": "the dataset has no track vectors"}
    assert res["HIT_RATE"] == 0.5


def test_score_dataframe_and_file(tmp_path):
    report = score(HandDataset(), 0, hand_predictions(), k=3)
    assert report["fold"] == 0 and report["k"] == 3 and report["num_users"] == 4
    assert report["tests"]["HIT_RATE"] == 0.5
    assert report["details"]["MRED_COUNTRY"]["groups"]["missing"] == 1.0
    assert report["warnings"] == []
    path = tmp_path / "preds.parquet"
    hand_predictions().to_parquet(path)
    assert score(HandDataset(), 0, path, k=3)["tests"] == report["tests"]
    csv = tmp_path / "preds.csv"
    hand_predictions().to_csv(csv)
    assert score(HandDataset(), 0, str(csv), k=3)["tests"] == report["tests"]


def test_score_limit_and_warnings():
    preds = hand_predictions().iloc[:2].copy()
    preds.iloc[0, 1] = 101  # user 1 listened to 101 in training
    with pytest.warns(PredictionWarning):
        report = score(HandDataset(), 0, preds, k=3, limit=2)
    assert report["num_users"] == 2 and report["tests"]["stats"]["num_users"] == 2
    assert report["warnings"] and report["warnings"][0].startswith("PredictionWarning")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = score(HandDataset(), 0, preds, k=3, limit=2, warn_training_items=False)
    assert quiet["warnings"] == [] and quiet["tests"] == report["tests"]


def test_score_argument_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"'fold' parameter of score must be an int in the "
                       r"range \[0, 0\]\. Got 1 instead"):
        score(HandDataset(), 1, hand_predictions(), k=3)
    with pytest.raises(ConfigError, match="does not exist"):
        score(HandDataset(), 0, tmp_path / "nope.parquet", k=3)
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(PredictionError, match="cannot be read as parquet"):
        score(HandDataset(), 0, tmp_path / "junk.parquet", k=3)


def test_score_cli(tmp_path, monkeypatch, capsys):
    from evaluation.cli import main

    seen = {}

    def fake_dataset(**options):
        seen.update(options)
        return HandDataset()

    monkeypatch.setattr(evaluation, "ChallengeDataset", fake_dataset, raising=False)
    score_cli = importlib.import_module("evaluation.cli.score")
    if hasattr(score_cli, "ChallengeDataset"):  # imported by name when the module loads
        monkeypatch.setattr(score_cli, "ChallengeDataset", fake_dataset)
    path = tmp_path / "preds.parquet"
    hand_predictions().to_parquet(path)
    out = tmp_path / "out" / "report.json"
    rc = main(["score", "synthetic", "--scale", "tiny", "--fold", "0", "--predictions", str(path),
               "--seed", "0", "--num-folds", "1", "--k", "3", "--out", str(out)])
    assert rc == 0
    assert seen == {"source": "synthetic", "scale": "tiny", "seed": 0, "num_folds": 1}
    report = json.loads(out.read_text())
    assert report["tests"]["HIT_RATE"] == 0.5 and report["dataset_fingerprint"] == "hand"
    assert "HIT_RATE" in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]  # no temp files left
    bad = tmp_path / "bad.parquet"
    hand_predictions().iloc[:2].to_parquet(bad)
    rc = main(["score", "synthetic", "--fold", "0", "--predictions", str(bad), "--k", "3",
               "--out", str(tmp_path / "bad.json")])
    assert rc == 2 and "have no row" in capsys.readouterr().err
    assert not (tmp_path / "bad.json").exists()


# --------------------------------------------------------------------------- a real fold


def random_tables(seed=0, n_users=200, n_tracks=150):
    rng = np.random.default_rng(seed)
    u = np.repeat(np.arange(n_users), 40)
    ev = pd.DataFrame({"user_id": u, "track_id": rng.integers(0, n_tracks, len(u))})
    ev = ev.drop_duplicates().reset_index(drop=True)
    ev["artist_id"] = ev["track_id"] // 10
    ev["album_id"] = ev["track_id"] // 5
    ev["timestamp"] = np.arange(len(ev))
    ev["user_track_count"] = rng.integers(1, 50, len(ev))
    ev = ev[["user_id", "artist_id", "album_id", "track_id", "timestamp", "user_track_count"]]
    users = pd.DataFrame({
        "country": rng.choice(np.array(["US", "RU", "IT", None], dtype=object), n_users),
        "age": 20.0, "gender": rng.choice(np.array(["m", "f", "n", None], dtype=object), n_users),
        "playcount": 1, "timestamp": 0}, index=pd.Index(np.arange(n_users), name="user_id"))
    tracks = pd.DataFrame({"track": "t", "artist_id": np.arange(n_tracks) // 10, "artist": "a",
                           "albums": "b", "albums_id": np.arange(n_tracks) // 5},
                          index=pd.Index(np.arange(n_tracks), name="track_id"))
    vecs = TrackVectors(np.arange(n_tracks - 5), rng.normal(size=(n_tracks - 5, 8)))
    return Tables(ev, users, tracks, vecs, source="random")


class Popular(RecModel):
    k = 20

    def train(self, train_df, **kwargs):
        self.top = train_df["track_id"].value_counts().index.to_numpy()[: self.k]

    def predict(self, user_ids):
        items = np.tile(self.top, (len(user_ids), 1))
        return predictions_frame(user_ids["user_id"], items, self.k)


def test_on_a_challenge_dataset_fold_matches_reclist_standard_metrics(reclist_metrics):
    sm = reclist_metrics
    ds = evaluation.ChallengeDataset(random_tables(), num_folds=2)
    model = Popular()
    model.train(ds.get_train_set(1))
    test = ds.get_test_set(1)
    preds = model.predict(test[["user_id"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)  # popular items include seen ones
        report = score(ds, 1, preds, k=model.k)
    y_pred = preds.loc[test["user_id"]].reset_index(drop=True)
    y_pred.columns = range(model.k)
    y_test = test[["track_id"]].reset_index(drop=True)
    assert report["tests"]["HIT_RATE"] == pytest.approx(sm.hit_rate_at_k(y_pred, y_test, 20))
    assert report["tests"]["MRR"] == pytest.approx(sm.mrr_at_k(y_pred, y_test, 20))
    for name in LEADERBOARD_TESTS:
        assert np.isfinite(report["tests"][name]), name


# --------------------------------------------------------------------------- RecModel


def test_rec_model_contract():
    with pytest.raises(TypeError):
        RecModel()
    model = Popular()
    assert RecModel.k == 100 and model.k == 20
    assert not model.supports_ratings
    with pytest.raises(NotImplementedError, match="predict_ratings"):
        model.predict_ratings(pd.DataFrame({"user_id": [1], "track_id": [2]}))

    class Rated(Popular):
        def predict_ratings(self, pairs_df):
            return pd.Series(3.0, index=pairs_df.index)

    assert Rated().supports_ratings


def test_readme_custom_test_snippet_is_in_module_docstring():
    import evaluation.challenge_reclist._reclist as mod

    assert "class MyRecList(EvalRSRecList)" in mod.__doc__
    assert Path(mod.__file__).exists()


@pytest.mark.slow
def test_score_cli_end_to_end_on_synthetic_tiny(tmp_path):
    import subprocess
    import sys

    ds = evaluation.ChallengeDataset(source="synthetic", scale="tiny")
    test = ds.get_test_set(0)
    rng = np.random.default_rng(0)
    catalog = ds.df_tracks.index.to_numpy()
    items = np.array([rng.choice(catalog, 100, replace=False) for _ in range(len(test))])
    items[:, 90:] = -1
    targets = test["track_id"].to_numpy()
    lucky = (np.arange(len(test)) % 7 == 0) & ~(items == targets[:, None]).any(axis=1)
    items[lucky, 0] = targets[lucky]  # some hits
    preds = predictions_frame(test["user_id"], items, 100).iloc[::-1]  # any row order
    path = tmp_path / "preds.parquet"
    preds.to_parquet(path)
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "evaluation", "score", "synthetic", "--scale", "tiny", "--fold",
         "0", "--predictions", str(path), "--out", str(out)],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)
        direct = score(ds, 0, preds)
    assert report["tests"] == direct["tests"]
    assert report["dataset_fingerprint"] == ds.fingerprint
    assert report["tests"]["HIT_RATE"] >= lucky.mean() > 0
    assert report["tests"]["stats"] == {"num_users": len(test), "k": 100,
                                        "min_predictions": 90, "max_predictions": 90}
