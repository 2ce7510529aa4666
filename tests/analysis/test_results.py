"""load_results: a finished run read back, verified, typed and tabulated."""

from __future__ import annotations

import json
import math
import shutil
import warnings

import numpy as np
import pytest

from evaluation import LoadedRun, load_results
from evaluation.baselines import PopularityModel
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.errors import ConfigError, PredictionWarning
from evaluation.runner import EvalRSRunner


@pytest.fixture(scope="module")
def finished(tiny, tmp_path_factory):
    """A finished run of PopularityModel on the tiny data, and its RunResult."""
    runner = EvalRSRunner(tiny, results_dir=tmp_path_factory.mktemp("load") / "results",
                          progress=False, verbose=False, reports=False, n_boot=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)
        result = runner.evaluate(PopularityModel())
    return result.path.parent, result


@pytest.fixture
def copy(finished, tmp_path):
    """A copy of the finished run directory, to damage."""
    target = tmp_path / finished[0].name
    shutil.copytree(finished[0], target)
    return target


def test_loaded_run_is_what_the_run_wrote(finished):
    run_dir, result = finished
    for path in (run_dir, run_dir / "results.json", str(run_dir)):
        run = load_results(path)
        assert isinstance(run, LoadedRun) and run.run_dir == run_dir
    assert (run.run_id, run.run_hash, run.model_name) == (result.run_id, result.run_hash,
                                                          "PopularityModel")
    assert run.dataset_fingerprint == result.dataset["fingerprint"]
    assert run.fold_params == result.dataset["fold_params"] and run.num_folds == 4
    assert (run.seed, run.limit, run.k) == (result.seed, result.limit, result.k)
    assert run.fold_tests == [{t: v for t, v in f["tests"].items() if isinstance(v, float)}
                              for f in result.folds]
    assert run.n_users == [f["n_users"] for f in result.folds]
    assert run.aggregate == result.aggregate and run.intervals == result.confidence_intervals
    assert run.phase1_score == result.phase1_score
    assert run.leaderboard_score == result.leaderboard_score
    assert run.references.to_dict() == result.references["values"]
    assert run.not_applicable == result.to_dict().get("not_applicable", {})
    assert "PopularityModel" in repr(run) and len(repr(run)) < 400


def test_user_scores_are_read_on_demand_and_reproduce_the_folds(finished):
    run = load_results(finished[0])
    assert run._cache == {}  # nothing read until asked
    for f in range(run.num_folds):
        scores = run.user_scores(f)
        assert len(scores) == run.n_users[f]
        for t, v in scores.tests().items():
            assert v[0] == pytest.approx(run.fold_tests[f][t], rel=1e-12), (f, t)
    assert run.user_scores(1) is run.user_scores(1)
    with pytest.raises(ConfigError, match=r"fold must be an int in \[0, 3\]"):
        run.user_scores(4)


def test_to_frame_has_a_row_per_fold_and_test_and_the_means(finished):
    run = load_results(finished[0])
    frame = run.to_frame()
    assert list(frame.columns) == ["fold", "test", "value", "ci_low", "ci_high"]
    assert len(frame) == 4 * 9 + 9 + 2
    per_fold = frame[frame["fold"] != "mean"]
    assert per_fold["ci_low"].isna().all()
    for f in range(4):
        values = per_fold[per_fold["fold"] == f].set_index("test")["value"]
        assert values.to_dict() == run.fold_tests[f]
    means = frame[frame["fold"] == "mean"].set_index("test")
    for t in LEADERBOARD_TESTS:
        assert means.loc[t, "value"] == run.aggregate["mean"][t]
        assert [means.loc[t, "ci_low"], means.loc[t, "ci_high"]] == run.intervals["tests"][t]
        # the fold mean is the mean of the fold rows
        assert means.loc[t, "value"] == pytest.approx(
            np.mean([run.fold_tests[f][t] for f in range(4)]), rel=1e-12)
    assert means.loc["phase1_score", "value"] == run.phase1_score
    assert [means.loc["phase2_score", "ci_low"], means.loc["phase2_score", "ci_high"]] \
        == run.intervals["phase2_score"]


def test_test_users_come_from_the_runs_dataset(finished, tiny):
    run = load_results(finished[0])
    users = run.test_users(2, tiny)
    np.testing.assert_array_equal(users, tiny.get_test_set(2)["user_id"].to_numpy())
    from evaluation.dataset import ChallengeDataset

    other = ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)
    with pytest.raises(ConfigError, match="not the one run"):
        run.test_users(0, other)


def test_refuses_an_edited_fold_file(copy):
    path = copy / "fold_1.json"
    data = json.loads(path.read_text())
    data["tests"]["HIT_RATE"] += 0.1
    path.write_text(json.dumps(data, indent=2) + "\n")
    with pytest.raises(ConfigError, match="fold_1.json: checksum does not match"):
        load_results(copy)


def test_refuses_edited_results(copy):
    path = copy / "results.json"
    data = json.loads(path.read_text())
    data["folds"][3]["tests"]["MRR"] = 0.9
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="tests of fold 3 differ from fold_3.json"):
        load_results(copy)


def test_refuses_swapped_or_missing_files(copy):
    (copy / "fold_0_users.npz").rename(copy / "keep.npz")
    with pytest.raises(ConfigError, match="fold_0_users.npz: missing"):
        load_results(copy)
    shutil.copy(copy / "fold_1_users.npz", copy / "fold_0_users.npz")
    with pytest.raises(ConfigError, match="fold_0_users.npz: checksum"):
        load_results(copy)
    (copy / "keep.npz").rename(copy / "fold_0_users.npz")
    load_results(copy)
    (copy / "checksums.json").unlink()
    with pytest.raises(ConfigError, match="checksums.json: missing"):
        load_results(copy)


def test_refuses_an_unfinished_run_and_other_paths(copy, tmp_path):
    (copy / "results.json").unlink()
    with pytest.raises(ConfigError, match="results.json: missing .*has not finished"):
        load_results(copy)
    with pytest.raises(ConfigError, match="neither a run directory"):
        load_results(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="must be a run directory"):
        load_results(42)


def test_arrays_changed_after_loading_are_refused(copy):
    run = load_results(copy)
    with np.load(copy / "fold_2_users.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["rr"] = arrays["rr"] * 0.5
    with open(copy / "fold_2_users.npz", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ConfigError, match="fold_2_users.npz: checksum"):
        run.user_scores(2)
    assert not math.isnan(run.user_scores(1).rr.sum())
