"""A run's per-user values and costs: each fold records its test users' hash, its slices'
labels and what it cost; the upload carries every fold's per-user values."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from evaluation.baselines import PopularityModel
from evaluation.challenge import MRED_SLICES, decode_user_values, users_sha256
from evaluation.contract import fold_cost, run_hash
from evaluation.runner import EvalRSRunner, UploadSettings, run_user_values, submit_run


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    results_dir = tmp_path_factory.mktemp("runs")
    runner = EvalRSRunner(tiny, results_dir=results_dir, progress=False, verbose=False,
                          reports=False, n_boot=0)
    return runner.evaluate(PopularityModel(), model_name="pop")


def test_each_fold_records_its_users_labels_and_costs(run, tiny):
    assert fold_cost({}) is None  # a fold without a runtime: costs unknown
    assert fold_cost({"runtime": {"train": {"seconds": -1}, "score": {"peak_rss_mib": 7}}}) \
        == {"train_seconds": None, "predict_seconds": None, "peak_rss_mib": 7.0}
    for fold in run.folds:
        _, test_df = tiny.get_train_and_test_sets(fold["fold"])
        assert fold["test_users_sha256"] == users_sha256(test_df["user_id"].to_numpy())
        assert set(fold["slice_labels"]) == set(MRED_SLICES)
        # the gender slice of the synthetic users: its labels are the sorted genders
        genders = tiny.df_users.loc[test_df["user_id"], "gender"].dropna().astype(str)
        assert fold["slice_labels"]["MRED_GENDER"] == sorted(set(genders))
        runtime, cost = fold["runtime"], fold_cost(fold)
        assert "cost" not in fold  # read from the runtime: results.json gains no timing
        assert cost["train_seconds"] == runtime["train"]["seconds"]
        assert cost["predict_seconds"] == runtime["predict"]["seconds"]
        peaks = [s["peak_rss_mib"] for s in runtime.values() if s["peak_rss_mib"] is not None]
        assert cost["peak_rss_mib"] == pytest.approx(max(peaks), abs=0.1)
        assert cost["peak_rss_mib"] > 10  # a Python process with NumPy and pandas


def test_the_run_hash_is_unchanged(run, tiny):
    assert run.run_hash == run_hash(tiny.fingerprint, tiny.fold_params, run.tests)


def test_the_blob_holds_the_stored_fold_arrays(run):
    results = run.to_dict()
    run_dir = Path(str(run.path)).parent
    blob, why = run_user_values(results, run_dir)
    assert why == "" and blob is not None
    folds = decode_user_values(blob, [f["n_users"] for f in run.folds], k=run.k)
    for fold, got in zip(run.folds, folds):
        with np.load(run_dir / f"fold_{fold['fold']}_users.npz") as npz:
            np.testing.assert_array_equal(got.scores.rr, npz["rr"])
            np.testing.assert_array_equal(got.scores.hit, npz["hit"])
            np.testing.assert_array_equal(got.scores.blw, npz["blw"].astype(np.float32))
            np.testing.assert_array_equal(got.scores.ld, npz["ld"].astype(np.float32))
            for test in MRED_SLICES:
                np.testing.assert_array_equal(got.scores.slices[test], npz[f"slice:{test}"])
        assert got.users_sha256 == fold["test_users_sha256"]
        # the recomputed tests are the fold's, HIT_RATE and MRR exactly
        tests = got.scores.tests()
        assert tests["HIT_RATE"][0] == pytest.approx(fold["tests"]["HIT_RATE"], rel=1e-12)
        assert tests["MRR"][0] == pytest.approx(fold["tests"]["MRR"], rel=1e-12)


def test_the_saved_submission_carries_the_values(run):
    out = io.StringIO()
    run_dir = Path(str(run.path)).parent
    outcome = submit_run(run.to_dict(), run_dir, UploadSettings(), Console(file=out))
    assert outcome["outcome"] in ("local", "not_eligible")
    saved = json.loads((run_dir / "submission.json").read_text())
    assert saved["user_values"] == run_user_values(run.to_dict(), run_dir)[0]
    assert "per-user values" not in out.getvalue()


def test_a_run_of_an_older_harness_uploads_without_values(run, tmp_path):
    out = io.StringIO()
    results = run.to_dict()
    for fold in results["folds"]:
        del fold["test_users_sha256"]
    blob, why = run_user_values(results, Path(str(run.path)).parent)
    assert blob is None and "fold 0 does not record the hash of its test users" in why
    submit_run(results, tmp_path, UploadSettings(), Console(file=out, width=400))
    saved = json.loads((tmp_path / "submission.json").read_text())
    assert "user_values" not in saved
    assert "carries no per-user values (fold 0 does not record" in out.getvalue()
