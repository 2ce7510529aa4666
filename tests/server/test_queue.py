"""The workers' queue as people see it (evaluation.server: store ``_queue``, ``_routes_queue``,
the team page, ``submissions`` and ``admin queue``), on a live server on 127.0.0.1 (SQLite and
PostgreSQL): a team's positions and estimated starts (deterministic, explained, "unknown"
without history), never another team's jobs; the organizers' overview with its workers,
failed and stuck jobs.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.server.api import create_app
from evaluation.server.db import create_admin_token
from evaluation.server.store import queue_overview
from evaluation.server.store._queue import HISTORY, STUCK_BEATS, Estimate
from tests.server._api import SUBMIT, Api, assert_rejected, serving
from tests.server._helpers import Clock, encode, run_cli, variant

JOBS = "/api/v1/jobs"
QUEUE = "/api/v1/queue"
REPORT = {"verdict": "reproduced", "table": [], "log_tail": "ran\nverdict: reproduced",
          "fingerprint_matches": True}


@pytest.fixture
def live(migrated_db_url, competition):
    """A live server on 127.0.0.1 (on each database) whose clock the test moves."""
    clock = Clock()
    app = create_app(competition, migrated_db_url, clock=clock)
    with serving(app, True) as client:
        yield Api(client, app.state.store, clock, True)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def final(api: Api, token: str, run_id: str, scale: float) -> int:
    reply = api.post(encode(variant(run_id, scale)), token)
    assert reply.status_code == 201, reply.text
    sid = reply.json()["submission_id"]
    assert api.client.put(f"{SUBMIT}/{sid}/final", headers=bearer(token)).status_code == 200
    return sid


def claim(api: Api, admin: str, worker: str, lease_s: float = 60) -> dict:
    reply = api.client.post(f"{JOBS}/claim", headers=bearer(admin),
                            json={"worker": worker, "lease_s": lease_s})
    assert reply.status_code == 200 and reply.json()["status"] == "claimed", reply.text
    return reply.json()


def finish(api: Api, admin: str, claimed: dict) -> None:
    reply = api.client.post(f"{JOBS}/{claimed['job']['job_id']}/finish", headers=bearer(admin),
                            json={"lease": claimed["lease"], "report": REPORT})
    assert reply.status_code == 200, reply.text


def places(api: Api, token: str) -> dict[int, dict]:
    """``{submission_id: its reproduction job}`` of the team's listing."""
    reply = api.get(SUBMIT, token)
    assert reply.status_code == 200, reply.text
    return {item["submission_id"]: job for item in reply.json()["submissions"]
            for job in item["queue"] if job["kind"] == "reproduce"}


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_a_team_sees_its_own_positions_and_explained_estimates(live, tmp_path, monkeypatch,
                                                               capsys):
    alice, bob = live.team("Alice"), live.team("Bob")
    admin = create_admin_token(live.store)
    a1, a2 = final(live, alice, "a-1", 1.0), final(live, alice, "a-2", 1.1)
    b1 = final(live, bob, "b-1", 1.2)
    c1 = final(live, live.team("Carol"), "c-1", 1.3)

    # no job has finished yet: positions are known, the start is "unknown"
    mine = places(live, alice)
    assert set(mine) == {a1, a2}
    assert [(mine[s]["state"], mine[s]["position"], mine[s]["estimated_start"])
            for s in (a1, a2)] == [("queued", 1, None), ("queued", 2, None)]
    assert "unknown" in mine[a1]["basis"]
    listing = live.get(SUBMIT, alice).json()
    # every team's jobs counted, of every kind (none of the others waits)
    assert {k: n for k, n in listing["queue_length"].items() if n} == {"reproduce": 4}
    assert places(live, bob)[b1]["position"] == 3

    # a job that ran 40 s gives the median; one running now makes one slot busy
    first = claim(live, admin, "w-1")
    assert first["job"]["submission_id"] == a1
    live.clock.now += timedelta(seconds=40)
    finish(live, admin, first)
    live.clock.now += timedelta(seconds=5)
    second = claim(live, admin, "w-1")  # a2, running
    now = live.clock.now
    mine = places(live, alice)
    assert mine[a1]["state"] == "reproduced" and mine[a1]["position"] is None
    assert mine[a2]["state"] == "running" and mine[a2]["position"] is None
    bobs = places(live, bob)
    # Bob's job is next (nobody ahead) but the only slot is busy: one round of 40 s
    assert bobs[b1]["position"] == 1
    assert bobs[b1]["estimated_start"] == iso(now + timedelta(seconds=40))
    assert "1 round(s) x 40.0 s" in bobs[b1]["basis"] and "median of the last 1" \
        in bobs[b1]["basis"]
    carol = live.get(QUEUE, live.team("Dave")).json()  # a team with no jobs: lengths only
    assert carol["jobs"] == []
    assert {k: n for k, n in carol["queue_length"].items() if n} == {"reproduce": 2}

    # a team's token never sees another team's jobs, on any of the routes
    for token, own, others in ((alice, {a1, a2}, {b1, c1}), (bob, {b1}, {a1, a2, c1})):
        seen = live.get(QUEUE, token).json()
        assert {j["submission_id"] for j in seen["jobs"]} == own
        text = json.dumps(live.get(SUBMIT, token).json())
        assert all(f'"submission_id": {o},' not in text for o in others)
    # the organizers' page and overview are theirs: a team gets 404, nobody 401
    assert_rejected(live.get("/queue", alice), 404)
    assert_rejected(live.get("/queue"), 401)
    overview = live.get(QUEUE, admin).json()
    assert overview["oldest_waiting"]["submission_id"] == b1
    assert [(w["name"], w["current_jobs"]) for w in overview["workers"]] == [
        ("w-1", [second["job"]["job_id"]])]
    page = live.get("/queue", admin)
    assert page.status_code == 200 and "w-1" in page.text and "Bob" in page.text

    # the command: Bob's line shows its place and start; the queue's length, every team's
    monkeypatch.chdir(tmp_path)  # no upload.env here
    monkeypatch.setenv("UPLOAD_TOKEN", bob)
    monkeypatch.delenv("UPLOAD_URL", raising=False)
    base = str(live.client.base_url).rstrip("/")
    code, out, err = run_cli(capsys, "submissions", "--server", base)
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.split()[0] == str(b1)]
    assert f"reproduce #1 ~{iso(now + timedelta(seconds=40))[11:16]}" in line
    assert "2 reproduce job(s)" in out.splitlines()[-1]
    code, out, err = run_cli(capsys, "submissions", "--server", base, "--log", str(b1))
    assert code == 0 and "position 1, estimated start" in out and "median of the last 1" in out

    # the team page: the queue's length for everyone, the team's own jobs for its token only
    public = live.get("/team", None, name="Alice")
    own = live.get("/team", alice, name="Alice")
    other = live.get("/team", bob, name="Alice")
    assert public.status_code == own.status_code == other.status_code == 200
    assert 'id="queue-length"' in public.text and 'id="queue"' not in public.text
    assert 'id="queue"' in own.text and "running" in own.text
    assert 'id="queue"' not in other.text


