"""A worker process whose jobs never end, for the tests that stop or kill a worker mid-job.

``python -m tests.reproduce._slow_worker URL TOKEN_FILE CHECKOUTS NAME LEASE_S`` claims jobs
through the real API (lease, heartbeats, finish) as ``python -m evaluation worker`` does, but
its run of a job prints ``running <submission id>`` and then waits forever; SIGTERM stops it
as the command does (its jobs are handed back).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from evaluation.reproduce import BatchSettings, LeaderboardClient, Worker, WorkerSettings


def _never_ends(row, payload, settings, seed):
    print(f"running {row.submission}", flush=True)
    threading.Event().wait()


def main(argv: list[str]) -> int:
    url, token_file, checkouts, name, lease_s = argv
    client = LeaderboardClient(url, Path(token_file).read_text().strip())
    settings = WorkerSettings(checkouts=Path(checkouts),
                              batch=BatchSettings(log_dir=Path(checkouts) / "logs",
                                                  env_cache=Path(checkouts) / "envs"),
                              poll_s=0.1, lease_s=float(lease_s), name=name)
    worker = Worker(client, settings, runner=_never_ends, log=lambda line: None)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    worker.run()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
