"""``worker``'s work: check the arguments, then claim and reproduce the queue's jobs.

Imported when the command runs (``evaluation.cli._commands``): ``worker --help`` needs
neither ``evaluation.reproduce`` nor its HTTP client.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path

from evaluation import reproduce as rp
from evaluation.cli._reproduce_run import budgets, limits, prepared_env, read_token
from evaluation.cli.reproduce import (
    DEFAULT_ENV_CACHE,
    DEFAULT_LOG_DIR,
    EXIT_INFRASTRUCTURE,
    EXIT_REPRODUCED,
    check_executor,
)
from evaluation.errors import ConfigError


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then work until stopped; the exit status is in ``--help``."""
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
