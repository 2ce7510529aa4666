"""Every benchmark runs: each script of ``benchmarks/`` (not its ``_name.py`` helpers), run as
``python SCRIPT --smoke`` runs it (its smallest mode), in a process of its own, must exit 0.

A smoke run measures nothing; it proves that the script, its references and its checks still
work with today's harness (a benchmark that nobody runs breaks silently). Each script is its
own test, so that pytest-xdist spreads them. The process is forked from one that imported the
heavy third-party libraries once (``tests/_script_runner.py``): the script's own code, the
project's modules included, runs afresh as ``__main__``. A benchmark that needs an optional
part of the environment (the server extra, Ray, the sandbox, git and make) is skipped, with
the reason, only where that part is absent; the parts a benchmark leaves out by itself when
missing (PostgreSQL, faiss, implicit) are left to it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from evaluation.reproduce import sandbox_problem
from tests._script_runner import run_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                 if not p.name.startswith("_"))
#: The modules a script needs beyond the harness's requirements, and how to get them.
NEEDS_MODULES = {
    "bench_board_stats.py": (("fastapi", "sqlalchemy"), "requirements-server.txt"),
    "bench_certificate.py": (("fastapi", "sqlalchemy"), "requirements-server.txt"),
    "bench_board_stream.py": (("fastapi", "httpx", "sqlalchemy", "uvicorn"),
                              "requirements-server-test.txt"),
    "bench_competition.py": (("fastapi", "httpx", "sqlalchemy", "uvicorn"),
                             "requirements-server-test.txt"),
    "bench_ray.py": (("ray",), "requirements-ray.txt"),
    "bench_scoring_job.py": (("fastapi", "httpx", "sqlalchemy", "uvicorn"),
                             "requirements-server-test.txt"),
    "bench_server.py": (("fastapi", "httpx", "sqlalchemy", "uvicorn"),
                        "requirements-server-test.txt"),
    "bench_user_values.py": (("fastapi", "sqlalchemy"), "requirements-server.txt"),
}
#: The smoke runs that take more than a few seconds (several fresh processes, each a whole
#: evaluation or a server): left out by ``-m "not slow"``.
SLOW = {"bench_alternatives.py", "bench_baselines.py", "bench_board_stream.py",
        "bench_competition.py", "bench_harness.py", "bench_ray.py", "bench_scoring_job.py",
        "bench_server.py"}
#: Seconds a smoke run may take before it counts as hung (a loaded 2-core machine included).
TIMEOUT_S = 600
#: The BLAS libraries' threads in the processes a smoke run starts (its servers, workers and
#: fresh measuring processes): one. Two threads that wait for each other on a busy 2-core
#: machine spin: a small matrix product can cost ten times one thread's CPU, and a smoke run
#: measures no speed.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _skip_reason(script: str) -> str | None:
    """Why ``script`` cannot run here, or None."""
    modules, requirements = NEEDS_MODULES.get(script, ((), ""))
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return f"{script} needs {', '.join(missing)} (pip install -r {requirements})"
    if script in ("bench_alternatives.py", "bench_env.py"):
        problem = sandbox_problem()
        if problem is not None:
            return f"{script} measures the reproduction's sandbox, unavailable here: {problem}"
    if script == "bench_setup.py":
        tools = [t for t in ("git", "make") if shutil.which(t) is None]
        if tools:
            return f"{script} clones the repository and runs make: {', '.join(tools)} missing"
        if not (ROOT / ".git").exists():
            return f"{script} clones the repository: {ROOT} is not a git checkout"
    return None


def _param(script: str):
    return pytest.param(script, marks=[pytest.mark.slow] if script in SLOW else [], id=script)


def test_every_benchmark_script_is_run_here():
    # the scripts come from the folder itself: a new benchmark is smoke-tested without a word
    assert {"bench_harness.py", "bench_twin.py", "synthetic_realism.py"} <= set(SCRIPTS)
    assert set(NEEDS_MODULES) | SLOW <= set(SCRIPTS), "a listed benchmark no longer exists"


def test_a_script_that_fails_is_seen_failing(tmp_path):
    # the runner must pass on what the script did: its exit status, its output, its argv and
    # the folder it runs in (a runner that always said 0 would let every benchmark break)
    script = tmp_path / "bench_broken.py"
    script.write_text("import os, sys\n"
                      "print('argv', sys.argv[1:], 'path0', sys.path[0], 'cwd', os.getcwd())\n"
                      "if sys.argv[1] == 'raise':\n"
                      "    raise RuntimeError('the benchmark broke')\n"
                      "sys.exit(int(sys.argv[1]))\n")
    for argv, status in ((["3"], 3), (["raise"], 1), (["0"], 0)):
        done = run_script(script, argv, cwd=tmp_path, logs=tmp_path, timeout=TIMEOUT_S)
        assert done.exit_status == status, done
        assert done.stdout.strip() == f"argv {argv} path0 {tmp_path} cwd {tmp_path}", done
    assert "RuntimeError: the benchmark broke" in run_script(
        script, ["raise"], cwd=tmp_path, logs=tmp_path, timeout=TIMEOUT_S).stderr


@pytest.mark.parametrize("script", [_param(s) for s in SCRIPTS])
def test_the_benchmark_runs_in_its_smoke_mode(script, tmp_path):
    reason = _skip_reason(script)
    if reason is not None:
        pytest.skip(reason)
    # the folder the user runs it from is any folder; the harness's caches are the session's
    # (EVALRS_CACHE_DIR, set for every test), so the tiny dataset is generated once
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = run_script(ROOT / "benchmarks" / script, ["--smoke"], cwd=cwd, logs=tmp_path,
                      timeout=TIMEOUT_S, env={**os.environ, **ONE_BLAS_THREAD})
    ended = (f"was killed after {TIMEOUT_S} s" if done.exit_status is None
             else f"exited {done.exit_status}")
    assert done.exit_status == 0, (f"benchmarks/{script} --smoke {ended}:\n"
                                   f"{(done.stdout + done.stderr)[-4000:]}")
