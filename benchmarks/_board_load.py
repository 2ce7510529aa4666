"""A populated board and its readers: for the leaderboard server's benchmark.

``seed`` fills a fresh database with many teams and submissions in a few seconds: the teams
through the store (as ``admin team add`` makes them), one submission scored and stored through
the store as an upload is, and the others copied from it in one SQL insert, each with its own
run id, time and scores (so the board has a different best per team to find). ``BoardReaders``
then reads the board page and the board API at a steady rate from threads of their own, while
the uploads go on, and keeps each request's latency.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

#: What the readers ask for: the page and the board's JSON.
BOARD_PATHS = {"page": "/", "api": "/api/v1/leaderboard"}


def seed(db_url: str, competition: Path, teams: int, submissions: int, *,
         seed_value: int = 0) -> dict[str, str]:
    """``teams`` teams and ``submissions`` submissions of the current phase in a new database.

    Parameters
    ----------
    db_url : str
        A database with no schema yet (it is migrated here).
    competition : Path
        The competition file (its first phase open now).
    teams, submissions : int
        How many; the submissions go to the teams in turn.
    seed_value : int
        Seed of the scores (``random.Random``).

    Returns
    -------
    dict
        Team name -> token, in the order the teams were made.
    """
    import sqlalchemy as sa

    from benchmarks._uploads import base_submission, encode, variant
    from evaluation.server import Store, SubmissionRow, load_competition, make_engine, upgrade

    engine = make_engine(db_url)
    try:
        upgrade(engine)
        store = Store(engine, load_competition(competition))
        store.pin_baselines()
        made = [store.add_team(f"Seed team {i:03d}", f"s{i}@example.org") for i in range(teams)]
        tokens = {info.name: token for info, token in made}
        ids = [info.id for info, _ in made]
        first = store.submit(ids[0], encode(variant(base_submission(), "Seed-0", 0.0)))
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.select(SubmissionRow.__table__).where(
                SubmissionRow.id == first.submission_id)).mappings().one())
        rows = _copies(stored, ids, submissions - 1, random.Random(seed_value))
        with store.writing() as session:
            session.execute(sa.insert(SubmissionRow), rows)
        return tokens
    finally:
        engine.dispose()


def _copies(stored: dict, team_ids: list[int], count: int, rng: random.Random) -> list[dict]:
    """``count`` copies of a stored submission, to the teams in turn, with new run ids,
    times in the last days and scores spread around the stored one."""
    del stored["id"]
    now = datetime.now(timezone.utc)
    rows = []
    for n in range(count):
        shift = rng.uniform(-0.2, 0.2)
        score = stored["leaderboard_score"] + shift
        rows.append({**stored, "team_id": team_ids[(n + 1) % len(team_ids)],
                     "run_id": f"Seed-{n + 1}", "leaderboard_score": score,
                     "phase1_score": stored["phase1_score"] + shift / 2,
                     "interval_low": score - 0.05, "interval_high": score + 0.05,
                     "claimed_score": score,
                     "submitted_at": now - timedelta(seconds=rng.uniform(60, 3 * 86400))})
    return rows


@dataclass
class Read:
    """One board request: which (``page`` or ``api``), its status, size and latency."""

    kind: str
    status: int | None
    size: int
    seconds: float


@dataclass
class BoardReaders:
    """Threads that read the board at ``rate`` requests/s in all (page and API in turn) until
    :meth:`stop`; each thread keeps one connection alive.

    The requests are paced by a schedule, not sent back to back: a slow answer delays that
    thread's next request but the others keep the rate (so the load does not ease off when
    the server slows down, up to ``threads`` requests in flight).
    """

    base_url: str
    rate: float
    threads: int = 4
    reads: list[Read] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _pool: list[threading.Thread] = field(default_factory=list)

    def start(self) -> BoardReaders:
        """Start the threads; return self."""
        start = time.monotonic()
        for i in range(self.threads):
            thread = threading.Thread(target=self._run, args=(i, start), daemon=True)
            thread.start()
            self._pool.append(thread)
        return self

    def stop(self) -> list[Read]:
        """Stop the threads (the requests in flight finish); return every read."""
        self._stop.set()
        for thread in self._pool:
            thread.join(120)
        return list(self.reads)

    def _run(self, index: int, start: float) -> None:
        import httpx

        interval = self.threads / self.rate
        kinds = list(BOARD_PATHS)
        with httpx.Client(base_url=self.base_url, timeout=60) as client:
            k = 0
            while not self._stop.is_set():
                due = start + (index / self.threads + k) * interval
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    return
                kind = kinds[(index + k) % len(kinds)]
                self.reads.append(_read(client, kind))
                k += 1


def _read(client, kind: str) -> Read:
    import httpx

    begin = time.perf_counter()
    try:
        response = client.get(BOARD_PATHS[kind])
    except httpx.HTTPError:
        return Read(kind, None, 0, time.perf_counter() - begin)
    return Read(kind, response.status_code, len(response.content), time.perf_counter() - begin)
