"""The teams: adding one with its token, revoking it, giving it a new token, listing them.

A team's token is shown once, when it is made: the database keeps only its SHA-256.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from evaluation.contract import folded
from evaluation.errors import ConfigError
from evaluation.server.db._names import check_email, check_team_name
from evaluation.server.db._tables import SubmissionRow, TeamRow
from evaluation.server.db._tokens import hash_token, new_token

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db._session import Database


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


def add_team(db: Database, name: str, email: str) -> tuple[TeamInfo, str]:
    """Add a team with a new token.

    Parameters
    ----------
    db : Database
    name : str
        1 to 80 printable characters of any script, stored as given.
    email : str
        Whom the organizers contact.

    Returns
    -------
    (TeamInfo, str)
        The team and its token; the database keeps only the token's hash, so this is the
        only time the token is known.

    Raises
    ------
    ConfigError
        When the name or email is malformed, or a team of that name (compared ignoring case
        and Unicode compatibility forms) exists already.
    """
    check_team_name(name)
    check_email(email)
    token = new_token()
    try:
        with db.writing() as session:
            _refuse_duplicate_name(session, name)
            team = TeamRow(name=name, email=email, token_hash=hash_token(token),
                           is_baseline=False, created_at=db.now())
            session.add(team)
            session.flush()
            info = _team_info(team)
    except IntegrityError:
        raise ConfigError(f"a team named {name!r} exists already; choose another name.") \
            from None
    return info, token


def revoke_team(db: Database, name: str) -> TeamInfo:
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
    with db.writing() as session:
        team = _team_with_token(session, name)
        if team.revoked_at is None:
            team.revoked_at = db.now()
        return _team_info(team)


def new_team_token(db: Database, name: str) -> tuple[TeamInfo, str]:
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
    with db.writing() as session:
        team = _team_with_token(session, name)
        team.token_hash = hash_token(token)
        team.revoked_at = None
        return _team_info(team), token


def list_teams(db: Database) -> list[TeamInfo]:
    """Every team, baselines included, by id, with its number of submissions."""
    counts = (select(SubmissionRow.team_id, func.count().label("n"))
              .group_by(SubmissionRow.team_id).subquery())
    query = (select(TeamRow, func.coalesce(counts.c.n, 0))
             .outerjoin(counts, counts.c.team_id == TeamRow.id).order_by(TeamRow.id))
    with db.reading() as session:
        return [_team_info(team, n) for team, n in session.execute(query)]


def _refuse_duplicate_name(session: Session, name: str) -> None:
    """ConfigError when a team's name equals ``name`` ignoring case and compatibility forms."""
    wanted = folded(name)
    for other in session.scalars(select(TeamRow.name)):
        if folded(other) == wanted:
            same = "" if other == name else f" ({other!r}: names are compared ignoring " \
                                            f"case and Unicode compatibility forms)"
            raise ConfigError(f"a team named {name!r} exists already{same}; choose "
                              f"another name.")


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
