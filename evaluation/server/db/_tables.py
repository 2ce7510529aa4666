"""The leaderboard's tables (SQLAlchemy 2 ORM).

The tables: ``teams`` (a name, an email, the SHA-256 of the team's token; baselines are teams
without a token), ``submissions`` (one row per accepted upload: the recomputed scores, the
private scores once the organizers have reproduced the run on the private folds, and the body
as received, canonical JSON, less its per-user values), ``admin_tokens`` (hashes of the
organizers' tokens), ``reproductions`` (every verdict the organizers recorded for a
submission, the latest one shown), ``reproduction_jobs`` (the queue the organizers'
workers take submissions from: reproductions and scoring jobs), ``predictions`` (each
predictions upload's stream, which a scoring job scores), ``phase_reveals`` (the phases whose
private scores the organizers have revealed), ``phase_carries`` (the phases into which an
earlier phase's submissions were carried when they opened), ``user_values`` (each
submission's per-user values and costs, uploaded, scored or reproduced) and
``standings_snapshots`` (the last statistics computed of each board, shown at once after a
restart).

Times are stored in UTC. The schema is created and changed only by the Alembic migrations
shipped in ``migrations/`` (see ``upgrade``), never from these classes.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from evaluation.contract import MAX_TEAM_NAME

#: Longest email address (RFC 5321's limit on a path).
MAX_EMAIL = 320
#: Longest phase name and run id the tables hold.
MAX_PHASE_NAME = 80
MAX_RUN_ID = 128
#: Longest name a reproduction worker gives itself (its host and process, by default).
MAX_WORKER_NAME = 128
#: The longest failure reason of a reproduction job kept (characters).
MAX_REASON = 2000
#: The longest link to a fact sheet's code the table holds.
MAX_FACT_URL = 500

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

    ``payload`` is the body as received, in canonical JSON (sorted keys), less its per-user
    values (``user_values`` holds them, once, deflated), and ``body_sha256`` the hash of the
    whole body: a second upload under the same run id is a repeat when the hashes are equal.
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
        # the board: each team's best submission, count and last time, without reading rows
        Index(None, "phase", "team_id", "computed", "leaderboard_score", "phase1_score",
              "submitted_at"),
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
    # whether the scores are the organizers' own (a scoring job scored the uploaded
    # predictions, or a pinned baseline): only such rows are ranked and compared; the others
    # are a team's claim, shown apart as unverified
    computed: Mapped[bool] = mapped_column(Boolean, default=False)
    reproduction: Mapped[str] = mapped_column(String(20), default="pending")
    # the scores of the same model on the organizers' private folds (None until reproduced
    # with ``private``); shown only after the phase is revealed (``phase_reveals``)
    private_phase1_score: Mapped[float | None] = mapped_column(Double)
    private_leaderboard_score: Mapped[float | None] = mapped_column(Double)
    private_interval_low: Mapped[float | None] = mapped_column(Double)
    private_interval_high: Mapped[float | None] = mapped_column(Double)
    private_tests: Mapped[dict | None] = mapped_column(JSON)
    # when the team marked it as one of its final selections (None: not marked); the
    # private ranking uses the marked ones, else the team's best public ones
    final_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # a submission carried into this phase from an earlier one when it opened (the phase's
    # ``carry_from``): the submission it was carried from (whose predictions it scores, none
    # uploaded again) and that one's phase; None for an upload
    carried_from: Mapped[int | None] = mapped_column(Integer)
    carried_phase: Mapped[str | None] = mapped_column(String(MAX_PHASE_NAME))
    # the fact sheet given at final selection (the phase's ``fact_sheet``): the method in
    # plain text, the code's URL and commit; shown to others only once the phase is revealed
    fact_description: Mapped[str | None] = mapped_column(Text)
    fact_code_url: Mapped[str | None] = mapped_column(String(MAX_FACT_URL))
    fact_commit: Mapped[str | None] = mapped_column(String(40))
    fact_sheet_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # the harness version that computed the scores (None: not known, e.g. a claim, or a row
    # older than the column); the previous version's numbers once a rescore replaced them,
    # until the organizers drop them (``admin rescore --drop-old``)
    harness_version: Mapped[str | None] = mapped_column(String(64))
    previous_harness_version: Mapped[str | None] = mapped_column(String(64))
    previous_leaderboard_score: Mapped[float | None] = mapped_column(Double)
    previous_phase1_score: Mapped[float | None] = mapped_column(Double)

    team: Mapped[TeamRow] = relationship(back_populates="submissions")

    @property
    def private_interval(self) -> tuple[float, float] | None:
        """The private score's 95 % interval; None until reproduced on the private folds."""
        low, high = self.private_interval_low, self.private_interval_high
        return None if low is None or high is None else (low, high)


