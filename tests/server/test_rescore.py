"""Re-scoring a phase after a harness fix (``admin rescore``): the scored submissions are scored
again from their kept predictions, the new numbers wait beside the old ones until the
organizers apply them, the board then says which harness version scored each row and its CSV
keeps the old numbers until they are dropped; a second rescore while one is open is refused
and changes nothing; a team's token sees none of it.

Live servers on SQLite and PostgreSQL; the jobs are run as a worker runs them (the real
scoring job on the tiny synthetic data); the "fix" is a scorer whose numbers differ for one
team's upload.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

import numpy as np  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from evaluation._version import __version__  # noqa: E402
from evaluation.cli import main  # noqa: E402
from evaluation.contract import (  # noqa: E402
    PREDICTIONS_MEDIA_TYPE,
    encode_predictions,
    read_predictions,
)
from evaluation.reproduce._scoring_job import score_upload  # noqa: E402
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import (  # noqa: E402
    Caller,
    ReproductionJobRow,
    add_team,
    create_admin_token,
)
from evaluation.server.store import claim_job, finish_job  # noqa: E402
from evaluation.server.store import payload as stored_payload  # noqa: E402
from evaluation.server.store import predictions as stored_predictions  # noqa: E402
from tests.server._helpers import run_cli  # noqa: E402
from tests.server._live_server import http_client, live_server  # noqa: E402

PHASE = "open"
RESCORE = f"/api/v1/phases/{PHASE}/rescore"
OLD = "0.0.1-before-the-fix"
ADMIN = Caller(team_id=None, admin=True)


def _shifted(claim: dict, stream: bytes) -> bytes:
    """The lists of ``stream`` each given to the next user: what a scorer that pairs lists and
    users wrongly scores (the bug the fix removes, here run the other way round)."""
    lists = read_predictions(stream, max_bytes=len(stream), max_inflated=1 << 30)
    folds = [(f.users, np.roll(np.frombuffer(f.items, "<i4").reshape(f.n_users, lists.k),
                               1, axis=0).astype("<i4").tobytes()) for f in lists.folds]
    return encode_predictions(claim, folds=folds, k=lists.k, run_hash=lists.run_hash,
                              harness_version=lists.harness_version)


def _run_jobs(store, kind: str, version: str, changed: frozenset[int] = frozenset()) -> int:
    """Run every claimable job of ``kind`` as a worker of harness ``version`` does; the
    submissions in ``changed`` get other numbers (what the fixed scorer finds). Returns the
    jobs run."""
    ran = 0
    while (lease := claim_job(store, json.dumps({"worker": "w", "kinds": [kind]}).encode())
           ) is not None:
        sid = lease.job.submission_id
        claim = json.loads(stored_payload(store, sid, ADMIN))
        stream = stored_predictions(store, sid, ADMIN)
        scored = score_upload(claim, _shifted(claim, stream) if sid in changed else stream)
        finish_job(store, lease.job.job_id, json.dumps({
            "lease": lease.lease, "scored": scored, "harness_version": version}).encode())
        ran += 1
    return ran


#: What a row of the board says of a submission's numbers (its statistics are computed in the
#: background: not compared).
NUMBERS = ("submission_id", "rank", "leaderboard_score", "phase1_score", "interval", "tests",
           "harness_version", "previous_harness_version", "previous_score")


def _post_alone(url: str, path: str, headers: dict):
    """``POST path`` on a connection of its own (an organizer of several at once)."""
    with http_client(url, timeout=60) as own:
        return own.post(path, headers=headers)


def _board(http) -> dict[str, dict]:
    # the board after every write before it: the rescore is applied by an admin command
    rows = http.get("/api/v1/leaderboard", params={"phase": PHASE},
                    headers={"Cache-Control": "no-cache"}).json()["rows"]
    return {r["team"]: {k: r[k] for k in NUMBERS} for r in rows if not r["is_baseline"]}


def _csv(http) -> dict[str, dict]:
    text = http.get("/leaderboard.csv", params={"phase": PHASE},
                    headers={"Cache-Control": "no-cache"}).text
    return {r["team"]: r for r in csv.DictReader(io.StringIO(text)) if r["baseline"] == "no"}


def test_a_rescore_shows_what_changes_and_the_board_changes_only_when_applied(
        migrated_db_url, tiny_board, tmp_path, capsys):
    competition_file, run = tiny_board
    app = create_app(load_competition(competition_file), migrated_db_url)
    store = app.state.store
    tokens = {name: add_team(store, name, f"{name}@example.org")[1]
              for name in ("alpha", "beta")}
    admin = create_admin_token(store)
    as_admin = {"Authorization": f"Bearer {admin}"}
    cli = ("admin", "--db", migrated_db_url, "rescore", "--phase", PHASE, "--competition",
           str(competition_file))
    with live_server(app) as url, http_client(url, timeout=60) as http:
        ids = {}
        for name, token in tokens.items():
            reply = http.post("/api/v1/submissions", content=run.predictions, headers={
                "Authorization": f"Bearer {token}", "Content-Type": PREDICTIONS_MEDIA_TYPE,
                "Idempotency-Key": run.claim["run_id"]})
            assert reply.status_code == 201, reply.text
            ids[name] = reply.json()["submission_id"]
        # nothing scored yet: nothing to rescore
        refused = http.post(RESCORE, headers=as_admin)
        assert refused.status_code == 409 and "nothing to rescore" in refused.json()["reason"]
        assert _run_jobs(store, "score", OLD) == 2
        before = _board(http)
        assert before["alpha"]["rank"] == 1 and before["beta"]["rank"] == 2  # alpha first
        assert {r["harness_version"] for r in before.values()} == {OLD}
        # a reproduced submission: its reproduction is redone once the rescore is applied
        with store.engine.begin() as conn:
            conn.execute(sa.insert(ReproductionJobRow).values(
                submission_id=ids["alpha"], kind="reproduce", phase=PHASE, private=False,
                origin="final", state="reproduced", attempts=1, queued_at=store.now()))

        # a team's token: as for a route it may not know, and nothing queued
        for token in tokens.values():
            for method, path in (("POST", RESCORE), ("GET", RESCORE),
                                 ("POST", RESCORE + "/apply"), ("POST", RESCORE + "/drop-old"),
                                 ("POST", RESCORE + "/cancel")):
                reply = http.request(method, path, headers={"Authorization": f"Bearer {token}"})
                assert reply.status_code == 404, (method, path, reply.text)
        assert http.post(RESCORE).status_code == 401
        unknown = http.post("/api/v1/phases/nope/rescore", headers=as_admin)
        assert unknown.status_code == 404 and "nope" in unknown.json()["reason"]

        # two organizers at once: one rescore starts, the other is refused
        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(lambda _: _post_alone(url, RESCORE, as_admin), range(2)))
        assert sorted(r.status_code for r in replies) == [201, 409], [r.text for r in replies]
        table = next(r.json() for r in replies if r.status_code == 201)
        assert table["state"] == "running" and table["harness_version"] == __version__
        assert table["counts"] == {"queued": 2}
        # a second rescore while it runs: refused, nothing queued again
        again = http.post(RESCORE, headers=as_admin)
        assert again.status_code == 409 and "is open" in again.json()["reason"]
        code, out, err = run_cli(capsys, *cli)
        assert code == 2 and "is open" in err
        jobs = http.get("/api/v1/jobs", headers=as_admin).json()["jobs"]
        assert sorted(j["state"] for j in jobs if j["kind"] == "rescore") == ["queued"] * 2
        early = http.post(RESCORE + "/apply", headers=as_admin)
        assert early.status_code == 409 and "2 of 2 jobs" in early.json()["reason"]

        # a worker of another harness version: its numbers are not kept
        lease = claim_job(store, json.dumps({"worker": "old", "kinds": ["rescore"]}).encode())
        sid = lease.job.submission_id
        scored = score_upload(json.loads(stored_payload(store, sid, ADMIN)),
                              stored_predictions(store, sid, ADMIN))
        stale = finish_job(store, lease.job.job_id, json.dumps({
            "lease": lease.lease, "scored": scored, "harness_version": OLD}).encode())
        assert stale.state == "queued" and __version__ in stale.reason

        # the fixed harness scores alpha's upload lower: beta would overtake alpha
        assert _run_jobs(store, "rescore", __version__,
                         changed=frozenset({ids["alpha"]})) == 2
        assert _board(http) == before  # nothing on the board changed yet
        shown = http.get(RESCORE, headers=as_admin).json()
        assert shown["state"] == "ready" and shown["changed"] == [ids["alpha"], ids["beta"]]
        lines = {line["team"]: line for line in shown["lines"]}
        assert lines["beta"]["new_score"] == lines["beta"]["old_score"]  # unchanged
        assert lines["alpha"]["new_score"] < lines["alpha"]["old_score"]
        assert (lines["alpha"]["old_rank"], lines["alpha"]["new_rank"]) == (1, 2)
        assert (lines["beta"]["old_rank"], lines["beta"]["new_rank"]) == (2, 1)
        # the tiers: equal lists are one tier now; alpha's worse lists would drop it a tier
        assert (lines["alpha"]["old_tier"], lines["beta"]["old_tier"]) == (1, 1)
        assert (lines["beta"]["new_tier"], lines["alpha"]["new_tier"]) == (1, 2)
        assert lines["alpha"]["old_harness_version"] == OLD
        assert lines["alpha"]["new_harness_version"] == __version__
        # the command shows the same table, and changes nothing without --yes
        code, out, err = run_cli(capsys, *cli, "--show")
        assert code == 0, err
        assert "nothing on the board changed" in out and "2->1 *" in out and "1->2 *" in out
        assert "1->1" in out  # beta's tier, unchanged
        assert _board(http) == before

        code, out, err = run_cli(capsys, *cli, "--yes")
        assert code == 0, err
        assert "applied" in out and "1 reproduction(s) queued again" in out
        after = _board(http)
        assert after["beta"]["rank"] == 1 and after["alpha"]["rank"] == 2
        assert after["alpha"]["leaderboard_score"] == lines["alpha"]["new_score"]
        assert after["alpha"]["harness_version"] == __version__
        assert after["alpha"]["previous_harness_version"] == OLD
        assert after["alpha"]["previous_score"] == before["alpha"]["leaderboard_score"]
        page = http.get("/", params={"phase": PHASE}).text
        assert f"harness {__version__}" in page and f"under {OLD}" in page
        rows = _csv(http)
        assert rows["alpha"]["harness_version"] == __version__
        assert rows["alpha"]["previous_harness_version"] == OLD
        assert float(rows["alpha"]["previous_score"]) == before["alpha"]["leaderboard_score"]
        assert float(rows["alpha"]["score"]) == lines["alpha"]["new_score"]
        redone = [j for j in http.get("/api/v1/jobs", headers=as_admin).json()["jobs"]
                  if j["kind"] == "reproduce"]
        assert [(j["submission_id"], j["state"], j["origin"]) for j in redone] == [
            (ids["alpha"], "queued", "rescore")]
        # applied: a new rescore may start; nothing to apply twice
        assert http.post(RESCORE + "/apply", headers=as_admin).status_code == 404

        dropped = http.post(RESCORE + "/drop-old", headers=as_admin)
        assert dropped.status_code == 200 and dropped.json()["submissions"] == 2
        rows = _csv(http)
        assert rows["alpha"]["previous_score"] == ""
        assert rows["alpha"]["previous_harness_version"] == ""
        assert rows["alpha"]["harness_version"] == __version__
        assert http.post(RESCORE + "/drop-old", headers=as_admin).status_code == 409

        # the unshifted lists again, scored by a real worker: the numbers from before the
        # faulty rescore come back, to the last bit, and the ranks with them
        assert http.post(RESCORE, headers=as_admin).status_code == 201
        (tmp_path / "admin.token").write_text(admin)
        status = main(["worker", "--server", url, "--admin-token-file",
                       str(tmp_path / "admin.token"), "--checkouts", str(tmp_path), "--once",
                       "--unsafe-no-sandbox", "--env", str(Path(sys.executable).parents[1]),
                       "--log-dir", str(tmp_path / "logs")])
        out, err = capsys.readouterr()
        assert status == 0, out + err
        again = http.get(RESCORE, headers=as_admin).json()
        assert again["state"] == "ready" and again["changed"] == [ids["alpha"], ids["beta"]]
        lines = {line["team"]: line for line in again["lines"]}
        for team in ("alpha", "beta"):
            assert lines[team]["new_score"] == before[team]["leaderboard_score"]
            assert lines[team]["new_phase1_score"] == before[team]["phase1_score"]
            assert lines[team]["new_harness_version"] == __version__
            assert lines[team]["new_rank"] == before[team]["rank"]
        # a rescore given up: its numbers never reach the board
        code, out, err = run_cli(capsys, *cli, "--cancel")
        assert code == 0 and "cancelled" in out, err
        assert _board(http) == _board(http) and _board(http)["alpha"] == {
            **after["alpha"], "previous_harness_version": None, "previous_score": None}
        assert http.get(RESCORE, headers=as_admin).json()["state"] == "cancelled"
    store.engine.dispose()
