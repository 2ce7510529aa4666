"""``python -m evaluation worker`` (evaluation.reproduce._worker) against a live leaderboard on
127.0.0.1 (SQLite and PostgreSQL): 30 queued jobs drained by two workers of 3 jobs at once,
each run exactly once; a worker killed mid-job (SIGKILL) whose job returns when its lease runs
out and is finished by another; a worker stopped by SIGTERM that hands its job back; a missing
checkout; and a real sandboxed reproduction of the template model through the worker (its jobs
as Ray tasks: tests/runner/test_ray_reproduce.py).

The claim, lease, heartbeat and finish go through the real API in every test; only the drain
and kill tests replace the sandboxed run of a job by a quick (or never-ending) stand-in.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from evaluation.cli import main  # noqa: E402
from evaluation.contract import _http  # noqa: E402
from evaluation.errors import ConfigError  # noqa: E402
from evaluation.reproduce import (  # noqa: E402
    LeaderboardClient,
    RowResult,
    Worker,
    find_checkout,
    sandbox_problem,
)
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import add_team, create_admin_token, new_team_token  # noqa: E402
from evaluation.server.store import mark_final, submit  # noqa: E402
from tests.reproduce._fakes import REPO, make_checkout, template_model_with  # noqa: E402
from tests.reproduce._ray_tasks import REPORT  # noqa: E402
from tests.reproduce._workers import SUBMIT, checkout_of, jobs, settings  # noqa: E402
from tests.server._helpers import encode, migrated_sqlite_url, variant, with_phases  # noqa: E402
from tests.server._live_server import live_server  # noqa: E402

PROBLEM = sandbox_problem()


# --------------------------------------------------------------------------- 30 jobs


def test_two_workers_drain_30_jobs_each_run_exactly_once(migrated_db_url, competition, tmp_path):
    app = create_app(with_phases(competition, reproduce="every"), migrated_db_url)
    store = app.state.store
    admin = create_admin_token(store)
    ids = []
    # 6 teams of 5 uploads, a job each: five times the 6 that the two workers' 3 slots each
    # hold at once, so the workers keep claiming against each other until the queue is empty
    for t in range(6):
        team = add_team(store, f"team-{t}", "t@example.org")[0].id
        checkout_of(tmp_path, f"team-{t}")
        for i in range(5):
            ids.append(submit(store, team, encode(variant(f"t{t}-{i}", 1 + i / 10)))
                       .submission_id)
    calls: list[tuple[str, int]] = []
    lock = threading.Lock()

    def quick(name: str):
        def run(row, payload, batch, seed):
            assert payload["run_id"] and seed is None
            with lock:
                calls.append((name, row.submission))
            time.sleep(random.uniform(0, 0.02))
            tail = f"run of {row.submission} by {name}; token {admin}"  # scrubbed on the way
            return (RowResult(submission=row.submission, checkout=str(row.checkout),
                              verdict="reproduced"), {**REPORT, "log_tail": tail})
        return run

    with live_server(app) as url:
        workers = [Worker(LeaderboardClient(url, admin),
                          settings(tmp_path, name, jobs=3, once=True), runner=quick(name),
                          log=lambda line: None) for name in ("w1", "w2")]
        threads = [threading.Thread(target=w.run) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        finished = jobs(url, admin)
        team_view = httpx.get(url + SUBMIT, headers={
            "Authorization": f"Bearer {new_team_token(store, 'team-0')[1]}"}).json()
    runs = sorted(sid for _, sid in calls)
    assert runs == sorted(ids)  # each job run exactly once
    assert {sid: (j["state"], j["attempts"]) for sid, j in finished.items()} == {
        sid: ("reproduced", 1) for sid in ids}
    by_worker = {name: sum(n == name for n, _ in calls) for name in ("w1", "w2")}
    assert all(by_worker.values()), by_worker  # both took part
    assert [w.counts for w in workers] == [{"reproduced": by_worker["w1"]},
                                           {"reproduced": by_worker["w2"]}]
    assert {finished[sid]["worker"] for _, sid in calls if _ == "w1"} == {"w1"}
    tails = [s["log_tail"] for s in team_view["submissions"]]
    assert len(tails) == 5 and all(t.startswith("run of ") for t in tails)
    assert not any(admin in t for t in tails) and all("REDACTED" in t for t in tails)


# --------------------------------------------------------------------------- dead workers


def _slow_worker(url: str, token_file: Path, checkouts: Path, name: str, lease_s: float
                 ) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.reproduce._slow_worker", url,
                             str(token_file), str(checkouts), name, str(lease_s)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)


def _running(process: subprocess.Popen) -> str:
    line = process.stdout.readline()  # the job's run has started
    assert line.startswith("running "), line
    return line


def _final_job(app, tmp_path: Path) -> tuple[int, str, Path]:
    """Team Alice's final selection (its job queued), her checkout, an admin token file."""
    store = app.state.store
    team = add_team(store, "Alice", "a@example.org")[0].id
    sid = submit(store, team, encode(variant("a-1"))).submission_id
    mark_final(store, team, sid)
    checkout_of(tmp_path / "checkouts", "Alice")
    admin = create_admin_token(store)
    (tmp_path / "admin.token").write_text(admin + "\n")
    return sid, admin, tmp_path / "admin.token"


