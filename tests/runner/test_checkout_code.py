"""The run's fingerprint covers all of its checkout's code: every file of the checkout that the
model's code imports, and its requirements.txt; the environment's modules are not."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import pytest

from evaluation.errors import RunWarning
from evaluation.runner import EvalRSRunner, load_model_class, model_fingerprint, run_checkout
from tests._script_runner import run_script

REPO = Path(__file__).resolve().parents[2]

MODEL = '''
import json

import numpy as np

from evaluation.baselines import PopularityModel
from submission.candidates import n_candidates


class MyModel(PopularityModel):
    def __init__(self, items, top_k=100):
        super().__init__(top_k=top_k)

    def train(self, train_df, **kwargs):
        self.n = n_candidates()
        return super().train(train_df, **kwargs)
'''

LATE_MODEL = '''
from evaluation.baselines import PopularityModel


class MyModel(PopularityModel):
    def __init__(self, items, top_k=100):
        super().__init__(top_k=top_k)

    def train(self, train_df, **kwargs):
        from .late import n_candidates  # imported only once training starts

        self.n = n_candidates()
        return super().train(train_df, **kwargs)
'''

BY_NAME_MODEL = '''
import importlib

from evaluation.baselines import PopularityModel


class MyModel(PopularityModel):
    def __init__(self, items, top_k=100):
        super().__init__(top_k=top_k)

    def train(self, train_df, **kwargs):
        self.n = importlib.import_module("submission.late").n_candidates()
        return super().train(train_df, **kwargs)
'''

HELPER = "def n_candidates():\n    return {n}\n"


def _forget_submission() -> None:
    """Drop the loaded checkout: the next load is a fresh process's."""
    for name in [n for n in sys.modules if n == "submission" or n.startswith("submission.")]:
        del sys.modules[name]


@pytest.fixture
def checkout(tmp_path):
    """A checkout whose model calls a function of another file of the checkout."""
    root = tmp_path / "checkout"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "__init__.py").write_text("")
    (root / "submission" / "MyModel.py").write_text(MODEL)
    (root / "submission" / "candidates.py").write_text(HELPER.format(n=100))
    (root / "submission" / "late.py").write_text(HELPER.format(n=7))
    _forget_submission()
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))
    _forget_submission()


def _run(checkout: Path, tiny, results: Path, capsys) -> tuple[str, str]:
    """Run the checkout as a fresh process would (its modules imported again); the run id and
    what the run printed (spaces normalised: rich wraps long lines)."""
    _forget_submission()
    capsys.readouterr()
    runner = EvalRSRunner(tiny, results_dir=results, progress=False, reports=False, n_boot=0)
    result = run_checkout(checkout, runner, limit=20)
    assert result is not None
    return result.run_id, " ".join(capsys.readouterr().out.split())


def test_a_changed_helper_module_starts_a_new_run(checkout, tiny, tmp_path, capsys):
    results = tmp_path / "results"
    first, _ = _run(checkout, tiny, results, capsys)
    (checkout / "submission" / "candidates.py").write_text(HELPER.format(n=10))
    second, out = _run(checkout, tiny, results, capsys)
    assert second != first
    assert "finished in an earlier run" not in out
    assert "model code (submission/candidates.py) changed since the run of" in out
    assert len(list(results.iterdir())) == 2


def test_an_unchanged_checkout_is_reused_saying_what_was_compared(checkout, tiny, tmp_path,
                                                                   capsys):
    results = tmp_path / "results"
    first, _ = _run(checkout, tiny, results, capsys)
    again, out = _run(checkout, tiny, results, capsys)
    assert again == first
    # MyModel.py, candidates.py, the package's __init__.py and the harness's base classes'
    # module(s): the count is the digest's own record
    fp = model_fingerprint(load_model_class(checkout).__new__(load_model_class(checkout)), {})
    n = fp["code"]["n_modules"]
    assert n >= 4
    assert (f"the model is the earlier run's (code of {n} modules, parameters and training "
            f"arguments unchanged): its finished folds are reused") in out
    assert out.count("finished in an earlier run, reused") == tiny.num_folds


def test_a_changed_requirements_file_starts_a_new_run(checkout, tiny, tmp_path, capsys):
    results = tmp_path / "results"
    (checkout / "requirements.txt").write_text("numpy==2.0\n")
    first, _ = _run(checkout, tiny, results, capsys)
    again, out = _run(checkout, tiny, results, capsys)
    assert again == first and "code of" in out and "and requirements.txt" in out
    (checkout / "requirements.txt").write_text("numpy==2.1\n")
    second, out = _run(checkout, tiny, results, capsys)
    assert second != first
    assert "requirements.txt changed since the run of" in out


