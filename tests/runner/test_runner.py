"""EvalRSRunner: results files, resume, run hash, eligibility, upload, references."""

from __future__ import annotations

import http.server
import json
import os
import signal
import threading
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reclist.charts import CHART_TYPE
from reclist.reclist import rec_test

from evaluation._util.once import forget_warnings
from evaluation.baselines import PopularityModel, RandomModel
from evaluation.challenge import (
    LEADERBOARD_TESTS,
    UserScores,
    build_references,
    load_references,
    phase2_score,
)
from evaluation.challenge_reclist import EvalRSRecList
from evaluation.contract import CompetitionTarget, read_predictions, run_hash
from evaluation.errors import ConfigError, DataError, PredictionError
from evaluation.runner import (
    CHECKSUMS_FILE,
    EvalRSRunner,
    UploadSettings,
)
from tests._script_runner import run_script, start_script
from tests.runner._runs import KILLABLE, comparable


@pytest.fixture(scope="module")
def tiny_board(tiny):
    """A competition on the tiny data (the runs of the official board are on "lfm" data)."""
    return CompetitionTarget(name="tiny board", source="synthetic:tiny",
                             fingerprint=tiny.fingerprint, fold_params=tiny.fold_params)


def make_runner(dataset, tmp_path, **kw) -> EvalRSRunner:
    options = dict(results_dir=tmp_path / "results", progress=False, verbose=False,
                   reports=False, n_boot=50)
    options.update(kw)
    return EvalRSRunner(dataset, **options)


def test_results_files_and_content(tiny, tiny_board, tmp_path):
    runner = make_runner(tiny, tmp_path, competition=tiny_board)
    res = runner.evaluate(PopularityModel())
    run_dir = tmp_path / "results" / res.run_id
    for f in range(4):
        assert (run_dir / f"fold_{f}.json").is_file()
        assert (run_dir / f"fold_{f}_users.npz").is_file()
    on_disk = json.loads((run_dir / "results.json").read_text())
    assert comparable(on_disk) == comparable(res)
    assert res.run_hash == run_hash(tiny.fingerprint, tiny.fold_params, res.tests)
    assert res.run_id.startswith("PopularityModel-")
    assert res.seed == 42 and res.dataset["fingerprint"] == tiny.fingerprint
    assert set(LEADERBOARD_TESTS) <= set(res.aggregate["mean"])
    # the aggregate is the mean of the fold values; phase 1 the mean of the nine tests
    hr = [f["tests"]["HIT_RATE"] for f in res.folds]
    assert res.aggregate["mean"]["HIT_RATE"] == pytest.approx(np.mean(hr))
    assert res.phase1_score == pytest.approx(
        np.mean([res.aggregate["mean"][t] for t in LEADERBOARD_TESTS]))
    # every fold's per-user arrays reproduce the fold's test values
    for f in res.folds:
        with np.load(run_dir / f"fold_{f['fold']}_users.npz") as arrays:
            scores = UserScores.from_arrays({k: arrays[k] for k in arrays.files})
        for t, v in scores.tests().items():
            assert v[0] == pytest.approx(f["tests"][t], abs=1e-12), t
    ci = res.confidence_intervals["tests"]["HIT_RATE"]
    assert ci[0] <= res.aggregate["mean"]["HIT_RATE"] <= ci[1]
    assert res.eligible_for_upload is True
    assert {"data", "train", "predict", "validate", "score"} <= set(res.folds[0]["runtime"])
    assert res.folds[0]["details"]["MRED_GENDER"]["groups"]


def test_summary_prints_the_leaderboard_score(tiny, tmp_path, capsys):
    refs = load_references("lfm")
    runner = make_runner(tiny, tmp_path, verbose=True, references=refs)
    res = runner.evaluate(PopularityModel(), limit=30)
    out = capsys.readouterr().out
    assert f"LEADERBOARD SCORE: {res.leaderboard_score:.4g}" in out  # 4 significant digits
    assert res.leaderboard_score == phase2_score(res.aggregate["mean"], refs)
    assert "Local run:" in out and "limit=30" in out
    assert res.eligible_for_upload is False
    assert all(f["n_users"] == 30 for f in res.folds)


class FailingModel(PopularityModel):
    """Popularity, but training fails on the ``fail_on``-th call (a crash mid-run).

    ``fail_on`` is a class attribute, set with monkeypatch: as a constructor argument it would
    be a model parameter, and a model with other parameters starts a run of its own.
    """

    fail_on = None

    def __init__(self):
        super().__init__()
        self.trained_on = []

    def train(self, train_df, **kwargs):
        self.trained_on.append(len(train_df))
        if self.fail_on is not None and len(self.trained_on) == self.fail_on:
            raise RuntimeError("simulated crash")
        return super().train(train_df, **kwargs)


