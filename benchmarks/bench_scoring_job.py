"""The scoring job of a full-scale 4-fold submission, side by side with the local run's scoring.

A run at full synthetic scale (~29.9k test users per fold) with a model that returns
precomputed predictions (for each user, 100 of the fold's 1,000 most played tracks in a random
order: lists as varied as a real model's, so that the upload is as large, ~20-30 MB, as a real
one; the same list for everyone would compress to almost nothing) is made first, untimed: its
results, its kept predictions and its upload (``submission.predictions``, built as
``evalrs submit`` builds it). Then, interleaved, each in a fresh process (so that its CPU time
and peak memory are its own), ``--repeat`` times (medians with min-max):

* ``scoring job``: what a worker does with the upload (``score_upload``): read the stream
  strictly, score every fold with the runner's fold code, encode the per-user values and
  compute the run's interval. A worker keeps what no upload changes (the organizers' dataset,
  each fold's test rows and slices, the bootstrap's resamples) between its jobs, so the
  process scores the upload twice: ``first job`` (it also loads and prepares the data, as
  the first job of a worker on a competition's data does) and ``next job`` (every later
  one; the target is for this one). The process's peak covers both, and the import;
* ``local run``: the reference, the same predictions scored by the participant's run
  (``EvalRSRunner.evaluate`` with the precomputed model: data, validation, scoring, the
  bootstrap, the files), less the model's own train and predict calls.

Both are timed in CPU seconds (``time.process_time``: every thread of the process) and in
wall seconds; the peak is the process's resident memory (sampled, see ``_peak_memory``). The
scoring job's numbers are checked against the run's (every fold's tests to 1e-12). Then the
upload: the predictions stream posted to a live leaderboard on 127.0.0.1 (SQLite) with the
client's ``post_predictions``, ``--repeat`` times (a new run id each time), wall seconds; the
server (``python -m evaluation serve``) reads every list strictly before it stores them.

Targets at full scale: the scoring job at most 3 s of CPU and 2 GiB; the upload at most 1 s.
Usage::

    python benchmarks/bench_scoring_job.py            # full scale
    python benchmarks/bench_scoring_job.py --smoke    # tiny scale, once: does it run?
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._peak_memory import PeakSampler  # noqa: E402

TARGET_CPU_S, TARGET_GIB, TARGET_UPLOAD_S = 3.0, 2.0, 1.0
SIDES = ("scoring job", "local run")
#: The rows of the table: the scoring job's process gives two.
ROWS = ("first job", "next job", "local run")


class PrecomputedModel:
    """Returns the predictions saved for each fold; training only picks the fold's file."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.sizes = json.loads((self.folder / "sizes.json").read_text())
        self.fold = None

    def train(self, train_df, **kwargs) -> None:
        self.fold = self.sizes[str(len(train_df))]  # each fold's training set differs

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        users = np.load(self.folder / f"users_{self.fold}.npy")
        items = np.load(self.folder / f"items_{self.fold}.npy")
        order = pd.Index(users).get_indexer(user_ids["user_id"].to_numpy())
        return pd.DataFrame(items[order], index=pd.Index(users[order], name="user_id"),
                            columns=[str(i) for i in range(items.shape[1])])


def write_competition(folder: Path, scale: str, fingerprint: str, fold_params: dict,
                      version: str) -> Path:
    """A competition on the data of ``scale`` (one open phase): the run is made for it."""
    path = folder / "competition.toml"
    path.write_text("\n".join([
        'name = "bench"', f'harness_versions = ["{version}"]', "[dataset]",
        f'fingerprint = "{fingerprint}"', "[dataset.fold_params]",
        *(f"{k} = {json.dumps(v)}" for k, v in fold_params.items()),
        "[[phases]]", 'name = "open"', "opens = 2020-01-01T00:00:00Z",
        "closes = 2100-01-01T00:00:00Z", f'references = "synthetic-{scale}"',
        "daily_limit = 1000", "public = true", ""]))
    return path


