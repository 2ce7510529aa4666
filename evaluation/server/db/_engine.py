"""The leaderboard's database: the engine, SQLite's settings, and the schema migrations.

SQLite is the embedded default; any other SQLAlchemy URL (PostgreSQL for a server database) is
used as given. The schema is created and changed only by the Alembic migrations shipped in
``migrations/``: :func:`upgrade` applies them, without an ``alembic.ini``. The tables are in
``_tables``.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from evaluation.errors import ConfigError
from evaluation.server.db._lock import READ_ONLY, WRITE_WAIT_S, WriteBusy, time_left

#: Where the Alembic scripts are (``env.py``, ``versions/``); shipped inside the package.
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
#: How long an SQLite connection waits for another's lock before giving up (ms); a write waits
#: only until its deadline (``WRITE_WAIT_S`` in all, see ``_lock``).
SQLITE_BUSY_TIMEOUT_MS = int(WRITE_WAIT_S * 1000)
#: Connections each process keeps open (and may open beyond that under load).
POOL_SIZE = 10
MAX_OVERFLOW = 30


def shown_url(url) -> str:
    """``url`` as it may be printed: the password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        return "<unparsable database URL>"


def scrub(text: str, url) -> str:
    """``text`` without the password of ``url`` (drivers may quote the connection string)."""
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError, TypeError):
        password = None
    return text.replace(password, "***") if password else text


def make_engine(url: str) -> Engine:
    """Return an engine for ``url``; SQLite gets the settings a leaderboard needs.

    SQLite: write-ahead log (readers never wait for the writer), ``synchronous=FULL``,
    a busy timeout, foreign keys on, and every transaction begun by ``BEGIN IMMEDIATE`` (the
    write lock is taken at the start, so counting and inserting happen under one lock); a
    connection with the ``READ_ONLY`` execution option begins a plain ``BEGIN``. Other URLs
    are used as given.

    Parameters
    ----------
    url : str
        A SQLAlchemy URL, e.g. ``sqlite:///leaderboard.db`` or
        ``postgresql+psycopg://user@host/db``.

    Returns
    -------
    sqlalchemy.engine.Engine

    Raises
    ------
    ConfigError
        When the URL cannot be parsed, names a driver that is not installed, or is an
        in-memory SQLite database (lost when the server stops, and one per connection).
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise ConfigError(f"database URL {shown_url(url)!s} cannot be parsed; expected e.g. "
                          f"sqlite:///leaderboard.db or "
                          f"postgresql+psycopg://user@host:5432/leaderboard.") from None
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and (not parsed.database or parsed.database == ":memory:"
                      or parsed.query.get("mode") == "memory"):
        raise ConfigError(f"database URL {shown_url(url)} is an in-memory SQLite database, lost "
                          f"when the server stops; give a file, e.g. sqlite:///leaderboard.db.")
    try:
        engine = create_engine(parsed, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW)
    except (NoSuchModuleError, ImportError) as exc:
        raise ConfigError(f"database URL {shown_url(url)}: its driver is not available "
                          f"({scrub(str(exc), url)}); install it, e.g. psycopg[binary] for "
                          f"postgresql+psycopg://.") from None
    except (ArgumentError, SQLAlchemyError, TypeError) as exc:
        raise ConfigError(f"database URL {shown_url(url)} cannot be used: "
                          f"{scrub(str(exc), url)}") from None
    if is_sqlite:
        _configure_sqlite(engine)
    elif parsed.get_backend_name() == "postgresql":
        _configure_postgresql(engine)
    return engine


def _wait_ms() -> int:
    """Milliseconds the current write may still wait for a lock; WriteBusy when none."""
    left = time_left()
    if left <= 0:
        raise WriteBusy(f"the write waited {WRITE_WAIT_S:g} s for the database's lock")
    return max(1, int(left * 1000))


def _configure_postgresql(engine: Engine) -> None:
    """Bound a write transaction's lock waits (a ``SELECT ... FOR UPDATE`` on a row that
    another session holds) by the write's deadline: ``SET LOCAL lock_timeout``; the error it
    ends with is answered 503."""

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        if not connection.get_execution_options().get(READ_ONLY, False):
            connection.exec_driver_sql(f"SET LOCAL lock_timeout = {_wait_ms()}")


def _configure_sqlite(engine: Engine) -> None:
    """Add the connection settings and the ``BEGIN IMMEDIATE`` hooks to an SQLite engine.

    This is SQLAlchemy's documented recipe for pysqlite: the driver's own transaction handling
    is switched off (it would emit a deferred ``BEGIN`` itself), and the engine's ``begin``
    event emits the ``BEGIN`` instead.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, connection_record) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # FULL: in WAL mode, NORMAL may lose the last commits when the machine (not only the
        # process) stops; a submission the server acknowledged must survive that.
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        # a write waits for another process's lock until its deadline only
        busy_ms = SQLITE_BUSY_TIMEOUT_MS if read_only else _wait_ms()
        if connection.info.get("busy_ms", SQLITE_BUSY_TIMEOUT_MS) != busy_ms:
            # on the driver's connection: a setting, not a statement of the transaction
            connection.connection.driver_connection.execute(f"PRAGMA busy_timeout={busy_ms}")
            connection.info["busy_ms"] = busy_ms
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


