"""``python -m evaluation serve`` as a child process on 127.0.0.1, for the benchmark and tests.

Used by ``bench_server.py`` and the server's crash test (which imports it the same way as
``_postgres.py``): the server runs exactly as an organizer starts it, in its own process, so it
can be measured apart from the clients and killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from benchmarks._preloaded import Child, PreloadedStarter

REPO = Path(__file__).resolve().parents[1]


class ServeProcess:
    """A running ``python -m evaluation serve``; its output goes to ``log``.

    Parameters
    ----------
    competition : Path
        The competition file.
    db_url : str
        The database URL.
    log : Path
        File that receives the server's stdout and stderr (appended to).
    port : int, optional
        Port on 127.0.0.1 (default: a free one).
    start_timeout : float
        Seconds to wait for ``GET /healthz`` to answer 200.
    args : sequence of str
        More options of ``serve`` (e.g. ``["--workers", "2"]``).
    starter : PreloadedStarter, optional
        Start the command with it (``_preloaded.py``: forked from a process that imported the
        server once) instead of as a fresh interpreter (the default, as an organizer does).
    """

    def __init__(self, competition: Path, db_url: str, log: Path, *, port: int | None = None,
                 start_timeout: float = 60.0, args: Sequence[str] = (),
                 starter: PreloadedStarter | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(log)
        argv = [sys.executable, "-m", "evaluation", "serve", "--competition", str(competition),
                "--db", db_url, "--host", "127.0.0.1", "--port", str(self.port), *args]
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get(
            "PYTHONPATH", "")}
        self.process: subprocess.Popen | Child
        if starter is not None:
            self.process = starter.start(argv[1:], cwd=REPO, stdout=self.log, env=env)
        else:
            with open(self.log, "ab") as out:
                self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out,
                                                stderr=subprocess.STDOUT)
        try:
            self._wait_healthy(start_timeout)
        except BaseException:
            self.kill()
            raise

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"`evaluation serve` exited with {self.process.returncode} "
                                   f"before answering: {self.log_tail()}")
            if self.healthy():
                return
            time.sleep(0.1)
        raise RuntimeError(f"`evaluation serve` did not answer /healthz within {timeout:.0f} s: "
                           f"{self.log_tail()}")

    def healthy(self) -> bool:
        """Whether ``GET /healthz`` answers 200 now."""
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                return response.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def kill(self) -> None:
        """SIGKILL: the process ends at once, without any shutdown of its own."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM (uvicorn's graceful shutdown), SIGKILL if it is still there after 20 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server printed."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
