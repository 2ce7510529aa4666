"""The leaderboard's transactions: teams and tokens, submissions, the board, the baselines.

``Store.submit`` is where a submission's rules meet the database. Everything that does not need
the database (parsing, the run's checks, the phase, the recomputed scores) happens first; then
one transaction locks the team's row, looks for the run under its idempotency key, counts the
team's submissions of the day and inserts. On PostgreSQL the lock is ``SELECT ... FOR UPDATE``
on the team's row; on SQLite every write transaction starts with ``BEGIN IMMEDIATE`` (see
``make_engine``), which serialises the writers. So two uploads of one team never both pass the
daily limit, and one run is stored once, however many threads or processes send it; a unique
constraint on (team, phase, run) backs the idempotency in the schema as well.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone

try:
    import fcntl
except ImportError:  # not POSIX: the thread lock alone
    fcntl = None

from sqlalchemy import and_, bindparam, case, func, insert, or_, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased, defer, sessionmaker

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server._board import Board, BoardRow
from evaluation.server._competition import Competition, Phase
from evaluation.server._db import (
    MAX_EMAIL,
    MAX_TEAM_NAME,
    READ_ONLY,
    AdminTokenRow,
    PhaseRevealRow,
    ReproductionRow,
    SubmissionRow,
    TeamRow,
)
from evaluation.server._reproduction import parse_reproduction
from evaluation.server._schema import read_submission
from evaluation.server._scoring import Scores, claimed_differs, recompute
from evaluation.server._tokens import hash_token, matches, new_token

#: Characters a team name may hold beyond Python's printable ones: the zero-width non-joiner
#: and joiner, which some scripts (Persian, Indic) and emoji sequences need.
NAME_EXTRA_CHARACTERS = frozenset("\u200c\u200d")


#: The board's order of submissions: highest leaderboard score, then highest phase-1 score,
#: then the earliest (then the lowest id, which only a tie in time reaches).
_BEST_FIRST = (SubmissionRow.leaderboard_score.desc(), SubmissionRow.phase1_score.desc(),
               SubmissionRow.submitted_at.asc(), SubmissionRow.id.asc())
#: The order of a revealed phase: submissions with a private score first, by private score,
#: then the public order. (A CASE rather than NULLS LAST: the same SQL on every backend.)
_PRIVATE_FIRST = (case((SubmissionRow.private_leaderboard_score.is_(None), 1), else_=0).asc(),
                  SubmissionRow.private_leaderboard_score.desc(), *_BEST_FIRST)


def _rank_statement():
    """The query of ``Store._rank`` (parameters ``team_id`` and ``phase``): built once, so
    that a request runs it without building and compiling it again."""
    s, other = SubmissionRow, aliased(SubmissionRow)
    team_id, phase = bindparam("team_id"), bindparam("phase")
    best = (select(s.leaderboard_score.label("score"), s.phase1_score.label("phase1"),
                   s.submitted_at.label("at"), s.id.label("sid"))
            .where(s.team_id == team_id, s.phase == phase)
            .order_by(*_BEST_FIRST).limit(1).subquery("best"))
    earlier = or_(other.submitted_at < best.c.at,
                  and_(other.submitted_at == best.c.at, other.id < best.c.sid))
    by_phase1 = or_(other.phase1_score > best.c.phase1,
                    and_(other.phase1_score == best.c.phase1, earlier))
    better = select(other.id).where(
        other.team_id == TeamRow.id, other.phase == phase,
        # implied by the next condition; it lets the index seek to the better scores
        other.leaderboard_score >= best.c.score,
        or_(other.leaderboard_score > best.c.score,
            and_(other.leaderboard_score == best.c.score, by_phase1))).correlate(best, TeamRow)
    ahead = (select(func.count()).select_from(TeamRow)
             .where(TeamRow.id != team_id, TeamRow.is_baseline.is_(False), better.exists())
             .correlate(best).scalar_subquery())
    return select(ahead).select_from(best)


_RANK = _rank_statement()

#: What a receipt needs of a stored submission.
_STORED_FIELDS = ("id", "team_id", "run_id", "body_sha256", "submitted_at", "phase1_score",
                  "leaderboard_score", "interval_low", "interval_high", "flagged")


@dataclass(frozen=True)
class _Stored:
    """A stored submission, as far as the receipt of an upload needs it."""

    id: int
    team_id: int
    run_id: str
    body_sha256: str
    submitted_at: datetime
    phase1_score: float
    leaderboard_score: float
    interval_low: float
    interval_high: float
    flagged: bool


# The statements of ``Store._insert`` (parameters team_id, phase, run_id, start, end).
_TEAM_FOR_UPDATE = (select(TeamRow.name, TeamRow.is_baseline)
                    .where(TeamRow.id == bindparam("team_id")).with_for_update())
_EXISTING = select(*(getattr(SubmissionRow, f) for f in _STORED_FIELDS)).where(
    SubmissionRow.team_id == bindparam("team_id"), SubmissionRow.phase == bindparam("phase"),
    SubmissionRow.run_id == bindparam("run_id"))
_COUNT_TODAY = select(func.count()).select_from(SubmissionRow).where(
    SubmissionRow.team_id == bindparam("team_id"), SubmissionRow.phase == bindparam("phase"),
    SubmissionRow.submitted_at >= bindparam("start"),
    SubmissionRow.submitted_at < bindparam("end"))
_INSERT = insert(SubmissionRow).returning(SubmissionRow.id)
# The statements of ``Store.authenticate`` (parameter digest).
_TEAM_BY_TOKEN = select(TeamRow.id, TeamRow.name, TeamRow.token_hash, TeamRow.revoked_at).where(
    TeamRow.token_hash == bindparam("digest"))
_ADMIN_BY_TOKEN = select(AdminTokenRow.token_hash, AdminTokenRow.revoked_at).where(
    AdminTokenRow.token_hash == bindparam("digest"))


class LimitReached(SubmissionRejected):
    """The team has used its submissions of the day: HTTP 429, ``retry_after`` seconds to wait.
    """

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(429, reason)
        self.retry_after = retry_after


def utc_now() -> datetime:
    """The current time, aware, in UTC (the default clock)."""
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class TeamInfo:
    """A team as the organizers see it (never its token)."""

    id: int
    name: str
    email: str | None
    is_baseline: bool
    created_at: datetime
    revoked_at: datetime | None
    submissions: int = 0

    @property
    def state(self) -> str:
        """"baseline", "revoked" or "active"."""
        if self.is_baseline:
            return "baseline"
        return "revoked" if self.revoked_at is not None else "active"


@dataclass(frozen=True)
class Caller:
    """Who sent a request: a team (``team_id``, ``team``) or an organizer (``admin``)."""

    admin: bool
    team_id: int | None = None
    team: str | None = None


@dataclass(frozen=True)
class Receipt:
    """The answer to an accepted submission (``status`` "accepted") or a repeat ("duplicate").

    Scores and rank are None when the phase's scores are hidden.
    """

    status: str
    submission_id: int
    phase: str
    phase1_score: float | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    rank: int | None
    flagged: bool
    message: str

    @property
    def http_status(self) -> int:
        """201 for a new submission, 200 for a repeat of a stored one."""
        return 201 if self.status == "accepted" else 200


@dataclass(frozen=True)
class SubmissionView:
    """One stored submission as ``GET /api/v1/submissions/{id}`` shows it."""

    submission_id: int
    team: str
    is_baseline: bool
    phase: str
    run_id: str
    submitted_at: datetime
    phase1_score: float | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    tests: dict[str, float] | None
    num_folds: int
    claimed_score: float | None
    flagged: bool
    reproduction: str
    payload_url: str | None = None
    private_phase1_score: float | None = None
    private_leaderboard_score: float | None = None
    private_interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class _Best:
    """A team's best submission of a phase, with the team's count and last time."""

    submission: SubmissionRow
    team: str
    is_baseline: bool
    count: int
    last: datetime


# ---------------------------------------------------------------------------- checks


def check_team_name(name: str) -> str:
    """Check a team name: 1 to ``MAX_TEAM_NAME`` printable characters of any script.

    Returns
    -------
    str
        ``name`` unchanged (names are stored as given).

    Raises
    ------
    ConfigError
        When it is empty, too long, starts or ends with a space, or holds a control, format
        or separator character (other than the ASCII space and the zero-width joiners).
    """
    if not isinstance(name, str) or not name:
        raise ConfigError("a team name must have 1 to 80 characters; got an empty name.")
    if len(name) > MAX_TEAM_NAME:
        raise ConfigError(f"team name {name[:40]!r}... has {len(name)} characters; at most "
                          f"{MAX_TEAM_NAME} are allowed: shorten it.")
    for i, ch in enumerate(name):
        if not (ch.isprintable() or ch in NAME_EXTRA_CHARACTERS):
            raise ConfigError(
                f"team name {name!r} has the non-printable character U+{ord(ch):04X} "
                f"({unicodedata.name(ch, 'unnamed')}) at position {i + 1}; a team name holds "
                f"printable characters (letters, digits, punctuation, symbols of any script) "
                f"and plain spaces only.")
    if name != name.strip(" "):
        raise ConfigError(f"team name {name!r} starts or ends with a space; remove it (names "
                          f"that differ only by spaces would look the same on the board).")
    return name


def check_email(email: str) -> str:
    """Check an email address: ``local@domain``, printable, no spaces, at most 320 characters.

    Raises
    ------
    ConfigError
        When it is not such an address.
    """
    ok = (isinstance(email, str) and 3 <= len(email) <= MAX_EMAIL and email.count("@") == 1
          and all(ch.isprintable() and not ch.isspace() for ch in email))
    if ok:
        local, _, domain = email.partition("@")
        ok = bool(local) and bool(domain) and not domain.startswith(".") and "." in domain
    if not ok:
        shown = email[:80] if isinstance(email, str) else email
        raise ConfigError(f"email {shown!r} is not an address like name@example.org (one @, a "
                          f"domain with a dot, no spaces, at most {MAX_EMAIL} characters).")
    return email


def _folded(name: str) -> str:
    """A name as it is compared for duplicates: compatibility-normalised, case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def _utc(now: datetime) -> datetime:
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise TypeError(f"the clock must return an aware datetime, got {now!r}")
    return now.astimezone(timezone.utc)


