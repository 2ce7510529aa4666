"""The documented ALS recipe (``examples/als_model.py``) runs through the harness: valid lists,
no training items, far more hits than random, the same numbers twice. Needs the optional
``als`` extra (``implicit``); skipped with the reason without it."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from evaluation import EvalRSRunner
from evaluation.baselines import RandomModel
from evaluation.errors import PredictionWarning
from tests._script_runner import run_script

pytest.importorskip("implicit", reason="the ALS example needs the optional 'als' extra "
                                       "(make als)")

from examples.als_model import ALSModel

#: A small ALS (a quarter of the documented work per fold): what the tests check, valid lists
#: without training items, far more hits than random, the same numbers twice, does not depend
#: on the model's size (on the tiny dataset it hits more often than a larger one).
SMALL_ALS = {"factors": 16, "iterations": 5}


def evaluate(dataset, model, results):
    runner = EvalRSRunner(dataset, results_dir=results, progress=False, verbose=False,
                          n_boot=0)
    return runner.evaluate(model, resume=False)


def test_als_recipe_scores_through_the_harness(tiny, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PredictionWarning)  # no training items recommended
        als = evaluate(tiny, ALSModel(tiny.df_tracks, **SMALL_ALS), tmp_path)
    assert all(f["seen_in_training"] == {"items": 0, "lists": 0} for f in als.folds)
    assert all(f["tests"]["stats"]["min_predictions"] == 100 for f in als.folds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)
        random = evaluate(tiny, RandomModel(tiny.df_tracks), tmp_path)
    # random hits about k / catalog size = 100 / 1500 of the time; ALS learns the tastes
    assert als.aggregate["mean"]["HIT_RATE"] > 3 * random.aggregate["mean"]["HIT_RATE"]
    again = evaluate(tiny, ALSModel(tiny.df_tracks, **SMALL_ALS), tmp_path / "again")
    assert [f["tests"] for f in again.folds] == [f["tests"] for f in als.folds]


def test_als_recipe_through_submission_py_with_params(tmp_path):
    """The documented way: ``class MyModel(ALSModel)`` in submission/MyModel.py, ``--param``."""
    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "__init__.py").write_text("")
    (tmp_path / "submission.py").write_text((repo / "submission.py").read_text())
    (tmp_path / "submission" / "MyModel.py").write_text(
        "from examples.als_model import ALSModel\n\n\nclass MyModel(ALSModel):\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(repo)}
    # a process of its own, forked from one that imported the third-party libraries once
    done = run_script(tmp_path / "submission.py",
                      ["--scale", "tiny", "--num-folds", "1", "--limit", "50", "--param",
                       "factors=16", "--param", "iterations=5", "--quiet"],
                      cwd=tmp_path, logs=tmp_path, env=env, timeout=300)
    assert done.exit_status == 0, (done.stdout + done.stderr)[-3000:]
    (path,) = (tmp_path / "results").glob("*/results.json")
    results = json.loads(path.read_text())
    assert results["settings"]["params"] == {"factors": 16, "iterations": 5}
    assert results["folds"][0]["seen_in_training"]["items"] == 0
    assert done.stdout.startswith("LEADERBOARD SCORE: ")
