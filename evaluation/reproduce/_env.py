"""The isolated environment a checkout is evaluated in: a virtual environment with the
participant's ``requirements.txt`` and this harness at the organizer's version.

The participant's requirements are read as package specifiers only (``_requirements``: no index
option, URL, path or ``-e`` gets through) and written anew, with the harness's own, into the
file the installer reads. With ``uv`` (the ``uv`` package's binary, or ``uv`` on PATH) they are
first resolved to a pinned set (``uv pip compile``, wheels only: no build step, hence no
participant code, runs at install time), from the organizer's index alone (``index_url``; by
default uv's own, PyPI); the cache key is the sha256 of that pinned set, the harness's version
and source and the Python version, so two checkouts that resolve alike share an environment.
Without uv, pip installs the same sanitised list (slower; keyed by the list). An environment is
built in a temporary folder, made read-only and moved under its key only when complete, so an
interrupted build is never reused and no run can change it (the sandbox binds it read-only).

A package with no wheel is refused, naming it, unless the organizer allows sdists
(``allow_sdists``, ``reproduce --allow-sdists``): then the resolution reads their metadata
without building, this process only downloads, the sdists are built into wheels inside the
sandbox, offline, and those wheels are installed here (``_sdists``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from packaging.requirements import Requirement

from evaluation._version import __version__
from evaluation.errors import ConfigError
from evaluation.reproduce import _sdists
from evaluation.reproduce._requirements import read_requirements

if sys.version_info >= (3, 11):
    import tomllib
else:  # a dependency of the harness on Python 3.10
    import tomli as tomllib

#: The participant's requirements file, at the top of the checkout.
REQUIREMENTS_FILE = "requirements.txt"
#: Written last into a finished environment.
COMPLETE_MARKER = ".evalrs-env-complete"
#: The source tree of the harness this module belongs to (a checkout of its repository).
HARNESS_ROOT = Path(__file__).resolve().parents[2]
#: What of the harness's tree an installation needs.
_HARNESS_FILES = ("pyproject.toml", "README.md", "LICENSE")
#: The harness's distribution (its name in pyproject.toml and on the package index).
HARNESS_DISTRIBUTION = "evalrs-harness"
#: reclist==2.1.0, installed without its dependencies (its 2023 pins do not import under NumPy 2).
RECLIST_FILE = "requirements-reclist.txt"
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
    for name in (RECLIST_FILE, *_HARNESS_FILES):
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
    """The checkout's requirements as the installer gets them: its specifiers (checked: see
    ``read_requirements``), one a line, then ``# constraints`` and the constraints."""
    path = checkout / REQUIREMENTS_FILE
    if not path.is_file():
        return b""
    found = read_requirements(path, checkout)
    text = "".join(f"{r}\n" for r in found.requirements)
    if found.constraints:
        text += "# constraints\n" + "".join(f"{c}\n" for c in found.constraints)
    return text.encode()


def harness_requirements(root: Path = HARNESS_ROOT) -> tuple[str, ...]:
    """The harness's runtime dependencies: ``[project] dependencies`` of ``root``'s
    ``pyproject.toml`` when ``root`` is a source tree, else the installed distribution's
    (``evalrs-harness`` installed from a wheel), extras left out."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        return tuple(project.get("dependencies", ()))
    try:
        declared = importlib.metadata.requires(HARNESS_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    runtime = []
    for line in declared:
        # an extra's requirement carries the marker `extra == "NAME"`; the runtime ones do not
        marker = Requirement(line).marker
        if marker is None or "extra" not in str(marker):
            runtime.append(line)
    return tuple(runtime)


def find_uv() -> str | None:
    """The ``uv`` binary: the ``uv`` package's, else ``uv`` on PATH (None when neither)."""
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _requested(checkout: Path, harness_root: Path, folder: Path) -> tuple[Path, Path | None]:
    """Write the requirements to install (the participant's specifiers and the harness's) and
    the constraints into ``folder``; their paths."""
    text = checkout_requirements(checkout).decode()
    participant, _, constraints = text.partition("# constraints\n")
    participant += "".join(f"{r}\n" for r in harness_requirements(harness_root))
    requested = folder / "requested.in"
    requested.write_text(participant)
    if not constraints:
        return requested, None
    (folder / "constraints.txt").write_text(constraints)
    return requested, folder / "constraints.txt"


def _index_args(index_url: str | None) -> list[str]:
    return [] if index_url is None else ["--index-url", index_url]


def _uv() -> str:
    uv = find_uv()
    if uv is None:
        raise ConfigError("uv is not installed: `pip install uv` (or put uv on PATH).")
    return uv


