"""The leaderboard's HTTP API, through FastAPI's test client and a live uvicorn on 127.0.0.1.

Every rule is checked both ways (the ``api`` fixture): the app in process, and the same app
served by uvicorn on a free port of 127.0.0.1, with a real HTTP client. Hostile bodies must get
a 4xx with ``{"status": "rejected", "reason": ...}``, never a 500 or a traceback.
"""

from __future__ import annotations

import json
import threading
import warnings
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from sqlalchemy.exc import OperationalError  # noqa: E402

from evaluation.challenge import aggregate  # noqa: E402
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import MAX_BODY_BYTES  # noqa: E402
from evaluation.server.db import add_team, create_admin_token, list_teams, revoke_team  # noqa: E402
from tests.server._api import SUBMIT, Api, assert_rejected, serving  # noqa: E402
from tests.server._helpers import (  # noqa: E402
    NOON,
    Clock,
    baseline_document,
    computed,
    encode,
    fold_tests,
    migrated_sqlite_url,
    variant,
)
from tests.server._live_server import http_client, live_server  # noqa: E402

with warnings.catch_warnings():  # starlette suggests httpx2 for its test client; httpx works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient


RECEIPT_KEYS = {"status", "submission_id", "phase", "phase1_score", "leaderboard_score",
                "interval", "rank", "flagged", "message"}


@pytest.fixture(scope="module", params=["testclient", "live"])
def api(request, tmp_path_factory, competition):
    """The app in process or served live, one of each for the module's tests that read back
    only their own team's submissions and never move the clock: building an app and
    answering its first request cost more than most of these tests."""
    clock = Clock()
    app = create_app(competition, migrated_sqlite_url(tmp_path_factory.mktemp("api")),
                     clock=clock)
    live = request.param == "live"
    with serving(app, live) as client:
        yield Api(client, app.state.store, clock, live)


@pytest.fixture(params=["testclient", "live"])
def own_api(request, tmp_path, competition):
    """As ``api``, an app of the test's own: for the tests that read every team of the board,
    the store's last team, or move the clock."""
    clock = Clock()
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=clock)
    live = request.param == "live"
    with serving(app, live) as client:
        yield Api(client, app.state.store, clock, live)


# ---------------------------------------------------------------------------- submissions


def test_accepted_duplicate_and_conflict(api, competition):
    token = api.team("Uploaders")
    refs = competition.phases[0].references
    doc = variant("Up-1", 1.2, refs)
    first = api.post(encode(doc), token, **{"Idempotency-Key": "Up-1"})
    assert first.status_code == 201, first.text
    answer = first.json()
    assert set(answer) == RECEIPT_KEYS
    expected = aggregate(fold_tests(doc), refs)
    assert answer["status"] == "accepted" and answer["phase"] == "public"
    assert answer["leaderboard_score"] == pytest.approx(expected["phase2_score"], rel=1e-12)
    assert answer["phase1_score"] == pytest.approx(expected["phase1_score"], rel=1e-12)
    # a claim has no place until the organizers computed its scores
    assert answer["rank"] is None and answer["flagged"] is False
    assert len(answer["interval"]) == 2
    again = api.post(encode(doc), token, **{"Idempotency-Key": "Up-1"})
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert again.json()["submission_id"] == answer["submission_id"]
    changed = variant("Up-1", 1.3, refs)
    body = assert_rejected(api.post(encode(changed), token), 409)
    assert "Up-1" in body["reason"]
    # a second, worse run: the team's best stays the first, rank 1
    worse = api.post(encode(variant("Up-2", 1.0)), token)
    assert worse.status_code == 201 and worse.json()["rank"] is None
    computed(api.store)
    board = api.get("/api/v1/leaderboard").json()
    assert [(r["team"], r["rank"], r["submission_id"]) for r in board["rows"]
            if not r["is_baseline"]] == [("Uploaders", 1, answer["submission_id"])]


def test_rank_is_the_teams_place_on_the_board(own_api):
    first = own_api.post(encode(variant("R-1", 1.1)), own_api.team("First"))
    second = own_api.post(encode(variant("R-2", 1.3)), own_api.team("Second"))
    assert (first.json()["rank"], second.json()["rank"]) == (None, None)  # claims
    computed(own_api.store)
    board = own_api.get("/api/v1/leaderboard").json()
    assert [(r["team"], r["rank"]) for r in board["rows"] if not r["is_baseline"]] == [
        ("Second", 1), ("First", 2)]


