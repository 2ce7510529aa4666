"""When a board request waits for its statistics, and how often the background thread starts a
computation: the worker alone, with a computation the test controls.

The rule: a request waits (at most its bound) only when its board has no reading yet, or when
its bound is ``FRESH_WAIT_S`` or more; a request that waits has its reading started at once;
any other request's reading starts at most once per its target's ``interval`` after the
board's previous start, and only the newest board asked for is computed.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from evaluation.server.standings import FRESH_WAIT_S, StandingsWorker, Target

START = SimpleNamespace(generated_at=None)  # a board: the worker reads only its time
KEY = ("phase-1", False)


class Engine:
    """A computation that records which targets it started, when, and that ends when the test
    lets it (``release``), its reading the target's signature."""

    def __init__(self) -> None:
        self.started: list[tuple[str, float]] = []
        self.gate = threading.Semaphore(0)
        self.started_event = threading.Event()

    def __call__(self, db, target: Target, progress):
        self.started.append((target.signature, time.monotonic()))
        self.started_event.set()
        assert self.gate.acquire(timeout=60), "the test never released the computation"
        return SimpleNamespace(signature=target.signature)

    def release(self, count: int = 1) -> None:
        for _ in range(count):
            self.gate.release()


class Db:
    """A store stand-in: the worker holds it weakly and reads nothing else of it here."""


def target(signature: str, interval: float = 0.0) -> Target:
    return Target(key=KEY, signature=signature, board=START, versions={}, inputs={},
                  source=None, interval=interval)


@pytest.fixture
def worker():
    db = Db()
    engine = Engine()
    made = StandingsWorker(db, engine)
    made.engine, made.db = engine, db  # kept alive with the worker
    yield made
    engine.release(100)
    made.stop()


def first_reading(worker) -> None:
    worker.engine.release()
    got = worker.latest(target("s1"), 30.0)  # no reading yet: waits for it
    assert got.kept is not None and got.kept.reading.signature == "s1"


def test_a_board_without_a_reading_waits_for_its_first_even_with_a_short_bound(worker):
    worker.engine.release()
    got = worker.latest(target("s1", interval=60.0), 0.9 * FRESH_WAIT_S)
    assert got.kept is not None and got.kept.reading.signature == "s1"  # waited, started at once


def test_with_a_reading_a_short_bound_answers_at_once_with_it(worker):
    first_reading(worker)
    begin = time.monotonic()
    got = worker.latest(target("s2", interval=60.0), 0.9 * FRESH_WAIT_S)
    took = time.monotonic() - begin
    assert got.kept.reading.signature == "s1" and took < 0.5 * FRESH_WAIT_S  # did not wait
    time.sleep(0.3)
    assert [s for s, _ in worker.engine.started] == ["s1"]  # s2 waits for its interval


def test_a_long_bound_waits_for_the_up_to_date_reading_and_starts_it_at_once(worker):
    first_reading(worker)
    worker.latest(target("s2", interval=60.0), 0.0)  # coalesced: not started for a minute
    worker.engine.release()
    got = worker.latest(target("s3", interval=60.0), 30.0)
    assert got.kept.reading.signature == "s3"
    assert [s for s, _ in worker.engine.started] == ["s1", "s3"]  # the newest only


def test_uploads_within_the_interval_are_computed_once_for_the_newest_board(worker):
    first_reading(worker)
    interval = 0.5
    for signature in ("s2", "s3", "s4"):
        got = worker.latest(target(signature, interval), 0.0)
        assert got.kept.reading.signature == "s1"
    worker.engine.release()
    deadline = time.monotonic() + 30
    while worker.latest(target("s4", interval), 0.0).kept.reading.signature != "s4":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    (first, at_first), (newest, at_newest) = worker.engine.started
    assert (first, newest) == ("s1", "s4")
    assert at_newest - at_first >= interval  # at most one start per interval


def test_a_board_asked_for_during_its_computation_starts_an_interval_after_it(worker):
    first_reading(worker)
    interval = 0.4
    worker.engine.started_event.clear()
    worker.latest(target("s2", interval), 0.0)
    assert worker.engine.started_event.wait(30)  # s1 started long ago: s2 starts at once
    worker.latest(target("s3", interval), 0.0)  # while s2 is computed
    worker.engine.release(2)
    deadline = time.monotonic() + 30
    while worker.latest(target("s3", interval), 0.0).kept.reading.signature != "s3":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    starts = dict(worker.engine.started)
    assert list(starts) == ["s1", "s2", "s3"]
    assert starts["s3"] - starts["s2"] >= interval