def resolve(checkout: Path, harness_root: Path, folder: Path, log_path: Path, *,
            index_url: str | None = None) -> bytes:
    """The pinned set of the checkout's and the harness's requirements (``uv pip compile``,
    wheels only, from ``index_url``), written to ``folder / "pinned.txt"``.

    Raises
    ------
    ConfigError
        When the resolution fails; naming the package and ``--allow-sdists`` when one has no
        wheel, only an sdist.
    """
    uv = _uv()
    requested, constraints = _requested(checkout, harness_root, folder)
    pinned = folder / "pinned.txt"
    command = [uv, "pip", "compile", str(requested), "-o", str(pinned), "--quiet",
               "--no-header", "--no-annotate", "--only-binary", ":all:", "--python",
               sys.executable,
               *_index_args(index_url)]
    if constraints is not None:
        command += ["-c", str(constraints)]
    offset = log_path.stat().st_size if log_path.exists() else 0
    try:
        # resolution (uv, wheels only) is the step that fails on a requirement no index offers
        _step(command, log_path, "installing the participant's and the harness's requirements")
    except ConfigError:
        refused = _sdists.refusal(log_path, offset)
        if refused is not None:
            raise refused from None
        raise
    return pinned.read_bytes()


def _resolve_allowing_sdists(checkout: Path, harness_root: Path, folder: Path, log_path: Path,
                             index_url: str | None) -> tuple[bytes, _sdists.SdistPlan | None]:
    """What decides the environment when sdists are allowed: the wheels-only pinned set when
    there is one (then nothing changes), else the lock with its sdists and their plan."""
    try:
        return resolve(checkout, harness_root, folder, log_path, index_url=index_url), None
    except _sdists.SdistRefused:  # a package has no wheel: lock again, sdists allowed
        pass
    requested, constraints = _requested(checkout, harness_root, folder)
    plan = _sdists.lock(_uv(), sys.executable, requested, constraints, folder, log_path,
                        index_url, _step)
    return plan.pinned(), plan


def prepare_env(checkout: Path, cache_dir: Path | None, *, log: Callable[[str], None],
                log_path: Path, harness_root: Path = HARNESS_ROOT,
                system_site_packages: bool = False, index_url: str | None = None,
                installer: str = "auto", allow_sdists: bool = False) -> Path:
    """The folder of an environment for ``checkout``, built now or taken from ``cache_dir``.

    With ``cache_dir`` None the environment is built in a new temporary folder, which the
    caller removes. pip's output goes to ``log_path``.

    ``system_site_packages`` lets the environment also see the packages of the interpreter
    running this function (a ``.pth`` file), so that nothing needs downloading: for tests
    and for machines without an index, never for an official reproduction.

    ``index_url`` is the organizer's package index (default: uv's or pip's own); never one
    named by the participant. ``installer`` is "uv", "pip" or "auto" (uv when found).

    ``allow_sdists`` lets packages without a wheel in: their metadata is read without
    building, they are downloaded here and built inside the sandbox, offline (uv only). By
    default such a package is refused, naming it and ``--allow-sdists``.

    Raises
    ------
    ConfigError
        When the checkout's requirements (or the harness) cannot be installed; the message
        names the log.
    """
    python_version = ".".join(map(str, sys.version_info[:3]))
    use_uv = installer == "uv" or (installer == "auto" and find_uv() is not None)
    if allow_sdists and not use_uv:
        raise ConfigError(f"{_sdists.OPTION} needs uv (the build of sdists in the sandbox is "
                          f"uv's): `pip install uv`, or leave {_sdists.OPTION} out.")
    plan = None
    with tempfile.TemporaryDirectory(prefix="evalrs-resolve-") as folder:
        # uv: the pinned set decides the environment; pip: the sanitised list does
        if allow_sdists:
            wanted, plan = _resolve_allowing_sdists(checkout, harness_root, Path(folder),
                                                    log_path, index_url)
        elif use_uv:
            wanted = resolve(checkout, harness_root, Path(folder), log_path,
                             index_url=index_url)
        else:
            wanted = checkout_requirements(checkout)
    key = env_key(wanted, __version__, python_version,
                  harness_digest(harness_root) + ("+site" if system_site_packages else "")
                  + ("+uv" if use_uv else "") + ("+sdists" if plan is not None else ""))
    if cache_dir is not None:
        target = cache_dir / key
        if (target / COMPLETE_MARKER).is_file():
            log(f"environment: cached {target}")
            return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=cache_dir))
    else:
        target = building = Path(tempfile.mkdtemp(prefix="evalrs-env-"))
    log(f"environment: building in {building} ({'uv' if use_uv else 'pip'}'s output goes to "
        f"{log_path})")
    try:
        if plan is not None:
            _build_with_sdists(building, plan, harness_root, log_path, system_site_packages,
                               index_url)
        elif use_uv:
            _build_uv(building, wanted, harness_root, log_path, system_site_packages,
                      index_url)
        else:
            _build(building, checkout, harness_root, log_path, system_site_packages,
                   index_url)
    except BaseException:
        if building != target:
            remove_tree(building)
        raise
    (building / COMPLETE_MARKER).write_text(key + "\n")
    _read_only(building)
    if building != target:
        try:
            os.rename(building, target)
        except OSError:  # another reproduction finished the same environment first
            remove_tree(building)
    return target


def _read_only(env: Path) -> None:
    """Take the write permission off every file and folder of ``env``."""
    for folder, _dirs, files in os.walk(env):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode & ~0o222)
        os.chmod(folder, os.stat(folder).st_mode & ~0o222)


