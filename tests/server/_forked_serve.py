"""``serve`` in a process of its own, in a private mount namespace, forked from the test's process.

The tests of a read-only or full disk need ``serve`` on a file system of their own (a tmpfs in
a mount namespace that only its process sees) and look at what the process says and answers.
A new interpreter would import the server's libraries again (about 3 CPU-s of each start's
3.5); a child forked from the test's process, which has imported them already, runs the same
command (``evaluation.cli.main(["serve", ...])``: the checks, the messages and the exit status
of ``python -m evaluation serve``) in a process of its own, which the test stops, kills or
enters (``nsenter``) as it would the interpreter. The start of ``python -m evaluation serve``
as a new interpreter is the load test's (``benchmarks/_serve.py``, ``serve --workers``); the
crash test kills a forked one (without a namespace of its own).
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

from evaluation.cli import main

#: ``unshare(2)``'s flag for a mount namespace of the calling process's own.
CLONE_NEWNS = 0x00020000


class ForkedServe:
    """A forked child that enters a mount namespace of its own, runs the shell ``setup`` there
    (mounts, copies; ``set -e``), then ``serve`` with ``args`` until it is stopped (``setup``
    None: ``serve`` at once, in the test's mount namespace).

    The child's standard output and error (``setup``'s too) go to ``log``; it exits with the
    command's exit status (the shell's when ``setup`` fails, 1 on anything unexpected, with its
    traceback in ``log``). Used as ``subprocess.Popen`` is: ``pid``, ``poll``, ``wait``,
    ``terminate``, ``kill``.
    """

    def __init__(self, setup: str | None, args: list[str], log: Path) -> None:
        self.returncode: int | None = None
        pid = os.fork()
        if pid == 0:  # the child: never returns into the test
            _child(setup, args, log)
        self.pid = pid

    def poll(self) -> int | None:
        """The exit status once the child has ended (a signal ``-N``), else None."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        """Wait for the end of the child (``subprocess.TimeoutExpired`` after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"serve (process {self.pid})", timeout)
            time.sleep(0.02)
        return code

    def terminate(self) -> None:
        """SIGTERM: uvicorn's graceful shutdown."""
        if self.poll() is None:
            os.kill(self.pid, 15)

    def kill(self) -> None:
        """SIGKILL."""
        if self.poll() is None:
            os.kill(self.pid, 9)


def _as_a_new_interpreter() -> None:
    """Logging and warnings as a new interpreter has them, not as the test's runner set them
    (its handlers keep the records; its filters and recorder keep the warnings): a record of
    WARNING and above, and a warning shown once per place, are printed on stderr."""
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


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def _child(setup: str | None, args: list[str], log: Path) -> None:
    code = 1
    try:
        # everything it prints goes to the log, as the output of a process started with it
        for fd, name, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND),
                                (2, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
            target = os.open(name, flags, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # kept until os._exit
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # kept until os._exit
        _as_a_new_interpreter()
        if setup is not None:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
            # as `unshare -m --propagation private`: no mount of this namespace reaches others
            subprocess.run(["mount", "--make-rprivate", "/"], check=True)
            code = subprocess.run(["sh", "-c", f"set -e; {setup}"]).returncode
            if code != 0:
                return  # the shell's status (os._exit below)
        code = main(["serve", *args])
    except BaseException:  # whatever it is, the test reads it in the log
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed or broken stream: nothing more to say
                pass
        os._exit(code)
