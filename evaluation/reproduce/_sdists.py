"""Source distributions in an environment, when the organizer allows them (``--allow-sdists``).

Building an sdist runs its build backend: code chosen by whoever published the package, which
a participant can pick. So by default environments are wheels only, and a package that has no
wheel is refused, naming it and the option. With ``allow_sdists`` the organizer's process only
reads and downloads, and every build runs in the sandbox:

1. The requirements are resolved by ``uv pip compile`` to a lock (``pylock.toml``) with sdists
   allowed. uv reads an sdist's metadata without building it when it is static (``PKG-INFO``
   of metadata 2.2+, or ``[project]`` of ``pyproject.toml``); where it would have to run the
   backend to learn it, a trip wire stops the build before any of the package's code runs (a
   ``sitecustomize`` on the build interpreter's ``PYTHONPATH`` that exits at once). That sdist
   is then built into a wheel in the sandbox (steps 2 and 3 for it alone), the
   ``Requires-Dist`` of the wheel's METADATA is read here as text and given to uv as the
   package's metadata (``dependency-metadata``), and the resolution starts again.
2. Each locked package with a wheel for this interpreter is installed from it as before; the
   sdists are downloaded (hashes checked), their ``[build-system] requires`` read from their
   ``pyproject.toml`` as text, resolved wheels only and downloaded too, into one folder.
3. ``uv build --wheel --offline --no-index`` builds a wheel of each sdist from that folder
   inside the sandbox (no network, uid 65534, the folder read-only, nothing writable but its
   size-limited scratch, under budgets), and the wheels come back through the sandbox's
   bounded result channel as one tar stream. Only wheels of the plan's sdists for this
   interpreter are taken; this process installs them (installing a wheel runs no code), and
   the environment is then made read-only like any other. The sandbox never writes the
   environment, so a build can neither fill this machine's disk nor plant a link that a later
   step here would write through.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tomllib
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from evaluation.errors import ConfigError
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._distfiles import (
    LockedFile,
    build_requires,
    fetch,
    requires_dist,
    sdist_on_index,
)
from evaluation.reproduce._sandbox import SCRATCH, Bind, run_sandboxed

#: The organizer's option that lets environments take sdists.
OPTION = "--allow-sdists"
#: What the trip wire prints when uv tries to run a build backend outside the sandbox.
TRIPWIRE_TEXT = "evalrs: refused to run a package's build code outside the sandbox"
#: Where the find-links folder and uv are seen inside the build sandbox.
LINKS_TARGET = "/sdists"
UV_TARGET = "/opt/evalrs/uv"
#: The budgets of the sandboxed build.
BUILD_BUDGETS = Budgets(wall_s=1800.0, memory_mb=8192, processes=512, scratch_mb=8192)

_WHEELS_REQUIRED = re.compile(r"Wheels are required for `([^`]+)`")
_FAILED_BUILD = re.compile(r"Failed to (?:build|download and build) `([^`]+)`")

Step = Callable[..., None]
#: The most sdists built in one resolution to learn their metadata.
MAX_METADATA_BUILDS = 20


class SdistRefused(ConfigError):
    """A package has no wheel and sdists are not allowed (the message names it and the
    option)."""


@dataclass(frozen=True)
class SdistPlan:
    """What an environment with sdists is made of.

    Attributes
    ----------
    wheels : tuple of str
        ``name==version`` of the locked packages that have a wheel for this interpreter.
    sdists : tuple of (str, LockedFile)
        ``name==version`` and the sdist of each package to build in the sandbox.
    """

    wheels: tuple[str, ...]
    sdists: tuple[tuple[str, LockedFile], ...]

    def pinned(self) -> bytes:
        """The lock as the cache key sees it: each pin, and each sdist's hash."""
        lines = [f"{pin}\n" for pin in self.wheels]
        lines += [f"{pin} --sdist sha256={file.sha256}\n" for pin, file in self.sdists]
        return "".join(sorted(lines)).encode()


# --------------------------------------------------------------------------- refusals


