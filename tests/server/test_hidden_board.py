"""A hidden phase's board tells nothing of its scores: not in a field, a header, the order of
its rows, their size, nor the time it takes.

Two databases get the same teams, uploads, times and reproductions; only the scores of the
uploads differ (each team's best is another of its submissions, and the teams' order is
reversed). Every anonymous answer about the hidden phase (page, JSON, both CSV routes, as served
by uvicorn on 127.0.0.1) must be the same bytes with the same headers, but for ``Date``; an
organizer's board, which shows the scores, must differ (else the test would prove nothing).
The time: the hidden board's queries read no score column at all.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import sqlalchemy as sa  # noqa: E402

from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.db import SubmissionRow, add_team, authenticate, create_admin_token  # noqa: E402
from evaluation.server.store import phase_board, submit  # noqa: E402
from tests.server._helpers import Clock, encode, open_store, sqlite_url, variant  # noqa: E402
from tests.server._live_server import http_client, live_server  # noqa: E402

#: Inside the example's hidden phase "final" (2028-01-01 to 2028-02-01, 2 uploads a day).
DAY = datetime(2028, 1, 3, 9, 0, tzinfo=timezone.utc)
TEAMS = ("Aurora", "borealis", "Cygnus")
#: Per database: the HIT_RATE scale of each team's upload on day 0 and on day 1.
SCALES = {"a": {"Aurora": (1.4, 0.9), "borealis": (1.2, 1.25), "Cygnus": (0.8, 1.0)},
          "b": {"Aurora": (0.8, 0.85), "borealis": (1.3, 0.9), "Cygnus": (1.1, 1.45)}}
PATHS = ("/", "/?phase=final", "/api/v1/leaderboard", "/api/v1/leaderboard?phase=final",
         "/leaderboard.csv", "/leaderboard.csv?phase=final",
         "/api/v1/leaderboard?phase=final&format=csv")


def _database(folder, competition, which: str):
    """An app whose database holds the uploads of ``SCALES[which]`` (same times, run ids
    and reproduction states in both), and its organizer's token."""
    folder.mkdir()
    clock = Clock(DAY)
    store = open_store(sqlite_url(folder), competition, clock)
    ids = {name: authenticate(store, add_team(store, name, "t@example.org")[1]).team_id
           for name in TEAMS}
    for day in range(2):
        for minute, name in enumerate(TEAMS):
            clock.now = DAY + timedelta(days=day, minutes=minute)
            submit(store, ids[name], encode(variant(f"{name}-{day}", SCALES[which][name][day])))
    with store.writing() as session:  # a reproduction of one upload, the same in both
        session.execute(sa.update(SubmissionRow).where(SubmissionRow.run_id == "Cygnus-0")
                        .values(reproduction="reproduced"))
    admin = create_admin_token(store)
    store.engine.dispose()
    clock.now = DAY + timedelta(days=2)
    return create_app(competition, sqlite_url(folder), clock=clock), admin


def _answers(app, admin: str) -> tuple[dict, dict]:
    """Each of ``PATHS`` as anyone gets it: (status, headers but Date, body); and the
    organizer's JSON board of the phase."""
    with live_server(app) as url, http_client(url) as client:
        anonymous = {}
        for path in PATHS:
            answer = client.get(path)
            headers = sorted((k, v) for k, v in answer.headers.items() if k.lower() != "date")
            anonymous[path] = (answer.status_code, headers, answer.content)
        organizer = client.get("/api/v1/leaderboard?phase=final",
                               headers={"Authorization": f"Bearer {admin}"}).json()
    return anonymous, organizer


def test_a_hidden_board_is_the_same_bytes_whatever_the_scores(tmp_path, competition):
    app_a, admin_a = _database(tmp_path / "a", competition, "a")
    app_b, admin_b = _database(tmp_path / "b", competition, "b")
    seen_a, organizer_a = _answers(app_a, admin_a)
    seen_b, organizer_b = _answers(app_b, admin_b)
    # the premise: the organizers' boards (scores shown) differ in order and best submissions
    order_a = [(r["team"], r["submission_id"]) for r in organizer_a["rows"]]
    order_b = [(r["team"], r["submission_id"]) for r in organizer_b["rows"]]
    assert [t for t, _ in order_a] != [t for t, _ in order_b]
    assert set(order_a) != set(order_b)
    for path in PATHS:
        status, headers, body = seen_a[path]
        assert status == 200, (path, body[:300])
        assert seen_b[path] == seen_a[path], path
        assert not any(k.lower() in ("etag", "last-modified") for k, _ in headers)
    # rows by team name (case folded), not by score: Aurora, borealis, Cygnus, then baselines
    rows = [r["team"] for r in httpx.Response(200, content=seen_a[PATHS[2]][2]).json()["rows"]]
    assert rows[:3] == list(TEAMS)


def test_a_hidden_board_reads_no_score(tmp_path, competition):
    """Its time cannot depend on a score it never reads: the statements of a hidden board name
    no score column; an organizer's board of the same phase does."""
    clock = Clock(DAY)
    store = open_store(sqlite_url(tmp_path), competition, clock)
    _, token = add_team(store, "Solo", "s@example.org")
    submit(store, authenticate(store, token).team_id, encode(variant("solo-1", 1.2)))
    statements: list[str] = []

    def record(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        hidden = phase_board(store, "final")
        shown, statements[:] = list(statements), []
        phase_board(store, "final", admin=True)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert all(r.leaderboard_score is None for r in hidden.rows)
    scores = ("leaderboard_score", "phase1_score", "interval_", "tests", "private_")
    assert not [s for s in shown if any(c in s for c in scores)], shown
    assert any("leaderboard_score" in s for s in statements)
    store.engine.dispose()
