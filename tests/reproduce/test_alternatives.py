"""A reproduction also runs the model under the competition's declared alternative protocols:
in the sandbox, scored here, each one's per-user values and cost sent with the verdict, and an
alternative that cannot run sent as a failed result with its reason. Under a sampled-negative
protocol the model scores candidates drawn here, and its scores are ranked and corrected
here."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.challenge import decode_metric_values, decode_user_values
from evaluation.dataset import TimeCutDataset
from evaluation.errors import ConfigError
from evaluation.protocols import evaluate_sampled
from evaluation.reproduce import Budgets, LeaderboardClient, reproduce, worker_config
from evaluation.reproduce._alternatives import read_alternatives
from evaluation.reproduce._reproduce import run_alternative
from evaluation.runner import fold_seed
from evaluation.splits import global_cut_fold
from tests.reproduce._fakes import (
    fake_leaderboard,
    make_checkout,
    template_model_and,
    template_model_with,
)

TOKEN = "organizer-" + "y" * 43
PROTOCOLS = [{"name": "seed-7", "kind": "fold_seed", "seed": 7},
             {"name": "cut-2018", "kind": "global_time", "cut": "2018-01-01T00:00:00Z"},
             {"name": "cut-1990", "kind": "global_time", "cut": "1990-01-01T00:00:00Z"},
             {"name": "sampled-100", "kind": "sampled", "seed": 42, "n_negatives": 100,
              "correction": "rank", "metric": "ndcg"}]
#: The template's model with a score_items method: the tracks' plays in training.
SCORE_ITEMS = """

    def score_items(self, user_ids, item_ids):
        plays = self.heard["track_id"].value_counts()
        items = np.asarray(item_ids)
        return plays.reindex(items.ravel()).fillna(0).to_numpy(float).reshape(items.shape)
"""


def _mrr(dataset, tmp_path, name):
    """Each fold's MRR of the template model, run independently (no sandbox) on ``dataset``."""
    from submission.MyModel import MyModel

    runner = EvalRSRunner(dataset, results_dir=tmp_path / name, progress=False, verbose=False)
    result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k), seed=42)
    return [f["tests"]["MRR"] for f in result.to_dict()["folds"]], result


def test_global_cut_fold_by_hand():
    import pandas as pd

    events = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 3, 3, 4],
                           "track_id": [10, 11, 12, 10, 13, 11, 14, 15],
                           "timestamp": [1, 5, 5, 2, 3, 7, 8, 1]})
    fold = global_cut_fold(events, 5.0)
    # train: before the cut; test: user 1's first row at or after it (row 1, the earlier of
    # the tied rows 1 and 2); user 2 has none after, user 3 none before, user 4 none after
    assert fold.train_rows.tolist() == [0, 3, 4, 7]
    assert fold.test_rows.tolist() == [1]
    with pytest.raises(ConfigError, match="leaves no training event"):
        global_cut_fold(events, 0.0)
    with pytest.raises(ConfigError, match="leaves no test user"):
        global_cut_fold(events, 100.0)


def test_a_malformed_protocol_from_the_server_is_refused():
    assert read_alternatives(None) == []
    assert read_alternatives(PROTOCOLS)[1].cut == pytest.approx(1514764800.0)
    sampled = PROTOCOLS[3]
    assert read_alternatives([sampled])[0].cutoff(100) == 100
    for bad in ([{"name": "x", "kind": "sampled"}], [{"name": "x", "kind": "fold_seed"}],
                [{"name": "x", "kind": "global_time", "cut": "yesterday"}], "seed-7",
                [{**sampled, "n_negatives": 0}], [{**sampled, "n_negatives": 1001}],
                [{**sampled, "correction": "none"}], [{**sampled, "metric": "ndcg@0"}],
                [{**sampled, "metric": "mrr"}], [{**sampled, "seed": -1}]):
        with pytest.raises(ConfigError):
            read_alternatives(bad)


