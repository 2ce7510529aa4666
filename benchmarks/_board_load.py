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
         seed_value: int = 0, values_users: int = 0) -> dict[str, str]:
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
    values_users : int
        When above 0: each team's best submission gets synthetic per-user values on folds of
        this many users (as a scoring job's: trusted), so that the board has its paired
        statistics to compute and show.

    Returns
    -------
    dict
        Team name -> token, in the order the teams were made.
    """
    import sqlalchemy as sa

    from benchmarks._uploads import base_submission, encode, variant
    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, SubmissionRow, add_team, make_engine, upgrade
    from evaluation.server.store import pin_baselines, submit

    engine = make_engine(db_url)
    try:
        upgrade(engine)
        store = Database(engine, load_competition(competition))
        pin_baselines(store)
        made = [add_team(store, f"Seed team {i:03d}", f"s{i}@example.org") for i in range(teams)]
        tokens = {info.name: token for info, token in made}
        ids = [info.id for info, _ in made]
        first = submit(store, ids[0], encode(variant(base_submission(), "Seed-0", 0.0)))
        # the seeded rows stand for scored ones (a scoring job's numbers): ranked, compared
        with engine.begin() as conn:
            conn.execute(sa.update(SubmissionRow).where(
                SubmissionRow.id == first.submission_id).values(computed=True))
            stored = dict(conn.execute(sa.select(SubmissionRow.__table__).where(
                SubmissionRow.id == first.submission_id)).mappings().one())
        rows = _copies(stored, ids, submissions - 1, random.Random(seed_value))
        with store.writing() as session:
            session.execute(sa.insert(SubmissionRow), rows)
        if values_users > 0:
            _seed_values(store, stored, values_users)
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


#: The list length of the seeded per-user values.
VALUES_K = 100
#: The run hash the seeded values are recorded under (no reproduction ever checks them).
SEED_RUN_HASH = "0" * 64


def _seed_values(store, stored: dict, n_users: int) -> None:
    """Synthetic per-user values (a scoring job's) for each team's best submission: folds of
    ``n_users`` users, the same users (and slice groups) for every team, hit rates spread
    over the teams."""
    import hashlib

    import sqlalchemy as sa

    from evaluation.server.db import UserValuesRow
    from evaluation.server.store import phase_board

    best = [r for r in phase_board(store, stored["phase"]).rows if not r.is_baseline]
    now = datetime.now(timezone.utc)
    rows = []
    n_folds = stored["num_folds"]
    users = [_fold(0, f, n_users, 0.0).users_sha256 for f in range(n_folds)]
    for i, row in enumerate(best):
        blob = values_blob(i, n_folds, n_users, 0.1 + 0.3 * i / len(best))
        rows.append(dict(submission_id=row.submission_id, source="scored", private=False,
                         trusted=True, phase=stored["phase"], run_hash=SEED_RUN_HASH,
                         k=VALUES_K, n_users=[n_users] * n_folds, users_sha256=users,
                         blob=blob, blob_sha256=hashlib.sha256(blob).hexdigest(), costs=None,
                         recorded_at=now))
    with store.writing() as session:
        session.execute(sa.insert(UserValuesRow), rows)


def values_blob(team: int, n_folds: int, n_users: int, hit_rate: float) -> bytes:
    """A team's synthetic per-user values (``n_folds`` folds of ``n_users`` users, the same
    users for every team) as the store keeps them: the deflated blob."""
    from evaluation.challenge import encode_user_values, user_values_bytes

    folds = [_fold(team, f, n_users, hit_rate) for f in range(n_folds)]
    return user_values_bytes(encode_user_values(folds, VALUES_K))


def _fold(team: int, fold: int, n_users: int, hit_rate: float):
    """One team's per-user values on one fold: its own hits, BLW and LD; the users' slice
    groups shared by every team."""
    import numpy as np

    from evaluation.challenge import MRED_TESTS, FoldUsers, UserScores, users_sha256

    rng = np.random.default_rng([team, fold])
    ranks = np.where(rng.random(n_users) < hit_rate, rng.integers(1, VALUES_K + 1, n_users), 0)
    hit = ranks > 0
    rr = np.zeros(n_users)
    rr[hit] = 1.0 / ranks[hit]
    groups = np.random.default_rng([10_000, fold])
    slices = {t: groups.integers(-2, 4, n_users).astype(np.int32) for t in MRED_TESTS}
    scores = UserScores(hit=hit, rr=rr, slices=slices,
                        blw=np.where(hit, np.nan, rng.uniform(-0.3, 0.95, n_users)),
                        ld=rng.normal(0.1, 0.05, n_users))
    return FoldUsers(scores=scores, users_sha256=users_sha256(np.arange(n_users)),
                     labels={t: ("a", "b", "c", "d") for t in MRED_TESTS})


@dataclass
class Read:
    """One board request: which (``page`` or ``api``), its status, size and latency."""

    kind: str
    status: int | None
    size: int
    seconds: float
    #: When the answer was in (``time.perf_counter``).
    ended: float = 0.0


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
        end = time.perf_counter()
        return Read(kind, None, 0, end - begin, end)
    end = time.perf_counter()
    return Read(kind, response.status_code, len(response.content), end - begin, end)
