"""The season's dress rehearsal: a simulated challenge from the first upload to the reveal.

    python benchmarks/bench_competition.py                      # 50 teams x 10, SQLite + PostgreSQL
    python benchmarks/bench_competition.py --backends sqlite    # one database
    python benchmarks/bench_competition.py --smoke              # 3 teams x 2, tiny data, SQLite

On each database, a live leaderboard (``python -m evaluation serve``, its own process) runs a
competition of two phases on the synthetic ``small`` dataset: "season" (public) and "finals"
(hidden until the reveal, its finals reproduced on the private folds). ``--teams`` teams
(50) each upload ``--per-team`` predictions (10: half to each phase), as ``evalrs submit``
uploads them (``post_predictions``, its retries and ``Idempotency-Key``; the uploads are
``--variants`` real runs of a noisy popularity model, each sent under its own run id), four
uploaders at once; each upload is scored by a scoring job. Two workers
(``_rehearsal_worker.py``: ``evaluation.reproduce.Worker`` with the local executor, real
scoring jobs, stand-in reproduction runs of ``--reproduce-s`` seconds; see that module) take
the jobs through the organizers' API. Meanwhile board readers read the page and the API.
The smoke mode starts its commands (the server and its restarts, the workers, ``admin``) as
processes forked from one that imported the harness once (``_preloaded.py``); the full runs
start each one as a fresh interpreter, as an organizer does.

The season, step by step (each a function of its own, named as below):

1. ``season_uploads``: the first phase's uploads; a third of the way in, the server is
   restarted (``restart_server``: SIGTERM, a new process on the same database and port).
2. ``mark_finals``: each team marks its last upload of the phase as its final selection.
3. ``carry_over``: the second phase carries the first one's finals over (``carry_from``).
4. ``finals_uploads``: the second phase's uploads; halfway, a worker holding a job is killed
   with SIGKILL (``kill_worker``) and a new one started: its lease runs out and the other
   worker takes the job over.
5. ``mark_finals`` again, then ``wait_reproduced``: every final reproduced.
6. ``rescore_after_fix``: a harness fix, and ``admin rescore`` of the finals phase.
7. ``reveal``: ``admin phase reveal finals --close-now``; the final board is printed.

The report: submissions lost (acknowledged or sent, and not in the database: must be
0), jobs run twice (a submission whose scoring or reproduction was recorded more than once:
must be 0), the runs taken over after the kill, the seconds from the first final of the
finals marked until every final was reproduced, the board's p99 during the season (page and
API, the reads that the restart refused counted apart), the server's peak resident memory
(either process), and the final board. Exit status 1 when a submission was lost or a job run twice.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

import numpy as np  # noqa: E402

from benchmarks._board_load import BoardReaders  # noqa: E402
from benchmarks._checkout import template_checkout  # noqa: E402
from benchmarks._postgres import PostgresUnavailable, start_postgres  # noqa: E402
from benchmarks._preloaded import Child, PreloadedStarter  # noqa: E402
from benchmarks._serve import ServeProcess  # noqa: E402

PHASES = ("season", "finals")
#: The private fold seed the workers hold (the finals are reproduced on the private folds).
PRIVATE_SEED = 20260601
#: Seconds a worker's lease lasts: short, so that a killed worker's job is taken over soon.
LEASE_S = 4.0
#: Seconds to wait for every job to end before giving up (``--wait-s``).
WAIT_S = 3600.0
#: What the smoke mode's commands (``serve``, its restarts, the workers, ``admin``) import
#: once, in the process they are forked from (``_preloaded.py``).
PRELOAD = ("evaluation.cli", "evaluation.cli.admin", "evaluation.cli._serve_app",
           "evaluation.cli._admin_rescore", "evaluation.cli._admin_phases",
           "evaluation.reproduce", "evaluation.challenge", "httpx")


@dataclass
class Season:
    """What the steps share: the server, the teams, the workers and what happened."""

    folder: Path
    competition: Path
    db_url: str
    admin: str
    teams: dict[str, str]
    uploads: list[tuple[str, str, bytes, str]]
    server: ServeProcess
    finals_file: Callable[[datetime], Path] | None = None
    workers: dict[str, subprocess.Popen | Child] = field(default_factory=dict)
    sent: set[tuple[str, str]] = field(default_factory=set)
    acknowledged: set[tuple[str, str]] = field(default_factory=set)
    upload_errors: list[str] = field(default_factory=list)
    peak_rss: int = 0
    steps: dict[str, str] = field(default_factory=dict)
    restarts: list[float] = field(default_factory=list)
    wait_s: float = WAIT_S
    started: float = field(default_factory=time.monotonic)
    killed: str | None = None
    killed_jobs: list[int] = field(default_factory=list)
    marked_at: float = 0.0
    reproduced_s: float | None = None
    carried: tuple[int, int] | None = None
    rescore: tuple[str, float] | None = None
    twice_before: int | None = None
    #: How the commands start (the smoke mode's), None: fresh interpreters.
    starter: PreloadedStarter | None = None


# --------------------------------------------------------------------------- the data


class NoisyPopularity:
    """The fold's most played tracks, ranked with Gaussian noise of scale ``noise`` on their
    places (seeded): ``noise`` 0 is the popularity baseline, more is worse."""

    def __init__(self, noise: float, seed: int, k: int = 100, pool: int = 300) -> None:
        self.noise, self.seed, self.k, self.pool = noise, seed, k, pool
        self.top: np.ndarray | None = None

    def train(self, train_df, **kwargs) -> None:
        self.top = train_df["track_id"].value_counts().index.to_numpy()[:self.pool]

    def predict(self, user_ids):
        from evaluation.predictions import predictions_frame

        assert self.top is not None
        users = user_ids["user_id"].to_numpy()
        rng = np.random.default_rng([self.seed, len(users)])
        keys = np.arange(len(self.top))[None, :] + self.noise * rng.standard_normal(
            (len(users), len(self.top)))
        items = self.top[np.argsort(keys, axis=1)[:, :self.k]]
        return predictions_frame(user_ids["user_id"], items, self.k)


def write_competition(path: Path, scale: str, fingerprint: str, fold_params: dict,
                      version: str, per_phase: int, switch: datetime) -> Path:
    """Two phases on the data of ``scale``: "season" (public) until ``switch``, then "finals"
    (hidden until the reveal, its finals reproduced on the private folds; it carries the
    season's finals over); one final each.

    The server follows the wall clock and phases may not overlap: the season's file has the
    switch a day away, and the finals' file (written when the season ends) has it now."""
    now = datetime.now(timezone.utc).replace(microsecond=0)

    def stamp(moment: datetime) -> str:
        return moment.isoformat().replace("+00:00", "Z")

    lines = ['name = "dress rehearsal"', f'harness_versions = ["{version}"]',
             "reproduce_attempts = 5", "[dataset]", f'fingerprint = "{fingerprint}"',
             "[dataset.fold_params]",
             *(f"{k} = {json.dumps(v)}" for k, v in fold_params.items())]
    windows = {"season": (now - timedelta(hours=1), switch),
               "finals": (switch, switch + timedelta(days=2))}
    for name, public in (("season", True), ("finals", False)):
        opens, closes = windows[name]
        lines += ["[[phases]]", f'name = "{name}"', f"opens = {stamp(opens)}",
                  f"closes = {stamp(closes)}", f'references = "synthetic-{scale}"',
                  f"daily_limit = {per_phase + 5}",
                  f"public = {'true' if public else 'false'}", "final_selections = 1",
                  'reproduce = "final"', f"private_folds = {'false' if public else 'true'}"]
        if not public:  # the finals carry the season's final selections over
            lines += [f'carry_from = "{PHASES[0]}"', 'carry = "finals"']
    path.write_text("\n".join(lines) + "\n")
    return path


def prepare(scale: str, folder: Path, variants: int, per_phase: int
            ) -> tuple[Path, Callable[[datetime], Path], list]:
    """The season's competition file, how to write the finals' one (given the switch), and
    ``variants`` predictions uploads (claim, body) of real runs."""
    from evaluation import ChallengeDataset, EvalRSRunner, __version__
    from evaluation.contract import submission_payload
    from evaluation.runner import predictions_body

    warnings.simplefilter("ignore")
    ds = ChallengeDataset(source="synthetic", scale=scale)
    def competition_at(switch: datetime, name: str = "competition-finals.toml") -> Path:
        return write_competition(folder / name, scale, ds.fingerprint, ds.fold_params,
                                 __version__, per_phase, switch)

    competition = competition_at(datetime.now(timezone.utc).replace(microsecond=0)
                                 + timedelta(days=1), "competition.toml")
    made = []
    for v in range(variants):
        runner = EvalRSRunner(ds, results_dir=str(folder / f"results-{v}"), progress=False,
                              verbose=False, competition=competition)
        result = runner.evaluate(NoisyPopularity(noise=4.0 * v, seed=v, k=runner.k))
        results = json.loads(json.dumps(result.to_dict()))
        claim = submission_payload(results, email=None, participant_id=None)
        made.append((claim, predictions_body(claim, results, Path(str(result.path)).parent)))
    return competition, competition_at, made


def setup_database(db_url: str, competition: Path, teams: int) -> tuple[str, dict[str, str]]:
    """Migrate the database, add the teams; the organizers' token and ``{team: token}``."""
    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, add_team, create_admin_token, make_engine, upgrade

    engine = make_engine(db_url)
    try:
        upgrade(engine)
        store = Database(engine, load_competition(competition))
        tokens = {f"Team{i:02d}": add_team(store, f"Team{i:02d}", f"t{i}@example.org")[1]
                  for i in range(teams)}
        return create_admin_token(store), tokens
    finally:
        engine.dispose()


def plan_uploads(teams: dict[str, str], made: list, per_team: int
                 ) -> list[tuple[str, str, bytes, str]]:
    """(team, phase, body, run id) of every upload, teams interleaved, each phase's half in
    turn; each team's k-th upload is variant ``(team + k) % variants`` under its own run id."""
    from evaluation.contract import with_claim

    plan = []
    for k in range(per_team):
        phase = PHASES[0] if k < per_team // 2 else PHASES[1]
        for i, team in enumerate(teams):
            claim, body = made[(i + k) % len(made)]
            run_id = f"{team}-{phase}-{k}"
            sent = with_claim(body, {**claim, "run_id": run_id,
                                     "results": {**claim["results"], "run_id": run_id}})
            plan.append((team, phase, sent, run_id))
    return plan


# --------------------------------------------------------------------------- the processes


def start_worker(season: Season, name: str, reproduce_s: float) -> None:
    """A worker process (``_rehearsal_worker.py``) named ``name``."""
    token_file = season.folder / "admin.token"
    token_file.write_text(season.admin)
    argv = [str(REPO / "benchmarks" / "_rehearsal_worker.py"), season.server.url,
            str(token_file), str(season.folder / "checkouts"), name, str(LEASE_S),
            str(reproduce_s), str(PRIVATE_SEED)]
    if season.starter is not None:
        season.workers[name] = season.starter.start(
            argv, cwd=REPO, stdout=season.folder / f"worker-{name}.log")
        return
    log = open(season.folder / f"worker-{name}.log", "ab")
    season.workers[name] = subprocess.Popen([sys.executable, *argv], cwd=REPO, stdout=log,
                                            stderr=subprocess.STDOUT)
    log.close()


def server_peak(server: ServeProcess) -> int:
    """The server process's peak resident memory so far (bytes; ``VmHWM``)."""
    try:
        with open(f"/proc/{server.process.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def restart_server(season: Season) -> None:
    """SIGTERM the server and start a new one on the same database and port."""
    season.peak_rss = max(season.peak_rss, server_peak(season.server))
    port = season.server.port
    down = time.monotonic()
    season.server.stop()
    season.server = ServeProcess(season.competition, season.db_url,
                                 season.folder / "serve.log", port=port,
                                 starter=season.starter)
    season.restarts.append(time.monotonic() - down)


def open_finals(season: Season) -> None:
    """End the season and open the finals: the competition file with the switch now, served
    by a restarted server (the organizers' way to move a phase's dates)."""
    assert season.finals_file is not None
    switch = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=1)
    season.competition = season.finals_file(switch)
    restart_server(season)
    time.sleep(max(0.0, (switch - datetime.now(timezone.utc)).total_seconds()) + 0.05)


def kill_worker(season: Season, name: str, reproduce_s: float, replace: bool) -> None:
    """SIGKILL worker ``name`` while it holds a job (waiting a few seconds for one), and
    start another in its place when ``replace``."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        held = [w for w in queue(season)["workers"] if w["name"] == name]
        if held and held[0]["current_jobs"]:
            season.killed_jobs = list(held[0]["current_jobs"])
            break
        time.sleep(0.05)
    season.workers[name].send_signal(signal.SIGKILL)
    season.workers[name].wait(30)
    season.killed = name
    if replace:
        start_worker(season, f"{name}-after-kill", reproduce_s)


def queue(season: Season) -> dict:
    """The organizers' overview of the queue (``GET /api/v1/queue``)."""
    import httpx

    reply = httpx.get(season.server.url + "/api/v1/queue", timeout=30,
                      headers={"Authorization": f"Bearer {season.admin}"})
    reply.raise_for_status()
    return reply.json()


# --------------------------------------------------------------------------- the steps


def send(season: Season, uploads: list, at: dict[int, Callable[[Season], None]]) -> None:
    """Send ``uploads`` four at a time; ``at[n]`` runs once ``n`` of them were sent. An
    upload the client gives up on (a restart longer than its retries) is sent again under
    the same run id, for up to a minute: the server keeps one submission per run id."""
    from evaluation.errors import EvalRSError
    from evaluation.runner import post_predictions

    def one(upload: tuple[str, str, bytes, str]) -> None:
        team, phase, body, run_id = upload
        season.sent.add((phase, run_id))
        deadline = time.monotonic() + 60
        while True:
            try:
                post_predictions(f"{season.server.url}/api/v1/phases/{phase}/submissions",
                                 body, run_id, token=season.teams[team], log=lambda m: None)
                season.acknowledged.add((phase, run_id))
                return
            except EvalRSError as exc:
                if time.monotonic() > deadline:
                    season.upload_errors.append(f"{run_id}: {exc}")
                    return
                time.sleep(0.5)

    done = 0
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, len(uploads), 4):
            list(pool.map(one, uploads[start:start + 4]))
            done = start + 4
            for n in sorted(at):
                if n <= done:
                    at.pop(n)(season)


