"""The harness's commands as child processes forked from one that imported them once.

A benchmark whose smoke mode starts Python processes of the harness (``python -m evaluation
serve``, its restarts, workers, admin commands) pays each one's imports (about 3 CPU-s for the
server's). ``PreloadedStarter`` starts them instead from a process that imported the modules
given once: with ``method="forkserver"``, a server process (``multiprocessing``'s, started on
first use) that several commands share; with ``method="fork"``, this very process, which
imports them at once (for a benchmark that imported most of them anyway and starts its command
before any thread of its own). Each command is still a process of its own, with its own
working folder, output and exit status, stopped by SIGTERM and killed by SIGKILL as a fresh one
is; only its imports are done.
``Child`` answers as much of ``subprocess.Popen`` as the benchmarks use (``pid``, ``poll``,
``wait``, ``returncode``, ``send_signal``, ``terminate``, ``kill``).

The full modes start fresh interpreters (``subprocess``), as an organizer does: a fork from a
preloaded process would change what they measure (a restart's time, a process's memory).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Threads a fork may leave behind: tqdm's monitor only looks at the progress bars every 10 s
#: (under tqdm's own lock), and the commands started here draw no bar.
HARMLESS_THREADS = frozenset({"tqdm_monitor"})


def _child(argv: list[str], cwd: str, env: dict[str, str], stdout: str, stderr: str) -> None:
    """The forked process: become ``python *argv`` (a script, or ``-m module``)."""
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
                            (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
        target = os.open(name, flags, 0o644)
        os.dup2(target, fd)
        os.close(target)
    # line-buffered, as the logs of a fresh interpreter on a file are read while it runs
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        # as the interpreter ends: non-daemon threads joined before the exit status is given
        threading._shutdown()  # type: ignore[attr-defined]


class Child:
    """A started command; the ``subprocess.Popen`` methods the benchmarks call."""

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
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class PreloadedStarter:
    """Starts ``python *argv`` commands forked from a process that imported ``preload`` (see
    the module: ``method`` is ``"forkserver"`` or ``"fork"``)."""

    def __init__(self, preload: Sequence[str], method: str = "forkserver") -> None:
        self.method = method
        self.context = multiprocessing.get_context(method)
        if method == "forkserver":
            self.context.set_forkserver_preload(list(preload))
        else:
            for name in preload:
                importlib.import_module(name)

    def start(self, argv: Sequence[str], *, cwd: Path, stdout: Path, stderr: Path | None = None,
              env: Mapping[str, str] | None = None) -> Child:
        """``python *argv`` (without the interpreter) in ``cwd``, its output appended to
        ``stdout`` and ``stderr`` (default: ``stdout`` too)."""
        running = [t.name for t in threading.enumerate()
                   if t is not threading.current_thread() and t.name not in HARMLESS_THREADS]
        if self.method == "fork" and running:
            # a fork copies the lock a running thread may hold, never the thread: the child
            # could wait on it for ever
            raise RuntimeError(f"cannot fork {' '.join(argv)!r} from a process with threads "
                               f"running ({', '.join(running)}): start it before the threads, "
                               f"or use method='forkserver'")
        process = self.context.Process(
            target=_child, name=" ".join(argv[:3]),
            args=(list(argv), str(cwd), dict(os.environ if env is None else env), str(stdout),
                  str(stderr or stdout)))
        process.start()
        return Child(process, argv)

    def run(self, argv: Sequence[str], *, cwd: Path, logs: Path, timeout: float
            ) -> subprocess.CompletedProcess:
        """``subprocess.run(argv, capture_output=True, text=True)``'s answer, the output kept
        in ``logs`` (a file prefix)."""
        out, err = Path(f"{logs}.stdout"), Path(f"{logs}.stderr")
        for path in (out, err):
            path.write_bytes(b"")
        child = self.start(argv, cwd=cwd, stdout=out, stderr=err)
        try:
            status = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(list(argv), status, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))