def test_resume_after_a_crash_recomputes_only_unfinished_folds(tiny, tmp_path, monkeypatch):
    runner = make_runner(tiny, tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(FailingModel, "fail_on", 3)
        with pytest.raises(RuntimeError, match="simulated crash"):
            runner.evaluate(FailingModel())
    run_dirs = list((tmp_path / "results").iterdir())
    assert len(run_dirs) == 1
    assert sorted(p.name for p in run_dirs[0].glob("fold_?.json")) == ["fold_0.json",
                                                                      "fold_1.json"]
    assert not (run_dirs[0] / "results.json").exists()

    again = FailingModel()
    resumed = runner.evaluate(again)
    assert len(again.trained_on) == 2  # folds 2 and 3 only
    assert again.trained_on == [len(tiny.get_train_set(2)), len(tiny.get_train_set(3))]

    fresh = make_runner(tiny, tmp_path / "other").evaluate(FailingModel())
    assert comparable(resumed) == comparable(fresh)

    # resume=False recomputes everything
    third = FailingModel()
    runner.evaluate(third, resume=False)
    assert len(third.trained_on) == 4


def test_corrupt_fold_file_is_recomputed(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path)
    first = runner.evaluate(FailingModel())
    run_dir = tmp_path / "results" / first.run_id
    (run_dir / "fold_1_users.npz").write_bytes(b"")  # e.g. a disk that filled up
    model = FailingModel()
    again = runner.evaluate(model)
    assert len(model.trained_on) == 1
    assert comparable(again) == comparable(first)


def test_run_hash_and_run_id_follow_the_configuration(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path, n_boot=0)
    a = runner.evaluate(PopularityModel(), limit=20)
    b = runner.evaluate(PopularityModel(), limit=20, seed=5)
    c = runner.evaluate(PopularityModel(), limit=25)
    assert a.run_hash == b.run_hash == c.run_hash  # same data, folds, tests
    assert len({a.run_id, b.run_id, c.run_id}) == 3  # but separate run directories
    h = run_hash(tiny.fingerprint, tiny.fold_params, a.tests)
    assert h != run_hash(tiny.fingerprint, {**tiny.fold_params, "seed": 1}, a.tests)
    assert h != run_hash(tiny.fingerprint, tiny.fold_params, a.tests, "9.9.9")
    assert h != run_hash("0" * 64, tiny.fold_params, a.tests)


class MyRecList(EvalRSRecList):
    @rec_test(test_type="HIT_RATE_AT_10", display_type=CHART_TYPE.SCALAR)
    def hit_rate_at_10(self):
        """Share of test users whose target is in their top 10."""
        return float(((self.ranks > 0) & (self.ranks <= 10)).mean())


def test_custom_reclist_adds_a_test(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path, n_boot=0)
    plain = runner.evaluate(PopularityModel(), limit=40)
    custom = runner.evaluate(PopularityModel(), limit=40, reclist_cls=MyRecList)
    assert "HIT_RATE_AT_10" in custom.tests and "HIT_RATE_AT_10" not in plain.tests
    assert custom.run_hash != plain.run_hash
    for f in custom.folds:
        assert 0 <= f["tests"]["HIT_RATE_AT_10"] <= f["tests"]["HIT_RATE"]
    assert "HIT_RATE_AT_10" in custom.aggregate["mean"]
    with pytest.raises(ConfigError, match="reclist_cls must be a subclass of EvalRSRecList"):
        runner.evaluate(PopularityModel(), reclist_cls=dict)
    # the 2022 keyword still works for one release, with a DeprecationWarning
    forget_warnings()  # an earlier test may have used the keyword in this process
    with pytest.warns(DeprecationWarning, match=r"custom_RecList=\.\.\.\) is deprecated"):
        old = runner.evaluate(PopularityModel(), limit=40, custom_RecList=MyRecList)
    assert old.run_id == custom.run_id and comparable(old) == comparable(custom)
    with pytest.raises(ConfigError, match="both reclist_cls and custom_RecList"):
        runner.evaluate(PopularityModel(), reclist_cls=MyRecList, custom_RecList=MyRecList)


def test_custom_reclist_keyword_warns_once_per_process():
    forget_warnings()
    with pytest.warns(DeprecationWarning, match=r"custom_RecList=\.\.\.\) is deprecated"):
        assert EvalRSRunner._reclist_class(None, MyRecList) is MyRecList
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would raise here
        assert EvalRSRunner._reclist_class(None, MyRecList) is MyRecList
    forget_warnings()


def test_bad_models_fail_clearly(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path, n_boot=0)
    with pytest.raises(ConfigError, match=r"has no train\(\) method"):
        runner.evaluate(object())

    class Shuffled(PopularityModel):
        def predict(self, user_ids):
            return super().predict(user_ids).iloc[1:]  # drops a user

    with pytest.raises(PredictionError, match="have no row"):
        runner.evaluate(Shuffled(), limit=10)
    with pytest.raises(ConfigError, match="'limit'"):
        runner.evaluate(PopularityModel(), limit=-1)


def test_row_order_of_predictions_does_not_matter(tiny, tmp_path):
    class Reversed(PopularityModel):
        def predict(self, user_ids):
            return super().predict(user_ids).iloc[::-1]

    runner = make_runner(tiny, tmp_path, n_boot=0)
    a = runner.evaluate(PopularityModel(), limit=50, model_name="same")
    b = make_runner(tiny, tmp_path / "b", n_boot=0).evaluate(Reversed(), limit=50,
                                                             model_name="same")
    assert a.aggregate == b.aggregate


def test_non_default_fold_count_is_not_eligible(tmp_path):
    from evaluation.dataset import ChallengeDataset

    ds = ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)
    res = make_runner(ds, tmp_path, n_boot=0).evaluate(RandomModel(ds.df_tracks), limit=10)
    assert len(res.folds) == 2
    assert not res.eligible_for_upload
    assert any("num_folds (2 vs 4)" in r for r in res.not_eligible_because)
    assert sum("num_folds" in r for r in res.not_eligible_because) == 1  # said once