def test_the_alternatives_run_in_the_sandbox_and_are_scored_here(tmp_path, upload):
    checkout = make_checkout(tmp_path / "checkout")
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        outcome = reproduce(checkout, 1, LeaderboardClient(url, TOKEN),
                            python=Path(sys.executable), log_path=tmp_path / "reproduce.log",
                            log=lambda line: None, protocols=PROTOCOLS)
    assert outcome.verdict == "reproduced", outcome.comparison.reasons
    report = board.reports[1][0]
    sent = {a["protocol"]: a for a in report["alternatives"]}
    assert list(sent) == ["seed-7", "cut-2018", "cut-1990", "sampled-100"]
    k = upload["results"]["k"]

    # another fold seed: the same values as an independent run on that seed's folds
    assert sent["seed-7"]["status"] == "scored" and sent["seed-7"]["reason"] is None
    expected, _ = _mrr(ChallengeDataset(scale="tiny", seed=7), tmp_path, "seed")
    folds = decode_user_values(sent["seed-7"]["user_values"], None, k=k)
    assert len(folds) == 4
    got = [f.scores.tests()["MRR"][0] for f in folds]
    assert got == pytest.approx(expected, rel=1e-9)
    public = [f["tests"]["MRR"] for f in upload["results"]["folds"]]
    assert not np.allclose(got, public)  # other folds, other values

    # the global cut: one fold, its test users those of the cut
    assert sent["cut-2018"]["status"] == "scored"
    cut = TimeCutDataset(ChallengeDataset(scale="tiny"), 1514764800.0)
    expected, _ = _mrr(cut, tmp_path, "cut")
    folds = decode_user_values(sent["cut-2018"]["user_values"], [cut.fold(0).n_test_users],
                               k=k)
    assert [f.scores.tests()["MRR"][0] for f in folds] == pytest.approx(expected, rel=1e-9)

    # a cut before the data: a failed result with its reason, not a failed reproduction
    assert sent["cut-1990"]["status"] == "failed" and sent["cut-1990"]["user_values"] is None
    assert "leaves no training event" in sent["cut-1990"]["reason"]
    # the template has no score_items: the sampled protocol fails with the reason, untrained
    assert sent["sampled-100"]["status"] == "failed"
    assert "has no score_items(user_ids, item_ids) method" in sent["sampled-100"]["reason"]
    assert sent["sampled-100"]["cost"]["train_seconds"] is None

    for name in ("seed-7", "cut-2018"):
        cost = sent[name]["cost"]
        assert cost["seconds"] > 0 and cost["train_seconds"] >= 0
        assert cost["predict_seconds"] >= 0
        assert cost["peak_rss_mib"] is None or cost["peak_rss_mib"] > 10


def test_a_model_that_raises_under_an_alternative_is_a_failed_result(tmp_path, upload):
    checkout = make_checkout(tmp_path / "checkout", template_model_with(
        "raise RuntimeError('this model only knows the official folds')"))
    config = {**worker_config(upload["results"]), "expected_fingerprint": None}
    log_path = tmp_path / "alternative.log"
    result = run_alternative(read_alternatives(PROTOCOLS[:1])[0], Path(sys.executable),
                             checkout, config, tmp_path / "work", log_path,
                             Budgets(wall_s=120, memory_mb=None, processes=512, scratch_mb=512),
                             unsafe_no_sandbox=False)
    assert result["status"] == "failed" and result["user_values"] is None
    assert "exit status" in result["reason"]
    assert "only knows the official folds" in log_path.read_text()


def test_a_sampled_protocol_is_the_library_protocol_on_the_official_folds(tmp_path, upload):
    checkout = make_checkout(tmp_path / "checkout",
                             template_model_and(SCORE_ITEMS))
    config = {**worker_config(upload["results"]), "expected_fingerprint": None}
    budgets = Budgets(wall_s=120, memory_mb=None, processes=512, scratch_mb=512)
    alternative = read_alternatives([{**PROTOCOLS[3], "seed": 5, "metric": "ndcg@50"}])[0]
    result = run_alternative(alternative, Path(sys.executable), checkout, config,
                             tmp_path / "work", tmp_path / "sampled.log", budgets,
                             unsafe_no_sandbox=False)
    assert result["status"] == "scored", result["reason"]
    assert result["cost"]["predict_seconds"] >= 0
    dataset = ChallengeDataset(scale="tiny")
    values = decode_metric_values(result["user_values"],
                                  [f["n_users"] for f in upload["results"]["folds"]])
    assert values.metric == "ndcg@50"
    # the library's protocol in this process, on each official fold with the fold's seed:
    # the same negatives, ranks and corrected values as the sandboxed run's
    for fold in range(dataset.num_folds):
        train, test = dataset.get_train_and_test_sets(fold, limit=None)
        plays = train["track_id"].value_counts()

        def score(user_ids, item_ids, plays=plays):
            items = np.asarray(item_ids)
            return plays.reindex(items.ravel()).fillna(0).to_numpy(float).reshape(items.shape)

        expected = evaluate_sampled(score, test, train, n_negatives=100,
                                    seed=fold_seed(5, fold),
                                    items=dataset.df_tracks.index.to_numpy(), hit_ks=(),
                                    ndcg_ks=(50,), aggregate="user", correction="rank")
        assert values.folds[fold].mean() == pytest.approx(expected.corrected["ndcg@50"],
                                                          rel=1e-12)
