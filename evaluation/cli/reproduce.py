"""``python -m evaluation reproduce``: re-run a leaderboard submission from its checkout."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from evaluation.errors import ConfigError

#: Exit statuses of this command: each means one thing (the harness's 2 and 3 keep theirs).
EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
EXIT_BAD_ARGUMENTS = 2
EXIT_INFRASTRUCTURE = 3
EXIT_INTERNAL = 4
#: Where environments are kept with --keep-env, unless --env-cache says otherwise.
DEFAULT_ENV_CACHE = Path.home() / ".cache" / "evalrs" / "reproduce-envs"
#: Where --many writes its logs and report, unless --log-dir says otherwise.
DEFAULT_LOG_DIR = "reproduce-logs"
#: The options of one reproduction that --many does not take, and what it takes instead.
_SINGLE_ONLY = {"submission": "the CSV's submission column", "log": "--log-dir",
                "keep_env": "nothing (--many always keeps environments in --env-cache)"}
#: The options of --many that one reproduction does not take.
_MANY_ONLY = {"jobs": 1, "ray_num_cpus": 1.0, "log_dir": None, "report": None,
              "executor": "local"}

EXIT_HELP = """\
exit status:
  0    reproduced (the verdict was sent); with --many: every row reproduced
  1    not reproduced (the verdict was sent), or --private asked for and the private folds
       could not be evaluated; with --many: at least one row so, and none in error
  2    bad arguments or configuration (the message says what and how to fix it); with
       --many: any line of the CSV file (nothing is run then)
  3    the server refused a call or could not be reached, or no sandbox can be made on this
       machine (the message says how to enable one); with --many: at least one row could
       not be done (server, sandbox, environment build, harness error), the others were
  4    an internal error of the harness (its traceback is printed)

The participant's code runs only inside a bubblewrap sandbox (its own PID, user and network
namespaces, uid 65534, read-only environment and inputs, a size-limited scratch, budgets for
its whole process tree) and only trains and predicts: the predictions are validated and
scored here. Without bubblewrap the command refuses to run; --unsafe-no-sandbox runs the
model unconfined anyway, with a warning in the output and in the log sent to the server.

--many FILE reproduces every line of a CSV file with the header
'submission,checkout[,private]' (checkout relative to the file's folder, or absolute; private
true/false/1/0/yes/no, empty: --private), each in its environment from --env-cache and under
its own limits, sends each verdict, prints a table and writes it as JSON (--report). Rows run
one after another (--jobs N: N at once) or, with --executor ray, one Ray task each (a local
Ray, or the cluster of RAY_ADDRESS).
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
    p.add_argument("checkout", metavar="CHECKOUT", nargs="?",
                   help="the participant's repository (with submission/MyModel.py)")
    p.add_argument("--submission", type=int, metavar="ID",
                   help="the submission's id on the leaderboard (with CHECKOUT)")
    p.add_argument("--many", metavar="CSV",
                   help="reproduce every line of this CSV file (submission,checkout[,private]) "
                        "instead of one CHECKOUT")
    add_server_options(p)
    p.add_argument("--private", action="store_true",
                   help="also evaluate the model on the private seed's folds and send the "
                        "private score (needs --private-seed-file)")
    add_run_options(p)
    p.add_argument("--keep-env", action="store_true",
                   help="keep the environment built in the cache (--env-cache) and reuse it "
                        "for checkouts with the same requirements, harness and Python")
    p.add_argument("--log", metavar="FILE",
                   help="the evaluation's log (default: reproduce-ID.log in this folder)")
    many = p.add_argument_group("with --many")
    add_executor_options(many, "row")
    many.add_argument("--report", metavar="FILE", default=None,
                      help="the table as JSON (default: reproduce-many.json in --log-dir)")
    p.set_defaults(func=run)


def add_server_options(p: argparse.ArgumentParser) -> None:
    """The leaderboard and the organizer's token (``reproduce`` and ``worker``)."""
    p.add_argument("--server", required=True, metavar="URL",
                   help="the leaderboard's address, e.g. http://127.0.0.1:8000")
    p.add_argument("--admin-token-file", required=True, metavar="FILE",
                   help="file holding an organizer token (`admin token create`); never printed")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """How each reproduction runs: the private seed, the budgets, the sandbox, the
    environment and the data (``reproduce`` and ``worker``)."""
    p.add_argument("--private-seed-file", metavar="FILE",
                   help="file holding the private fold seed (an integer; never printed or sent)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="wall-clock limit of each evaluation, in seconds (default: 3600)")
    p.add_argument("--memory-mb", type=int, default=None, metavar="M",
                   help="address-space limit of the evaluation, in MiB (default: 8192; 0: none)")
    p.add_argument("--processes", type=int, default=None, metavar="N",
                   help="processes the sandboxed model may run at once (default: 512)")
    p.add_argument("--scratch-mb", type=int, default=None, metavar="M",
                   help="MiB of the sandbox's scratch folder, its only writable place "
                        "(default: 4096)")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="where no sandbox can be made, run the participant's code unconfined "
                        "(with a warning in the output and in the verdict's log); never for "
                        "an official reproduction")
    p.add_argument("--index-url", metavar="URL", default=None,
                   help="the organizer's package index environments are built from (default: "
                        "uv's, i.e. PyPI); a participant's requirements.txt can never name one")
    p.add_argument("--allow-sdists", action="store_true",
                   help="let environments take packages that have no wheel, only a source "
                        "distribution: their metadata is read without building, they are "
                        "downloaded here and built inside the sandbox, without network "
                        "(default: wheels only; such a package is refused, naming it)")
    p.add_argument("--env", metavar="PATH",
                   help="a prepared virtual environment (with the harness installed) instead "
                        "of building one")
    p.add_argument("--env-cache", metavar="DIR", default=None,
                   help=f"where --keep-env keeps environments (default: {DEFAULT_ENV_CACHE})")
    p.add_argument("--source", metavar="SOURCE",
                   help="the dataset to rebuild, when not the upload's dataset.source (e.g. the "
                        "local path of the LFM data)")


