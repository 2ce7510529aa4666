"""The ``admin`` commands on the database, the teams and the organizers' tokens.

They need SQLAlchemy alone (``evaluation.server.db``): neither the web framework nor the
scoring is imported, and each starts in well under a second.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from evaluation.contract import folded, team_name_problem
from evaluation.errors import ConfigError
from evaluation.server.db import (
    Database,
    TeamInfo,
    add_team,
    backup,
    check_integrity,
    create_admin_token,
    describe,
    is_current,
    list_admin_tokens,
    list_teams,
    make_engine,
    new_team_token,
    readiness,
    restore,
    revoke_admin_token,
    revoke_team,
    sqlite_path,
    upgrade,
)

if TYPE_CHECKING:  # the competition needs pandas and pydantic: only the phase commands load it
    from evaluation.server.core import Competition

TOKEN_NOTE = ("the token is shown only now: the database keeps only its hash. Send it to the "
              "team (it goes into upload.env as UPLOAD_TOKEN); if it is lost or leaked, "
              "`admin team token NAME` gives the team a new one and refuses the old one.")


# the engines the command opened: closed when it ends (a restore in the same process, as in
# the tests, must not find the database open)
_ENGINES: list = []


def closing(command: Callable[[argparse.Namespace], int]
             ) -> Callable[[argparse.Namespace], int]:
    """``command``, closing the database connections it opened when it returns."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        finally:
            while _ENGINES:
                _ENGINES.pop().dispose()

    return run


def open_database(args: argparse.Namespace, create: bool = False,
                  competition: Competition | None = None) -> Database:
    """The store of ``args.db``: said on stderr, refused when it is a missing SQLite file
    (unless ``create`` or ``--create``), checked, and migrated when its schema is older."""
    print(f"database: {describe(args.db)}", file=sys.stderr)
    engine = make_engine(args.db)
    _ENGINES.append(engine)
    path = sqlite_path(args.db)
    if path is not None and not path.exists() and not (create or args.create):
        raise ConfigError(f"no database at {path}: give the server's --db URL (a relative "
                          f"sqlite:/// path is read from the current folder), or create it "
                          f"with `python -m evaluation admin --db {args.db} db init`.")
    if path is not None and path.exists():
        check_integrity(path)
    if not is_current(engine):
        upgrade(engine)
    return Database(engine, competition)


@closing
def db_init(args: argparse.Namespace) -> int:
    """Create the database (or migrate an existing one) and say where it is."""
    path = sqlite_path(args.db)
    existed = path is None or path.exists()
    open_database(args, create=True)
    print("the database exists already; its schema is current" if existed else
          "database created; start the server with the same --db, and add teams with "
          "`admin team add`")
    return 0


@closing
def db_check(args: argparse.Namespace) -> int:
    """Check the database: its integrity (SQLite), its schema, whether it can take uploads;
    exit 1 when it cannot."""
    problems = readiness(open_database(args))
    for problem in problems:
        print(f"not ready: {problem}")
    if not problems:
        print("ok: intact, schema current, ready for uploads")
    return 1 if problems else 0


@closing
def db_backup(args: argparse.Namespace) -> int:
    """Back the SQLite database up to ``args.file`` (SQLite's backup API)."""
    store = open_database(args)
    target = backup(store.engine, args.file)
    print(f"backup written to {target} ({target.stat().st_size} bytes, checked); restore it "
          f"with `admin db restore {target}`")
    return 0


@closing
def db_restore(args: argparse.Namespace) -> int:
    """Replace the SQLite database by the backup ``args.file``; the old files are set aside."""
    print(f"database: {describe(args.db)}", file=sys.stderr)
    engine = make_engine(args.db)
    _ENGINES.append(engine)
    aside = restore(engine, args.file)
    where = f"; the replaced files are kept as {aside}[-wal|-shm]" if aside else ""
    print(f"restored {args.file} into {sqlite_path(args.db)}{where}. Start the server "
          f"again.")
    return 0


@closing
def team_add(args: argparse.Namespace) -> int:
    """Add the team ``args.name`` and print its token; ConfigError (exit 2) for a bad or
    duplicate name or email."""
    team, token = add_team(open_database(args), args.name, args.email)
    print(f"team {team.name!r} added (id {team.id}, {team.email})")
    print(f"token: {token}")
    print(TOKEN_NOTE)
    return 0


