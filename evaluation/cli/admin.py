"""``python -m evaluation admin``: the organizers' commands (the database, teams, tokens, phases).

Every command first says which database it uses (an SQLite file's absolute path, or the URL
without its password), and refuses an SQLite file that does not exist (a mistyped ``--db`` or
another folder would otherwise make a new, empty database) unless it is ``admin db init`` or
``--create`` is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation.cli._commands import SERVER_EXTRA, command
from evaluation.cli.serve import DEFAULT_DB


def register(subparsers) -> None:
    """Add the ``admin`` command (``db init|check|backup|restore``, ``team
    add|revoke|token|list``, ``token create|list|revoke``, ``phase reveal|list``, ``jobs
    [retry]``, ``queue``, ``rescore``) to ``subparsers``."""
    p = subparsers.add_parser(
        "admin",
        help="manage the leaderboard's teams and tokens (organizers)",
        description="Create, check, back up and restore the leaderboard's database; add, "
                    "revoke and list its teams; create, list and revoke organizer tokens; "
                    "reveal the private scores of a phase. Says which database it uses, "
                    "refuses an SQLite file that does not exist (unless `db init` or "
                    "--create), and migrates the schema when it is older. Needs the server "
                    "extra.",
    )
    _db_option(p, DEFAULT_DB)
    groups = p.add_subparsers(dest="admin_group", required=True,
                              metavar="{db,team,token,phase,jobs,queue,rescore}")

    db = groups.add_parser("db", help="create, check, back up or restore the database")
    db_actions = db.add_subparsers(dest="admin_action", required=True,
                                   metavar="{init,check,backup,restore}")
    init = db_actions.add_parser("init", help="create the database (or migrate it) and say "
                                              "where it is")
    _db_option(init)
    init.set_defaults(func=command("_admin_db", "db_init", SERVER_EXTRA))
    check = db_actions.add_parser("check", help="check the database: integrity, schema, "
                                                "whether it can take uploads")
    _db_option(check)
    check.set_defaults(func=command("_admin_db", "db_check", SERVER_EXTRA))
    back = db_actions.add_parser(
        "backup", help="copy an SQLite database to FILE with SQLite's backup API (safe while "
                       "the server runs); PostgreSQL: use pg_dump")
    back.add_argument("file", metavar="FILE", type=Path, help="the backup (a new file)")
    _db_option(back)
    back.set_defaults(func=command("_admin_db", "db_backup", SERVER_EXTRA))
    rest = db_actions.add_parser(
        "restore", help="replace an SQLite database by the backup FILE (stop the server "
                        "first; the old files are set aside); PostgreSQL: use pg_restore")
    rest.add_argument("file", metavar="FILE", type=Path, help="a backup made by `db backup`")
    _db_option(rest)
    rest.set_defaults(func=command("_admin_db", "db_restore", SERVER_EXTRA))

    team = groups.add_parser("team", help="add, revoke or list teams, or renew a team's token")
    actions = team.add_subparsers(dest="admin_action", required=True,
                                  metavar="{add,revoke,token,list}")
    add = actions.add_parser("add", help="add a team and print its token (once)")
    add.add_argument("name", metavar="NAME", help="1 to 80 printable characters, any script")
    add.add_argument("--email", required=True, help="the team's contact address")
    _db_option(add)
    add.set_defaults(func=command("_admin_db", "team_add", SERVER_EXTRA))
    revoke = actions.add_parser("revoke", help="revoke a team's token (its submissions stay)")
    revoke.add_argument("name", metavar="NAME")
    _db_option(revoke)
    revoke.set_defaults(func=command("_admin_db", "team_revoke", SERVER_EXTRA))
    renew = actions.add_parser("token", help="give a team a new token and print it (once); "
                                             "the old token is refused from then on")
    renew.add_argument("name", metavar="NAME")
    _db_option(renew)
    renew.set_defaults(func=command("_admin_db", "team_token", SERVER_EXTRA))
    listing = actions.add_parser("list", help="list the teams (never their tokens)")
    _db_option(listing)
    listing.set_defaults(func=command("_admin_db", "team_list", SERVER_EXTRA))

    token = groups.add_parser("token", help="create, list or revoke organizer tokens")
    token_actions = token.add_subparsers(dest="admin_action", required=True,
                                         metavar="{create,list,revoke}")
    create = token_actions.add_parser(
        "create", help="create an organizer token (reads every submission and hidden scores) "
                       "and print it (once)")
    _db_option(create)
    create.set_defaults(func=command("_admin_db", "token_create", SERVER_EXTRA))
    tokens = token_actions.add_parser("list", help="list the organizer tokens (id, created, "
                                                   "revoked; never the tokens)")
    _db_option(tokens)
    tokens.set_defaults(func=command("_admin_db", "token_list", SERVER_EXTRA))
    drop = token_actions.add_parser("revoke", help="revoke an organizer token by its id (see "
                                                   "`token list`): refused from now on")
    drop.add_argument("id", metavar="ID", type=int)
    _db_option(drop)
    drop.set_defaults(func=command("_admin_db", "token_revoke", SERVER_EXTRA))

    phase = groups.add_parser("phase", help="reveal or publish a phase's scores, carry an "
                                            "earlier phase's submissions into it, list the "
                                            "phases")
    phase_actions = phase.add_subparsers(dest="admin_action", required=True,
                                         metavar="{reveal,publish,carry,list}")
    reveal = phase_actions.add_parser(
        "reveal", help="reveal the scores of a phase, public and private, to everyone: its "
                       "board ranks by the private scores from now on, and the phase takes "
                       "no more uploads and its final selections are frozen (cannot be "
                       "undone)")
    reveal.add_argument("name", metavar="NAME", help="the phase, as named in the competition "
                                                     "file")
    reveal.add_argument("--yes", action="store_true",
                        help="reveal even when none of its submissions has a private score")
    reveal.add_argument("--close-now", action="store_true",
                        help="reveal a phase that still takes submissions (checked with "
                             "--competition), ending its uploads and final selections now; "
                             "without it such a phase is refused")
    _db_option(reveal)
    _competition_option(reveal)
    reveal.set_defaults(func=command("_admin_phases", "phase_reveal", SERVER_EXTRA))
    publish = phase_actions.add_parser(
        "publish", help="show the public scores of a phase that is not public to everyone "
                        "(the private ones wait for `reveal`; cannot be undone)")
    publish.add_argument("name", metavar="NAME", help="the phase, as named in the competition "
                                                      "file")
    publish.add_argument("--yes", action="store_true",
                         help="publish even when the phase has not closed or is public "
                              "already (both checked with --competition)")
    _db_option(publish)
    _competition_option(publish)
    publish.set_defaults(func=command("_admin_phases", "phase_publish", SERVER_EXTRA))
    carry = phase_actions.add_parser(
        "carry", help="carry the submissions of the phase NAME carries from (its carry_from "
                      "and carry) into it now, once: each is scored again on its kept "
                      "predictions and queued for reproduction as the phase says (the server "
                      "does it by itself when NAME opens; this does it as soon as the earlier "
                      "phase has closed)")
    carry.add_argument("name", metavar="NAME", help="the phase carried into, as named in the "
                                                    "competition file")
    _db_option(carry)
    carry.add_argument("--competition", required=True, metavar="FILE",
                       help="the competition file (TOML): the phases' carry_from and carry")
    carry.set_defaults(func=command("_admin_phases", "phase_carry", SERVER_EXTRA))
    phases = phase_actions.add_parser("list", help="list the phases, whether they are revealed, "
                                                   "and which scores everyone sees")
    _db_option(phases)
    _competition_option(phases)
    phases.set_defaults(func=command("_admin_phases", "phase_list", SERVER_EXTRA))

    jobs = groups.add_parser("jobs", help="the reproduction queue: counts per phase, the jobs "
                                          "queued, running and failed (with the reasons); "
                                          "`jobs retry ID` queues a failed job again")
    jobs.add_argument("--phase", metavar="P", default=None, help="only the jobs of phase P")
    jobs.add_argument("--state", default=None, metavar="S",
                      help="only the jobs in state S (queued, running, reproduced, "
                           "\"not reproduced\", failed; default: all but the reproduced "
                           "ones without a note)")
    _db_option(jobs)
    jobs.set_defaults(func=command("_admin_phases", "jobs_list", SERVER_EXTRA))
    job_actions = jobs.add_subparsers(dest="admin_action", required=False,
                                      metavar="{retry,queue}")
    again = job_actions.add_parser("retry", help="queue a failed job again (its attempts "
                                                 "start from 0)")
    again.add_argument("id", metavar="ID", type=int, help="the job's id (see `admin jobs`)")
    _db_option(again)
    again.set_defaults(func=command("_admin_phases", "jobs_retry", SERVER_EXTRA))
    queue = job_actions.add_parser(
        "queue", help="queue the jobs of a phase's final selections that have none, the best "
                      "public submissions of the teams that marked none included (e.g. once "
                      "the phase closed)")
    queue.add_argument("phase", metavar="PHASE", help="the phase, as named in the competition "
                                                      "file")
    _db_option(queue)
    queue.add_argument("--competition", required=True, metavar="FILE",
                       help="the competition file (TOML): the phase's final_selections and "
                            "private_folds")
    queue.set_defaults(func=command("_admin_phases", "jobs_queue", SERVER_EXTRA))

    overview = groups.add_parser(
        "queue", help="the workers' queue at a glance: counts per phase and state, the oldest "
                      "waiting job, each worker's last heartbeat and current jobs, stuck jobs, "
                      "failed jobs and why")
    overview.add_argument("--json", action="store_true",
                          help="print it as JSON (as GET /api/v1/queue answers an organizer)")
    _db_option(overview)
    overview.set_defaults(func=command("_admin_queue", "queue_show", SERVER_EXTRA))

    rescore = groups.add_parser(
        "rescore", help="score a phase's submissions again after a harness fix: shows old and "
                        "new scores and ranks; the board changes only with --yes")
    rescore.add_argument("--phase", required=True, metavar="P",
                         help="the phase, as named in the competition file")
    rescore.add_argument("--competition", required=True, metavar="FILE",
                         help="the competition file (TOML): the phase and its references")
    rescore.add_argument("--yes", action="store_true",
                         help="apply the phase's rescore once every job ended: the board "
                              "shows its numbers and the reproductions are queued again")
    rescore.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                         help="wait this long at most for the workers to score the jobs "
                              "(default: 0, show where the rescore is)")
    what = rescore.add_mutually_exclusive_group()
    what.add_argument("--show", action="store_true",
                      help="show the latest rescore of the phase without starting one")
    what.add_argument("--cancel", action="store_true",
                      help="give up the phase's open rescore (the board keeps its numbers)")
    what.add_argument("--drop-old", action="store_true",
                      help="drop the numbers applied rescores replaced from the board's CSV")
    _db_option(rescore)
    rescore.set_defaults(func=command("_admin_rescore", "rescore", SERVER_EXTRA))


def _db_option(parser: argparse.ArgumentParser, default=argparse.SUPPRESS) -> None:
    # accepted before and after the subcommand: `admin --db URL team list` and
    # `admin team list --db URL`; the later one wins
    parser.add_argument("--db", default=default, metavar="URL",
                        help=f"SQLAlchemy database URL (default: {DEFAULT_DB}, in the current "
                             f"folder)")
    parser.add_argument("--create", action="store_true",
                        default=False if default is not argparse.SUPPRESS else default,
                        help="create the SQLite database when it does not exist (default: "
                             "refuse, as a mistyped --db would make a new, empty one)")


def _competition_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--competition", default=None, metavar="FILE",
                        help="the competition file (TOML): its phases are the names accepted "
                             "(default: the phases that have submissions in the database)")
