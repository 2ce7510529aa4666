"""Source distributions in a reproduction's environment: refused by default, naming the package
and ``--allow-sdists``; with it, resolved without running their code here (an sdist whose
metadata needs a build gets it from a build in the sandbox), built into wheels inside the
sandbox (no network, nothing of this machine written), installed, then importable by the model.

A local package index (a folder in the simple layout, as ``--index-url file://...``) holds a
tiny sdist whose build backend is a wheel on the same index. The backend, when it runs, writes
a marker to a path of this machine and connects to a listener on this machine's 127.0.0.1, and
records in the built package what it saw. The real sandbox is used; without bubblewrap or uv the
tests skip and say why.
"""

from __future__ import annotations

import base64
import hashlib
import io
import socket
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from evaluation.errors import ConfigError
from evaluation.reproduce import _distfiles, _sdists
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._env import env_python, find_uv, prepare_env
from evaluation.reproduce._sandbox import Bind, run_sandboxed, sandbox_problem

PROBLEM = sandbox_problem()
UV = find_uv()
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox: {PROBLEM}")
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not installed (make sandbox)")
PROBE = "evalrs-sdist-probe"
BACKEND = "evalrs-probe-backend"


# --------------------------------------------------------------------------- the local index


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A pure-Python wheel of ``files`` written by hand (no build tool needed)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {**files,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 .encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = []
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{member},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


#: The probe's build backend: a PEP 517 backend that writes a wheel by hand. When it runs it
#: writes MARKER and connects to 127.0.0.1:PORT, and the built module says what happened.
_BACKEND_CODE = '''
import base64, hashlib, os, socket, zipfile

def _probe():
    try:
        os.makedirs(os.path.dirname(MARKER), exist_ok=True)
        with open(MARKER, "w") as f:
            f.write("the build backend ran here")
        wrote = True
    except OSError:
        wrote = False
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
        net = "connected"
    except OSError as exc:
        net = "failed: " + type(exc).__name__
    return wrote, net

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wrote, net = _probe()
    code = ("VALUE = 42\\nUID = %d\\nHOSTNAME = %r\\nWROTE_MARKER = %r\\nNETWORK = %r\\n"
            % (os.getuid(), os.uname().nodename, wrote, net))
    name, version = open("NAME").read().split()
    requires = "".join("Requires-Dist: %s\\n" % line for line in
                       (open("REQUIRES").read().split("\\n") if os.path.exists("REQUIRES")
                        else []) if line)
    module = name.replace("-", "_")
    info = module + "-" + version + ".dist-info"
    files = {module + "/__init__.py": code.encode(),
             info + "/METADATA": ("Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n%s"
                                  % (name, version, requires)).encode(),
             info + "/WHEEL": b"Wheel-Version: 1.0\\nGenerator: probe\\n"
                              b"Root-Is-Purelib: true\\nTag: py3-none-any\\n"}
    wheel = module + "-" + version + "-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (member, digest.decode(), len(data)))
        record.append(info + "/RECORD,,")
        archive.writestr(info + "/RECORD", "\\n".join(record) + "\\n")
    return wheel
'''


def _sdist(folder: Path, name: str, version: str, *, static: bool = True,
           requires: str = "") -> Path:
    """An sdist of ``name`` built by the probe backend; its metadata static or not (then its
    dependencies, ``requires``, are known only to its build)."""
    project = (f'[project]\nname = "{name}"\nversion = "{version}"\n' if static else
               f'[project]\nname = "{name}"\nversion = "{version}"\n'
               f'dynamic = ["dependencies"]\n')
    files = {"pyproject.toml": (f'[build-system]\nrequires = ["{BACKEND}==1.0"]\n'
                                f'build-backend = "evalrs_probe_backend"\n\n{project}'),
             "NAME": f"{name} {version}\n", "REQUIRES": requires}
    if static:
        files["PKG-INFO"] = f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\n"
    path = folder / f"{name.replace('-', '_')}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(f"{name.replace('-', '_')}-{version}/{member}")
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
    return path


def _index(root: Path, files: list[Path]) -> str:
    """A package index in the simple layout under ``root`` holding ``files``; its URL."""
    by_project: dict[str, list[Path]] = {}
    for file in files:
        project = file.name.split("-")[0].replace("_", "-")
        by_project.setdefault(project, []).append(file)
    for project, found in by_project.items():
        page = root / project
        page.mkdir(parents=True)
        links = []
        for file in found:
            (page / file.name).write_bytes(file.read_bytes())
            digest = hashlib.sha256(file.read_bytes()).hexdigest()
            links.append(f'<a href="{file.name}#sha256={digest}">{file.name}</a>')
        (page / "index.html").write_text(f"<html><body>{''.join(links)}</body></html>\n")
    (root / "index.html").write_text("<html><body>" + "".join(
        f'<a href="{p}/">{p}</a>' for p in by_project) + "</body></html>\n")
    return root.as_uri()


def _harness(root: Path) -> Path:
    """A stand-in for the harness's tree (its pyproject built by an in-tree backend here: the
    harness is the organizer's code), so that the environment needs nothing but the index."""
    package = root / "evaluation"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("HARNESS = 'stand-in'\n")
    backend = (textwrap.dedent(_BACKEND_CODE)
               .replace('open("NAME").read().split()', "('evalrs-standin-harness', '0.1')")
               .replace('module + "/__init__.py": code.encode()',
                        '"evaluation/__init__.py": b"HARNESS = \'stand-in\'\\n"'))
    (package / "_standin_backend.py").write_text(
        backend + "\n\ndef _probe():\n    return False, 'not probed'\n")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "_standin_backend"\n'
        'backend-path = ["evaluation"]\n\n'
        '[project]\nname = "evalrs-standin-harness"\nversion = "0.1"\n')
    return root


