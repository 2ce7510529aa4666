"""The leaderboard service's fixtures: a throwaway PostgreSQL server (skipped with the reason
when none can be started) and a fresh database on it per test."""

from __future__ import annotations

import itertools

import pytest

# The same server set-up as benchmarks/bench_server.py (the repository root is on pythonpath).
from benchmarks._postgres import PostgresUnavailable, start_postgres


@pytest.fixture(scope="session")
def postgres_url():
    """SQLAlchemy URL (``postgresql+psycopg://...``) of an empty database on a real PostgreSQL.

    One server for the whole session, started from the machine's PostgreSQL binaries in a
    temporary directory on 127.0.0.1 and removed at the end; the tests skip with the reason
    (and the tail of PostgreSQL's log) when there are no binaries or it does not start.
    """
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for this test: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


_DATABASE_NUMBERS = itertools.count(1)


@pytest.fixture
def postgres_database(postgres_url):
    """URL of a new, empty database of its own on the session's PostgreSQL server, dropped after.

    For tests that must not see what other tests stored through ``postgres_url``.
    """
    sa = pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    name = f"test_{next(_DATABASE_NUMBERS)}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield sa.make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def live(tmp_path, competition):
    """A server of the test module's ``competition`` on 127.0.0.1, on an SQLite file, with a
    clock the test moves."""
    from evaluation.server import create_app
    from tests.server.test_api import Api, serving
    from tests.server.test_store import Clock, sqlite_url

    clock = Clock()
    app = create_app(competition, sqlite_url(tmp_path), clock=clock)
    with serving(app, True) as client:
        yield Api(client, app.state.store, clock, True)
