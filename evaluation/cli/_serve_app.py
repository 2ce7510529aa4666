"""``serve``'s work: check the arguments, build the app, run uvicorn (the server extra)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import uvicorn

from evaluation.cli.serve import (
    KEEP_ALIVE_S,
    MAX_CONNECTIONS,
    MAX_WORKERS,
    STATS_INTERVAL_RANGE,
    WORKER_ENV,
)
from evaluation.errors import ConfigError
from evaluation.server.api import HeaderDeadlineProtocol, create_app
from evaluation.server.core import load_competition
from evaluation.server.db import STANDINGS_MIN_INTERVAL_S, shown_url


def run(args: argparse.Namespace) -> int:
    """Check everything, then serve until interrupted.

    Raises
    ------
    ConfigError
        When the server extra is missing, the competition file or a baseline is invalid, the
        database cannot be opened, or the port is out of range (exit status 2).
    """
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port number (0 to 65535).")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers {args.workers}: give 1 to {MAX_WORKERS} processes (about "
                          f"one per core).")
    interval = _stats_interval(args.board_stats_interval)
    competition = load_competition(args.competition)
    # migrates the schema and pins the baselines, once, before any worker starts
    app = create_app(competition, args.db, standings_interval=interval)
    print(f"leaderboard of {competition.name!r} on http://{args.host}:{args.port}/ "
          f"(database {shown_url(args.db)}; API docs at /docs; {args.workers} "
          f"process(es))", file=sys.stderr)
    options = dict(host=args.host, port=args.port, log_level="info",
                   access_log=args.access_log, proxy_headers=False, server_header=False,
                   **connection_limits())
    if args.workers == 1:
        uvicorn.run(app, **options)
    else:
        app.state.store.engine.dispose()  # this process only supervises the workers
        # each worker process builds its own app (and engine) from these, without preparing
        os.environ[WORKER_ENV] = json.dumps({"competition": str(args.competition),
                                             "db": args.db, "standings_interval": interval})
        uvicorn.run("evaluation.cli._serve_app:worker_app", factory=True, workers=args.workers,
                    **options)
    return 0


def connection_limits() -> dict:
    """uvicorn's settings that bound what a connection may hold: an idle keep-alive connection
    is closed after ``KEEP_ALIVE_S``, a request's headers must arrive within
    ``HEADER_TIMEOUT_S`` (``HeaderDeadlineProtocol``; the body has the app's own deadline), and
    at most ``MAX_CONNECTIONS`` requests per process are served at once (503 beyond)."""

    return dict(http=HeaderDeadlineProtocol, timeout_keep_alive=KEEP_ALIVE_S,
                limit_concurrency=MAX_CONNECTIONS, timeout_graceful_shutdown=10)


def worker_app():
    """The app of one worker process of ``serve --workers N`` (uvicorn's factory).

    The parent process has migrated the schema and pinned the baselines already.
    """
    settings = json.loads(os.environ[WORKER_ENV])
    return create_app(load_competition(settings["competition"]), settings["db"], prepare=False,
                      standings_interval=float(settings["standings_interval"]))


def _stats_interval(seconds: float | None) -> float:
    """The seconds of ``--board-stats-interval`` (none: the server's default,
    ``STANDINGS_MIN_INTERVAL_S``); ``ConfigError`` out of ``STATS_INTERVAL_RANGE``."""
    if seconds is None:
        return STANDINGS_MIN_INTERVAL_S
    low, high = STATS_INTERVAL_RANGE
    if not low <= seconds <= high:  # also refuses nan
        raise ConfigError(f"--board-stats-interval {seconds:g}: give {low:g} to {high:g} "
                          f"seconds between the starts of a board's statistics.")
    return seconds
