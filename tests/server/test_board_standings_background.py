"""The board's statistics computed off the request path: a board request never computes them.

While the background thread computes, a request answers within its bound with the latest
reading, marked as being updated, and the changed rows "being computed"; it never shows a
tier computed for another submission or other values. After a restart the page answers at once
without statistics, and with them once computed. A failure is shown, not lost; hidden boards
start no computation; the thread ends with its app or its store.
"""

from __future__ import annotations

import csv
import gc
import io
import os
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

from sqlalchemy import text

from evaluation.server.api import _board_cache
from evaluation.server.db import add_team, list_teams, make_engine
from evaluation.server.standings import StoreValues, board_now, stop_standings, with_standings
from evaluation.server.standings import _reading as _store_standings
from evaluation.server.standings import _worker as _standings_worker
from evaluation.server.store import phase_board, submit
from tests.server._api import Api, hidden_answers, make_api, parse, serving, team_folds
from tests.server._helpers import (
    Clock,
    FakeSource,
    computed,
    encode,
    open_store,
    sqlite_url,
    standings_competition,
    submit_teams,
    synthetic,
    trust_values,
    variant,
)
from tests.server._user_values import with_user_values

#: The bound a request waits for its statistics here (the default's order).
SHORT = 0.05
#: Seconds a request may take in all while the engine is blocked (the bound and the board).
ANSWERED_WITHIN = 3.0
#: The least seconds between two starts of a board's computation for the requests that do not
#: wait: short, so that a test waits for the start of the computation it blocks, not for the
#: server's default interval (what that interval coalesces is test_standings_worker's).
INTERVAL = 0.1


class Gate:
    """Blocks the engine's ``team_replicates`` until opened; counts its calls."""

    def __init__(self, monkeypatch, fail: Exception | None = None) -> None:
        self.opened = threading.Event()
        self.calls = 0
        self.fail = fail
        real = _store_standings.team_replicates

        def slow(*args, **kwargs):
            self.calls += 1
            assert self.opened.wait(60), "the test never opened the gate"
            if self.fail is not None:
                raise self.fail
            return real(*args, **kwargs)

        monkeypatch.setattr(_store_standings, "team_replicates", slow)


def upload(api: Api, token: str, run: str, seed: int, hit_rate: float, scale: float = 1.0
           ) -> int:
    """A run with per-user values, made trusted by the organizers' reproduction."""
    doc = with_user_values(variant(run, scale), team_folds(seed, hit_rate))
    reply = api.post(encode(doc), token)
    assert reply.status_code == 201, reply.text
    sid = reply.json()["submission_id"]
    trust_values(api.store, sid, doc)
    return sid


def timed_get(api: Api, path: str, **params):
    start = time.perf_counter()
    reply = api.get(path, **params)
    assert reply.status_code == 200, reply.text
    return reply, time.perf_counter() - start


def standings_of(api: Api) -> tuple[dict, dict[str, dict]]:
    board = api.get("/api/v1/leaderboard").json()
    return board["standings"], {r["team"]: r for r in board["rows"]}


@pytest.fixture
def api(tmp_path):
    app, _ = make_api(tmp_path, standings_wait=30.0, standings_interval=INTERVAL)
    with serving(app, False) as client:
        yield Api(client, app.state.store, app.state.store.clock, False)