def test_upload_without_endpoint_saves_locally(tiny, tiny_board, tmp_path, capsys):
    runner = make_runner(tiny, tmp_path, n_boot=0, verbose=True, competition=tiny_board,
                         upload=UploadSettings(email="a@b.c", participant_id="team"))
    res = runner.evaluate(PopularityModel(), upload=True)
    sub = res.submission
    assert sub["uploaded"] is False and "no upload endpoint" in sub["reason"]
    saved = json.loads(open(sub["path"]).read())
    assert saved["email"] == "a@b.c" and saved["participant_id"] == "team"
    assert saved["leaderboard_score"] == res.leaderboard_score
    assert "saved locally" in capsys.readouterr().out


def test_upload_posts_to_the_configured_endpoint(tiny, tiny_board, tmp_path):
    received = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received["auth"] = self.headers.get("Authorization")
            # the upload is the run's predictions, the submission riding along as the claim
            received["body"] = read_predictions(body, max_bytes=len(body),
                                                max_inflated=1 << 30).claim
            receipt = json.dumps({"status": "accepted", "submission_id": 1}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(receipt)))
            self.end_headers()
            self.wfile.write(receipt)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/submit"
        runner = make_runner(tiny, tmp_path, n_boot=0, competition=tiny_board,
                             upload=UploadSettings(url=url, token="s3cret",
                                                   participant_id="team"))
        res = runner.evaluate(PopularityModel(), upload=True)
    finally:
        server.shutdown()
        server.server_close()
    assert res.submission["uploaded"] is True
    assert received["auth"] == "Bearer s3cret"
    assert received["body"]["run_hash"] == res.run_hash
    assert received["body"]["participant_id"] == "team"


def test_rating_errors_for_models_that_predict_ratings(tiny, tmp_path):
    from evaluation.baselines import BiasModel
    from evaluation.data import Tables
    from evaluation.dataset import ChallengeDataset

    t = tiny.tables
    events = t.events.assign(rating=np.minimum(t.events["user_track_count"], 5).astype(float))
    ds = ChallengeDataset(Tables(events, t.users, t.tracks, t.track_vectors, source="rated"))
    res = make_runner(ds, tmp_path, n_boot=0).evaluate(BiasModel(), limit=40)
    for f in res.folds:
        assert f["rating_errors"]["rmse"] >= f["rating_errors"]["mae"] >= 0
    assert set(res.rating_errors) >= {"rmse", "mae"}
    plain = make_runner(tiny, tmp_path, n_boot=0).evaluate(BiasModel(), limit=40)
    assert "rating_errors" not in plain.folds[0]


# --------------------------------------------------------------------------- references


