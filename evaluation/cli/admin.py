"""``python -m evaluation admin``: the organizers' commands (the database, teams, tokens, phases).

Every command first says which database it uses (an SQLite file's absolute path, or the URL
without its password), and refuses an SQLite file that does not exist (a mistyped ``--db`` or
another folder would otherwise make a new, empty database) unless it is ``admin db init`` or
``--create`` is given.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

from evaluation.cli.serve import DEFAULT_DB, import_server
from evaluation.errors import ConfigError

TOKEN_NOTE = ("the token is shown only now: the database keeps only its hash. Send it to the "
              "team (it goes into upload.env as UPLOAD_TOKEN); if it is lost or leaked, "
              "`admin team token NAME` gives the team a new one and refuses the old one.")


def register(subparsers) -> None:
    """Add the ``admin`` command (``db init|check|backup|restore``, ``team
    add|revoke|token|list``, ``token create|list|revoke``, ``phase reveal|list``, ``jobs
    [retry]``) to ``subparsers``."""
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
                              metavar="{db,team,token,phase,jobs}")

    db = groups.add_parser("db", help="create, check, back up or restore the database")
    db_actions = db.add_subparsers(dest="admin_action", required=True,
                                   metavar="{init,check,backup,restore}")
    init = db_actions.add_parser("init", help="create the database (or migrate it) and say "
                                              "where it is")
    _db_option(init)
    init.set_defaults(func=_closing(db_init))
    check = db_actions.add_parser("check", help="check the database: integrity, schema, "
                                                "whether it can take uploads")
    _db_option(check)
    check.set_defaults(func=_closing(db_check))
    back = db_actions.add_parser(
        "backup", help="copy an SQLite database to FILE with SQLite's backup API (safe while "
                       "the server runs); PostgreSQL: use pg_dump")
    back.add_argument("file", metavar="FILE", type=Path, help="the backup (a new file)")
    _db_option(back)
    back.set_defaults(func=_closing(db_backup))
    rest = db_actions.add_parser(
        "restore", help="replace an SQLite database by the backup FILE (stop the server "
                        "first; the old files are set aside); PostgreSQL: use pg_restore")
    rest.add_argument("file", metavar="FILE", type=Path, help="a backup made by `db backup`")
    _db_option(rest)
    rest.set_defaults(func=_closing(db_restore))

    team = groups.add_parser("team", help="add, revoke or list teams, or renew a team's token")
    actions = team.add_subparsers(dest="admin_action", required=True,
                                  metavar="{add,revoke,token,list}")
    add = actions.add_parser("add", help="add a team and print its token (once)")
    add.add_argument("name", metavar="NAME", help="1 to 80 printable characters, any script")
    add.add_argument("--email", required=True, help="the team's contact address")
    _db_option(add)
    add.set_defaults(func=_closing(team_add))
    revoke = actions.add_parser("revoke", help="revoke a team's token (its submissions stay)")
    revoke.add_argument("name", metavar="NAME")
    _db_option(revoke)
    revoke.set_defaults(func=_closing(team_revoke))
    renew = actions.add_parser("token", help="give a team a new token and print it (once); "
                                             "the old token is refused from then on")
    renew.add_argument("name", metavar="NAME")
    _db_option(renew)
    renew.set_defaults(func=_closing(team_token))
    listing = actions.add_parser("list", help="list the teams (never their tokens)")
    _db_option(listing)
    listing.set_defaults(func=_closing(team_list))

    token = groups.add_parser("token", help="create, list or revoke organizer tokens")
    token_actions = token.add_subparsers(dest="admin_action", required=True,
                                         metavar="{create,list,revoke}")
    create = token_actions.add_parser(
        "create", help="create an organizer token (reads every submission and hidden scores) "
                       "and print it (once)")
    _db_option(create)
    create.set_defaults(func=_closing(token_create))
    tokens = token_actions.add_parser("list", help="list the organizer tokens (id, created, "
                                                   "revoked; never the tokens)")
    _db_option(tokens)
    tokens.set_defaults(func=_closing(token_list))
    drop = token_actions.add_parser("revoke", help="revoke an organizer token by its id (see "
                                                   "`token list`): refused from now on")
    drop.add_argument("id", metavar="ID", type=int)
    _db_option(drop)
    drop.set_defaults(func=_closing(token_revoke))

    phase = groups.add_parser("phase", help="reveal or publish a phase's scores, list the "
                                            "phases")
    phase_actions = phase.add_subparsers(dest="admin_action", required=True,
                                         metavar="{reveal,publish,list}")
    reveal = phase_actions.add_parser(
        "reveal", help="reveal the scores of a phase, public and private, to everyone: its "
                       "board ranks by the private scores from now on (cannot be undone)")
    reveal.add_argument("name", metavar="NAME", help="the phase, as named in the competition "
                                                     "file")
    reveal.add_argument("--yes", action="store_true",
                        help="reveal even when the phase has not closed (checked with "
                             "--competition) or none of its submissions has a private score")
    _db_option(reveal)
    _competition_option(reveal)
    reveal.set_defaults(func=_closing(phase_reveal))
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
    publish.set_defaults(func=_closing(phase_publish))
    phases = phase_actions.add_parser("list", help="list the phases, whether they are revealed, "
                                                   "and which scores everyone sees")
    _db_option(phases)
    _competition_option(phases)
    phases.set_defaults(func=_closing(phase_list))

    jobs = groups.add_parser("jobs", help="the reproduction queue: counts per phase, the jobs "
                                          "queued, running and failed (with the reasons); "
                                          "`jobs retry ID` queues a failed job again")
    jobs.add_argument("--phase", metavar="P", default=None, help="only the jobs of phase P")
    jobs.add_argument("--state", default=None, metavar="S",
                      help="only the jobs in state S (queued, running, reproduced, "
                           "\"not reproduced\", failed; default: all but the reproduced "
                           "ones without a note)")
    _db_option(jobs)
    jobs.set_defaults(func=_closing(jobs_list))
    job_actions = jobs.add_subparsers(dest="admin_action", required=False,
                                      metavar="{retry,queue}")
    again = job_actions.add_parser("retry", help="queue a failed job again (its attempts "
                                                 "start from 0)")
    again.add_argument("id", metavar="ID", type=int, help="the job's id (see `admin jobs`)")
    _db_option(again)
    again.set_defaults(func=_closing(jobs_retry))
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
    queue.set_defaults(func=_closing(jobs_queue))


# the engines the command opened: closed when it ends (a restore in the same process, as in
# the tests, must not find the database open)
_ENGINES: list = []


def _closing(command: Callable[[argparse.Namespace], int]
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


def _store(args: argparse.Namespace, create: bool = False):
    """The store of ``args.db``: said on stderr, refused when it is a missing SQLite file
    (unless ``create`` or ``--create``), checked, and migrated when its schema is older."""
    server = import_server()
    print(f"database: {server.describe(args.db)}", file=sys.stderr)
    engine = server.make_engine(args.db)
    _ENGINES.append(engine)
    path = server.sqlite_path(args.db)
    if path is not None and not path.exists() and not (create or args.create):
        raise ConfigError(f"no database at {path}: give the server's --db URL (a relative "
                          f"sqlite:/// path is read from the current folder), or create it "
                          f"with `python -m evaluation admin --db {args.db} db init`.")
    if path is not None and path.exists():
        server.check_integrity(path)
    if not server.is_current(engine):
        server.upgrade(engine)
    competition = None
    if getattr(args, "competition", None) is not None:
        competition = server.load_competition(args.competition)
    return server.Store(engine, competition)


def db_init(args: argparse.Namespace) -> int:
    """Create the database (or migrate an existing one) and say where it is."""
    server = import_server()
    path = server.sqlite_path(args.db)
    existed = path is None or path.exists()
    _store(args, create=True)
    print("the database exists already; its schema is current" if existed else
          "database created; start the server with the same --db, and add teams with "
          "`admin team add`")
    return 0


def db_check(args: argparse.Namespace) -> int:
    """Check the database: its integrity (SQLite), its schema, whether it can take uploads;
    exit 1 when it cannot."""
    problems = _store(args).readiness()
    for problem in problems:
        print(f"not ready: {problem}")
    if not problems:
        print("ok: intact, schema current, ready for uploads")
    return 1 if problems else 0


def db_backup(args: argparse.Namespace) -> int:
    """Back the SQLite database up to ``args.file`` (SQLite's backup API)."""
    store = _store(args)
    target = import_server().backup(store.engine, args.file)
    print(f"backup written to {target} ({target.stat().st_size} bytes, checked); restore it "
          f"with `admin db restore {target}`")
    return 0


def db_restore(args: argparse.Namespace) -> int:
    """Replace the SQLite database by the backup ``args.file``; the old files are set aside."""
    server = import_server()
    print(f"database: {server.describe(args.db)}", file=sys.stderr)
    engine = server.make_engine(args.db)
    _ENGINES.append(engine)
    aside = server.restore(engine, args.file)
    where = f"; the replaced files are kept as {aside}[-wal|-shm]" if aside else ""
    print(f"restored {args.file} into {server.sqlite_path(args.db)}{where}. Start the server "
          f"again.")
    return 0


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


def token_list(args: argparse.Namespace) -> int:
    """Print the organizer tokens: id, state, created and revoked times (never the tokens)."""
    tokens = _store(args).list_admin_tokens()
    if not tokens:
        print("no organizer tokens: create one with `python -m evaluation admin token create`")
        return 0
    print(f"{'id':>4}  {'state':<8}  {'created (UTC)':<16}  revoked (UTC)")
    for t in tokens:
        state, revoked = (("revoked", f"{t.revoked_at:%Y-%m-%d %H:%M}") if t.revoked_at
                          else ("active", "-"))
        print(f"{t.id:>4}  {state:<8}  {t.created_at:%Y-%m-%d %H:%M}  {revoked}")
    return 0


def token_revoke(args: argparse.Namespace) -> int:
    """Revoke the organizer token ``args.id``; ConfigError (exit 2) when there is none."""
    token = _store(args).revoke_admin_token(args.id)
    print(f"organizer token {token.id} revoked at {token.revoked_at:%Y-%m-%d %H:%M:%S} UTC: it "
          f"is refused from now on")
    return 0


def phase_reveal(args: argparse.Namespace) -> int:
    """Reveal the scores of phase ``args.name``; ConfigError (exit 2) when there is no such
    phase; exit 1, nothing changed, when it has not closed or has no private score and
    ``--yes`` is not given."""
    store = _store(args)
    if args.name in store.phase_names() and args.name not in store.reveals() \
            and not _confirmed(store.reveal_warnings(args.name), args, "revealed"):
        return 1
    revealed_at, new = store.reveal_phase(args.name)
    when = f"{revealed_at:%Y-%m-%d %H:%M:%S} UTC"
    if new:
        print(f"phase {args.name!r} revealed at {when}: its board shows the private scores and "
              f"ranks by them from now on")
    else:
        print(f"phase {args.name!r} was revealed already, at {when}; nothing changed")
    return 0


def phase_publish(args: argparse.Namespace) -> int:
    """Publish the public scores of phase ``args.name``; ConfigError (exit 2) when there is no
    such phase; exit 1, nothing changed, when it has not closed or is public already and
    ``--yes`` is not given."""
    store = _store(args)
    if args.name in store.phase_names() and args.name not in store.publications() \
            and not _confirmed(store.publish_warnings(args.name), args, "published"):
        return 1
    published_at, new = store.publish_phase(args.name)
    when = f"{published_at:%Y-%m-%d %H:%M:%S} UTC"
    if new:
        print(f"phase {args.name!r} published at {when}: its board shows the public scores "
              f"to everyone; the private ones wait for `phase reveal`")
    else:
        print(f"phase {args.name!r} was published already, at {when}; nothing changed")
    return 0


def _confirmed(warnings: list[str], args: argparse.Namespace, done: str) -> bool:
    """Print ``warnings`` on stderr; False (nothing to do) when there are some and ``--yes``
    was not given."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if warnings and not args.yes:
        print(f"phase {args.name!r} not {done}: add --yes to go ahead anyway", file=sys.stderr)
        return False
    return True


def phase_list(args: argparse.Namespace) -> int:
    """Print the phases and, for each, whether (and when) it was revealed, and under it which
    scores everyone sees (the visibility rule as it applies to it)."""
    store, server = _store(args), import_server()
    names, reveals, published = store.phase_names(), store.reveals(), store.publications()
    public = {} if store.competition is None else {
        p.name: p.public for p in store.competition.phases}
    if not names:
        print("no phases yet: give the competition file (--competition FILE), or start the "
              "server once (it pins the baselines on every phase)")
        return 0
    print(f"{'state':<10}  {'revealed (UTC)':<16}  phase")
    for name in names:
        at = reveals.get(name)
        state, when = ("revealed", f"{at:%Y-%m-%d %H:%M}") if at else ("hidden", "-")
        print(f"{state:<10}  {when:<16}  {name}")
        rule = server.visibility(public.get(name), at is not None, name in published)
        print(f"{'':<10}  scores: {rule}")
    return 0


def jobs_list(args: argparse.Namespace) -> int:
    """Print the reproduction queue: per phase, the jobs in each state; then the jobs (of
    ``--phase``, in ``--state``; by default all but the reproduced ones) with their reasons."""
    from evaluation.server import JOB_STATES

    store = _store(args)
    if args.state is not None and args.state not in JOB_STATES:
        raise ConfigError(f"--state {args.state!r}: the states are "
                          f"{', '.join(JOB_STATES)}.")
    counts = store.job_counts()
    if args.phase is not None:
        counts = {args.phase: counts.get(args.phase, dict.fromkeys(JOB_STATES, 0))}
    if not counts:
        print("no reproduction jobs yet: teams' final selections (and, where a phase says "
              "reproduce = \"every\", uploads) queue them")
        return 0
    print(f"{'phase':<16}  " + "  ".join(f"{s:>14}" for s in JOB_STATES))
    for phase, by_state in counts.items():
        print(f"{phase[:16]:<16}  " + "  ".join(f"{by_state[s]:>14}" for s in JOB_STATES))
    # by default what needs a look: every job but those reproduced without a note
    shown = [j for j in store.jobs(args.phase, args.state)
             if args.state is not None or j.state != "reproduced" or j.reason]
    if shown:
        print()
        print(f"{'job':>5}  {'sub':>6}  {'phase':<12}  {'state':<14}  {'tries':>5}  "
              f"{'worker (lease until, UTC)':<34}  team: reason")
        for job in shown:
            print(_job_line(job))
    return 0


def _job_line(job) -> str:
    """One job as a line of ``admin jobs``."""
    lease = (f"{job.worker} ({job.lease_expires_at:%H:%M:%S})" if job.lease_expires_at
             else (job.worker or "-"))
    reason = f": {job.reason}" if job.reason else ""
    return (f"{job.job_id:>5}  {job.submission_id:>6}  {job.phase[:12]:<12}  "
            f"{job.state:<14}  {job.attempts:>5}  {lease[:34]:<34}  {job.team}{reason}")


def jobs_retry(args: argparse.Namespace) -> int:
    """Queue the failed job ``args.id`` again; ConfigError (exit 2) when there is no such job
    or it has not failed."""
    from evaluation.errors import SubmissionRejected

    store = _store(args)
    try:
        job = store.retry_job(args.id) if 0 < args.id < 2**31 else None
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}; `admin jobs` lists the jobs.") from None
    if job is None:
        raise ConfigError(f"no reproduction job {args.id}; `admin jobs` lists the jobs.")
    print(f"job {job.job_id} (submission {job.submission_id} of team {job.team!r}) is queued "
          f"again; a worker takes it next")
    return 0


def jobs_queue(args: argparse.Namespace) -> int:
    """Queue the jobs of phase ``args.phase``'s final selections (the implicit ones of teams
    that marked none included) that have none; ConfigError (exit 2) for no such phase."""
    from evaluation.errors import SubmissionRejected

    store = _store(args)
    try:
        ids = store.queue_selections(args.phase)
    except SubmissionRejected as exc:
        raise ConfigError(f"{exc.reason}.") from None
    if not ids:
        print(f"every final selection of phase {args.phase!r} has a job already")
    else:
        print(f"{len(ids)} job(s) queued for phase {args.phase!r}: submissions "
              f"{', '.join(map(str, ids))}; workers take them next")
    return 0