def test_a_request_during_a_computation_shows_the_previous_reading_marked_updating(
        api, monkeypatch):
    tokens = {name: api.team(name) for name in ("Alpha", "Beta", "Gamma")}
    upload(api, tokens["Alpha"], "run-a", 1, 0.6, 1.3)
    upload(api, tokens["Beta"], "run-b", 2, 0.3, 1.2)
    before, rows_before = standings_of(api)  # waits for it: computed at once
    assert before["compared"] == 2 and not before["updating"] and before["as_of"] is not None
    gate = Gate(monkeypatch)
    api.store.standings_wait = SHORT
    gamma = upload(api, tokens["Gamma"], "run-g", 3, 0.3, 1.25)

    reply, took = timed_get(api, "/api/v1/leaderboard")
    assert took < ANSWERED_WITHIN  # the engine is blocked: only the bound was waited
    info = reply.json()["standings"]
    rows = {r["team"]: r for r in reply.json()["rows"]}
    assert info["updating"] is True and info["unavailable"] is None
    assert info["as_of"] == before["as_of"] and info["compared"] == 2
    assert info["progress"] in (None, [0, 1])  # the thread may not have started yet
    for team in ("Alpha", "Beta"):  # unchanged rows: the previous reading's statistics
        assert rows[team]["standing"] == rows_before[team]["standing"]
    new = rows["Gamma"]["standing"]
    assert rows["Gamma"]["submission_id"] == gamma
    assert new["being_computed"] is True and new["tier"] is None
    assert new["rank_interval"] is None and new["left_out"] is None

    deadline = time.monotonic() + 30
    while info["progress"] != [0, 1]:  # the thread shows its progress: none of one team yet
        assert time.monotonic() < deadline, info
        time.sleep(0.05)
        info = timed_get(api, "/api/v1/leaderboard")[0].json()["standings"]
    page, took = timed_get(api, "/")
    assert took < ANSWERED_WITHIN
    status = by_id(page.text, "p", "standings-status")
    assert status is not None and "being updated (0 of 1 teams done)" in status.text()
    assert "statistics being computed" in page.text
    lines = {line["team"]: line for line in csv.DictReader(io.StringIO(
        timed_get(api, "/leaderboard.csv")[0].text))}
    assert lines["Gamma"]["statistics"] == "being computed" and lines["Gamma"]["tier"] == ""
    assert lines["Alpha"]["statistics"].startswith("as of ")
    team = timed_get(api, "/api/v1/leaderboard/team", name="Gamma")[0].json()
    assert team["row"]["standing"]["being_computed"] and team["standings"]["updating"]
    assert team["opponents"] == []
    alpha = timed_get(api, "/api/v1/leaderboard/team", name="Alpha")[0].json()
    assert [o["team"] for o in alpha["opponents"]] == ["Beta"]  # Gamma is not in the reading
    assert "being computed" in timed_get(api, "/team", name="Gamma")[0].text

    gate.opened.set()
    api.store.standings_wait = 30.0
    after, rows_after = standings_of(api)  # the answer above was not kept as final
    assert after["updating"] is False and after["compared"] == 3 and after["progress"] is None
    assert rows_after["Gamma"]["standing"]["tier"] is not None
    assert not rows_after["Gamma"]["standing"]["being_computed"]
    # the same as computed in the request itself (the engine's own path)
    made = api.store
    reference = with_standings(made, phase_board(made), StoreValues(made))
    assert after["compared"] == reference.standings.compared
    for row in reference.rows:
        got = rows_after[row.team]["standing"]
        assert got["tier"] == row.standing.tier
        assert (None if got["rank_interval"] is None else tuple(got["rank_interval"])) == \
            row.standing.rank_interval
    assert gate.calls == 1  # only the new team's replicates


def test_while_the_statistics_are_computed_reads_are_answered_without_making_the_board(
        api, monkeypatch):
    tokens = {name: api.team(name) for name in ("Alpha", "Beta", "Gamma")}
    upload(api, tokens["Alpha"], "run-a", 1, 0.6, 1.3)
    upload(api, tokens["Beta"], "run-b", 2, 0.3, 1.2)
    assert standings_of(api)[0]["compared"] == 2
    gate = Gate(monkeypatch)
    api.store.standings_wait = SHORT  # as a server runs: requests do not wait for them
    upload(api, tokens["Gamma"], "run-g", 3, 0.3, 1.25)
    api.get("/api/v1/leaderboard")  # asks for the computation
    deadline = time.monotonic() + 30
    while gate.calls == 0:  # the computation has started (and is held)
        assert time.monotonic() < deadline
        time.sleep(0.02)
    made = []
    real = _board_cache.board_with_standings

    def counting(*args, **kwargs):
        made.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(_board_cache, "board_with_standings", counting)
    first = api.get("/api/v1/leaderboard").json()
    assert first["standings"]["updating"] is True
    for _ in range(20):  # the board being updated is kept (for UPDATING_MAX_AGE_S at most)
        assert api.get("/api/v1/leaderboard").json() == first
    assert len(made) <= 1
    gate.opened.set()  # the computation ends: the board is made again in the background
    while True:
        board = api.get("/api/v1/leaderboard").json()
        if not board["standings"]["updating"]:
            break
        assert time.monotonic() < deadline, board["standings"]
        time.sleep(0.02)
    assert board["standings"]["compared"] == 3
    assert "board-refresh" in made


