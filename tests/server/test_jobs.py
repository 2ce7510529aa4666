"""The reproduction queue (evaluation.server: _store_jobs, _routes_jobs): jobs queued by final
selections and uploads, claimed with a lease through the organizers' API on a live server on
127.0.0.1 (SQLite and PostgreSQL), heartbeats and finishes refused once the lease was taken
over, bounded retries, what a team sees of its own jobs, ``admin jobs``, and the migration of
an old database with data.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import sqlalchemy as sa

from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.api import create_app
from evaluation.server.core import load_competition, recompute
from evaluation.server.db import (
    MIGRATIONS_DIR,
    Database,
    add_team,
    create_admin_token,
    make_engine,
    reveal_phase,
    upgrade,
)
from evaluation.server.store import (
    claim_job,
    job_counts,
    list_jobs,
    mark_final,
    own_submissions,
    record_reproduction,
    retry_job,
    submit,
)
from tests.server._api import SUBMIT, Api, serving
from tests.server._helpers import (
    EXAMPLE,
    HEAD_REVISION,
    Clock,
    document,
    encode,
    open_store,
    private_folds,
    private_report,
    run_cli,
    sqlite_url,
    variant,
    with_phases,
    write,
)

JOBS = "/api/v1/jobs"
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


def claim(api: Api, admin: str, worker: str, lease_s: float = 60, private: bool = True):
    reply = api.client.post(f"{JOBS}/claim", headers=bearer(admin),
                            json={"worker": worker, "lease_s": lease_s, "private": private})
    assert reply.status_code == 200, reply.text
    return reply.json()


def post(api: Api, admin: str, job_id: int, action: str, body: dict):
    return api.client.post(f"{JOBS}/{job_id}/{action}", headers=bearer(admin), json=body)


def submit_final(api: Api, token: str, run_id: str, scale: float = 1.0) -> int:
    reply = api.post(encode(variant(run_id, scale)), token)
    assert reply.status_code == 201, reply.text
    sid = reply.json()["submission_id"]
    marked = api.client.put(f"{SUBMIT}/{sid}/final", headers=bearer(token))
    assert marked.status_code == 200, marked.text
    return sid


# --------------------------------------------------------------------------- the competition


def test_the_competition_file_says_which_submissions_are_reproduced(tmp_path, competition):
    doc = document(competition)
    plain = load_competition(write(tmp_path, doc))
    assert plain.reproduce_attempts == 3
    assert [(p.reproduce, p.private_folds, p.public) for p in plain.phases] == [
        ("final", False, True), ("final", False, True)]
    doc["phases"][1].update(public=False)
    doc["phases"][0].update(reproduce="every", private_folds=True)
    doc["reproduce_attempts"] = 5
    chosen = load_competition(write(tmp_path, doc))
    assert [(p.reproduce, p.private_folds) for p in chosen.phases] == [
        ("every", True), ("final", True)]  # a hidden phase needs its private folds
    assert chosen.reproduce_attempts == 5
    # the example: the public phase without private folds, the hidden final phase with them
    assert [(p.name, p.private_folds) for p in competition.phases] == [
        ("public", False), ("final", True)]
    for key, value, words in [
            ("reproduce", "all", "must be one of 'final', 'every', 'none'"),
            ("private_folds", "yes", "must be true or false"),
            ("reproduce_attempts", 0, "must be an integer from 1 to 20"),
            ("reproduce_attempts", True, "must be an integer from 1 to 20")]:
        bad = document(competition)
        (bad if key == "reproduce_attempts" else bad["phases"][0])[key] = value
        path = write(tmp_path, bad, f"{key}.toml")
        with pytest.raises(ConfigError) as info:
            load_competition(path)
        where = key if key == "reproduce_attempts" else f"phases[0].{key}"
        assert str(info.value).startswith(f"competition file {str(path)!r}: {where} ")
        assert words in str(info.value) and "Fix:" in str(info.value)


def test_final_selections_and_uploads_queue_jobs(migrated_db_url, competition):
    store = open_store(migrated_db_url, competition)
    try:
        team = add_team(store, "P", "team@example.org")[0].id
        first = submit(store, team, encode(variant("p-1", 1.0))).submission_id
        second = submit(store, team, encode(variant("p-2", 1.1))).submission_id
        assert list_jobs(store) == []  # the example reproduces the final selections only
        mark_final(store, team, first)
        [job] = list_jobs(store)
        assert (job.submission_id, job.state, job.origin, job.private, job.attempts,
                job.phase, job.team) == (first, "queued", "final", False, 0, "public", "P")
        mark_final(store, team, first, final=False)  # not started: cancelled
        assert list_jobs(store) == []
        mark_final(store, team, first)
        mark_final(store, team, second)
        assert [j.submission_id for j in list_jobs(store)] == [first, second]
        # a job a worker took stays when its selection is unmarked
        lease = claim_job(store, b'{"worker": "w"}')
        assert lease is not None and lease.job.submission_id == first
        mark_final(store, team, first, final=False)
        assert [(j.submission_id, j.state) for j in list_jobs(store)] == [
            (first, "running"), (second, "queued")]
        assert job_counts(store) == {"public": {"queued": 1, "running": 1, "reproduced": 0,
                                                 "not reproduced": 0, "scored": 0, "failed": 0}}
        # a phase that reproduces every upload queues each at once; "none" queues nothing
        store.competition = with_phases(competition, reproduce="every")
        third = submit(store, team, encode(variant("p-3", 1.2))).submission_id
        assert [(j.submission_id, j.origin) for j in list_jobs(store, state="queued")] == [
            (second, "final"), (third, "upload")]
        mark_final(store, team, first)  # frees a place among the two final selections
        mark_final(store, team, second, final=False)
        mark_final(store, team, third)
        mark_final(store, team, third, final=False)  # queued for its upload: not cancelled
        assert [(j.submission_id, j.state, j.origin) for j in list_jobs(store)] == [
            (first, "running", "final"), (third, "queued", "upload")]
        store.competition = with_phases(competition, reproduce="none")
        fourth = submit(store, team, encode(variant("p-4", 1.3))).submission_id
        mark_final(store, team, fourth)
        assert [j.submission_id for j in list_jobs(store)] == [first, third]
    finally:
        store.engine.dispose()


# --------------------------------------------------------------------------- leases


def test_a_lease_taken_over_cannot_heartbeat_or_finish(live):
    alice = live.team("Alice")
    admin = create_admin_token(live.store)
    sid = submit_final(live, alice, "a-1")
    # organizers only: a team's token gets 404, none 401
    assert live.client.post(f"{JOBS}/claim", headers=bearer(alice)).status_code == 404
    assert live.client.get(JOBS, headers=bearer(alice)).status_code == 404
    assert live.client.post(f"{JOBS}/claim").status_code == 401

    first = claim(live, admin, "worker-1", lease_s=30)
    job_id, lease_1 = first["job"]["job_id"], first["lease"]
    assert first["job"]["submission_id"] == sid and first["job"]["attempts"] == 1
    assert first["lease_expires_at"].startswith("2026-06-01T12:00:30")
    assert claim(live, admin, "worker-2") == {"status": "empty"}  # nobody runs it twice
    assert post(live, admin, job_id, "heartbeat", {"lease": lease_1, "lease_s": 30}) \
        .status_code == 200
    live.clock.now += timedelta(seconds=29)
    assert claim(live, admin, "worker-2") == {"status": "empty"}  # the heartbeat extended it

    # worker-1 stops answering: its lease runs out, and worker-2 takes the job over
    live.clock.now += timedelta(seconds=2)
    second = claim(live, admin, "worker-2")
    assert second["job"]["job_id"] == job_id and second["job"]["attempts"] == 2
    assert second["lease"] != lease_1
    refused = post(live, admin, job_id, "heartbeat", {"lease": lease_1})
    assert refused.status_code == 409 and "held by worker-2" in refused.json()["reason"]
    late = post(live, admin, job_id, "finish", {"lease": lease_1, "report": {
        **REPORT, "verdict": "not reproduced", "log_tail": "late"}})
    assert late.status_code == 409
    view = live.get(f"{SUBMIT}/{sid}", admin).json()
    assert view["reproduction"] == "pending"  # the late finish stored nothing
    assert post(live, admin, job_id, "finish", {"lease": "x" * 32, "failure": "no"}) \
        .status_code == 409
    done = post(live, admin, job_id, "finish", {"lease": second["lease"], "report": REPORT})
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "reproduced"
    assert live.get(f"{SUBMIT}/{sid}", admin).json()["reproduction"] == "reproduced"
    # finished: the lease holds nothing any more
    again = post(live, admin, job_id, "finish", {"lease": second["lease"], "report": REPORT})
    assert again.status_code == 409 and "it is reproduced" in again.json()["reason"]
    board = live.get("/api/v1/leaderboard", phase="public").json()
    assert next(r for r in board["rows"] if r["team"] == "Alice")["reproduction"] \
        == "reproduced"
    # bad bodies and ids: 422 and 404, never a 500
    assert post(live, admin, job_id, "finish", {"lease": "l"}).status_code == 422
    assert post(live, admin, job_id, "finish", {"lease": "l", "failure": "x",
                                                "release": "y"}).status_code == 422
    assert post(live, admin, 999, "heartbeat", {"lease": "l"}).status_code == 404
    assert post(live, admin, 2**31, "heartbeat", {"lease": "l"}).status_code == 422
    assert live.client.post(f"{JOBS}/claim", headers=bearer(admin),
                            json={"lease_s": 0}).status_code == 422


def test_private_jobs_go_to_workers_with_the_seed_and_bring_private_scores(live,
                                                                            competition):
    alice = live.team("Alice")
    admin = create_admin_token(live.store)
    live.clock.now = live.clock.now.replace(year=2028, month=1, day=5)  # the hidden phase
    document = variant("a-final", 1.0)
    reply = live.post(encode(document), alice)
    sid = reply.json()["submission_id"]
    assert live.client.put(f"{SUBMIT}/{sid}/final", headers=bearer(alice)).status_code == 200
    assert claim(live, admin, "no-seed", private=False) == {"status": "empty"}
    job = claim(live, admin, "with-seed")
    assert job["job"]["private"] is True and job["job"]["phase"] == "final"
    folds = private_folds(document, 1.5, 0.5)
    done = post(live, admin, job["job"]["job_id"], "finish",
                {"lease": job["lease"], "report": private_report(folds)})
    assert done.status_code == 200, done.text
    reveal_phase(live.store, "final", close_now=True)
    row = next(r for r in live.get("/api/v1/leaderboard", phase="final").json()["rows"]
               if r["team"] == "Alice")
    expected = recompute(folds, competition.phase("final").references)
    assert row["private_score"] == expected.leaderboard_score


def test_failures_are_retried_a_bounded_number_of_times(live, capsys, migrated_db_url):
    alice = live.team("Alice")
    admin = create_admin_token(live.store)
    sid = submit_final(live, alice, "a-1")
    for attempt in (1, 2, 3):
        job = claim(live, admin, "w")
        assert job["job"]["attempts"] == attempt
        done = post(live, admin, job["job"]["job_id"], "finish",
                    {"lease": job["lease"], "failure": f"the index was down ({attempt})"})
        assert done.status_code == 200
    assert done.json()["status"] == "failed"
    assert done.json()["job"]["reason"] == "the index was down (3) (after 3 of 3 attempts)"
    assert claim(live, admin, "w") == {"status": "empty"}
    listing = live.get(JOBS, admin, state="failed").json()
    assert [j["submission_id"] for j in listing["jobs"]] == [sid]
    assert listing["counts"]["public"]["failed"] == 1

    # the organizers queue it again (admin jobs retry), and a lost worker counts as a run
    job_id = listing["jobs"][0]["job_id"]
    code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "jobs")
    assert code == 0, err
    assert "failed" in out and "the index was down (3)" in out and "Alice" in out
    # each job says its kind: this one reproduces the team's run (a scoring job says "scoring")
    assert re.search(rf"^\s+{job_id}\s+{sid}\s+reproduction\s+public\s+failed\s", out, re.M)
    assert re.search(r"^\s+job\s+sub\s+kind\s+phase\s+state", out, re.M)
    code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "jobs",
                                 "retry", str(job_id))
    assert code == 0 and f"job {job_id} (submission {sid} of team 'Alice') is queued" in out
    code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "jobs", "retry", str(job_id))
    assert code == 2 and "is queued, not failed" in err
    code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "jobs", "retry", "77")
    assert code == 2 and "no reproduction job 77" in err
    for attempt in (1, 2, 3):
        job = claim(live, admin, f"lost-{attempt}", lease_s=10)
        assert job["job"]["attempts"] == attempt
        live.clock.now += timedelta(seconds=11)
    assert claim(live, admin, "w") == {"status": "empty"}  # the third lost run was the last
    [failed] = live.get(JOBS, admin).json()["jobs"]
    assert failed["state"] == "failed" and "lost-3" in failed["reason"]
    assert "attempt 3 of 3" in failed["reason"]

    # a release (a stopped worker) does not count; a failure without retry ends the job
    run_cli(capsys, "admin", "--db", migrated_db_url, "jobs", "retry", str(job_id))
    job = claim(live, admin, "w")
    released = post(live, admin, job_id, "finish", {"lease": job["lease"],
                                                    "release": "SIGTERM"})
    assert released.json()["status"] == "queued" and released.json()["job"]["attempts"] == 0
    job = claim(live, admin, "w")
    assert job["job"]["attempts"] == 1
    done = post(live, admin, job_id, "finish", {"lease": job["lease"], "retry": False,
                                                "failure": "no checkout of team 'Alice'"})
    assert done.json()["status"] == "failed"
    assert done.json()["job"]["reason"] == "no checkout of team 'Alice'"
    code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "jobs", "--phase", "final")
    assert code == 0 and "final" in out and "Alice" not in out


# --------------------------------------------------------------------------- teams


def test_a_team_sees_its_own_jobs_and_log_tails_only(live, capsys, monkeypatch, tmp_path):
    alice, bob = live.team("Alice"), live.team("Bob")
    admin = create_admin_token(live.store)
    a1 = submit_final(live, alice, "a-1")
    a2 = live.post(encode(variant("a-2", 1.1)), alice).json()["submission_id"]
    b1 = submit_final(live, bob, "b-1")
    b2 = submit_final(live, bob, "b-2", 1.2)
    jobs = {}
    for _ in range(3):
        job = claim(live, admin, "w")
        jobs[job["job"]["submission_id"]] = job
    assert set(jobs) == {a1, b1, b2}
    post(live, admin, jobs[a1]["job"]["job_id"], "finish", {
        "lease": jobs[a1]["lease"], "note": "2 values differ",
        "report": {**REPORT, "verdict": "not reproduced", "log_tail": "alice's log\nend"}})
    post(live, admin, jobs[b1]["job"]["job_id"], "finish", {
        "lease": jobs[b1]["lease"], "report": {**REPORT, "log_tail": "bob's secret log"}})
    post(live, admin, jobs[b2]["job"]["job_id"], "finish", {
        "lease": jobs[b2]["lease"], "retry": False, "failure": "bob's checkout is missing"})

    listing = {s["submission_id"]: s for s in live.get(SUBMIT, alice).json()["submissions"]}
    assert set(listing) == {a1, a2}
    assert (listing[a1]["reproduction_status"], listing[a1]["reproduction_reason"],
            listing[a1]["log_tail"]) == ("not reproduced", "2 values differ",
                                         "alice's log\nend")
    assert listing[a2]["reproduction_status"] is None and listing[a2]["log_tail"] is None
    text = live.get(SUBMIT, alice).text
    assert "bob" not in text.lower()
    bobs = {s["submission_id"]: s for s in live.get(SUBMIT, bob).json()["submissions"]}
    assert bobs[b1]["log_tail"] == "bob's secret log"
    assert (bobs[b2]["reproduction_status"], bobs[b2]["reproduction_reason"]) == (
        "failed", "bob's checkout is missing")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    base = str(live.client.base_url).rstrip("/")
    code, out, err = run_cli(capsys, "submissions", "--server", base)
    assert code == 0, err
    lines = {int(line.split()[0]): line for line in out.splitlines()[1:]}
    assert "not reproduced" in lines[a1] and "pending" in lines[a2]
    code, out, err = run_cli(capsys, "submissions", "--server", base, "--log", str(a1))
    assert code == 0, err
    assert out.splitlines() == [f"submission {a1}: reproduction not reproduced",
                                "reason: 2 values differ", "end of the reproduction's log:",
                                "  alice's log", "  end"]
    code, out, err = run_cli(capsys, "submissions", "--server", base, "--log", str(b1))
    assert code == 3 and f"no submission {b1}" in err and "bob's" not in out + err


# --------------------------------------------------------------------------- migration


def test_an_old_database_with_data_upgrades(db_url, competition):
    from alembic import command
    from alembic.config import Config

    engine = make_engine(db_url)
    try:
        config = Config()
        migrations = MIGRATIONS_DIR
        config.set_main_option("script_location", str(migrations))
        # the data of a store of the old schema: teams, submissions, a recorded verdict, a
        # final mark (no job is queued while the phase reproduces none), made by today's store
        # and then taken down to revision 0004, the last one without jobs
        upgrade(engine)
        store = Database(engine, with_phases(competition, reproduce="none"),
                                        Clock())
        team = add_team(store, "Old", "old@example.org")[0].id
        document = variant("old-1", 1.0)
        sid = submit(store, team, encode(document)).submission_id
        record_reproduction(store, sid, json.dumps(private_report(
            private_folds(document, 1.2, 0.9))).encode())
        mark_final(store, team, sid)
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0004")
        assert "reproduction_jobs" not in sa.inspect(engine).get_table_names()
        upgrade(engine)
        with engine.connect() as conn:
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
            jobs = conn.execute(sa.text("SELECT count(*) FROM reproduction_jobs")).scalar()
        assert (version, jobs) == (HEAD_REVISION, 0)
        store.competition = competition
        [own] = own_submissions(store, team)
        assert (own.submission_id, own.final, own.reproduction) == (sid, True, "reproduced")
        assert own.reproduction_status is None and own.log_tail == ""
        # the new table works on the old data: unmark and mark again queue its job
        mark_final(store, team, sid, final=False)
        mark_final(store, team, sid)
        assert [(j.submission_id, j.state) for j in list_jobs(store)] == [(sid, "queued")]
        with pytest.raises(SubmissionRejected):
            retry_job(store, list_jobs(store)[0].job_id)  # queued: nothing to retry
        # and down again: the table goes, the data stays
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0004")
        assert "reproduction_jobs" not in sa.inspect(engine).get_table_names()
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM submissions WHERE id = :i"),
                                {"i": sid}).scalar() == 1
    finally:
        engine.dispose()


def test_admin_jobs_queue_adds_the_selections_of_teams_that_marked_none(tmp_path, competition,
                                                                       capsys):
    url = sqlite_url(tmp_path)
    store = open_store(url, competition)
    try:
        a = add_team(store, "A", "a@example.org")[0].id
        b = add_team(store, "B", "b@example.org")[0].id
        a1 = submit(store, a, encode(variant("a-1", 1.0))).submission_id
        submit(store, a, encode(variant("a-2", 1.3)))
        mark_final(store, a, a1)  # A's choice: its weaker run, queued already
        b_ids = [submit(store, b, encode(variant(f"b-{i}", scale))).submission_id
                 for i, scale in enumerate((1.0, 1.3, 1.2))]
        code, out, err = run_cli(capsys, "admin", "--db", url, "jobs", "queue", "public",
                                 "--competition", str(EXAMPLE))
        assert code == 0, err
        # B marked none: its two best public runs (1.3, 1.2) count, so they are queued
        assert f"2 job(s) queued for phase 'public': submissions {b_ids[1]}, {b_ids[2]}" in out
        assert sorted(j.submission_id for j in list_jobs(store)) == sorted([a1, *b_ids[1:]])
        assert {j.origin for j in list_jobs(store) if j.submission_id != a1} == {"organizer"}
        code, out, err = run_cli(capsys, "admin", "--db", url, "jobs", "queue", "public",
                                 "--competition", str(EXAMPLE))
        assert code == 0 and "has a job already" in out
        code, out, err = run_cli(capsys, "admin", "--db", url, "jobs", "queue", "nope",
                                 "--competition", str(EXAMPLE))
        assert code == 2 and "no phase 'nope'" in err
    finally:
        store.engine.dispose()
