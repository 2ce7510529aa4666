"""The 2022/2023 compatibility layer (``evaluation.compat``, and reclist for RecLists) stays
out of a modern run: a run with the challenge's own tests loads neither, and the harness works
with both missing (as if ``evaluation/compat/`` and its entry points were deleted)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
                or m == "evaluation.challenge._reclist")
print(json.dumps({"tests": [f["tests"] for f in result.folds],
                  "aggregate": result.aggregate, "loaded": loaded}))
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


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def _last_json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_modern_run_loads_neither_reclist_nor_the_compatibility_layer(tmp_path):
    found = _last_json(_python(MODERN_RUN, str(tmp_path / "results")))
    assert found["loaded"] == []
    assert len(found["tests"]) == 2 and "HIT_RATE" in found["tests"][0]


def test_the_harness_runs_with_the_compatibility_layer_deleted(tmp_path):
    free = _last_json(_python(MODERN_RUN, str(tmp_path / "free")))
    blocked = _last_json(_python(BLOCK + MODERN_RUN, str(tmp_path / "blocked")))
    # the same numbers, bit for bit, with the layer and reclist gone
    assert blocked["tests"] == free["tests"]
    assert blocked["aggregate"] == free["aggregate"]
    assert blocked["loaded"] == []


def test_the_block_is_real_and_the_cli_help_works_without_the_layer():
    code = BLOCK + textwrap.dedent("""
        import evaluation
        try:
            from evaluation.EvalRSRunner import EvalRSRunner  # an entry point of the layer
        except ImportError as exc:
            print("entry point blocked:", exc)
        from evaluation.cli import main
        try:
            main(["--help"])
        except SystemExit as exc:
            print("help exit", exc.code)
        """)
    done = _python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "entry point blocked: evaluation.compat is blocked" in done.stdout
    assert "help exit 0" in done.stdout
    assert "python -m evaluation" in done.stdout  # the usage line: every command registered