def _iso(moment: datetime) -> str:
    """A time as it is shown in messages: ISO 8601 to the second, in UTC, with a Z."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_json(document) -> str:
    """``document`` as canonical JSON: sorted keys, no spaces, ASCII only (escapes kept)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


# ---------------------------------------------------------------------------- the store


class Store:
    """The leaderboard's data: teams, tokens, submissions and the board of each phase.

    Parameters
    ----------
    engine : sqlalchemy.engine.Engine
        The database (from ``make_engine``; its schema migrated by ``upgrade``).
    competition : Competition, optional
        The competition; needed for submissions, boards and baselines, not for teams and
        tokens.
    clock : callable, optional
        Returns the current time as an aware datetime (default: the system clock in UTC).
    """

    def __init__(self, engine: Engine, competition: Competition | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.engine = engine
        self.competition = competition
        self.clock = clock or utc_now
        self._write = sessionmaker(engine, expire_on_commit=False)
        self._read_engine = engine.execution_options(**{READ_ONLY: True})
        self._read = sessionmaker(self._read_engine, expire_on_commit=False)
        # SQLite has one writer at a time (BEGIN IMMEDIATE, which keeps the rules exact across
        # processes); a writer that finds the database locked sleeps in SQLite's busy handler,
        # in ever longer naps. Writers queue on a lock instead (see _SQLiteWriteLock), and
        # each starts as soon as the one before has committed.
        self._write_lock = (_SQLiteWriteLock(engine.url) if engine.dialect.name == "sqlite"
                            else nullcontext())

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        """A write transaction (committed at the end unless it raises), one at a time in this
        process on SQLite."""
        with self._write_lock, self._write() as session, session.begin():
            yield session

    def now(self) -> datetime:
        """The clock's time in UTC."""
        return _utc(self.clock())

    def _competition(self) -> Competition:
        if self.competition is None:
            raise ConfigError("this store was opened without a competition file.")
        return self.competition

    # ------------------------------------------------------------------ health

    def ping(self) -> None:
        """Run a trivial query; raises the driver's error when the database does not answer."""
        with self._read() as session:
            session.execute(text("SELECT 1")).one()

    # ------------------------------------------------------------------ teams and tokens

    def add_team(self, name: str, email: str) -> tuple[TeamInfo, str]:
        """Add a team with a new token.

        Parameters
        ----------
        name : str
            1 to 80 printable characters of any script, stored as given.
        email : str
            Whom the organizers contact.

        Returns
        -------
        (TeamInfo, str)
            The team and its token; the database keeps only the token's hash, so this is
            the only time the token is known.

        Raises
        ------
        ConfigError
            When the name or email is malformed, or a team of that name (compared ignoring
            case and Unicode compatibility forms) exists already.
        """
        check_team_name(name)
        check_email(email)
        token = new_token()
        try:
            with self._writing() as session:
                self._refuse_duplicate_name(session, name)
                team = TeamRow(name=name, email=email, token_hash=hash_token(token),
                            is_baseline=False, created_at=self.now())
                session.add(team)
                session.flush()
                info = _team_info(team)
        except IntegrityError:
            raise ConfigError(f"a team named {name!r} exists already; choose another name.") \
                from None
        return info, token

    @staticmethod
    def _refuse_duplicate_name(session: Session, name: str) -> None:
        folded = _folded(name)
        for other in session.scalars(select(TeamRow.name)):
            if _folded(other) == folded:
                same = "" if other == name else f" ({other!r}: names are compared ignoring " \
                                                f"case and Unicode compatibility forms)"
                raise ConfigError(f"a team named {name!r} exists already{same}; choose "
                                  f"another name.")

    def revoke_team(self, name: str) -> TeamInfo:
        """Revoke a team's token: its requests get 401 from now on; its submissions stay.

        Returns
        -------
        TeamInfo
            The team (``revoked_at`` set; unchanged when it was revoked already).

        Raises
        ------
        ConfigError
            When there is no such team, or it is a baseline (which has no token).
        """
        with self._writing() as session:
            team = _team_with_token(session, name)
            if team.revoked_at is None:
                team.revoked_at = self.now()
            return _team_info(team)

    def new_team_token(self, name: str) -> tuple[TeamInfo, str]:
        """Give a team a new token (a lost or leaked one): the old token is refused from now on.

        A revoked team is active again with the new token; its submissions stay.

        Returns
        -------
        (TeamInfo, str)
            The team and its new token (only the hash is stored).

        Raises
        ------
        ConfigError
            When there is no such team, or it is a baseline (which has no token).
        """
        token = new_token()
        with self._writing() as session:
            team = _team_with_token(session, name)
            team.token_hash = hash_token(token)
            team.revoked_at = None
            return _team_info(team), token

    def list_teams(self) -> list[TeamInfo]:
        """Every team, baselines included, by id, with its number of submissions."""
        counts = (select(SubmissionRow.team_id, func.count().label("n"))
                  .group_by(SubmissionRow.team_id).subquery())
        query = (select(TeamRow, func.coalesce(counts.c.n, 0))
                 .outerjoin(counts, counts.c.team_id == TeamRow.id).order_by(TeamRow.id))
        with self._read() as session:
            return [_team_info(team, n) for team, n in session.execute(query)]

    def create_admin_token(self) -> str:
        """Create an organizer's token and return it (only its hash is stored)."""
        token = new_token()
        with self._writing() as session:
            session.add(AdminTokenRow(token_hash=hash_token(token), created_at=self.now()))
        return token

    def authenticate(self, token: str | None) -> Caller | None:
        """Who holds ``token``: a team, an organizer, or nobody (None: no, unknown or revoked).

        The row is found by the token's hash, and the hash compared once more in constant
        time, so neither the lookup nor the comparison depends on how much of a guess is right.
        """
        if not token:
            return None
        digest = {"digest": hash_token(token)}
        with self._read_engine.connect() as conn:
            team = conn.execute(_TEAM_BY_TOKEN, digest).one_or_none()
            if team is not None:
                if team.revoked_at is None and matches(token, team.token_hash or ""):
                    return Caller(admin=False, team_id=team.id, team=team.name)
                return None
            admin = conn.execute(_ADMIN_BY_TOKEN, digest).one_or_none()
            if admin is not None and admin.revoked_at is None \
                    and matches(token, admin.token_hash):
                return Caller(admin=True)
        return None

    # ------------------------------------------------------------------ submissions

    def submit(self, team_id: int, body: bytes, idempotency_key: str | None = None) -> Receipt:
        """Check, score and store a team's submission.

        Parameters
        ----------
        team_id : int
            The submitting team (authenticated by the caller).
        body : bytes
            The upload: the ``submission.json`` the runner writes.
        idempotency_key : str, optional
            The client's ``Idempotency-Key``; when given it must be the run id.

        Returns
        -------
        Receipt
            "accepted" (a new submission) or "duplicate" (this run was stored already with
            the same body: nothing is counted again).

        Raises
        ------
        SubmissionRejected
            422 for an invalid payload or another competition's run, 403 when no phase is
            open, 409 for another body under a run id already stored, 429 (``LimitReached``)
            when the team has used its submissions of the day.
        """
        competition = self._competition()
        now = self.now()
        submission, document = read_submission(body)
        if idempotency_key is not None and idempotency_key != submission.run_id:
            raise SubmissionRejected(
                422, f"the Idempotency-Key header {idempotency_key[:140]!r} is not the "
                     f"submission's run_id {submission.run_id!r}; send the run id as the key.")
        competition.check_run(document)
        phase = competition.phase_at(now)
        if phase is None:
            raise SubmissionRejected(403, _closed_reason(competition, now))
        scores = recompute(submission.fold_tests(), phase.references)
        payload = canonical_json(document)
        values = dict(
            team_id=team_id, phase=phase.name, run_id=submission.run_id,
            body_sha256=hashlib.sha256(payload.encode("ascii")).hexdigest(), payload=payload,
            submitted_at=now, phase1_score=scores.phase1_score,
            leaderboard_score=scores.leaderboard_score, interval_low=scores.interval[0],
            interval_high=scores.interval[1], tests=dict(scores.tests),
            num_folds=scores.num_folds, claimed_score=submission.claimed().get(
                "leaderboard_score"),
            flagged=bool(claimed_differs(submission, scores)), reproduction="pending")
        try:
            stored, new, used = self._insert(values, phase, now)
        except IntegrityError:
            # only when the schema's unique constraint caught what the lock should have: the
            # other insert has committed, so the repeat is answered from it
            stored, new, used = self._insert(values, phase, now)
        return self._receipt(stored, new, phase, used)

    def _insert(self, values: dict, phase: Phase, now: datetime
                ) -> tuple[_Stored, bool, int]:
        """Store a submission (the columns' ``values``) unless its run is there; returns (the
        stored submission, new?, submissions of the team in the phase today).

        Core statements built once (``_INSERT_STATEMENTS``) on a connection: the rules are
        those of the ORM version, without its unit of work on the hot path."""
        start = datetime.combine(now.date(), time(0), tzinfo=timezone.utc)
        end = start + timedelta(days=1)
        keys = {"team_id": values["team_id"], "phase": values["phase"]}
        with self._write_lock, self.engine.begin() as conn:
            # the lock that makes counting and inserting one step (PostgreSQL; on SQLite the
            # transaction's BEGIN IMMEDIATE holds the database's write lock already)
            team = conn.execute(_TEAM_FOR_UPDATE, keys).one()
            existing = conn.execute(_EXISTING, {**keys, "run_id": values["run_id"]}
                                    ).one_or_none()
            if existing is not None:
                if existing.body_sha256 != values["body_sha256"]:
                    raise SubmissionRejected(
                        409, f"run {values['run_id']} was submitted already (submission "
                             f"{existing.id}, {_iso(existing.submitted_at)}) with another "
                             f"body; a run id names one result. Submit a changed run as a "
                             f"new run (a new run id), or send the stored file unchanged.")
                return _Stored(**existing._mapping), False, 0
            used = conn.execute(_COUNT_TODAY, {**keys, "start": start, "end": end}).scalar_one()
            if used >= phase.daily_limit and not team.is_baseline:
                wait = max(1, math.ceil((end - now).total_seconds()))
                raise LimitReached(
                    f"daily limit reached: team {team.name!r} has made {used} of "
                    f"{phase.daily_limit} submissions to phase {phase.name!r} today (UTC); "
                    f"the next is accepted from {_iso(end)}, in {wait} s.", wait)
            new_id = conn.execute(_INSERT, values).scalar_one()
        stored = _Stored(id=new_id, **{f: values[f] for f in _STORED_FIELDS if f != "id"})
        return stored, True, used + 1

    def _receipt(self, row: _Stored, new: bool, phase: Phase, used: int) -> Receipt:
        hidden = not phase.public
        rank = None if hidden else self._rank(phase.name, row.team_id)
        if rank is not None and self._is_revealed(phase.name):
            rank = self._revealed_rank(phase.name, row.team_id)
        if new:
            message = f"submission {row.id} accepted for phase {phase.name!r}"
            message += f" ({used} of {phase.daily_limit} today, UTC)"
        else:
            message = (f"run {row.run_id} was submitted already as submission {row.id} "
                       f"({_iso(row.submitted_at)}); it is not counted again")
        if hidden:
            message += f"; the scores of phase {phase.name!r} are hidden until it is published"
        elif rank is not None:
            message += f"; the team's best submission ranks {rank}"
        if row.flagged:
            message += ("; the score in the upload differs from the score recomputed from its "
                        "folds: the recomputed one counts, and the submission is flagged for "
                        "the organizers")
        return Receipt(
            status="accepted" if new else "duplicate", submission_id=row.id, phase=phase.name,
            phase1_score=None if hidden else row.phase1_score,
            leaderboard_score=None if hidden else row.leaderboard_score,
            interval=None if hidden else (row.interval_low, row.interval_high),
            rank=rank, flagged=row.flagged, message=message + ".")

    def get_submission(self, submission_id: int, caller: Caller) -> SubmissionView | None:
        """A submission, when ``caller`` may see it (its team, or an organizer); else None.

        The scores of a phase that is not public are None unless the caller is an organizer.
        """
        with self._read() as session:
            found = session.execute(select(SubmissionRow, TeamRow).join(TeamRow).where(
                SubmissionRow.id == submission_id)).one_or_none()
        if found is None:
            return None
        row, team = found
        if not caller.admin and caller.team_id != team.id:
            return None
        hidden = not caller.admin and not self._is_public(row.phase)
        # the private scores: only once the phase is revealed, and never where the public
        # ones are hidden
        private = not hidden and self._is_revealed(row.phase) \
            and row.private_leaderboard_score is not None
        return SubmissionView(
            submission_id=row.id, team=team.name, is_baseline=team.is_baseline, phase=row.phase,
            run_id=row.run_id, submitted_at=row.submitted_at,
            phase1_score=None if hidden else row.phase1_score,
            leaderboard_score=None if hidden else row.leaderboard_score,
            interval=None if hidden else (row.interval_low, row.interval_high),
            tests=None if hidden else dict(row.tests), num_folds=row.num_folds,
            claimed_score=row.claimed_score, flagged=row.flagged, reproduction=row.reproduction,
            payload_url=f"/api/v1/submissions/{row.id}/payload" if caller.admin else None,
            private_phase1_score=row.private_phase1_score if private else None,
            private_leaderboard_score=row.private_leaderboard_score if private else None,
            private_interval=((row.private_interval_low, row.private_interval_high)
                              if private else None))

    def payload(self, submission_id: int, caller: Caller) -> str | None:
        """The body of a submission as stored (canonical JSON), for an organizer; else None.

        Parameters
        ----------
        submission_id : int
        caller : Caller
            Only an organizer reads payloads (a team gets None, as for a missing one).

        Returns
        -------
        str or None
            The stored JSON text: the uploaded document with sorted keys.
        """
        if not caller.admin:
            return None
        with self._read() as session:
            return session.scalars(select(SubmissionRow.payload).where(
                SubmissionRow.id == submission_id)).one_or_none()

    # ------------------------------------------------------------------ reproductions

    def record_reproduction(self, submission_id: int, body: bytes) -> dict:
        """Store the verdict of the organizers' reproduction of a submission.

        The latest verdict is the submission's (the board's badge); every report is kept in
        ``reproductions``. A report with ``private`` sets the submission's private scores,
        recomputed from its private folds with the references of the submission's phase;
        they are shown only after the phase is revealed (``reveal_phase``).

        Parameters
        ----------
        submission_id : int
        body : bytes
            The report (see ``ReproductionReport``).

        Returns
        -------
        dict
            ``{"status": "recorded", "submission_id", "verdict"}`` (no score: the answer must
            not tell a private score before the reveal).

        Raises
        ------
        SubmissionRejected
            404 when there is no such submission; 413/422 for an invalid report; 422 when
            the submission's phase is no longer in the competition file (no references to
            score the private folds with).
        """
        with self._read() as session:
            found = session.execute(select(SubmissionRow.num_folds, SubmissionRow.phase).where(
                SubmissionRow.id == submission_id)).one_or_none()
        if found is None:
            raise SubmissionRejected(404, f"no submission {submission_id}")
        num_folds, phase_name = found
        report = parse_reproduction(body, num_folds)
        private_tests = report.private_tests()
        scores = None
        if private_tests is not None:
            phases = {p.name: p for p in self._competition().phases}
            if phase_name not in phases:
                raise SubmissionRejected(422, f"submission {submission_id} belongs to phase "
                                              f"{phase_name!r}, which the competition file "
                                              f"no longer has: its private folds cannot be "
                                              f"scored")
            scores = recompute(private_tests, phases[phase_name].references)
        with self._writing() as session:
            row = session.get(SubmissionRow, submission_id)
            if row is None:  # deleted meanwhile (a baseline whose file changed)
                raise SubmissionRejected(404, f"no submission {submission_id}")
            session.add(ReproductionRow(
                submission_id=submission_id, verdict=report.verdict, private=report.private,
                fingerprint_matches=report.fingerprint_matches,
                harness_version=report.harness_version,
                table=[r.model_dump() for r in report.table], log_tail=report.log_tail,
                private_fold_tests=private_tests, recorded_at=self.now()))
            row.reproduction = report.verdict
            if scores is not None:
                row.private_phase1_score = scores.phase1_score
                row.private_leaderboard_score = scores.leaderboard_score
                row.private_interval_low, row.private_interval_high = scores.interval
                row.private_tests = dict(scores.tests)
        return {"status": "recorded", "submission_id": submission_id,
                "verdict": report.verdict}

    # ------------------------------------------------------------------ reveals

    def reveal_phase(self, phase_name: str) -> tuple[datetime, bool]:
        """Reveal a phase's private scores: its board ranks by them from now on.

        Parameters
        ----------
        phase_name : str
            A phase of the competition file when the store has one; else a phase that has
            submissions in the database (the server pins the baselines on every phase).

        Returns
        -------
        (datetime, bool)
            When the phase was revealed, and whether it was now (False: revealed before).

        Raises
        ------
        ConfigError
            When there is no such phase.
        """
        known = self.phase_names()
        if phase_name not in known:
            shown = ", ".join(repr(p) for p in known) or "none yet"
            raise ConfigError(f"no phase named {phase_name!r}; the phases are: {shown}.")
        with self._writing() as session:
            found = session.get(PhaseRevealRow, phase_name)
            if found is not None:
                return found.revealed_at, False
            now = self.now()
            session.add(PhaseRevealRow(phase=phase_name, revealed_at=now))
            return now, True

    def phase_names(self) -> list[str]:
        """The phases: the competition file's, in its order; without one, those with
        submissions in the database, by name."""
        if self.competition is not None:
            return [p.name for p in self.competition.phases]
        with self._read() as session:
            return sorted(session.scalars(select(SubmissionRow.phase).distinct()))

    def reveals(self) -> dict[str, datetime]:
        """``{phase: revealed_at}`` of the revealed phases."""
        with self._read() as session:
            return {r.phase: r.revealed_at for r in session.scalars(select(PhaseRevealRow))}

    def _revealed_rank(self, phase_name: str, team_id: int) -> int | None:
        """The team's place on a revealed phase's board (by private score); it orders in
        Python, which a revealed phase (closed, rarely uploaded to) can afford."""
        with self._read() as session:
            name = session.get(TeamRow, team_id).name
        ranks = {r.team: r.rank for r in self.board(phase_name).rows if not r.is_baseline}
        return ranks.get(name)

    def _is_revealed(self, phase_name: str) -> bool:
        with self._read() as session:
            return session.get(PhaseRevealRow, phase_name) is not None

    def _is_public(self, phase_name: str) -> bool:
        phases = {p.name: p for p in self._competition().phases}
        return phases[phase_name].public if phase_name in phases else False

    # ------------------------------------------------------------------ the board

    def _best(self, session: Session, phase: str, revealed: bool = False) -> list[_Best]:
        """Each team's best submission of ``phase``: highest leaderboard score, then phase-1
        score, then the earliest; with the team's number of submissions and last time.

        ``revealed``: the highest private score first (submissions without one after the
        others), then the order above."""
        order = _PRIVATE_FIRST if revealed else _BEST_FIRST
        ranked = select(
            SubmissionRow.id.label("sid"),
            func.row_number().over(partition_by=SubmissionRow.team_id, order_by=order).label("n"),
            func.count().over(partition_by=SubmissionRow.team_id).label("count"),
            func.max(SubmissionRow.submitted_at).over(partition_by=SubmissionRow.team_id)
            .label("last"),
        ).where(SubmissionRow.phase == phase).subquery()
        query = (select(SubmissionRow, TeamRow.name, TeamRow.is_baseline, ranked.c.count,
                        ranked.c.last)
                 .join(ranked, ranked.c.sid == SubmissionRow.id).join(TeamRow)
                 .where(ranked.c.n == 1).options(defer(SubmissionRow.payload)))
        best = [_Best(row, name, bool(baseline), int(count), _as_utc(last))
                for row, name, baseline, count, last in session.execute(query)]
        if self.competition is not None:
            # a baseline no longer in the competition file is not shown
            pinned = {b.name for b in self.competition.baselines}
            best = [b for b in best if not b.is_baseline or b.team in pinned]
        best.sort(key=lambda b: _sort_key(b.submission, revealed))
        return best

    def _rank(self, phase: str, team_id: int) -> int | None:
        """The place of a team on a phase's board (None when it has no submission there).

        One more than the number of other teams (not baselines) with a submission better
        than the team's best (in the board's order). One query: the team's best, then, for
        each other team, whether it has a better submission, a seek in the index on (team,
        phase, leaderboard score); so it costs a few index lookups per team and does not grow
        with the number of submissions.
        """
        with self._read_engine.connect() as conn:
            found = conn.execute(_RANK, {"team_id": team_id, "phase": phase}).one_or_none()
        return None if found is None else int(found[0]) + 1

    def board(self, phase_name: str | None = None, *, admin: bool = False) -> Board:
        """The board of a phase: each team's best submission, and the baselines, best first.

        Parameters
        ----------
        phase_name : str, optional
            The phase (default: the current one, see ``Competition.current_phase``).
        admin : bool
            Show the scores of a phase that is not public.

        Returns
        -------
        Board
            Teams ranked 1, 2, ... (baselines among them, unranked). When the scores are
            hidden, the rows are in the order of the team names, without scores or ranks.
            When the phase is revealed (``reveal_phase``), each team's row is its submission
            with the best private score, ranked by it (then by the public score, then the
            earliest), teams without a private score after those with one; the rows show
            both scores. Before the reveal, no private score is in the board.

        Raises
        ------
        SubmissionRejected
            404 when there is no such phase.
        """
        competition = self._competition()
        now = self.now()
        phase = (competition.current_phase(now) if phase_name is None
                 else competition.phase(phase_name))
        with self._read() as session:
            revealed = session.get(PhaseRevealRow, phase.name) is not None
            best = self._best(session, phase.name, revealed)
        hidden = not phase.public and not admin
        if hidden:
            # the order alone would tell the ranking
            best.sort(key=lambda b: (b.is_baseline, _folded(b.team), b.team))
        rows, rank = [], 0
        for b in best:
            if not b.is_baseline and not hidden:
                rank += 1
            rows.append(_board_row(b, None if b.is_baseline or hidden else rank, hidden,
                                   revealed))
        return Board(competition=competition.name, phase=phase.name,
                     phases=tuple(p.name for p in competition.phases), public=phase.public,
                     rows=tuple(rows), generated_at=now, tests=tuple(LEADERBOARD_TESTS),
                     revealed=revealed)

    # ------------------------------------------------------------------ baselines

    def pin_baselines(self) -> list[tuple[str, str, int]]:
        """Store the competition's baselines on the board of every phase, once.

        Each baseline file is read and checked like an upload, scored with each phase's
        references and stored under a team of the baseline's name that has no token. Run at
        every start: a baseline already stored with the same content is left alone; a
        changed file replaces what its baseline had stored.

        Returns
        -------
        list of (str, str, int)
            (baseline, phase, submission id) of each baseline's submission on each board.

        Raises
        ------
        ConfigError
            When a baseline file is missing or is not a valid run of this competition (the
            message names the file), or a team (not a baseline) has a baseline's name.
        """
        competition = self._competition()
        pinned = []
        for spec in competition.baselines:
            try:
                submission = spec.load()
                competition.check_run(submission)
            except SubmissionRejected as exc:
                raise ConfigError(f"baseline {spec.name!r}: {spec.file} is not a valid run of "
                                  f"this competition: {exc.reason}. Regenerate it (see the "
                                  f"competition file's comments).") from None
            document = submission.model_dump(by_alias=True, mode="json")
            payload = canonical_json(document)
            digest = hashlib.sha256(payload.encode("ascii")).hexdigest()
            team_id = self._baseline_team(spec.name)
            for phase in competition.phases:
                scores = recompute(submission.fold_tests(), phase.references)
                pinned.append((spec.name, phase.name, self._pin(
                    team_id, phase.name, submission.run_id, digest, payload, scores)))
        return pinned

    def _baseline_team(self, name: str) -> int:
        check_team_name(name)
        with self._writing() as session:
            team = session.scalars(select(TeamRow).where(TeamRow.name == name)).one_or_none()
            if team is None:
                team = TeamRow(name=name, email=None, token_hash=None, is_baseline=True,
                            created_at=self.now())
                session.add(team)
                session.flush()
            elif not team.is_baseline:
                raise ConfigError(f"baseline {name!r}: a team of that name exists already; "
                                  f"rename the baseline in the competition file.")
            return team.id

    def _pin(self, team_id: int, phase: str, run_id: str, digest: str, payload: str,
             scores: Scores) -> int:
        with self._writing() as session:
            stored = session.scalars(select(SubmissionRow).where(
                SubmissionRow.team_id == team_id, SubmissionRow.phase == phase)).all()
            same = [s for s in stored if s.run_id == run_id and s.body_sha256 == digest]
            if same:
                return same[0].id
            for old in stored:  # a changed baseline file replaces the old run
                session.delete(old)
            session.flush()
            row = SubmissionRow(
                team_id=team_id, phase=phase, run_id=run_id, body_sha256=digest,
                payload=payload, submitted_at=self.now(), phase1_score=scores.phase1_score,
                leaderboard_score=scores.leaderboard_score, interval_low=scores.interval[0],
                interval_high=scores.interval[1], tests=dict(scores.tests),
                num_folds=scores.num_folds, claimed_score=None, flagged=False,
                reproduction="pending")
            session.add(row)
            session.flush()
            return row.id


# ---------------------------------------------------------------------------- helpers


class _SQLiteWriteLock:
    """The queue of an SQLite database's writers: a thread lock, and an ``flock`` on the file
    ``<database>-writer.lock`` for the writers of other processes (``serve --workers``).

    Only an addition: ``BEGIN IMMEDIATE`` still makes the transactions exact, whatever holds
    this lock or not (another program, a database the lock file cannot be created for). The
    lock only spares the writers SQLite's busy handler, which polls with sleeps of up to
    100 ms, so that the next writer starts as soon as the last one has committed. The kernel
    releases an ``flock`` when its process dies. SQLite's write-ahead log needs every process
    on one machine, so a lock of that machine is enough.
    """

    def __init__(self, url) -> None:
        self._thread = threading.Lock()
        database = url.database or ""
        plain_file = (fcntl is not None and database not in ("", ":memory:")
                      and not database.startswith("file:") and not url.query.get("uri"))
        self._path = f"{database}-writer.lock" if plain_file else None
        self._fd: int | None = None

    def __enter__(self) -> None:
        self._thread.acquire()
        try:
            if self._fd is None and self._path is not None:
                try:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    self._path = None  # e.g. a read-only folder: the thread lock alone
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread.release()
            raise

    def __exit__(self, *exc) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread.release()

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)



