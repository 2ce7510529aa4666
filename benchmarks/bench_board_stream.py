"""The board's latency at 200 teams while organizer-computed rows arrive, on loopback.

What a team sees of the leaderboard while the scoring jobs finish one after the other: the
board page (``GET /``) and its JSON (``GET /api/v1/leaderboard``) read by client threads at a
steady ``--rate`` from ``python -m evaluation serve --workers 2`` (as organizers start it, on
127.0.0.1, SQLite), while ``--rows`` new trusted rows arrive, one every ``--every`` seconds:
each a team's new best submission with organizer-computed per-user values (what a scoring
job writes), so that each server process computes that team's replicates and the board's
reading again in its background thread. The latency of every read is kept; the figures are
the p50 and p99 of the reads while the rows arrive, beside those of the same readers on the
same server with nothing arriving (the reference, measured first in each run), and their
ratio.

Bounded in time: the database of ``--teams`` teams (each one best submission with synthetic
per-user values on 4 folds of ``--users`` test users, the same users and slice groups for
every team, hit rates spread over the teams, and measured costs) and the board's statistics
are made once, in this process (the board's own computation, kept in the database as a
restarted server reads it back), and each run starts the server on a copy of that database:
it shows the statistics at once and computes only what the arriving rows change. Each of
``--runs`` runs takes about ``--quiet`` + ``--rows`` x ``--every`` seconds; medians of the runs
with min-max. Every read must be answered 200. The server's peak memory (each process's
VmHWM, summed) and the machine's load are shown beside the figures. Usage::

    python benchmarks/bench_board_stream.py            # 200 teams, full-scale folds
    python benchmarks/bench_board_stream.py --smoke    # tiny: does it run?

The smoke run forks the server from the benchmark's process (``_preloaded.py``: its imports
done once); the measured runs start it as a fresh interpreter, as organizers do.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._board_load import BoardReaders, seed, values_blob  # noqa: E402
from benchmarks._preloaded import PreloadedStarter  # noqa: E402
from benchmarks._serve import ServeProcess  # noqa: E402
from benchmarks._uploads import competition_copy  # noqa: E402

GOAL_P99_MS = 100.0
#: Reads of the page and of the API before the measurement (templates, caches, statistics).
WARM_READS = 4
#: What ``serve`` imports (the smoke run forks it from this process: ``_preloaded.py``).
SERVE_MODULES = ("evaluation.cli", "evaluation.cli._serve_app")


def prepare(folder: Path, teams: int, users: int, n_boot: int) -> tuple[Path, Path, float]:
    """The competition copy and the database with the board's statistics computed and kept;
    and the seconds the computation took."""
    import sqlalchemy as sa

    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, UserValuesRow, make_engine
    from evaluation.server.standings import StoreValues, board_now, stop_standings
    from evaluation.server.store import phase_board

    competition = competition_copy(folder, 1000, open_at=datetime.now(timezone.utc),
                                   board={"n_boot": n_boot})
    template = folder / "template.db"
    url = f"sqlite:///{template}"
    seed(url, competition, teams, teams, values_users=users)
    engine = make_engine(url)
    store = Database(engine, load_competition(competition))
    with store.writing() as session:  # measured costs, as a reproduction's (the front's)
        found = session.execute(sa.select(UserValuesRow.id, UserValuesRow.n_users)
                                .where(UserValuesRow.trusted.is_(True))).all()
        for i, (row_id, sizes) in enumerate(found):
            session.execute(sa.update(UserValuesRow).where(UserValuesRow.id == row_id)
                            .values(costs=[_cost(i)] * len(sizes)))
    start = time.perf_counter()
    board = phase_board(store, None)
    shown = board_now(store, board, StoreValues(store), wait=24 * 3600.0)
    assert shown.standings is not None and shown.standings.compared == teams, shown.standings
    took = time.perf_counter() - start
    stop_standings(store)
    engine.dispose()
    return competition, template, took


def _cost(team: int) -> dict:
    """A team's measured costs of one fold (spread over the teams, unrelated to skill)."""
    import numpy as np

    rng = np.random.default_rng([20_000, team])
    return {"train_seconds": float(rng.uniform(10, 600)),
            "predict_seconds": float(rng.uniform(1, 60)),
            "peak_rss_mib": float(rng.uniform(500, 8000))}


