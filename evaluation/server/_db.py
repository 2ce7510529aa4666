"""The leaderboard's database: tables (SQLAlchemy 2 ORM), the engine, and the schema migrations.

Five tables: ``teams`` (a name, an email, the SHA-256 of the team's token; baselines are teams
without a token), ``submissions`` (one row per accepted upload: the recomputed scores, the
private scores once the organizers have reproduced the run on the private folds, and the body
as received, canonical JSON), ``admin_tokens`` (hashes of the organizers' tokens),
``reproductions`` (every verdict the organizers recorded for a submission, the latest one
shown) and ``phase_reveals`` (the phases whose private scores the organizers have revealed).

Times are stored in UTC. SQLite is the embedded default; any other SQLAlchemy URL (PostgreSQL
for a server database) is used as given. The schema is created and changed only by the Alembic
migrations shipped in ``migrations/``: :func:`upgrade` applies them, without an ``alembic.ini``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from evaluation.errors import ConfigError

#: Where the Alembic scripts are (``env.py``, ``versions/``); shipped inside the package.
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
#: Longest team name, in characters.
MAX_TEAM_NAME = 80
#: Longest email address (RFC 5321's limit on a path).
MAX_EMAIL = 320
#: Longest phase name and run id the tables hold.
MAX_PHASE_NAME = 80
MAX_RUN_ID = 128
#: How long an SQLite connection waits for another's write lock before giving up (ms). Writes
#: take milliseconds; a long wait only happens under heavy load, where failing would be worse.
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: Execution option that makes an SQLite transaction a plain (deferred, read-only) ``BEGIN``.
READ_ONLY = "evalrs_read_only"
#: Connections each process keeps open (and may open beyond that under load).
POOL_SIZE = 10
MAX_OVERFLOW = 30

# Constraint names that are the same on every backend, so that migrations can name them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator):
    """A datetime stored in UTC and read back as an aware UTC datetime (naive ones refused).

    SQLite keeps no offset, so every value is converted to UTC before it is written; a value
    read back without an offset is UTC by construction.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: the leaderboard stores aware UTC times")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    """Declarative base of the leaderboard's tables."""

    metadata = MetaData(naming_convention=NAMING)


class TeamRow(Base):
    """A team: its name as given, its email, the hash of its token (None for a baseline)."""

    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_TEAM_NAME), unique=True)
    email: Mapped[str | None] = mapped_column(String(MAX_EMAIL))
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    is_baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    submissions: Mapped[list[SubmissionRow]] = relationship(back_populates="team")


class SubmissionRow(Base):
    """An accepted submission: who, which phase and run, when, the recomputed scores.

    ``payload`` is the body as received, in canonical JSON (sorted keys), and ``body_sha256``
    its hash: a second upload under the same run id is a repeat when the hashes are equal.
    ``claimed_score`` is the score the client sent, kept for the record; ``flagged`` says it
    differed from the recomputed one.
    """

    __tablename__ = "submissions"
    __table_args__ = (
        # the idempotency key: one row per team, phase and run
        UniqueConstraint("team_id", "phase", "run_id"),
        # the daily limit counts a team's submissions of a phase by time
        Index(None, "team_id", "phase", "submitted_at"),
        Index(None, "phase", "team_id"),
        # a team's rank: does another team have a submission scored at least as high?
        Index(None, "team_id", "phase", "leaderboard_score"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="RESTRICT"))
    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME))
    run_id: Mapped[str] = mapped_column(String(MAX_RUN_ID))
    body_sha256: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    phase1_score: Mapped[float] = mapped_column(Double)
    leaderboard_score: Mapped[float] = mapped_column(Double)
    interval_low: Mapped[float] = mapped_column(Double)
    interval_high: Mapped[float] = mapped_column(Double)
    tests: Mapped[dict] = mapped_column(JSON)
    num_folds: Mapped[int] = mapped_column(Integer)
    claimed_score: Mapped[float | None] = mapped_column(Double)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    reproduction: Mapped[str] = mapped_column(String(20), default="pending")
    # the scores of the same model on the organizers' private folds (None until reproduced
    # with ``private``); shown only after the phase is revealed (``phase_reveals``)
    private_phase1_score: Mapped[float | None] = mapped_column(Double)
    private_leaderboard_score: Mapped[float | None] = mapped_column(Double)
    private_interval_low: Mapped[float | None] = mapped_column(Double)
    private_interval_high: Mapped[float | None] = mapped_column(Double)
    private_tests: Mapped[dict | None] = mapped_column(JSON)

    team: Mapped[TeamRow] = relationship(back_populates="submissions")


class ReproductionRow(Base):
    """One verdict of the organizers' reproduction of a submission; the latest one counts.

    ``table`` holds the per-test comparison as the reproduction sent it, ``log_tail`` the end
    of its log; ``private_fold_tests`` the per-fold tests on the private folds, when it ran
    them. Kept for the record, never shown by the API.
    """

    __tablename__ = "reproductions"
    __table_args__ = (Index(None, "submission_id", "recorded_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # a baseline whose file changed replaces its submission: its verdicts go with it
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id",
                                                          ondelete="CASCADE"))
    verdict: Mapped[str] = mapped_column(String(20))
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    fingerprint_matches: Mapped[bool] = mapped_column(Boolean)
    harness_version: Mapped[str | None] = mapped_column(String(64))
    table: Mapped[list] = mapped_column(JSON)
    log_tail: Mapped[str] = mapped_column(Text)
    private_fold_tests: Mapped[list | None] = mapped_column(JSON)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PhaseRevealRow(Base):
    """A phase whose private scores the organizers revealed, and when (``admin phase reveal``).
    """

    __tablename__ = "phase_reveals"

    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME), primary_key=True)
    revealed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AdminTokenRow(Base):
    """An organizer's token (its hash): may read every submission and the hidden scores."""

    __tablename__ = "admin_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


# ---------------------------------------------------------------------------- engine


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
    return engine


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
    from alembic import command
    from alembic.config import Config
    from alembic.util import CommandError

    engine = url_or_engine if isinstance(url_or_engine, Engine) else make_engine(url_or_engine)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    try:
        with engine.begin() as connection:
            # env.py runs the migrations on this connection, so that SQLite's settings apply
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except CommandError as exc:
        raise ConfigError(f"database {shown_url(engine.url)}: {scrub(str(exc), engine.url)} "
                          f"(is it a leaderboard database of a newer harness?)") from None
    except SQLAlchemyError as exc:
        reason = scrub(str(getattr(exc, "orig", None) or exc), engine.url).strip()
        raise ConfigError(f"cannot open the database {shown_url(engine.url)}: {reason}. Check "
                          f"the --db URL: the server, user and database name, and that the "
                          f"folder of an SQLite file exists.") from None