def _team_with_token(session: Session, name: str) -> TeamRow:
    """The team named ``name``; ConfigError when there is none or it is a baseline (no token)."""
    team = session.scalars(select(TeamRow).where(TeamRow.name == name)).one_or_none()
    if team is None:
        raise ConfigError(f"no team named {name!r}; `admin team list` shows the teams.")
    if team.is_baseline:
        raise ConfigError(f"{name!r} is a baseline: it has no token.")
    return team


def _team_info(team: TeamRow, submissions: int = 0) -> TeamInfo:
    return TeamInfo(id=team.id, name=team.name, email=team.email,
                    is_baseline=bool(team.is_baseline), created_at=team.created_at,
                    revoked_at=team.revoked_at, submissions=int(submissions))


def _as_utc(value) -> datetime:
    """A time from a window function: SQLite may give text, PostgreSQL an aware datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None \
        else value.astimezone(timezone.utc)


def _sort_key(row: SubmissionRow, revealed: bool) -> tuple:
    """The board's order as a Python sort key (``_BEST_FIRST``, or ``_PRIVATE_FIRST``)."""
    public = (-row.leaderboard_score, -row.phase1_score, row.submitted_at, row.id)
    if not revealed:
        return public
    private = row.private_leaderboard_score
    return (private is None, 0.0 if private is None else -private, *public)


