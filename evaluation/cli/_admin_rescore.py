"""``admin rescore``: score a phase's submissions again after a harness fix, see what changes,
and apply it.

``admin rescore --phase P`` queues a rescore (a job per scored submission, under this
harness's version; refused while one of the phase is open), waits ``--wait`` seconds at most
for the workers, and prints the table of what would change: old and new score, rank and tier
(the board's paired statistics, computed for the table). Nothing on the board changes until
``--yes`` (given once every job ended) applies it.
``--cancel`` gives an open rescore up; ``--drop-old`` drops the numbers applied rescores
replaced from the board's CSV.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from evaluation.cli._admin_db import closing, open_database
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core import load_competition
from evaluation.server.standings import with_tiers
from evaluation.server.store import (
    RescoreLine,
    RescoreTable,
    apply_rescore,
    cancel_rescore,
    drop_old,
    rescore_table,
    start_rescore,
)

#: Seconds between two looks at a rescore while ``--wait`` waits for its workers.
POLL_S = 2.0


@closing
def rescore(args: argparse.Namespace) -> int:
    """Start, show, apply, cancel a rescore of ``args.phase`` or drop its old numbers;
    ConfigError (exit 2) for a refusal (no such phase, a rescore open already, jobs still
    running). Exit status 3 when the table is shown but not applied: jobs still running."""
    store = open_database(args, competition=load_competition(args.competition))
    try:
        if args.drop_old:
            dropped = drop_old(store, args.phase)
            print(f"phase {args.phase!r}: the previous numbers of {dropped} submission(s) "
                  f"dropped from the board; the rescores' records keep them")
            return 0
        if args.cancel:
            table = cancel_rescore(store, args.phase)
            print(f"rescore {table.rescore_id} of phase {args.phase!r} cancelled: the board "
                  f"keeps its numbers")
            return 0
        table = _current(store, args)
        table = with_tiers(store, _wait(store, table, args.wait))
        if args.yes and table.state == "ready":
            # the tiers as computed before: once applied, the board's own are being computed
            tiers = {line.submission_id: (line.old_tier, line.new_tier) for line in table.lines}
            applied = apply_rescore(store, args.phase)
            table = replace(applied, lines=tuple(
                replace(line, old_tier=tiers.get(line.submission_id, (None, None))[0],
                        new_tier=tiers.get(line.submission_id, (None, None))[1])
                for line in applied.lines))
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}.") from None
    _print(table)
    if table.state == "running":
        print(f"\n{_waiting(table)} job(s) not scored yet: the workers take them (`python -m "
              f"evaluation worker`); run this command again (with --wait SECONDS to wait for "
              f"them). Nothing on the board changed.")
        return 3
    if table.state == "ready":
        print(f"\nnothing on the board changed: apply these numbers with `admin rescore "
              f"--phase {args.phase} --yes`, or give them up with --cancel")
    elif table.state == "applied":
        print(f"\napplied: the board shows harness {table.harness_version}'s numbers; "
              f"{table.reproductions} reproduction(s) queued again; the previous numbers stay "
              f"in the CSV until `admin rescore --phase {args.phase} --drop-old`")
    return 0


def _current(store, args: argparse.Namespace) -> RescoreTable:
    """The open rescore of the phase (``--yes``, ``--show``), else a new one."""
    if args.show or args.yes:
        try:
            table = rescore_table(store, args.phase)
        except SubmissionRejected:
            if args.show:
                raise
        else:
            if table.state in ("running", "ready") or args.show:
                return table
    return start_rescore(store, args.phase)


def _wait(store, table: RescoreTable, seconds: float) -> RescoreTable:
    """``table`` again until its jobs ended, ``seconds`` at most."""
    deadline = time.monotonic() + seconds
    while table.state == "running" and time.monotonic() < deadline:
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        table = rescore_table(store, table.phase)
    return table


def _waiting(table: RescoreTable) -> int:
    return table.counts.get("queued", 0) + table.counts.get("running", 0)


def _print(table: RescoreTable) -> None:
    counts = ", ".join(f"{n} {state}" for state, n in sorted(table.counts.items()))
    print(f"rescore {table.rescore_id} of phase {table.phase!r} under harness "
          f"{table.harness_version}: {table.state} ({counts or 'no jobs'})", file=sys.stdout)
    print(f"{'id':>6}  {'team':<20}  {'old score':>9}  {'new score':>9}  {'change':>9}  "
          f"{'rank':>9}  {'tier':>9}  versions")
    for line in table.lines:
        print(_line(line))
    print(f"{len(table.changed)} of {len(table.lines)} submission(s) change score or rank")


def _line(line: RescoreLine) -> str:
    old = _score(line.old_score)
    if line.new_score is None:
        new, change = line.job_state, ""
    else:
        new = _score(line.new_score)
        change = "" if line.old_score is None else f"{line.new_score - line.old_score:+.4f}"
    rank = f"{_rank(line.old_rank)}->{_rank(line.new_rank)}"
    if line.old_rank != line.new_rank:
        rank += " *"
    tier = f"{_rank(line.old_tier)}->{_rank(line.new_tier)}"
    if line.old_tier != line.new_tier:
        tier += " *"
    versions = f"{line.old_harness_version or '?'} -> {line.new_harness_version or '?'}"
    reason = f"  ({line.job_reason[:120]})" if line.job_reason and line.new_score is None else ""
    team = line.team if len(line.team) <= 20 else line.team[:19] + "\u2026"
    return (f"{line.submission_id:>6}  {ascii(team)[1:-1]:<20}  {old:>9}  {new:>9}  "
            f"{change:>9}  {rank:>9}  {tier:>9}  {versions}{reason}")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)
