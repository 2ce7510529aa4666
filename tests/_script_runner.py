"""Run a script as ``python SCRIPT ARGS`` runs it, in a fresh process, without paying for the
heavy third-party imports each time.

A benchmark's smoke run costs little beyond its interpreter's start and imports (numpy,
pandas, pyarrow, SciPy, the server's libraries: about a second of CPU per script). The scripts
are therefore run from one server process per test session (``multiprocessing``'s
``forkserver``, started on first use: ``benchmarks/_preloaded.py``) that imported those
libraries once: each script runs in a child forked from it as a fresh ``python`` runs it, with
the ``sys.path`` of one (the script's folder first, then the environment's ``PYTHONPATH``, then
what a plain ``python`` has: the repository is not on it, so a script that does not put it
there itself fails here as it would for a user).
The server also imported the project's modules that ``submission.py`` imports (about half a
second of CPU more per run), from the repository's root: a child keeps them only when its
own path finds the project there too, and otherwise forgets them, so that the script imports
the project through its own path (another checkout's copy, or none), as a plain ``python``
would. The project reads nothing of its environment or working folder at import, so a module
imported by the server is the module the child would import.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks._preloaded import Child, PreloadedStarter

#: The libraries imported once by the server process (those missing are left out by it).
PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "scipy.sparse",
           "tqdm.auto", "pydantic", "sqlalchemy", "httpx", "fastapi", "uvicorn",
           "joblib", "threadpoolctl", "dotenv", "rich", "psutil")

#: The project's package, and its modules that ``submission.py`` imports, also imported once.
PROJECT = "evaluation"
PROJECT_PRELOAD = (PROJECT, "evaluation.cli", "evaluation.contract", "evaluation.runner")

#: The repository's root: the server process imports the project from there.
ROOT = Path(__file__).resolve().parents[1]

#: Starts every script of the test session.
STARTER = PreloadedStarter([*PRELOAD, *PROJECT_PRELOAD], method="forkserver", root=ROOT,
                           fresh_path=True, project=PROJECT)


@dataclass(frozen=True)
class ScriptRun:
    """How a script's run ended: its exit status (None: killed at the time limit) and output."""

    exit_status: int | None
    stdout: str
    stderr: str


def start_script(script: Path, argv: list[str], *, cwd: Path, logs: Path,
                 env: Mapping[str, str] | None = None) -> Child:
    """Start ``python script *argv`` in ``cwd`` with environment ``env`` (default: this
    process's; see the module's docstring), its output written to folder ``logs``
    (``SCRIPT.stdout``, ``SCRIPT.stderr``); the process, to wait for or to kill."""
    out, err = _logs(script, logs)
    for path in (out, err):
        path.write_bytes(b"")
    return STARTER.start([str(script), *argv], cwd=cwd, stdout=out, stderr=err, env=env)


def run_script(script: Path, argv: list[str], *, cwd: Path, logs: Path, timeout: float,
               env: Mapping[str, str] | None = None) -> ScriptRun:
    """Run ``python script *argv`` as :func:`start_script` starts it; killed after
    ``timeout`` seconds."""
    try:
        done = STARTER.run([str(script), *argv], cwd=cwd, logs=logs / script.stem,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        out, err = _logs(script, logs)
        return ScriptRun(None, out.read_text(errors="replace"), err.read_text(errors="replace"))
    return ScriptRun(done.returncode, done.stdout, done.stderr)


def _logs(script: Path, logs: Path) -> tuple[Path, Path]:
    """A script's stdout and stderr files in folder ``logs``."""
    return logs / f"{script.stem}.stdout", logs / f"{script.stem}.stderr"