@closing
def team_revoke(args: argparse.Namespace) -> int:
    """Revoke the token of team ``args.name``; ConfigError (exit 2) when there is none."""
    team = revoke_team(open_database(args), args.name)
    print(f"team {team.name!r} revoked at {team.revoked_at:%Y-%m-%d %H:%M:%S} UTC: its token "
          f"is refused from now on; its submissions stay on the board")
    return 0


@closing
def team_token(args: argparse.Namespace) -> int:
    """Give team ``args.name`` a new token and print it; ConfigError (exit 2) when there is
    no such team."""
    team, token = new_team_token(open_database(args), args.name)
    print(f"team {team.name!r} has a new token; the old one is refused from now on")
    print(f"token: {token}")
    print(TOKEN_NOTE)
    return 0


@closing
def team_list(args: argparse.Namespace) -> int:
    """Print the teams: id, state, submissions, created, name and email (no tokens)."""
    teams = list_teams(open_database(args))
    if not teams:
        print("no teams yet: add one with `python -m evaluation admin team add NAME --email E`")
        return 0
    print(f"{'id':>4}  {'state':<8}  {'subs':>5}  {'created (UTC)':<16}  name <email>")
    for t in teams:
        email = f" <{t.email}>" if t.email else ""
        print(f"{t.id:>4}  {t.state:<8}  {t.submissions:>5}  {t.created_at:%Y-%m-%d %H:%M}  "
              f"{t.name}{email}")
    for warning in name_warnings(teams):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def name_warnings(teams: list[TeamInfo]) -> list[str]:
    """What a reproduction worker cannot do with the names of ``teams`` (added before the
    team-name rule): a name that is no folder name, and names that are one folder on a
    case-insensitive disk."""
    warnings = []
    seen: dict[str, TeamInfo] = {}
    for t in teams:
        problem = None if t.is_baseline else team_name_problem(t.name)
        if problem is not None:
            warnings.append(f"team {t.id} ({t.name!r}) breaks the team-name rule: "
                            f"{problem.rstrip('.')}. It keeps its token and its submissions, "
                            f"but a worker cannot find its checkout: reproduce its "
                            f"submissions with `reproduce CHECKOUT`.")
        other = seen.setdefault(folded(t.name), t)
        if other is not t:
            warnings.append(f"teams {other.id} ({other.name!r}) and {t.id} ({t.name!r}) differ "
                            f"only by case or Unicode form: on a case-insensitive disk their "
                            f"checkouts are one folder; keep them apart by submission "
                            f"(<team>/<id>/).")
    return warnings


@closing
def token_create(args: argparse.Namespace) -> int:
    """Create an organizer token and print it once."""
    token = create_admin_token(open_database(args))
    print(f"organizer token: {token}")
    print("it is shown only now (the database keeps only its hash); it reads every submission "
          "and the hidden scores: keep it secret.")
    return 0


@closing
def token_list(args: argparse.Namespace) -> int:
    """Print the organizer tokens: id, state, created and revoked times (never the tokens)."""
    tokens = list_admin_tokens(open_database(args))
    if not tokens:
        print("no organizer tokens: create one with `python -m evaluation admin token create`")
        return 0
    print(f"{'id':>4}  {'state':<8}  {'created (UTC)':<16}  revoked (UTC)")
    for t in tokens:
        state, revoked = (("revoked", f"{t.revoked_at:%Y-%m-%d %H:%M}") if t.revoked_at
                          else ("active", "-"))
        print(f"{t.id:>4}  {state:<8}  {t.created_at:%Y-%m-%d %H:%M}  {revoked}")
    return 0


@closing
def token_revoke(args: argparse.Namespace) -> int:
    """Revoke the organizer token ``args.id``; ConfigError (exit 2) when there is none."""
    token = revoke_admin_token(open_database(args), args.id)
    print(f"organizer token {token.id} revoked at {token.revoked_at:%Y-%m-%d %H:%M:%S} UTC: it "
          f"is refused from now on")
    return 0
