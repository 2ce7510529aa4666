"""The leaderboard's HTTP API (FastAPI): submissions, the board, a submission, health, the page.

``create_app`` opens the store and assembles the routers, one per resource:

* ``_routes_submissions``: upload a run, read a submission, read its stored body (organizers);
* ``_routes_reproductions``: record a reproduction's verdict (organizers);
* ``_routes_jobs``: the reproduction queue that the organizers' workers claim jobs from;
* ``_routes_queue``: the queue as people see it (a team its own jobs, the organizers all);
* ``_routes_phases``: the carry of an earlier phase's submissions into a phase (organizers);
* ``_routes_rescore``: re-scoring a phase after a harness fix (organizers);
* ``_routes_board``: the board as JSON, and the page (``GET /``);
* ``_routes_docs``: the API's documentation as a plain page (no script from a CDN);
* ``_routes_health``: whether the database answers (``/healthz``) and can take uploads
  (``/readyz``).

What they share (the store, the caller behind a token, a bounded body) is in ``_deps``; how
refusals and errors are answered is in ``_handlers``; the security headers of every answer
in ``_security``. The organizers' token also reads a
submission's stored body and records the verdict of a reproduction; for a team's token both
answer 404, as for a submission that does not exist. Every answer is JSON except the page.
"""

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime

from fastapi import FastAPI
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from evaluation._version import __version__
from evaluation.errors import ConfigError
from evaluation.server.api import (
    _routes_board,
    _routes_docs,
    _routes_health,
    _routes_jobs,
    _routes_phases,
    _routes_queue,
    _routes_reproductions,
    _routes_rescore,
    _routes_submissions,
)
from evaluation.server.api._deps import BODY_TIMEOUT_S
from evaluation.server.api._handlers import add_error_handlers
from evaluation.server.api._security import SecurityHeaders
from evaluation.server.core import Competition
from evaluation.server.db import (
    STANDINGS_MIN_INTERVAL_S,
    STANDINGS_WAIT_S,
    WRITE_WAIT_S,
    Database,
    check_integrity,
    is_current,
    make_engine,
    readiness,
    shown_url,
    sqlite_path,
    upgrade,
)
from evaluation.server.standings import stop_standings
from evaluation.server.store import carry_opened, pin_baselines

log = logging.getLogger("evaluation.server")


def create_app(competition: Competition, db_url: str | Engine, *,
               clock: Callable[[], datetime] | None = None, prepare: bool = True,
               write_wait: float = WRITE_WAIT_S, body_timeout: float = BODY_TIMEOUT_S,
               standings_wait: float = STANDINGS_WAIT_S,
               standings_interval: float = STANDINGS_MIN_INTERVAL_S) -> FastAPI:
    """The leaderboard app of ``competition`` on the database ``db_url``.

    Parameters
    ----------
    competition : Competition
        From ``load_competition``.
    db_url : str or sqlalchemy.engine.Engine
        The database (``sqlite:///leaderboard.db``, ``postgresql+psycopg://...``).
    clock : callable, optional
        Returns the current time, an aware datetime (default: the system clock, UTC); tests
        move it across days and phases.
    prepare : bool
        Migrate the schema (``upgrade``) and pin the baselines before returning (default).
    write_wait : float
        Most seconds a write waits in all (for a place among the running writes, the write
        queue and the database's locks) before it is answered 503 with ``Retry-After``.
    body_timeout : float
        Most seconds a request's body may take to arrive (then 408).
    standings_wait : float
        Most seconds a board request waits for its paired statistics, computed by a
        background thread, before it answers with the latest ones (marked as being updated).
        It waits only when the board has no statistics yet, or when this is at least
        ``FRESH_WAIT_S`` (1 s: the request then waits for the up-to-date statistics, as tests
        do); else it answers at once with the latest ones.
    standings_interval : float
        Least seconds between the starts of two computations of a board's statistics asked
        for by requests that do not wait (uploads meanwhile are computed together).

    Returns
    -------
    fastapi.FastAPI

    Raises
    ------
    ConfigError
        When the database cannot be opened or migrated, an SQLite file is damaged, or a
        baseline file is invalid.
    """
    engine = db_url if isinstance(db_url, Engine) else make_engine(db_url)
    path = sqlite_path(engine.url)
    if prepare and path is not None and path.exists():
        check_integrity(path)  # a damaged file is refused with what to do
    store = Database(engine, competition, clock)
    store.standings_wait = standings_wait
    store.standings_interval = standings_interval
    problems = readiness(store)
    if prepare:
        _prepare(store, problems)
    for problem in problems:
        log.warning("not ready for uploads: %s", problem)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        stop_standings(store)
        engine.dispose()

    app = FastAPI(
        title=f"{competition.name} leaderboard", version=__version__, lifespan=lifespan,
        docs_url=None, redoc_url=None,  # /docs is a plain page (_routes_docs), no CDN script
        description="Submissions, the board of each phase, and the state of a submission. "
                    "Writes need a team's token: `Authorization: Bearer <token>`.",
    )
    app.state.store = store
    app.state.start_problems = problems
    app.state.write_wait = write_wait
    app.state.body_timeout = body_timeout
    app.add_middleware(SecurityHeaders)
    add_error_handlers(app)
    for routes in (_routes_submissions, _routes_board, _routes_reproductions, _routes_jobs,
                   _routes_phases, _routes_queue, _routes_rescore, _routes_health,
                   _routes_docs):
        app.include_router(routes.router)
    return app


def _prepare(store: Database, problems: list[str]) -> None:
    """Migrate the schema, pin the baselines and carry into the phases that have opened
    (``carry_opened``: a failure is logged and tried again later); a database that cannot
    take writes is served as it is (read only, ``/readyz`` says why) when its schema is
    current, else refused."""
    try:
        upgrade(store.engine)
        pin_baselines(store)
        carry_opened(store)
    except (ConfigError, SQLAlchemyError) as exc:
        if not problems:
            raise
        if not is_current(store.engine):
            raise ConfigError(f"cannot prepare the database {shown_url(store.engine.url)}: "
                              f"{'; '.join(problems)}.") from None
        log.warning("the database could not be written to at start (%s); serving it read "
                    "only", type(exc).__name__)