@pytest.fixture
def world(tmp_path):
    """A checkout asking for the probe, the index, the stand-in harness, the host marker's path
    and a listener on this machine's loopback."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    marker = tmp_path / "host" / "marker"
    code = (f"MARKER = {str(marker)!r}\nPORT = {listener.getsockname()[1]}\n"
            + textwrap.dedent(_BACKEND_CODE))
    built = tmp_path / "built"
    built.mkdir()
    files = [_wheel(built, BACKEND, "1.0", {"evalrs_probe_backend.py": code.encode()}),
             _sdist(built, PROBE, "1.0"), _sdist(built, "evalrs-dynamic-probe", "1.0",
                                                 static=False, requires=f"{PROBE}==1.0\n")]
    url = _index(tmp_path / "index", files)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "requirements.txt").write_text(f"{PROBE}==1.0\n")
    yield {"checkout": checkout, "index": url, "harness": _harness(tmp_path / "harness"),
           "marker": marker, "listener": listener, "cache": tmp_path / "cache",
           "log": tmp_path / "build.log"}
    listener.close()


def _accepted(listener: socket.socket) -> bool:
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def _prepare(world, **options) -> Path:
    return prepare_env(world["checkout"], world["cache"], log=lambda line: None,
                       log_path=world["log"], harness_root=world["harness"],
                       index_url=world["index"], installer="uv", **options)


# --------------------------------------------------------------------------- the tests


@needs_uv
def test_an_sdist_is_refused_by_default_naming_the_package_and_the_option(world):
    with pytest.raises(ConfigError) as refused:
        _prepare(world)
    message = str(refused.value)
    assert PROBE in message and "--allow-sdists" in message, message
    assert not world["marker"].exists() and not _accepted(world["listener"])
    assert not world["cache"].exists() or not any(world["cache"].iterdir())


@needs_uv
@needs_sandbox
def test_with_allow_sdists_the_sdist_is_built_in_the_sandbox_and_imports(world):
    env = _prepare(world, allow_sdists=True)
    # the build backend ran (it wrote its marker in the sandbox's scratch), but nothing landed
    # on this machine and this machine's loopback was out of reach
    assert not world["marker"].exists()
    assert not _accepted(world["listener"])
    # the reproduction's model imports the built package, in the sandbox, from the read-only
    # environment
    log = world["log"].parent / "run.log"
    report = run_sandboxed(
        ["/env/bin/python", "-c", "import evalrs_sdist_probe as p, evaluation; "
         "print('seen', p.VALUE, p.UID, p.HOSTNAME, p.WROTE_MARKER, p.NETWORK, "
         "evaluation.HARNESS)"],
        binds=[Bind(env, "/env")], env={"PATH": "/usr/bin:/bin"},
        budgets=Budgets(wall_s=60, memory_mb=1024, processes=64, scratch_mb=16),
        log_path=log, python=str(env_python(env)))
    text = log.read_text()
    assert report.returncode == 0, text
    assert "seen 42 65534 sandbox True failed: ConnectionRefusedError stand-in" in text, text
    # built into the cache, read-only like any environment
    assert env.parent == world["cache"] and not (env.stat().st_mode & 0o222)
    assert f"{PROBE}==1.0 --sdist sha256=" in (env / "pinned.txt").read_text()
    # the second time it comes from the cache: the same lock, the same key
    assert _prepare(world, allow_sdists=True) == env


@needs_uv
@needs_sandbox
def test_an_sdist_whose_metadata_needs_a_build_gets_it_from_a_build_in_the_sandbox(world):
    (world["checkout"] / "requirements.txt").write_text("evalrs-dynamic-probe==1.0\n")
    env = _prepare(world, allow_sdists=True)
    # uv was stopped before running the backend here; its build in the sandbox told the
    # dependency (the probe), which was then resolved and built too
    log = world["log"].read_text()
    assert _sdists.TRIPWIRE_TEXT in log
    assert not world["marker"].exists() and not _accepted(world["listener"])
    pinned = (env / "pinned.txt").read_text()
    assert "evalrs-dynamic-probe==1.0 --sdist" in pinned and f"{PROBE}==1.0 --sdist" in pinned
    run_log = world["log"].parent / "run.log"
    report = run_sandboxed(
        ["/env/bin/python", "-c", "import evalrs_dynamic_probe as d, evalrs_sdist_probe as p; "
         "print('seen', d.UID, d.NETWORK, p.VALUE)"],
        binds=[Bind(env, "/env")], env={"PATH": "/usr/bin:/bin"},
        budgets=Budgets(wall_s=60, memory_mb=1024, processes=64, scratch_mb=16),
        log_path=run_log, python=str(env_python(env)))
    assert report.returncode == 0, run_log.read_text()
    assert "seen 65534 failed: ConnectionRefusedError 42" in run_log.read_text()


def test_the_metadata_learnt_in_the_sandbox_is_given_to_uv_as_toml():
    import tomllib

    text = _sdists._dependency_metadata({"b==2.0": [], "a-b==1.0": ['c>=1; python_version > "3"',
                                                                    "d[x]"]})
    assert tomllib.loads(text) == {"dependency-metadata": [
        {"name": "a-b", "version": "1.0", "requires-dist": ['c>=1; python_version > "3"',
                                                            "d[x]"]},
        {"name": "b", "version": "2.0", "requires-dist": []}]}


def test_allow_sdists_needs_uv(world):
    with pytest.raises(ConfigError, match="--allow-sdists needs uv"):
        prepare_env(world["checkout"], None, log=lambda line: None, log_path=world["log"],
                    harness_root=world["harness"], installer="pip", allow_sdists=True)


def test_only_wheels_of_the_plans_sdists_come_back_from_the_build(tmp_path):
    plan = [f"{PROBE}==1.0"]
    built = tmp_path / "built"
    built.mkdir()
    good = _wheel(built, PROBE, "1.0", {"evalrs_sdist_probe/__init__.py": b"VALUE = 42\n"})
    other = _wheel(built, "evalrs-other", "1.0", {"evalrs_other.py": b""})
    pth = built / "evil.pth"
    pth.write_text("import os\n")
    for extra, refused in ((None, None), (other, "evalrs_other-1.0"), (pth, "evil.pth")):
        stream = tmp_path / "wheels.tar"
        with tarfile.open(stream, "w") as archive:
            archive.add(good, arcname=good.name)
            if extra is not None:
                archive.add(extra, arcname=extra.name)
        out = tmp_path / f"out-{refused}"
        out.mkdir()
        if refused is None:
            wheels = _sdists._received_wheels(stream, out, plan, "the probe")
            assert [w.name for w in wheels] == [good.name]
            assert wheels[0].read_bytes() == good.read_bytes()
        else:
            with pytest.raises(ConfigError, match=f"sent back '{refused}"):
                _sdists._received_wheels(stream, out, plan, "the probe")
    with pytest.raises(ConfigError, match="made no wheel of evalrs-sdist-probe==1.0"):
        _sdists._received_wheels(_empty_tar(tmp_path), tmp_path, plan, "the probe")


def _empty_tar(tmp_path: Path) -> Path:
    with tarfile.open(tmp_path / "empty.tar", "w"):
        pass
    return tmp_path / "empty.tar"


def test_the_build_requirements_are_read_from_the_sdist_as_text(tmp_path):
    assert _distfiles.build_requires(_sdist(tmp_path, PROBE, "1.0")) == [f"{BACKEND}==1.0"]
    plain = tmp_path / "old-1.0.tar.gz"
    with tarfile.open(plain, "w:gz") as archive:
        entry = tarfile.TarInfo("old-1.0/setup.py")
        archive.addfile(entry, io.BytesIO(b""))
    assert _distfiles.build_requires(plain) == list(_distfiles.DEFAULT_BUILD_REQUIRES)


def test_the_lock_is_split_into_wheels_for_this_python_and_sdists(tmp_path):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    (tmp_path / "pylock.toml").write_text(textwrap.dedent(f'''
        lock-version = "1.0"
        [[packages]]
        name = "pure"
        version = "1.0"
        wheels = [{{ url = "https://i.example/pure-1.0-py3-none-any.whl" }}]
        [[packages]]
        name = "foreign"
        version = "2.0"
        sdist = {{ url = "https://i.example/foreign-2.0.tar.gz", hashes = {{ sha256 = "ab" }} }}
        wheels = [{{ url = "https://i.example/foreign-2.0-{tag}-{tag}-win_amd64.whl" }}]
    '''))
    plan = _sdists.plan_of(tmp_path / "pylock.toml")
    assert plan.wheels == ("pure==1.0",)
    assert plan.sdists == (("foreign==2.0",
                            _distfiles.LockedFile("https://i.example/foreign-2.0.tar.gz", "ab")),)
    assert plan.pinned() == b"foreign==2.0 --sdist sha256=ab\npure==1.0\n"


def test_the_command_line_passes_allow_sdists_to_the_environment(tmp_path, monkeypatch, capsys):
    import evaluation.reproduce as rp
    from evaluation.cli import main

    checkout = tmp_path / "checkout"
    (checkout / "submission").mkdir(parents=True)
    (checkout / "submission" / "MyModel.py").write_text("")
    (tmp_path / "admin.token").write_text("t0ken-for-the-test\n")
    asked = []

    def prepare_env(checkout, cache_dir, **options):
        asked.append(options["allow_sdists"])
        raise ConfigError("stop here: the environment is what this test looks at")

    monkeypatch.setattr(rp, "prepare_env", prepare_env)
    monkeypatch.chdir(tmp_path)
    common = ["reproduce", str(checkout), "--submission", "3", "--server",
              "http://127.0.0.1:9", "--admin-token-file", str(tmp_path / "admin.token")]
    assert main(common) == 2
    assert main([*common, "--allow-sdists"]) == 2
    assert asked == [False, True]
    assert "stop here" in capsys.readouterr().err


def test_a_download_is_checked_and_a_file_url_needs_a_local_index(tmp_path):
    source = tmp_path / "pkg-1.0.tar.gz"
    source.write_bytes(b"the sdist")
    digest = hashlib.sha256(b"the sdist").hexdigest()
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(ConfigError, match="only from an index that is a local folder"):
        _distfiles.fetch(_distfiles.LockedFile(source.as_uri(), digest), into)
    fetched = _distfiles.fetch(_distfiles.LockedFile(source.as_uri(), digest), into,
                               local_index=True)
    assert fetched.read_bytes() == b"the sdist"
    with pytest.raises(ConfigError, match="does not have the sha256 the index gave"):
        _distfiles.fetch(_distfiles.LockedFile(source.as_uri(), "0" * 64), into, local_index=True)


@needs_uv
def test_without_a_sandbox_no_sdist_is_built(tmp_path, monkeypatch):
    from evaluation.reproduce import _sandbox
    from evaluation.reproduce._sandbox import SandboxUnavailable

    monkeypatch.setitem(_sandbox._PROBE, "problem", "bubblewrap (bwrap) is not installed")
    sdist = _sdist(tmp_path, PROBE, "1.0")
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        _sdists.build_wheels([f"{PROBE}==1.0"], tmp_path, [sdist], UV, tmp_path,
                             tmp_path / "build.log")
    assert not list(tmp_path.glob("*.whl"))