def add_executor_options(group, unit: str) -> None:
    """Where many reproductions run, one ``unit`` (a row, a job) each (``reproduce --many``
    and ``worker``)."""
    group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help=f"local: in this process; ray: one Ray task per {unit} (default: "
                            f"local)")
    group.add_argument("--jobs", type=int, default=1, metavar="N",
                       help=f"with --executor local, {unit}s run at once (default: 1)")
    group.add_argument("--ray-num-cpus", type=float, default=1.0, metavar="N",
                       help=f"with --executor ray, the CPUs each {unit}'s task asks for "
                            f"(default: 1)")
    group.add_argument("--log-dir", metavar="DIR", default=None,
                       help="where each reproduction's log reproduce-ID.log goes (default: "
                            f"{DEFAULT_LOG_DIR} in this folder)")


def check_executor(args: argparse.Namespace) -> None:
    """Check --jobs, --executor and --ray-num-cpus together."""
    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs}: give at least 1.")
    if args.executor != "local" and args.jobs != 1:
        raise ConfigError(f"--jobs goes with --executor local; with --executor {args.executor} "
                          f"the cluster's CPUs decide (--ray-num-cpus per row).")
    if not args.ray_num_cpus > 0:
        raise ConfigError(f"--ray-num-cpus {args.ray_num_cpus}: give a positive number.")


def run(args: argparse.Namespace) -> int:
    """Check the arguments, reproduce, print the table; the exit status is in ``--help``."""
    if args.many is not None:
        if args.checkout is not None:
            raise ConfigError(f"CHECKOUT {args.checkout} and --many {args.many} exclude each "
                              f"other: give one checkout with --submission, or a CSV file of "
                              f"them with --many.")
        for name, instead in _SINGLE_ONLY.items():
            if getattr(args, name) not in (None, False):
                raise ConfigError(f"--{name.replace('_', '-')} does not go with --many; "
                                  f"use {instead}.")
        return _statuses(lambda: run_many(args))
    if args.checkout is None or args.submission is None:
        raise ConfigError("give a CHECKOUT and its --submission ID, or --many CSV.")
    for name, default in _MANY_ONLY.items():
        if getattr(args, name) != default:
            raise ConfigError(f"--{name.replace('_', '-')} goes with --many only.")
    return _statuses(lambda: run_single(args))


