"""Loading and running a checkout's ``submission/MyModel.py`` by path (``run_checkout``)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.cli import EXIT_EXCEPTION, guarded
from evaluation.errors import ConfigError
from evaluation.runner import load_model_class, run_checkout

MODEL = """from evaluation import RecModel
from .helper import NAME
from submission.helper import twice


class MyModel(RecModel):
    def __init__(self, items=None, top_k=100, **params):
        self.items, self.top_k, self.params = items, top_k, params
        self.name = twice(NAME)

    def train(self, train_df, **kwargs):
        pass

    def predict(self, user_ids):
        raise AssertionError
"""


@pytest.fixture(autouse=True)
def own_submission_modules():
    """Give each test a clean ``submission`` package and put back the one loaded before."""
    saved = {n: m for n, m in sys.modules.items() if n.split(".")[0] == "submission"}
    for name in saved:
        del sys.modules[name]
    yield
    for name in [n for n in sys.modules if n.split(".")[0] == "submission"]:
        del sys.modules[name]
    sys.modules.update(saved)


def checkout(root: Path, name: str, model: str = MODEL, init: bool = True) -> Path:
    """A checkout folder whose helper module names it ``name``."""
    package = root / name / "submission"
    package.mkdir(parents=True)
    if init:
        (package / "__init__.py").write_text("")
    (package / "helper.py").write_text(f"NAME = {name!r}\n\ndef twice(s):\n    return s * 2\n")
    (package / "MyModel.py").write_text(model)
    return root / name


def test_the_model_is_loaded_by_path_under_its_usual_name(tmp_path):
    first = load_model_class(checkout(tmp_path, "a"))
    assert first.__module__ == "submission.MyModel" and first.__qualname__ == "MyModel"
    assert first().name == "aa"  # relative and absolute imports of its own package work
    assert Path(sys.modules["submission.MyModel"].__file__) == tmp_path / "a/submission/MyModel.py"
    assert load_model_class(tmp_path / "a") is first  # loaded once
    # another checkout replaces it, with its package's other modules
    second = load_model_class(checkout(tmp_path, "b", init=False))
    assert second is not first and second().name == "bb"


def test_missing_or_wrong_model_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"nowhere/submission/MyModel\.py not found"):
        load_model_class(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match=r"MyModel\.py defines no class MyModel"):
        load_model_class(checkout(tmp_path, "c", model="MyModel = 3\n"))


def test_an_error_in_the_module_is_the_models_with_its_traceback(tmp_path, capsys):
    broken = "def helper():\n    raise RuntimeError('import-bug')\n\n\nhelper()\n"
    folder = checkout(tmp_path, "d", model=broken)
    # the caller, as in a real run: a submission.py that loads the model under guarded()
    script = tmp_path / "submission.py"
    script.write_text("from evaluation.runner import load_model_class\n\n\n"
                      "def main(folder):\n    return load_model_class(folder)\n")
    spec = importlib.util.spec_from_file_location("submission_script", script)
    caller = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(caller)
    assert guarded(functools.partial(caller.main, folder)) == EXIT_EXCEPTION
    err = capsys.readouterr().err
    assert "the model raised RuntimeError: import-bug" in err
    frames = [line for line in err.splitlines() if line.startswith('  File "')]
    model_file = f'  File "{folder / "submission" / "MyModel.py"}"'
    assert len(frames) == 2 and all(frame.startswith(model_file) for frame in frames)
    assert "submission.MyModel" not in sys.modules  # a failed import leaves nothing behind


def test_run_checkout_builds_the_model_for_the_runner(tmp_path):
    runner = EvalRSRunner(ChallengeDataset(scale="tiny"), results_dir=tmp_path / "results",
                          k=20, progress=False)
    built = []

    def ready(model) -> bool:
        built.append(model)
        return False  # stop before training

    folder = checkout(tmp_path, "e")
    assert run_checkout(folder, runner, {"factors": 8}, ready=ready, seed=1) is None
    (model,) = built
    assert model.top_k == 20 and model.params == {"factors": 8}
    assert model.items.equals(runner.dataset.df_tracks)
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