def test_a_restarted_server_shows_its_last_statistics_at_once_then_updates_them(
        tmp_path, monkeypatch):
    app, _ = make_api(tmp_path, standings_wait=30.0)
    with serving(app, False) as client:
        first = Api(client, app.state.store, app.state.store.clock, False)
        for i, rate in enumerate((0.6, 0.3, 0.1)):
            upload(first, first.team(f"Team {i}"), f"run-{i}", i + 1, rate, 1.0 + i / 10)
        computed = first.get("/api/v1/leaderboard").json()
    assert computed["standings"]["compared"] == 3

    gate = Gate(monkeypatch)  # closed: nothing may be computed for the statistics shown
    again, _ = make_api(tmp_path, standings_wait=SHORT)  # the same database, a new process
    with serving(again, False) as client:
        api = Api(client, again.state.store, again.state.store.clock, False)
        page, took = timed_get(api, "/")
        assert took < ANSWERED_WITHIN and "Tier 1" in page.text
        board = api.get("/api/v1/leaderboard").json()
        assert board["standings"]["updating"] is False
        assert board["standings"]["as_of"] == computed["standings"]["as_of"]
        assert [r["standing"] for r in board["rows"]] == \
            [r["standing"] for r in computed["rows"]]
        assert gate.calls == 0
        # a new trusted row: the kept reading is shown, stale, until it is computed again
        upload(api, api.team("Team 3"), "run-3", 4, 0.2, 1.05)
        board = api.get("/api/v1/leaderboard").json()
        assert board["standings"]["updating"] is True
        assert board["standings"]["as_of"] == computed["standings"]["as_of"]
        rows = {r["team"]: r["standing"] for r in board["rows"]}
        assert rows["Team 3"]["being_computed"] and rows["Team 3"]["tier"] is None
        assert rows["Team 0"] == {r["team"]: r["standing"] for r in computed["rows"]}["Team 0"]
        gate.opened.set()
        api.store.standings_wait = 30.0
        board = api.get("/api/v1/leaderboard").json()
        assert board["standings"]["updating"] is False and board["standings"]["compared"] == 4
        assert gate.calls == 1  # the other teams' replicates came with the kept reading

    # a database without a kept reading (one from before them): computed afresh
    with make_engine(sqlite_url(tmp_path)).begin() as conn:
        conn.execute(text("DELETE FROM standings_snapshots"))
    gate = Gate(monkeypatch)
    again, _ = make_api(tmp_path, standings_wait=SHORT)
    with serving(again, False) as client:
        api = Api(client, again.state.store, again.state.store.clock, False)
        page, took = timed_get(api, "/")
        assert took < ANSWERED_WITHIN
        assert "being computed" in by_id(page.text, "p", "standings-status").text()
        assert 'class="tier-band"' not in page.text and 'id="standings-note"' not in page.text
        board = api.get("/api/v1/leaderboard").json()
        info = board["standings"]
        assert info["updating"] is True and info["compared"] == 0 and info["as_of"] is None
        teams = [r for r in board["rows"] if not r["is_baseline"]]
        assert all(r["standing"]["being_computed"] and r["standing"]["tier"] is None
                   for r in teams)
        gate.opened.set()
        api.store.standings_wait = 30.0
        board = api.get("/api/v1/leaderboard").json()
        assert board["standings"]["updating"] is False
        assert board["standings"]["compared"] == 4 and "Tier 1" in api.get("/").text


