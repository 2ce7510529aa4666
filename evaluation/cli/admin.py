"""``python -m evaluation admin``: the organizers' commands (teams, tokens) on the database."""

from __future__ import annotations

import argparse

from evaluation.cli.serve import DEFAULT_DB, import_server

TOKEN_NOTE = ("the token is shown only now: the database keeps only its hash. Send it to the "
              "team (it goes into upload.env as UPLOAD_TOKEN); if it is lost or leaked, "
              "`admin team token NAME` gives the team a new one and refuses the old one.")


def register(subparsers) -> None:
    """Add the ``admin`` command (``team add|revoke|list``, ``token create``) to ``subparsers``.
    """
    p = subparsers.add_parser(
        "admin",
        help="manage the leaderboard's teams and tokens (organizers)",
        description="Add, revoke and list the leaderboard's teams, and create organizer "
                    "tokens. Migrates the database's schema first. Needs the server extra.",
    )
    _db_option(p, DEFAULT_DB)
    groups = p.add_subparsers(dest="admin_group", required=True, metavar="{team,token}")

    team = groups.add_parser("team", help="add, revoke or list teams, or renew a team's token")
    actions = team.add_subparsers(dest="admin_action", required=True,
                                  metavar="{add,revoke,token,list}")
    add = actions.add_parser("add", help="add a team and print its token (once)")
    add.add_argument("name", metavar="NAME", help="1 to 80 printable characters, any script")
    add.add_argument("--email", required=True, help="the team's contact address")
    _db_option(add)
    add.set_defaults(func=team_add)
    revoke = actions.add_parser("revoke", help="revoke a team's token (its submissions stay)")
    revoke.add_argument("name", metavar="NAME")
    _db_option(revoke)
    revoke.set_defaults(func=team_revoke)
    renew = actions.add_parser("token", help="give a team a new token and print it (once); "
                                             "the old token is refused from then on")
    renew.add_argument("name", metavar="NAME")
    _db_option(renew)
    renew.set_defaults(func=team_token)
    listing = actions.add_parser("list", help="list the teams (never their tokens)")
    _db_option(listing)
    listing.set_defaults(func=team_list)

    token = groups.add_parser("token", help="create an organizer token")
    token_actions = token.add_subparsers(dest="admin_action", required=True, metavar="{create}")
    create = token_actions.add_parser(
        "create", help="create an organizer token (reads every submission and hidden scores) "
                       "and print it (once)")
    _db_option(create)
    create.set_defaults(func=token_create)


def _db_option(parser: argparse.ArgumentParser, default=argparse.SUPPRESS) -> None:
    # accepted before and after the subcommand: `admin --db URL team list` and
    # `admin team list --db URL`; the later one wins
    parser.add_argument("--db", default=default, metavar="URL",
                        help=f"SQLAlchemy database URL (default: {DEFAULT_DB})")


def _store(args: argparse.Namespace):
    server = import_server()
    engine = server.make_engine(args.db)
    server.upgrade(engine)
    return server.Store(engine)


def team_add(args: argparse.Namespace) -> int:
    """Add the team ``args.name`` and print its token; ConfigError (exit 2) for a bad or
    duplicate name or email."""
    team, token = _store(args).add_team(args.name, args.email)
    print(f"team {team.name!r} added (id {team.id}, {team.email})")
    print(f"token: {token}")
    print(TOKEN_NOTE)
    return 0


def team_revoke(args: argparse.Namespace) -> int:
    """Revoke the token of team ``args.name``; ConfigError (exit 2) when there is none."""
    team = _store(args).revoke_team(args.name)
    print(f"team {team.name!r} revoked at {team.revoked_at:%Y-%m-%d %H:%M:%S} UTC: its token "
          f"is refused from now on; its submissions stay on the board")
    return 0


def team_token(args: argparse.Namespace) -> int:
    """Give team ``args.name`` a new token and print it; ConfigError (exit 2) when there is
    no such team."""
    team, token = _store(args).new_team_token(args.name)
    print(f"team {team.name!r} has a new token; the old one is refused from now on")
    print(f"token: {token}")
    print(TOKEN_NOTE)
    return 0


def team_list(args: argparse.Namespace) -> int:
    """Print the teams: id, state, submissions, created, name and email (no tokens)."""
    teams = _store(args).list_teams()
    if not teams:
        print("no teams yet: add one with `python -m evaluation admin team add NAME --email E`")
        return 0
    print(f"{'id':>4}  {'state':<8}  {'subs':>5}  {'created (UTC)':<16}  name <email>")
    for t in teams:
        email = f" <{t.email}>" if t.email else ""
        print(f"{t.id:>4}  {t.state:<8}  {t.submissions:>5}  {t.created_at:%Y-%m-%d %H:%M}  "
              f"{t.name}{email}")
    return 0


def token_create(args: argparse.Namespace) -> int:
    """Create an organizer token and print it once."""
    token = _store(args).create_admin_token()
    print(f"organizer token: {token}")
    print("it is shown only now (the database keeps only its hash); it reads every submission "
          "and the hidden scores: keep it secret.")
    return 0