def _statuses(run) -> int:
    """``run()``'s status; a missing sandbox is an infrastructure failure (3) and an
    unexpected error an internal one (4), never 1 ("not reproduced")."""
    from evaluation.errors import EvalRSError
    from evaluation.reproduce import SandboxUnavailable

    try:
        return run()
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    except (EvalRSError, KeyboardInterrupt):
        raise
    except Exception as exc:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
        print(f"error: internal error of the harness: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return EXIT_INTERNAL


def budgets(args: argparse.Namespace) -> dict:
    """The checked --processes and --scratch-mb, as ``reproduce`` keywords."""
    from evaluation import reproduce as rp

    processes = rp.DEFAULT_PROCESSES if args.processes is None else args.processes
    scratch = rp.DEFAULT_SCRATCH_MB if args.scratch_mb is None else args.scratch_mb
    if processes < 8:
        raise ConfigError(f"--processes {args.processes}: give at least 8 (an interpreter "
                          f"and its helper threads).")
    if scratch < 16:
        raise ConfigError(f"--scratch-mb {args.scratch_mb}: give at least 16 MiB.")
    return {"processes": processes, "scratch_mb": scratch,
            "unsafe_no_sandbox": bool(args.unsafe_no_sandbox)}


def limits(args: argparse.Namespace) -> tuple[float, int]:
    """The checked --timeout and --memory-mb (0: no memory limit)."""
    from evaluation import reproduce as rp

    timeout = rp.DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not timeout > 0:
        raise ConfigError(f"--timeout {args.timeout}: give a positive number of seconds.")
    memory_mb = rp.DEFAULT_MEMORY_MB if args.memory_mb is None else args.memory_mb
    if memory_mb < 0:
        raise ConfigError(f"--memory-mb {args.memory_mb}: give a positive number of MiB "
                          f"(0: no limit).")
    return timeout, memory_mb


def run_single(args: argparse.Namespace) -> int:
    """One reproduction: CHECKOUT as --submission ID."""
    from evaluation import reproduce as rp

    timeout, memory_mb = limits(args)
    if args.submission < 1:
        raise ConfigError(f"--submission {args.submission}: a submission id is a positive "
                          f"integer.")
    if args.private != bool(args.private_seed_file):
        raise ConfigError("--private and --private-seed-file go together: give both to "
                          "evaluate the private folds, or neither.")
    checkout = rp.check_checkout(args.checkout)
    client = rp.LeaderboardClient(args.server, read_token(args.admin_token_file))
    seed = rp.read_private_seed(args.private_seed_file) if args.private else None
    log_path = Path(args.log or f"reproduce-{args.submission}.log").resolve()
    env_dir, temporary = _environment(args, checkout, log_path)
    try:
        outcome = rp.reproduce(checkout, args.submission, client, python=rp.env_python(env_dir),
                               log_path=log_path, timeout=timeout,
                               memory_mb=memory_mb or None, private_seed=seed,
                               source=args.source,
                               log=lambda line: print(line, file=sys.stderr),
                               **budgets(args))
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
        evaluated = len(outcome.private_fold_tests or [])
        print(f"private folds: {evaluated} evaluated; the private score is shown once the "
              f"phase is revealed (`admin phase reveal`).")
    return EXIT_REPRODUCED if outcome.verdict == rp.REPRODUCED else EXIT_NOT_REPRODUCED


def read_token(path: str) -> str:
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
        env = Path(args.env).resolve()  # the sandbox binds it by its absolute path
        if not os.access(rp.env_python(env), os.X_OK):
            raise ConfigError(f"--env {args.env}: no bin/python in it; give the folder of a "
                              f"virtual environment with the harness installed.")
        return env, False
    cache = Path(args.env_cache).resolve() if args.env_cache else DEFAULT_ENV_CACHE
    env = rp.prepare_env(checkout, cache if args.keep_env else None,
                         log=lambda line: print(line, file=sys.stderr),
                         log_path=log_path.with_name(log_path.name + ".env"),
                         index_url=args.index_url, allow_sdists=args.allow_sdists)
    return env, not args.keep_env


def run_many(args: argparse.Namespace) -> int:
    """Every line of the --many CSV file: reproduce, send, print the table, write the report."""
    from evaluation import reproduce as rp

    timeout, memory_mb = limits(args)
    check_executor(args)
    rows = rp.read_batch(args.many)
    private = [r for r in rows if (args.private if r.private is None else r.private)]
    if private and not args.private_seed_file:
        raise ConfigError(f"--many {args.many}: {len(private)} row(s) evaluate the private "
                          f"folds (first: line {private[0].line}); give --private-seed-file.")
    if args.private_seed_file and not private:
        raise ConfigError(f"--private-seed-file is given but no row of --many {args.many} "
                          f"evaluates the private folds; add --private or a private column.")
    client = rp.LeaderboardClient(args.server, read_token(args.admin_token_file))
    seed = rp.read_private_seed(args.private_seed_file) if private else None
    env = prepared_env(args.env) if args.env else None
    log_dir = Path(args.log_dir or DEFAULT_LOG_DIR).resolve()
    report = Path(args.report).resolve() if args.report else log_dir / rp.REPORT_FILE
    settings = rp.BatchSettings(
        log_dir=log_dir, env=env,
        env_cache=Path(args.env_cache).resolve() if args.env_cache else DEFAULT_ENV_CACHE,
        timeout=timeout, memory_mb=memory_mb or None, source=args.source,
        unsafe_no_sandbox=budgets(args)["unsafe_no_sandbox"], index_url=args.index_url,
        allow_sdists=args.allow_sdists)

    def progress(result) -> None:
        print(f"submission {result.submission}: {result.verdict} ({result.seconds:.1f} s)",
              file=sys.stderr)

    print(f"reproducing {len(rows)} submission(s) from {args.many} ({args.executor}); logs in "
          f"{log_dir}", file=sys.stderr)
    results = rp.reproduce_many(rows, client, settings, executor=args.executor,
                                jobs=args.jobs, num_cpus=args.ray_num_cpus,
                                private_default=args.private, private_seed=seed,
                                progress=progress)
    rp.write_report(report, results, batch=Path(args.many).resolve(),
                    server=client.server, executor=args.executor)
    rp.print_batch(results)
    counts = {v: sum(r.verdict == v for r in results)
              for v in (rp.REPRODUCED, rp.NOT_REPRODUCED, rp.ERROR)}
    print(", ".join(f"{n} {v}" for v, n in counts.items()) + f"; report: {report}")
    return rp.exit_status(results)


def prepared_env(path: str) -> Path:
    """The --env folder, checked."""
    from evaluation import reproduce as rp

    env = Path(path).resolve()  # the evaluation runs in the checkout's folder
    if not os.access(rp.env_python(env), os.X_OK):
        raise ConfigError(f"--env {path}: no bin/python in it; give the folder of a "
                          f"virtual environment with the harness installed.")
    return env