@pytest.fixture
def store(tmp_path):
    made = open_store(sqlite_url(tmp_path), standings_competition(), Clock())
    yield made
    made.engine.dispose()


def by_id(page: str, tag: str, id_: str):
    """The element of ``page`` with this tag and id (None when there is none)."""
    return next((n for n in parse(page).find_all(tag) if n.attrs.get("id") == id_), None)


def test_no_row_shows_a_tier_of_another_submission_or_other_values(store, rng, monkeypatch):
    ids = submit_teams(store, [("Alpha", 1.1), ("Beta", 1.2), ("Gamma", 1.05)])
    source = FakeSource({ids["Alpha"]: synthetic(rng, 0.2), ids["Beta"]: synthetic(rng, 0.5),
                         ids["Gamma"]: synthetic(rng, 0.4, trusted=False)})
    first = board_now(store, phase_board(store), source, 30.0)
    assert first.standings is not None and not first.standings.updating
    old = {r.team: (r.submission_id, r.standing) for r in first.rows}
    # a second board: Alpha's better submission, Gamma's values replaced (a reproduction's),
    # a new team; Beta unchanged
    team, _ = add_team(store, "Delta", "d@example.org")
    delta = submit(store, team.id, encode(variant("run-delta", 1.15))).submission_id
    alpha = submit(store, _team_id(store, "Alpha"),
                         encode(variant("run-alpha-2", 1.3))).submission_id
    computed(store, delta, alpha)
    source.by_id[alpha] = synthetic(rng, 0.9)
    source.by_id[delta] = synthetic(rng, 0.3)
    source.by_id[ids["Gamma"]] = replace(source.by_id[ids["Gamma"]], trusted=True)
    Gate(monkeypatch)  # never opened here: the second reading is never computed
    board = board_now(store, phase_board(store), source, SHORT)
    assert board.standings.updating and board.standings.as_of == first.generated_at
    by_team = {r.team: r for r in board.rows}
    assert by_team["Alpha"].submission_id == alpha != old["Alpha"][0]
    for row in board.rows:
        s = row.standing
        if row.is_baseline:
            continue
        if row.team == "Beta":  # the one row whose submission and values did not change
            assert s == old["Beta"][1] and s.tier is not None
        else:
            assert s.being_computed and s.tier is None and s.rank_interval is None
            assert s.pareto is None and s.borda_rank is None and s.costs is None
    # every tier shown is that of the same submission and values in the first reading
    for row in board.rows:
        if row.standing is not None and row.standing.tier is not None:
            assert (row.submission_id, row.standing) == old[row.team]


def _team_id(where, name: str) -> int:
    return next(t.id for t in list_teams(where) if t.name == name)


def test_a_failed_computation_is_logged_and_shown(api, monkeypatch, caplog):
    gate = Gate(monkeypatch, fail=RuntimeError("the engine broke\nsecond line"))
    gate.opened.set()
    upload(api, api.team("Alpha"), "run-a", 1, 0.6)
    with caplog.at_level("ERROR", logger="evaluation.server"):
        info, rows = standings_of(api)
    reason = "statistics unavailable: RuntimeError: the engine broke"
    assert info["unavailable"] == reason and info["updating"] is False
    assert rows["Alpha"]["standing"]["left_out"] == reason
    assert any("could not be computed" in r.getMessage() for r in caplog.records)
    page = api.get("/").text
    assert "Statistics unavailable: RuntimeError: the engine broke" in page
    assert "second line" not in page
    calls = gate.calls
    assert standings_of(api)[0]["unavailable"] == reason and gate.calls == calls  # not retried


