"""``python -m evaluation reproduce``: re-run a leaderboard submission from its checkout."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from evaluation.errors import ConfigError

#: Exit statuses of this command (the harness's 2 and 3 keep their meaning).
EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
#: Where environments are kept with --keep-env, unless --env-cache says otherwise.
DEFAULT_ENV_CACHE = Path.home() / ".cache" / "evalrs" / "reproduce-envs"

EXIT_HELP = """\
exit status:
  0    reproduced (the verdict was sent)
  1    not reproduced (the verdict was sent), or --private asked for and the private folds
       could not be evaluated
  2    bad arguments or configuration (the message says what and how to fix it)
  3    the server refused a call or could not be reached
"""


def register(subparsers) -> None:
    """Add the ``reproduce`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "reproduce",
        help="re-run a submission from the participant's checkout and send the verdict "
             "(organizers)",
        description="Fetch submission ID's upload from the leaderboard, evaluate the "
                    "checkout's submission/MyModel.py in an isolated virtual environment (its "
                    "requirements.txt plus this harness) under a wall-clock and a memory "
                    "limit, compare the per-fold tests and the model fingerprint with the "
                    "upload, print the table and send the verdict (with the log's end) to the "
                    "server.",
        epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("checkout", metavar="CHECKOUT",
                   help="the participant's repository (with submission/MyModel.py)")
    p.add_argument("--submission", required=True, type=int, metavar="ID",
                   help="the submission's id on the leaderboard")
    p.add_argument("--server", required=True, metavar="URL",
                   help="the leaderboard's address, e.g. http://127.0.0.1:8000")
    p.add_argument("--admin-token-file", required=True, metavar="FILE",
                   help="file holding an organizer token (`admin token create`); never printed")
    p.add_argument("--private", action="store_true",
                   help="also evaluate the model on the private seed's folds and send the "
                        "private score (needs --private-seed-file)")
    p.add_argument("--private-seed-file", metavar="FILE",
                   help="file holding the private fold seed (an integer; never printed or sent)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="wall-clock limit of each evaluation, in seconds (default: 3600)")
    p.add_argument("--memory-mb", type=int, default=None, metavar="M",
                   help="address-space limit of the evaluation, in MiB (default: 8192; 0: none)")
    p.add_argument("--env", metavar="PATH",
                   help="a prepared virtual environment (with the harness installed) instead "
                        "of building one")
    p.add_argument("--keep-env", action="store_true",
                   help="keep the environment built in the cache (--env-cache) and reuse it "
                        "for checkouts with the same requirements, harness and Python")
    p.add_argument("--env-cache", metavar="DIR", default=None,
                   help=f"where --keep-env keeps environments (default: {DEFAULT_ENV_CACHE})")
    p.add_argument("--source", metavar="SOURCE",
                   help="the dataset to rebuild, when not the upload's dataset.source (e.g. the "
                        "local path of the LFM data)")
    p.add_argument("--log", metavar="FILE",
                   help="the evaluation's log (default: reproduce-ID.log in this folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, reproduce, print the table; the exit status is in ``--help``."""
    from evaluation import reproduce as rp

    timeout = rp.DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not timeout > 0:
        raise ConfigError(f"--timeout {args.timeout}: give a positive number of seconds.")
    memory_mb = rp.DEFAULT_MEMORY_MB if args.memory_mb is None else args.memory_mb
    if memory_mb < 0:
        raise ConfigError(f"--memory-mb {args.memory_mb}: give a positive number of MiB "
                          f"(0: no limit).")
    if args.submission < 1:
        raise ConfigError(f"--submission {args.submission}: a submission id is a positive "
                          f"integer.")
    if args.private != bool(args.private_seed_file):
        raise ConfigError("--private and --private-seed-file go together: give both to "
                          "evaluate the private folds, or neither.")
    checkout = rp.check_checkout(args.checkout)
    client = rp.LeaderboardClient(args.server, _read_token(args.admin_token_file))
    seed = rp.read_private_seed(args.private_seed_file) if args.private else None
    log_path = Path(args.log or f"reproduce-{args.submission}.log").resolve()
    env_dir, temporary = _environment(args, checkout, log_path)
    try:
        outcome = rp.reproduce(checkout, args.submission, client, python=rp.env_python(env_dir),
                               log_path=log_path, timeout=timeout,
                               memory_mb=memory_mb or None, private_seed=seed,
                               source=args.source,
                               log=lambda line: print(line, file=sys.stderr))
    finally:
        if temporary:
            rp.remove_env(env_dir)
    rp.print_comparison(outcome.comparison)
    print(f"sent to {client.server}: {outcome.answer.get('status', 'recorded')} "
          f"(submission {args.submission}: {outcome.verdict}); log: {log_path}")
    if args.private:
        if outcome.private_problem:
            print(f"error: {outcome.private_problem}", file=sys.stderr)
            return EXIT_NOT_REPRODUCED
        print(f"private folds: {len(outcome.private_fold_tests)} evaluated; the private score "
              f"is shown once the phase is revealed (`admin phase reveal`).")
    return EXIT_REPRODUCED if outcome.verdict == rp.REPRODUCED else EXIT_NOT_REPRODUCED


def _read_token(path: str) -> str:
    """The token in ``path`` (surrounding whitespace removed); errors never show it."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--admin-token-file {path}: cannot be read ({type(exc).__name__}); "
                          f"give the file holding the token of `admin token create`.") from None
    if not token:
        raise ConfigError(f"--admin-token-file {path} is empty; put the organizer token of "
                          f"`admin token create` in it.")
    return token


def _environment(args: argparse.Namespace, checkout: Path, log_path: Path):
    """The environment's folder and whether it is temporary (removed at the end)."""
    from evaluation import reproduce as rp

    log_path.write_bytes(b"")
    if args.env:
        env = Path(args.env)
        if not os.access(rp.env_python(env), os.X_OK):
            raise ConfigError(f"--env {args.env}: no bin/python in it; give the folder of a "
                              f"virtual environment with the harness installed.")
        return env, False
    cache = Path(args.env_cache) if args.env_cache else DEFAULT_ENV_CACHE
    env = rp.prepare_env(checkout, cache if args.keep_env else None,
                         log=lambda line: print(line, file=sys.stderr),
                         log_path=log_path.with_name(log_path.name + ".env"))
    return env, not args.keep_env