def _board_row(best: _Best, rank: int | None, hidden: bool, revealed: bool = False
               ) -> BoardRow:
    row = best.submission
    # a private score leaves the database only here, and only for a revealed phase whose
    # scores are shown
    private = revealed and not hidden and row.private_leaderboard_score is not None
    return BoardRow(
        team=best.team, is_baseline=best.is_baseline, submission_id=row.id, rank=rank,
        leaderboard_score=None if hidden else row.leaderboard_score,
        interval=None if hidden else (row.interval_low, row.interval_high),
        phase1_score=None if hidden else row.phase1_score,
        tests=None if hidden else {t: row.tests[t] for t in LEADERBOARD_TESTS if t in row.tests},
        submissions=best.count, best_submitted=row.submitted_at, last_submitted=best.last,
        reproduction=row.reproduction, flagged=bool(row.flagged),
        private_score=row.private_leaderboard_score if private else None,
        private_interval=((row.private_interval_low, row.private_interval_high) if private
                          else None),
        private_phase1_score=row.private_phase1_score if private else None)


def _closed_reason(competition: Competition, now: datetime) -> str:
    phases = "; ".join(f"{p.name!r} from {_iso(p.opens)} until {_iso(p.closes)}"
                       for p in competition.phases)
    return (f"no phase of {competition.name!r} is open now ({_iso(now)}); submissions are "
            f"accepted in: {phases} (UTC).")
