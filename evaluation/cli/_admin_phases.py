"""The ``admin`` commands on the phases (reveal, publish, carry, list) and the reproduction
queue.

They read the competition file and the queue's records (``evaluation.server.core`` and
``evaluation.server.store``: pandas, pydantic), which the team and token commands do not need.
"""

from __future__ import annotations

import argparse
import sys

from evaluation.cli._admin_db import closing, open_database
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core import load_competition
from evaluation.server.db import (
    Database,
    phase_names,
    publications,
    publish_phase,
    publish_warnings,
    reveal_phase,
    reveal_refusal,
    reveal_warnings,
    reveals,
    visibility,
)
from evaluation.server.store import (
    JOB_STATES,
    carried,
    carry_phase,
    job_counts,
    list_jobs,
    queue_selections,
    retry_job,
)


def _store(args: argparse.Namespace) -> Database:
    """The database of ``args.db`` with the competition of ``--competition``, if given."""
    competition = None
    if getattr(args, "competition", None) is not None:
        competition = load_competition(args.competition)
    return open_database(args, competition=competition)


@closing
def phase_reveal(args: argparse.Namespace) -> int:
    """Reveal the scores of phase ``args.name`` and freeze it; ConfigError (exit 2) when there
    is no such phase; exit 1, nothing changed, when it still takes submissions and
    ``--close-now`` is not given, or has no private score and ``--yes`` is not given."""
    store = _store(args)
    close_now = getattr(args, "close_now", False)
    if args.name in phase_names(store) and args.name not in reveals(store):
        refusal = None if close_now else reveal_refusal(store, args.name)
        if refusal is not None:
            print(f"error: {refusal}", file=sys.stderr)
            print(f"phase {args.name!r} not revealed", file=sys.stderr)
            return 1
        if not _confirmed(reveal_warnings(store, args.name), args, "revealed"):
            return 1
    revealed_at, new = reveal_phase(store, args.name, close_now=close_now)
    when = f"{revealed_at:%Y-%m-%d %H:%M:%S} UTC"
    if new:
        print(f"phase {args.name!r} revealed at {when}: its board shows the private scores and "
              f"ranks by them from now on; it takes no more uploads and its final selections "
              f"are frozen")
        if store.competition is None:
            print("note: without --competition the phase's closing time is not known; the "
                  "reveal froze it all the same", file=sys.stderr)
    else:
        print(f"phase {args.name!r} was revealed already, at {when}; nothing changed")
    return 0


@closing
def phase_publish(args: argparse.Namespace) -> int:
    """Publish the public scores of phase ``args.name``; ConfigError (exit 2) when there is no
    such phase; exit 1, nothing changed, when it has not closed or is public already and
    ``--yes`` is not given."""
    store = _store(args)
    if args.name in phase_names(store) and args.name not in publications(store) \
            and not _confirmed(publish_warnings(store, args.name), args, "published"):
        return 1
    published_at, new = publish_phase(store, args.name)
    when = f"{published_at:%Y-%m-%d %H:%M:%S} UTC"
    if new:
        print(f"phase {args.name!r} published at {when}: its board shows the public scores "
              f"to everyone; the private ones wait for `phase reveal`")
    else:
        print(f"phase {args.name!r} was published already, at {when}; nothing changed")
    return 0


@closing
def phase_carry(args: argparse.Namespace) -> int:
    """Carry the submissions of the phase that phase ``args.name`` carries from into it (its
    competition file's ``carry_from`` and ``carry``), once; ConfigError (exit 2) when there is
    no such phase, it carries from none, the phase it carries from still takes submissions, or
    it was revealed. A second carry changes nothing and says when the first was."""
    store = _store(args)
    try:
        carry = carry_phase(store, args.name)
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}.") from None
    print(carry.message)
    for sid in carry.submission_ids:
        print(f"  carried as submission {sid}")
    for sid, why in carry.skipped:
        print(f"  submission {sid} not carried: {why}")
    return 0