def prepare(scale: str, folder: Path) -> None:
    """The predictions, the reference run and its upload, in ``folder``."""
    import warnings

    from evaluation import ChallengeDataset, EvalRSRunner, __version__
    from evaluation.contract import submission_payload
    from evaluation.runner import predictions_body

    warnings.simplefilter("ignore")
    ds = ChallengeDataset(source="synthetic", scale=scale)
    competition = write_competition(folder, scale, ds.fingerprint, ds.fold_params, __version__)
    sizes = {}
    rng = np.random.default_rng(0)
    for fold in range(ds.num_folds):
        train, test = ds.get_train_set(fold), ds.get_test_set(fold)
        top = train["track_id"].value_counts().index.to_numpy()[:1000]
        keys = rng.random((len(test), len(top)), dtype=np.float32)
        lists = top[np.argsort(keys, axis=1)[:, :100]]
        np.save(folder / f"users_{fold}.npy", test["user_id"].to_numpy())
        np.save(folder / f"items_{fold}.npy", lists)
        sizes[str(len(train))] = fold
    (folder / "sizes.json").write_text(json.dumps(sizes))
    runner = EvalRSRunner(ds, results_dir=str(folder / "results"), progress=False,
                          verbose=False, competition=competition)
    result = runner.evaluate(PrecomputedModel(str(folder)))
    results = json.loads(json.dumps(result.to_dict()))
    claim = submission_payload(results, email=None, participant_id=None)
    body = predictions_body(claim, results, Path(str(result.path)).parent)
    (folder / "claim.json").write_text(json.dumps(claim))
    (folder / "upload.bin").write_bytes(body)


def measure(side: str, scale: str, folder: str) -> dict:
    """One side, once (in a fresh process)."""
    import warnings

    warnings.simplefilter("ignore")
    claim = json.loads((Path(folder) / "claim.json").read_text())
    body = (Path(folder) / "upload.bin").read_bytes()
    sampler = PeakSampler()
    cpu, wall = time.process_time(), time.perf_counter()
    if side == "scoring job":
        from evaluation.reproduce._scoring_job import score_upload

        import_cpu = time.process_time() - cpu
        jobs = []
        for _ in range(2):  # the first job of the process, then a next one
            c, w = time.process_time(), time.perf_counter()
            scored = score_upload(claim, body)
            jobs.append({"cpu": time.process_time() - c, "wall": time.perf_counter() - w,
                         "values": scored["fold_tests"]})
        return {"import_cpu": import_cpu, "jobs": jobs, "peak_bytes": sampler.stop()}
    else:
        from evaluation import ChallengeDataset, EvalRSRunner

        ds = ChallengeDataset(source="synthetic", scale=scale)
        with tempfile.TemporaryDirectory() as results:
            runner = EvalRSRunner(ds, results_dir=results, progress=False, verbose=False,
                                  competition=Path(folder) / "competition.toml")
            res = runner.evaluate(PrecomputedModel(folder))
        model = sum(f["runtime"][s]["seconds"] for f in res.folds for s in ("train", "predict"))
        values = [f["tests"] for f in res.folds]
    cpu, wall = time.process_time() - cpu - model, time.perf_counter() - wall - model
    return {"cpu": cpu, "wall": wall, "peak_bytes": sampler.stop(), "values": values}


def measure_upload(folder: Path, repeat: int, smoke: bool = False) -> list[float]:
    """Seconds to post the upload to a live leaderboard (``serve``, SQLite) on loopback,
    ``repeat`` times, each with a new run id (``smoke``: the server forked from this process,
    which imports it once, instead of a fresh interpreter)."""
    from benchmarks._preloaded import PreloadedStarter
    from benchmarks._serve import ServeProcess
    from evaluation.contract import with_claim
    from evaluation.runner import post_predictions
    from evaluation.server.core import load_competition
    from evaluation.server.db import Database, add_team, make_engine, upgrade

    claim = json.loads((folder / "claim.json").read_text())
    body = (folder / "upload.bin").read_bytes()
    path = folder / "competition.toml"
    url = f"sqlite:///{folder / 'board.db'}"
    engine = make_engine(url)
    upgrade(engine)
    _, token = add_team(Database(engine, load_competition(path)), "bench", "b@example.org")
    engine.dispose()
    times = []
    starter = (PreloadedStarter(("evaluation.cli", "evaluation.cli._serve_app"), method="fork")
               if smoke else None)
    with ServeProcess(path, url, folder / "serve.log", starter=starter) as server:
        for i in range(repeat):
            run_id = f"{claim['run_id']}-{i}"
            sent = with_claim(body, {**claim, "run_id": run_id,
                                     "results": {**claim["results"], "run_id": run_id}})
            t0 = time.perf_counter()
            post_predictions(server.url + "/api/v1/submissions", sent, run_id, token=token,
                             log=lambda m: None)
            times.append(time.perf_counter() - t0)
    return times


