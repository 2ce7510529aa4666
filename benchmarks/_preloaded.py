"""Python commands as processes of their own, forked from one that imported their modules once.

A smoke run of a benchmark, or a test, that starts Python processes (``python SCRIPT``,
``python -m evaluation serve``, its restarts, workers, admin commands) pays each one's imports
first: about a second of CPU for numpy, pandas and pyarrow, about 3 for the server's
libraries. ``PreloadedStarter`` starts them instead from a process that imported the modules
given once: with ``method="forkserver"``, a server process (``multiprocessing``'s, one per
process, started on first use) that several commands share; with ``method="fork"``, this very
process, which imports them at once (for a caller that imported most of them anyway).

Each command is still a process of its own and behaves as a fresh ``python ARGV`` does: its
own ``sys.argv``, working folder and environment, the standard input read from /dev/null, its
output appended to files, non-daemon threads joined and then the ``atexit`` handlers run at its
end, the exit status of ``sys.exit`` (1, the traceback on stderr, on an uncaught exception),
stopped by SIGTERM and killed by SIGKILL as a fresh one is; only its imports are done. What
differs between the callers is a choice of the starter's (see ``PreloadedStarter``): the
``sys.path`` the command sees, whether it forgets a preloaded project that its own path finds
elsewhere, whether logging and warnings are reset to a new interpreter's, whether it may fork
from a process with threads running; and, per command, a shell ``setup`` run first in a mount
namespace of the command's own.
``Child`` answers as much of ``subprocess.Popen`` as the callers use (``pid``, ``poll``,
``wait``, ``returncode``, ``send_signal``, ``terminate``, ``kill``).

The full modes of the benchmarks start fresh interpreters (``subprocess``), as an organizer
does: a fork from a preloaded process would change what they measure (a restart's time, a
process's memory).
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib
import json
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import runpy
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TextIO

#: Threads a fork may leave behind: tqdm's monitor only looks at the progress bars every 10 s
#: (under tqdm's own lock), and the commands started here draw no bar.
HARMLESS_THREADS = frozenset({"tqdm_monitor"})

#: ``unshare(2)``'s flag for a mount namespace of the calling process's own.
CLONE_NEWNS = 0x00020000


@dataclass(frozen=True)
class _Command:
    """What the forked process is to become (``PreloadedStarter.start``'s arguments, settled
    in the starting process)."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    stdout: str
    stderr: str
    #: The whole ``sys.path`` (None: the forking process's, kept).
    path: list[str] | None
    #: The preloaded package to forget when ``path`` finds another copy (None: none).
    project: str | None
    #: Logging and warnings reset to a new interpreter's.
    new_interpreter: bool
    #: The shell commands run first in a mount namespace of the child's own (None: none).
    setup: str | None
    #: Whether the ``atexit`` handlers already registered are the forking process's own.
    inherited_atexit: bool


