"""Helpers of the worker's tests (``python -m evaluation worker`` against a live leaderboard):
checkouts that pass as a team's, the worker's settings, and the queue as the organizers see it."""

from __future__ import annotations

from pathlib import Path

import httpx

from evaluation.reproduce import BatchSettings, WorkerSettings

JOBS = "/api/v1/jobs"
SUBMIT = "/api/v1/submissions"


def checkout_of(root: Path, team: str) -> Path:
    """A folder that passes as a team's checkout (its model file exists; nothing runs it)."""
    (root / team / "submission").mkdir(parents=True)
    (root / team / "submission" / "MyModel.py").write_text("# the model\n")
    return root / team


def settings(root: Path, name: str, **changes) -> WorkerSettings:
    """A worker's settings: checkouts in ``root``, quick polls, a 30 s lease, ``changes``."""
    batch = BatchSettings(log_dir=root / "logs", env_cache=root / "envs")
    return WorkerSettings(**{"checkouts": root, "batch": batch, "poll_s": 0.05,
                             "lease_s": 30.0, "name": name, **changes})


def jobs(url: str, admin: str) -> dict[int, dict]:
    """The queue's jobs by submission id, as the organizers' endpoint lists them."""
    answer = httpx.get(url + JOBS, headers={"Authorization": f"Bearer {admin}"}).json()
    return {j["submission_id"]: j for j in answer["jobs"]}
