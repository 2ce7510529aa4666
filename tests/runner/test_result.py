"""The runner's typed result, its deprecated spellings and its parameter checks."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

import evaluation.runner as runner_pkg
from evaluation.baselines import PopularityModel
from evaluation.errors import ConfigError
from evaluation.runner import EvalRSRunner, RunResult, UploadSettings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result(tiny, tmp_path_factory) -> RunResult:
    runner = EvalRSRunner(tiny, results_dir=tmp_path_factory.mktemp("r") / "results",
                          progress=False, verbose=False, reports=False, n_boot=20)
    return runner.evaluate(PopularityModel(), limit=30)


def render(result: RunResult, width: int) -> str:
    console = Console(record=True, width=width, highlight=False, file=io.StringIO())
    console.print(result)
    return console.export_text()


# --------------------------------------------------------------------------- RunResult


def test_to_dict_is_the_results_file(result):
    on_disk = json.loads(result.path.read_text())
    assert result.to_dict() == on_disk
    assert list(result.to_dict()) == list(on_disk)  # same keys, same order
    assert result.path.name == "results.json" and result.path.parent.name == result.run_id


def test_scores_have_one_source(result):
    assert result.phase1_score == result.aggregate["phase1_score"]
    assert result.leaderboard_score == result.aggregate["phase2_score"]
    assert not hasattr(result, "phase2_score") and not hasattr(result, "results_path")
    d = result.to_dict()  # the file keeps its layout
    assert d["phase1_score"] == result.phase1_score
    assert d["phase2_score"] == d["leaderboard_score"] == result.leaderboard_score


def test_result_is_frozen(result):
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.seed = 1


def test_to_frame_has_one_row_per_test(result):
    frame = result.to_frame()
    assert list(frame.index) == list(result.aggregate["mean"])
    assert frame.index.name == "test"
    assert list(frame.columns) == ["mean", "std", "ci_low", "ci_high", "bias_dominated",
                                   "fold_0", "fold_1", "fold_2", "fold_3"]
    for name, row in frame.iterrows():
        assert row["mean"] == result.aggregate["mean"][name]
        assert row["std"] == result.aggregate["std"][name]
        low, high = result.confidence_intervals["tests"][name]
        assert (row["ci_low"], row["ci_high"]) == (low, high)
        for f in result.folds:
            assert row[f"fold_{f['fold']}"] == f["tests"][name]
    assert frame["bias_dominated"].dtype == bool


def test_to_frame_without_intervals(tiny, tmp_path):
    runner = EvalRSRunner(tiny, results_dir=tmp_path, progress=False, verbose=False,
                          reports=False, n_boot=0)
    frame = runner.evaluate(PopularityModel(), limit=20).to_frame()
    assert frame["ci_low"].isna().all() and frame["ci_high"].isna().all()
    assert not frame["bias_dominated"].any()
    assert isinstance(frame, pd.DataFrame)


def test_rich_rendering_is_the_summary(result):
    narrow = render(result, 80)
    assert f"EvalRS results: {result.model['name']}" in narrow
    assert "Seconds per stage" not in narrow  # the runner prints them when verbose
    assert "How the leaderboard score is made" in narrow
    assert f"LEADERBOARD SCORE: {result.leaderboard_score:.4g}" in narrow
    assert "Local run:" in narrow  # limit=30
    assert "Fold 0" not in narrow  # per-fold columns only when they fit
    assert "Fold 3" in render(result, 200)


def test_a_result_is_not_a_mapping(result):
    # the results dict is result.to_dict(); the object itself has attributes only
    with pytest.raises(TypeError):
        result["run_hash"]
    assert result.to_dict()["run_hash"] == result.run_hash


# --------------------------------------------------------------------------- upload settings


def test_upload_settings_object(tiny, tmp_path):
    settings = UploadSettings(email="a@b.c", participant_id="t", url="https://x.org/submit",
                              token="tok")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        runner = EvalRSRunner(tiny, results_dir=tmp_path, upload=settings)
    assert runner.upload_settings == settings
    with pytest.raises(ConfigError, match="must be an UploadSettings"):
        EvalRSRunner(tiny, results_dir=tmp_path, upload={"url": "https://x.org"})
    with pytest.raises(ConfigError, match=r"upload\.url .* must start with https://"):
        EvalRSRunner(tiny, results_dir=tmp_path, upload=UploadSettings(url="ftp://x.org/"))
    with pytest.raises(ConfigError, match=r"upload\.token .* has a space"):
        EvalRSRunner(tiny, results_dir=tmp_path, upload=UploadSettings(token="a b"))


def test_the_2022_upload_keywords_are_deprecated_but_work(tiny, tmp_path):
    with pytest.warns(DeprecationWarning, match=r"upload=UploadSettings\(email=\.\.\., "
                                                 r"participant_id"):
        runner = EvalRSRunner(tiny, results_dir=tmp_path, email="a@b.c", participant_id="t")
    assert runner.upload_settings == UploadSettings(email="a@b.c", participant_id="t")
    with pytest.raises(TypeError, match="upload_url"):
        EvalRSRunner(tiny, results_dir=tmp_path, upload_url="https://x.org/submit")
    with pytest.raises(ConfigError, match="both upload=UploadSettings"):
        EvalRSRunner(tiny, results_dir=tmp_path, upload=UploadSettings(), email="a@b.c")


# --------------------------------------------------------------------------- parameter checks


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 0}, "The 'k' parameter of EvalRSRunner must be an int in the range [1, inf). "
               "Got 0 instead."),
    ({"k": True}, "The 'k' parameter of EvalRSRunner must be an int in the range [1, inf). "
                  "Got True instead."),
    ({"n_boot": -1}, "The 'n_boot' parameter of EvalRSRunner must be an int in the range "
                     "[0, inf). Got -1 instead."),
    ({"n_boot": 1}, "The 'n_boot' parameter of EvalRSRunner must be 0 (no confidence "
                    "intervals) or an int >= 2. Got 1 instead."),
])
def test_runner_parameters(tiny, tmp_path, kwargs, message):
    with pytest.raises(ConfigError) as info:
        EvalRSRunner(tiny, results_dir=tmp_path, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"limit": -1}, "The 'limit' parameter of EvalRSRunner.evaluate must be an int in the "
                    "range [0, inf). Got -1 instead."),
    ({"seed": -1}, "The 'seed' parameter of EvalRSRunner.evaluate must be an int in the "
                   "range [0, 4294967295]. Got -1 instead."),
    ({"seed": 2**32}, "The 'seed' parameter of EvalRSRunner.evaluate must be an int in the "
                      "range [0, 4294967295]. Got 4294967296 instead."),
])
def test_evaluate_parameters(tiny, tmp_path, kwargs, message):
    runner = EvalRSRunner(tiny, results_dir=tmp_path, progress=False, verbose=False)
    with pytest.raises(ConfigError) as info:
        runner.evaluate(PopularityModel(), **kwargs)
    assert str(info.value) == message


# --------------------------------------------------------------------------- entry points


@pytest.fixture(scope="module")
def script():
    """submission.py as a module (the name ``submission`` is the model package's)."""
    spec = importlib.util.spec_from_file_location("submission_script_args",
                                                  REPO / "submission.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_num_folds(script, capsys):
    assert script.parse_args([]).num_folds == 4
    assert script.parse_args(["--num-folds", "2"]).num_folds == 2
    assert capsys.readouterr().err == ""
    assert script.parse_args(["--competition", "c.toml"]).num_folds is None
    with pytest.raises(SystemExit):
        script.parse_args(["--folds", "3"])


def test_runner_package_exports():
    assert runner_pkg.__all__ == sorted(runner_pkg.__all__)
    for name in runner_pkg.__all__:
        assert getattr(runner_pkg, name) is not None
    for path in (REPO / "submission.py", REPO / "evaluation" / "cli" / "submit.py"):
        assert "runner._" not in path.read_text(), path  # only the public package
