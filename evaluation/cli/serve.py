"""``python -m evaluation serve``: run the leaderboard server of a competition."""

from __future__ import annotations

import argparse
import json
import os
import sys

from evaluation.errors import ConfigError

#: The database when ``--db`` is not given: a file in the current folder.
DEFAULT_DB = "sqlite:///leaderboard.db"
#: The most processes ``--workers`` starts.
MAX_WORKERS = 64
#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_S = 5
#: Connections and requests one server process serves at once (beyond: 503).
MAX_CONNECTIONS = 1000
#: How ``serve --workers N`` tells its worker processes the competition file and database.
WORKER_ENV = "EVALRS_SERVE_SETTINGS"
#: The range of ``--board-stats-interval`` (seconds).
STATS_INTERVAL_RANGE = (1.0, 3600.0)


def register(subparsers) -> None:
    """Add the ``serve`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "serve",
        help="run the leaderboard server (organizers; needs the server extra)",
        description="Run the leaderboard: migrate the database's schema, pin the "
                    "competition's baselines on the board, then serve the API "
                    "(/api/v1/submissions, /api/v1/leaderboard, /healthz, /readyz, /docs) and the "
                    "board's page (/). Needs `pip install .[server]`.",
    )
    p.add_argument("--competition", required=True, metavar="FILE",
                   help="the competition file (TOML), e.g. competition.toml")
    p.add_argument("--db", default=DEFAULT_DB, metavar="URL",
                   help=f"SQLAlchemy database URL (default: {DEFAULT_DB}; e.g. "
                        f"postgresql+psycopg://user@host/leaderboard)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1; put a TLS proxy in front "
                        "to serve the internet)")
    p.add_argument("--port", default=8000, type=int, help="port (default: 8000)")
    p.add_argument("--workers", default=1, type=int, metavar="N",
                   help="server processes sharing the port (default: 1); more use more cores. "
                        "The rules (daily limits, one stored copy of a run) hold across "
                        "processes: they are enforced by the database's locks")
    p.add_argument("--board-stats-interval", default=None, type=float, metavar="S",
                   help="under a stream of uploads, start a board's paired statistics again at "
                        "most every S seconds (default: 10; a reading of 200 teams costs "
                        "about 0.6 s of CPU in each server process)")
    p.add_argument("--access-log", action="store_true",
                   help="log every request (one line each; off by default: it costs about as "
                        "much CPU as storing an upload)")
    p.set_defaults(func=run)


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
    server = import_server()
    import uvicorn

    competition = server.load_competition(args.competition)
    # migrates the schema and pins the baselines, once, before any worker starts
    app = server.create_app(competition, args.db, **interval)
    print(f"leaderboard of {competition.name!r} on http://{args.host}:{args.port}/ "
          f"(database {server.shown_url(args.db)}; API docs at /docs; {args.workers} "
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
                                             "db": args.db, **interval})
        uvicorn.run("evaluation.cli.serve:worker_app", factory=True, workers=args.workers,
                    **options)
    return 0


def connection_limits() -> dict:
    """uvicorn's settings that bound what a connection may hold: an idle keep-alive connection
    is closed after ``KEEP_ALIVE_S``, a request's headers must arrive within
    ``HEADER_TIMEOUT_S`` (``HeaderDeadlineProtocol``; the body has the app's own deadline), and
    at most ``MAX_CONNECTIONS`` requests per process are served at once (503 beyond)."""
    from evaluation.server import HeaderDeadlineProtocol

    return dict(http=HeaderDeadlineProtocol, timeout_keep_alive=KEEP_ALIVE_S,
                limit_concurrency=MAX_CONNECTIONS, timeout_graceful_shutdown=10)


def worker_app():
    """The app of one worker process of ``serve --workers N`` (uvicorn's factory).

    The parent process has migrated the schema and pinned the baselines already.
    """
    settings = json.loads(os.environ[WORKER_ENV])
    server = import_server()
    interval = {k: v for k, v in settings.items() if k == "standings_interval"}
    return server.create_app(server.load_competition(settings["competition"]),
                             settings["db"], prepare=False, **interval)


def _stats_interval(seconds: float | None) -> dict[str, float]:
    """``create_app``'s keyword for ``--board-stats-interval`` (none: the server's default);
    ``ConfigError`` out of ``STATS_INTERVAL_RANGE``."""
    if seconds is None:
        return {}
    low, high = STATS_INTERVAL_RANGE
    if not low <= seconds <= high:  # also refuses nan
        raise ConfigError(f"--board-stats-interval {seconds:g}: give {low:g} to {high:g} "
                          f"seconds between the starts of a board's statistics.")
    return {"standings_interval": seconds}


def import_server():
    """The ``evaluation.server`` package; ``ConfigError`` naming the extra when it is missing."""
    try:
        import evaluation.server as server
    except ImportError as exc:
        raise ConfigError(f"the leaderboard server needs its extra dependencies ({exc.name or exc} "
                          f"is missing): install the server extra, evalrs-harness[server] "
                          f"(`make server` in the harness's clone).") from None
    return server
