"""``python -m evaluation submissions``: list the team's own submissions on the leaderboard."""

from __future__ import annotations

import argparse
from urllib.parse import urlencode

from evaluation.cli.team import SUBMISSIONS_PATH, add_team_arguments, team_client
from evaluation.contract import HttpClient
from evaluation.errors import UploadError


def register(subparsers) -> None:
    """Add the ``submissions`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "submissions", help="list your team's submissions on the leaderboard",
        description="List the submissions of the team whose token is UPLOAD_TOKEN (upload.env "
                    "or the environment), newest first: id, time (UTC), phase, the scores the "
                    "phase shows, the final mark, the reproduction (the state of its job: "
                    "queued, running, reproduced, not reproduced, failed), its place in the "
                    "workers' queue (a queued job's position among the jobs of its kind and "
                    "its estimated start: the median duration of the last jobs of its kind "
                    "times the rounds before it; unknown before any finished), the run's name "
                    "and the upload's description; under a reproduced submission, its result "
                    "under each of the competition's alternative protocols (status, score, "
                    "cost, why it failed); --log ID shows a submission's "
                    "reproduction: its state, the reason, its jobs' places in the queue, its "
                    "alternative protocols and the end of its log. Exit status 3 when the "
                    "server refuses or cannot be reached.")
    add_team_arguments(p)
    p.add_argument("--phase", default=None, metavar="PHASE",
                   help="list the submissions of this phase only (default: every phase)")
    p.add_argument("--log", type=int, metavar="ID", default=None,
                   help="show the reproduction of your submission ID: its state, why it "
                        "failed (or was not reproduced), and the end of its log")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the team's submissions; 0 when listed.

    Raises
    ------
    ConfigError
        When neither ``--server`` nor ``UPLOAD_URL`` says where the server is, or no
        ``UPLOAD_TOKEN`` is set.
    UploadError
        When the server cannot be reached or does not answer with a listing.
    """
    client = team_client(args, "the listing shows a team's own submissions, found by its token")
    path = SUBMISSIONS_PATH if args.phase is None \
        else f"{SUBMISSIONS_PATH}?{urlencode({'phase': args.phase})}"
    reply = client.send("GET", path)
    answer = reply.json()
    if not reply.ok or not isinstance(answer, dict) \
            or not isinstance(answer.get("submissions"), list):
        raise UploadError(f"the server did not list the submissions (HTTP {reply.status}): "
                          f"{client.show(reply.body.decode('utf-8', 'replace'))}")
    listing = answer["submissions"]
    if args.log is not None:
        return _show_log(listing, args.log, client)
    if not listing:
        print("no submissions yet")
        return 0
    print(f"{'id':>6}  {'submitted (UTC)':<16}  {'phase':<12}  {'score':>8}  {'private':>8}  "
          f"{'final':<5}  {'reproduction':<14}  {'queue (position, start UTC)':<28}  label")
    for item in listing:
        print(_line(item, client))
        if item.get("failure_cause"):
            print("        " + _failure(item, client))
        for line in _alternatives(item, client, 200):
            print("        " + line)
    lengths = answer.get("queue_length")
    # a line only when jobs wait: the listing's lines stay one per submission otherwise
    if isinstance(lengths, dict) and any(isinstance(n, int) and n > 0
                                         for n in lengths.values()):
        print("the workers' queue: " + ", ".join(
            f"{client.show(str(n), 10)} {client.show(str(kind), 12)} job(s)"
            for kind, n in sorted(lengths.items())) + " waiting in all (every team's)")
    return 0


def _failure(item: dict, client: HttpClient) -> str:
    """Why a submission failed, whose reason it was, and whether it counts against the daily
    limit (every server-given text escaped)."""
    cause = str(item.get("failure_cause"))
    whose = {"platform": "the platform's reason", "team": "the upload's own reason"}.get(
        cause, "a reason of unknown kind")
    counted = ("counts against your daily limit" if item.get("counted", True)
               else "not counted against your daily limit")
    return (f"failed for {whose} ({counted}): "
            f"{client.show(str(item.get('failure') or ''), 300)}")


def _line(item: dict, client: HttpClient) -> str:
    """One submission as a line of the listing (every server-given text escaped)."""
    label = " / ".join(client.show(str(item[k]), 80) for k in ("name", "description")
                       if item.get(k))
    if item.get("carried_from"):  # entered its phase when it opened, not uploaded to it
        label = f"(carried from {client.show(str(item['carried_from']), 40)}) " + label
    when = str(item.get("submitted_at", ""))[:16].replace("T", " ")
    return (f"{item.get('submission_id', '?'):>6}  {client.show(when, 16):<16}  "
            f"{client.show(str(item.get('phase')), 12):<12}  "
            f"{_score(item.get('leaderboard_score')):>8}  "
            f"{_score(item.get('private_leaderboard_score')):>8}  "
            f"{'yes' if item.get('final') else '-':<5}  "
            f"{client.show(_state(item), 14):<14}  "
            f"{client.show(_queue(item), 28):<28}  {label or '-'}")