# ---------------------------------------------------------------------------- migrations


def upgrade(url_or_engine) -> None:
    """Bring the database's schema to the newest migration (``alembic upgrade head``).

    Parameters
    ----------
    url_or_engine : str or sqlalchemy.engine.Engine
        The database.

    Raises
    ------
    ConfigError
        When the database cannot be opened or migrated (the message shows the URL without
        its password), or holds a schema newer than this harness knows.
    """
    engine = url_or_engine if isinstance(url_or_engine, Engine) else make_engine(url_or_engine)
    try:
        with engine.begin() as connection:
            # a database at the newest migration is left as it is: Alembic (a second to
            # import) would load every migration script to find nothing to do
            if _stored_revisions(connection) != schema_heads():
                _migrate(connection)
    except SQLAlchemyError as exc:
        reason = scrub(str(getattr(exc, "orig", None) or exc), engine.url).strip()
        raise ConfigError(f"cannot open the database {shown_url(engine.url)}: {reason}. Check "
                          f"the --db URL: the server, user and database name, and that the "
                          f"folder of an SQLite file exists.") from None


def is_current(engine: Engine) -> bool:
    """Whether the database's schema is at the newest migration (read only; False when the
    database cannot be read or has no schema).

    It reads the migrations' revisions from their files rather than through Alembic, whose
    import would make every ``admin`` command a second slower.
    """
    try:
        with engine.execution_options(**{READ_ONLY: True}).connect() as connection:
            stored = {row[0] for row in connection.exec_driver_sql(
                "SELECT version_num FROM alembic_version")}
    except SQLAlchemyError:
        return False
    return stored == schema_heads()


def _migrate(connection) -> None:
    """Run the migrations up to the newest on ``connection``; ConfigError when Alembic cannot
    (a revision it does not know: a database of a newer harness)."""
    from alembic import command
    from alembic.config import Config
    from alembic.util import CommandError

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # env.py runs the migrations on this connection, so that SQLite's settings apply
    config.attributes["connection"] = connection
    try:
        command.upgrade(config, "head")
    except CommandError as exc:
        url = connection.engine.url
        raise ConfigError(f"database {shown_url(url)}: {scrub(str(exc), url)} "
                          f"(is it a leaderboard database of a newer harness?)") from None


def _stored_revisions(connection) -> set[str]:
    """The revisions a database's ``alembic_version`` table holds (none without the table)."""
    if not inspect(connection).has_table("alembic_version"):
        return set()
    return {row[0] for row in connection.exec_driver_sql(
        "SELECT version_num FROM alembic_version")}


def schema_heads() -> set[str]:
    """The newest revisions of the shipped migrations (those no other migration follows)."""
    revisions, followed = set(), set()
    for script in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = script.read_text(encoding="utf-8")
        revision = re.search(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        down = re.search(r"^down_revision\s*=\s*(.+)$", text, re.M)
        if revision:
            revisions.add(revision.group(1))
        if down:
            followed.update(re.findall(r"['\"]([^'\"]+)['\"]", down.group(1)))
    return revisions - followed
