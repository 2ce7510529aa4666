"""Running a command under a wall-clock limit and a memory limit, its output to a log file.

The command runs in a session (process group) of its own, so that on timeout the whole group
(the participant's model may start processes of its own) is killed, not only its first process.
The memory limit is ``RLIMIT_AS`` (address space), set in the child before it executes the
command; a model that allocates past it gets a ``MemoryError`` (or is killed by the allocator),
and the run fails.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The bytes of a mebibyte.
MIB = 1024 * 1024
#: How long a process group gets after SIGTERM before SIGKILL.
KILL_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class Outcome:
    """How a limited command ended.

    Attributes
    ----------
    returncode : int
        The exit status (negative: killed by that signal).
    timed_out : bool
        Whether the wall-clock limit ended it.
    seconds : float
        How long it ran.
    """

    returncode: int
    timed_out: bool
    seconds: float


def run_limited(command: Sequence[str], *, cwd: str | os.PathLike, log_path: str | os.PathLike,
                timeout: float, memory_mb: int | None,
                env: Mapping[str, str] | None = None) -> Outcome:
    """Run ``command`` in ``cwd``, stdout and stderr appended to ``log_path``.

    Parameters
    ----------
    command : sequence of str
    cwd : path
    log_path : path
        Opened for appending; both streams go to it, interleaved as written.
    timeout : float
        Seconds of wall-clock time; then the process group gets SIGTERM and, after
        ``KILL_GRACE_SECONDS``, SIGKILL.
    memory_mb : int, optional
        The address-space limit in MiB (None: no limit).
    env : mapping, optional
        The child's environment (default: this process's).
    """
    limit = None if memory_mb is None else int(memory_mb) * MIB

    def limit_memory() -> None:  # runs in the child, between fork and exec
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.monotonic()
    with open(log_path, "ab") as log:
        process = subprocess.Popen(list(command), cwd=os.fspath(cwd), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   env=None if env is None else dict(env),
                                   start_new_session=True, preexec_fn=limit_memory)
        try:
            returncode = process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(process)
            returncode, timed_out = process.returncode, True
        except BaseException:  # Ctrl-C: leave no model running behind
            _kill_group(process)
            raise
    return Outcome(returncode=returncode, timed_out=timed_out,
                   seconds=time.monotonic() - started)


def _kill_group(process: subprocess.Popen) -> None:
    """SIGTERM the process's group, then SIGKILL what is left after a grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # the leader is gone; children that ignored SIGTERM still get SIGKILL
                continue
        except subprocess.TimeoutExpired:
            continue
    process.wait()


def log_tail(path: str | os.PathLike, max_bytes: int) -> str:
    """The last ``max_bytes`` bytes of the file as text (at a character boundary)."""
    path = Path(path)
    if not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - max_bytes))
        data = f.read()
    text = data.decode("utf-8", errors="replace")
    # "replace" may have widened a cut character; trim back under the bound
    while len(text.encode("utf-8")) > max_bytes:
        text = text[1:]
    return text
