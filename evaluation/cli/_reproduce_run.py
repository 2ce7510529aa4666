"""``reproduce``'s work: check the arguments, reproduce one checkout or a batch, report.

Imported when the command runs (``evaluation.cli._commands``): ``reproduce --help`` needs
neither ``evaluation.reproduce`` nor its HTTP client.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from evaluation import reproduce as rp
from evaluation.cli.reproduce import (
    _MANY_ONLY,
    _SINGLE_ONLY,
    DEFAULT_ENV_CACHE,
    DEFAULT_LOG_DIR,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERNAL,
    EXIT_NOT_REPRODUCED,
    EXIT_REPRODUCED,
    check_executor,
)
from evaluation.errors import ConfigError, EvalRSError


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
    try:
        return run()
    except rp.SandboxUnavailable as exc:
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
    timeout, memory_mb = limits(args)
    if args.submission < 1:
        raise ConfigError(f"--submission {args.submission}: a submission id is a positive "
                          f"integer.")
    if args.private != bool(args.private_seed_file):
        raise ConfigError("--private and --private-seed-file go together: give both to "
                          "evaluate the private folds, or neither.")
    checkout = rp.check_checkout(args.checkout)
    # read before anything runs: a bad file costs no evaluation
    protocols = rp.declared_protocols(args.competition) if args.competition else []
    client = rp.LeaderboardClient(args.server, read_token(args.admin_token_file))
    seed = rp.read_private_seed(args.private_seed_file) if args.private else None
    log_path = Path(args.log or f"reproduce-{args.submission}.log").resolve()
    env_dir, temporary = _environment(args, checkout, log_path)
    try:
        outcome = rp.reproduce(checkout, args.submission, client, python=rp.env_python(env_dir),
                               log_path=log_path, timeout=timeout,
                               memory_mb=memory_mb or None, private_seed=seed,
                               source=args.source, protocols=protocols,
                               log=lambda line: print(line, file=sys.stderr),
                               **budgets(args))
    finally:
        if temporary:
            rp.remove_env(env_dir)
    rp.print_comparison(outcome.comparison)
    print(f"sent to {client.server}: {outcome.answer.get('status', 'recorded')} "
          f"(submission {args.submission}: {outcome.verdict}); log: {log_path}")
    if protocols and outcome.alternatives is None:
        print(f"alternative protocols: none run ({len(protocols)} declared): the submission "
              f"is {outcome.verdict}")
    for line in rp.alternative_lines(outcome):
        print(line)
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
    env = Path(path).resolve()  # the evaluation runs in the checkout's folder
    if not os.access(rp.env_python(env), os.X_OK):
        raise ConfigError(f"--env {path}: no bin/python in it; give the folder of a "
                          f"virtual environment with the harness installed.")
    return env
