"""A worker hands a reproduction the competition's declared protocols from its claim, and the
server stores the results the report carries: a protocol the model could not run included."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import sqlalchemy as sa

from evaluation.reproduce import (
    BatchSettings,
    LeaderboardClient,
    RowResult,
    Worker,
    WorkerSettings,
)
from evaluation.server.api import create_app
from evaluation.server.core import RobustnessProtocol
from evaluation.server.db import RobustnessResultRow, add_team, create_admin_token
from evaluation.server.store import mark_final, submit
from tests.server._helpers import encode, variant
from tests.server._live_server import live_server

PROTOCOLS = (RobustnessProtocol(name="seed-7", kind="fold_seed", seed=7),
             RobustnessProtocol(name="cut", kind="global_time",
                                cut=datetime(2018, 1, 1, tzinfo=timezone.utc)))


def test_the_claims_protocols_reach_the_run_and_its_results_are_stored(db_url, competition,
                                                                       tmp_path):
    app = create_app(replace(competition, robustness=PROTOCOLS), db_url)
    store = app.state.store
    admin = create_admin_token(store)
    team = add_team(store, "Alice", "a@example.org")[0].id
    sid = submit(store, team, encode(variant("a-1"))).submission_id
    mark_final(store, team, sid)
    (tmp_path / "Alice" / "submission").mkdir(parents=True)
    (tmp_path / "Alice" / "submission" / "MyModel.py").write_text("# the model\n")
    seen = []

    def run(row, payload, batch, seed):
        seen.append(row.protocols)
        report = {"verdict": "reproduced", "table": [], "fingerprint_matches": True,
                  "alternatives": [{"protocol": p["name"], "status": "failed",
                                    "reason": f"the model raised under {p['name']}",
                                    "cost": {"seconds": 2.5}} for p in row.protocols]}
        return RowResult(submission=row.submission, checkout=str(row.checkout),
                         verdict="reproduced"), report

    settings = WorkerSettings(checkouts=tmp_path, batch=BatchSettings(
        log_dir=tmp_path / "logs", env_cache=tmp_path / "envs"), poll_s=0.05, lease_s=30.0,
        once=True, name="w")
    with live_server(app) as url:
        counts = Worker(LeaderboardClient(url, admin), settings, runner=run,
                        log=lambda line: None).run()
    assert counts == {"reproduced": 1}
    assert seen == [tuple(p.as_json() for p in PROTOCOLS)]
    with store.engine.begin() as conn:
        stored = conn.execute(sa.select(
            RobustnessResultRow.submission_id, RobustnessResultRow.protocol,
            RobustnessResultRow.status, RobustnessResultRow.reason, RobustnessResultRow.cost)
            .order_by(RobustnessResultRow.id)).all()
    assert [(s, p, st, r) for s, p, st, r, _ in stored] == [
        (sid, "seed-7", "failed", "the model raised under seed-7"),
        (sid, "cut", "failed", "the model raised under cut")]
    assert stored[0].cost["seconds"] == 2.5 and stored[0].cost["peak_rss_mib"] is None
