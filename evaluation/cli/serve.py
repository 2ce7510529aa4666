"""``python -m evaluation serve``: run the leaderboard server of a competition."""

from __future__ import annotations

from evaluation.cli._commands import SERVER_EXTRA, command

#: The database when ``--db`` is not given: a file in the current folder.
DEFAULT_DB = "sqlite:///leaderboard.db"
#: The most processes ``--workers`` starts.
MAX_WORKERS = 64
#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_S = 5
#: Connections and requests one server process serves at once (beyond: 503).
MAX_CONNECTIONS = 1000
#: Seconds ``serve --workers N``'s supervisor waits for a worker process to answer its ping
#: before it kills the process as hung. uvicorn's 5 s kills a worker that is only slow: one
#: busy with a board's statistics, or any of them on a loaded machine, with requests in flight.
WORKER_HEALTHCHECK_S = 60
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
                    "board's page (/). Needs the server extra (`make server`).",
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
    p.set_defaults(func=command("_serve_app", "run", SERVER_EXTRA))