class Child:
    """A started command; the ``subprocess.Popen`` methods its callers use."""

    def __init__(self, process: multiprocessing.process.BaseProcess, argv: Sequence[str]):
        self.process, self.args = process, list(argv)

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: the signal that ended it), None while it runs."""
        return self.process.exitcode

    def poll(self) -> int | None:
        """The exit status once the command has ended, else None."""
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end of the command (``subprocess.TimeoutExpired`` after ``timeout``
        s); its exit status."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        """SIGTERM (for ``serve``: uvicorn's graceful shutdown)."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


class PreloadedStarter:
    """Starts ``python ARGV`` commands forked from a process that imported ``preload``.

    Parameters
    ----------
    preload : sequence of str
        The modules imported once (with ``"forkserver"``, those missing are left out).
    method : {"forkserver", "fork"}
        Fork from ``multiprocessing``'s server process (one per process: the first starter to
        start a command there sets its ``preload`` and ``root``), or from this process (which
        imports ``preload`` at once).
    root : Path, optional
        ``"forkserver"``: the folder the server starts in, where the modules that the
        forking process's path finds through a relative entry are looked up (default: the
        current one).
    fresh_path : bool
        The command's ``sys.path`` is a fresh ``python``'s: the script's folder (``-m``: the
        working folder), then its environment's ``PYTHONPATH``, then what a plain ``python``
        has here. Otherwise it is the forking process's.
    project : str, optional
        A preloaded package that the command forgets (and imports again through its own
        path: another copy, or an ImportError) when its own path would find another copy.
    new_interpreter : bool
        Logging and warnings as a new interpreter has them, not as the forking process set
        them (a test runner's handlers keep the records, its filters and recorder keep the
        warnings).
    allow_threads : bool
        ``"fork"``: start a command even while this process has threads running (else a
        RuntimeError says which).
    """

    def __init__(self, preload: Sequence[str], method: str = "forkserver", *,
                 root: Path | None = None, fresh_path: bool = False,
                 project: str | None = None, new_interpreter: bool = False,
                 allow_threads: bool = False) -> None:
        if method not in ("forkserver", "fork"):
            raise ValueError(f"method={method!r}: use 'forkserver' or 'fork'")
        self.method, self.root, self.fresh_path = method, root, fresh_path
        self.project, self.new_interpreter = project, new_interpreter
        self.allow_threads = allow_threads
        self.context = multiprocessing.get_context(method)
        if method == "forkserver":
            # this module too: each child unpickles its entry point from here
            self.context.set_forkserver_preload([*preload, __name__])
        else:
            for name in preload:
                importlib.import_module(name)

    def start(self, argv: Sequence[str], *, cwd: Path, stdout: Path, stderr: Path | None = None,
              env: Mapping[str, str] | None = None, setup: str | None = None) -> Child:
        """``python *argv`` (without the interpreter: a script, or ``-m module``) in ``cwd``
        with environment ``env`` (default: this process's), its output appended to ``stdout``
        and ``stderr`` (default: ``stdout`` too); ``setup`` (shell, ``set -e``: mounts,
        copies) runs first in a mount namespace of the command's own, which no other process
        sees (the command exits with the shell's status if it fails)."""
        if self.method == "fork" and not self.allow_threads:
            running = [t.name for t in threading.enumerate()
                       if t is not threading.current_thread() and t.name not in HARMLESS_THREADS]
            if running:
                # a fork copies the lock a running thread may hold, never the thread: the
                # child could wait on it for ever
                raise RuntimeError(f"cannot fork {' '.join(argv)!r} from a process with threads "
                                   f"running ({', '.join(running)}): start it before the "
                                   f"threads, or use method='forkserver'")
        env = dict(os.environ if env is None else env)
        path = None
        if self.fresh_path:
            first = str(cwd) if argv[0] == "-m" else str(Path(argv[0]).parent)
            extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            path = [first, *extra, *_plain_sys_path(sys.executable)]
        command = _Command(list(argv), str(cwd), env, str(stdout), str(stderr or stdout), path,
                           self.project, self.new_interpreter, setup,
                           inherited_atexit=self.method == "fork")
        process = self.context.Process(target=_child, name=" ".join(argv[:3]), args=(command,))
        if self.method == "forkserver" and self.root is not None:
            _start_forkserver_in(self.root)
        process.start()
        return Child(process, argv)

    def run(self, argv: Sequence[str], *, cwd: Path, logs: Path, timeout: float,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
        """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)``'s answer
        (the command killed, and ``subprocess.TimeoutExpired`` raised, after ``timeout`` s),
        the output kept in ``logs`` (a file prefix: ``LOGS.stdout``, ``LOGS.stderr``)."""
        out, err = Path(f"{logs}.stdout"), Path(f"{logs}.stderr")
        for path in (out, err):
            path.write_bytes(b"")
        child = self.start(argv, cwd=cwd, stdout=out, stderr=err, env=env)
        try:
            status = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(list(argv), status, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))


@lru_cache(maxsize=1)
def _plain_sys_path(executable: str) -> tuple[str, ...]:
    """``sys.path`` of a plain ``python`` here, less its first entry (the script's folder) and
    this process's ``PYTHONPATH`` (a command puts its own environment's there)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                           capture_output=True, text=True, check=True, env=env)
    return tuple(json.loads(probe.stdout)[1:])


def _start_forkserver_in(root: Path) -> None:
    """Start ``multiprocessing``'s server process (if it is not running) in folder ``root``."""
    # the server gets this process's sys.path: a relative entry of it ('' under `python -c`,
    # pytest-xdist's workers) finds modules in the server's working folder, whatever folder
    # this process is in now
    here = os.getcwd()
    os.chdir(root)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.chdir(here)


def _found_at(name: str) -> str | None:
    """The file a fresh ``import name`` would load, through ``sys.meta_path`` and the
    current ``sys.path`` (None: not found)."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = None if find_spec is None else find_spec(name, None)
        if spec is not None:
            return spec.origin
    return None


def _forget_if_found_elsewhere(project: str) -> None:
    """Forget the preloaded modules of package ``project`` unless ``import project`` on this
    process's path finds the same file: the command then imports it as a plain ``python``
    does (another copy, or an ImportError)."""
    loaded = sys.modules.get(project)
    if loaded is None or _found_at(project) == getattr(loaded, "__file__", None):
        return
    for name in [n for n in sys.modules if n == project or n.startswith(project + ".")]:
        del sys.modules[name]


def _as_a_new_interpreter() -> None:
    """Logging and warnings as a new interpreter has them: a record of WARNING and above, and
    a warning shown once per place, are printed on stderr."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    warnings.resetwarnings()  # then Python's default filters, in its order
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning,
                     DeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = _show_warning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` as Python's own: on stderr (a test runner's records them)."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def _in_a_mount_namespace_of_its_own(setup: str) -> None:
    """Enter a private mount namespace and run the shell ``setup`` there (``SystemExit`` with
    the shell's status if it fails)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    # as `unshare -m --propagation private`: no mount of this namespace reaches others
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    code = subprocess.run(["sh", "-c", f"set -e; {setup}"]).returncode
    if code != 0:
        raise SystemExit(code)


def _child(command: _Command) -> None:
    """The forked process: become ``python *command.argv`` (see the module's docstring).

    Ends with ``SystemExit``, whose code ``multiprocessing`` makes the exit status as Python
    does (None: 0, a number: itself, anything else printed on stderr: 1)."""
    # what the forking process imported lives as long as this one: no collection need walk it
    # (a walk would also copy every page shared with that process), and none of its garbage
    # (a temporary folder's finalizer) is finalized here
    gc.freeze()
    if command.inherited_atexit:
        # the forking process's handlers (its temporary folders' removal among them): its own
        # to run, not this command's
        atexit._clear()  # type: ignore[attr-defined]  # private: not in typeshed
    # the command's children inherit these too; nothing to read on the standard input
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, command.stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
                            (2, command.stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
        target = os.open(name, flags, 0o644)
        os.dup2(target, fd)
        os.close(target)
    # line-buffered (they are read while the command runs), kept until the process ends
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    if command.new_interpreter:
        _as_a_new_interpreter()
    code: str | int | None = 1
    try:
        os.chdir(command.cwd)
        os.environ.clear()
        os.environ.update(command.env)
        if command.setup is not None:
            _in_a_mount_namespace_of_its_own(command.setup)
        if command.path is not None:
            sys.path[:] = command.path
        importlib.invalidate_caches()
        if command.project is not None:
            _forget_if_found_elsewhere(command.project)
        if command.argv[0] == "-m":
            sys.argv = command.argv[1:]
            runpy.run_module(command.argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(command.argv)
            runpy.run_path(command.argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # as Python ends on one: its traceback, then the threads and atexit
        traceback.print_exc()
    finally:
        # as the interpreter ends: wait for non-daemon threads, then the atexit handlers
        threading._shutdown()  # type: ignore[attr-defined]  # private: not in typeshed
        atexit._run_exitfuncs()
    sys.exit(code)
