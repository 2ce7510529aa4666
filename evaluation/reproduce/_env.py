"""The isolated environment a checkout is evaluated in: a virtual environment with the
participant's ``requirements.txt`` and this harness at the organizer's version.

Building one takes a minute or more (pip resolves and installs NumPy, pandas, gensim, ...), so
environments can be kept in a cache folder under a key: the sha256 of the participant's
requirements, the harness's version and source, and the Python version. Two checkouts with the
same requirements share an environment; a changed requirement or harness makes a new one. An
environment is built in a temporary folder and moved under its key only when complete, so an
interrupted build is never reused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from evaluation._version import __version__
from evaluation.errors import ConfigError

#: The participant's requirements file, at the top of the checkout.
REQUIREMENTS_FILE = "requirements.txt"
#: Written last into a finished environment.
COMPLETE_MARKER = ".evalrs-env-complete"
#: The source tree of the harness this module belongs to (a checkout of its repository).
HARNESS_ROOT = Path(__file__).resolve().parents[2]
#: What of the harness's tree an installation needs.
_HARNESS_FILES = ("pyproject.toml", "README.md")
#: Seconds one pip command may take.
PIP_TIMEOUT = 1800


def env_python(env_dir: str | os.PathLike) -> Path:
    """The Python interpreter of the virtual environment ``env_dir``."""
    return Path(env_dir) / "bin" / "python"


def harness_digest(root: Path = HARNESS_ROOT) -> str:
    """sha256 of the harness's package files (the code an environment installs)."""
    h = hashlib.sha256()
    package = root / "evaluation"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    for name in ("requirements.txt", "requirements-reclist.txt", *_HARNESS_FILES):
        if (root / name).is_file():
            h.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return h.hexdigest()


def env_key(requirements: bytes, harness_version: str, python_version: str,
            harness_source: str = "") -> str:
    """The cache key of an environment: sha256 over what decides its contents."""
    h = hashlib.sha256()
    for part in (requirements, harness_version.encode(), python_version.encode(),
                 harness_source.encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def checkout_requirements(checkout: Path) -> bytes:
    """The bytes of the checkout's requirements file (empty when it has none)."""
    path = checkout / REQUIREMENTS_FILE
    return path.read_bytes() if path.is_file() else b""


def prepare_env(checkout: Path, cache_dir: Path | None, *, log: Callable[[str], None],
                log_path: Path, harness_root: Path = HARNESS_ROOT,
                system_site_packages: bool = False) -> Path:
    """The folder of an environment for ``checkout``, built now or taken from ``cache_dir``.

    With ``cache_dir`` None the environment is built in a new temporary folder, which the
    caller removes. pip's output goes to ``log_path``.

    ``system_site_packages`` lets the environment also see the packages of the interpreter
    running this function (a ``.pth`` file), so that nothing needs downloading: for tests
    and for machines without an index, never for an official reproduction.

    Raises
    ------
    ConfigError
        When the checkout's requirements (or the harness) cannot be installed; the message
        names the log.
    """
    python_version = ".".join(map(str, sys.version_info[:3]))
    key = env_key(checkout_requirements(checkout), __version__, python_version,
                  harness_digest(harness_root) + ("+site" if system_site_packages else ""))
    if cache_dir is not None:
        target = cache_dir / key
        if (target / COMPLETE_MARKER).is_file():
            log(f"environment: cached {target}")
            return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=cache_dir))
    else:
        target = building = Path(tempfile.mkdtemp(prefix="evalrs-env-"))
    log(f"environment: building in {building} (pip's output goes to {log_path})")
    try:
        _build(building, checkout, harness_root, log_path, system_site_packages)
    except BaseException:
        if building != target:
            shutil.rmtree(building, ignore_errors=True)
        raise
    (building / COMPLETE_MARKER).write_text(key + "\n")
    if building != target:
        try:
            os.rename(building, target)
        except OSError:  # another reproduction finished the same environment first
            shutil.rmtree(building, ignore_errors=True)
    return target


def _build(env: Path, checkout: Path, harness_root: Path, log_path: Path,
           system_site_packages: bool) -> None:
    """Create the virtual environment ``env`` and install into it."""
    _step([sys.executable, "-m", "venv", str(env)], log_path, "creating the virtual environment")
    python = str(env_python(env))
    if system_site_packages:
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], capture_output=True, text=True, check=True)
        outer = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
        Path(site.stdout.strip(), "evalrs-outer-site.pth").write_text("\n".join(outer) + "\n")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    requirements = []
    if (checkout / REQUIREMENTS_FILE).is_file():
        requirements += ["-r", str(checkout / REQUIREMENTS_FILE)]
    if (harness_root / "requirements.txt").is_file():
        requirements += ["-r", str(harness_root / "requirements.txt")]
    if requirements:
        # one resolution for both lists: a participant's pin that conflicts with the
        # harness's needs fails here, with pip's explanation in the log
        _step(pip + requirements, log_path, "installing the participant's and the harness's "
                                            "requirements")
    if (harness_root / "requirements-reclist.txt").is_file():
        _step(pip + ["--no-deps", "-r", str(harness_root / "requirements-reclist.txt")],
              log_path, "installing reclist")
    _step(pip + ["--no-deps", _harness_source(harness_root, env)], log_path,
          "installing the harness")


def _harness_source(harness_root: Path, env: Path) -> str:
    """What pip installs the harness from: a copy of its tree (pip writes build files into
    the folder it installs), or ``evalrs-harness==VERSION`` from the index when this harness
    is not a source tree."""
    if not (harness_root / "pyproject.toml").is_file():
        return f"evalrs-harness=={__version__}"
    copy = env / "harness-source"
    shutil.copytree(harness_root / "evaluation", copy / "evaluation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in _HARNESS_FILES:
        if (harness_root / name).is_file():
            shutil.copy2(harness_root / name, copy / name)
    return str(copy)


def _step(command: list[str], log_path: Path, what: str) -> None:
    """Run one step of the build; ``ConfigError`` naming the step and the log when it fails."""
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        try:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=PIP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"environment: {what} took more than {PIP_TIMEOUT} s; see "
                              f"{log_path}.") from None
    if done.returncode != 0:
        raise ConfigError(f"environment: {what} failed (exit status {done.returncode}); pip's "
                          f"output is in {log_path}. Fix the checkout's {REQUIREMENTS_FILE} or "
                          f"pass a prepared environment with --env PATH.")
