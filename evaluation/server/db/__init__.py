"""The leaderboard's database, SQLAlchemy only: what ``admin``'s team and token commands need.

It owns the engine of a database URL (SQLite's and PostgreSQL's settings, the migrations of
``migrations/`` and whether the schema is current), the SQLite file's backup and restore, the
tables, the write lock that takes SQLite's writes one at a time, and ``Database``, the handle
(the engine, the competition, the clock) that every transaction of the server goes through.
On it, the records that need no scoring: teams and their tokens, the organizers' tokens and
who holds a token, the phases' reveals and publications and what each shows, a team's rank by
public score, the board's change counter, and whether the database can take writes.
"""

from __future__ import annotations

from evaluation.server.db._auth import (
    AdminTokenInfo,
    Caller,
    authenticate,
    create_admin_token,
    list_admin_tokens,
    revoke_admin_token,
)
from evaluation.server.db._changes import board_version
from evaluation.server.db._engine import (
    MIGRATIONS_DIR,
    is_current,
    make_engine,
    schema_heads,
    scrub,
    shown_url,
    upgrade,
)
from evaluation.server.db._files import (
    backup,
    check_integrity,
    describe,
    in_use,
    restore,
    sqlite_path,
)
from evaluation.server.db._lock import WRITE_WAIT_S, WriteBusy, write_deadline
from evaluation.server.db._names import check_email, check_team_name
from evaluation.server.db._ranking import BEST_FIRST, PRIVATE_FIRST, as_utc, rank, sort_key
from evaluation.server.db._readiness import readiness
from evaluation.server.db._reveals import (
    is_public,
    is_published,
    is_revealed,
    phase_names,
    publications,
    publish_phase,
    publish_warnings,
    reveal_phase,
    reveal_refusal,
    reveal_warnings,
    reveals,
    scores_shown,
    visibility,
)
from evaluation.server.db._session import STANDINGS_MIN_INTERVAL_S, STANDINGS_WAIT_S, Database, iso
from evaluation.server.db._tables import (
    MAX_FACT_URL,
    MAX_REASON,
    MAX_WORKER_NAME,
    AdminTokenRow,
    Base,
    PhaseCarryRow,
    PhasePublicationRow,
    PhaseRevealRow,
    PredictionsRow,
    ReproductionJobRow,
    ReproductionRow,
    RescoreResultRow,
    RescoreRow,
    StandingsSnapshotRow,
    SubmissionRow,
    TeamRow,
    UserValuesRow,
)
from evaluation.server.db._teams import TeamInfo, add_team, list_teams, new_team_token, revoke_team
from evaluation.server.db._tokens import hash_token, matches, new_token

#: The tables' metadata (what the migrations build).
metadata = Base.metadata

__all__ = [
    "AdminTokenInfo",
    "AdminTokenRow",
    "BEST_FIRST",
    "Base",
    "Caller",
    "Database",
    "MAX_FACT_URL",
    "MAX_REASON",
    "MAX_WORKER_NAME",
    "MIGRATIONS_DIR",
    "PRIVATE_FIRST",
    "PhaseCarryRow",
    "PhasePublicationRow",
    "PhaseRevealRow",
    "PredictionsRow",
    "ReproductionJobRow",
    "ReproductionRow",
    "RescoreResultRow",
    "RescoreRow",
    "STANDINGS_MIN_INTERVAL_S",
    "STANDINGS_WAIT_S",
    "StandingsSnapshotRow",
    "SubmissionRow",
    "TeamInfo",
    "TeamRow",
    "UserValuesRow",
    "WRITE_WAIT_S",
    "WriteBusy",
    "add_team",
    "as_utc",
    "authenticate",
    "backup",
    "board_version",
    "check_email",
    "check_integrity",
    "check_team_name",
    "create_admin_token",
    "describe",
    "hash_token",
    "in_use",
    "is_current",
    "is_public",
    "is_published",
    "is_revealed",
    "iso",
    "list_admin_tokens",
    "list_teams",
    "make_engine",
    "matches",
    "metadata",
    "new_team_token",
    "new_token",
    "phase_names",
    "publications",
    "publish_phase",
    "publish_warnings",
    "rank",
    "readiness",
    "restore",
    "reveal_phase",
    "reveal_refusal",
    "reveal_warnings",
    "reveals",
    "revoke_admin_token",
    "revoke_team",
    "schema_heads",
    "scores_shown",
    "scrub",
    "shown_url",
    "sort_key",
    "sqlite_path",
    "upgrade",
    "visibility",
    "write_deadline",
]