def test_a_killed_workers_job_returns_after_its_lease(migrated_db_url, competition, tmp_path):
    # the real clock: the lease runs out for real
    clock_app = create_app(competition, migrated_db_url)
    sid, admin, token_file = _final_job(clock_app, tmp_path)
    with live_server(clock_app) as url:
        doomed = _slow_worker(url, token_file, tmp_path / "checkouts", "doomed", 2.0)
        try:
            assert _running(doomed) == f"running {sid}\n"
            job = jobs(url, admin)[sid]
            assert (job["state"], job["worker"], job["attempts"]) == ("running", "doomed", 1)
            time.sleep(2.5)  # its heartbeats keep the lease past its first 2 s
            assert jobs(url, admin)[sid]["state"] == "running"
        finally:
            doomed.kill()  # SIGKILL: no release, no more heartbeats
            doomed.wait(10)
        ran = []

        def run(row, payload, batch, seed):
            ran.append(row.submission)
            return (RowResult(submission=row.submission, checkout=str(row.checkout),
                              verdict="reproduced"), {**REPORT, "log_tail": "second try"})

        rescuer = Worker(LeaderboardClient(url, admin),
                         settings(tmp_path / "checkouts", "rescuer", poll_s=0.2),
                         runner=run, log=lambda line: None)
        thread = threading.Thread(target=rescuer.run)
        started = time.monotonic()
        thread.start()
        try:
            while jobs(url, admin)[sid]["state"] == "running":
                assert time.monotonic() - started < 30, "the lease never ran out"
                time.sleep(0.1)
        finally:
            rescuer.stop()
            thread.join(30)
        job = jobs(url, admin)[sid]
    assert ran == [sid]
    assert (job["state"], job["attempts"], job["worker"]) == ("reproduced", 2, "rescuer")
    assert rescuer.counts == {"reproduced": 1}


def test_sigterm_hands_the_job_back(competition, tmp_path):
    app = create_app(competition, migrated_sqlite_url(tmp_path))
    sid, admin, token_file = _final_job(app, tmp_path)
    with live_server(app) as url:
        worker = _slow_worker(url, token_file, tmp_path / "checkouts", "polite", 60.0)
        try:
            _running(worker)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(20) == 0
            assert worker.stdout.read() == "stopped\n"
        finally:
            worker.kill()
        job = jobs(url, admin)[sid]
    # back in the queue at once, without waiting for the 60 s lease; the run is not counted
    assert (job["state"], job["attempts"]) == ("queued", 0)
    assert "released by its worker (the worker stopped)" in job["reason"]


# --------------------------------------------------------------------------- checkouts