def test_a_hidden_board_asks_the_thread_for_nothing(tmp_path, monkeypatch):
    gate = Gate(monkeypatch)
    gate.opened.set()
    asked = []
    latest = _standings_worker.StandingsWorker.latest
    monkeypatch.setattr(_standings_worker.StandingsWorker, "latest",
                        lambda self, target, wait: asked.append(target) or latest(
                            self, target, wait))
    answers = hidden_answers(tmp_path / "a", (0.6, 0.3))
    assert gate.calls == 0 and asked == []  # nothing asked of the thread, nothing computed
    assert "being computed" not in answers["/"]
    assert '"updating"' not in answers["/api/v1/leaderboard"]  # no statistics at all


def _statistics_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "board-statistics"]


def test_the_thread_ends_with_its_app_and_with_its_store(tmp_path):
    (tmp_path / "app").mkdir()
    app, _ = make_api(tmp_path / "app", standings_wait=30.0)
    before = set(_statistics_threads())
    with serving(app, False) as client:
        api = Api(client, app.state.store, app.state.store.clock, False)
        upload(api, api.team("Alpha"), "run-a", 1, 0.6)
        assert standings_of(api)[0]["compared"] == 1
        started = set(_statistics_threads()) - before
        assert len(started) == 1
    thread = started.pop()
    thread.join(10)
    assert not thread.is_alive()  # stopped at the app's shutdown

    (tmp_path / "store").mkdir()
    gone = open_store(sqlite_url(tmp_path / "store"), standings_competition(), Clock())
    ids = submit_teams(gone, [("Alpha", 1.3)])
    source = FakeSource({ids["Alpha"]: synthetic(np.random.default_rng(1), 0.5)})
    board_now(gone, phase_board(gone), source, 30.0)
    threads = set(_statistics_threads()) - before
    assert len(threads) == 1
    gone.engine.dispose()
    del gone, source
    gc.collect()
    thread = threads.pop()
    thread.join(_standings_worker.POLL_S * 5)
    assert not thread.is_alive()  # its store is gone: it left


def test_a_restarted_store_shows_the_statistics_of_many_teams_at_once(tmp_path, rng):
    url = sqlite_url(tmp_path)
    made = open_store(url, standings_competition(), Clock())
    ids = submit_teams(made, [(f"Team {i:02d}", 1.0 + i / 100) for i in range(20)])
    source = FakeSource({sid: synthetic(rng, 0.1 + i / 40) for i, sid in enumerate(ids.values())})
    computed = board_now(made, phase_board(made), source, 30.0)
    assert computed.standings.compared == 20 and not computed.standings.updating
    stop_standings(made)
    made.engine.dispose()

    again = open_store(url, standings_competition(), Clock())  # a new process's store
    fresh = FakeSource(dict(source.by_id))
    start = time.perf_counter()
    board = board_now(again, phase_board(again), fresh, SHORT)
    took = time.perf_counter() - start
    assert took < 5.0, f"the restarted store took {took:.1f} s"
    assert not board.standings.updating and board.standings.compared == 20
    assert [r.standing for r in board.rows] == [r.standing for r in computed.rows]
    assert fresh.asked == []  # no values read, no replicate computed again
    stop_standings(again)
    again.engine.dispose()


@pytest.mark.skipif(not hasattr(os, "getpriority") or sys.platform != "linux",
                    reason="a thread's own nice value is Linux's")
def test_the_statistics_thread_yields_the_cpu_to_the_requests(api):
    # a new trusted row makes the thread compute for about a second at full scale: the
    # board's requests (its own process's threads included) must get a core first
    token = api.team("Alpha")
    upload(api, token, "run-a", 1, 0.6, 1.3)
    standings_of(api)  # the thread has computed the board
    thread = next(t for t in threading.enumerate() if t.name == "board-statistics")
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert thread.native_id is not None
    theirs = os.getpriority(os.PRIO_PROCESS, thread.native_id)
    assert theirs == min(19, mine + _standings_worker.BACKGROUND_NICE) > mine or mine == 19
