"""Quotas that are fair: a submission that failed for the platform's reason (its job failed on
infrastructure, its worker lost the lease) gives its place in the daily limit back; one refused
for the team's own reason counts as the competition's ``count_refused`` says; the team sees
why in its listing (API and ``python -m evaluation submissions``), and no other team does.

Live servers on SQLite and PostgreSQL; the jobs are claimed and finished through the workers'
API, as a worker does.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.errors import ConfigError
from evaluation.server.api import create_app
from evaluation.server.core import load_competition
from evaluation.server.db import create_admin_token
from tests.server._api import SUBMIT, Api, assert_rejected, serving
from tests.server._helpers import (
    EXAMPLE,
    Clock,
    claims_competition_file,
    encode,
    run_cli,
    variant,
)

LIMIT = 2


def _competition(competition, count_refused: bool = True):
    """The example competition whose public phase reproduces every upload, ``LIMIT`` a day,
    one attempt per job."""
    phases = tuple(replace(p, daily_limit=LIMIT, reproduce="every") if p.name == "public"
                   else p for p in competition.phases)
    return replace(competition, phases=phases, reproduce_attempts=1,
                   count_refused=count_refused)


@pytest.fixture(params=[True, False], ids=["count_refused", "refused_free"])
def board(request, migrated_db_url, competition):
    clock = Clock()
    app = create_app(_competition(competition, request.param), migrated_db_url, clock=clock)
    with serving(app, True) as client:
        api = Api(client, app.state.store, clock, True)
        yield api, request.param, create_admin_token(api.store)
    app.state.store.engine.dispose()


def _claim(api: Api, admin: str, lease_s: float = 60.0) -> dict:
    reply = api.client.post("/api/v1/jobs/claim", headers={"Authorization": f"Bearer {admin}"},
                            content=json.dumps({"worker": "w", "lease_s": lease_s,
                                                "kinds": ["reproduce"]}))
    assert reply.status_code == 200 and reply.json()["status"] == "claimed", reply.text
    return reply.json()


def _finish(api: Api, admin: str, claim: dict, **body) -> dict:
    reply = api.client.post(f"/api/v1/jobs/{claim['job']['job_id']}/finish",
                            headers={"Authorization": f"Bearer {admin}"},
                            content=json.dumps({"lease": claim["lease"], **body}))
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_platform_failures_give_the_place_back_and_the_team_sees_why(board, capsys,
                                                                      monkeypatch, tmp_path):
    api, count_refused, admin = board
    alice, bob = api.team("Alice"), api.team("Bob")
    runs = iter(range(100))

    def upload(token: str):
        return api.post(encode(variant(f"run-{next(runs)}", 1.0)), token)

    ids = [upload(alice).json()["submission_id"] for _ in range(LIMIT)]
    assert_rejected(upload(alice), 429)
    # an infrastructure failure, out of attempts: the place is given back
    done = _finish(api, admin, _claim(api, admin), failure="the sandbox could not start",
                   retry=True)
    assert done["status"] == "failed" and done["job"]["cause"] == "platform"
    third = upload(alice)
    assert third.status_code == 201, third.text
    assert_rejected(upload(alice), 429)
    # the team's own reason: counted as the competition says
    refused = _finish(api, admin, _claim(api, admin), failure="the checkout has no model",
                      retry=False)
    assert refused["job"]["cause"] == "team"
    after_refusal = upload(alice)
    if count_refused:
        assert_rejected(after_refusal, 429)
    else:
        assert after_refusal.status_code == 201, after_refusal.text
    # a worker that stopped answering: its lease ran out on the last attempt
    _claim(api, admin, lease_s=1.0)
    api.clock.now += timedelta(seconds=5)
    reply = api.client.post("/api/v1/jobs/claim", headers={"Authorization": f"Bearer {admin}"},
                            content=json.dumps({"worker": "w2", "kinds": ["reproduce"]}))
    assert reply.status_code == 200, reply.text
    jobs = api.client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {admin}"},
                          params={"state": "failed"}).json()["jobs"]
    lost = [j for j in jobs if "stopped answering" in (j["reason"] or "")]
    assert len(lost) == 1 and lost[0]["cause"] == "platform"
    assert upload(alice).status_code == 201

    listing = {s["submission_id"]: s for s in api.get(SUBMIT, alice).json()["submissions"]}
    first, second = listing[ids[0]], listing[ids[1]]
    assert first["failure_cause"] == "platform" and first["counted"] is False
    assert "sandbox could not start" in first["failure"]
    assert second["failure_cause"] == "team" and second["counted"] is count_refused
    assert listing[lost[0]["submission_id"]]["failure_cause"] == "platform"
    assert all(s["failure_cause"] is None and s["counted"] for s in listing.values()
               if s["submission_id"] not in (ids[0], ids[1], lost[0]["submission_id"]))
    # another team sees none of it: its own listing, and 404 for Alice's submission
    assert upload(bob).status_code == 201
    bobs = api.get(SUBMIT, bob).json()["submissions"]
    assert len(bobs) == 1 and bobs[0]["failure"] is None
    assert api.get(f"{SUBMIT}/{ids[0]}", bob).status_code == 404

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    monkeypatch.delenv("UPLOAD_URL", raising=False)
    code, out, err = run_cli(capsys, "submissions", "--server",
                             str(api.client.base_url).rstrip("/"))
    assert code == 0, err
    assert "failed for the platform's reason (not counted against your daily limit): the " \
           "sandbox could not start" in out
    counted = "counts against" if count_refused else "not counted against"
    assert f"failed for the upload's own reason ({counted} your daily limit)" in out


def test_count_refused_is_true_or_false(tmp_path):
    text = claims_competition_file(tmp_path).read_text()
    good = tmp_path / "good.toml"
    good.write_text("count_refused = false\n" + text)
    assert load_competition(good).count_refused is False
    assert load_competition(EXAMPLE).count_refused is True  # the default
    bad = tmp_path / "bad.toml"
    bad.write_text('count_refused = "no"\n' + text)
    with pytest.raises(ConfigError, match="count_refused") as info:
        load_competition(bad)
    assert "true or false" in str(info.value) and 'got "no"' in str(info.value)