def test_where_a_submissions_code_comes_from(tmp_path, competition):
    root = tmp_path / "checkouts"
    team = checkout_of(root, "Team A")
    own = checkout_of(root / "Team A", "17")
    assert find_checkout(root, "Team A", 17) == own.resolve()  # one for the submission
    assert find_checkout(root, "Team A", 18) == team.resolve()  # else the team's
    for name, words in [("Team B", "no checkout of team 'Team B' for submission 3: the "
                                   "organizers' checkouts folder has neither Team B/3/ nor "
                                   "Team B/"),
                        ("..", "cannot be a folder"), ("a/../Team A", "cannot be a folder")]:
        with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
            find_checkout(root, name, 3)
    (root / "Broken").mkdir()
    with pytest.raises(ConfigError) as info:
        find_checkout(root, "Broken", 3)
    assert "no submission/MyModel.py" in str(info.value) and str(root) not in str(info.value)

    # through the worker: the job fails at once with the reason, it is not retried
    app = create_app(competition, migrated_sqlite_url(tmp_path))
    store = app.state.store
    nobody = add_team(store, "Nobody", "n@example.org")[0].id
    sid = submit(store, nobody, encode(variant("n-1"))).submission_id
    mark_final(store, nobody, sid)
    admin = create_admin_token(store)
    with live_server(app) as url:
        worker = Worker(LeaderboardClient(url, admin), settings(root, "w", once=True),
                        runner=lambda *args: pytest.fail("nothing runs"),
                        log=lambda line: None)
        assert worker.run() == {"failed": 1}
        job = jobs(url, admin)[sid]
    assert (job["state"], job["attempts"]) == ("failed", 1)
    assert job["reason"] == ("no checkout of team 'Nobody' for submission "
                             f"{sid}: the organizers' checkouts folder has neither "
                             f"Nobody/{sid}/ nor Nobody/")


#: Names on both sides of the team-name rule: what a team may be called is exactly what a
#: worker can use as the team's folder of checkouts.
TEAM_NAMES = ["Team A", "東京チーム", "Équipe ñ 🚀", "فریق\u200cما", "a.b", "Team.", "x" * 80,
              "🚀" * 63, "<b>&amp;", "..", ".", ".hidden", "a/b", "a/../Team A", "a\\b",
              "tab\tname", "nul\0name", " padded", "", "x" * 81, "🚀" * 64]


def test_a_team_name_is_a_name_the_worker_can_use_as_a_folder(tmp_path, competition):
    store = create_app(competition, migrated_sqlite_url(tmp_path)).state.store
    accepted = []
    for i, name in enumerate(TEAM_NAMES):
        try:
            add_team(store, name, f"{i}@example.org")
        except ConfigError as exc:
            assert "a team name" in str(exc) or "team name" in str(exc)
            refused_by_server = True
        else:
            refused_by_server = False
            accepted.append(name)
        root = tmp_path / f"checkouts-{i}"
        root.mkdir()
        if refused_by_server:
            with pytest.raises(ConfigError, match="cannot be a folder of the checkouts folder"):
                find_checkout(root, name, 1)
        else:  # a real folder of that name, found as the team's checkout
            folder = checkout_of(root, name)
            assert find_checkout(root, name, 1) == folder.resolve()
            assert [p.name for p in root.iterdir()] == [name]
    assert accepted == TEAM_NAMES[:9]


def test_command_line_argument_errors(tmp_path, capsys):
    token = tmp_path / "admin.token"
    token.write_text("organizer-" + "x" * 43)
    base = ["worker", "--server", "http://127.0.0.1:9", "--admin-token-file", str(token),
            "--checkouts", str(tmp_path)]
    for argv, message in [
            (["--jobs", "0"], "--jobs 0: give at least 1"),
            (["--executor", "ray", "--jobs", "2"], "--jobs goes with --executor local"),
            (["--poll", "0"], "--poll 0.0: give a number of seconds"),
            (["--lease", "0.5"], "--lease 0.5: give a number of seconds from 1 to 3600"),
            (["--timeout", "-1"], "--timeout -1.0"),
            (["--checkouts", str(tmp_path / "none")], "no such folder"),
            (["--private-seed-file", str(tmp_path / "none.seed")], "cannot be read"),
            (["--name", "w\u00e9\n"], "1 to 128 printable ASCII characters")]:
        assert main([*base, *argv]) == 2, message
        assert message in capsys.readouterr().err