def test_the_environments_modules_are_not_the_checkouts(checkout, monkeypatch):
    # a virtual environment inside the checkout: its packages are the environment's
    venv_module = checkout / ".venv" / "lib" / "envpkg.py"
    venv_module.parent.mkdir(parents=True)
    venv_module.write_text("X = 1\n")
    (checkout / "submission" / "MyModel.py").write_text("import envpkg\n" + MODEL)
    monkeypatch.setattr(sys, "prefix", str(checkout / ".venv"))
    monkeypatch.syspath_prepend(str(venv_module.parent))
    try:
        cls = load_model_class(checkout)
        code = model_fingerprint(cls.__new__(cls), {})["code"]
    finally:
        sys.modules.pop("envpkg", None)
    paths = [f["path"] for f in code["checkout"]["files"]]
    assert paths == ["submission/MyModel.py", "submission/__init__.py",
                     "submission/candidates.py"]
    # the model imports the standard library (json), site-packages (numpy), the harness
    # (evaluation.baselines) and the .venv's envpkg: none of them is a checkout file
    assert {"json", "numpy", "evaluation.baselines"} <= set(sys.modules)
    # the three files and the modules of the harness's base classes (PopularityModel,
    # TopKModel, RecModel)
    assert code["n_modules"] == 3 + 3
    assert all(f["module"].startswith("submission") for f in code["checkout"]["files"])


FINGERPRINT = '''
import json, sys
from pathlib import Path
from evaluation.runner import load_model_class, model_fingerprint
cls = load_model_class(Path(sys.argv[1]))
print(json.dumps(model_fingerprint(cls.__new__(cls), {})["code"]))
'''


def test_the_checkouts_digest_is_the_same_wherever_the_checkout_lies(checkout, tmp_path):
    other = tmp_path / "elsewhere" / "copy"
    shutil.copytree(checkout, other)
    script = tmp_path / "fp.py"
    script.write_text(FINGERPRINT)
    codes = []
    for n, where in enumerate((checkout, other)):
        # two processes forked from one that imported only third-party libraries
        logs = tmp_path / f"logs-{n}"
        logs.mkdir()
        done = run_script(script, [str(where)], cwd=where, logs=logs, timeout=120,
                          env={"PYTHONPATH": f"{where}:{REPO}", "PATH": "/usr/bin:/bin"})
        assert done.exit_status == 0, done.stderr[-3000:]
        codes.append(json.loads(done.stdout))
    assert codes[0] == codes[1]
    assert [f["path"] for f in codes[0]["checkout"]["files"]] == [
        "submission/MyModel.py", "submission/__init__.py", "submission/candidates.py"]
    assert str(tmp_path) not in json.dumps(codes[0])


def test_a_module_imported_only_inside_a_method_is_covered(checkout, tiny, tmp_path, capsys):
    (checkout / "submission" / "MyModel.py").write_text(LATE_MODEL)
    results = tmp_path / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        first, _ = _run(checkout, tiny, results, capsys)
    cls = load_model_class(checkout)
    paths = [f["path"] for f in model_fingerprint(cls.__new__(cls), {})["code"]["checkout"]
             ["files"]]
    assert "submission/late.py" in paths and "submission/candidates.py" not in paths
    (checkout / "submission" / "late.py").write_text(HELPER.format(n=8))
    second, out = _run(checkout, tiny, results, capsys)
    assert second != first and "model code (submission/late.py) changed" in out


def test_a_module_imported_by_name_while_training_is_named(checkout, tiny, tmp_path):
    (checkout / "submission" / "MyModel.py").write_text(BY_NAME_MODEL)
    _forget_submission()
    runner = EvalRSRunner(tiny, results_dir=tmp_path / "results", progress=False,
                          verbose=False, reports=False, n_boot=0)
    with pytest.warns(RunWarning, match=r"submission/late\.py of the model's checkout was "
                                        r"imported by name while the model trained"):
        run_checkout(checkout, runner, limit=20)
    # resumed: nothing trains, nothing is imported late, nothing is said
    _forget_submission()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        run_checkout(checkout, runner, limit=20)


def test_a_package_comes_before_a_module_of_the_same_name(checkout):
    # the template's layout: submission.py (the script) beside submission/ (the package)
    (checkout / "submission.py").write_text("print('the script')\n")
    cls = load_model_class(checkout)
    files = model_fingerprint(cls.__new__(cls), {})["code"]["checkout"]["files"]
    assert [(f["path"], f["module"]) for f in files] == [
        ("submission/MyModel.py", "submission.MyModel"), ("submission/__init__.py", "submission"),
        ("submission/candidates.py", "submission.candidates")]
