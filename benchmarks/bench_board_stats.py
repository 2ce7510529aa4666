"""The board's paired statistics at full scale: 200 teams, 4 folds of ~29.9k test users each.

Measures what the leaderboard service does (``evaluation.server``'s ``with_standings``, the
computation its background thread runs for the board's routes) on synthetic per-user values:

* the first full computation: every team's replicates (the resamples drawn once), then the
  board's reading (tiers, rank intervals, win probabilities, Pareto front, first-place weights,
  Borda);
* the incremental one after an upload: the other teams' replicates kept, the new team's
  computed, the reading redone;
* a repeated request with nothing changed (the reading kept);
* the board request's own path (``_standings_now.board_now``), which never computes: its
  latency right after a start (no statistics yet, the background thread set computing) and
  right after a team's values change (the previous reading shown, marked as being updated),
  and the time until the thread's new reading is shown;
* its p99 latency while a stream of new trusted rows arrives (one team's values change, then
  requests, again and again);
* the warm start: a new store on the same database (a restarted server) until it shows the
  board's statistics, read back from the reading kept in the database, side by side with the
  cold computation it replaces (the first full computation).

The first full computation (every team's replicates: minutes at full scale on 2 cores) is
made once, in the first run; each later run starts a fresh store that kept those teams'
statistics (as a running server keeps them, or reads them back after a restart) and measures
the rest. So the script takes about that one computation plus a minute per run, and the
figures after an upload are medians of ``--runs`` runs (min-max, wall and CPU time). Beside
them, in the same process: the new team's replicates by the kernel the board uses and by the
plain product over every user it replaced (the same bits, asserted), interleaved; the
process's peak resident memory and the machine's load. Every team has measured costs
(reproduction seconds and peak memory, spread over the teams), so the reading includes the
cost-quality front. The synthetic teams' values are made when asked for (as the store decodes
them): making them is timed apart and left out of the computation's times; decoding one
full-scale blob of the upload format is timed too, since an upload's incremental path reads
one. Usage::

    python benchmarks/bench_board_stats.py                 # 200 teams, 1000 replicates
    python benchmarks/bench_board_stats.py --teams 50 --n-boot 500
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled

from evaluation.challenge import (
    MRED_TESTS,
    FoldUsers,
    UserScores,
    decode_user_values,
    encode_user_values,
    phase2_score,
    users_sha256,
)
from evaluation.challenge._paired_board import _fold_replicates
from evaluation.challenge._scores import _tests_from_sums
from evaluation.server.core import Board, BoardRow, BoardSettings, load_competition
from evaluation.server.db import STANDINGS_WAIT_S, Database, make_engine, upgrade
from evaluation.server.standings import board_now, cache_of, stop_standings, with_standings
from evaluation.server.store import ComparedUsers, FoldCost, UserValues

REPO = Path(__file__).resolve().parents[1]
FOLD_USERS = (29_912, 29_871, 29_930, 29_889)
K = 100
#: Groups of each MRED slice at full scale (countries, activity, popularity bins, gender).
GROUPS = {"MRED_COUNTRY": 14, "MRED_USER_ACTIVITY": 4, "MRED_TRACK_POPULARITY": 5,
          "MRED_ARTIST_POPULARITY": 5, "MRED_GENDER": 3}
WHEN = datetime(2026, 6, 1, tzinfo=timezone.utc)
#: New trusted rows in the stream, and board requests after each.
STREAM = 20
REQUESTS_PER_ROW = 10


def slices(fold: int, n: int) -> dict[str, np.ndarray]:
    """The users' slice codes: the same for every team (they are the users')."""
    rng = np.random.default_rng(10_000 + fold)
    return {t: rng.integers(-2, g, n).astype(np.int32) for t, g in GROUPS.items()}


def team_fold(team: int, fold: int, skill: float) -> UserScores:
    """One team's per-user values on one fold (float32 BLW and LD, as the blob carries)."""
    n = FOLD_USERS[fold]
    rng = np.random.default_rng([team, fold])
    ranks = np.where(rng.random(n) < skill, rng.integers(1, K + 1, n), 0)
    hit = ranks > 0
    rr = np.zeros(n)
    rr[hit] = 1.0 / ranks[hit]
    blw = np.where(hit, np.nan, rng.uniform(-0.3, 0.95, n)).astype(np.float32)
    ld = rng.normal(0.1, 0.05, n).astype(np.float32)
    return UserScores(hit=hit, rr=rr, slices=slices(fold, n), blw=blw.astype(np.float64),
                      ld=ld.astype(np.float64))


