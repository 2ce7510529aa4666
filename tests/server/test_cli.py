"""The organizers' commands (``serve``, ``admin``), and the participants' client against them.

The end-to-end test serves the competition on a free port of 127.0.0.1, adds a team with
``admin``, and uploads with ``python -m evaluation submit``, the command participants use,
unchanged (once as a process of its own).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
pytest.importorskip("uvicorn")

from evaluation.server.api import create_app
from evaluation.server.core import load_competition
from evaluation.server.db import Database, authenticate, list_teams, make_engine
from tests.server._helpers import BASELINES, EXAMPLE, run_cli, sqlite_url
from tests.server._live_server import live_server

REPO = Path(__file__).resolve().parents[2]
SERVER_MODULES = ("fastapi", "starlette", "sqlalchemy", "alembic", "uvicorn", "jinja2",
                  "psycopg", "evaluation.server")


def store_of(url: str) -> Database:
    return Database(make_engine(url))


# ---------------------------------------------------------------------------- help


def test_help_imports_no_server_module():
    code = ("import json, sys\n"
            "from evaluation.cli import build_parser\n"
            "parser = build_parser()\n"
            "for argv in (['serve', '--help'], ['admin', 'team', 'add', '--help']):\n"
            "    try:\n"
            "        parser.parse_args(argv)\n"
            "    except SystemExit:\n"
            "        pass\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({SERVER_MODULES!r}))))"
            )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert "--competition FILE" in done.stdout and "--email EMAIL" in done.stdout


# ---------------------------------------------------------------------------- admin


def test_team_add_prints_the_token_once_and_it_works(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "add", "Équipe 東京 🚀",
                             "--email", "team@example.org")
    assert code == 0, err
    token = re.search(r"^token: (\S+)$", out, re.M).group(1)
    assert len(token) == 43 and out.count(token) == 1
    assert "shown only now" in out
    caller = authenticate(store_of(url), token)
    assert caller is not None and caller.team == "Équipe 東京 🚀"
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert code == 0 and "Équipe 東京 🚀 <team@example.org>" in out and "active" in out
    assert token not in out


def test_duplicate_and_bad_names_exit_2(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    assert run_cli(capsys, "admin", "--db", url, "team", "add", "Alpha", "--email",
                   "a@example.org")[0] == 0
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "add", "ALPHA", "--email",
                             "b@example.org")
    assert code == 2 and "exists already" in err and "token" not in out
    code, _, err = run_cli(capsys, "admin", "--db", url, "team", "add", "x" * 81, "--email",
                           "b@example.org")
    assert code == 2 and "81 characters" in err
    code, _, err = run_cli(capsys, "admin", "--db", url, "team", "add", "Beta", "--email",
                           "not-an-email")
    assert code == 2 and "not an address" in err
    assert [t.name for t in list_teams(store_of(url))] == ["Alpha"]


def test_a_name_a_worker_cannot_use_is_refused_with_the_rule(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    for name, why in (("a/b", "path separator"), ("..", "starts with a dot"),
                      (".git", "starts with a dot")):
        code, out, err = run_cli(capsys, "admin", "--db", url, "team", "add", name, "--email",
                                 "b@example.org")
        assert code == 2 and why in err and "The rule: a team name is 1 to 80" in err, err
        assert "token" not in out
    assert list_teams(store_of(url)) == []


def test_teams_added_before_the_name_rule_are_listed_with_a_warning(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    assert run_cli(capsys, "admin", "--db", url, "team", "add", "Team A", "--email",
                   "a@example.org")[0] == 0
    # what an older harness let in, or an organizer's own SQL
    with make_engine(url).begin() as conn:
        for name in ("a/b", "..", "TEAM A"):
            conn.exec_driver_sql("INSERT INTO teams (name, email, token_hash, is_baseline, "
                                 "created_at) VALUES (?, 'x@example.org', ?, 0, "
                                 "'2026-01-01 00:00:00')", (name, "h" * 64 + name))
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert code == 0
    assert [line.split()[-2] for line in out.splitlines()[1:]] == ["A", "a/b", "..", "A"]
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, err
    assert "team 2 ('a/b') breaks the team-name rule" in warnings[0]
    assert "path separator" in warnings[0] and "reproduce CHECKOUT" in warnings[0]
    assert "team 3 ('..') breaks the team-name rule" in warnings[1]
    assert "teams 1 ('Team A') and 4 ('TEAM A') differ only by case" in warnings[2]


def test_revoke_list_and_admin_token(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    _, out, _ = run_cli(capsys, "admin", "--db", url, "team", "add", "Gamma", "--email",
                        "g@example.org")
    token = re.search(r"^token: (\S+)$", out, re.M).group(1)
    # --db is accepted after the subcommand too
    code, out, err = run_cli(capsys, "admin", "team", "revoke", "Gamma", "--db", url)
    assert code == 0 and "revoked" in out, err
    assert authenticate(store_of(url), token) is None
    _, out, _ = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert re.search(r"revoked\s+0\s+\S+ \S+\s+Gamma <g@example.org>", out)
    code, _, err = run_cli(capsys, "admin", "--db", url, "team", "revoke", "Nobody")
    assert code == 2 and "no team named 'Nobody'" in err
    code, out, _ = run_cli(capsys, "admin", "--db", url, "token", "create")
    admin = re.search(r"^organizer token: (\S+)$", out, re.M).group(1)
    assert code == 0 and "shown only now" in out
    assert authenticate(store_of(url), admin).admin


def test_team_token_replaces_a_lost_token(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    assert run_cli(capsys, "admin", "--db", url, "db", "init")[0] == 0  # admin creates none
    _, out, _ = run_cli(capsys, "admin", "--db", url, "team", "add", "Delta", "--email",
                        "d@example.org")
    old = re.search(r"^token: (\S+)$", out, re.M).group(1)
    assert run_cli(capsys, "admin", "--db", url, "team", "revoke", "Delta")[0] == 0
    code, out, err = run_cli(capsys, "admin", "--db", url, "team", "token", "Delta")
    assert code == 0, err
    new = re.search(r"^token: (\S+)$", out, re.M).group(1)
    assert new != old and out.count(new) == 1 and "old one is refused" in out
    store = store_of(url)
    assert authenticate(store, old) is None  # the lost token stays refused
    caller = authenticate(store, new)
    assert caller is not None and caller.team == "Delta"  # active again, same team
    _, out, _ = run_cli(capsys, "admin", "--db", url, "team", "list")
    assert re.search(r"active\s+0\s+\S+ \S+\s+Delta <d@example.org>", out)
    code, _, err = run_cli(capsys, "admin", "--db", url, "team", "token", "Nobody")
    assert code == 2 and "no team named 'Nobody'" in err


def test_admin_with_a_bad_database_url_exits_2_without_the_password(capsys):
    code, out, err = run_cli(capsys, "admin", "--db",
                             "postgresql+psycopg://organizer:Sup3rSecret@127.0.0.1:1/lb",
                             "team", "list")
    assert code == 2 and "Sup3rSecret" not in out + err
    assert "organizer:***@127.0.0.1:1/lb" in err


# ---------------------------------------------------------------------------- serve: refusals


def test_serve_refuses_bad_input_with_exit_2(tmp_path, capsys):
    url = sqlite_url(tmp_path)
    code, _, err = run_cli(capsys, "serve", "--competition", str(tmp_path / "missing.toml"),
                           "--db", url)
    assert code == 2 and "missing.toml" in err and "does not exist" in err
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    code, _, err = run_cli(capsys, "serve", "--competition", str(broken), "--db", url)
    assert code == 2 and "not valid TOML" in err
    code, out, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db",
                             "postgresql+psycopg://lb:Sup3rSecret@127.0.0.1:1/lb")
    assert code == 2 and "Sup3rSecret" not in out + err and "lb:***@127.0.0.1:1/lb" in err
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", "sqlite://")
    assert code == 2 and "in-memory" in err
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                           "--port", "70000")
    assert code == 2 and "--port 70000" in err
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                           "--workers", "0")
    assert code == 2 and "--workers 0" in err
    for bad in ("0", "nan", "7200"):
        code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                               "--board-stats-interval", bad)
        assert code == 2 and f"--board-stats-interval {bad}" in err


def test_serve_gives_the_board_stats_interval_to_the_app(tmp_path, capsys, monkeypatch):
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(app))
    url = sqlite_url(tmp_path)
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                           "--board-stats-interval", "30", "--port", "0")
    assert code == 0, err
    assert served[0].state.store.standings_interval == 30.0
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db", url,
                           "--port", "0")
    assert code == 0, err
    from evaluation.server.db import STANDINGS_MIN_INTERVAL_S
    assert served[1].state.store.standings_interval == STANDINGS_MIN_INTERVAL_S
    for app in served:
        app.state.store.engine.dispose()


def test_serve_on_a_busy_port_exits_2_before_announcing(tmp_path, capsys, monkeypatch):
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(app))
    with socket.socket() as other:  # another server, listening on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        code, out, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db",
                                 sqlite_url(tmp_path), "--port", str(port))
    assert code == 2 and served == []
    assert f"--port {port}" in err and "in use" in err and "another --port" in err
    assert "leaderboard of" not in out + err


def test_serve_announces_the_port_it_bound(tmp_path, capsys, monkeypatch):
    import uvicorn

    served = []

    def run(app, fd, **options) -> None:
        with socket.socket(fileno=os.dup(fd)) as sock:
            served.append(sock.getsockname())
        app.state.store.engine.dispose()

    monkeypatch.setattr(uvicorn, "run", run)
    code, _, err = run_cli(capsys, "serve", "--competition", str(EXAMPLE), "--db",
                           sqlite_url(tmp_path), "--port", "0")
    assert code == 0, err
    host, port = served[0]
    assert host == "127.0.0.1" and port > 0 and f"on http://127.0.0.1:{port}/ " in err


def test_serve_refuses_a_bad_baseline_file_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad-baseline.json"
    doc = json.loads((BASELINES / "random.json").read_text())
    doc["results"]["folds"].pop()  # a fold missing
    bad.write_text(json.dumps(doc))
    competition = tmp_path / "competition.toml"
    competition.write_text(_competition_text(random_file=bad))
    code, _, err = run_cli(capsys, "serve", "--competition", str(competition), "--db",
                           sqlite_url(tmp_path))
    assert code == 2 and "bad-baseline.json" in err and "missing" in err


# ---------------------------------------------------------------------------- end to end


def _competition_text(random_file: Path | None = None) -> str:
    """The example competition, its public phase open from 2000 to 2100 (so that the test does
    not depend on today's date), its baseline files by absolute path."""
    text = EXAMPLE.read_text()
    text = text.replace("opens = 2026-01-01T00:00:00Z", "opens = 2000-01-01T00:00:00Z")
    text = text.replace("closes = 2028-01-01T00:00:00Z", "closes = 2100-01-01T00:00:00Z")
    text = text.replace("opens = 2028-01-01T00:00:00Z", "opens = 2100-01-01T00:00:00Z")
    text = text.replace("closes = 2028-02-01T00:00:00Z", "closes = 2100-02-01T00:00:00Z")
    text = text.replace('"competition/baselines/popularity.json"',
                        json.dumps(str(BASELINES / "popularity.json")))
    text = text.replace('"competition/baselines/random.json"',
                        json.dumps(str(random_file or BASELINES / "random.json")))
    assert "2000-01-01" in text and "2100-02-01" in text and str(BASELINES) in text
    text = "accept_claims = true\n" + text  # the tests upload the baselines' files: claims
    return text


def _environment() -> dict:
    """The environment of a subprocess: the repository importable, no upload settings (the
    environment would win over the test's upload.env)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN")}
    env["PYTHONPATH"] = str(REPO)
    return env


def _submit(file: Path, env_file: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluation", "submit", str(file),
                           "--env-file", str(env_file)], cwd=env_file.parent,
                          env=_environment(), capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_submit_command_against_a_live_server(tmp_path, capsys, monkeypatch):
    competition = tmp_path / "competition.toml"
    competition.write_text(_competition_text())
    db = sqlite_url(tmp_path)
    # the server as `serve` makes it (a new database migrated, the baselines pinned), served in
    # this process: `serve` as a process of its own is the load and hardening tests'
    app = create_app(load_competition(competition), db)
    with live_server(app) as url:
        _, out, _ = run_cli(capsys, "admin", "--db", db, "team", "add", "Live Team",
                            "--email", "live@example.org")
        token = re.search(r"^token: (\S+)$", out, re.M).group(1)
        env_file = tmp_path / "upload.env"
        env_file.write_text(f"UPLOAD_URL={url}/api/v1/submissions\nUPLOAD_TOKEN={token}\n")
        # the command in this process (the refused upload below is the command as participants
        # start it, in a process of its own)
        for name in ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.chdir(tmp_path)
        # a baseline's file is a valid submission for a team
        file = BASELINES / "popularity.json"
        code, out, err = run_cli(capsys, "submit", str(file), "--env-file", str(env_file))
        assert code == 0, err
        assert "HTTP 201" in out and "status: accepted" in out
        # a claim: accepted, unranked (no scoring job computed it)
        assert "rank: 1" not in out and token not in out + err
        code, out, err = run_cli(capsys, "submit", str(file), "--env-file", str(env_file))
        assert code == 0, err
        assert "HTTP 200" in out and "status: duplicate" in out
        # a copy with another run id and an edited claim: accepted, scored by the server
        doc = json.loads(file.read_text())
        honest = doc["leaderboard_score"]
        doc["run_id"] = doc["results"]["run_id"] = "edited-copy"
        doc["leaderboard_score"] = 0.5
        tampered = tmp_path / "tampered.json"
        tampered.write_text(json.dumps(doc))
        code, out, err = run_cli(capsys, "submit", str(tampered), "--env-file", str(env_file))
        assert code == 0, err
        assert "status: accepted" in out and "flagged" in out
        assert f"leaderboard_score: {honest}" in out
        # a refusal: exit status 3 and the server's reason
        env_file.write_text(f"UPLOAD_URL={url}/api/v1/submissions\nUPLOAD_TOKEN=wrong\n")
        refused = _submit(file, env_file)
        assert refused.returncode == 3
        assert "HTTP 401" in refused.stderr and "revoked token" in refused.stderr
        board = __import__("httpx").get(f"{url}/api/v1/leaderboard", timeout=10).json()
        team = [r for r in board["rows"] if r["team"] == "Live Team"]
        assert len(team) == 1 and team[0]["submissions"] == 2 and team[0]["flagged"] is False
    app.state.store.engine.dispose()