def _confirmed(warnings: list[str], args: argparse.Namespace, done: str) -> bool:
    """Print ``warnings`` on stderr; False (nothing to do) when there are some and ``--yes``
    was not given."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if warnings and not args.yes:
        print(f"phase {args.name!r} not {done}: add --yes to go ahead anyway", file=sys.stderr)
        return False
    return True


@closing
def phase_list(args: argparse.Namespace) -> int:
    """Print the phases and, for each, whether (and when) it was revealed, and under it which
    scores everyone sees (the visibility rule as it applies to it) and, for a phase carried
    into, what was carried and when."""
    store = _store(args)
    names, revealed, published = phase_names(store), reveals(store), publications(store)
    carries = carried(store)
    public = {} if store.competition is None else {
        p.name: p.public for p in store.competition.phases}
    if not names:
        print("no phases yet: give the competition file (--competition FILE), or start the "
              "server once (it pins the baselines on every phase)")
        return 0
    print(f"{'state':<10}  {'revealed (UTC)':<16}  phase")
    for name in names:
        at = revealed.get(name)
        state = _state(public.get(name), at is not None, name in published)
        when = f"{at:%Y-%m-%d %H:%M}" if at else "-"
        print(f"{state:<10}  {when:<16}  {name}")
        rule = visibility(public.get(name), at is not None, name in published)
        print(f"{'':<10}  scores: {rule}")
        if name in carries:
            carry = carries[name]
            print(f"{'':<10}  carried: {carry.carried} submission(s) of {carry.source!r} "
                  f"({carry.rule}) on {carry.carried_at:%Y-%m-%d %H:%M} UTC")
    return 0


def _state(public: bool | None, revealed: bool, published: bool) -> str:
    """A phase's state in one word: ``revealed``, ``published`` (its public scores shown),
    ``public`` (``public = true``: public scores shown, private ones hidden until the reveal),
    ``hidden`` (``public = false``: all scores hidden), or ``unrevealed`` (no competition file
    given, so whether it is public is not known)."""
    if revealed:
        return "revealed"
    if published:
        return "published"
    if public is None:
        return "unrevealed"
    return "public" if public else "hidden"


@closing
def jobs_list(args: argparse.Namespace) -> int:
    """Print the reproduction queue: per phase, the jobs in each state; then the jobs (of
    ``--phase``, in ``--state``; by default all but the reproduced ones) with their reasons."""
    store = _store(args)
    if args.state is not None and args.state not in JOB_STATES:
        raise ConfigError(f"--state {args.state!r}: the states are "
                          f"{', '.join(JOB_STATES)}.")
    counts = job_counts(store)
    if args.phase is not None:
        counts = {args.phase: counts.get(args.phase, dict.fromkeys(JOB_STATES, 0))}
    if not counts:
        print("no reproduction jobs yet: teams' final selections (and, where a phase says "
              "reproduce = \"every\", uploads) queue them")
        return 0
    print(f"{'phase':<16}  " + "  ".join(f"{s:>14}" for s in JOB_STATES))
    for phase, by_state in counts.items():
        print(f"{phase[:16]:<16}  " + "  ".join(f"{by_state[s]:>14}" for s in JOB_STATES))
    # by default what needs a look: every job but those reproduced (or scored) without a note
    shown = [j for j in list_jobs(store, args.phase, args.state)
             if args.state is not None or j.state not in ("reproduced", "scored") or j.reason]
    if shown:
        print()
        print(f"{'job':>5}  {'sub':>6}  {'phase':<12}  {'state':<14}  {'tries':>5}  "
              f"{'worker (lease until, UTC)':<34}  team: reason")
        for job in shown:
            print(_job_line(job))
    return 0


def _job_line(job) -> str:
    """One job as a line of ``admin jobs``."""
    lease = (f"{job.worker} ({job.lease_expires_at:%H:%M:%S})" if job.lease_expires_at
             else (job.worker or "-"))
    reason = f": {job.reason}" if job.reason else ""
    return (f"{job.job_id:>5}  {job.submission_id:>6}  {job.phase[:12]:<12}  "
            f"{job.state:<14}  {job.attempts:>5}  {lease[:34]:<34}  {job.team}{reason}")


@closing
def jobs_retry(args: argparse.Namespace) -> int:
    """Queue the failed job ``args.id`` again; ConfigError (exit 2) when there is no such job
    or it has not failed."""
    store = _store(args)
    try:
        job = retry_job(store, args.id) if 0 < args.id < 2**31 else None
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}; `admin jobs` lists the jobs.") from None
    if job is None:
        raise ConfigError(f"no reproduction job {args.id}; `admin jobs` lists the jobs.")
    print(f"job {job.job_id} (submission {job.submission_id} of team {job.team!r}) is queued "
          f"again; a worker takes it next")
    return 0


@closing
def jobs_queue(args: argparse.Namespace) -> int:
    """Queue the jobs of phase ``args.phase``'s final selections (the implicit ones of teams
    that marked none included) that have none; ConfigError (exit 2) for no such phase."""
    store = _store(args)
    try:
        ids = queue_selections(store, args.phase)
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}.") from None
    if not ids:
        print(f"every final selection of phase {args.phase!r} has a job already")
    else:
        print(f"{len(ids)} job(s) queued for phase {args.phase!r}: submissions "
              f"{', '.join(map(str, ids))}; workers take them next")
    return 0
