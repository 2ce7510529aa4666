"""Who sends a request: the organizers' tokens, and the lookup of a token's holder."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select

from evaluation.errors import ConfigError
from evaluation.server.db._tables import AdminTokenRow, TeamRow
from evaluation.server.db._tokens import hash_token, matches, new_token

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db._session import Database

# The statements of ``authenticate`` (parameter digest), built once.
_TEAM_BY_TOKEN = select(TeamRow.id, TeamRow.name, TeamRow.token_hash, TeamRow.revoked_at).where(
    TeamRow.token_hash == bindparam("digest"))
_ADMIN_BY_TOKEN = select(AdminTokenRow.token_hash, AdminTokenRow.revoked_at).where(
    AdminTokenRow.token_hash == bindparam("digest"))


@dataclass(frozen=True)
class Caller:
    """Who sent a request: a team (``team_id``, ``team``) or an organizer (``admin``)."""

    admin: bool
    team_id: int | None = None
    team: str | None = None


def create_admin_token(db: Database) -> str:
    """Create an organizer's token and return it (only its hash is stored)."""
    token = new_token()
    with db.writing() as session:
        session.add(AdminTokenRow(token_hash=hash_token(token), created_at=db.now()))
    return token


@dataclass(frozen=True)
class AdminTokenInfo:
    """An organizer's token as listed (never the token): its id, when made and revoked."""

    id: int
    created_at: datetime
    revoked_at: datetime | None


def list_admin_tokens(db: Database) -> list[AdminTokenInfo]:
    """Every organizer's token, by id."""
    with db.reading() as session:
        rows = session.scalars(select(AdminTokenRow).order_by(AdminTokenRow.id)).all()
        return [AdminTokenInfo(r.id, r.created_at, r.revoked_at) for r in rows]


def revoke_admin_token(db: Database, token_id: int) -> AdminTokenInfo:
    """Revoke the organizer's token ``token_id`` (refused from now on); ConfigError when there
    is none. Revoking one revoked already keeps its first time."""
    with db.writing() as session:
        row = session.get(AdminTokenRow, token_id) if 0 < token_id < 2**31 else None
        if row is None:
            raise ConfigError(f"no organizer token {token_id}; `admin token list` lists them.")
        if row.revoked_at is None:
            row.revoked_at = db.now()
        return AdminTokenInfo(row.id, row.created_at, row.revoked_at)


def authenticate(db: Database, token: str | None) -> Caller | None:
    """Who holds ``token``: a team, an organizer, or nobody (None: no, unknown or revoked).

    The row is found by the token's hash, and the hash compared once more in constant time,
    so neither the lookup nor the comparison depends on how much of a guess is right.
    """
    if not token:
        return None
    digest = {"digest": hash_token(token)}
    with db.read_engine.connect() as conn:
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