def upload_parts(folder: Path, repeat: int) -> dict[str, list[float]]:
    """Where an upload's time goes on the server, in this process, ``repeat`` times (CPU
    seconds): reading the stream strictly (``read_prediction_upload``: the header, every
    section inflated and checked), hashing the body, and the store's whole ``submit`` (the
    reading again, the checks, the database write of the stream and its scoring job) on a
    fresh SQLite database each time; the write is the last less the first two."""
    import hashlib

    from evaluation.contract import _predictions, with_claim
    from evaluation.server.core import load_competition, read_prediction_upload
    from evaluation.server.db import Database, add_team, make_engine, upgrade
    from evaluation.server.store import submit

    claim = json.loads((folder / "claim.json").read_text())
    body = (folder / "upload.bin").read_bytes()
    competition = load_competition(folder / "competition.toml")
    out: dict[str, list[float]] = {"read": [], "hash": [], "submit": [], "read_wall": [],
                                   "read_wall_one_thread": []}
    for i in range(repeat):
        run_id = f"{claim['run_id']}-parts-{i}"
        sent = with_claim(body, {**claim, "run_id": run_id,
                                 "results": {**claim["results"], "run_id": run_id}})
        wall, cpu = time.perf_counter(), time.process_time()
        read_prediction_upload(sent, competition)
        out["read"].append(time.process_time() - cpu)
        out["read_wall"].append(time.perf_counter() - wall)
        # the reference: the sections inflated one after the other, as before
        threads, _predictions._INFLATE_THREADS = _predictions._INFLATE_THREADS, 1
        try:
            wall = time.perf_counter()
            read_prediction_upload(sent, competition)
            out["read_wall_one_thread"].append(time.perf_counter() - wall)
        finally:
            _predictions._INFLATE_THREADS = threads
        cpu = time.process_time()
        hashlib.sha256(sent).hexdigest()
        out["hash"].append(time.process_time() - cpu)
        engine = make_engine(f"sqlite:///{folder / f'parts-{i}.db'}")
        upgrade(engine)
        store = Database(engine, competition)
        team, _ = add_team(store, "bench", "b@example.org")
        cpu = time.process_time()
        submit(store, team.id, sent, run_id)
        out["submit"].append(time.process_time() - cpu)
        engine.dispose()
    return out


def _child(args: argparse.Namespace) -> None:
    print(json.dumps(measure(args.side, args.scale, args.folder)))


