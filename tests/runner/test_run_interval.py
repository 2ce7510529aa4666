"""One interval for one run: a run's confidence intervals are those of the public
``evaluation.challenge.bootstrap`` given its folds' per-user values, its seed and its replicate
count, to the bit, so that a leaderboard that scores the same predictions gets the same
intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.baselines import PopularityModel
from evaluation.challenge import UserScores, bootstrap, decode_user_values
from evaluation.runner import EvalRSRunner, run_user_values
from evaluation.runner._store import verify_fold


@pytest.fixture(scope="module")
def finished(tiny, tmp_path_factory):
    runner = EvalRSRunner(tiny, results_dir=tmp_path_factory.mktemp("runs"), progress=False,
                          verbose=False, reports=False, n_boot=150)
    result = runner.evaluate(PopularityModel(), seed=11)
    return runner, result


def _fold_scores(result) -> list[UserScores]:
    run_dir = Path(str(result.path)).parent
    found = [verify_fold(run_dir, f["fold"], json.loads((run_dir / "run.json").read_text())
                         ["run_key"], result.tests) for f in result.folds]
    assert all(isinstance(f, tuple) for f in found)
    return [f[1] for f in found]


def test_the_runs_intervals_are_the_public_functions_on_its_per_user_values(finished):
    runner, result = finished
    saved = json.loads(Path(str(result.path)).read_text())
    ci = saved["confidence_intervals"]
    assert ci["n_boot"] == 150 and ci["seed"] == saved["seed"] == 11
    # what a leaderboard holds: the per-user values of each fold, the run's seed and its
    # replicate count (and the competition's references and the tests that do not apply)
    again = bootstrap(_fold_scores(result), runner.references, n_boot=ci["n_boot"],
                      seed=saved["seed"], not_applicable=saved["not_applicable"])
    assert json.loads(json.dumps(again)) == ci  # to the bit, every interval
    assert ci["phase2_score"] is not None and ci["phase2_score"][0] < ci["phase2_score"][1]
    # another seed gives other intervals: the comparison above can fail
    other = bootstrap(_fold_scores(result), runner.references, n_boot=ci["n_boot"],
                      seed=12, not_applicable=saved["not_applicable"])
    assert other["phase2_score"] != ci["phase2_score"]


def test_the_uploads_per_user_values_give_the_same_interval_within_float32(finished, tiny):
    runner, result = finished
    blob, why = run_user_values(result.to_dict(), Path(str(result.path)).parent)
    assert blob is not None, why
    folds = decode_user_values(blob, [f["n_users"] for f in result.folds], k=runner.k)
    ci = result.confidence_intervals
    again = bootstrap([f.scores for f in folds], runner.references, n_boot=ci["n_boot"],
                      seed=result.seed, not_applicable=result.not_applicable)
    # the blob stores BEING_LESS_WRONG and LATENT_DIVERSITY as float32: the same resamples,
    # values rounded to float32
    for name in ("phase1_score", "phase2_score"):
        assert again[name] == pytest.approx(ci[name], rel=1e-5)
    for test, bounds in ci["tests"].items():
        if bounds is not None:
            assert again["tests"][test] == pytest.approx(bounds, rel=1e-5, abs=1e-7)