def test_a_token_the_queue_refuses_stops_the_worker(competition, tmp_path, capsys,
                                                    monkeypatch):
    app = create_app(competition, migrated_sqlite_url(tmp_path))
    team_token = add_team(app.state.store, "Alice", "a@example.org")[1]
    (tmp_path / "team.token").write_text(team_token)
    with live_server(app) as url:
        status = main(["worker", "--server", url, "--admin-token-file",
                       str(tmp_path / "team.token"), "--checkouts", str(tmp_path),
                       "--unsafe-no-sandbox", "--poll", "0.1"])
    out, err = capsys.readouterr()
    assert status == 3 and "HTTP 404" in err and "organizers" in err
    assert team_token not in out + err
    # --once and no server: the worker stops with the reason instead of waiting (after the
    # client's retries, whose pauses are not waited out here)
    monkeypatch.setattr(_http, "_sleep", lambda seconds: None)
    (tmp_path / "admin.token").write_text("organizer-" + "x" * 43)
    status = main(["worker", "--server", "http://127.0.0.1:9", "--admin-token-file",
                   str(tmp_path / "admin.token"), "--checkouts", str(tmp_path), "--once",
                   "--unsafe-no-sandbox"])
    assert status == 3 and "127.0.0.1:9" in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end


def _tiny_competition(folder: Path) -> Path:
    """A competition on the tiny synthetic data (one open public phase), and its file."""
    from evaluation import ChallengeDataset
    from tests._competition_files import write_competition

    path = write_competition(folder / "competition.toml", ChallengeDataset(scale="tiny"))
    # the upload below is the run's submission.json alone (a claim): this board takes claims
    path.write_text("accept_claims = true\n" + path.read_text() + "\n[[phases]]\nname = \"open\"\n"
                    "opens = 2020-01-01T00:00:00Z\ncloses = 2100-01-01T00:00:00Z\n"
                    "references = \"synthetic-tiny\"\ndaily_limit = 5\npublic = true\n")
    return path


def _tiny_upload(competition_file: Path, results_dir: Path) -> bytes:
    """The template model's run on the tiny data for that competition, as uploaded."""
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.contract import submission_payload
    from submission.MyModel import MyModel

    dataset = ChallengeDataset(scale="tiny")
    runner = EvalRSRunner(dataset, results_dir=str(results_dir), progress=False,
                          verbose=False, competition=competition_file)
    result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k))
    document = submission_payload(json.loads(json.dumps(result.to_dict())),
                                  email="a@example.org", participant_id="team-a")
    return json.dumps(document).encode()


@pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox: {PROBLEM}")
def test_the_worker_reproduces_in_the_sandbox(tmp_path, capsys):
    competition_file = _tiny_competition(tmp_path)
    app = create_app(load_competition(competition_file), migrated_sqlite_url(tmp_path))
    store = app.state.store
    body = _tiny_upload(competition_file, tmp_path / "results")
    alpha = add_team(store, "alpha", "a@example.org")
    beta = add_team(store, "beta", "b@example.org")
    ids = {}
    for team, _ in (alpha, beta):  # the same upload: beta claims alpha's numbers, other code
        ids[team.name] = submit(store, team.id, body).submission_id
        mark_final(store, team.id, ids[team.name])
    checkouts = tmp_path / "checkouts"
    make_checkout(checkouts / "alpha")
    make_checkout(checkouts / "beta", template_model_with("self.other = 3  # changed"))
    admin = create_admin_token(store)
    (tmp_path / "admin.token").write_text(admin)
    with live_server(app) as url:
        status = main(["worker", "--server", url, "--admin-token-file",
                       str(tmp_path / "admin.token"), "--checkouts", str(checkouts),
                       "--once", "--jobs", "2", "--env", str(Path(sys.executable).parents[1]),
                       "--timeout", "300", "--log-dir", str(tmp_path / "logs")])
        out, err = capsys.readouterr()
        assert status == 0, out + err
        assert admin not in out + err
        finished = jobs(url, admin)
        alpha_view = httpx.get(url + SUBMIT, headers={
            "Authorization": f"Bearer {alpha[1]}"}).json()["submissions"]
        board = httpx.get(url + "/api/v1/leaderboard").json()["rows"]
    assert finished[ids["alpha"]]["state"] == "reproduced", err
    assert finished[ids["beta"]]["state"] == "not reproduced", err
    assert "model code differs" in finished[ids["beta"]]["reason"]
    [own] = alpha_view
    assert own["reproduction_status"] == "reproduced" and own["reproduction"] == "reproduced"
    assert "verdict: reproduced" in own["log_tail"]
    assert {r["team"]: r["reproduction"] for r in board if not r["is_baseline"]} == {
        "alpha": "reproduced", "beta": "not reproduced"}
    assert "worker" in err and "stopped: 1 not reproduced, 1 reproduced" in err