def arriving(url: str, rows: int, users: int) -> list[tuple[int, dict, dict]]:
    """The rows that will arrive: per row, the team's id, its new submission's columns (a
    copy of its best, a little better) and its trusted values' columns (new values)."""
    import sqlalchemy as sa

    from evaluation.server.db import SubmissionRow, UserValuesRow, make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            best = conn.execute(sa.select(SubmissionRow.__table__).join(
                UserValuesRow, UserValuesRow.submission_id == SubmissionRow.id
            ).where(UserValuesRow.trusted.is_(True))
                .order_by(SubmissionRow.leaderboard_score.desc())).mappings().all()
            values = {r["submission_id"]: dict(r) for r in conn.execute(
                sa.select(UserValuesRow.__table__).where(UserValuesRow.trusted.is_(True))
            ).mappings()}
    finally:
        engine.dispose()
    out = []
    for i in range(rows):
        row = dict(best[(7 * i) % len(best)])  # teams all over the board
        old = values[row["id"]]
        blob = values_blob(1000 + i, len(old["n_users"]), users, 0.05 + 0.3 * (i % 5) / 5)
        del row["id"]
        row.update(run_id=f"Stream-{i}", leaderboard_score=row["leaderboard_score"] + 0.01,
                   computed=True)
        new_values = {k: v for k, v in old.items() if k not in ("id", "submission_id")}
        new_values.update(blob=blob, blob_sha256=hashlib.sha256(blob).hexdigest())
        out.append((row["team_id"], row, new_values))
    return out


def add_row(url: str, row: dict, values: dict) -> None:
    """One arriving row: the submission and its trusted values in one transaction (as a
    scoring job's result is written)."""
    import sqlalchemy as sa

    from evaluation.server.db import SubmissionRow, UserValuesRow, make_engine

    engine = make_engine(url)
    try:
        now = datetime.now(timezone.utc)
        with engine.begin() as conn:
            new_id = conn.execute(sa.insert(SubmissionRow).values(
                **{**row, "submitted_at": now}).returning(SubmissionRow.id)).scalar_one()
            conn.execute(sa.insert(UserValuesRow).values(
                **{**values, "submission_id": new_id, "recorded_at": now}))
    finally:
        engine.dispose()


def one_run(competition: Path, template: Path, folder: Path, args: argparse.Namespace,
            run: int) -> dict:
    """One run on a copy of the database: the quiet reads, then the reads while the rows
    arrive; latencies in ms."""
    db = folder / f"run-{run}.db"
    shutil.copyfile(template, db)
    url = f"sqlite:///{db}"
    rows = arriving(url, args.rows, args.users)
    log = folder / f"serve-{run}.log"
    # the smoke run: the server forked from this process, which has imported it (3 CPU-s less)
    starter = PreloadedStarter(SERVE_MODULES, method="fork") if args.smoke else None
    with ServeProcess(competition, url, log, args=["--workers", str(args.workers)],
                      starter=starter) as server:
        _wait_shown(server.url, args.teams)
        readers = BoardReaders(server.url, args.rate).start()
        time.sleep(args.quiet)
        quiet_end = time.perf_counter()
        for _, row, values in rows:
            add_row(url, row, values)
            time.sleep(args.every)
        reads = readers.stop()
        pids = _process_tree(server.process.pid)
        rss = sum(_peak_rss_mib(p) for p in pids)
    bad = [r for r in reads if r.status != 200]
    if bad:
        raise SystemExit(f"{len(bad)} of {len(reads)} reads were not answered 200 (first: "
                         f"{bad[0]}); see {log}")
    # a read belongs to the phase it started in (its end is its start plus its latency)
    ends = [(r, r.ended - r.seconds) for r in reads]
    quiet = sorted(r.seconds * 1000 for r, began in ends if began < quiet_end)
    stream = sorted(r.seconds * 1000 for r, began in ends if began >= quiet_end)
    return {"quiet_p50": _pct(quiet, 50), "quiet_p99": _pct(quiet, 99),
            "stream_p50": _pct(stream, 50), "stream_p99": _pct(stream, 99),
            "reads": float(len(stream)), "rss_mib": rss, "load": os.getloadavg()[0]}