def remove_tree(path: Path) -> None:
    """Remove a (read-only) environment folder."""
    for folder, _, _ in os.walk(path):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _site_link(python: str) -> None:
    """Let the environment of ``python`` see this interpreter's packages (tests only)."""
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    outer = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    Path(site.stdout.strip(), "evalrs-outer-site.pth").write_text("\n".join(outer) + "\n")


def _build_uv(env: Path, pinned: bytes, harness_root: Path, log_path: Path,
              system_site_packages: bool, index_url: str | None) -> None:
    """Create ``env`` with uv and install the pinned set, reclist and the harness into it."""
    uv = find_uv()
    assert uv is not None
    _step([uv, "venv", "--quiet", "--python", sys.executable, str(env)], log_path,
          "creating the virtual environment")
    python = str(env_python(env))
    if system_site_packages:
        _site_link(python)
    (env / "pinned.txt").write_bytes(pinned)
    install = [uv, "pip", "install", "--quiet", "--python", python, *_index_args(index_url)]
    _step(install + ["--only-binary", ":all:", "--no-deps", "-r", str(env / "pinned.txt")],
          log_path, "installing the pinned requirements (wheels only)")
    if (harness_root / RECLIST_FILE).is_file():
        _step(install + ["--no-deps", "-r", str(harness_root / RECLIST_FILE)],
              log_path, "installing reclist")
    _step(install + ["--no-deps", _harness_source(harness_root, env)], log_path,
          "installing the harness")


def _build_with_sdists(env: Path, plan: _sdists.SdistPlan, harness_root: Path, log_path: Path,
                       system_site_packages: bool, index_url: str | None) -> None:
    """Create ``env``: the plan's wheels installed here, its sdists downloaded here, built into
    wheels inside the sandbox and installed here, then reclist and the harness."""
    uv = _uv()
    _step([uv, "venv", "--quiet", "--python", sys.executable, str(env)], log_path,
          "creating the virtual environment")
    python = str(env_python(env))
    if system_site_packages:
        _site_link(python)
    (env / "pinned.txt").write_bytes(plan.pinned())
    install = [uv, "pip", "install", "--quiet", "--python", python, *_index_args(index_url)]
    if plan.wheels:
        (env / "wheels.txt").write_text("".join(f"{pin}\n" for pin in plan.wheels))
        _step(install + ["--only-binary", ":all:", "--no-deps", "-r", str(env / "wheels.txt")],
              log_path, "installing the locked wheels")
    with tempfile.TemporaryDirectory(prefix="evalrs-sdists-") as work:
        links = Path(work) / "links"
        links.mkdir()
        sdists = _sdists.gather([file for _, file in plan.sdists], uv, sys.executable, links,
                                log_path, _index_args(index_url), _step)
        built = Path(work) / "built"
        built.mkdir()
        wheels = _sdists.build_wheels([pin for pin, _ in plan.sdists], links, sdists, uv,
                                      built, log_path)
        _step(install + ["--no-deps", *map(str, wheels)], log_path,
              "installing the wheels built from the sdists in the sandbox")
    if (harness_root / RECLIST_FILE).is_file():
        _step(install + ["--no-deps", "-r", str(harness_root / RECLIST_FILE)],
              log_path, "installing reclist")
    _step(install + ["--no-deps", _harness_source(harness_root, env)], log_path,
          "installing the harness")


def _build(env: Path, checkout: Path, harness_root: Path, log_path: Path,
           system_site_packages: bool, index_url: str | None = None) -> None:
    """Create the virtual environment ``env`` and install into it with pip."""
    _step([sys.executable, "-m", "venv", str(env)], log_path, "creating the virtual environment")
    python = str(env_python(env))
    if system_site_packages:
        _site_link(python)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
           *_index_args(index_url)]
    # the sanitised specifiers, never the participant's file (its options stay out)
    requested, constraints = _requested(checkout, harness_root, env)
    requirements = ["-r", str(requested)] + ([] if constraints is None else
                                             ["-c", str(constraints)])
    if requested.read_text().strip():
        # one resolution for both lists: a participant's pin that conflicts with the
        # harness's needs fails here, with pip's explanation in the log
        _step(pip + requirements, log_path, "installing the participant's and the harness's "
                                            "requirements")
    if (harness_root / RECLIST_FILE).is_file():
        _step(pip + ["--no-deps", "-r", str(harness_root / RECLIST_FILE)],
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


def _step(command: list[str], log_path: Path, what: str,
          env: dict[str, str] | None = None) -> None:
    """Run one step of the build (in ``env``, default this process's environment);
    ``ConfigError`` naming the step and the log when it fails."""
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        try:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=PIP_TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"environment: {what} took more than {PIP_TIMEOUT} s; see "
                              f"{log_path}.") from None
    if done.returncode != 0:
        raise ConfigError(f"environment: {what} failed (exit status {done.returncode}); pip's "
                          f"output is in {log_path}. Fix the checkout's {REQUIREMENTS_FILE} or "
                          f"pass a prepared environment with --env PATH.")