class ReproductionRow(Base):
    """One verdict of the organizers' reproduction of a submission; the latest one counts.

    ``table`` holds the per-test comparison as the reproduction sent it, ``log_tail`` the end
    of its log; ``private_fold_tests`` the per-fold tests on the private folds, when it ran
    them. Kept for the record; the API shows the team its own submissions' latest log tail.
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


class ReproductionJobRow(Base):
    """A submission waiting for (or taken by) an organizer's worker.

    ``kind`` is "reproduce" (run the model in a sandbox and compare) or "score" (score the
    uploaded predictions with the organizers' data); one row per submission and kind.
    ``state`` is "queued", "running" (a worker holds its lease until ``lease_expires_at``),
    "reproduced", "not reproduced", "scored" or "failed" (``reason`` says why); ``attempts``
    counts the runs begun (a lease that ran out counts as one). ``origin`` says what queued
    it: "final" (a final selection; unmarking it cancels the job while queued), "upload" (the
    phase reproduces every upload, or a predictions upload's scoring), "organizer" (a
    requeue) or "carry" (a submission carried into a new phase). ``private``: the run also
    evaluates the private folds (the phase's ``private_folds``).
    """

    __tablename__ = "reproduction_jobs"
    __table_args__ = (Index(None, "state", "id"), Index(None, "phase", "state"),
                      UniqueConstraint("submission_id", "kind"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16), default="reproduce")
    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME))
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    origin: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_id: Mapped[str | None] = mapped_column(String(64))
    lease_owner: Mapped[str | None] = mapped_column(String(MAX_WORKER_NAME))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # whose reason made a failed job fail: "platform" (infrastructure, a lost lease, an
    # organizer-side timeout: the submission does not count against the daily limit) or
    # "team" (the upload itself); None while it has not failed
    cause: Mapped[str | None] = mapped_column(String(16))
    # the rescore batch (``rescores``) a job of kind "rescore" scores for
    rescore_id: Mapped[int | None] = mapped_column(Integer)


class RescoreRow(Base):
    """A rescore of a phase's scored submissions under a new harness version (``admin
    rescore``): ``jobs`` queued (kind "rescore"), its results kept pending (``rescore_results``)
    until ``applied_at``; ``cancelled_at`` when the organizers gave it up; ``dropped_at`` when
    they dropped the numbers it replaced; ``reproductions`` queued again when applied."""

    __tablename__ = "rescores"
    __table_args__ = (Index(None, "phase"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME))
    harness_version: Mapped[str] = mapped_column(String(64))
    jobs: Mapped[int] = mapped_column(Integer)
    reproductions: Mapped[int] = mapped_column(Integer, default=0)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    dropped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RescoreResultRow(Base):
    """One submission's numbers from a rescore: pending (the board does not read them) until
    the batch is applied; then ``old_*`` keep what they replaced. The per-user values
    (``k``, ``n_users``, ``users_sha256``, ``blob``) become a trusted ``user_values`` row when
    applied."""

    __tablename__ = "rescore_results"
    __table_args__ = (UniqueConstraint("rescore_id", "submission_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rescore_id: Mapped[int] = mapped_column(ForeignKey("rescores.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id",
                                                          ondelete="CASCADE"))
    harness_version: Mapped[str | None] = mapped_column(String(64))
    phase1_score: Mapped[float] = mapped_column(Double)
    leaderboard_score: Mapped[float] = mapped_column(Double)
    interval_low: Mapped[float] = mapped_column(Double)
    interval_high: Mapped[float] = mapped_column(Double)
    tests: Mapped[dict] = mapped_column(JSON)
    num_folds: Mapped[int] = mapped_column(Integer)
    flagged: Mapped[bool] = mapped_column(Boolean)
    run_hash: Mapped[str] = mapped_column(String(64))
    k: Mapped[int | None] = mapped_column(Integer)
    n_users: Mapped[list | None] = mapped_column(JSON)
    users_sha256: Mapped[list | None] = mapped_column(JSON)
    blob: Mapped[bytes | None] = mapped_column(LargeBinary)
    old_harness_version: Mapped[str | None] = mapped_column(String(64))
    old_phase1_score: Mapped[float | None] = mapped_column(Double)
    old_leaderboard_score: Mapped[float | None] = mapped_column(Double)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)


class UserValuesRow(Base):
    """A submission's per-user values: the upload's (self-reported) or a reproduction's
    (trusted), public folds or private ones.

    ``blob`` is the deflated blob of ``evaluation.challenge.encode_user_values`` (not base64);
    None when the upload carried no per-user values (a client older than them): the row then
    keeps only the costs. ``n_users`` and ``k`` are what the blob was checked against, to read
    it back, ``blob_sha256`` its hash (the key of the decoded values kept in memory);
    ``users_sha256`` its folds' user hashes, which every submission of a phase and
    run hash must share (``phase``, ``run_hash`` find them). ``costs`` is one
    ``{"train_seconds", "predict_seconds", "peak_rss_mib"}`` per fold, or None. Every row is
    kept; the latest trusted one counts for the board, else the upload's.
    """

    __tablename__ = "user_values"
    __table_args__ = (Index(None, "submission_id", "recorded_at"),
                      Index(None, "phase", "run_hash"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id",
                                                          ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(20))
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)
    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME))
    run_hash: Mapped[str] = mapped_column(String(64))
    k: Mapped[int | None] = mapped_column(Integer)
    n_users: Mapped[list | None] = mapped_column(JSON)
    users_sha256: Mapped[list | None] = mapped_column(JSON)
    blob: Mapped[bytes | None] = mapped_column(LargeBinary)
    blob_sha256: Mapped[str | None] = mapped_column(String(64))
    costs: Mapped[list | None] = mapped_column(JSON)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PredictionsRow(Base):
    """A submission's uploaded predictions: the stream as received
    (``evaluation.contract.encode_predictions``), which a scoring job scores."""

    __tablename__ = "predictions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), unique=True)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    body_sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PhaseRevealRow(Base):
    """A phase whose private scores the organizers revealed, and when (``admin phase reveal``).
    """

    __tablename__ = "phase_reveals"

    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME), primary_key=True)
    revealed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PhasePublicationRow(Base):
    """A phase whose public scores the organizers published before any reveal, and when
    (``admin phase publish``): everyone sees them from then on, as in a public phase."""

    __tablename__ = "phase_publications"

    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME), primary_key=True)
    published_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PhaseCarryRow(Base):
    """A phase into which the submissions of an earlier one were carried, once, when it
    opened: from which phase, by which rule, when, and how many."""

    __tablename__ = "phase_carries"

    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME), primary_key=True)
    source: Mapped[str] = mapped_column(String(MAX_PHASE_NAME))
    rule: Mapped[str] = mapped_column(String(16))
    carried: Mapped[int] = mapped_column(Integer)
    carried_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AdminTokenRow(Base):
    """An organizer's token (its hash): may read every submission and the hidden scores."""

    __tablename__ = "admin_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class BoardChangeRow(Base):
    """One row (id 1) whose ``version`` every change of a table a board reads raises (SQLite
    triggers, made by the migrations): a process may answer again a board it made while the
    version stays the same, whichever process wrote."""

    __tablename__ = "board_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


class StandingsSnapshotRow(Base):
    """The last paired statistics computed of one board (a phase, revealed or not), kept so
    that a restarted server shows them at once, marked as being updated until they are
    computed again: ``signature`` (the sha256 of all the statistics depend on: the rows, the
    versions of their values, the settings) tells whether they are still current;
    ``payload`` the statistics and the compared teams' replicates (read by
    ``evaluation.server.standings``); ``computed_at`` the time of the board they were
    computed for. Not a table the board reads: writing it changes no board."""

    __tablename__ = "standings_snapshots"

    phase: Mapped[str] = mapped_column(String(MAX_PHASE_NAME), primary_key=True)
    revealed: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    signature: Mapped[str] = mapped_column(String(64))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime)
