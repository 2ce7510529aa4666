"""The package as its users get it: the wheel built from this tree, installed with the
dependencies it declares into an empty virtual environment (plus reclist without its own, as
documented), imports from there, answers ``evalrs --help`` and scores the tiny synthetic dataset
exactly as the source tree does.

uv builds and installs, from its cache when it can (``--offline`` first, so a machine that has
run ``make install`` needs no network), with the versions of this environment as constraints:
the same wheels, hence the same numbers. One test, so that the build happens once per run
(pytest-xdist spreads a module's tests over processes).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests._script_runner import run_script

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "evalrs-harness"
#: What a build reads besides the package (pyproject.toml names README.md and LICENSE; setup.py
#: installs the start-up .pth file, which imports the module _evalrs_startup).
BUILD_FILES = ("pyproject.toml", "README.md", "LICENSE", "setup.py", "MANIFEST.in",
               "_evalrs_startup.py", "evalrs_harness_old_modules.pth")
#: What the wheel installs beside the package: the start-up hook of the 2022 module names.
STARTUP_FILES = {"_evalrs_startup.py", "evalrs_harness_old_modules.pth"}
#: The run scored by both sides: small enough for seconds, every test and the summary line.
SCORE_ARGS = ("--scale", "tiny", "--limit", "100", "--num-folds", "2", "--quiet")
#: The seconds each uv or Python step may take.
STEP_TIMEOUT = 300


def find_uv() -> str | None:
    """uv: the ``uv`` package's binary (the reproduce extra), on PATH, or the Makefile's own."""
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found:
        return found
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evalrs" / "uv"
    return str(home / "bin" / "uv") if (home / "bin" / "uv").is_file() else None


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT)
    assert done.returncode == 0, (f"`{' '.join(command)}` exited with {done.returncode}:\n"
                                  f"{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def run_uv(uv: str, arguments: list[str], *, cwd: Path) -> None:
    """``uv ARGUMENTS`` from uv's cache alone, else (a cold cache) from the package index."""
    offline = subprocess.run([uv, *arguments, "--offline"], cwd=cwd, capture_output=True,
                             text=True, timeout=STEP_TIMEOUT)
    if offline.returncode != 0:
        run([uv, *arguments], cwd=cwd)


def constraints(path: Path) -> Path:
    """This environment's versions as constraints (``name==version``; the harness left out)."""
    pins = sorted({f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()
                   if d.metadata["Name"] and d.metadata["Name"].lower() != DISTRIBUTION})
    path.write_text("".join(f"{pin}\n" for pin in pins))
    return path


def isolated_env() -> dict[str, str]:
    """This process's environment without what would make the venv's Python see this tree or
    this environment; bytecode allowed (the venv is temporary: the second command reuses what
    the first compiled)."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {"NO_COLOR": "1"}


#: What the venv's interpreter finds, in one fresh process: first what start-up loaded and a
#: 2022 model module's first line (before anything imported the harness), then where the harness
#: is, its version and the dependencies it tells a reproduction.
VENV_PROBE = """
import json, sys
early = sorted(m for m in sys.modules if m.split(".")[0] in
               {"evaluation", "numpy", "pandas", "reclist"})
from reclist.abstractions import RecModel
from reclist.utils.train_w2v import train_embeddings
import evaluation
from evaluation.reproduce import _env
print(json.dumps({"early": early, "model_module": RecModel.__module__,
                  "file": evaluation.__file__, "version": evaluation.__version__,
                  "prefix": sys.prefix,
                  "declared": list(_env.harness_requirements(_env.HARNESS_ROOT))}))