def _wait_shown(url: str, teams: int, timeout: float = 600.0) -> None:
    """Until the board's JSON shows the statistics of every team, current (the page and the
    API read a few times: every process warm)."""
    import httpx

    ends = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=60) as client:
        while True:
            board = client.get("/api/v1/leaderboard").json()
            standings = board.get("standings") or {}
            if standings.get("compared") == teams and not standings.get("updating"):
                break
            if time.monotonic() > ends:
                raise SystemExit(f"the board showed no statistics within {timeout:g} s: "
                                 f"{standings}")
            time.sleep(0.2)
        for _ in range(WARM_READS):
            for path in ("/", "/api/v1/leaderboard"):
                assert client.get(path, headers={"Connection": "close"}).status_code == 200


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q / 100 * len(values)))]


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its children (``serve --workers`` starts one process per worker)."""
    out = [pid]
    for child in Path("/proc").glob("[0-9]*"):
        try:
            stat = (child / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(child.name))
    return out


def _peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _spread(values: list[float], fmt: str = "{:.0f}") -> str:
    return (f"{fmt.format(statistics.median(values))} "
            f"({fmt.format(min(values))}-{fmt.format(max(values))})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teams", type=int, default=200)
    ap.add_argument("--users", type=int, default=29_900, help="test users per fold")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=8, help="rows arriving per run")
    ap.add_argument("--every", type=float, default=3.0, help="seconds between two rows")
    ap.add_argument("--quiet", type=float, default=10.0,
                    help="seconds of reads with nothing arriving (the reference)")
    ap.add_argument("--rate", type=float, default=10.0, help="board reads per second")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="serve --workers")
    ap.add_argument("--smoke", action="store_true", help="tiny, once: does it run?")
    args = ap.parse_args()
    if args.smoke:
        args.teams, args.users, args.n_boot, args.rows = 6, 300, 100, 2
        args.every, args.quiet, args.rate, args.runs, args.workers = 0.3, 1.5, 5.0, 1, 1
    print(f"{args.teams} teams, 4 folds of {args.users} users, {args.n_boot} replicates; "
          f"{args.rows} rows, one every {args.every:g} s; reads at {args.rate:g}/s; "
          f"serve --workers {args.workers}; load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores at the start")
    with tempfile.TemporaryDirectory(prefix="evalrs-bench-stream-") as tmp:
        folder = Path(tmp)
        competition, template, took = prepare(folder, args.teams, args.users, args.n_boot)
        print(f"the board made and its statistics computed once: {took:.1f} s "
              f"(load {os.getloadavg()[0]:.1f})")
        results = [one_run(competition, template, folder, args, r) for r in range(args.runs)]
    print(f"{'':34s} {'p50 ms':>18} {'p99 ms':>18}")
    for side, label in (("quiet", "nothing arriving (reference)"),
                        ("stream", "while scored rows arrive")):
        print(f"{label:34s} {_spread([r[f'{side}_p50'] for r in results]):>18} "
              f"{_spread([r[f'{side}_p99'] for r in results]):>18}")
    ratio = [r["stream_p99"] / r["quiet_p99"] for r in results]
    p99 = statistics.median(r["stream_p99"] for r in results)
    print(f"p99 while rows arrive / quiet: {_spread(ratio, '{:.2f}')}; reads while rows "
          f"arrive per run: {_spread([r['reads'] for r in results])}")
    print(f"server peak memory (all processes): {_spread([r['rss_mib'] for r in results])} "
          f"MiB; load at the end of each run: {_spread([r['load'] for r in results], '{:.1f}')}")
    print(f"goal: p99 <= {GOAL_P99_MS:.0f} ms while rows arrive: "
          f"{'met' if p99 <= GOAL_P99_MS else 'missed'} ({p99:.0f} ms)")


if __name__ == "__main__":
    main()
