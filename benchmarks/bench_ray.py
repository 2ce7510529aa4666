"""Folds in process vs folds as Ray tasks: ``EvalRSRunner(..., executor="ray")``.

    python benchmarks/bench_ray.py [--scale small] [--rounds 3] [--cpus 2]

Four folds of the ``CBOWModel`` baseline on the synthetic dataset, run by the in-process loop
and by a local Ray with ``--cpus`` CPUs (one CPU per fold task, so up to ``--cpus`` folds at
once); the rounds interleave the two, and each run starts afresh (``resume=False``). It
prints the median wall time of each with its min-max, the speed-up (in-process / Ray; the
ideal on 2 CPUs is 2x) and the scheduling overhead per fold: a no-op model (no training, one
fixed list for every user) run in process and on Ray with one task at a time (each task asks
for every CPU), the difference divided by the fold count. That overhead is what Ray adds to a
fold whatever the model: sending the model and the shared dataset, starting the task,
rebuilding the dataset around the shared arrays and sending the fold's results back. Both
executors write the same results, which the benchmark checks on each round.

Ray's start (``ray.init``, a few seconds, once per process) is reported apart; a first
one-epoch run on each side, which starts Ray's workers and imports gensim, is not timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # Ray hands the driver's sys.path to its workers

import numpy as np  # noqa: E402

from evaluation.baselines import CBOWModel  # noqa: E402
from evaluation.dataset import ChallengeDataset  # noqa: E402
from evaluation.model import RecModel  # noqa: E402
from evaluation.predictions import predictions_frame  # noqa: E402
from evaluation.runner import EvalRSRunner  # noqa: E402


class NoOpModel(RecModel):
    """No training; the same ``k`` tracks for every user (the cost of a fold without a model)."""

    def __init__(self, tracks):
        self.tracks = np.asarray(tracks[: self.k])

    def train(self, train_df, **kwargs):
        return self

    def predict(self, user_ids):
        items = np.broadcast_to(self.tracks, (len(user_ids), len(self.tracks)))
        return predictions_frame(user_ids["user_id"], items, self.k)


def run(dataset, model, results_dir: Path, **options) -> tuple[float, dict, float]:
    """Seconds of one fresh run (``resume=False``), its comparable results and the mean
    seconds of its folds' stages (where the fold ran: in process or in a task)."""
    runner = EvalRSRunner(dataset, results_dir=results_dir, progress=False, verbose=False,
                          reports=False, n_boot=0, **options)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-op model recommends tracks users played
        result = runner.evaluate(model, resume=False)
    seconds = time.perf_counter() - t0
    data = result.to_dict()
    fold_seconds = statistics.mean(sum(stage["seconds"] for stage in f["runtime"].values())
                                   for f in data["folds"])
    return seconds, {"aggregate": data["aggregate"],
                     "folds": [{k: v for k, v in f.items() if k != "runtime"}
                               for f in data["folds"]]}, fold_seconds


def summary(times: list[float]) -> str:
    return f"{statistics.median(times):6.2f} s (min {min(times):.2f}, max {max(times):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="small")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        # one CPU: one Ray worker process to start (each imports the harness and gensim);
        # the fold tasks, the shared dataset and the results check are the same as on more
        # (the suite's Ray tests run tasks side by side)
        args.scale, args.rounds, args.cpus = "tiny", 1, 1

    import ray

    # the smoke run: 2 folds, one task per CPU (its numbers mean nothing)
    dataset = ChallengeDataset(scale=args.scale, num_folds=2 if args.smoke else 4)
    dataset.compute_folds()
    noop = NoOpModel(dataset.tables.tracks.index.to_numpy())
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    init_s = time.perf_counter() - t0
    cbow = {"epochs": 1} if args.smoke else {}  # the smoke run: one epoch
    parallel = {"executor": "ray", "ray_resources": {"num_cpus": 1}}
    one_at_a_time = {"executor": "ray", "ray_resources": {"num_cpus": args.cpus}}
    times: dict[str, list[float]] = {"local": [], "ray": [], "noop local": [], "noop ray": []}
    fold_times: dict[str, list[float]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.smoke:  # untimed: starts Ray's workers and imports gensim on both sides
            run(dataset, CBOWModel(epochs=1), tmp / "warm-up-local")
            run(dataset, CBOWModel(epochs=1), tmp / "warm-up-ray", **parallel)
        load_before = os.getloadavg()[0]
        for r in range(args.rounds):
            s_local, local, f_local = run(dataset, CBOWModel(**cbow), tmp / f"local{r}")
            s_ray, remote, f_ray = run(dataset, CBOWModel(**cbow), tmp / f"ray{r}", **parallel)
            assert local == remote, "the Ray run's results differ from the in-process run's"
            fold_times["local"].append(f_local)
            fold_times["ray"].append(f_ray)
            n_local, _, _ = run(dataset, noop, tmp / f"noop-local{r}")
            n_ray, _, _ = run(dataset, noop, tmp / f"noop-ray{r}", **one_at_a_time)
            for name, s in zip(times, (s_local, s_ray, n_local, n_ray)):
                times[name].append(s)
            print(f"round {r}: in-process {s_local:.2f} s, Ray {s_ray:.2f} s (a fold: "
                  f"{f_local:.2f} s in process, {f_ray:.2f} s in a task); no-op "
                  f"{n_local:.2f} s / {n_ray:.2f} s", flush=True)
    ray.shutdown()
    load_after = os.getloadavg()[0]

    folds = dataset.num_folds
    events = len(dataset.tables.events)
    print(f"\n{folds} folds of CBOWModel, synthetic {args.scale} ({events:,} events), "
          f"{os.cpu_count()} cores, Ray with {args.cpus} CPUs (ray.init {init_s:.1f} s, once)")
    print(f"  in-process        {summary(times['local'])}")
    print(f"  Ray, {args.cpus} tasks at once {summary(times['ray'])}")
    ratio = statistics.median(times["local"]) / statistics.median(times["ray"])
    print(f"  speed-up (in-process / Ray): {ratio:.2f}x (ideal {args.cpus}x)")
    print(f"  one fold's stages: {summary(fold_times['local'])} in process, "
          f"{summary(fold_times['ray'])} in a task beside another (equal when the "
          f"{args.cpus} cores are free)")
    overheads = [(r - n) / folds for r, n in zip(times["noop ray"], times["noop local"])]
    print(f"  no-op model: in-process {summary(times['noop local'])}, Ray one task at a time "
          f"{summary(times['noop ray'])}")
    print(f"  scheduling overhead per fold: {statistics.median(overheads) * 1000:.0f} ms "
          f"(min {min(overheads) * 1000:.0f}, max {max(overheads) * 1000:.0f})")
    print("  results of both executors equal in every round: yes")
    print(f"  load average (1 min) before / after the timed rounds: {load_before:.1f} / "
          f"{load_after:.1f} on {os.cpu_count()} cores (above the core count, other work "
          f"competes and Ray's speed-up shrinks)")


if __name__ == "__main__":
    main()
