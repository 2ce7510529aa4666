"""``python -m evaluation worker``: reproduce the leaderboard's queued jobs (organizers)."""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path

from evaluation.cli.reproduce import (
    DEFAULT_ENV_CACHE,
    DEFAULT_LOG_DIR,
    EXIT_REPRODUCED,
    add_executor_options,
    add_run_options,
    add_server_options,
    budgets,
    check_executor,
    limits,
    prepared_env,
    read_token,
)
from evaluation.errors import ConfigError

EPILOG = """\
A job is queued on the leaderboard for every final selection a team marks (and for every
upload where the competition file's phase says reproduce = "every"). The worker claims jobs
with a lease that it extends while each runs, reproduces each as `reproduce` does (the model
in a bubblewrap sandbox, in the checkout's environment from --env-cache), and sends the
verdict and the end of the log. The private folds are evaluated where the job's phase needs
them; a worker without --private-seed-file takes only the other jobs.

The code of a submission comes from --checkouts DIR: DIR/<team>/<submission id>/ when it
exists, else DIR/<team>/. A missing checkout fails the job at once, with that reason (`admin
jobs retry ID` queues it again once it is there). A failure of the infrastructure (the server,
the environment, the harness) queues the job again, up to the competition's
reproduce_attempts runs. SIGTERM or Ctrl-C: the worker hands its running jobs back to the
queue and exits; a worker that dies leaves them to its leases, which run out.

exit status:
  0    stopped (a signal, or --once and the queue is empty)
  2    bad arguments or configuration
  3    no sandbox can be made on this machine (the message says how to enable one), or the
       server refused the token (or, with --once, could not be reached)
"""


def register(subparsers) -> None:
    """Add the ``worker`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "worker", help="reproduce the leaderboard's queued jobs (organizers)",
        description="Claim reproduction jobs from the leaderboard, reproduce each in a "
                    "sandbox from the organizer's checkouts, and send the verdicts, until "
                    "stopped.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_options(p)
    p.add_argument("--checkouts", metavar="DIR", default=".",
                   help="the participants' checkouts: DIR/<team>/<submission id>/ or "
                        "DIR/<team>/ (default: this folder)")
    p.add_argument("--once", action="store_true",
                   help="exit when the queue is empty and no job runs (default: wait for "
                        "more)")
    p.add_argument("--poll", type=float, default=None, metavar="S",
                   help="seconds between claims while the queue is empty (default: 10)")
    p.add_argument("--lease", type=float, default=None, metavar="S",
                   help="seconds each lease lasts from a claim or heartbeat, beaten every "
                        "third of it (default: 120); a dead worker's jobs return after it")
    p.add_argument("--name", default=None, metavar="NAME",
                   help="the worker's name in `admin jobs` (default: host:pid)")
    add_run_options(p)
    add_executor_options(p, "job")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then work until stopped; the exit status is in ``--help``."""
    from evaluation import reproduce as rp
    from evaluation.cli.reproduce import EXIT_INFRASTRUCTURE

    worker = _worker(args)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: worker.stop())
    print(f"worker {worker.settings.name}: claiming jobs from {worker.client.server} "
          f"({args.executor}, {args.jobs} at once; checkouts in {worker.settings.checkouts})",
          file=sys.stderr)
    try:
        counts = worker.run()
    except rp.SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    done = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no jobs"
    print(f"worker {worker.settings.name} stopped: {done}", file=sys.stderr)
    return EXIT_REPRODUCED


def _worker(args: argparse.Namespace):
    """The worker the arguments describe, every one checked."""
    from evaluation import reproduce as rp

    timeout, memory_mb = limits(args)
    check_executor(args)
    poll = rp.DEFAULT_POLL_S if args.poll is None else args.poll
    lease = rp.DEFAULT_LEASE_S if args.lease is None else args.lease
    if not 0 < poll <= 3600:
        raise ConfigError(f"--poll {args.poll}: give a number of seconds from 0 to 3600.")
    if not 1 <= lease <= 3600:
        raise ConfigError(f"--lease {args.lease}: give a number of seconds from 1 to 3600.")
    if args.name is not None and not re.fullmatch(r"[ -~]{1,128}", args.name):
        raise ConfigError(f"--name {args.name!r}: give 1 to 128 printable ASCII characters "
                          f"(the name `admin jobs` shows).")
    checkouts = Path(args.checkouts).resolve()
    if not checkouts.is_dir():
        raise ConfigError(f"--checkouts {args.checkouts}: no such folder; give the folder "
                          f"with one folder per team (DIR/<team>/ or DIR/<team>/<id>/).")
    client = rp.LeaderboardClient(args.server, read_token(args.admin_token_file))
    seed = rp.read_private_seed(args.private_seed_file) if args.private_seed_file else None
    batch = rp.BatchSettings(
        log_dir=Path(args.log_dir or DEFAULT_LOG_DIR).resolve(),
        env=prepared_env(args.env) if args.env else None,
        env_cache=Path(args.env_cache).resolve() if args.env_cache else DEFAULT_ENV_CACHE,
        timeout=timeout, memory_mb=memory_mb or None, source=args.source,
        unsafe_no_sandbox=budgets(args)["unsafe_no_sandbox"], index_url=args.index_url,
        allow_sdists=args.allow_sdists)
    settings = rp.WorkerSettings(
        checkouts=checkouts, batch=batch, executor=args.executor, jobs=args.jobs,
        num_cpus=args.ray_num_cpus, poll_s=poll, lease_s=lease, once=args.once,
        private_seed=seed, **({"name": args.name} if args.name else {}))
    return rp.Worker(client, settings, log=lambda line: print(line, file=sys.stderr))
