"""``python -m evaluation worker``: reproduce the leaderboard's queued jobs (organizers)."""

from __future__ import annotations

import argparse

from evaluation.cli._commands import command
from evaluation.cli.reproduce import add_executor_options, add_run_options, add_server_options

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
    p.set_defaults(func=command("_worker_run", "run"))