"""


def score_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("LEADERBOARD SCORE:")]
    assert len(lines) == 1, f"no single LEADERBOARD SCORE line in:\n{output[-3000:]}"
    return lines[0]


def participant_copy(folder: Path) -> Path:
    """submission.py and the template model, as in a participant's clone."""
    folder.mkdir()
    shutil.copy(REPO / "submission.py", folder / "submission.py")
    shutil.copytree(REPO / "submission", folder / "submission",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.slow
def test_the_wheel_installs_imports_and_scores_like_the_source_tree(tmp_path):
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed (`make sandbox` installs it: the reproduce extra)")
    started = time.perf_counter()
    source = tmp_path / "source"  # a copy: setuptools writes build/ and *.egg-info beside it
    shutil.copytree(REPO / "evaluation", source / "evaluation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in BUILD_FILES:
        shutil.copy(REPO / name, source / name)
    # the reference run starts now, from the source tree, while the wheel is built: a process
    # of its own, forked from one that imported the third-party libraries once (what is
    # compared is the harness's numbers, not how an interpreter starts)
    reference_copy = participant_copy(tmp_path / "ref")
    with ThreadPoolExecutor(max_workers=1) as background:
        reference = background.submit(
            run_script, reference_copy / "submission.py", list(SCORE_ARGS), cwd=reference_copy,
            logs=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
            timeout=STEP_TIMEOUT)
        wheel, venv, project = _build_and_install(uv, source, tmp_path)
        installed = time.perf_counter()
        expected = reference.result()
    assert expected.exit_status == 0, (expected.stdout + expected.stderr)[-3000:]

    python = venv / "bin" / "python"
    env = isolated_env()
    found = json.loads(run([str(python), "-c", VENV_PROBE], cwd=tmp_path,
                           env={**env, "PYTHONWARNINGS": "ignore"}).splitlines()[-1])
    # a fresh interpreter (a spawn-started worker) imports a 2022 model module's first line
    # before anything imported the harness; start-up itself loads neither it nor NumPy
    assert (found["early"], found["model_module"]) == ([], "evaluation.model"), found
    # the harness imported is the venv's, of this tree's version
    assert Path(found["file"]).is_relative_to(venv) and Path(found["prefix"]) == venv, found
    assert found["version"] == _tree_version()
    # a harness installed from a wheel (no source tree) tells a reproduction its dependencies
    # from its metadata
    assert {str(Requirement(r)) for r in found["declared"]} == \
        {str(Requirement(r)) for r in project["dependencies"]}

    help_text = run([str(venv / "bin" / "evalrs"), "--help"], cwd=tmp_path, env=env)
    assert "COMMAND" in help_text and "reproduce" in help_text
    scored = run([str(python), "submission.py", *SCORE_ARGS],
                 cwd=participant_copy(tmp_path / "run"), env=env)
    assert score_line(scored) == score_line(expected.stdout)
    print(f"wheel {wheel.stat().st_size / 1e6:.2f} MB; built and installed in "
          f"{installed - started:.1f} s; all in {time.perf_counter() - started:.1f} s")


def _build_and_install(uv: str, source: Path, tmp_path: Path) -> tuple[Path, Path, dict]:
    """Build the wheel of ``source``, check what it holds and install it into an empty venv:
    the wheel, the venv and pyproject's ``[project]`` table."""
    run_uv(uv, ["build", "--wheel", "--quiet", "--out-dir", str(tmp_path / "dist"),
                str(source)], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("*.whl")

    # the wheel: every file of the package (its data included), the license, the metadata
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    shipped = {path.relative_to(source).as_posix()
               for path in (source / "evaluation").rglob("*") if path.is_file()}
    assert shipped - names == set(), "package files missing from the wheel (package-data?)"
    assert {n.split("/")[0] for n in names} == {"evaluation", wheel.name.split("-py3")[0]
                                               + ".dist-info", *STARTUP_FILES}
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requires = [line.split(": ", 1)[1] for line in metadata.decode().splitlines()
                if line.startswith("Requires-Dist: ")]
    runtime = {str(Requirement(r)) for r in requires if "extra ==" not in r}
    assert runtime == {str(Requirement(r)) for r in project["dependencies"]}

    # an empty venv: the wheel and what it declares, then reclist without its dependencies
    venv = tmp_path / "venv"
    run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    install = ["pip", "install", "--quiet", "--python", str(python)]
    run_uv(uv, [*install, "-c", str(constraints(tmp_path / "constraints.txt")), str(wheel)],
           cwd=tmp_path)
    run_uv(uv, [*install, "--no-deps", "-r", str(REPO / "requirements-reclist.txt")],
           cwd=tmp_path)
    return wheel, venv, project


def _tree_version() -> str:
    text = (REPO / "evaluation" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found is not None, "evaluation/_version.py names no __version__"
    return found.group(1)
