"""The board made fast: each team's best submission by one query, and boards answered again
while the database's board version stays the same.

The query's rows are checked against a slow, obviously right reference (every submission read
back, sorted in Python by the board's rule) on many submissions with ties in every key; the
cache against writes made where the server cannot see them (another engine, the ``sqlite3``
module, as another process or an organizer's tool writes).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import warnings
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
pytest.importorskip("httpx")

import sqlalchemy as sa

from evaluation.server.api import create_app
from evaluation.server.db import SubmissionRow, TeamRow, add_team, authenticate, reveal_phase
from evaluation.server.standings import board_with_standings
from evaluation.server.store import phase_board, submit
from tests.server._helpers import (
    NOON,
    Clock,
    computed,
    encode,
    migrated_sqlite_url,
    open_store,
    sqlite_url,
    variant,
)

with warnings.catch_warnings():  # starlette suggests httpx2 for its test client; httpx works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient


def _seed(store, teams: int, submissions: int, seed: int) -> None:
    """``teams`` teams and ``submissions`` copies of one scored upload, with scores, phase-1
    scores and times drawn from a few values each, so that every tie-break is reached."""
    ids = [authenticate(store, add_team(store, f"Team {i:02d}", "t@example.org")[1]).team_id
           for i in range(teams)]
    first = submit(store, ids[0], encode(variant("seed-0")))
    with store.engine.connect() as conn:
        row = dict(conn.execute(sa.select(SubmissionRow.__table__).where(
            SubmissionRow.id == first.submission_id)).mappings().one())
    del row["id"]
    rng = random.Random(seed)
    rows = []
    for n in range(submissions):
        score = rng.choice([0.1, 0.2, 0.3])
        rows.append({**row, "team_id": rng.choice(ids), "run_id": f"seed-{n + 1}",
                     "leaderboard_score": score, "phase1_score": rng.choice([0.5, 0.6]),
                     "interval_low": score - 0.1, "interval_high": score + 0.1,
                     "submitted_at": NOON - timedelta(minutes=rng.choice(range(5)))})
    with store.writing() as session:
        session.execute(sa.insert(SubmissionRow), rows)


def _reference(store, phase: str) -> list[tuple[str, int, int, object]]:
    """Each team's (name, best submission id, count, last time), best first, by the board's
    rule read the slow way: every submission of the phase, sorted in Python."""
    with store.engine.connect() as conn:
        found = conn.execute(sa.select(
            TeamRow.name, TeamRow.is_baseline, SubmissionRow.id,
            SubmissionRow.leaderboard_score, SubmissionRow.phase1_score,
            SubmissionRow.submitted_at).join(TeamRow).where(SubmissionRow.phase == phase)).all()
    teams: dict[str, list] = {}
    for name, _, sid, score, phase1, at in found:
        teams.setdefault(name, []).append((-score, -phase1, at, sid))
    best = {name: min(rows) for name, rows in teams.items()}
    order = sorted(teams, key=lambda name: best[name])
    return [(name, best[name][3], len(teams[name]), max(r[2] for r in teams[name]))
            for name in order]


def test_board_rows_are_each_teams_best_by_the_rule_with_ties(migrated_db_url, competition):
    store = open_store(migrated_db_url, competition)
    _seed(store, teams=12, submissions=300, seed=7)
    computed(store)
    board = phase_board(store, "public")
    got = [(r.team, r.submission_id, r.submissions, r.last_submitted) for r in board.rows]
    assert got == _reference(store, "public")
    ranks = [r.rank for r in board.rows if not r.is_baseline]
    assert ranks == list(range(1, 13))
    # the ties are really there: some team's best shares its score with another's
    scores = [r.leaderboard_score for r in board.rows if not r.is_baseline]
    assert len(set(scores)) < len(scores)
    # an organizer's board of the hidden phase takes the same path
    assert [r.submission_id for r in phase_board(store, "public", admin=True).rows] == \
        [r.submission_id for r in board.rows]
    store.engine.dispose()


def test_the_board_reads_its_index_not_the_submissions_bodies(tmp_path, competition):
    from sqlalchemy.dialects import sqlite

    from evaluation.server.store._board import _public_query

    store = open_store(sqlite_url(tmp_path), competition)
    sql = str(_public_query("public").compile(dialect=sqlite.dialect(),
                                              compile_kwargs={"literal_binds": True}))
    with store.engine.connect() as conn:
        plan = " | ".join(r[3] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
    index = ("ix_submissions_phase_team_id_computed_leaderboard_score_phase1_score_"
             "submitted_at")
    # the stats and each team's best from the index alone; the rows only for the best ones
    assert plan.count(f"COVERING INDEX {index}") == 2, plan
    assert "SCAN submissions" not in plan, plan
    store.engine.dispose()


@pytest.fixture
def served(tmp_path, competition):
    """An app on an SQLite file, its test client, and a second store on the same file (with
    an engine of its own, as another server process or an ``admin`` command has). The file
    starts as a copy of a migrated one: the migrations are not what these tests check."""
    url = migrated_sqlite_url(tmp_path)
    clock = Clock()
    app = create_app(competition, url, clock=clock)
    other = open_store(url, competition, clock, pin=False)
    with TestClient(app) as client:
        yield client, app.state.store, other, tmp_path / "leaderboard.db"
    other.engine.dispose()


PATHS = ("/", "/api/v1/leaderboard", "/leaderboard.csv", "/api/v1/leaderboard?format=csv")
#: What a request sends to get a board made after every write before it.
NO_CACHE = {"Cache-Control": "no-cache"}


def _bodies(client, headers=None) -> dict[str, bytes]:
    answers = {path: client.get(path, headers=headers) for path in PATHS}
    assert all(a.status_code == 200 for a in answers.values())
    return {path: a.content for path, a in answers.items()}


def _remade() -> None:
    """Wait for the boards being made anew in the background."""
    for thread in threading.enumerate():
        if thread.name == "board-refresh":
            thread.join(30)


def test_boards_are_answered_again_until_any_process_writes(served, monkeypatch):
    client, store, other, _ = served
    made = []

    def counting(db, *args, **kwargs):
        made.append(args)
        return board_with_standings(db, *args, **kwargs)

    # what the app's board cache calls to make a board
    monkeypatch.setattr("evaluation.server.api._board_cache.board_with_standings", counting)
    first = _bodies(client)
    assert len(made) == 3  # page, JSON, CSV (the two CSV routes share one)
    assert _bodies(client) == first and len(made) == 3
    # an upload through another engine (another process): the requests meanwhile get the
    # boards they find, while each is made again once in the background, and then show it
    _, token = add_team(other, "Newcomer", "n@example.org")
    assert b"Newcomer" not in first["/api/v1/leaderboard"]  # a team without a submission
    submit(other, authenticate(other, token).team_id, encode(variant("new-1")))
    for path in PATHS[:3]:  # one of each kind (a remade entry could answer the second CSV)
        assert client.get(path).content == first[path]
    _remade()
    assert len(made) == 6
    second = _bodies(client)
    assert all(b"Newcomer" in body for body in second.values())
    assert len(made) == 6


def test_a_request_asking_for_no_cache_sees_every_write_at_once(served):
    client, _, other, _ = served
    first = _bodies(client)
    _, token = add_team(other, "Eager", "e@example.org")
    submit(other, authenticate(other, token).team_id, encode(variant("eager-1")))
    assert all(b"Eager" in body for body in _bodies(client, NO_CACHE).values())
    assert b"Eager" not in first["/"]


def test_the_processes_own_writes_show_at_once(served):
    client, store, _, _ = served
    _bodies(client)
    _, token = add_team(store, "Local", "l@example.org")  # through the app's own store
    submit(store, authenticate(store, token).team_id, encode(variant("local-1")))
    assert all(b"Local" in body for body in _bodies(client).values())


def test_a_write_from_an_outside_tool_changes_the_board(served):
    client, _, other, path = served
    _, token = add_team(other, "Outsider", "o@example.org")
    sid = submit(other, authenticate(other, token).team_id,
                 encode(variant("out-1"))).submission_id
    before = client.get("/api/v1/leaderboard").json()
    row = next(r for r in before["rows"] if r["team"] == "Outsider")
    assert row["reproduction"] == "pending"
    with sqlite3.connect(path) as conn:  # e.g. an organizer's script, or sqlite3's shell
        conn.execute("UPDATE submissions SET reproduction = 'reproduced' WHERE id = ?", (sid,))
    client.get("/api/v1/leaderboard")  # the board it finds; made again meanwhile
    _remade()
    after = client.get("/api/v1/leaderboard").json()
    assert next(r for r in after["rows"] if r["team"] == "Outsider")["reproduction"] == \
        "reproduced"
    # a reveal and a renamed team, too (asked for without cache: at once)
    reveal_phase(other, "public", close_now=True)
    assert client.get("/api/v1/leaderboard", headers=NO_CACHE).json()["revealed"] is True
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE teams SET name = 'Renamed' WHERE name = 'Outsider'")
    assert any(r["team"] == "Renamed" for r in client.get(
        "/api/v1/leaderboard", headers=NO_CACHE).json()["rows"])


def test_without_the_triggers_every_board_is_made_afresh(served):
    from evaluation.server.db import board_version

    client, store, other, path = served
    assert board_version(store) is not None
    with sqlite3.connect(path) as conn:  # a later migration that rebuilt the table drops them
        conn.execute("DROP TRIGGER board_change_submissions_update")
    assert board_version(store) is None
    _, token = add_team(other, "Late", "l@example.org")
    sid = submit(other, authenticate(other, token).team_id, encode(variant("late-1"))).submission_id
    client.get("/api/v1/leaderboard")
    with sqlite3.connect(path) as conn:  # raises no version now
        conn.execute("UPDATE submissions SET flagged = 1 WHERE id = ?", (sid,))
    rows = client.get("/api/v1/leaderboard").json()["rows"]
    assert next(r for r in rows if r["team"] == "Late")["flagged"] is True


def test_the_clock_picks_the_phase_of_a_board_answered_again(served):
    client, store, _, _ = served
    assert client.get("/api/v1/leaderboard").json()["phase"] == "public"
    store.clock.now = NOON.replace(year=2028, month=1, day=2)
    assert client.get("/api/v1/leaderboard").json()["phase"] == "final"
    assert client.get("/api/v1/leaderboard?phase=nope").status_code == 404
    assert client.get("/api/v1/leaderboard?phase=nope&format=xml").status_code == 404
    assert client.get("/api/v1/leaderboard?format=xml").status_code == 422


def test_an_answer_kept_longer_than_its_age_is_made_again(served, monkeypatch):
    from evaluation.server.api import BoardCache

    _, store, _, _ = served
    made = []
    cache = BoardCache(store, max_age=5.0)
    clock = [100.0]
    monkeypatch.setattr("evaluation.server.api._board_cache.time.monotonic", lambda: clock[0])

    def render(board):
        made.append(board.generated_at)
        return (board.phase, len(made))

    assert cache.answer("json", None, False, render) == ("public", 1)
    clock[0] += 4.9
    assert cache.answer("json", None, False, render) == ("public", 1)
    assert cache.answer("json", None, True, render) == ("public", 2)  # organizer
    clock[0] += 0.2  # 5.1 s after the first: answered once more, made again meanwhile
    assert cache.answer("json", None, False, render) == ("public", 1)
    _remade()
    assert len(made) == 3
    assert cache.answer("json", None, False, render) == ("public", 3)


def test_an_answer_out_of_date_too_long_is_made_by_the_request(served, monkeypatch):
    from evaluation.server.api import BoardCache
    from evaluation.server.api._board_cache import MAX_LAG_S

    _, store, other, _ = served
    cache = BoardCache(store)
    clock = [100.0]
    monkeypatch.setattr("evaluation.server.api._board_cache.time.monotonic", lambda: clock[0])
    stuck = threading.Event()
    calls = []

    def render(board):
        calls.append(threading.current_thread().name)
        if threading.current_thread().name == "board-refresh":
            stuck.wait(30)  # a background remake that does not end
        return sorted(r.team for r in board.rows)

    first = cache.answer("json", None, False, render)
    add_team(other, "Slow", "s@example.org")
    submit(other, authenticate(other, add_team(other, "Slower", "t@example.org")[1]).team_id,
           encode(variant("slow-1")))
    assert cache.answer("json", None, False, render) == first  # its remake is stuck
    clock[0] += MAX_LAG_S - 0.1
    assert cache.answer("json", None, False, render) == first
    clock[0] += 0.2  # out of date for longer than MAX_LAG_S: the request makes it
    assert "Slower" in cache.answer("json", None, False, render)
    stuck.set()
    _remade()
    assert calls.count("board-refresh") == 1  # one remake at a time per entry


def test_the_benchmarks_seed_fills_the_board_it_says(tmp_path):
    from datetime import datetime, timezone

    from benchmarks._board_load import seed
    from benchmarks._uploads import competition_copy
    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, make_engine

    path = competition_copy(tmp_path, daily_limit=10**6, open_at=datetime.now(timezone.utc))
    url = migrated_sqlite_url(tmp_path)  # the seed's work, not the migrations
    tokens = seed(url, path, teams=20, submissions=100)
    assert len(tokens) == 20 and len(set(tokens.values())) == 20
    store = Database(make_engine(url), load_competition(path))
    rows = phase_board(store).rows
    teams = [r for r in rows if not r.is_baseline]
    assert len(teams) == 20 and sum(r.submissions for r in teams) == 100
    assert len({r.leaderboard_score for r in teams}) == 20  # scores spread: a best to find
    assert authenticate(store, tokens["Seed team 007"]).team_id is not None
    store.engine.dispose()


def test_the_benchmarks_seed_gives_the_best_submissions_per_user_values(tmp_path):
    from datetime import datetime, timezone

    from benchmarks._board_load import seed
    from benchmarks._uploads import competition_copy
    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, make_engine
    from evaluation.server.standings import StoreValues, with_standings

    path = competition_copy(tmp_path, daily_limit=10**6, open_at=datetime.now(timezone.utc))
    url = migrated_sqlite_url(tmp_path)  # the seed's work, not the migrations
    seed(url, path, teams=6, submissions=30, values_users=200)
    store = Database(make_engine(url), load_competition(path))
    board = with_standings(store, phase_board(store), StoreValues(store))
    teams = [r for r in board.rows if not r.is_baseline]
    assert board.standings is not None and board.standings.compared == 6
    assert all(r.standing.tier is not None and r.standing.values == "trusted"
               for r in teams)
    store.engine.dispose()