def test_tampered_claim_is_accepted_and_flagged(api, competition):
    refs = competition.phases[0].references
    doc = variant("Tampered", 1.0, refs)
    honest = aggregate(fold_tests(doc), refs)["phase2_score"]
    doc["leaderboard_score"] = 0.75
    answer = api.post(encode(doc), api.team("Tamperers")).json()
    assert answer["status"] == "accepted" and answer["flagged"] is True
    assert answer["leaderboard_score"] == pytest.approx(honest, rel=1e-12)
    board = api.get("/api/v1/leaderboard").json()
    row = next(r for r in board["rows"] if r["team"] == "Tamperers")
    assert row["flagged"] is True and row["leaderboard_score"] == pytest.approx(honest)


def test_idempotency_key_other_than_the_run_id_is_refused(api):
    body = assert_rejected(api.post(encode(variant("K-1")), api.team("Keyed"),
                                    **{"Idempotency-Key": "K-2"}), 422)
    assert "Idempotency-Key" in body["reason"]


def test_admin_token_cannot_submit(api):
    admin = create_admin_token(api.store)
    assert "organizer" in assert_rejected(api.post(encode(variant("A-1")), admin),
                                          403)["reason"]


# ---------------------------------------------------------------------------- tokens


def test_every_bad_token_gets_the_same_401(api):
    token = api.team("Holders")
    revoked = api.team("Revoked")
    revoke_team(api.store, "Revoked")
    body = encode(variant("Auth-1"))
    variants = [
        {}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": f"Bearer {revoked}"}, {"Authorization": f"Bearer {token} extra"},
        {"Authorization": token}, {"Authorization": "Bearer " + "A" * 5000},
    ]
    answers = []
    for headers in variants:
        response = api.client.post(SUBMIT, content=body, headers=headers)
        assert_rejected(response, 401)
        assert response.headers["WWW-Authenticate"] == "Bearer"
        answers.append(response.json())
        got = api.client.get(f"{SUBMIT}/1", headers=headers)
        assert got.status_code == 401 and got.json() == answers[0]
    assert all(a == answers[0] for a in answers)
    # the right token in any case of the scheme works
    ok = api.client.post(SUBMIT, content=body, headers={"Authorization": f"bearer {token}"})
    assert ok.status_code == 201


# ---------------------------------------------------------------------------- body size


def test_body_limit_is_exact(api):
    token = api.team("Sizers")
    doc = encode(variant("Size-1"))
    padded = b" " * (MAX_BODY_BYTES - len(doc)) + doc  # JSON allows leading whitespace
    assert len(padded) == MAX_BODY_BYTES
    assert api.post(padded, token).status_code == 201
    over = b" " + padded
    body = assert_rejected(api.post(over, token), 413)
    assert str(MAX_BODY_BYTES) in body["reason"]


