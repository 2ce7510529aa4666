"""Running a participant's command in a bubblewrap sandbox, under budgets for its whole tree.

The sandbox is Debian's ``bubblewrap`` (``bwrap``, the isolation layer of Flatpak): it needs no
daemon and no setuid bit when run as root or where unprivileged user namespaces are on, and it
builds the whole sandbox from the command line, so what the participant's code can see is
written down here. Inside:

- its own user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``): no view of
  the organizer's processes, no network at all (only a loopback of its own), uid and gid 65534;
  the first process of the PID namespace is bwrap's, so when the command ends (or bwrap is
  killed) every process it started ends too, ``setsid`` daemons included;
- a filesystem holding only the read-only system folders an interpreter needs (``/usr``,
  ``/lib*``, ``/bin``, a few files of ``/etc``, the base interpreter's prefix), the given
  read-only binds (the environment, the checkout's copy, the inputs), a fresh ``/proc`` and
  ``/dev``, and one size-limited tmpfs scratch folder (``/scratch``, also ``/tmp`` and
  ``$HOME``): no organizer home, no token, no seed, no other team's files;
- the environment variables given, nothing else.

Budgets for the whole process tree: processes and memory through a cgroup of the run where the
machine lets this process make one (cgroup v2 ``pids.max``/``memory.max``, or v1
``pids.max``/``memory.limit_in_bytes``), else a watchdog that counts the tree's processes and
sums their resident memory (with ``RLIMIT_AS`` per process as a second fence); disk through the
scratch tmpfs's size and ``RLIMIT_FSIZE``; wall clock by killing the sandbox. The output (stdout
and stderr together) and an optional result channel are pipes read by this process, each
capped, so that nothing the sandbox writes lands on the organizer's disk unbounded.
``SandboxReport`` says which mechanism was in force for each budget.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.errors import ConfigError
from evaluation.reproduce._budgets import MIB, Budgets, Cgroup, quiet

#: The uid and gid the command runs as inside the sandbox ("nobody").
SANDBOX_UID = 65534
#: The sandbox's scratch folder (its ``HOME`` and ``TMPDIR``).
SCRATCH = "/scratch"
#: The environment variable that tells the command the file descriptor of the result channel.
RESULT_FD_VARIABLE = "EVALRS_RESULT_FD"
#: How often the watchdog looks at the process tree, in seconds.
WATCH_INTERVAL_S = 0.05
#: The system folders bound read-only (those that exist; a symlink stays a symlink).
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
#: The few files of /etc an interpreter and its numeric libraries read.
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
              "/etc/alternatives", "/etc/nsswitch.conf", "/etc/mime.types")
#: How to get bubblewrap, for the refusal's message.
_INSTALL_HINT = ("install Debian's bubblewrap (`apt-get install bubblewrap`, or your "
                 "distribution's package of the same name) and enable unprivileged user "
                 "namespaces when not running as root (`sysctl -w kernel.unprivileged_userns_clone"
                 "=1` on Debian, `sysctl -w user.max_user_namespaces=15000`); or pass "
                 "--unsafe-no-sandbox to run the participant's code unconfined (never for an "
                 "official reproduction)")


class SandboxUnavailable(ConfigError):
    """No sandbox can be made on this machine (the message says why and how to enable one)."""


@dataclass(frozen=True)
class Bind:
    """A host path seen read-only inside the sandbox at ``target``."""

    source: Path
    target: str




@dataclass
class SandboxReport:
    """How a command was confined and how it ended.

    Attributes
    ----------
    sandboxed : bool
        Whether it ran inside bubblewrap (False only with ``unsafe_no_sandbox``).
    mechanisms : dict of str to str
        For each budget and for the isolation, the mechanism in force.
    warnings : list of str
        What an organizer must know (the unsafe mode, a budget not enforced).
    returncode : int
        The command's exit status (negative: killed by that signal).
    stopped : str, optional
        Why this process stopped the run ("wall clock", "memory", "processes", "result"),
        or None when it ended by itself (the kernel's memory killer shows in ``memory_hit``).
    memory_hit, processes_hit : bool
        Whether the cgroup counted a hit of its memory or process limit.
    seconds : float
        Wall-clock seconds from start to the end of every process.
    output_dropped : int
        Bytes of output past ``Budgets.output_bytes``, not kept.
    """

    sandboxed: bool
    mechanisms: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    returncode: int = 0
    stopped: str | None = None
    memory_hit: bool = False
    processes_hit: bool = False
    seconds: float = 0.0
    output_dropped: int = 0

    @property
    def timed_out(self) -> bool:
        return self.stopped == "wall clock"

    def as_json(self) -> dict:
        return {"sandboxed": self.sandboxed, "mechanisms": dict(self.mechanisms),
                "warnings": list(self.warnings)}


def find_bwrap() -> str | None:
    """The path of ``bwrap`` on PATH (None when missing)."""
    return shutil.which("bwrap")


_PROBE: dict[str, str | None] = {}


def sandbox_problem() -> str | None:
    """Why no sandbox can be made on this machine (None when one can), with the fix."""
    if "problem" not in _PROBE:
        _PROBE["problem"] = _probe()
    return _PROBE["problem"]


def _probe() -> str | None:
    bwrap = find_bwrap()
    if bwrap is None:
        return f"bubblewrap (bwrap) is not installed: {_INSTALL_HINT}."
    probe = bwrap_command(["/bin/sh", "-c", "exit 0"], binds=(), cwd="/", budgets=Budgets())
    done = subprocess.run(probe, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        return (f"bubblewrap cannot make a sandbox here ({done.stderr.strip()[:300]}): "
                f"{_INSTALL_HINT}.")
    return None


def require_sandbox(unsafe_no_sandbox: bool = False) -> str | None:
    """Refuse (``SandboxUnavailable``) where no sandbox can be made, unless ``unsafe_no_sandbox``:
    then the warning to record (None when the sandbox works)."""
    problem = sandbox_problem()
    if problem is None:
        return None
    if not unsafe_no_sandbox:
        raise SandboxUnavailable(f"refusing to run the participant's code: {problem}")
    return (f"UNSAFE: the participant's code ran without a sandbox (--unsafe-no-sandbox): "
            f"{problem}")


# --------------------------------------------------------------------------- cgroups




# --------------------------------------------------------------------------- the command line


def _system_args() -> list[str]:
    """bwrap's arguments for the read-only system folders and files."""
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _interpreter_args(python: str | None) -> list[str]:
    """Bind the base interpreter's prefix when it lives outside /usr (pyenv, a custom build)."""
    if python is None:
        return []
    prefixes = {sys.base_prefix}
    real = os.path.realpath(python)
    prefixes.add(str(Path(real).parent.parent))
    args = []
    for prefix in sorted(prefixes):
        prefix = os.path.realpath(prefix)
        if prefix.startswith("/usr/") or prefix == "/usr" or not os.path.isdir(prefix):
            continue
        if prefix == "/tmp" or prefix.startswith("/tmp/"):
            raise ConfigError(f"sandbox: the Python installation at {prefix} cannot be shown "
                              f"inside: /tmp there is the sandbox's scratch folder. Install "
                              f"Python (or the environments' base interpreter) outside /tmp.")
        args += ["--ro-bind", prefix, prefix]
    return args


def bwrap_command(command: Sequence[str], *, binds: Sequence[Bind], cwd: str,
                  budgets: Budgets, python: str | None = None) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in the sandbox."""
    bwrap = find_bwrap() or "bwrap"
    args = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns",
            "--cap-drop", "ALL", "--hostname", "sandbox",
            *_system_args(), *_interpreter_args(python),
            "--proc", "/proc", "--dev", "/dev",
            "--perms", "0700", "--size", str(budgets.scratch_mb * MIB), "--tmpfs", SCRATCH,
            "--dir", f"{SCRATCH}/tmp", "--symlink", f"{SCRATCH}/tmp", "/tmp"]
    for bind in binds:
        if Path(bind.target) == Path("/tmp") or Path("/tmp") in Path(bind.target).parents:
            # /tmp inside is the scratch (a symlink into it): nothing can be mounted below it
            raise ConfigError(f"sandbox: cannot show {bind.source} at {bind.target}: /tmp inside "
                              f"the sandbox is its scratch folder. Bind it at another path "
                              f"(a reproduction uses /env, /checkout, /inputs).")
        args += ["--ro-bind", str(bind.source), bind.target]
    # the root of the sandbox is a tmpfs of bwrap's own, without a size: read-only once built
    args += ["--remount-ro", "/", "--chdir", cwd, "--", *command]
    return args


# --------------------------------------------------------------------------- running


def run_sandboxed(command: Sequence[str], *, binds: Sequence[Bind] = (), cwd: str = SCRATCH,
                  env: Mapping[str, str], budgets: Budgets, log_path: str | os.PathLike,
                  result_path: str | os.PathLike | None = None, python: str | None = None,
                  unsafe_no_sandbox: bool = False, use_cgroups: bool = True) -> SandboxReport:
    """Run ``command`` in the sandbox; its output appended to ``log_path``.

    Parameters
    ----------
    command : sequence of str
        What to run, with paths as seen inside the sandbox.
    binds : sequence of Bind
        Host paths to show read-only inside.
    cwd : str
        The working folder inside.
    env : mapping
        The whole environment inside (``HOME`` and ``TMPDIR`` are set to the scratch).
    budgets : Budgets
    log_path : path
        stdout and stderr, interleaved, capped at ``budgets.output_bytes``.
    result_path : path, optional
        Where what the command writes to the file descriptor named by the environment
        variable ``RESULT_FD_VARIABLE`` goes (capped at
        ``budgets.result_bytes``; past it the run is stopped).
    python : str, optional
        The interpreter the command runs, so that its base installation is bound.
    unsafe_no_sandbox : bool
        Where no sandbox can be made, run the command unconfined (with a warning in the
        report) instead of refusing.
    use_cgroups : bool
        Try a cgroup for the memory and process budgets (False: the watchdog only).

    Raises
    ------
    SandboxUnavailable
        When no sandbox can be made and ``unsafe_no_sandbox`` is not set.
    """
    warning = require_sandbox(unsafe_no_sandbox)
    report = SandboxReport(sandboxed=warning is None)
    if warning:
        report.warnings.append(warning)
    environ = {**env, "HOME": SCRATCH, "TMPDIR": f"{SCRATCH}/tmp"}
    if report.sandboxed:
        argv = bwrap_command(command, binds=binds, cwd=cwd, budgets=budgets, python=python)
        report.mechanisms.update({
            "isolation": "bubblewrap: own user/PID/network/IPC/UTS namespaces, uid 65534, "
                         "read-only binds, no network",
            "disk": f"tmpfs --size {budgets.scratch_mb} MiB + RLIMIT_FSIZE"})
        scratch = None
    else:
        argv, scratch, environ, cwd = _unconfined(command, binds, environ, cwd)
        report.mechanisms.update({"isolation": "none (unsafe)",
                                  "disk": "RLIMIT_FSIZE per file only"})
    cgroup = Cgroup(budgets) if use_cgroups else None
    try:
        _run(argv, environ, cwd if not report.sandboxed else None, budgets, log_path,
             result_path, report, cgroup)
    finally:
        if cgroup is not None:
            cgroup.kill_and_remove()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return report


def _unconfined(command, binds, environ, cwd):
    """The unsafe mode: the command as it is, with the binds' targets mapped to their sources
    through a scratch folder of symlinks (paths inside are rewritten where they start with a
    bind's target)."""
    scratch = Path(tempfile.mkdtemp(prefix="evalrs-unsafe-"))
    (scratch / "tmp").mkdir()
    mapping = {bind.target: str(bind.source) for bind in binds}
    mapping[SCRATCH] = str(scratch)

    def real(text: str) -> str:
        for target, source in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
            if text == target or text.startswith(target + "/"):
                return source + text[len(target):]
        return text

    environ = {k: real(v) for k, v in environ.items()}
    return [real(part) for part in command], scratch, environ, real(cwd)


def _run(argv, environ, cwd, budgets: Budgets, log_path, result_path, report: SandboxReport,
         cgroup: Cgroup | None) -> None:
    """Start the sandbox, pump its pipes, watch its budgets, and reap it."""
    enter = cgroup.procs_files() if cgroup is not None else []
    in_force = cgroup.mechanisms() if cgroup is not None else {}
    watch_memory = budgets.memory_mb is not None and "memory" not in in_force
    watch_processes = "processes" not in in_force
    report.mechanisms["memory"] = "no limit" if budgets.memory_mb is None else (
        (in_force.get("memory") or "a watchdog on the tree's resident memory")
        + " + RLIMIT_AS per process")
    report.mechanisms["processes"] = in_force.get("processes") or \
        "a watchdog counting the tree's processes"
    report.mechanisms["wall clock"] = "SIGKILL of the sandbox (its PID namespace ends)"
    fsize = budgets.scratch_mb * MIB
    memory = None if budgets.memory_mb is None else budgets.memory_mb * MIB

    def in_child() -> None:  # between fork and exec: only plain system calls
        for procs in enter:
            fd = os.open(procs, os.O_WRONLY)
            os.write(fd, b"0")
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory is not None:  # a fence per process too: one huge allocation fails at once
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    result_read = result_write = None
    pass_fds: tuple[int, ...] = ()
    if result_path is not None:
        # bwrap passes inherited descriptors on: the command finds the pipe by its number
        result_read, result_write = os.pipe()
        pass_fds = (result_write,)
        environ = {**environ, RESULT_FD_VARIABLE: str(result_write)}
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=dict(environ), cwd=cwd, start_new_session=True, preexec_fn=in_child,
        pass_fds=pass_fds)
    if result_write is not None:
        os.close(result_write)
    assert process.stdout is not None  # stdout=PIPE
    output = process.stdout
    stop = threading.Event()
    reasons: list[str] = []

    def kill(why: str) -> None:
        if not reasons:
            reasons.append(why)
        _kill_tree(process)

    pumps = [threading.Thread(target=_pump, args=(output.fileno(), log_path,
                                                  budgets.output_bytes, None, report),
                              daemon=True)]
    if result_read is not None:
        pumps.append(threading.Thread(target=_pump, args=(result_read, result_path,
                                                          budgets.result_bytes,
                                                          lambda: kill("result"), None),
                                      daemon=True))
    for pump in pumps:
        pump.start()
    watchdog = threading.Thread(target=_watch, args=(process, budgets, watch_memory,
                                                     watch_processes, stop, kill), daemon=True)
    watchdog.start()
    try:
        process.wait(timeout=budgets.wall_s)
    except subprocess.TimeoutExpired:
        kill("wall clock")
        process.wait()
    except BaseException:  # Ctrl-C: leave nothing running behind
        kill("interrupted")
        process.wait()
        raise
    finally:
        stop.set()
        _kill_tree(process)  # a child that outlived the main process (unsafe mode)
        for pump in pumps:
            pump.join(30)
        output.close()
        if result_read is not None:
            with quiet():
                os.close(result_read)
    report.returncode = process.returncode
    report.seconds = time.monotonic() - started
    report.stopped = reasons[0] if reasons else None
    if cgroup is not None:
        report.memory_hit, report.processes_hit = cgroup.hits()


def _pump(fd: int, path, cap: int, over, report: SandboxReport | None) -> None:
    """Copy what arrives on ``fd`` to ``path`` up to ``cap`` bytes; past it, ``over()`` or
    count the dropped bytes in ``report``."""
    kept = 0
    with open(path, "ab") as out:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            room = max(0, cap - kept)
            out.write(chunk[:room])
            out.flush()
            kept += min(room, len(chunk))
            if len(chunk) > room:
                if over is not None:
                    over()
                    return
                if report is not None:
                    report.output_dropped += len(chunk) - room


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _watch(process: subprocess.Popen, budgets: Budgets, memory: bool, processes: bool,
           stop: threading.Event, kill) -> None:
    """Stop the run when its tree passes the budgets no cgroup enforces."""
    if not (memory or processes):
        return
    limit = None if budgets.memory_mb is None else budgets.memory_mb * MIB
    while not stop.wait(WATCH_INTERVAL_S):
        tree = _tree(process.pid)
        if processes and len(tree) > budgets.processes:
            kill("processes")
            return
        if memory and limit is not None and sum(map(_rss, tree)) > limit:
            kill("memory")
            return


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the sandbox: every process below bwrap (the first process of its PID namespace
    among them, whose end ends the namespace), bwrap, and the session it leads."""
    if process.returncode is None:
        for pid in reversed(_tree(process.pid)):
            with quiet():
                os.kill(pid, signal.SIGKILL)
    with quiet():
        os.killpg(process.pid, signal.SIGKILL)
