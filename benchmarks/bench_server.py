"""Leaderboard server: uploads/s and latency at 32 concurrent clients, and the board's latency
under that load, SQLite and PostgreSQL.

Starts ``python -m evaluation serve`` (exactly as organizers do) on the example competition
with a database seeded with ``--board-teams`` teams and ``--board-submissions`` submissions
(through the store and one SQL insert, see ``_board_load.seed``; each team's best submission
with synthetic per-user values on folds of ``--board-values-users`` users, so that the board has
its paired statistics, computed by the server's background thread), sends warm-up uploads, then
measures ``--uploads`` distinct valid submissions sent by ``--clients`` threads, each with its
own keep-alive connection, to ``serve --workers 2`` (``--workers``: one process per core of the
2-core machine it was written for), while other threads read the board page (``GET /``) and the
board API (``GET /api/v1/leaderboard``) in turn at ``--board-rate`` requests/s in all. Every
upload must be accepted (201) and every read answered 200. The backends are measured in
interleaved rounds (SQLite, PostgreSQL, SQLite, ...) so that a change in the machine's load
touches both; the table shows the median of the rounds with their min-max. The server's own CPU
time per upload (from /proc) is shown as well (it includes the board's reads), the peak memory
of its processes (each one's VmHWM, summed) and the machine's load average at the end of each
round. Before the uploads, the page and the API are read one at a time, each right after an
upload and then once more: the server's CPU per board made afresh (what every read costs while
uploads arrive) and the latency of one made afresh and of one answered again. ``--board-rate
0 --board-teams 0`` measures the uploads alone on a fresh database, as before the board part.

PostgreSQL is the throwaway server of ``_postgres.py`` (Debian's binaries, default settings:
fsync on); it is left out, with the reason, when it cannot be started. The clients, the server
and PostgreSQL share this machine's cores. Usage::

    python benchmarks/bench_server.py [--uploads 1000] [--rounds 3] [--clients 32]
        [--board-rate 20] [--board-teams 200] [--board-submissions 5000]
        [--board-values-users 2000] [--warm-up 64] [--board-alone 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._board_load import BoardReaders, seed  # noqa: E402
from benchmarks._postgres import PostgresUnavailable, start_postgres  # noqa: E402
from benchmarks._preloaded import PreloadedStarter  # noqa: E402
from benchmarks._serve import ServeProcess  # noqa: E402
from benchmarks._uploads import (  # noqa: E402
    base_submission,
    competition_copy,
    send_all,
    team_uploads,
)

GOAL_RATE, GOAL_P99_MS = 200.0, 250.0
#: The board page's and the board API's p99 under the upload load.
GOAL_BOARD_P99_MS = 100.0
TEAMS = 32
WARM_UP = 64
#: Board requests sent (page and API, to each server process) before the measurement.
BOARD_WARM_UP = 8
#: Reads of the page, then of the API, one at a time before the uploads, each after an upload
#: of its own: the server's CPU time per read and the latency without the load.
BOARD_ALONE = 20
#: What ``serve`` imports (the smoke run forks it from this process: ``_preloaded.py``).
SERVE_MODULES = ("evaluation.cli", "evaluation.cli._serve_app")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uploads", type=int, default=1000, help="measured uploads per round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per backend (median shown)")
    ap.add_argument("--clients", type=int, default=32, help="concurrent client threads")
    ap.add_argument("--workers", type=int, default=2,
                    help="server processes (serve --workers; default 2, one per core here)")
    ap.add_argument("--backends", default="sqlite,postgresql",
                    help="comma-separated: sqlite, postgresql")
    ap.add_argument("--board-rate", type=float, default=20.0,
                    help="board requests/s (page and API in turn) during the uploads; 0: none")
    ap.add_argument("--board-teams", type=int, default=200, help="teams in the database")
    ap.add_argument("--board-submissions", type=int, default=5000,
                    help="submissions in the database before the uploads")
    ap.add_argument("--board-values-users", type=int, default=2000,
                    help="users per fold of the synthetic per-user values seeded for each "
                         "team's best submission (the board's statistics); 0: none")
    ap.add_argument("--warm-up", type=int, default=WARM_UP,
                    help=f"uploads sent before each round's measurement (default {WARM_UP})")
    ap.add_argument("--board-alone", type=int, default=BOARD_ALONE,
                    help=f"reads of the page, then of the API, one at a time, each after an "
                         f"upload, before the measurement (default {BOARD_ALONE})")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing"
                         " (one small round on SQLite, the server forked from this process)")
    args = ap.parse_args()
    if args.smoke:
        args.uploads, args.rounds, args.clients, args.workers = 16, 1, 4, 1
        args.backends = "sqlite"
        args.board_rate, args.board_teams, args.board_submissions = 5.0, 10, 40
        args.board_values_users, args.warm_up, args.board_alone = 50, 4, 2
    try:
        import httpx  # noqa: F401

        import evaluation.server  # noqa: F401
    except ImportError as exc:
        print(f"bench_server: the server extra is missing ({exc.name}): "
              f"make server", file=sys.stderr)
        return 2

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results: dict[str, list[dict]] = {b: [] for b in backends}
    notes = []
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        folder = Path(tmp)
        # the server runs on the real clock: a copy whose phase is open now
        competition = competition_copy(folder, daily_limit=10**6,
                                       open_at=datetime.now(timezone.utc))
        postgres = None
        if "postgresql" in backends:
            try:
                postgres = start_postgres("bench")
            except PostgresUnavailable as exc:
                notes.append(f"PostgreSQL not measured: {exc}")
                backends.remove("postgresql")
        try:
            for r in range(args.rounds):
                for backend in backends:
                    url = (f"sqlite:///{folder / f'bench-{r}.db'}" if backend == "sqlite"
                           else _new_database(postgres.url, f"bench_{r}"))
                    result = measure(competition, url, folder / f"serve-{backend}-{r}.log",
                                     args.uploads, args.clients, args.workers, args)
                    results[backend].append(result)
                    print(f"  round {r + 1} {backend:10s} {result['rate']:7.1f} uploads/s  "
                          f"p50 {result['p50']:6.1f} ms  p99 {result['p99']:6.1f} ms  "
                          f"server CPU {result['cpu_ms']:5.2f} ms/upload  board p99 page "
                          f"{result.get('page_p99', float('nan')):6.1f} ms api "
                          f"{result.get('api_p99', float('nan')):6.1f} ms  "
                          f"({result.get('reads', 0)} reads; alone: page "
                          f"{result.get('page_cpu_ms', float('nan')):.1f} ms CPU, api "
                          f"{result.get('api_cpu_ms', float('nan')):.1f} ms CPU)  peak "
                          f"{result['rss_mib']:.0f} MiB  load {result['load']:.2f}", flush=True)
        finally:
            if postgres is not None:
                postgres.stop()
    report(results, args, notes)
    return 0


def measure(competition: Path, db_url: str, log: Path, uploads: int, clients: int,
            workers: int = 1, args: argparse.Namespace | None = None) -> dict:
    """One round on a fresh, seeded database: the upload rate and latencies, the board's
    latencies, the server's CPU time and peak memory (of all its processes: the supervisor and
    the workers) and the machine's load average at the end."""
    rate = 0.0 if args is None else args.board_rate
    warm_up = WARM_UP if args is None else args.warm_up
    board_alone = BOARD_ALONE if args is None else args.board_alone
    if args is not None and args.board_teams > 0:
        every = seed(db_url, competition, max(args.board_teams, TEAMS),
                     args.board_submissions, values_users=args.board_values_users)
        teams = dict(list(every.items())[:TEAMS])
    else:
        teams = _add_teams(db_url, TEAMS)
    alone = 2 * board_alone if rate > 0 else 0
    per_team = -(-(uploads + warm_up + alone) // TEAMS)
    jobs = team_uploads(base_submission(), teams, per_team, prefix="Bench", group=TEAMS)
    warm, measured = jobs[:warm_up], jobs[warm_up:warm_up + uploads]
    extra = jobs[warm_up + uploads:warm_up + uploads + alone]
    # the smoke run: the server forked from this process, which has imported it (3 CPU-s less)
    starter = (PreloadedStarter(SERVE_MODULES, method="fork")
               if args is not None and args.smoke else None)
    with ServeProcess(competition, db_url, log, args=["--workers", str(workers)],
                      starter=starter) as server:
        _check(send_all(server.url, warm, threads=clients, time_limit=120), len(warm))
        pids = _process_tree(server.process.pid)
        alone = {}
        if rate > 0:
            _check_reads(_warm_board(server.url, BOARD_WARM_UP * workers))
            alone = _board_alone(server.url, pids, extra)
        cpu0 = sum(_cpu_seconds(p) for p in pids)
        readers = BoardReaders(server.url, rate).start() if rate > 0 else None
        start = time.perf_counter()
        outcomes = send_all(server.url, measured, threads=clients, time_limit=300)
        wall = time.perf_counter() - start
        reads = readers.stop() if readers is not None else []
        cpu = sum(_cpu_seconds(p) for p in pids) - cpu0
        rss = sum(_peak_rss_mib(p) for p in pids)
    _check(outcomes, len(measured))
    _check_reads(reads)
    latencies = sorted(o.seconds * 1000 for o in outcomes)
    result = {"rate": len(outcomes) / wall, "p50": _percentile(latencies, 50),
              "p99": _percentile(latencies, 99), "cpu_ms": cpu / len(outcomes) * 1000,
              "rss_mib": rss, "load": os.getloadavg()[0], "reads": len(reads), **alone}
    for kind in ("page", "api"):
        times = sorted(r.seconds * 1000 for r in reads if r.kind == kind)
        if times:
            result[f"{kind}_p50"] = _percentile(times, 50)
            result[f"{kind}_p99"] = _percentile(times, 99)
    return result


def _warm_board(url: str, count: int) -> list:
    """``count`` reads of the page and of the API, back to back (templates compiled, caches
    filled, in every server process)."""
    import httpx

    from benchmarks._board_load import BOARD_PATHS, Read

    reads = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(count):
            for kind, path in BOARD_PATHS.items():
                begin = time.perf_counter()
                response = client.get(path, headers={"Connection": "close"})
                reads.append(Read(kind, response.status_code, len(response.content),
                                  time.perf_counter() - begin))
    return reads


def _board_alone(url: str, pids: list[int], writes: list) -> dict:
    """Reads of the page, then of the API, one at a time, each right after an upload (one of
    ``writes``, half for each): the server's CPU time per read and the median latency of a
    board made afresh (as under the uploads), and the median latency of the same read again
    (a board the process answers again, as between uploads)."""
    import httpx

    from benchmarks._board_load import BOARD_PATHS

    out: dict = {}
    count = len(writes) // len(BOARD_PATHS)
    with httpx.Client(base_url=url, timeout=60) as client:
        for k, (kind, path) in enumerate(BOARD_PATHS.items()):
            cpu, fresh, again = 0.0, [], []
            for upload in writes[k * count:(k + 1) * count]:
                _check(send_all(url, [upload], threads=1, time_limit=60), 1)
                cpu0 = sum(_cpu_seconds(p) for p in pids)
                fresh.append(_timed_get(client, path))
                cpu += sum(_cpu_seconds(p) for p in pids) - cpu0
                again.append(_timed_get(client, path))
            out[f"{kind}_cpu_ms"] = cpu / count * 1000
            out[f"{kind}_fresh_p50"] = statistics.median(fresh)
            out[f"{kind}_again_p50"] = statistics.median(again)
    return out


def _timed_get(client, path: str) -> float:
    """Milliseconds of one GET (which must answer 200)."""
    begin = time.perf_counter()
    response = client.get(path)
    if response.status_code != 200:
        raise SystemExit(f"bench_server: GET {path} answered {response.status_code}")
    return (time.perf_counter() - begin) * 1000


def _check_reads(reads: list) -> None:
    bad = [(r.kind, r.status) for r in reads if r.status != 200]
    if bad:
        raise SystemExit(f"bench_server: {len(bad)} of {len(reads)} board reads not answered "
                         f"200, e.g. {bad[:3]}")


def report(results: dict[str, list[dict]], args, notes: list[str]) -> None:
    measured = {b: rs for b, rs in results.items() if rs}
    print(f"\n{args.uploads} uploads per round, {args.clients} concurrent clients (threads, "
          f"keep-alive), {args.rounds} interleaved rounds: median (min-max); `serve --workers "
          f"{args.workers}`.\nDatabase seeded with {args.board_teams} teams and "
          f"{args.board_submissions} submissions; board read at {args.board_rate:g} "
          f"requests/s (page and API in turn) during the uploads.\nThe server, PostgreSQL "
          f"and the client threads share this machine's {os.cpu_count()} cores.")
    names = list(measured)
    header = f"{'':24s}" + "".join(f"{n:>26s}" for n in names)
    if len(names) == 2:
        header += f"{names[1] + ' / ' + names[0]:>26s}"
    print(header)
    for key, label, fmt in (("rate", "uploads/s", "{:.0f}"), ("p50", "p50 latency (ms)", "{:.1f}"),
                            ("p99", "p99 latency (ms)", "{:.1f}"),
                            ("page_p50", "board page p50 (ms)", "{:.1f}"),
                            ("page_p99", "board page p99 (ms)", "{:.1f}"),
                            ("api_p50", "board API p50 (ms)", "{:.1f}"),
                            ("api_p99", "board API p99 (ms)", "{:.1f}"),
                            ("cpu_ms", "server CPU (ms/upload)", "{:.2f}"),
                            ("page_cpu_ms", "page alone: CPU (ms)", "{:.1f}"),
                            ("page_fresh_p50", "page alone: made p50", "{:.1f}"),
                            ("page_again_p50", "page alone: again p50", "{:.1f}"),
                            ("api_cpu_ms", "API alone: CPU (ms)", "{:.1f}"),
                            ("api_fresh_p50", "API alone: made p50", "{:.1f}"),
                            ("api_again_p50", "API alone: again p50", "{:.1f}"),
                            ("rss_mib", "server peak RSS (MiB)", "{:.0f}"),
                            ("load", "load average (1 min)", "{:.2f}")):
        if not all(key in r for rs in measured.values() for r in rs):
            continue
        line = f"{label:24s}"
        medians = []
        for n in names:
            values = [r[key] for r in measured[n]]
            med = statistics.median(values)
            medians.append(med)
            cell = (f"{fmt.format(med)} ({fmt.format(min(values))}-"
                    f"{fmt.format(max(values))})")
            line += f"{cell:>26s}"
        if len(names) == 2:
            line += f"{medians[1] / medians[0]:>25.2f}x"
        print(line)
    if "sqlite" in measured:
        rate = statistics.median(r["rate"] for r in measured["sqlite"])
        p99 = statistics.median(r["p99"] for r in measured["sqlite"])
        met = rate >= GOAL_RATE and p99 <= GOAL_P99_MS
        print(f"goal on SQLite: >= {GOAL_RATE:.0f} uploads/s and p99 <= {GOAL_P99_MS:.0f} ms: "
              f"{'met' if met else 'NOT met'} ({rate:.0f} uploads/s, p99 {p99:.0f} ms)")
        for kind, label in (("page", "board page"), ("api", "board API")):
            if all(f"{kind}_p99" in r for r in measured["sqlite"]):
                board = statistics.median(r[f"{kind}_p99"] for r in measured["sqlite"])
                print(f"goal on SQLite: {label} p99 <= {GOAL_BOARD_P99_MS:.0f} ms under that "
                      f"load: {'met' if board <= GOAL_BOARD_P99_MS else 'NOT met'} "
                      f"(p99 {board:.0f} ms)")
    for note in notes:
        print(note)


def _add_teams(db_url: str, count: int) -> dict[str, str]:
    from evaluation.server.db import Database, add_team, make_engine, upgrade

    engine = make_engine(db_url)
    try:
        upgrade(engine)
        store = Database(engine)
        return {f"Bench team {i}": add_team(store, f"Bench team {i}", f"b{i}@example.org")[1]
                for i in range(count)}
    finally:
        engine.dispose()


def _new_database(server_url: str, name: str) -> str:
    import sqlalchemy as sa

    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _check(outcomes, expected: int) -> None:
    bad = [(o.status, o.error or o.answer) for o in outcomes if o.status != 201]
    if len(outcomes) != expected or bad:
        raise SystemExit(f"bench_server: {len(outcomes)} of {expected} uploads answered; "
                         f"{len(bad)} not accepted, e.g. {bad[:2]}")


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            children = []
        todo += [int(c) for c in children]
    return out


def _peak_rss_mib(pid: int) -> float:
    """The peak resident memory of a process so far (VmHWM, Linux /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile, nearest rank (the value below which q % of the requests fall)."""
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


if __name__ == "__main__":
    sys.exit(main())
