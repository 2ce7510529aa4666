"""The 2022/2023 compatibility layer (``evaluation.compat``, and reclist for RecLists) stays
out of a modern run: a run with the challenge's own tests loads neither, and the harness works
with both missing: blocked, and in a copy of the package whose ``compat/`` folder and old
module paths are deleted. What old code hands to a modern class is converted where it enters
(``evaluation.legacy``), without the layer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The compatibility layer's folder and the old module paths, its entry points that are files
#: of their own (the finder of the old module names stays: ``import evaluation`` installs it,
#: and it loads the layer only when old code imports an old module).
LAYER = ("compat", "EvalRSRunner.py", "EvalRSRecList.py", "utils.py")

#: A tiny modern run: its tests, and the modules of the layer it loaded.
MODERN_RUN = """
import json, sys, warnings
import evaluation
from evaluation import ChallengeDataset, EvalRSRunner, PopularityModel

dataset = ChallengeDataset(scale="tiny", num_folds=2, fold_cache=False)
runner = EvalRSRunner(dataset, results_dir=sys.argv[1], progress=False, verbose=False,
                      n_boot=10)
result = runner.evaluate(PopularityModel(), seed=3)
loaded = sorted(m for m in sys.modules
                if m.split(".")[0] == "reclist" or m.startswith("evaluation.compat")
                or m.startswith("evaluation.challenge_reclist"))
print(json.dumps({"tests": [f["tests"] for f in result.folds],
                  "aggregate": result.aggregate, "loaded": loaded,
                  "file": evaluation.__file__}))
"""

#: Makes ``evaluation.compat`` and ``reclist`` unimportable, as if they were not there.
BLOCK = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "reclist" or name == "evaluation.compat" \\
                or name.startswith("evaluation.compat."):
            raise ImportError(f"{name} is blocked (deleted) in this test")
        return None

sys.meta_path.insert(0, Blocked())
for name in [m for m in sys.modules if m.split(".")[0] == "reclist"]:
    del sys.modules[name]
"""


def _python(code: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _copy_without_the_layer(root: Path) -> Path:
    """A copy of the package under ``root`` with the compatibility layer deleted."""
    package = root / "evaluation"
    shutil.copytree(ROOT / "evaluation", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in LAYER:
        target = package / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    return root


def _last_json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def modern_run(tmp_path_factory) -> dict:
    """The tiny modern run with everything installed, then, in the same interpreter (the run
    loaded no module of the layer: the first test checks it), ``BLOCKED_CALLS`` with the layer
    blocked from then on: one interpreter shared by the tests below."""
    results = str(tmp_path_factory.mktemp("free") / "results")
    done = _python(MODERN_RUN + BLOCKED_CALLS, results)
    assert done.returncode == 0, done.stderr[-3000:]
    run_line, blocked_line = done.stdout.strip().splitlines()[-2:]
    return json.loads(run_line) | {"blocked_calls": json.loads(blocked_line)}


def test_a_modern_run_loads_neither_reclist_nor_the_compatibility_layer(modern_run):
    assert modern_run["loaded"] == []
    assert len(modern_run["tests"]) == 2 and "HIT_RATE" in modern_run["tests"][0]
    assert modern_run["file"] == str(ROOT / "evaluation" / "__init__.py")


def test_the_harness_runs_with_the_compatibility_layer_deleted(tmp_path, modern_run):
    # from a copy with the folder and the old module paths really deleted, and reclist
    # blocked as if it were not installed: the same numbers, bit for bit
    copy = _copy_without_the_layer(tmp_path / "copy")
    deleted = _last_json(_python(BLOCK + MODERN_RUN, str(tmp_path / "deleted"), cwd=copy))
    assert deleted["file"] == str(copy / "evaluation" / "__init__.py")  # the copy ran
    assert deleted["tests"] == modern_run["tests"]
    assert deleted["aggregate"] == modern_run["aggregate"]
    assert deleted["loaded"] == []


#: With the layer blocked, in this tree: what old ChallengeDataset arguments become (converted
#: by evaluation.legacy), an entry point of the layer, and the CLI's help. Run after
#: ``MODERN_RUN`` in its interpreter, which loaded nothing of the layer: the block holds before
#: anything could.
BLOCKED_CALLS = BLOCK + textwrap.dedent("""
    import contextlib, io, json, sys, warnings
    from evaluation import ChallengeDataset

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = ChallengeDataset(scale="tiny", num_folds=1, fold_cache=False,
                               sample_users_perc=0.5, min_user_item_freq=5)
    modern = ChallengeDataset(scale="tiny", num_folds=1, fold_cache=False, frac=0.5,
                              k_core=5)
    same = old.get_test_set(0).equals(modern.get_test_set(0))
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "reclist"
                    or m.startswith("evaluation.compat"))
    converted = {"same": same, "params": old.fold_params == modern.fold_params,
                 "warned": sorted({w.category.__name__ for w in caught}),
                 "texts": " ".join(str(w.message) for w in caught), "loaded": loaded}
    try:
        from evaluation.EvalRSRunner import EvalRSRunner  # an entry point of the layer
        blocked = "not blocked"
    except ImportError as exc:
        blocked = f"entry point blocked: {exc}"
    from evaluation.cli import main
    with contextlib.redirect_stdout(io.StringIO()) as help_text:
        try:
            main(["--help"])
        except SystemExit as exc:
            print("help exit", exc.code)
    print(json.dumps({"converted": converted, "blocked": blocked,
                      "help": help_text.getvalue()}))
    """)


@pytest.fixture(scope="module")
def blocked_calls(modern_run) -> dict:
    """What ``BLOCKED_CALLS`` found, after the modern run in its interpreter."""
    return modern_run["blocked_calls"]


def test_old_arguments_of_a_modern_class_are_converted_without_the_layer(blocked_calls):
    # ChallengeDataset's 2023 arguments and attributes enter a modern class: converted there,
    # by evaluation.legacy, with the compatibility layer and reclist blocked
    found = blocked_calls["converted"]
    assert found["same"] and found["params"]
    assert "DeprecationWarning" in found["warned"]
    assert "sample_users_perc" in found["texts"] and "min_user_item_freq" in found["texts"]
    assert found["loaded"] == []


def test_the_block_is_real_and_the_cli_help_works_without_the_layer(blocked_calls):
    assert blocked_calls["blocked"].startswith(
        "entry point blocked: evaluation.compat is blocked")
    assert "help exit 0" in blocked_calls["help"]
    assert "python -m evaluation" in blocked_calls["help"]  # the usage line: every command
