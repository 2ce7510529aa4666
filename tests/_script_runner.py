"""Run a script as ``python SCRIPT ARGS`` runs it, in a fresh process, without paying for the
heavy third-party imports each time.

A benchmark's smoke run costs little beyond its interpreter's start and imports (numpy,
pandas, pyarrow, SciPy, the server's libraries: about a second of CPU per script). The scripts
are therefore run from one server process per test session (``multiprocessing``'s
``forkserver``, started on first use) that imported those libraries once: each script runs in a
child forked from it, as ``__main__`` with its own ``sys.argv``, working folder, environment
and ``sys.path`` (the script's folder first, then the environment's ``PYTHONPATH``, then what
a plain ``python`` has: the repository is not on it, so a script that does not put it there
itself fails here as it would for a user), and exits as the interpreter exits (non-daemon
threads joined, ``atexit`` run, the exit status of ``sys.exit``, 1 on an uncaught exception).
The server also imported the project's modules that ``submission.py`` imports (about half a
second of CPU more per run), from the repository's root: a child keeps them only when its
own path finds the project there too, and otherwise forgets them, so that the script imports
the project through its own path (another checkout's copy, or none), as a plain ``python``
would. The project reads nothing of its environment or working folder at import, so a module
imported by the server is the module the child would import.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import multiprocessing
import multiprocessing.forkserver
import os
import runpy
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The libraries imported once by the server process (those missing are left out by it).
PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "scipy.sparse",
           "tqdm.auto", "pydantic", "sqlalchemy", "httpx", "fastapi", "uvicorn",
           "joblib", "threadpoolctl", "dotenv", "rich", "psutil")

#: The project's package, and its modules that ``submission.py`` imports, also imported once.
PROJECT = "evaluation"
PROJECT_PRELOAD = (PROJECT, "evaluation.cli", "evaluation.contract", "evaluation.runner")

#: The repository's root: the server process imports the project from there.
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ScriptRun:
    """How a script's run ended: its exit status (None: killed at the time limit) and output."""

    exit_status: int | None
    stdout: str
    stderr: str


@lru_cache(maxsize=1)
def _plain_sys_path(executable: str) -> tuple[str, ...]:
    """``sys.path`` of a plain ``python`` here, less its first entry (the script's folder) and
    this process's ``PYTHONPATH`` (a run puts its own environment's there)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                           capture_output=True, text=True, check=True, env=env)
    return tuple(json.loads(probe.stdout)[1:])


@lru_cache(maxsize=1)
def _context() -> multiprocessing.context.ForkServerContext:
    """The ``forkserver`` context, its server started (once) with the libraries imported."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *PROJECT_PRELOAD])
    # ``python -c`` (the server) puts its working folder first on sys.path: started in the
    # repository's root, it imports the project from there, whatever folder a test is in
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.chdir(here)
    return context


def _found_at(name: str) -> str | None:
    """The file a fresh ``import name`` would load, through ``sys.meta_path`` and the
    current ``sys.path`` (None: not found)."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = None if find_spec is None else find_spec(name, None)
        if spec is not None:
            return spec.origin
    return None


def _forget_project_found_elsewhere() -> None:
    """Forget the project's preloaded modules unless ``import evaluation`` on this process's
    path finds the same file: the script then imports the project as a plain ``python``
    does (another copy, or an ImportError)."""
    loaded = sys.modules.get(PROJECT)
    if loaded is None or _found_at(PROJECT) == getattr(loaded, "__file__", None):
        return
    for name in [n for n in sys.modules if n == PROJECT or n.startswith(PROJECT + ".")]:
        del sys.modules[name]


def _child(script: str, argv: list[str], cwd: str, env: dict[str, str], path: list[str],
           stdout: str, stderr: str) -> None:
    """The forked process: become ``python script *argv`` (see the module's docstring)."""
    # what the server imported lives as long as the process: no collection need walk it (a
    # walk would also copy every page it shares with the server)
    gc.freeze()
    # the script's children inherit these too; nothing to read on the standard input
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        target = os.open(name, flags, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [script, *argv]
    # as python puts them: the script's folder, then PYTHONPATH's folders, then the rest
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [str(Path(script).parent), *extra, *path]
    importlib.invalidate_caches()
    _forget_project_found_elsewhere()
    code: object = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    finally:
        # as the interpreter ends: wait for non-daemon threads, then the atexit handlers
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    sys.exit(code)  # the exit status, as multiprocessing reads SystemExit


def start_script(script: Path, argv: list[str], *, cwd: Path, logs: Path,
                 env: Mapping[str, str] | None = None) -> multiprocessing.process.BaseProcess:
    """Start ``python script *argv`` in ``cwd`` with environment ``env`` (default: this
    process's; see the module's docstring), its output written to folder ``logs``
    (``SCRIPT.stdout``, ``SCRIPT.stderr``); the process, to wait for or to kill."""
    process = _context().Process(
        target=_child, name=script.name,
        args=(str(script), list(argv), str(cwd), dict(os.environ if env is None else env),
              list(_plain_sys_path(sys.executable)), str(logs / f"{script.stem}.stdout"),
              str(logs / f"{script.stem}.stderr")))
    process.start()
    return process


def run_script(script: Path, argv: list[str], *, cwd: Path, logs: Path, timeout: float,
               env: Mapping[str, str] | None = None) -> ScriptRun:
    """Run ``python script *argv`` as :func:`start_script` starts it; killed after
    ``timeout`` seconds."""
    process = start_script(script, argv, cwd=cwd, logs=logs, env=env)
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        status = None
    else:
        status = process.exitcode
    out, err = logs / f"{script.stem}.stdout", logs / f"{script.stem}.stderr"
    return ScriptRun(status, out.read_text(errors="replace"), err.read_text(errors="replace"))