def test_build_references_takes_the_best_model_per_test():
    base = dict.fromkeys(LEADERBOARD_TESTS, 0.5)
    pop = dict(base) | {"HIT_RATE": 0.7, "MRED_GENDER": 0.2}
    rnd = dict.fromkeys(LEADERBOARD_TESTS, 0.3) | {"HIT_RATE": 0.1, "MRED_GENDER": 0.6,
                                                   "MRR": 0.4}
    refs = build_references({"CBOWModel": base, "PopularityModel": pop, "RandomModel": rnd})
    assert refs.baseline == base
    assert refs.best["HIT_RATE"] == 0.7 and refs.best["MRED_GENDER"] == 0.6
    # CBOW is the best on MRR: the best is mirrored from the worst (0.4): 0.5 + 0.1
    assert refs.best["MRR"] == pytest.approx(0.6)
    assert refs.dataset["best_from"]["MRR"] == "mirror of RandomModel"
    assert refs.best["LATENT_DIVERSITY"] == pytest.approx(0.7)  # 0.5 + (0.5 - 0.3)
    assert refs.hit_rate_threshold == pytest.approx(0.4)
    with pytest.raises(DataError, match="every reference model has HIT_RATE = 0.5"):
        build_references({"CBOWModel": base, "RandomModel": dict(base)})
    assert phase2_score(base, refs) == pytest.approx(0.0)


@pytest.mark.slow
def test_the_runner_picks_the_shipped_tiny_references(tiny, tmp_path):
    # (that a fresh computation gives back the shipped file, every value to the last bit:
    # tests/cli/test_references.py, which computes it with the command that wrote it)
    shipped = load_references("synthetic-tiny")
    assert shipped.dataset["fingerprint"] == tiny.fingerprint
    # the runner picks the shipped file for this dataset, so phase 2 is computed
    runner = make_runner(tiny, tmp_path, n_boot=0)
    assert runner.references is not None and runner.references.name == "synthetic-tiny"
    assert runner.references == shipped


def test_references_for_other_data_are_not_used(tmp_path):
    from evaluation.dataset import ChallengeDataset

    other = ChallengeDataset(source="synthetic", scale="tiny", data_seed=7)
    runner = make_runner(other, tmp_path, n_boot=0)
    assert runner.references is None
    assert "other data" in runner.references_note


def test_predictions_frame_shape_from_random_model(tiny):
    # the 2022 template model, as the tutorial uses it
    model = RandomModel(tiny.df_tracks, top_k=100)
    model.train(tiny.get_train_set(0))
    pred = model.predict(tiny.get_test_set(0)[["user_id"]])
    assert isinstance(pred, pd.DataFrame) and pred.shape[1] == 100


class NanRecList(EvalRSRecList):
    @rec_test(test_type="UNDEFINED", display_type=CHART_TYPE.SCALAR)
    def undefined(self):
        """A test with nothing to measure."""
        return float("nan")


def test_a_custom_test_returning_nan_is_a_clear_error(tiny, tmp_path):
    from evaluation.errors import EvalRSError

    with pytest.raises(EvalRSError, match="UNDEFINED"):
        make_runner(tiny, tmp_path, n_boot=0).evaluate(
            PopularityModel(), limit=20, reclist_cls=NanRecList)


def test_lfm_data_gets_the_published_references(tiny, tmp_path):
    from evaluation.data import Tables
    from evaluation.dataset import ChallengeDataset

    t = tiny.tables
    lfm_like = ChallengeDataset(Tables(t.events, t.users, t.tracks, t.track_vectors,
                                       source="lfm"))
    runner = make_runner(lfm_like, tmp_path, n_boot=0)
    assert runner.references.name == "lfm" and runner.references.hit_rate_threshold == 0.015
    movielens_like = ChallengeDataset(Tables(t.events, t.users, t.tracks, t.track_vectors,
                                             source="movielens:/data/ml-100k"))
    assert make_runner(movielens_like, tmp_path).references is None


