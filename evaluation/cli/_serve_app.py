"""``serve``'s work: check the arguments, build the app, run uvicorn (the server extra)."""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys

import uvicorn

from evaluation.cli.serve import (
    KEEP_ALIVE_S,
    MAX_CONNECTIONS,
    MAX_WORKERS,
    STATS_INTERVAL_RANGE,
    WORKER_ENV,
    WORKER_HEALTHCHECK_S,
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
        database cannot be opened, or the port is out of range or in use (exit status 2).
    """
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port number (0 to 65535).")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers {args.workers}: give 1 to {MAX_WORKERS} processes (about "
                          f"one per core).")
    interval = _stats_interval(args.board_stats_interval)
    competition = load_competition(args.competition)
    # The port is taken before anything is announced: a busy port is an error of this
    # command, not a server that says it started and then dies (while another one answers).
    with listening_socket(args.host, args.port) as sock:
        # migrates the schema and pins the baselines, once, before any worker starts
        app = create_app(competition, args.db, standings_interval=interval)
        port = sock.getsockname()[1]
        print(f"leaderboard of {competition.name!r} on http://{args.host}:{port}/ "
              f"(database {shown_url(args.db)}; API docs at /docs; {args.workers} "
              f"process(es))", file=sys.stderr)
        # uvicorn serves the socket bound here (its descriptor), in every worker process
        options = dict(fd=sock.fileno(), log_level="info", access_log=args.access_log,
                       proxy_headers=False, server_header=False, **connection_limits())
        if args.workers == 1:
            uvicorn.run(app, **options)
        else:
            app.state.store.engine.dispose()  # this process only supervises the workers
            # each worker process builds its own app (and engine) from these, without preparing
            os.environ[WORKER_ENV] = json.dumps({"competition": str(args.competition),
                                                 "db": args.db, "standings_interval": interval})
            uvicorn.run("evaluation.cli._serve_app:worker_app", factory=True,
                        workers=args.workers, timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
                        **options)
    return 0


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one), for uvicorn to serve.

    Raises
    ------
    ConfigError
        When the address cannot be bound: the port is in use (by another server, perhaps an
        earlier ``serve``), reserved, or the host is not an address of this machine.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # as uvicorn does: a port left in TIME_WAIT by a stopped server can be bound again
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"--port {port}: {host}:{port} is in use already (another "
                              f"server, perhaps an earlier `serve`, listens there): {reason}. "
                              f"Stop that server or give another --port.") from exc
        raise ConfigError(f"--host {host} --port {port}: cannot listen there: {reason}. Give "
                          f"an address of this machine (--host) and a free port above 1023 "
                          f"(--port).") from exc
    sock.set_inheritable(True)  # the worker processes of --workers N serve it too
    return sock


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
