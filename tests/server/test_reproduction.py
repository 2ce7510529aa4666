"""The organizers' side of a reproduction: a submission's stored body, and the verdict.

``GET /api/v1/submissions/{id}/payload`` and ``POST /api/v1/submissions/{id}/reproduction``
answer only an organizer's token (a team's gets 404, as for a missing submission). The
verdict's report is checked strictly; the latest verdict is the board's badge, and every one
is kept in the ``reproductions`` table. The main flow runs both in process (TestClient) and
through a live uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import sqlalchemy as sa

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.server.api import create_app
from evaluation.server.core import MAX_LOG_TAIL_BYTES, MAX_REPORT_BYTES
from evaluation.server.db import ReproductionRow, SubmissionRow, create_admin_token
from evaluation.server.store import phase_board
from tests.server._api import SUBMIT, Api, assert_rejected, post_report, report, serving
from tests.server._helpers import Clock, encode, fold_tests, migrated_sqlite_url, variant


def make_api(tmp_path, competition):
    clock = Clock()
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=clock)
    return app, clock


@pytest.fixture(params=["testclient", "live"])
def api(request, tmp_path, competition):
    app, clock = make_api(tmp_path, competition)
    with serving(app, request.param == "live") as client:
        yield Api(client, app.state.store, clock, request.param == "live")


@pytest.fixture
def local_api(tmp_path, competition):
    app, clock = make_api(tmp_path, competition)
    with serving(app, False) as client:
        yield Api(client, app.state.store, clock, False)


def board_row(api: Api, team: str) -> dict:
    rows = api.get("/api/v1/leaderboard").json()["rows"]
    return next(r for r in rows if r["team"] == team)


def test_payload_verdicts_badge_and_history(api):
    """The whole organizer flow, in process and on a live server."""
    token, admin = api.team("Alpha"), create_admin_token(api.store)
    document = variant("Alpha-1", 1.1)
    sid = api.post(encode(document), token).json()["submission_id"]

    # the submission view points an organizer at the body; a team gets no link
    view = api.get(f"{SUBMIT}/{sid}", admin).json()
    assert view["payload_url"] == f"/api/v1/submissions/{sid}/payload"
    assert api.get(f"{SUBMIT}/{sid}", token).json()["payload_url"] is None

    # the body as stored: the uploaded document, canonical JSON (sorted keys, no spaces)
    payload = api.get(view["payload_url"], admin)
    assert payload.status_code == 200
    assert payload.headers["content-type"].startswith("application/json")
    assert payload.text == json.dumps(document, sort_keys=True, separators=(",", ":"),
                                      ensure_ascii=True)
    assert payload.json() == document
    # the team's own token, no token, a missing submission
    assert_rejected(api.get(view["payload_url"], token), 404)
    assert_rejected(api.get(view["payload_url"]), 401)
    assert_rejected(api.get(f"{SUBMIT}/999999/payload", admin), 404)

    # a team's token cannot record a verdict, not even on its own submission
    assert_rejected(post_report(api, sid, report(document), token), 404)
    assert_rejected(post_report(api, sid, report(document), None), 401)
    assert board_row(api, "Alpha")["reproduction"] == "pending"
    assert "\u25cb pending" in api.get("/").text

    answer = post_report(api, sid, report(document), admin)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"status": "recorded", "submission_id": sid,
                             "verdict": "reproduced"}
    assert board_row(api, "Alpha")["reproduction"] == "reproduced"
    assert "\u2713 reproduced" in api.get("/").text
    assert api.get(f"{SUBMIT}/{sid}", token).json()["reproduction"] == "reproduced"

    # a later verdict wins; both stay in the history
    api.clock.now = api.clock.now.replace(hour=13)
    failed = report(document, "not reproduced", fingerprint_matches=False,
                    log_tail="MemoryError\n")
    failed["table"][0].update(reproduced=0.5, difference=0.5 - failed["table"][0]["uploaded"],
                              within=False)
    assert post_report(api, sid, failed, admin).json()["verdict"] == "not reproduced"
    assert board_row(api, "Alpha")["reproduction"] == "not reproduced"
    assert "\u2717 not reproduced" in api.get("/").text
    with api.store.engine.connect() as conn:
        history = conn.execute(sa.select(ReproductionRow).order_by(ReproductionRow.id)).all()
    assert [(h.submission_id, h.verdict, h.fingerprint_matches, h.private) for h in history] \
        == [(sid, "reproduced", True, False), (sid, "not reproduced", False, False)]
    assert [h.recorded_at.hour for h in history] == [12, 13]
    assert history[1].log_tail == "MemoryError\n"
    assert history[1].table[0]["reproduced"] == 0.5 and history[1].table[0]["within"] is False
    assert len(history[0].table) == 4 * len(LEADERBOARD_TESTS)
    assert history[0].harness_version == "0.1.0" and history[0].private_fold_tests is None


def _bad_reports(document: dict) -> list[tuple[str, bytes, int, str]]:
    """(what, body, status, a word the reason must hold)."""
    good = report(document)

    def edited(**fields) -> bytes:
        return json.dumps({**good, **fields}).encode()

    nan_row = json.dumps(good).replace('"difference": 0.0', '"difference": NaN', 1).encode()
    folds = fold_tests(document)
    out_of_range = [dict(f) for f in folds]
    out_of_range[2]["HIT_RATE"] = 1.5
    return [
        ("an unknown verdict", edited(verdict="maybe"), 422, "verdict"),
        ("the pending state as a verdict", edited(verdict="pending"), 422, "verdict"),
        ("NaN in the table", nan_row, 422, "NaN"),
        ("a string for a number", edited(table=[{**good["table"][0], "uploaded": "0.1"}]),
         422, "table[0].uploaded"),
        ("within as a number", edited(table=[{**good["table"][0], "within": 1}]), 422,
         "table[0].within"),
        ("a log tail over 64 KiB", edited(log_tail="x" * (MAX_LOG_TAIL_BYTES + 1)), 422,
         "log_tail"),
        ("a multi-byte log tail over 64 KiB", edited(log_tail="\u00e9" * (MAX_LOG_TAIL_BYTES
                                                                          // 2 + 1)),
         422, "log_tail"),
        ("no verdict", json.dumps({k: v for k, v in good.items() if k != "verdict"}).encode(),
         422, "verdict"),
        ("no fingerprint check", json.dumps({k: v for k, v in good.items()
                                             if k != "fingerprint_matches"}).encode(),
         422, "fingerprint_matches"),
        ("an unknown key", edited(score=0.9), 422, "score"),
        ("private without folds", edited(private=True), 422, "private_fold_tests"),
        ("folds without private", edited(private_fold_tests=folds), 422, "private"),
        ("too few private folds", edited(private=True, private_fold_tests=folds[:3]), 422,
         "3 fold(s)"),
        ("a private fold out of range", edited(private=True, private_fold_tests=out_of_range),
         422, "private_fold_tests[2].HIT_RATE"),
        ("a private fold without a test",
         edited(private=True, private_fold_tests=[{k: v for k, v in f.items() if k != "MRR"}
                                                 for f in folds]), 422, "MRR"),
        ("not JSON", b"{verdict", 422, "JSON"),
        ("a JSON array", b"[]", 422, "object"),
        ("a body over the limit", b" " * (MAX_REPORT_BYTES + 1), 413, "bytes"),
    ]


def test_bad_reports_are_refused_naming_the_field(local_api):
    api = local_api
    token, admin = api.team("Beta"), create_admin_token(api.store)
    document = variant("Beta-1")
    sid = api.post(encode(document), token).json()["submission_id"]
    for what, body, status, word in _bad_reports(document):
        reason = assert_rejected(post_report(api, sid, body, admin), status)["reason"]
        assert word in reason, (what, reason)
    # nothing was recorded
    assert board_row(api, "Beta")["reproduction"] == "pending"
    with api.store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(ReproductionRow)
                            ).scalar_one() == 0
    # a log tail of exactly 64 KiB, and no harness version, are accepted
    edge = report(document, log_tail="y" * MAX_LOG_TAIL_BYTES, harness_version=None)
    assert post_report(api, sid, edge, admin).status_code == 200
    assert_rejected(post_report(api, 999999, report(document), admin), 404)


def test_a_changed_baseline_takes_its_verdicts_along(tmp_path, competition):
    """The history references its submission; a baseline's replaced run deletes both."""
    app, _ = make_api(tmp_path, competition)
    store = app.state.store
    with serving(app, False) as client:
        admin = create_admin_token(store)
        baseline = phase_board(store, "public").rows[0]
        assert baseline.is_baseline
        reply = client.post(f"{SUBMIT}/{baseline.submission_id}/reproduction",
                            headers={"Authorization": f"Bearer {admin}"},
                            content=json.dumps(report(variant("x"))).encode())
        assert reply.status_code == 200, reply.text
    with store.engine.begin() as conn:
        conn.execute(sa.delete(SubmissionRow).where(SubmissionRow.id == baseline.submission_id))
        assert conn.execute(sa.select(sa.func.count()).select_from(ReproductionRow)
                            ).scalar_one() == 0
