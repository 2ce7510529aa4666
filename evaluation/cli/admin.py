"""``python -m evaluation admin``: the organizers' commands (teams, tokens, phases) on the database.
"""

from __future__ import annotations

import argparse

from evaluation.cli.serve import DEFAULT_DB, import_server

TOKEN_NOTE = ("the token is shown only now: the database keeps only its hash. Send it to the "
              "team (it goes into upload.env as UPLOAD_TOKEN); if it is lost or leaked, "
              "`admin team token NAME` gives the team a new one and refuses the old one.")


def register(subparsers) -> None:
    """Add the ``admin`` command (``team add|revoke|token|list``, ``token create``,
    ``phase reveal|list``) to ``subparsers``."""
    p = subparsers.add_parser(
        "admin",
        help="manage the leaderboard's teams and tokens (organizers)",
        description="Add, revoke and list the leaderboard's teams, create organizer "
                    "tokens, and reveal the private scores of a phase. Migrates the "
                    "database's schema first. Needs the server extra.",
    )
    _db_option(p, DEFAULT_DB)
    groups = p.add_subparsers(dest="admin_group", required=True, metavar="{team,token,phase}")

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

    phase = groups.add_parser("phase", help="reveal a phase's private scores, list the phases")
    phase_actions = phase.add_subparsers(dest="admin_action", required=True,
                                         metavar="{reveal,list}")
    reveal = phase_actions.add_parser(
        "reveal", help="reveal the private scores of a phase: its board ranks by them from "
                       "now on (cannot be undone)")
    reveal.add_argument("name", metavar="NAME", help="the phase, as named in the competition "
                                                     "file")
    _db_option(reveal)
    _competition_option(reveal)
    reveal.set_defaults(func=phase_reveal)
    phases = phase_actions.add_parser("list", help="list the phases and whether their private "
                                                   "scores are revealed")
    _db_option(phases)
    _competition_option(phases)
    phases.set_defaults(func=phase_list)


def _db_option(parser: argparse.ArgumentParser, default=argparse.SUPPRESS) -> None:
    # accepted before and after the subcommand: `admin --db URL team list` and
    # `admin team list --db URL`; the later one wins
    parser.add_argument("--db", default=default, metavar="URL",
                        help=f"SQLAlchemy database URL (default: {DEFAULT_DB})")


def _competition_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--competition", default=None, metavar="FILE",
                        help="the competition file (TOML): its phases are the names accepted "
                             "(default: the phases that have submissions in the database)")


def _store(args: argparse.Namespace):
    server = import_server()
    competition = None
    if getattr(args, "competition", None) is not None:
        competition = server.load_competition(args.competition)
    engine = server.make_engine(args.db)
    server.upgrade(engine)
    return server.Store(engine, competition)


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


def phase_reveal(args: argparse.Namespace) -> int:
    """Reveal the private scores of phase ``args.name``; ConfigError (exit 2) when there is no
    such phase."""
    revealed_at, new = _store(args).reveal_phase(args.name)
    when = f"{revealed_at:%Y-%m-%d %H:%M:%S} UTC"
    if new:
        print(f"phase {args.name!r} revealed at {when}: its board shows the private scores and "
              f"ranks by them from now on")
    else:
        print(f"phase {args.name!r} was revealed already, at {when}; nothing changed")
    return 0


def phase_list(args: argparse.Namespace) -> int:
    """Print the phases and, for each, whether (and when) its private scores were revealed."""
    store = _store(args)
    names, reveals = store.phase_names(), store.reveals()
    if not names:
        print("no phases yet: give the competition file (--competition FILE), or start the "
              "server once (it pins the baselines on every phase)")
        return 0
    print(f"{'state':<10}  {'revealed (UTC)':<16}  phase")
    for name in names:
        at = reveals.get(name)
        state, when = ("revealed", f"{at:%Y-%m-%d %H:%M}") if at else ("hidden", "-")
        print(f"{state:<10}  {when:<16}  {name}")
    return 0