def _queue(item: dict) -> str:
    """A submission's jobs still waiting or running: "score #3 ~12:04", "reproduce running";
    "-" when none."""
    shown = []
    for job in item.get("queue") or ():
        if not isinstance(job, dict):
            continue
        if job.get("state") == "queued":
            start = job.get("estimated_start")
            when = f"~{str(start)[11:16]}" if isinstance(start, str) else "start unknown"
            shown.append(f"{job.get('kind')} #{job.get('position')} {when}")
        elif job.get("state") == "running":
            shown.append(f"{job.get('kind')} running")
    return "; ".join(shown) or "-"


def _alternatives(item: dict, client: HttpClient, reason_chars: int) -> list[str]:
    """A submission's results under the alternative protocols, one line each: "alternative
    seed-7 (fold_seed): scored, score 0.1234, 12.3 s (train 8.0 s, predict 2.1 s), peak
    512 MiB"; a failed one with its reason (every server-given text escaped)."""
    lines = []
    for alt in item.get("alternatives") or ():
        if not isinstance(alt, dict):
            continue
        seconds, peak = alt.get("seconds"), alt.get("peak_rss_mib")
        parts = [f"{_figure(seconds)} s"]
        if isinstance(alt.get("train_seconds"), int | float) \
                or isinstance(alt.get("predict_seconds"), int | float):
            parts[0] += (f" (train {_figure(alt.get('train_seconds'))} s, predict "
                         f"{_figure(alt.get('predict_seconds'))} s)")
        if isinstance(peak, int | float):
            parts.append(f"peak {peak:.0f} MiB")
        line = (f"alternative {client.show(str(alt.get('protocol')), 64)} "
                f"({client.show(str(alt.get('kind')), 20)}): "
                f"{client.show(str(alt.get('status')), 10)}, score "
                f"{'-' if alt.get('status') == 'failed' else _score(alt.get('score'))}, "
                + ", ".join(parts))
        if alt.get("reason"):
            line += f"; reason: {client.show(str(alt['reason']), reason_chars)}"
        lines.append(line)
    return lines


def _figure(value: object) -> str:
    """A cost in seconds with one decimal; "?" when unknown."""
    return f"{value:.1f}" if isinstance(value, int | float) else "?"


def _state(item: dict) -> str:
    """A submission's reproduction: its job's state, else the latest verdict ("pending"
    before any)."""
    return str(item.get("reproduction_status") or item.get("reproduction"))


def _show_log(listing: list, submission_id: int, client: HttpClient) -> int:
    """Print the reproduction of the team's submission ``submission_id``: its state, the
    reason and its log's end (every server-given text escaped, line by line)."""
    item = next((i for i in listing if isinstance(i, dict)
                 and i.get("submission_id") == submission_id), None)
    if item is None:
        raise UploadError(f"--log {submission_id}: your team has no submission "
                          f"{submission_id}; `python -m evaluation submissions` lists them.")
    print(f"submission {submission_id}: reproduction {client.show(_state(item), 20)}")
    if item.get("reproduction_reason"):
        print(f"reason: {client.show(str(item['reproduction_reason']), 2000)}")
    # the jobs still to come: a finished one's verdict is the line above
    for job in item.get("queue") or ():
        if isinstance(job, dict) and job.get("state") in ("queued", "running"):
            place = "" if job.get("position") is None else f", position {job['position']}"
            start = job.get("estimated_start") or ("unknown" if job.get("state") == "queued"
                                                   else None)
            print(client.show(f"{job.get('kind')} job {job.get('job_id')}: {job.get('state')}"
                              f"{place}" + (f", estimated start {start}" if start else "")
                              + f" ({job.get('basis')})", 400))
    for line in _alternatives(item, client, 2000):
        print(line)
    tail = item.get("log_tail")
    if not tail:
        print("no reproduction log yet")
        return 0
    print("end of the reproduction's log:")
    for line in str(tail).splitlines():
        print("  " + client.show(line, 1000))
    return 0


def _score(value: object) -> str:
    """A score with four decimals; "hidden" when the server does not show it."""
    return f"{value:.4f}" if isinstance(value, int | float) else "hidden"
