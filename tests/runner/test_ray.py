"""``EvalRSRunner(executor="ray")``: the same files as an in-process run, resume, retries.

The tests share one local Ray with 2 CPUs (``local_ray`` of tests/conftest.py, kept while the
next test needs it: this module's Ray tests come last, and test_ray_reproduce.py's follow). The
models and the function that run in its workers live in tests/runner/_ray_models.py, which
the workers import (a light module); the one that cannot be pickled stays here.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from evaluation.baselines import PopularityModel  # noqa: E402
from evaluation.dataset import ChallengeDataset  # noqa: E402
from evaluation.errors import ConfigError, PredictionError  # noqa: E402
from evaluation.runner import CHECKSUMS_FILE, EvalRSRunner  # noqa: E402
from tests.runner._ray_models import DropsAUser, MarkedModel, in_a_task, trainings  # noqa: E402


@pytest.fixture(scope="module")
def tiny2():
    return ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)


def runner(dataset, results_dir: Path, **kw) -> EvalRSRunner:
    options = dict(results_dir=results_dir, progress=False, verbose=False, reports=False,
                   n_boot=20)
    options.update(kw)
    return EvalRSRunner(dataset, **options)


def _without(data, keys):
    """``data`` without ``keys`` at any depth (the timings and where the run happened)."""
    if isinstance(data, dict):
        return {k: _without(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [_without(v, keys) for v in data]
    return data


VOLATILE = {"runtime", "environment", "created", "finish_time"}  # timings and clocks


def run_files(run_dir: Path) -> dict[str, object]:
    """Every file of a run directory: JSON without timings, other files as bytes.

    ``checksums.json`` keeps the checksums of the per-user arrays; those of the fold JSON
    files change with the timings they hold, which are compared without them instead.
    reclist names its report folder after the time it was written (ms since the epoch).
    """
    out = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        name = re.sub(r"/\d{12,}/", "/<time>/", path.relative_to(run_dir).as_posix())
        if name == CHECKSUMS_FILE:
            files = json.loads(path.read_text())["files"]
            out[name] = {k: v for k, v in files.items() if k.endswith(".npz")}
        elif path.suffix == ".json":
            out[name] = _without(json.loads(path.read_text()), VOLATILE)
        else:
            out[name] = path.read_bytes()
    return out


def the_run(results_dir: Path) -> Path:
    (run_dir,) = [p for p in results_dir.iterdir() if p.is_dir()]
    return run_dir


# the settings' checks first: the Ray tests come last, next to those of
# test_ray_reproduce.py, so that one Ray serves them all (``local_ray``)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"executor": "spark"}, "executor must be one of"),
    ({"ray_resources": {"num_cpus": 1}}, "applies to executor='ray' only"),
    ({"executor": "ray", "ray_resources": {"cpus": 1}}, r"unknown key\(s\) \['cpus'\]"),
    ({"executor": "ray", "ray_resources": {"num_gpus": -1}}, "finite number >= 0"),
    ({"executor": "ray", "ray_max_retries": -1}, "ray_max_retries"),
])
def test_bad_executor_settings_fail_clearly(tiny2, tmp_path, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        runner(tiny2, tmp_path, **kwargs)


def test_missing_ray_gives_the_install_hint(tiny2, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray sees
    with pytest.raises(ConfigError, match=r"evalrs-harness\[ray\]"):
        runner(tiny2, tmp_path, executor="ray")
    runner(tiny2, tmp_path)  # the in-process runner never needs Ray


def test_ray_run_writes_the_same_files_as_the_in_process_run(local_ray, tiny2, tmp_path):
    local = runner(tiny2, tmp_path / "local", reports=True).evaluate(PopularityModel())
    remote = runner(tiny2, tmp_path / "ray", reports=True, executor="ray",
                    ray_resources={"num_cpus": 1, "num_gpus": 0}).evaluate(PopularityModel())
    assert remote.run_id == local.run_id and remote.run_hash == local.run_hash
    a, b = run_files(tmp_path / "local" / local.run_id), run_files(tmp_path / "ray" /
                                                                  remote.run_id)
    assert sorted(a) == sorted(b)
    assert {"results.json", "run.json", "fold_0.json", "fold_1_users.npz", CHECKSUMS_FILE} \
        <= set(a)
    assert any(name.startswith("reclist/fold_1/") for name in a)  # reclist's reports came back
    for name in a:
        assert a[name] == b[name], name
    # the returned result matches the written file (both without timings)
    assert _without(remote.to_dict(), VOLATILE | {"results_path", "submission"}) \
        == b["results.json"]
    hit_rates = [fold["tests"]["HIT_RATE"] for fold in remote.folds]
    assert all(np.isfinite(h) and 0 < h <= 1 for h in hit_rates)


def test_resume_after_an_interrupted_ray_run(local_ray, tiny2, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    fold1_rows = len(tiny2.get_train_set(1))
    (marks / "fail").touch()
    ray_runner = runner(tiny2, tmp_path / "results", executor="ray")
    with pytest.raises(RuntimeError, match="simulated crash in fold 1"):
        ray_runner.evaluate(MarkedModel(str(marks), fold1_rows))
    run_dir = the_run(tmp_path / "results")
    assert (run_dir / "fold_0.json").exists() and not (run_dir / "fold_1.json").exists()
    assert not (run_dir / "results.json").exists()
    assert trainings(marks, tiny2) == [1, 0]

    (marks / "fail").unlink()
    resumed = ray_runner.evaluate(MarkedModel(str(marks), fold1_rows))
    assert trainings(marks, tiny2) == [1, 1]  # fold 0 was not submitted again
    assert the_run(tmp_path / "results") == run_dir

    local = runner(tiny2, tmp_path / "local").evaluate(MarkedModel(str(marks), fold1_rows))
    assert resumed.run_id == local.run_id
    assert run_files(run_dir) == run_files(tmp_path / "local" / local.run_id)


def test_a_killed_worker_is_retried_and_every_fold_runs_once(local_ray, tiny2, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    fold1_rows = len(tiny2.get_train_set(1))
    (marks / f"kill-{fold1_rows}").touch()
    result = runner(tiny2, tmp_path / "results", executor="ray").evaluate(
        MarkedModel(str(marks), fold1_rows))
    assert (marks / f"killed-{fold1_rows}").exists()  # the worker did die once
    assert trainings(marks, tiny2) == [1, 1]
    assert [f["fold"] for f in result.folds] == [0, 1]

    for path in marks.glob("trained-*"):
        path.unlink()
    local = runner(tiny2, tmp_path / "local").evaluate(MarkedModel(str(marks), fold1_rows))
    assert trainings(marks, tiny2) == [1, 1]
    assert run_files(the_run(tmp_path / "results")) == run_files(
        tmp_path / "local" / local.run_id)


def test_no_retries_left_fails_the_run(local_ray, tiny2, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    fold0_rows = len(tiny2.get_train_set(0))
    (marks / f"kill-{fold0_rows}").touch()
    with pytest.raises(ray.exceptions.RayError):
        runner(tiny2, tmp_path / "results", executor="ray", ray_max_retries=0).evaluate(
            MarkedModel(str(marks), len(tiny2.get_train_set(1))))
    assert not (the_run(tmp_path / "results") / "fold_0.json").exists()


def test_tasks_read_the_shared_dataset_without_copying_it(local_ray, tiny2):
    import pandas as pd

    from evaluation.runner._ray import share

    seen = ray.get(ray.remote(in_a_task).remote(ray.put(share(tiny2, [0, 1]))))
    # backed by the object store's shared memory: read-only, not owned, not copied
    assert seen["writeable"] is False and seen["owndata"] is False
    assert seen["frame_shares"] and seen["fold_owndata"] is False
    pd.testing.assert_frame_equal(seen["events"], tiny2.tables.events)
    pd.testing.assert_frame_equal(seen["users"], tiny2.tables.users)
    pd.testing.assert_frame_equal(seen["tracks"], tiny2.tables.tracks)
    np.testing.assert_array_equal(seen["vectors"], tiny2.track_vectors.vectors)
    pd.testing.assert_frame_equal(seen["train"], tiny2.get_train_set(1))
    pd.testing.assert_frame_equal(seen["test"], tiny2.get_test_set(1))
    assert seen["fingerprint"] == seen["recomputed"] == tiny2.fingerprint
    assert seen["fold_params"] == tiny2.fold_params


def test_harness_errors_in_a_task_come_back_as_themselves(local_ray, tiny2, tmp_path):
    with pytest.raises(PredictionError, match="have no row") as caught:
        runner(tiny2, tmp_path, executor="ray").evaluate(DropsAUser(), limit=10)
    assert type(caught.value) is PredictionError  # not Ray's wrapper, so the CLI prints it


class HoldsALock(PopularityModel):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


def test_an_unpicklable_model_fails_before_any_fold(local_ray, tiny2, tmp_path):
    with pytest.raises(ConfigError, match="HoldsALock cannot be pickled"):
        runner(tiny2, tmp_path, executor="ray").evaluate(HoldsALock())
    assert not list(tmp_path.glob("*/fold_*.json"))
