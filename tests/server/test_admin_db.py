"""The organizers' ``admin`` command and the database's files: no database made by accident,
the database named, organizer tokens revoked, backup and restore (also after a crash that
left a write-ahead log), and a damaged database refused at start."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from evaluation.cli import main
from evaluation.errors import ConfigError
from evaluation.server.api import create_app
from evaluation.server.db import Database, add_team, authenticate, list_teams, make_engine
from tests.server._helpers import EXAMPLE, example_competition, sqlite_url


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def teams(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        return [t.name for t in list_teams(Database(engine)) if not t.is_baseline]
    finally:
        engine.dispose()


def test_admin_refuses_a_missing_database_and_names_the_one_it_uses(tmp_path, capsys,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "admin", "team", "add", "Lost", "--email", "l@e.org")
    assert code == 2 and "token" not in out
    assert f"database: SQLite file {tmp_path / 'leaderboard.db'}" in err
    assert "no database at" in err and "db init" in err
    assert not (tmp_path / "leaderboard.db").exists()
    code, out, err = run_cli(capsys, "admin", "db", "init")
    assert code == 0 and "database created" in out and (tmp_path / "leaderboard.db").exists()
    code, out, err = run_cli(capsys, "admin", "team", "add", "Found", "--email", "f@e.org")
    assert code == 0 and "token: " in out
    # --create, before or after the subcommand
    other = sqlite_url(tmp_path / "other")
    (tmp_path / "other").mkdir()
    code, out, err = run_cli(capsys, "admin", "--db", other, "team", "list", "--create")
    assert code == 0 and "no teams yet" in out


def test_admin_names_a_postgresql_database_without_its_password(capsys):
    url = "postgresql+psycopg://organizer:Sup3rSecret@127.0.0.1:1/lb"
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert code == 2
    assert "database: postgresql+psycopg://organizer:***@127.0.0.1:1/lb" in err
    assert "Sup3rSecret" not in out + err


def test_organizer_tokens_are_listed_and_revoked(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0
    tokens = [run_cli(capsys, "admin", "--db", url, "token", "create")[1].split()[2]
              for _ in range(2)]
    code, out, _ = run_cli(capsys, "admin", "--db", url, "token", "revoke", "1")
    assert code == 0 and "organizer token 1 revoked" in out
    code, out, _ = run_cli(capsys, "admin", "--db", url, "token", "list")
    lines = out.splitlines()[1:]
    assert [line.split()[:2] for line in lines] == [["1", "revoked"], ["2", "active"]]
    assert not any(t in out for t in tokens)
    store = Database(make_engine(url))
    assert authenticate(store, tokens[0]) is None and authenticate(store, tokens[1]).admin
    code, _, err = run_cli(capsys, "admin", "--db", url, "token", "revoke", "99999999999")
    assert code == 2 and "no organizer token 99999999999" in err


def crash_after_a_write(url: str) -> None:
    """A process that adds a team and is killed (SIGKILL) before it closes the database: the
    write-ahead log with that team stays. Forked from this one (the database's modules are
    imported already); it opens an engine of its own."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test
        try:
            add_team(Database(make_engine(url)), "After the backup", "late@example.org")
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL


def test_restore_after_a_crash_that_left_a_write_ahead_log(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    path = tmp_path / "leaderboard.db"
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0
    assert run_cli(capsys, "admin", "--db", url, "team", "add", "Before", "--email",
                   "b@e.org")[0] == 0
    code, out, _ = run_cli(capsys, "admin", "--db", url, "db", "backup",
                           str(tmp_path / "backup.db"))
    assert code == 0 and "backup written" in out, out
    # a backup never overwrites a file
    assert run_cli(capsys, "admin", "--db", url, "db", "backup", str(tmp_path / "backup.db")
                   )[0] == 2
    crash_after_a_write(url)
    assert (tmp_path / "leaderboard.db-wal").stat().st_size > 0
    # restore is refused while another process has the database open
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; "
                               "c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM "
                               "teams').fetchall(); print('open', flush=True); time.sleep(60)",
                               str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        code, _, err = run_cli(capsys, "admin", "--db", url, "db", "restore",
                               str(tmp_path / "backup.db"))
        assert code == 2 and "open in another process" in err, err
    finally:
        holder.kill()
        holder.wait()
    code, out, err = run_cli(capsys, "admin", "--db", url, "db", "restore",
                             str(tmp_path / "backup.db"))
    assert code == 0 and "restored" in out, err
    assert teams(url) == ["Before"]
    assert any(p.name.startswith("leaderboard.db.replaced-") for p in tmp_path.iterdir())
    # the server starts on it and the database keeps working
    app = create_app(example_competition(), url)
    add_team(app.state.store, "After the restore", "r@e.org")
    app.state.store.engine.dispose()
    assert teams(url) == ["Before", "After the restore"]
    code, out, _ = run_cli(capsys, "admin", "--db", url, "db", "check")
    assert code == 0 and out.startswith("ok"), out


def _damage(path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(4096))


def test_a_damaged_database_is_refused_at_start_with_what_to_do(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    path = tmp_path / "leaderboard.db"
    app = create_app(example_competition(), url)
    for i in range(40):
        add_team(app.state.store, f"Team {i}", f"t{i}@e.org")
    app.state.store.engine.dispose()
    _damage(path)
    with pytest.raises(ConfigError, match="is damaged .*admin --db .* db restore BACKUP"):
        create_app(example_competition(), url)
    # `serve` refuses it with exit status 2 (in this process: a refused start as a process of
    # its own is the hardening tests' read-only and full disks)
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                           "--port", "0")
    assert code == 2 and "is damaged" in err, err
    assert "Traceback" not in err
    code, _, err = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert code == 2 and "is damaged" in err


def test_the_schema_heads_are_alembics_and_is_current_reads_them(tmp_path):
    from alembic.script import ScriptDirectory

    from evaluation.server.db import MIGRATIONS_DIR, is_current, schema_heads, upgrade

    assert schema_heads() == set(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads())
    engine = make_engine(sqlite_url(tmp_path))
    try:
        assert not is_current(engine)
        upgrade(engine)
        assert is_current(engine)
    finally:
        engine.dispose()


LIGHT = """
import json, sys
from evaluation.cli import main
heavy = ("fastapi", "starlette", "uvicorn", "pandas", "numpy", "pydantic", "alembic", "jinja2")
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    # what is imported by then: a heavy module shows up after the first command that needs it
    print(json.dumps({"argv": argv, "code": code,
                      "imported": [m for m in heavy if m in sys.modules]}))
"""

#: The admin commands that must start quickly, in the order one process runs them.
LIGHT_COMMANDS = [["team", "list"], ["token", "list"], ["token", "create"],
                  ["team", "add", "Quick", "--email", "q@e.org"], ["db", "check"]]


def test_admin_commands_import_neither_the_web_framework_nor_the_scoring(tmp_path, capsys):
    # what made each admin command take seconds: the imports of the server and the scoring;
    # the commands run one after another in one process, each checked after it ran
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0
    argvs = [["admin", "--db", url, *argv] for argv in LIGHT_COMMANDS]
    done = subprocess.run([sys.executable, "-c", LIGHT, json.dumps(argvs)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ran = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["argv"] for r in ran] == argvs, done.stdout
    for r in ran:
        assert r["code"] == 0 and r["imported"] == [], (r, done.stderr)
