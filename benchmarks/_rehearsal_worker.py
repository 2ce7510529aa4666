"""A reproduction worker for the season's dress rehearsal (``bench_competition.py``).

``python benchmarks/_rehearsal_worker.py URL TOKEN_FILE CHECKOUTS NAME LEASE_S RUN_S SEED``
runs ``evaluation.reproduce.Worker`` as ``python -m evaluation worker`` does (the local
executor: each job in a thread of this process; claims, leases, heartbeats and finishes
through the organizers' API), with two differences, both said in the benchmark's report:

* a scoring job is the real one (``score_upload``: the uploaded predictions scored with the
  organizers' data);
* a reproduction's run is a stand-in: it takes ``RUN_S`` seconds and reports "reproduced",
  with the private folds' tests derived from the upload's (each fold's test times a factor
  fixed by the submission's id), instead of building the team's environment and running its
  model in a sandbox (what ``bench_env.py`` and the live reproduction tests measure). What is
  rehearsed is the queue: who takes which job, leases that run out, takeovers, results
  recorded once.

SIGTERM stops it as the command stops (its running jobs handed back); SIGKILL is the crash.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from evaluation.challenge import LEADERBOARD_TESTS  # noqa: E402
from evaluation.reproduce import (  # noqa: E402
    BatchSettings,
    LeaderboardClient,
    RowResult,
    Worker,
    WorkerSettings,
)


def stand_in_runner(run_s: float):
    """A run that takes ``run_s`` seconds and reproduces the upload (see the module)."""

    def run(row, payload, settings, seed):
        time.sleep(run_s)
        folds = sorted(payload["results"]["folds"], key=lambda f: f["fold"])
        report = {"verdict": "reproduced", "table": [], "fingerprint_matches": True,
                  "log_tail": f"stand-in run of submission {row.submission}\n"
                              f"verdict: reproduced"}
        if row.private:
            factor = 1.0 + 0.1 * ((row.submission * 7919) % 101) / 100
            report.update(private=True, private_fold_tests=[
                {t: float(f["tests"][t]) * (factor if t in ("HIT_RATE", "MRR") else 1.0)
                 for t in LEADERBOARD_TESTS} for f in folds])
        result = RowResult(submission=row.submission, checkout=str(row.checkout),
                           verdict="reproduced", fingerprint_ok=True, differing=0,
                           seconds=run_s, private=row.private)
        return result, report

    return run


def main(argv: list[str]) -> int:
    url, token_file, checkouts, name, lease_s, run_s, seed = argv
    client = LeaderboardClient(url, Path(token_file).read_text().strip())
    folder = Path(checkouts)
    settings = WorkerSettings(checkouts=folder,
                              batch=BatchSettings(log_dir=folder / f"logs-{name}",
                                                  env_cache=folder / "envs"),
                              poll_s=0.2, lease_s=float(lease_s), name=name,
                              private_seed=int(seed))
    worker = Worker(client, settings, runner=stand_in_runner(float(run_s)),
                    log=lambda line: print(line, flush=True))
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    counts = worker.run()
    print(f"stopped: {counts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
