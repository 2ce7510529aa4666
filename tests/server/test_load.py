"""The leaderboard under load: many teams at once, on SQLite and PostgreSQL, and a killed server.

Each test runs a live server on 127.0.0.1 and sends distinct valid submissions (variations of
the example competition's baseline, see ``benchmarks/_uploads.py``) from 32 threads; every load
is bounded in count and time and fails instead of hanging. What is checked is in the database
itself: every upload the server acknowledged (201 new, 200 the same again) is stored exactly
once under the id it answered, no team has more than its daily limit, and nothing got a 5xx.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchmarks._serve import ServeProcess, free_port
from benchmarks._uploads import (
    Upload,
    base_submission,
    competition_copy,
    encode,
    send_all,
    team_uploads,
    variant,
)

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
sa = pytest.importorskip("sqlalchemy")

from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import Database, add_team, list_teams, make_engine, upgrade  # noqa: E402
from evaluation.server.store import submit  # noqa: E402
from tests.server._forked_serve import fork_serve  # noqa: E402
from tests.server._helpers import migrated_sqlite_url  # noqa: E402
from tests.server._live_server import http_client, live_server  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: Inside the example's "public" phase, at noon UTC: 12 h to the next UTC midnight.
NOON = datetime(2027, 3, 1, 12, 0, tzinfo=timezone.utc)
SECONDS_TO_MIDNIGHT = 12 * 3600
#: No load may take longer than this; the test fails rather than wait on.
TIME_LIMIT = 60.0


# ---------------------------------------------------------------------------- set-up


def add_teams(db_url: str, count: int, competition=None) -> dict[str, str]:
    """``count`` teams in the database (its schema migrated first, when it is not yet): name ->
    token."""
    engine = make_engine(db_url)
    try:
        upgrade(engine)
        store = Database(engine, competition)
        return {f"Load team {i}": add_team(store, f"Load team {i}", f"team{i}@example.org")[1]
                for i in range(count)}
    finally:
        engine.dispose()


def with_replays(uploads: list[Upload], teams: dict[str, str], per_team: int) -> list[Upload]:
    """Each team's first upload sent twice in a row: the same body, to be stored once."""
    out, seen = [], set()
    for upload in uploads:
        out.append(upload)
        if upload.team not in seen:
            seen.add(upload.team)
            out.append(upload)
    assert len(out) == len(teams) * (per_team + 1)
    return out