def test_the_estimate_is_the_median_of_the_latest_jobs_times_the_rounds():
    # the rule itself, on numbers a person can check
    unknown = Estimate(kind="score", median_s=None, timed=0, queued=3, running=0)
    assert unknown.wait_s(2) is None and "unknown" in unknown.basis(2)
    idle = Estimate(kind="score", median_s=10.0, timed=5, queued=3, running=0)
    assert [idle.wait_s(a) for a in range(3)] == [0.0, 10.0, 20.0]  # one slot, free now
    busy = Estimate(kind="score", median_s=10.0, timed=HISTORY, queued=5, running=2)
    assert [busy.wait_s(a) for a in range(5)] == [10.0, 10.0, 20.0, 20.0, 30.0]
    assert busy.basis(3) == ("2 round(s) x 10.0 s (the median of the last 20 score jobs); "
                             "3 queued before it, 2 running, 2 at once")


def test_the_organizers_see_workers_failed_and_stuck_jobs(live, migrated_db_url, capsys):
    alice = live.team("Alice")
    admin = create_admin_token(live.store)
    s1, s2 = final(live, alice, "a-1", 1.0), final(live, alice, "a-2", 1.1)
    lease_s = 30.0
    silent = claim(live, admin, "w-silent", lease_s)
    failing = claim(live, admin, "w-fail", lease_s)
    assert {silent["job"]["submission_id"], failing["job"]["submission_id"]} == {s1, s2}
    failed = live.client.post(f"{JOBS}/{failing['job']['job_id']}/finish",
                              headers=bearer(admin),
                              json={"lease": failing["lease"], "failure": "no GPU here",
                                    "retry": False})
    assert failed.status_code == 200, failed.text
    interval = lease_s / 3
    # within the expected heartbeat interval: running as expected
    live.clock.now += timedelta(seconds=STUCK_BEATS * interval - 1)
    assert queue_overview(live.store).stuck == ()
    # silent past it, its lease still running: flagged before the lease runs out
    live.clock.now += timedelta(seconds=2)
    [stuck] = queue_overview(live.store).stuck
    assert (stuck.job.job_id, stuck.problem) == (silent["job"]["job_id"], "silent")
    assert stuck.interval_s == pytest.approx(interval) and stuck.lease_left_s > 0
    # a heartbeat clears it; a lease that ran out is flagged as such
    beat = live.client.post(f"{JOBS}/{silent['job']['job_id']}/heartbeat",
                            headers=bearer(admin),
                            json={"lease": silent["lease"], "lease_s": lease_s})
    assert beat.status_code == 200
    assert queue_overview(live.store).stuck == ()
    live.clock.now += timedelta(seconds=lease_s + 1)
    [expired] = queue_overview(live.store).stuck
    assert expired.problem == "lease expired" and expired.lease_left_s == 0

    overview = live.get(QUEUE, admin).json()
    assert overview["counts"]["public"]["running"] == 1
    assert overview["counts"]["public"]["failed"] == 1
    assert [(j["submission_id"], j["reason"]) for j in overview["failed"]] == [
        (failing["job"]["submission_id"], "no GPU here")]
    workers = {w["name"]: w for w in overview["workers"]}
    assert workers["w-silent"]["current_jobs"] == [silent["job"]["job_id"]]
    assert workers["w-fail"]["current_jobs"] == []
    assert overview["oldest_waiting"] is None

    # `admin queue` reads the same database (on the wall clock: long after the test's
    # clock, so the lease has run out there too)
    code, out, _ = run_cli(capsys, "admin", "--db", migrated_db_url, "queue")
    assert code == 0, out
    assert "STUCK job" in out and "lease expired" in out and "no GPU here" in out
    assert "w-silent" in out and "oldest waiting job: none" in out
    code, out, _ = run_cli(capsys, "admin", "--db", migrated_db_url, "queue", "--json")
    assert code == 0 and json.loads(out)["failed"][0]["reason"] == "no GPU here"
