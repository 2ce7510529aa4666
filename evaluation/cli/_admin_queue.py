"""``admin queue``: the workers' queue as the organizers see it.

Counts per phase and state, how long a job of each kind takes and how many wait, the oldest
waiting job, each worker (its last heartbeat and the jobs it holds now), the running jobs that
look stuck (silent past the expected heartbeat interval while their lease runs, or with a lease
that ran out) and the failed jobs with their reasons (``queue_overview`` of
``evaluation.server.store``; ``GET /queue`` shows the same as a page).
"""

from __future__ import annotations

import argparse
import json

from pydantic import TypeAdapter

from evaluation.cli._admin_db import closing, open_database
from evaluation.server.store import JOB_STATES, QueueOverview, queue_overview


@closing
def queue_show(args: argparse.Namespace) -> int:
    """Print the queue's overview (``--json``: as the API answers it); 0."""
    overview = queue_overview(open_database(args))
    if args.json:
        print(json.dumps(_plain(overview), indent=2))
        return 0
    for line in overview_lines(overview):
        print(line)
    return 0


def overview_lines(q: QueueOverview) -> list[str]:
    """The overview as the lines ``admin queue`` prints."""
    lines = [f"queue at {q.now:%Y-%m-%d %H:%M:%S} UTC"]
    if q.counts:
        lines.append(f"{'phase':<16}  " + "  ".join(f"{s:>14}" for s in JOB_STATES))
        for phase, states in q.counts.items():
            lines.append(f"{phase[:16]:<16}  " + "  ".join(f"{states[s]:>14}"
                                                          for s in JOB_STATES))
    else:
        lines.append("no jobs yet")
    for e in q.estimates:
        took = "unknown (none finished yet)" if e.median_s is None \
            else f"{e.median_s:.1f} s (median of the last {e.timed})"
        lines.append(f"{e.kind}: {e.queued} queued, {e.running} running; a job takes {took}")
    oldest = q.oldest_waiting
    lines.append("oldest waiting job: none" if oldest is None else
                 f"oldest waiting job: {oldest.job_id} ({oldest.kind} of submission "
                 f"{oldest.submission_id}, team {oldest.team}, phase {oldest.phase}), queued "
                 f"{oldest.queued_at:%Y-%m-%d %H:%M:%S} UTC, "
                 f"{(q.now - oldest.queued_at).total_seconds():.0f} s ago")
    lines.append(f"workers: {len(q.workers)}")
    for w in q.workers:
        beat = "never" if w.last_heartbeat is None \
            else f"{w.last_heartbeat:%Y-%m-%d %H:%M:%S} UTC " \
                 f"({(q.now - w.last_heartbeat).total_seconds():.0f} s ago)"
        jobs = ", ".join(str(j) for j in w.current_jobs) or "none"
        lines.append(f"  {w.name}: last heartbeat {beat}; current jobs: {jobs}")
    lines.append(f"stuck jobs: {len(q.stuck)}")
    for s in q.stuck:
        lines.append(f"  STUCK job {s.job.job_id} ({s.job.kind}, worker {s.job.worker}): "
                     f"{s.problem}, no heartbeat for {s.silent_s:.0f} s (beats every "
                     f"{s.interval_s:.0f} s), lease left {s.lease_left_s:.0f} s")
    lines.append(f"failed jobs: {len(q.failed)}")
    for j in q.failed:
        lines.append(f"  {j.job_id} ({j.kind} of submission {j.submission_id}, team {j.team}, "
                     f"phase {j.phase}): {j.reason or 'no reason recorded'}")
    return lines


def _plain(q: QueueOverview) -> dict:
    """The overview as JSON-ready data, as ``GET /api/v1/queue`` answers it."""
    return TypeAdapter(QueueOverview).dump_python(q, mode="json")