def stored(db_url: str) -> list[tuple[int, str, str, str]]:
    """(id, team, phase, run id) of every team submission in the database (baselines left out)."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT s.id, t.name, s.phase, s.run_id FROM submissions s "
                "JOIN teams t ON t.id = s.team_id WHERE t.is_baseline = :no ORDER BY s.id"),
                {"no": False}).all()
    finally:
        engine.dispose()
    return [tuple(r) for r in rows]


# ---------------------------------------------------------------------------- checks


def check_answers(outcomes, sent: int) -> None:
    """Every upload got an HTTP answer, none 5xx, each one of 200/201/429."""
    assert len(outcomes) == sent, f"only {len(outcomes)} of {sent} uploads were answered " \
                                  f"within {TIME_LIMIT:.0f} s"
    errors = [o.error for o in outcomes if o.error]
    assert not errors, f"{len(errors)} transport errors, e.g. {errors[:3]}"
    unexpected = [(o.status, o.answer) for o in outcomes if o.status not in (200, 201, 429)]
    assert not unexpected, f"{len(unexpected)} unexpected answers, e.g. {unexpected[:3]}"


def check_stored_once(outcomes, rows) -> None:
    """Each acknowledged upload is in the database once, under the id the server answered."""
    by_key = Counter((team, run_id) for _, team, _, run_id in rows)
    assert max(by_key.values(), default=1) == 1, "a run is stored twice"
    ids = {(team, run_id): sid for sid, team, _, run_id in rows}
    for o in outcomes:
        if o.acknowledged:
            key = (o.upload.team, o.upload.run_id)
            assert key in ids, f"acknowledged {key} (answer {o.answer}) is not in the database"
            assert o.answer["submission_id"] == ids[key]
            assert o.answer["status"] == ("accepted" if o.status == 201 else "duplicate")


def check_exact_limits(outcomes, rows, teams, per_team: int, limit: int,
                       retry_after: str | None = str(SECONDS_TO_MIDNIGHT)) -> None:
    """Exactly ``limit`` runs of each team accepted, the others 429 with Retry-After.

    Each team sent ``per_team`` distinct runs (more than ``limit``) and its first run twice in
    a row. Which runs win the day's places depends on the order the server takes them in; the
    replayed run is either stored once (one 201, one 200 with the same id) or refused twice.
    """
    per_team_rows = Counter(team for _, team, _, _ in rows)
    assert per_team_rows == {team: limit for team in teams}
    for team in teams:
        mine = [o for o in outcomes if o.upload.team == team]
        (twice,) = [run for run, n in Counter(o.upload.run_id for o in mine).items() if n == 2]
        replayed = sorted(o.status for o in mine if o.upload.run_id == twice)
        assert replayed in ([200, 201], [429, 429]), (team, replayed)
        if replayed == [200, 201]:
            assert len({o.answer["submission_id"] for o in mine if o.upload.run_id == twice}) == 1
        statuses = Counter(o.status for o in mine)
        replay_stored = replayed == [200, 201]
        assert statuses == Counter({201: limit, 200: int(replay_stored),
                                    429: per_team - limit + (not replay_stored)}), (team, statuses)
    for o in outcomes:
        if o.status == 429:
            assert retry_after is None or o.retry_after == retry_after, o.retry_after
            assert "limit" in o.answer["reason"], o.answer


def run_exact_load(db_url: str, folder: Path, n_teams: int, per_team: int, limit: int,
                   servers: int = 1) -> list:
    """The load against ``servers`` apps on the database, each with its own engine (its own
    connections) behind a live server of its own; upload ``i`` goes to server ``i % servers``,
    so every team's uploads, and its replayed pair, reach all of them at once."""
    competition = load_competition(competition_copy(folder, daily_limit=limit))
    teams = add_teams(db_url, n_teams, competition)
    uploads = with_replays(team_uploads(base_submission(), teams, per_team, prefix="Load"),
                           teams, per_team)
    apps = [create_app(competition, db_url, clock=lambda: NOON) for _ in range(servers)]
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(live_server(app)) for app in apps]
        start = time.monotonic()
        outcomes = send_to_all(urls, uploads, threads=32)
        elapsed = time.monotonic() - start
    for app in apps:
        app.state.store.engine.dispose()
    check_answers(outcomes, len(uploads))
    rows = stored(db_url)
    check_stored_once(outcomes, rows)
    check_exact_limits(outcomes, rows, teams, per_team, limit)
    print(f"{len(uploads)} uploads to {servers} server(s) in {elapsed:.1f} s "
          f"({len(uploads) / elapsed:.0f}/s)")
    return outcomes