def test_five_megabytes_are_refused(api):
    token = api.team("Floods")
    response = api.post(b"[" + b"0," * (5 * 1024 * 1024 // 2) + b"0]", token)
    assert_rejected(response, 413)


def test_chunked_body_without_length_is_counted(api):
    token = api.team("Chunkers")
    sent = []

    def chunks():
        for _ in range(40):  # 40 x 64 KiB = 2.5 MiB, no Content-Length
            sent.append(1)
            yield b" " * 65536

    response = api.client.post(SUBMIT, content=chunks(),
                               headers={"Authorization": f"Bearer {token}"})
    assert_rejected(response, 413)
    small = encode(variant("Chunked-ok"))
    response = api.client.post(SUBMIT, content=iter([small[:100], small[100:]]),
                               headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.text


def test_a_lying_content_length_does_not_lift_the_limit(tmp_path, competition):
    # only in process: an HTTP server reads as many bytes as Content-Length says, so over a
    # socket a lie makes the rest of the body a malformed next request
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock())
    token = add_team(app.state.store, "Liars", "l@example.org")[1]
    with TestClient(app, raise_server_exceptions=False) as client:
        big = b" " * (MAX_BODY_BYTES + 10)
        request = client.build_request("POST", SUBMIT, content=big,
                                       headers={"Authorization": f"Bearer {token}"})
        request.headers["Content-Length"] = "100"
        assert_rejected(client.send(request), 413)
        request = client.build_request("POST", SUBMIT, content=b"{}",
                                       headers={"Authorization": f"Bearer {token}"})
        request.headers["Content-Length"] = "lots"
        assert_rejected(client.send(request), 400)


# ---------------------------------------------------------------------------- hostile bodies


def _hostile_bodies() -> list[tuple[str, bytes, int]]:
    base = baseline_document()

    def edited(edit) -> bytes:
        doc = variant("Hostile-1", base=base)
        edit(doc)
        return json.dumps(doc).encode()

    def fold0(key, value):
        return lambda d: d["results"]["folds"][0]["tests"].__setitem__(key, value)

    valid = encode(variant("Hostile-1", base=base))
    return [
        ("NaN token", valid.replace(b'"HIT_RATE": ', b'"HIT_RATE": NaN, "x": ', 1), 422),
        ("Infinity token", valid.replace(b'"MRR": ', b'"MRR": Infinity, "y": ', 1), 422),
        ("1e308", edited(fold0("HIT_RATE", 1e308)), 422),
        ("1e999", valid.replace(b'"HIT_RATE": ', b'"HIT_RATE": 1e999, "z": ', 1), 422),
        ("string for a number", edited(fold0("MRR", "0.5")), 422),
        ("boolean for a number", edited(fold0("MRR", True)), 422),
        ("null for a number", edited(fold0("MRR", None)), 422),
        ("missing folds", edited(lambda d: d["results"]["folds"].pop()), 422),
        ("duplicate folds", edited(lambda d: d["results"]["folds"].__setitem__(
            1, d["results"]["folds"][0])), 422),
        ("wrong run hash", edited(lambda d: (d.__setitem__("run_hash", "ab" * 32),
                                             d["results"].__setitem__("run_hash", "ab" * 32))),
         422),
        ("other data", edited(lambda d: d["results"]["dataset"].__setitem__(
            "fingerprint", "cd" * 32)), 422),
        ("not eligible", edited(lambda d: d["results"].__setitem__(
            "eligible_for_upload", False)), 422),
        ("run id mismatch", edited(lambda d: d.__setitem__("run_id", "other-run")), 422),
        ("run id pattern", edited(lambda d: (d.__setitem__("run_id", "../../etc"),
                                             d["results"].__setitem__("run_id", "../../etc"))),
         422),
        ("empty body", b"", 422),
        ("not JSON", b"this is not json", 422),
        ("JSON array", b"[1, 2, 3]", 422),
        ("JSON null", b"null", 422),
        ("invalid UTF-8", b'{"run_id": "\xff\xfe"}', 422),
        ("deep nesting", b"[" * 100_000 + b"]" * 100_000, 422),
        ("huge integer", b'{"run_id": ' + b"9" * 5000 + b"}", 422),
        ("duplicate keys", b'{"run_id": "a", "run_id": "b"}', 422),
        ("NUL in a string", edited(lambda d: d.__setitem__("participant_id", "a\x00b")), 422),
        ("HTML in the run id", edited(lambda d: (
            d.__setitem__("run_id", "<img src=x>"),
            d["results"].__setitem__("run_id", "<img src=x>"))), 422),
    ]


HOSTILE = _hostile_bodies()


def test_hostile_bodies_are_refused_cleanly(own_api):
    token = own_api.team("Hostiles")
    for name, body, status in HOSTILE:
        response = own_api.post(body, token)
        assert response.status_code == status, (name, response.status_code, response.text)
        answer = assert_rejected(response, status)
        assert len(answer["reason"]) < 2000, name
    # none of them was stored, and the server still works
    assert list_teams(own_api.store)[-1].submissions == 0
    assert own_api.get("/healthz").json() == {"status": "ok"}


def test_unicode_and_html_are_data(own_api):
    doc = variant("Unicode-1")
    doc["participant_id"] = "<b>東京</b> \"quoted\" 🚀"
    doc["email"] = "<script>@example.org"
    names = ["<script>alert(1)<script>", "東京チーム 🚀", "\"><img src=x onerror=alert(1)>"]
    for i, name in enumerate(names):
        doc = variant(f"Unicode-{i}", 1 + i / 10)
        doc["participant_id"] = "<b>東京</b> \"quoted\" 🚀"
        assert own_api.post(encode(doc), own_api.team(name)).status_code == 201
    board = own_api.get("/api/v1/leaderboard").json()
    assert {r["team"] for r in board["rows"] if not r["is_baseline"]} == set(names)
    page = own_api.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(1)&lt;script&gt;" in page.text
    assert "東京チーム 🚀" in page.text


# ---------------------------------------------------------------------------- limits, phases


def test_daily_limit_answers_429_with_retry_after(own_api):
    own_api.clock.now = datetime(2026, 6, 1, 23, 0, 0, tzinfo=timezone.utc)
    token = own_api.team("Busy")
    for i in range(5):
        assert own_api.post(encode(variant(f"L-{i}")), token).status_code == 201
    refused = own_api.post(encode(variant("L-5")), token)
    assert_rejected(refused, 429)
    assert refused.headers["Retry-After"] == "3600"  # one hour to the next UTC midnight
    # a repeat still answers, known by its Idempotency-Key (the run id) alone; without the
    # key the body is not read to find out
    repeat = own_api.post(encode(variant("L-0")), token, **{"Idempotency-Key": "L-0"})
    assert repeat.status_code == 200 and repeat.json()["status"] == "duplicate"
    keyless = assert_rejected(own_api.post(encode(variant("L-0")), token), 429)
    assert "Idempotency-Key" in keyless["reason"]
    own_api.clock.now += timedelta(hours=1)
    assert own_api.post(encode(variant("L-5")), token).status_code == 201


def test_closed_phase_answers_403_naming_the_times(own_api):
    own_api.clock.now = datetime(2025, 6, 1, tzinfo=timezone.utc)
    body = assert_rejected(own_api.post(encode(variant("Early")), own_api.team("Early birds")), 403)
    assert "2026-01-01T00:00:00Z" in body["reason"] and "2028-02-01T00:00:00Z" in body["reason"]


# ---------------------------------------------------------------------------- reading


def test_leaderboard_phases_hidden_scores_and_admin(own_api):
    token = own_api.team("Finalists")
    admin = create_admin_token(own_api.store)
    public = own_api.get("/api/v1/leaderboard").json()
    assert public["phase"] == "public" and public["phases"] == ["public", "final"]
    assert [r["team"] for r in public["rows"]] == ["Popularity", "Random"]
    assert all(r["is_baseline"] and r["rank"] is None for r in public["rows"])
    own_api.clock.now = datetime(2028, 1, 5, tzinfo=timezone.utc)
    answer = own_api.post(encode(variant("Final-1", 1.2)), token).json()
    assert answer["phase"] == "final" and answer["rank"] is None
    assert answer["leaderboard_score"] is None
    hidden = own_api.get("/api/v1/leaderboard").json()
    assert hidden["phase"] == "final" and hidden["public"] is False
    assert all(r["leaderboard_score"] is None and r["rank"] is None for r in hidden["rows"])
    computed(own_api.store)
    shown = own_api.get("/api/v1/leaderboard", admin).json()
    finalist = next(r for r in shown["rows"] if r["team"] == "Finalists")
    assert finalist["rank"] == 1 and finalist["leaderboard_score"] is not None
    # a team's token reads the public view; a wrong one is refused
    assert own_api.get("/api/v1/leaderboard", token).json()["rows"] == hidden["rows"]
    assert_rejected(own_api.get("/api/v1/leaderboard", "wrong-token"), 401)
    earlier = own_api.get("/api/v1/leaderboard", phase="public").json()
    assert earlier["phase"] == "public"
    assert "final" in assert_rejected(own_api.get("/api/v1/leaderboard", phase="nope"),
                                      404)["reason"]


def test_a_submission_is_visible_to_its_team_and_organizers_only(api):
    mine, theirs = api.team("Mine"), api.team("Theirs")
    own = api.post(encode(variant("Own-1")), mine).json()["submission_id"]
    other = api.post(encode(variant("Other-1")), theirs).json()["submission_id"]
    shown = api.get(f"{SUBMIT}/{own}", mine)
    assert shown.status_code == 200
    view = shown.json()
    assert view["team"] == "Mine" and view["run_id"] == "Own-1" and view["num_folds"] == 4
    hidden = assert_rejected(api.get(f"{SUBMIT}/{other}", mine), 404)
    missing = assert_rejected(api.get(f"{SUBMIT}/999999", mine), 404)
    # the same answer for another team's submission and a missing one
    assert hidden["reason"].replace(str(other), "N") == missing["reason"].replace("999999", "N")
    admin = create_admin_token(api.store)
    assert api.get(f"{SUBMIT}/{other}", admin).json()["team"] == "Theirs"
    assert api.get(f"{SUBMIT}/1", admin).json()["is_baseline"] is True
    body = assert_rejected(api.get(f"{SUBMIT}/abc", mine), 422)
    assert body["detail"] and body["detail"][0]["loc"] == ["path", "submission_id"]


def test_health_docs_page_and_unknown_routes(api):
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    assert {SUBMIT, "/api/v1/leaderboard", "/api/v1/submissions/{submission_id}",
            "/healthz", "/"} <= set(spec["paths"])
    page = api.get("/")
    assert page.status_code == 200 and "Popularity" in page.text
    assert_rejected(api.get("/nope"), 404)
    assert_rejected(api.client.delete(SUBMIT), 405)


def test_database_trouble_is_503_and_bugs_are_500_without_traceback(tmp_path, competition,
                                                                      monkeypatch):
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock())
    store = app.state.store

    def locked():
        raise OperationalError("SELECT 1", {}, Exception("database is locked"))

    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(store, "ping", locked)
    # what the app's board cache calls to make a board
    monkeypatch.setattr("evaluation.server.api._board_cache.board_with_standings", broken)
    with TestClient(app, raise_server_exceptions=False) as client:
        busy = client.get("/healthz")
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "2"
        assert busy.json()["status"] == "unavailable"
        failed = client.get("/api/v1/leaderboard")
        assert failed.status_code == 500 and failed.json()["status"] == "error"
        assert "secret internal detail" not in failed.text and "Traceback" not in failed.text


# ---------------------------------------------------------------------------- concurrency


@pytest.fixture(params=["sqlite", "postgresql"])
def live_api(request, tmp_path, competition):
    url = migrated_sqlite_url(tmp_path) if request.param == "sqlite" \
        else request.getfixturevalue("postgres_migrated_database")
    clock = Clock(NOON)
    app = create_app(competition, url, clock=clock)
    with live_server(app) as base:
        yield base, app.state.store


def _post_together(base: str, bodies: list[bytes], token: str) -> list:
    barrier = threading.Barrier(len(bodies))
    answers: list = [None] * len(bodies)

    def send(i: int) -> None:
        with http_client(base, timeout=60) as client:
            barrier.wait(timeout=30)
            answers[i] = client.post(SUBMIT, content=bodies[i],
                                     headers={"Authorization": f"Bearer {token}"})

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert not any(t.is_alive() for t in threads), "an upload did not finish within 90 s"
    return answers


def test_live_daily_limit_and_idempotency_are_exact_under_concurrency(live_api):
    base, store = live_api
    _, token = add_team(store, "Crowd", "c@example.org")
    # twice the daily limit at once (the heavier loads, from 32 threads and many teams, are
    # test_load's)
    answers = _post_together(base, [encode(variant(f"C-{i}", 1 + i / 100)) for i in range(10)],
                             token)
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] * 5 + [429] * 5, codes
    assert all(a.headers.get("Retry-After") == str(12 * 3600) for a in answers
               if a.status_code == 429)
    assert list_teams(store)[-1].submissions == 5
    _, token = add_team(store, "Echo", "e@example.org")
    answers = _post_together(base, [encode(variant("E-1"))] * 10, token)
    assert sorted(a.status_code for a in answers) == [200] * 9 + [201]
    assert len({a.json()["submission_id"] for a in answers}) == 1
    assert list_teams(store)[-1].submissions == 1