def _run_side(side: str, folder: Path, scale: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--side", side, "--scale", scale,
           "--folder", str(folder)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"{side} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report_upload(folder: Path, repeat: int, size: int, smoke: bool = False) -> list[float]:
    """Print where an upload's time goes on the server, then the loopback posts (their wall
    seconds, returned), with the machine's load."""
    parts = upload_parts(folder, repeat)
    write = [s - r - h for s, r, h in zip(parts["submit"], parts["read"], parts["hash"])]
    print(f"upload, server side in-process (CPU s): reading the stream strictly "
          f"{_spread(parts['read'])}, hashing {_spread(parts['hash'], '{:.3f}')}, the whole "
          f"submit {_spread(parts['submit'])} (so the rest, mostly the database write, "
          f"{_spread(write)})")
    ratio = statistics.median(parts["read_wall"]) / statistics.median(
        parts["read_wall_one_thread"])
    print(f"reading the stream, wall s: sections in 2 threads {_spread(parts['read_wall'])}, "
          f"one after the other (reference) {_spread(parts['read_wall_one_thread'])}; "
          f"ratio {ratio:.2f}")
    load = os.getloadavg()[0]
    uploads = measure_upload(folder, repeat, smoke)
    print(f"upload of {size / 2**20:.1f} MiB on loopback: {_spread(uploads)} s (load "
          f"{load:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return uploads


def _spread(xs: list[float], fmt: str = "{:.2f}") -> str:
    return (f"{fmt.format(statistics.median(xs))} "
            f"({fmt.format(min(xs))}-{fmt.format(max(xs))})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="full", choices=["tiny", "small", "full"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--smoke", action="store_true", help="tiny scale, once")
    p.add_argument("--upload-only", action="store_true",
                   help="only the upload: its server-side parts, then the loopback post")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--side", default=None, help=argparse.SUPPRESS)
    p.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    if args.smoke:
        args.scale, args.repeat = "tiny", 1
    with tempfile.TemporaryDirectory(prefix="evalrs-bench-scoring-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        prepare(args.scale, folder)
        size = (folder / "upload.bin").stat().st_size
        print(f"scale {args.scale}: upload {size / 2**20:.1f} MiB, prepared in "
              f"{time.perf_counter() - t0:.1f} s")
        if args.upload_only:
            report_upload(folder, args.repeat, size, args.smoke)
            return
        runs: dict[str, list[dict]] = {s: [] for s in SIDES}
        loads = []
        for rep in range(args.repeat):
            for side in SIDES:  # interleaved: drifts of the machine hit both sides
                loads.append(os.getloadavg()[0])
                # the smoke run: the scoring job in a fresh process (a measured run's path),
                # the local run in this one (the same measure, without an interpreter's start)
                fresh = not args.smoke or (rep == 0 and side == SIDES[0])
                runs[side].append(_run_side(side, folder, args.scale) if fresh else
                                  json.loads(json.dumps(measure(side, args.scale, str(folder)))))
        local = runs["local run"]
        rows = {"first job": [], "next job": [], "local run": local}
        for process in runs["scoring job"]:
            for name, job in zip(ROWS, process["jobs"]):
                rows[name].append({**job, "peak_bytes": process["peak_bytes"]})
        worst = max(abs(a[t] - b[t]) for name in ROWS[:2] for run in rows[name] for a, b in
                    zip(run["values"], local[0]["values"]) for t in a)
        if worst > 1e-12:
            raise SystemExit(f"the scoring job's tests differ from the run's by {worst:.3g}")
        print(f"{'side':<12} {'CPU s':>20} {'wall s':>20} {'peak MiB (process)':>22}")
        for name in ROWS:
            r = rows[name]
            print(f"{name:<12} {_spread([x['cpu'] for x in r]):>20} "
                  f"{_spread([x['wall'] for x in r]):>20} "
                  f"{_spread([x['peak_bytes'] / 2**20 for x in r], '{:.0f}'):>22}")
        imports = [p["import_cpu"] for p in runs["scoring job"]]
        print(f"the scoring job's import (once per worker): {_spread(imports)} s CPU")
        # how busy the shared machine was when each side started (other processes' work
        # shows in the wall times, less in the CPU times)
        print(f"machine load (1-minute average, 2 cores): {_spread(loads)}")
        job = rows["next job"]
        cpu = statistics.median(x["cpu"] for x in job)
        ratio = cpu / statistics.median(x["cpu"] for x in local)
        peak = statistics.median(x["peak_bytes"] for x in job) / 2**30
        mem = peak / (statistics.median(x["peak_bytes"] for x in local) / 2**30)
        print(f"next job / local run: CPU x{ratio:.2f}, peak x{mem:.2f}; tests equal to "
              f"{worst:.1g}")
        uploads = report_upload(folder, args.repeat, size, args.smoke)
        if args.scale == "full":
            print(f"targets: next scoring job <= {TARGET_CPU_S} s CPU ({cpu:.2f}), <= {TARGET_GIB} "
                  f"GiB ({peak:.2f}); upload <= {TARGET_UPLOAD_S} s "
                  f"({statistics.median(uploads):.2f})")


if __name__ == "__main__":
    main()