def send_to_all(urls: list[str], uploads: list[Upload], threads: int) -> list:
    """``send_all`` to each of ``urls`` at the same time, upload ``i`` to ``urls[i % n]``, the
    ``threads`` shared among them; the outcomes of all."""
    if len(urls) == 1:
        return send_all(urls[0], uploads, threads=threads, time_limit=TIME_LIMIT)
    n = len(urls)
    results: list[list] = [[] for _ in urls]
    senders = [threading.Thread(target=lambda k=k: results[k].extend(send_all(
        urls[k], uploads[k::n], threads=threads // n, time_limit=TIME_LIMIT)), daemon=True)
        for k in range(n)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(2 * TIME_LIMIT)
    assert not any(sender.is_alive() for sender in senders), "a sender did not finish"
    return [outcome for result in results for outcome in result]


# ---------------------------------------------------------------------------- the tests


# The loads are sized to what they test, not to a benchmark (bench_server.py sends 1,000): the
# uploads go out in groups of 5 teams (team_uploads), so with 32 threads each team has about 6
# uploads in flight at once, more than the 4 a day it may store, and each team sends 6 runs and
# a replay: its limit is decided under contention and over-run by every team.


@pytest.mark.slow
def test_concurrent_uploads_from_ten_teams_on_sqlite(tmp_path):
    # 10 teams x (6 distinct runs + 1 replay) = 70 uploads; 4 a day allowed: two groups of 5
    # teams, as many uploads of each team in flight at once as with more teams
    run_exact_load(migrated_sqlite_url(tmp_path, "load.db"), tmp_path, n_teams=10, per_team=6,
                   limit=4)




def run_exact_load_on_workers(db_url: str, folder: Path, n_teams: int, per_team: int,
                              limit: int, workers: int = 2,
                              then: Callable[[ServeProcess], None] | None = None) -> list:
    """``run_exact_load`` against ``serve --workers N``: the rules hold across processes.
    ``then`` is called with the server after the load, before it stops."""
    # the processes run on the real clock: a copy whose phase is open now
    competition_file = competition_copy(folder, daily_limit=limit,
                                        open_at=datetime.now(timezone.utc))
    teams = add_teams(db_url, n_teams)
    uploads = with_replays(team_uploads(base_submission(), teams, per_team, prefix="Load"),
                           teams, per_team)
    day = datetime.now(timezone.utc).date()
    with ServeProcess(competition_file, db_url, folder / "serve.log",
                      args=["--workers", str(workers)]) as server:
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        if children.exists():
            assert len(children.read_text().split()) >= workers, server.log_tail()
        outcomes = send_all(server.url, uploads, threads=32, time_limit=TIME_LIMIT)
        if then is not None:
            then(server)
    if datetime.now(timezone.utc).date() != day:
        pytest.skip("the load crossed midnight (UTC): the daily limits started again")
    check_answers(outcomes, len(uploads))
    rows = stored(db_url)
    check_stored_once(outcomes, rows)
    check_exact_limits(outcomes, rows, teams, per_team, limit, retry_after=None)
    return outcomes


@contextlib.contextmanager
def forked_serve(competition_file: Path, db_url: str, log: Path):
    """``serve`` of ``competition_file`` on ``db_url`` in a child forked from this process,
    answering on a free port of 127.0.0.1; yields (its URL, its ``Child``), stopped after."""
    port = free_port()
    server = fork_serve(None, ["--competition", str(competition_file), "--db", db_url,
                               "--port", str(port)], log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TIME_LIMIT
        with http_client(url, timeout=2) as client:
            while True:
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        yield url, server
    finally:
        server.terminate()
        try:
            server.wait(30)
        finally:
            server.kill()
            server.wait(30)


def a_late_worker_is_not_killed(server: ServeProcess) -> None:
    """A worker process stopped for longer than uvicorn's default health check (5 s), as a
    busy one on a loaded machine is late: the supervisor waits for it instead of killing it
    with its requests in flight."""
    started = re.compile(r"Started server process \[(\d+)\]")
    deadline = time.monotonic() + 60
    while len(workers := started.findall(server.log.read_text())) < 2:
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.2)
    late = int(workers[0])
    os.kill(late, signal.SIGSTOP)
    try:
        time.sleep(8)
    finally:
        os.kill(late, signal.SIGCONT)
    time.sleep(1)
    log = server.log.read_text()
    assert Path(f"/proc/{late}").exists() and "died" not in log, server.log_tail()
    assert len(started.findall(log)) == 2, server.log_tail()  # none started in its place
    with http_client(server.url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200


@pytest.mark.slow
def test_two_server_processes_keep_the_rules_exact_and_a_late_one_is_not_killed_on_sqlite(
        tmp_path):
    # one `serve --workers 2` for both: the load, then one of its workers stopped
    run_exact_load_on_workers(migrated_sqlite_url(tmp_path, "workers.db"), tmp_path, n_teams=10,
                              per_team=6, limit=4, then=a_late_worker_is_not_killed)


@pytest.mark.slow
def test_two_servers_on_one_postgresql_database_keep_the_rules_exact(tmp_path,
                                                                     postgres_migrated_database):
    # Two apps, each with its own engine and connections, as two `serve` processes have: on
    # PostgreSQL every rule is held by the database (row locks, unique keys), which cannot tell
    # two processes' sessions from two engines' of one process; what is about processes (the
    # SQLite file's locks across them, `serve --workers` itself) is the SQLite test above.
    # Each server also takes uploads of a team at once with the other, as one server does.
    pytest.importorskip("psycopg")
    run_exact_load(postgres_migrated_database, tmp_path, n_teams=10, per_team=6, limit=4,
                   servers=2)


@pytest.mark.slow
def test_a_killed_server_restarts_with_every_acknowledged_submission(tmp_path):
    db_path = tmp_path / "crash.db"
    db_url = migrated_sqlite_url(tmp_path, db_path.name)
    # the server runs on the real clock: a copy whose phase is open now
    competition_file = competition_copy(tmp_path, daily_limit=1000,
                                        open_at=datetime.now(timezone.utc))
    teams = add_teams(db_url, 10)
    # 200 uploads: the 40 acknowledged before the kill, the 32 in flight at it, and enough left
    # that the threads are still sending when it comes
    uploads = team_uploads(base_submission(), teams, 20, prefix="Crash")
    log = tmp_path / "serve.log"
    kill_after = 40  # acknowledged uploads before the SIGKILL
    acked = threading.Event()
    count = [0]
    lock = threading.Lock()

    def on_outcome(outcome) -> None:
        if outcome.acknowledged:
            with lock:
                count[0] += 1
                if count[0] >= kill_after:
                    acked.set()

    stop = threading.Event()
    # `serve` forked from this process (its imports done already): a process of its own, which
    # the SIGKILL ends as it would a new interpreter (those are the test above)
    with forked_serve(competition_file, db_url, log) as (url, server):
        result: list = []
        sender = threading.Thread(target=lambda: result.extend(send_all(
            url, uploads, threads=32, time_limit=TIME_LIMIT, stop=stop,
            on_outcome=on_outcome)), daemon=True)
        sender.start()
        assert acked.wait(TIME_LIMIT), f"fewer than {kill_after} acknowledged: {log.read_text()}"
        stop.set()  # no new uploads; the ~32 in flight meet the kill
        server.kill()  # SIGKILL in the middle of the load
        assert server.wait(30) == -signal.SIGKILL
        sender.join(TIME_LIMIT)
        assert not sender.is_alive()
    outcomes = result
    acknowledged = [o for o in outcomes if o.acknowledged]
    lost = [o for o in outcomes if o.status is None]  # in flight at the kill: no answer
    assert len(acknowledged) >= kill_after
    assert lost, "no upload was in flight at the kill: the server was not killed mid-load"
    assert not [o for o in outcomes if o.status is not None and o.status >= 500]
    assert all(o.status in (200, 201) for o in outcomes if o.status is not None)

    # the restart: the server's app on the database the SIGKILL left, as `serve` starts it
    # (checked, migrated, baselines pinned), served in this process (what is about processes,
    # the kill, is done above)
    app = create_app(load_competition(competition_file), db_url)
    with live_server(app) as url, http_client(url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200
        rows = stored(db_url)
        check_stored_once(outcomes, rows)
        # at most the ones in flight at the kill were stored without an answer
        assert len(acknowledged) <= len(rows) <= len(acknowledged) + len(lost)
        # the unanswered ones sent again: stored once, new or found from before the kill
        again = send_all(url, [o.upload for o in lost], threads=8, time_limit=TIME_LIMIT)
        assert len(again) == len(lost)
        assert all(o.status in (200, 201) for o in again), [(o.status, o.answer) for o in again]
        rows = stored(db_url)
        check_stored_once(acknowledged + again, rows)
        assert len(rows) == len(acknowledged) + len(again)
        print(f"acknowledged before the kill: {len(acknowledged)}; in flight: {len(lost)} "
              f"(sent again: {Counter(o.status for o in again)})")
    app.state.store.engine.dispose()
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("PRAGMA integrity_check")).scalar_one() == "ok"
    finally:
        engine.dispose()


def test_competition_copies_change_only_what_they_say(tmp_path):
    import tomllib

    original = tomllib.loads((REPO / "competition.toml").read_text())
    copy = load_competition(competition_copy(tmp_path / "a", daily_limit=7))
    assert [p.daily_limit for p in copy.phases] == [7] * len(original["phases"])
    assert [p.name for p in copy.phases] == [p["name"] for p in original["phases"]]
    assert [(p.opens, p.closes) for p in copy.phases] == [
        (p["opens"], p["closes"]) for p in original["phases"]]
    assert copy.baselines[0].name == original["baselines"][0]["name"]
    at = datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc)  # after every example phase
    now_open = load_competition(competition_copy(tmp_path / "b", daily_limit=3, open_at=at))
    (phase,) = now_open.phases
    assert phase.name == original["phases"][0]["name"] and phase.daily_limit == 3
    assert now_open.phase_at(at) == phase and phase.opens < at < phase.closes


def test_variants_are_distinct_valid_runs_of_the_competition(tmp_path):
    """The load's payloads: each one accepted as a new run with its own recomputed score."""
    competition = load_competition(competition_copy(tmp_path, daily_limit=100))
    base = base_submission()
    db_url = migrated_sqlite_url(tmp_path, "v.db")
    teams = add_teams(db_url, 1, competition)
    store = Database(make_engine(db_url), competition, clock=lambda: NOON)
    (team_id,) = [t.id for t in list_teams(store) if t.name in teams]
    receipts = [submit(store, team_id, encode(variant(base, f"V-{i}", i * 1e-3)), f"V-{i}")
                for i in range(3)]
    assert [r.status for r in receipts] == ["accepted"] * 3
    assert len({r.submission_id for r in receipts}) == 3
    scores = [r.leaderboard_score for r in receipts]
    assert scores[0] > scores[1] > scores[2]  # a lower HIT_RATE scores lower
    # the unchanged variant is the baseline's own run (less its per-user values: a claim's are
    # never compared), scored as the baseline is
    own = {key: value for key, value in base.items() if key != "user_values"}
    assert variant(base, base["run_id"], 0.0) == own
    store.engine.dispose()

