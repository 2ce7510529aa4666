"""A job's quick stand-in run for the worker's Ray test, in a module of its own.

Ray pickles a task's function by reference to its module, and each of its worker processes
imports that module: here it is this light one (the harness's ``RowResult`` alone), not the
test module with the leaderboard server, its database and HTTP client behind it, which took
each worker seconds to import.
"""

from __future__ import annotations

import os

from evaluation.reproduce import RowResult

#: What a stand-in run reports for a job it reproduced (its log's tail added).
REPORT = {"verdict": "reproduced", "table": [], "fingerprint_matches": True}


def in_a_ray_task(row, payload, batch, seed):
    """A job's quick stand-in run, in a Ray worker process: says which process ran it."""
    return (RowResult(submission=row.submission, checkout=str(row.checkout),
                      verdict="reproduced"),
            {**REPORT, "log_tail": f"submission {row.submission} in process {os.getpid()}"})