def skill(team: int, n_teams: int) -> float:
    """Hit rates from 0.35 down to 0.05, two teams at a time equally skilled."""
    return 0.35 - 0.30 * (team // 2 * 2) / max(n_teams - 1, 1)


@dataclass
class Source:
    """Synthetic teams' values, made when asked for; times the making."""

    n_teams: int
    made_seconds: float = 0.0
    made_cpu: float = 0.0
    asked: list[int] = field(default_factory=list)
    changed: set[int] = field(default_factory=set)  # values replaced (e.g. a reproduction's)

    def versions(self, phase, ids, private):
        return {i: int(i in self.changed) for i in ids}

    def users(self, phase, private):
        return ComparedUsers(users_sha256=("users",) * 4, fold_sizes=FOLD_USERS,
                             submission_id=0)

    def values(self, phase, ids, private):
        start, cpu = time.perf_counter(), time.process_time()
        out = {i: UserValues(folds=[team_fold(i, f, skill(i, self.n_teams)) for f in range(4)],
                             user_hashes=["users"] * 4, trusted=True, labels=[{}] * 4,
                             costs=[cost(i)] * 4, costs_trusted=True) for i in ids}
        self.made_seconds += time.perf_counter() - start
        self.made_cpu += time.process_time() - cpu
        self.asked += list(ids)
        return out


def cost(team: int) -> FoldCost:
    """A team's measured costs (a reproduction's): spread over the teams, unrelated to skill,
    so that the cost-quality front has many teams on it (the front probability's hard case).
    """
    rng = np.random.default_rng([20_000, team])
    return FoldCost(float(rng.uniform(10, 600)), float(rng.uniform(1, 60)),
                    float(rng.uniform(500, 8000)))


def board(n_teams: int, points: np.ndarray) -> Board:
    order = np.argsort(-points, kind="stable")
    rows = tuple(BoardRow(team=f"team-{i:03d}", is_baseline=False, submission_id=int(i),
                          rank=r + 1, leaderboard_score=float(points[i]), interval=None,
                          phase1_score=0.0, tests=None, submissions=1,
                          best_submitted=WHEN, last_submitted=WHEN)
                 for r, i in enumerate(order))
    return Board(competition="bench", phase="public", phases=("public",), public=True,
                 rows=rows, generated_at=WHEN)


def points(n_teams: int, references) -> np.ndarray:
    """Each team's board score (the phase-2 score of its fold means)."""
    out = []
    for i in range(n_teams):
        means: dict[str, float] = {}
        for f in range(4):
            for t, v in team_fold(i, f, skill(i, n_teams)).tests().items():
                means[t] = means.get(t, 0.0) + float(v[0]) / 4
        out.append(phase2_score(means, references))
    return np.array(out)


def decode_seconds() -> float:
    """Decoding one full-scale upload's per-user values (the store's path)."""
    folds = []
    for f, n in enumerate(FOLD_USERS):
        scores = team_fold(0, f, 0.3)
        ranks = np.zeros(n, dtype=np.int64)
        ranks[scores.hit] = np.rint(1.0 / scores.rr[scores.hit]).astype(np.int64)
        folds.append(FoldUsers(scores=scores, users_sha256=users_sha256(np.arange(n)),
                               labels={t: tuple(str(g) for g in range(GROUPS[t]))
                                       for t in MRED_TESTS}))
    blob = encode_user_values(folds, K)
    start = time.perf_counter()
    decode_user_values(blob, list(FOLD_USERS), k=K)
    return time.perf_counter() - start


def run(competition, n_teams: int, pts: np.ndarray, kept: Any) -> tuple[dict[str, float], Any]:
    """One run on a fresh store: the full computation of all but the last team (or, given
    ``kept``, the statistics those teams have in it), the incremental one after the last
    team's upload, and a repeated request. Returns the figures and the store's cache."""
    folder = tempfile.mkdtemp(prefix="bench-board-stats-")
    url = f"sqlite:///{folder}/leaderboard.db"
    engine = make_engine(url)
    upgrade(engine)
    db = Database(engine, competition)
    source = Source(n_teams)
    everyone = board(n_teams, pts)
    last = n_teams - 1  # the upload: any team would do
    before = replace(everyone, rows=tuple(r for r in everyone.rows
                                          if r.submission_id != last))
    out: dict[str, float] = {}
    cache = cache_of(db)
    if kept is not None:  # a server that kept the teams' statistics (or read them back)
        cache.teams.update({k: t for k, t in kept.teams.items() if k[0] != last})
        cache.resamples.update(kept.resamples)
    start, cpu = time.perf_counter(), time.process_time()
    with_standings(db, before, source)
    out["full" if kept is None else "reading"] = time.perf_counter() - start \
        - source.made_seconds
    out["full_cpu" if kept is None else "reading_cpu"] = time.process_time() - cpu \
        - source.made_cpu
    made, made_cpu = source.made_seconds, source.made_cpu
    start, cpu = time.perf_counter(), time.process_time()
    after = with_standings(db, everyone, source)
    out["incremental"] = time.perf_counter() - start - (source.made_seconds - made)
    out["incremental_cpu"] = time.process_time() - cpu - (source.made_cpu - made_cpu)
    assert source.asked[-1] == last and len(source.asked) == (1 if kept else n_teams)
    start = time.perf_counter()
    with_standings(db, everyone, source)
    out["repeat"] = time.perf_counter() - start
    assert after.standings is not None and after.standings.compared == n_teams
    fronts = [r.standing.front_probability for r in after.rows if r.standing is not None]
    assert all(f is not None for f in fronts), "every team has measured costs"
    out["tiers"] = float(max(r.standing.tier for r in after.rows if r.standing is not None
                             and r.standing.tier is not None))
    out["on_front"] = float(sum(f for f in fronts if f is not None))
    out.update(request_path(db, competition, everyone, source, last))
    out.update(warm_start(url, competition, everyone, source))
    return out, cache


def kernel_runs(kept: Any, n_teams: int, n_boot: int, runs: int
                ) -> dict[str, list[float]]:
    """The new team's replicates (its 4 folds' test sums, the board's kernel) against the
    plain product over every user it replaced, interleaved, on the board's own resamples:
    CPU seconds of each, the bits asserted equal."""
    resamples = next(r for r in kept.resamples.values() if r.n_boot == n_boot)
    folds = [team_fold(n_teams - 1, f, skill(n_teams - 1, n_teams)) for f in range(4)]
    out: dict[str, list[float]] = {"kernel": [], "plain": []}
    for _ in range(runs):
        for name, kernel in (("kernel", _fold_replicates), ("plain", plain_fold_replicates)):
            copies = [replace(f) for f in folds]  # no design kept between the sides
            cpu = time.process_time()
            got = [kernel(copies[f], resamples.counts[f], resamples.kept_sums[f])
                   for f in range(4)]
            out[name].append(time.process_time() - cpu)
            if name == "kernel":
                mine = got
            else:
                for a, b in zip(mine, got):
                    assert all(np.array_equal(a[t], b[t], equal_nan=True) for t in a), \
                        "the kernel's replicates differ from the plain product's"
    return out


def plain_fold_replicates(scores: UserScores, counts: np.ndarray, kept: dict
                          ) -> dict[str, np.ndarray]:
    """The reference: every design column summed over every user (the 0/1 ones by a float32
    product, the real-valued ones as the kernel sums them), chunk by chunk."""
    layout = scores._design()
    sums = np.empty((len(counts), layout["n_columns"]))
    for start in range(0, len(counts), 128):
        block = counts[start:start + 128].astype(np.float32)
        rows = slice(start, start + len(block))
        sums[rows, layout["binary_columns"]] = block @ layout["binary"].T
        sums[rows, layout["real_columns"]] = block.astype(np.float64) @ layout["real"].T
    return _tests_from_sums(sums, layout)


def request_path(db: Database, competition, everyone: Board, source: Source, last: int
                 ) -> dict[str, float]:
    """The board request's latency (it never computes) after a start and after a change of
    one team's values, and the time until the background thread's reading is shown."""
    folder = tempfile.mkdtemp(prefix="bench-board-stats-")
    engine = make_engine(f"sqlite:///{folder}/leaderboard.db")
    upgrade(engine)
    fresh = Database(engine, competition)
    start = time.perf_counter()
    shown = board_now(fresh, everyone, Source(len(everyone.rows)), STANDINGS_WAIT_S)
    started = time.perf_counter() - start
    assert shown.standings is not None and shown.standings.compared == 0
    stop_standings(fresh)  # not waited for: the benchmark computes that board above
    source.changed.add(last)
    start = time.perf_counter()
    shown = board_now(db, everyone, source, STANDINGS_WAIT_S)
    changed = time.perf_counter() - start
    updating = shown.standings is not None and shown.standings.updating
    while shown.standings is not None and shown.standings.updating:
        time.sleep(0.01)  # a request with a reading to show answers at once: do not spin
        shown = board_now(db, everyone, source, STANDINGS_WAIT_S)
    until = time.perf_counter() - start
    source.changed.discard(last)
    latencies = []
    for team in range(STREAM):  # new trusted rows arriving, the board asked meanwhile
        source.changed.symmetric_difference_update({team})
        for _ in range(REQUESTS_PER_ROW):
            start = time.perf_counter()
            board_now(db, everyone, source, STANDINGS_WAIT_S, interval=0.0)
            latencies.append(time.perf_counter() - start)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    while True:  # the last reading computed: the one kept for the restart
        shown = board_now(db, everyone, source, STANDINGS_WAIT_S, interval=0.0)
        if shown.standings is not None and not shown.standings.updating:
            break
        time.sleep(0.01)
    stop_standings(db)
    return {"request_started": started, "request_changed": changed, "until_shown": until,
            "was_updating": float(updating), "stream_p50": p50, "stream_p99": p99}


def warm_start(url: str, competition, everyone: Board, source: Source) -> dict[str, float]:
    """A new store on the same database (a restarted server): seconds until its board shows
    the statistics (read back, not computed), and whether they were current."""
    start = time.perf_counter()
    restarted = Database(make_engine(url), competition)
    shown = board_now(restarted, everyone, source, STANDINGS_WAIT_S)
    while shown.standings is None or shown.standings.compared == 0:
        time.sleep(0.01)
        shown = board_now(restarted, everyone, source, STANDINGS_WAIT_S)
    took = time.perf_counter() - start
    current = shown.standings is not None and not shown.standings.updating
    stop_standings(restarted)
    return {"warm_start": took, "warm_current": float(current)}


def main() -> None:
    global FOLD_USERS  # the smoke run's smaller folds, for every function
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teams", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3,
                    help="runs after an upload (the first also makes the full computation)")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.teams, args.n_boot, args.runs = 6, 50, 2
        FOLD_USERS = (600, 580, 610, 590)
    competition = replace(load_competition(REPO / "competition.toml"),
                          board=BoardSettings(n_boot=args.n_boot))
    references = competition.phase("public").references
    print(f"{args.teams} teams, folds of {FOLD_USERS} test users, {args.n_boot} replicates; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    pts = points(args.teams, references)
    results, kept = [], None
    for _ in range(args.runs):
        figures, cache = run(competition, args.teams, pts, kept)
        results.append(figures)
        kept = kept or cache
    assert kept is not None
    kernel = kernel_runs(kept, args.teams, args.n_boot, max(args.runs, 1))
    for key, label in (("full", f"first full computation ({args.teams - 1} teams, once)"),
                       ("full_cpu", "  its CPU time (all threads)"),
                       ("reading", f"reading of {args.teams - 1} teams kept"),
                       ("reading_cpu", "  its CPU time (all threads)"),
                       ("incremental", "after one upload (incremental)"),
                       ("incremental_cpu", "  its CPU time (all threads)"),
                       ("repeat", "repeated request, nothing changed"),
                       ("request_started", "board request right after a start"),
                       ("request_changed", "board request after a team's values change"),
                       ("until_shown", "  until the new reading is shown"),
                       ("stream_p50", "board request p50 while trusted rows arrive"),
                       ("stream_p99", "board request p99 while trusted rows arrive"),
                       ("warm_start", "warm start: restarted store shows statistics")):
        values = [r[key] for r in results if key in r]
        if values:
            print(f"{label:45s} median {statistics.median(values):8.3f} s  "
                  f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} runs)")
    k, p = (statistics.median(kernel[n]) for n in ("kernel", "plain"))
    print(f"{'new team replicates: board kernel (CPU)':45s} median {k:8.3f} s  "
          f"(min {min(kernel['kernel']):.3f}, max {max(kernel['kernel']):.3f})")
    print(f"{'  plain product over every user (reference)':45s} median {p:8.3f} s  "
          f"(min {min(kernel['plain']):.3f}, max {max(kernel['plain']):.3f}); "
          f"ratio {k / p:.2f}, the same bits")
    print(f"the request after the change showed the previous reading, being updated: "
          f"{sum(r['was_updating'] for r in results):.0f} of {len(results)} runs")
    print(f"the restarted store's statistics were current at once: "
          f"{sum(r['warm_current'] for r in results):.0f} of {len(results)} runs "
          f"(reference: the cold computation above, 'first full computation')")
    print(f"{'decoding one upload blob (store path)':45s} {decode_seconds():8.3f} s")
    counts = args.n_boot * sum(FOLD_USERS)
    print(f"resamples kept: {counts / 2**20:.0f} MiB (uint8 counts); tiers on the board: "
          f"{results[-1]['tiers']:.0f}; teams on the cost-quality front (expected): "
          f"{results[-1]['on_front']:.1f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of the process: {peak:.0f} MiB")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
