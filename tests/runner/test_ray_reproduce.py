"""Reproductions as tasks of a local Ray with 2 CPUs: the worker's jobs (``python -m evaluation
worker --executor ray``, against a live leaderboard on 127.0.0.1) and a batch of
``reproduce --many --executor ray`` (the batch of tests/reproduce/test_many.py, with the same
checks).

Their place is beside tests/runner/test_ray.py, whose Ray tests come last in it: the tests of
both modules run one after the other and share one Ray (``local_ray``, kept while the next
test needs it), where each group of Ray tests apart would start one (seconds of CPU each).
"""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from evaluation.reproduce import LeaderboardClient, Worker
from evaluation.server.api import create_app
from evaluation.server.db import add_team, create_admin_token, list_teams
from evaluation.server.store import own_submissions, submit
from tests.reproduce._batches import batch_checkouts, check_batch, run_batch
from tests.reproduce._fakes import template_upload
from tests.reproduce._ray_tasks import in_a_ray_task
from tests.reproduce._workers import checkout_of, jobs, settings
from tests.server._helpers import encode, migrated_sqlite_url, variant, with_phases
from tests.server._live_server import live_server

pytestmark = pytest.mark.slow  # a local Ray (starting it takes about 10 s)


@pytest.fixture(scope="module")
def _template_run() -> dict:
    """The template model's tiny run, evaluated here once, as the leaderboard stores it."""
    return template_upload()


@pytest.fixture
def upload(_template_run) -> dict:
    """A copy of the template's run for one test (as tests/reproduce/conftest.py gives it)."""
    return copy.deepcopy(_template_run)


def test_jobs_as_ray_tasks(competition, tmp_path, local_ray):
    app = create_app(with_phases(competition, reproduce="every"), migrated_sqlite_url(tmp_path))
    store = app.state.store
    admin = create_admin_token(store)
    ids = []
    for t in range(2):
        team = add_team(store, f"team-{t}", "t@example.org")[0].id
        checkout_of(tmp_path, f"team-{t}")
        ids += [submit(store, team, encode(variant(f"t{t}-{i}", 1 + i / 10))).submission_id
                for i in range(3)]
    with live_server(app) as url:
        worker = Worker(LeaderboardClient(url, admin),
                        settings(tmp_path, "ray", executor="ray", once=True),
                        runner=in_a_ray_task, log=lambda line: None)
        assert worker.run() == {"reproduced": 6}
        finished = jobs(url, admin)
    assert {sid: (j["state"], j["attempts"]) for sid, j in finished.items()} == {
        sid: ("reproduced", 1) for sid in ids}
    tails = {s.log_tail for s in own_submissions(store, list_teams(store)[-1].id)}
    assert len(tails) == 3 and not any(f"process {os.getpid()}" in t for t in tails)


def test_many_as_ray_tasks(upload, capsys, monkeypatch, tmp_path, local_ray):
    checkouts = batch_checkouts(tmp_path)
    monkeypatch.chdir(checkouts)
    status, report, sent, output = run_batch(checkouts, upload, capsys, "--executor", "ray")
    check_batch(checkouts, upload, status, report, sent, output)
    assert report["executor"] == "ray"
    assert local_ray.is_initialized()  # the command used the test's Ray, did not start one