@pytest.mark.slow
def test_a_killed_run_resumes_and_recomputes_a_fold_edited_meanwhile(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILLABLE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    results, log = tmp_path / "results", tmp_path / "trained.log"

    # every run is a process forked from one that imported the libraries once (the harness
    # too): the first is killed (SIGKILL) as it hangs
    hung = start_script(script, [str(results), str(log), "hang"], cwd=tmp_path,
                        logs=mkdir(tmp_path / "killed"), env=env)
    try:
        deadline = time.time() + 120
        while (not log.exists() or len(log.read_text().split()) < 3) \
                and time.time() < deadline and hung.poll() is None:
            time.sleep(0.1)  # hanging in fold 2's training: folds 0 and 1 are finished
        assert hung.poll() is None, (tmp_path / "killed" / "run.stderr").read_text()[-3000:]
    finally:
        hung.kill()  # SIGKILL
        hung.wait()
    assert hung.returncode == -signal.SIGKILL
    (run_dir,) = results.iterdir()
    assert sorted(p.name for p in run_dir.glob("fold_?.json")) == ["fold_0.json", "fold_1.json"]
    assert not (run_dir / "results.json").exists()
    assert set(json.loads((run_dir / CHECKSUMS_FILE).read_text())["files"]) == {
        "fold_0.json", "fold_0_users.npz", "fold_0_predictions.npz", "fold_1.json",
        "fold_1_users.npz", "fold_1_predictions.npz"}
    # while it is down, a finished fold gets a better score by hand
    data = json.loads((run_dir / "fold_0.json").read_text())
    data["tests"]["HIT_RATE"] = 1.0
    (run_dir / "fold_0.json").write_text(json.dumps(data, indent=2))

    log.write_text("")
    done = run_script(script, [str(results), str(log), "no"], cwd=tmp_path,
                      logs=mkdir(tmp_path / "resumed"), timeout=300, env=env)
    assert done.exit_status == 0, done.stderr[-3000:]
    assert "fold_0.json: checksum does not match" in done.stderr
    # three trainings (a line each): the edited fold 0 and the unfinished folds 2 and 3;
    # fold 1 is kept
    assert len(log.read_text().split()) == 3
    resumed = json.loads((run_dir / "results.json").read_text())

    other, other_log = tmp_path / "other", tmp_path / "other.log"
    fresh = run_script(script, [str(other), str(other_log), "no"], cwd=tmp_path,
                       logs=mkdir(tmp_path / "fresh"), timeout=300, env=env)
    assert fresh.exit_status == 0, fresh.stderr[-3000:]
    (fresh_path,) = other.glob("*/results.json")
    assert comparable(resumed) == comparable(json.loads(fresh_path.read_text()))
    assert resumed["folds"][0]["tests"]["HIT_RATE"] != 1.0


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


class Repeating(PopularityModel):
    """Lists whose second slot repeats the first for every third user."""

    def predict(self, user_ids):
        preds = super().predict(user_ids)
        preds.iloc[::3, 1] = preds.iloc[::3, 0]
        return preds


def test_repeated_items_warn_once_per_run_with_each_folds_count(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path, n_boot=0)  # silent: notes go through warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.evaluate(Repeating(), limit=30)
    notes = [w for w in caught if "same item more than once" in str(w.message)]
    assert len(notes) == 1
    assert [f["repeated_lists"] for f in result.folds] == [10] * len(result.folds)  # 30 / 3
    assert notes[0].message.counts == {"repeated_lists": 10 * len(result.folds)}
    assert "fold 0: 10 of 30 lists; fold 1: 10 of 30 lists" in str(notes[0].message)
    plain = make_runner(tiny, tmp_path / "plain", n_boot=0).evaluate(PopularityModel(),
                                                                    limit=30)
    assert plain.run_hash == result.run_hash  # the count is no part of the run hash
    assert [f["repeated_lists"] for f in plain.folds] == [0] * len(plain.folds)


def test_a_competition_that_refuses_repeated_items_stops_the_run(tiny, tiny_board, tmp_path):
    strict = replace(tiny_board, repeated_items="error", path="/boards/tiny.toml")
    runner = make_runner(tiny, tmp_path, n_boot=0, competition=strict)
    with pytest.raises(PredictionError) as info:
        runner.evaluate(Repeating(), limit=30)
    text = str(info.value)
    assert "10 lists recommend the same item more than once" in text
    assert ("tiny board refuses lists that recommend the same track more than "
            "once (repeated_items = \"error\" in /boards/tiny.toml)") in text
    assert runner.evaluate(PopularityModel(), limit=30).eligible_for_upload is not None


def test_folds_reused_under_a_board_that_refuses_repeated_items_are_not_eligible(
        tiny, tiny_board, tmp_path):
    make_runner(tiny, tmp_path, n_boot=0, competition=tiny_board).evaluate(Repeating(),
                                                                           limit=30)
    strict = replace(tiny_board, repeated_items="error")
    again = make_runner(tiny, tmp_path, n_boot=0, competition=strict).evaluate(
        Repeating(), limit=30, resume=True)  # every fold reused: none is validated again
    assert again.eligible_for_upload is False
    assert any(r.startswith(f"{10 * len(again.folds)} lists recommend the same track more "
                            f"than once, which tiny board refuses")
               for r in again.not_eligible_because)