def _new_text(log_path: Path, offset: int) -> str:
    with open(log_path, "rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


def refusal(log_path: Path, offset: int) -> SdistRefused | None:
    """The refusal for a wheels-only resolution that failed because a package has no wheel
    (None when it failed for another reason)."""
    names = sorted(set(_WHEELS_REQUIRED.findall(_new_text(log_path, offset))))
    if not names:
        return None
    return SdistRefused(f"environment: {', '.join(names)} has no wheel for this Python and "
                       f"platform, only a source distribution, whose build runs the package's "
                       f"own code; environments are wheels only unless the organizer passes "
                       f"{OPTION} (the build then runs in the sandbox, without network). Or "
                       f"ask the team to pin a version of {names[0]} that has a wheel.")


class MetadataNeedsBuild(ConfigError):
    """uv would have had to run a package's build backend here to learn its metadata (the trip
    wire stopped it); ``pin`` is that package's ``name==version`` (None: not known)."""

    def __init__(self, pin: str | None) -> None:
        super().__init__(f"environment: the metadata of {pin or 'a package'} is not static: "
                         f"uv would have to run its build code to learn its dependencies, "
                         f"which never runs outside the sandbox.")
        self.pin = pin


def _tripped(log_path: Path, offset: int) -> MetadataNeedsBuild | None:
    """What stopped a resolution that would have run a build backend on this machine."""
    text = _new_text(log_path, offset)
    if TRIPWIRE_TEXT not in text:
        return None
    pins = sorted(set(_FAILED_BUILD.findall(text)))
    return MetadataNeedsBuild(pins[0] if len(pins) == 1 and "==" in pins[0] else None)


def _tripwire(folder: Path) -> dict[str, str]:
    """The environment of a uv call that must run no build backend: a ``sitecustomize`` on
    ``PYTHONPATH`` that makes every build interpreter exit before the backend is imported."""
    wire = folder / "tripwire"
    wire.mkdir(exist_ok=True)
    (wire / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"sys.stderr.write({TRIPWIRE_TEXT!r} + '\\n')\n"
        "os._exit(97)\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**environ, "PYTHONPATH": str(wire)}


# --------------------------------------------------------------------------- the lock


def lock(uv: str, python: str, requested: Path, constraints: Path | None, folder: Path,
         log_path: Path, index_url: str | None, step: Step) -> SdistPlan:
    """Resolve ``requested`` with sdists allowed, building nothing here; the plan.

    Where uv needs an sdist's metadata and could only learn it by building (the trip wire
    stops that), the sdist is downloaded and built into a wheel in the sandbox, its
    ``Requires-Dist`` read from the wheel's METADATA as text and given to uv as that package's
    metadata (``dependency-metadata``), and the resolution starts again.

    Raises
    ------
    ConfigError
        When the resolution fails, or a package's metadata cannot be had.
    """
    index_args = [] if index_url is None else ["--index-url", index_url]
    out, config = folder / "pylock.toml", folder / "uv.toml"
    command = [uv, "pip", "compile", str(requested), "-o", str(out), "--quiet", "--no-header",
               "--format", "pylock.toml", "--python", python, "--config-file", str(config),
               *index_args]
    if constraints is not None:
        command += ["-c", str(constraints)]
    metadata: dict[str, list[str]] = {}
    for _ in range(MAX_METADATA_BUILDS + 1):
        config.write_text(_dependency_metadata(metadata))
        try:
            _checked_step(step, command, log_path, folder,
                          "resolving the requirements (sdists allowed, nothing built here)")
            return plan_of(out)
        except MetadataNeedsBuild as exc:
            if exc.pin is None or exc.pin in metadata:
                raise
            metadata[exc.pin] = _built_metadata(exc.pin, uv, python, folder, log_path,
                                                index_url, step)
    raise ConfigError(f"environment: more than {MAX_METADATA_BUILDS} packages need a build to "
                      f"learn their metadata; ask the team for packages with wheels.")


def _dependency_metadata(metadata: dict[str, list[str]]) -> str:
    """uv's configuration giving the metadata learnt in the sandbox (TOML written by hand:
    each value is a checked specifier, quoted as a JSON string, which TOML reads alike)."""
    entries = []
    for pin, requires in sorted(metadata.items()):
        name, _, version = pin.partition("==")
        entries.append(f"[[dependency-metadata]]\nname = {json.dumps(name)}\n"
                       f"version = {json.dumps(version)}\n"
                       f"requires-dist = [{', '.join(json.dumps(r) for r in requires)}]\n")
    return "\n".join(entries)


def _built_metadata(pin: str, uv: str, python: str, folder: Path, log_path: Path,
                    index_url: str | None, step: Step) -> list[str]:
    """The ``Requires-Dist`` of ``pin``, read from a wheel built from its sdist in the
    sandbox."""
    work = folder / f"metadata-{hashlib.sha256(pin.encode()).hexdigest()[:12]}"
    links, built = work / "links", work / "built"
    links.mkdir(parents=True)
    built.mkdir()
    file = sdist_on_index(index_url, pin)
    index_args = [] if index_url is None else ["--index-url", index_url]
    sdists = gather([file], uv, python, links, log_path, index_args, step)
    wheel = build_wheels([pin], links, sdists, uv, built, log_path)[0]
    return requires_dist(wheel)


def _checked_step(step: Step, command: list[str], log_path: Path, folder: Path,
                  what: str) -> None:
    """``step`` under the trip wire; its refusal when the trip wire fired."""
    offset = log_path.stat().st_size if log_path.exists() else 0
    try:
        step(command, log_path, what, env=_tripwire(folder))
    except ConfigError:
        tripped = _tripped(log_path, offset)
        if tripped is not None:
            raise tripped from None
        raise


def plan_of(pylock: Path) -> SdistPlan:
    """Split a ``pylock.toml`` into the packages with a wheel for this interpreter and the
    sdists to build."""
    locked = tomllib.loads(pylock.read_text(encoding="utf-8"))
    tags = set(sys_tags())
    wheels, sdists = [], []
    for package in locked.get("packages", []):
        pin = f"{package['name']}=={package['version']}"
        if _compatible_wheel(package, tags) is not None:
            wheels.append(pin)
        elif "sdist" in package:
            sdists.append((pin, _file(package["sdist"], pin)))
        else:
            raise ConfigError(f"environment: {pin} has neither a wheel for this Python and "
                              f"platform nor a source distribution on the index.")
    return SdistPlan(tuple(wheels), tuple(sdists))


def _file(entry: dict, pin: str) -> LockedFile:
    url = entry.get("url") or ""
    if not url:
        raise ConfigError(f"environment: the lock gives no URL for {pin}'s file; check "
                          f"--index-url.")
    return LockedFile(url, (entry.get("hashes") or {}).get("sha256", ""))


def _compatible_wheel(package: dict, tags: set) -> LockedFile | None:
    """The first wheel of ``package`` this interpreter can install (None: none)."""
    for wheel in package.get("wheels", []):
        file = _file(wheel, package["name"])
        try:
            _, _, _, wheel_tags = parse_wheel_filename(file.filename)
        except ValueError:
            continue
        if wheel_tags & tags:
            return file
    return None


def gather(files: list[LockedFile], uv: str, python: str, links: Path, log_path: Path,
           index_args: list[str], step: Step) -> list[Path]:
    """Download the sdists ``files`` and their build requirements' wheels into ``links``;
    the sdists' paths."""
    local = any(arg.startswith("file:") for arg in index_args)
    sdists = [fetch(file, links, local_index=local) for file in files]
    wanted = sorted({r for sdist in sdists for r in build_requires(sdist)})
    if wanted:
        work = links.parent / "build-requires"
        work.mkdir(exist_ok=True)
        (work / "requires.in").write_text("".join(f"{r}\n" for r in wanted))
        out = work / "pylock.toml"
        _checked_step(step, [uv, "pip", "compile", str(work / "requires.in"), "-o", str(out),
                             "--quiet", "--no-header", "--format", "pylock.toml",
                             "--only-binary", ":all:", "--python", python, *index_args],
                      log_path, work, "resolving the sdists' build requirements (wheels only)")
        tags = set(sys_tags())
        for package in tomllib.loads(out.read_text()).get("packages", []):
            wheel = _compatible_wheel(package, tags)
            if wheel is not None:
                fetch(wheel, links, local_index=local)
    return sdists


# --------------------------------------------------------------------------- the build

#: What runs in the build sandbox: ``uv build --wheel`` of each sdist, offline, then the wheels
#: as one tar stream on the result channel (the sandbox has no writable bind).
_BUILD_SCRIPT = """
import os, subprocess, sys, tarfile
uv, python, out, *sdists = sys.argv[1:]
status = 0
for sdist in sdists:
    status = status or subprocess.run(
        [uv, "build", "--wheel", "--offline", "--no-index", "--no-config", "--find-links",
         os.path.dirname(sdist), "--cache-dir", os.path.join(os.environ["HOME"], "uv-cache"),
         "--python", python, "--out-dir", out, sdist]).returncode
with os.fdopen(int(os.environ["EVALRS_RESULT_FD"]), "wb") as channel:
    with tarfile.open(fileobj=channel, mode="w|") as stream:
        for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
            if name.endswith(".whl"):
                stream.add(os.path.join(out, name), arcname=name)
sys.exit(status)
"""


def build_wheels(pins: list[str], links: Path, sdists: list[Path], uv: str, out: Path,
                 log_path: Path, budgets: Budgets = BUILD_BUDGETS) -> list[Path]:
    """Build a wheel of each of ``sdists`` inside the sandbox, offline from ``links``; the
    wheels, received through the result channel into ``out``.

    The sandbox sees the downloads, uv and the base interpreter read-only and writes only its
    size-limited scratch: no network, nothing of this machine in reach, and nothing written
    here but the bounded result stream. A wheel comes back only when its name and version are
    an sdist's of the plan and it is for this interpreter; installing it then runs no code.

    Raises
    ------
    ConfigError
        When the build fails, passes its budgets or sends back something else than the wheels
        (the log has uv's output).
    """
    python = os.path.realpath(sys.executable)
    scratch_out = f"{SCRATCH}/wheels"
    command = [python, "-I", "-c", _BUILD_SCRIPT, UV_TARGET, python, scratch_out,
               *(f"{LINKS_TARGET}/{s.name}" for s in sdists)]
    binds = [Bind(links, LINKS_TARGET), Bind(Path(_binary(uv)), UV_TARGET)]
    with open(log_path, "ab") as log:
        log.write(f"$ (in the sandbox) uv build --wheel --offline --no-index --find-links "
                  f"{LINKS_TARGET} {' '.join(s.name for s in sdists)}\n".encode())
    stream = out / "wheels.tar"
    report = run_sandboxed(command, binds=binds, env={"PATH": "/usr/bin:/bin"},
                           budgets=budgets, log_path=log_path, result_path=stream,
                           python=python)
    names = ", ".join(s.name for s in sdists)
    if report.returncode != 0 or report.stopped is not None:
        why = f"stopped ({report.stopped})" if report.stopped else \
            f"exit status {report.returncode}"
        raise ConfigError(f"environment: building the source distributions {names} in the "
                          f"sandbox failed ({why}); uv's output is in {log_path}.")
    return _received_wheels(stream, out, pins, names)


def _received_wheels(stream: Path, out: Path, pins: list[str], names: str) -> list[Path]:
    """The wheels of the sandbox's tar stream, each a regular file named as a wheel of one of
    ``pins`` for this interpreter (anything else refuses the whole build)."""
    wanted = {_normal(pin) for pin in pins}
    tags = set(sys_tags())
    wheels: dict[str, Path] = {}
    try:
        with tarfile.open(stream, mode="r:") as archive:
            for member in archive:
                pin = _wheel_pin(member, tags)
                extracted = archive.extractfile(member) if pin in wanted else None
                if extracted is None or pin in wheels:
                    raise ConfigError(f"environment: the build of {names} sent back "
                                      f"{member.name!r}, which is not a wheel of one of them "
                                      f"for this Python; nothing of it is installed.")
                wheels[pin] = out / member.name
                with open(wheels[pin], "wb") as target:
                    shutil.copyfileobj(extracted, target)
    except (OSError, tarfile.TarError) as exc:
        raise ConfigError(f"environment: the build of {names} sent back no readable wheels "
                          f"({type(exc).__name__}).") from None
    missing = sorted(wanted - set(wheels))
    if missing:
        raise ConfigError(f"environment: the build in the sandbox made no wheel of "
                          f"{', '.join(missing)}.")
    return [wheels[_normal(pin)] for pin in pins]


def _wheel_pin(member: tarfile.TarInfo, tags: set) -> str:
    """``name==version`` of a wheel file of the stream ("" when it is not one for here)."""
    if not member.isfile() or "/" in member.name or member.name.startswith("."):
        return ""
    try:
        name, version, _, wheel_tags = parse_wheel_filename(member.name)
    except ValueError:
        return ""
    return f"{name}=={version}" if wheel_tags & tags else ""


def _normal(pin: str) -> str:
    """``name==version`` with the name and version in their canonical forms."""
    name, _, version = pin.partition("==")
    return f"{canonicalize_name(name)}=={Version(version)}"


def _binary(uv: str) -> str:
    """The real file of ``uv``: a program the sandbox can run by itself (not a shim)."""
    real = os.path.realpath(uv)
    with open(real, "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise ConfigError(f"{OPTION}: uv at {uv} is not the uv program itself (a wrapper "
                              f"script?), which the build sandbox needs; `pip install uv` into "
                              f"the environment that runs the harness.")
    return real
