"""The sampled-negative alternative on the organizer's side: the candidates drawn on the
official folds (the harness's own sampler, the target's place hidden), the scores the sandbox
sends back checked as hostile data, ranked with pessimistic ties and corrected, and the
per-user values' blob; all without a sandbox."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluation import ChallengeDataset
from evaluation.challenge import (
    MetricValues,
    decode_metric_values,
    encode_metric_values,
    metric_score,
    users_sha256,
)
from evaluation.errors import ConfigError, PredictionError
from evaluation.protocols import evaluate_sampled
from evaluation.reproduce import Budgets, _predict, alternative_score, worker_config
from evaluation.reproduce._alternatives import read_alternatives
from evaluation.reproduce._predict import SandboxRun, read_results
from evaluation.reproduce._reproduce import run_alternative
from evaluation.reproduce._sampled_alternative import (
    FoldCandidates,
    SampledScorer,
    draw_fold_candidates,
    sampled_fold_values,
)
from evaluation.runner import fold_seed
from tests.reproduce._fakes import make_checkout

# three users, three negatives each: the rows as the model receives them (sorted item ids)
CANDIDATES = FoldCandidates(
    items=np.array([[10, 20, 30, 40], [11, 12, 13, 14], [15, 16, 17, 18]]),
    target_column=np.array([2, 0, 3]),
    n_candidates=np.array([7, 4, 10]))
SCORES = np.array([[0.5, 0.9, 0.5, 0.1],   # the target (0.5) ties one negative, trails one
                   [1.0, 0.2, 0.3, 0.4],   # the target first
                   [0.7, 0.7, 0.7, 0.7]])  # all alike: the target ranks last


def _slow_rank(row: np.ndarray, target: int) -> int:
    """1 + the negatives scoring at least as high as the target (pessimistic ties)."""
    return 1 + sum(1 for j, s in enumerate(row) if j != target and s >= row[target])


def test_ranks_follow_the_pessimistic_rule_and_the_rank_correction_by_hand():
    ranks = [_slow_rank(SCORES[i], CANDIDATES.target_column[i]) for i in range(3)]
    assert ranks == [3, 1, 4]
    # r_hat = 1 + (r - 1)(n - 1)/m with m = 3: 5, 1, 10
    got = sampled_fold_values(SCORES, CANDIDATES, n_negatives=3, metric="ndcg", k=5,
                              correction="rank")
    assert got.tolist() == [1 / math.log2(6), 1.0, 0.0]
    hits = sampled_fold_values(SCORES, CANDIDATES, n_negatives=3, metric="hit_rate", k=5,
                               correction="rank")
    assert hits.tolist() == [1.0, 1.0, 0.0]
    hits = sampled_fold_values(SCORES, CANDIDATES, n_negatives=3, metric="hit_rate", k=4,
                               correction="rank")
    assert hits.tolist() == [0.0, 1.0, 0.0]


def test_the_bias_variance_correction_is_exact_when_every_negative_is_sampled():
    # the second user has n = 4: its 3 negatives are all its candidates, so its sampled rank
    # is its full rank and the bv estimate is the metric itself
    scores = SCORES.copy()
    scores[1] = [0.3, 0.9, 0.1, 0.5]  # the target (0.3) third: ndcg@5 = 1/log2(4)
    got = sampled_fold_values(scores, CANDIDATES, n_negatives=3, metric="ndcg", k=5,
                              correction="bv")
    assert got[1] == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("scores, words", [
    (SCORES.tolist(), "must return numbers"),
    (SCORES.astype(str), "must return numbers"),
    (SCORES > 0.5, "must return numbers"),
    (SCORES[:, :3], "shape (3, 3); expected (3, 4)"),
    (np.vstack([SCORES, SCORES]), "shape (6, 4); expected (3, 4)"),
    (np.where(SCORES == 1.0, np.nan, SCORES), "non-finite"),
    (np.where(SCORES == 1.0, np.inf, SCORES), "non-finite"),
])
def test_hostile_scores_are_refused(scores, words):
    with pytest.raises(PredictionError) as info:
        sampled_fold_values(scores, CANDIDATES, n_negatives=3, metric="ndcg", k=5,
                            correction="rank")
    assert words in str(info.value)


@pytest.fixture(scope="module")
def fold():
    dataset = ChallengeDataset(scale="tiny")
    train, test = dataset.get_train_and_test_sets(0, limit=None)
    return dataset, train, test


def test_the_candidates_are_the_protocols_and_hide_the_target(fold):
    dataset, train, test = fold
    catalog = dataset.df_tracks.index.to_numpy()
    drawn = draw_fold_candidates(train, test, catalog, n_negatives=20, seed=5)
    assert drawn.items.shape == (len(test), 21)
    assert (np.diff(drawn.items, axis=1) > 0).all()  # sorted, distinct
    rows = np.arange(len(test))
    assert (drawn.items[rows, drawn.target_column] == test["track_id"].to_numpy()).all()
    # the target's place is spread over the row, not always the same
    assert len(np.unique(drawn.target_column)) > 5
    # no negative is an item its user interacted with; n counts the others of the catalog
    seen = pd.concat([train, test])[["user_id", "track_id"]].drop_duplicates()
    heard = seen.groupby("user_id")["track_id"].agg(set)
    for i, user in enumerate(test["user_id"].to_numpy()):
        negatives = set(drawn.items[i].tolist()) - {int(test["track_id"].iloc[i])}
        assert len(negatives) == 20 and not negatives & heard[user]
        assert drawn.n_candidates[i] == 1 + len(catalog) - len(heard[user])
    again = draw_fold_candidates(train, test.iloc[::-1], catalog, n_negatives=20, seed=5)
    assert (again.items[::-1] == drawn.items).all()  # the rows follow the users, same draw
    with pytest.raises(ConfigError, match="one test target per user"):
        draw_fold_candidates(train, pd.concat([test, test]), catalog, n_negatives=20, seed=5)
    with pytest.raises(ConfigError, match="never interacted with"):
        draw_fold_candidates(train, test, catalog, n_negatives=len(catalog), seed=5)


def test_the_per_user_values_are_evaluate_sampleds_on_the_same_draw(fold):
    dataset, train, test = fold
    popularity = train["track_id"].value_counts()

    def score(user_ids, item_ids):  # a popularity model, ties among unseen items
        items = np.asarray(item_ids)
        return popularity.reindex(items.ravel()).fillna(0).to_numpy(float).reshape(items.shape)

    alternative = read_alternatives([{"name": "s", "kind": "sampled", "seed": 3,
                                      "n_negatives": 50, "correction": "rank",
                                      "metric": "ndcg@20"}])[0]
    scorer = SampledScorer(alternative, dataset.df_tracks.index.to_numpy(), k=100)
    items = scorer.draw(0, train, test)
    users = test["user_id"].to_numpy()
    blob = scorer.user_values({0: score(users, items)}, {}, {0: test["user_id"]})
    values = decode_metric_values(blob, [len(test)])
    assert values.metric == "ndcg@20"
    assert values.users_sha256 == (users_sha256(users),)
    # the library's protocol on the same fold, seed and catalog: the same draw, ranks and
    # corrected values (one test point per user: the user mean is the point mean)
    expected = evaluate_sampled(score, test, train, n_negatives=50, seed=fold_seed(3, 0),
                                items=dataset.df_tracks.index.to_numpy(), hit_ks=(),
                                ndcg_ks=(20,), aggregate="user", correction="rank")
    assert values.folds[0].mean() == pytest.approx(expected.corrected["ndcg@20"], rel=1e-12)
    assert 0 < values.folds[0].mean() < 1


def test_missing_failed_or_unasked_folds_are_refused(fold):
    dataset, train, test = fold
    alternative = read_alternatives([{"name": "s", "kind": "sampled", "seed": 3,
                                      "n_negatives": 10, "correction": "rank",
                                      "metric": "hit_rate"}])[0]
    scorer = SampledScorer(alternative, dataset.df_tracks.index.to_numpy(), k=100)
    items = scorer.draw(0, train, test)
    good = np.zeros(items.shape)
    users = {0: test["user_id"]}
    for scores, errors, words in (({}, {}, "fold 0: the model sent no scores"),
                                  ({0: good}, {0: "score_items returned shape (2,)"},
                                   "fold 0: score_items returned shape"),
                                  ({0: good[:-1]}, {}, "fold 0: the scores have shape"),
                                  ({0: good, 1: good}, {}, "not asked for")):
        with pytest.raises(PredictionError, match=words.replace("(", r"\(")
                           .replace(")", r"\)")):
            scorer.user_values(scores, errors, users)
    # all tied at zero: every target ranks last, the corrected hit rate is 0 for everyone
    blob = scorer.user_values({0: good}, {}, users)
    assert decode_metric_values(blob, [len(test)]).folds[0].tolist() == [0.0] * len(test)


def _channel(*records) -> bytes:
    out = io.BytesIO()
    for record in records:
        if isinstance(record, dict):
            record = np.frombuffer(json.dumps(record).encode(), dtype=np.uint8)
        np.lib.format.write_array(out, record, allow_pickle=isinstance(record, np.ndarray)
                                  and record.dtype.hasobject)
    return out.getvalue()


def test_the_result_channel_carries_scores_and_a_problem_as_untrusted_data(tmp_path):
    path = tmp_path / "result"
    path.write_bytes(_channel({"fingerprint": {}}, {"fold": 0, "scores": True, "cost": {}},
                              SCORES, {"problem": "the model has no score_items"},
                              {"done": True}))
    run = read_results(path)
    assert run.done and run.problem == "the model has no score_items"
    assert (run.scores[0] == SCORES).all()
    # an array of Python objects is never unpickled: the run's results are not read
    path.write_bytes(_channel({"fold": 0, "scores": True},
                              np.array([object()], dtype=object)))
    assert "could not be read" in read_results(path).problem



@pytest.mark.parametrize("spoil, words", [
    (lambda s: s[:, :-1], "the scores have shape"),                 # a column short
    (lambda s: np.vstack([s, s]), "the scores have shape"),         # too large
    (lambda s: np.where(s > 0.9, np.nan, s), "non-finite"),
    (lambda s: s.astype("U8"), "must return numbers"),
    (lambda s: None, "the model sent no scores"),
])
def test_hostile_scores_from_the_sandbox_make_a_failed_result(tmp_path, upload, monkeypatch,
                                                              spoil, words):
    """The sandbox's run stood in for by what a hostile model could send back."""

    def hostile_run(*, inputs, **kwargs):
        run = SandboxRun(fingerprint={}, done=True)
        for fold in range(4):
            shape = np.load(inputs / f"fold-{fold}-candidates.npy").shape
            scores = spoil(np.random.default_rng(fold).random(shape))
            if scores is not None:
                run.scores[fold] = scores
        return run

    monkeypatch.setattr(_predict, "run_model", hostile_run)
    alternative = read_alternatives([{"name": "s", "kind": "sampled", "seed": 3,
                                      "n_negatives": 10, "correction": "rank",
                                      "metric": "ndcg"}])[0]
    config = {**worker_config(upload["results"]), "expected_fingerprint": None}
    result = run_alternative(alternative, Path("/nonexistent/python"),
                             make_checkout(tmp_path / "checkout"), config, tmp_path / "work",
                             tmp_path / "log", Budgets(wall_s=60, memory_mb=None,
                                                       processes=64, scratch_mb=64),
                             unsafe_no_sandbox=False)
    assert result["status"] == "failed" and result["user_values"] is None
    assert result["reason"].startswith("the model's scores of the sampled candidates are not "
                                       "valid: fold 0: ")
    assert words in result["reason"]


def test_a_sampled_alternatives_score_is_its_fold_mean_of_user_means():
    # what `reproduce --competition` prints and the team's listing shows: by hand, folds of
    # 2 and 3 users: (0.5 + 0.25) / 2 = 0.375 and (1 + 0 + 0.5) / 3 = 0.5 -> 0.4375
    folds = (np.array([0.5, 0.25]), np.array([1.0, 0.0, 0.5]))
    blob = encode_metric_values(MetricValues(
        metric="ndcg@10", folds=folds,
        users_sha256=(users_sha256(np.array([1, 2])), users_sha256(np.array([3, 4, 5])))))
    result = {"protocol": "sampled-100", "status": "scored", "user_values": blob}
    assert metric_score(folds) == 0.4375
    assert alternative_score(result, {}, kind="sampled") == 0.4375
    # read as the challenge's per-user values (another kind), the blob scores nothing
    assert alternative_score(result, {}, kind="fold_seed") is None
    assert alternative_score({**result, "user_values": "bm90IGEgYmxvYg=="}, {},
                             kind="sampled") is None