def season_uploads(season: Season) -> None:
    """The first phase's uploads, the server restarted a third of the way in."""
    mine = [u for u in season.uploads if u[1] == PHASES[0]]
    send(season, mine, {len(mine) // 3: restart_server})


def finals_uploads(season: Season, reproduce_s: float, replace: bool) -> None:
    """The second phase's uploads, a worker killed (SIGKILL) halfway."""
    mine = [u for u in season.uploads if u[1] == PHASES[1]]
    send(season, mine, {len(mine) // 2: lambda s: kill_worker(s, "worker-a", reproduce_s,
                                                               replace)})


def mark_finals(season: Season, phase: str) -> None:
    """Each team marks its last upload of ``phase`` as its final selection (the clock of
    ``wait_reproduced`` starts with the first mark)."""
    import httpx

    season.marked_at = time.monotonic()
    with httpx.Client(base_url=season.server.url, timeout=60) as client:
        for team, token in season.teams.items():
            auth = {"Authorization": f"Bearer {token}"}
            listing = client.get("/api/v1/submissions", params={"phase": phase},
                                 headers=auth).json()["submissions"]
            if not listing:
                continue
            newest = max(listing, key=lambda s: s["submission_id"])
            reply = client.put(f"/api/v1/submissions/{newest['submission_id']}/final",
                               headers=auth)
            if reply.status_code != 200:
                raise SystemExit(f"{team} could not mark its final of {phase}: {reply.text}")


def carry_over(season: Season) -> None:
    """The finals phase carries the season's finals over (its competition file: ``carry_from
    = "season"``, ``carry = "finals"``): ``POST /api/v1/phases/finals/carry`` carries them now
    (or says the server did when the phase opened; nothing is carried twice); each carried
    submission is scored again on its kept predictions and queued for reproduction."""
    import httpx

    reply = httpx.post(f"{season.server.url}/api/v1/phases/{PHASES[1]}/carry", timeout=300,
                       headers={"Authorization": f"Bearer {season.admin}"})
    if reply.status_code not in (200, 201):
        raise SystemExit(f"the carry into {PHASES[1]} failed (HTTP {reply.status_code}): "
                         f"{reply.text[:500]}")
    answer = reply.json()
    season.carried = (int(answer["carried"]), len(answer["skipped"]))


def wait_idle(season: Season, kinds: tuple[str, ...]) -> dict:
    """Wait until no job of ``kinds`` is queued or running; the queue's last overview."""
    deadline = time.monotonic() + season.wait_s
    while True:
        overview = queue(season)
        busy = sum(e["queued"] + e["running"] for e in overview["estimates"]
                   if e["kind"] in kinds)
        if busy == 0:
            return overview
        if time.monotonic() > deadline:
            raise SystemExit(f"{busy} job(s) still waiting after {season.wait_s:.0f} s: "
                             f"{json.dumps(overview['counts'])}")
        time.sleep(0.1)


def wait_reproduced(season: Season) -> None:
    """Wait until every final's reproduction ended; the seconds since the first mark of the
    finals' selections."""
    wait_idle(season, ("reproduce", "score"))
    season.reproduced_s = time.monotonic() - season.marked_at


def rescore_after_fix(season: Season) -> None:
    """A harness fix, then ``admin rescore --phase finals --yes``: every scored submission of
    the phase is scored again by the workers (rescore jobs), the table of what changes is
    shown, and applied; the phase's reproductions are queued again and waited for.

    The fix is a stand-in: the same harness scores again, so no score may change (the
    rehearsal checks the procedure, not a fix)."""
    season.twice_before = counts(season.db_url)["twice"]
    began = time.monotonic()
    done = admin(season, ["rescore", "--phase", PHASES[1], "--competition",
                          str(season.competition), "--wait", str(season.wait_s), "--yes"],
                 season.wait_s + 300)
    if done.returncode != 0:
        raise SystemExit(f"the rescore failed (exit {done.returncode}):\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
    summary = [line for line in done.stdout.splitlines() if "change score or rank" in line]
    wait_idle(season, ("reproduce", "score", "rescore"))
    season.rescore = (summary[-1] if summary else "no summary printed",
                      time.monotonic() - began)


def admin(season: Season, words: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``python -m evaluation admin --db URL *words``, its output captured."""
    argv = ["-m", "evaluation", "admin", "--db", season.db_url, *words]
    if season.starter is not None:
        return season.starter.run(argv, cwd=REPO, logs=season.folder / f"admin-{words[0]}",
                                  timeout=timeout)
    return subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def reveal(season: Season) -> list[dict]:
    """Reveal the finals phase (closing it now); its board's rows."""
    import httpx

    done = admin(season, ["phase", "reveal", PHASES[1], "--close-now", "--competition",
                          str(season.competition), "--yes"], 300)
    if done.returncode != 0:
        raise SystemExit(f"the reveal failed:\n{done.stdout}\n{done.stderr}")
    reply = httpx.get(season.server.url + "/api/v1/leaderboard", params={"phase": PHASES[1]},
                      timeout=60)
    reply.raise_for_status()
    return reply.json()["rows"]


def run_step(season: Season, name: str, step, *args) -> object:
    """Run one step (its end printed at once)."""
    result = step(season, *args)
    season.steps[name] = "run"
    print(f"  [{time.monotonic() - season.started:7.1f} s] {name}: {season.steps[name]}",
          flush=True)
    return result


# --------------------------------------------------------------------------- the count


def counts(db_url: str, allowed: int = 1) -> dict:
    """What the database holds: submissions per (phase, run id), results recorded more than
    ``allowed`` times per submission (2 after a rescore: it scores and reproduces a phase's
    submissions once more), runs taken over."""
    import sqlalchemy as sa

    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            stored = set(conn.execute(sa.text("SELECT phase, run_id FROM submissions")).all())
            twice_reproduced = conn.execute(sa.text(
                "SELECT submission_id FROM reproductions GROUP BY submission_id "
                "HAVING COUNT(*) > :n"), {"n": allowed}).all()
            twice_scored = conn.execute(sa.text(
                "SELECT submission_id FROM user_values WHERE source = 'scored' "
                "GROUP BY submission_id HAVING COUNT(*) > :n"), {"n": allowed}).all()
            jobs = conn.execute(sa.text(
                "SELECT kind, state, attempts FROM reproduction_jobs")).all()
    finally:
        engine.dispose()
    return {"stored": stored, "twice": len(twice_reproduced) + len(twice_scored),
            "jobs": jobs}


def rehearse(backend: str, db_url: str, folder: Path, competition: Path,
             finals_file: Callable[[datetime], Path], made: list,
             args: argparse.Namespace) -> dict:
    """One season on ``db_url``; its report."""
    token, teams = setup_database(db_url, competition, args.teams)
    for team in teams:
        template_checkout(folder / "checkouts" / team)
    # the smoke mode's seven commands share one interpreter's imports (3 CPU-s each)
    starter = PreloadedStarter(PRELOAD) if args.smoke else None
    server = ServeProcess(competition, db_url, folder / "serve.log", starter=starter)
    season = Season(folder=folder, competition=competition, db_url=db_url, admin=token,
                    teams=teams, uploads=plan_uploads(teams, made, args.per_team),
                    server=server, finals_file=finals_file, wait_s=args.wait_s,
                    starter=starter)
    readers = None
    try:
        for name in ("worker-a", "worker-b"):
            start_worker(season, name, args.reproduce_s)
        readers = BoardReaders(server.url, args.board_rate, threads=2).start()
        t0 = time.monotonic()
        run_step(season, "season_uploads (server restarted a third of the way in)",
                 season_uploads)
        run_step(season, "mark_finals (season)", mark_finals, PHASES[0])
        run_step(season, "open_finals (the season closes; server restarted)", open_finals)
        run_step(season, "carry_over (season -> finals)", carry_over)
        run_step(season, "finals_uploads (a worker killed halfway)", finals_uploads,
                 args.reproduce_s, not args.smoke)
        reads = readers.stop()
        readers = None
        run_step(season, "wait for the scoring jobs", wait_idle, ("score",))
        run_step(season, "mark_finals (finals)", mark_finals, PHASES[1])
        run_step(season, "wait_reproduced (every final)", wait_reproduced)
        run_step(season, "rescore_after_fix (finals)", rescore_after_fix)
        rows = run_step(season, "reveal (finals)", reveal)
        season_s = time.monotonic() - t0
        overview = queue(season)
        season.peak_rss = max(season.peak_rss, server_peak(season.server))
    finally:
        if readers is not None:
            readers.stop()
        for process in season.workers.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
        season.server.stop()
    found = counts(db_url, 2 if season.rescore is not None else 1)
    lost = sorted((season.sent | season.acknowledged) - found["stored"])
    taken_over = sum(1 for _, _, attempts in found["jobs"] if attempts > 1)
    ok = [r.seconds for r in reads if r.status == 200]
    return {"backend": backend, "uploads": len(season.uploads), "sent": len(season.sent),
            "acknowledged": len(season.acknowledged), "lost": len(lost),
            "lost_ids": lost[:10], "upload_errors": season.upload_errors[:5],
            "twice": max(found["twice"], season.twice_before or 0), "taken_over": taken_over,
            "carried": season.carried, "rescore": season.rescore,
            "killed_jobs": season.killed_jobs, "restarts": season.restarts,
            "reproduced_s": season.reproduced_s, "season_s": season_s,
            "board_p99_ms": 1000 * float(np.percentile(ok, 99)) if ok else float("nan"),
            "board_p50_ms": 1000 * statistics.median(ok) if ok else float("nan"),
            "reads": len(reads), "reads_refused": len(reads) - len(ok),
            "peak_mib": season.peak_rss / 2**20, "steps": dict(season.steps),
            "failed_jobs": [(j["job_id"], j["reason"]) for j in overview["failed"]],
            "rows": rows or []}


def print_report(r: dict) -> None:
    print(f"\n=== {r['backend']}: {r['uploads']} uploads, the season took "
          f"{r['season_s']:.1f} s ===")
    for step, outcome in r["steps"].items():
        print(f"  step {step}: {outcome}")
    print(f"  submissions lost: {r['lost']} (of {r['sent']} sent, {r['acknowledged']} "
          f"acknowledged){'  ' + str(r['lost_ids']) if r['lost'] else ''}")
    for error in r["upload_errors"]:
        print(f"    upload given up: {error}")
    print(f"  jobs run twice (results recorded more than once): {r['twice']}")
    print(f"  runs taken over after the kill or a lost lease: {r['taken_over']} (the killed "
          f"worker held job(s) {r['killed_jobs'] or 'none'})")
    if r["carried"] is not None:
        print(f"  carried into the finals: {r['carried'][0]} submission(s), "
              f"{r['carried'][1]} not carried")
    if r["rescore"] is not None:
        print(f"  rescore of the finals: {r['rescore'][0]}; {r['rescore'][1]:.1f} s until "
              f"applied and reproduced again")
    print(f"  server restarts: {len(r['restarts'])}, down "
          f"{', '.join(f'{s:.1f}' for s in r['restarts'])} s (stop, start, /healthz answers)")
    shown = "n/a" if r["reproduced_s"] is None else f"{r['reproduced_s']:.1f} s"
    print(f"  time from the first final marked until every final was reproduced: {shown}")
    print(f"  board during the season: p99 {r['board_p99_ms']:.1f} ms, p50 "
          f"{r['board_p50_ms']:.1f} ms over {r['reads']} reads ({r['reads_refused']} refused "
          f"or cut by the restart)")
    print(f"  server's peak resident memory: {r['peak_mib']:.0f} MiB")
    if r["failed_jobs"]:
        print(f"  failed jobs: {r['failed_jobs'][:5]}")
    print("  the final board (finals, revealed):")
    print(f"    {'rank':>4}  {'team':<12}  {'private':>8}  {'public':>8}  reproduction")
    for row in r["rows"]:
        private = row.get("private_score")
        public = row.get("leaderboard_score")
        print(f"    {str(row.get('rank') or '-'):>4}  {str(row.get('team'))[:12]:<12}  "
              f"{'-' if private is None else f'{private:.4f}':>8}  "
              f"{'-' if public is None else f'{public:.4f}':>8}  {row.get('reproduction')}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"])
    p.add_argument("--teams", type=int, default=50)
    p.add_argument("--per-team", type=int, default=10, help="uploads per team (half to each "
                                                            "phase)")
    p.add_argument("--variants", type=int, default=8, help="distinct runs uploaded")
    p.add_argument("--reproduce-s", type=float, default=0.5,
                   help="seconds of each stand-in reproduction run")
    p.add_argument("--board-rate", type=float, default=4.0, help="board reads per second")
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--wait-s", type=float, default=WAIT_S,
                   help="seconds to wait for the queue to empty before giving up")
    p.add_argument("--smoke", action="store_true",
                   help="3 teams x 2 uploads of the tiny dataset, SQLite, the commands "
                        "forked from one preloaded process: does it run?")
    args = p.parse_args()
    if args.smoke:
        args.scale, args.teams, args.per_team, args.variants = "tiny", 3, 2, 1
        args.reproduce_s, args.board_rate, args.backends = 0.1, 1.0, "sqlite"
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    reports, bad = [], False
    with tempfile.TemporaryDirectory(prefix="evalrs-rehearsal-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        competition, finals_file, made = prepare(args.scale, root, args.variants,
                                                 args.per_team // 2)
        print(f"{args.variants} runs of the {args.scale} dataset prepared in "
              f"{time.perf_counter() - t0:.1f} s; {args.teams} teams x {args.per_team} "
              f"uploads", flush=True)
        for backend in backends:
            folder = root / backend
            folder.mkdir()
            postgres = None
            if backend == "postgresql":
                try:
                    postgres = start_postgres("rehearsal")
                except PostgresUnavailable as exc:
                    print(f"PostgreSQL not rehearsed: {exc}")
                    continue
                url = postgres.url
            else:
                url = f"sqlite:///{folder / 'board.db'}"
            try:
                report = rehearse(backend, url, folder, competition, finals_file, made, args)
            finally:
                if postgres is not None:
                    postgres.stop()
            print_report(report)
            reports.append(report)
            bad = bad or report["lost"] > 0 or report["twice"] > 0
    if bad:
        print("FAILED: a submission was lost or a job run twice")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
