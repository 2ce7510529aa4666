"""What the declared alternative protocols add to a reproduction: the template model run in
the sandbox on the official folds, then under each alternative (another fold seed, a global
time cut at the median event time), each scored on the organizer's side, as a worker does.

Goal: the alternatives together add at most 2x the official run's time per submission at
full scale (here: one fold-seed and one time-cut protocol; a fold-seed protocol is about one
official run, a time cut about a quarter of one: it has one fold instead of four).

Each round runs the official reproduction and then each alternative, in one process; with
``--rounds N`` the rounds are interleaved and the script prints each one's median and min-max
wall seconds, the ratio of the medians, the process's peak resident memory (its sandboxed
children's too) and the load average (the machine is often shared).

Usage::

    python benchmarks/bench_alternatives.py                      # synthetic "small", 1 round
    python benchmarks/bench_alternatives.py --scale full --rounds 3 --check  # the goal
    python benchmarks/bench_alternatives.py --smoke              # tiny, the time cut only
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._checkout import template_checkout  # noqa: E402
from evaluation import ChallengeDataset  # noqa: E402
from evaluation.reproduce import Budgets  # noqa: E402
from evaluation.reproduce._alternatives import read_alternatives  # noqa: E402
from evaluation.reproduce._reproduce import _run, run_alternative  # noqa: E402
from evaluation.runner import DEFAULT_N_BOOT  # noqa: E402

#: The most the alternatives may add, as a multiple of the official run's time.
GOAL_RATIO = 2.0


def _protocols(dataset: ChallengeDataset, smoke: bool) -> list[dict]:
    """A fold-seed and a time-cut protocol (the cut at the median event time)."""
    median = int(np.median(dataset.df_events["timestamp"].to_numpy()))
    cut = np.datetime64(median, "s").astype(str) + "Z"
    time_cut = {"name": "median-cut", "kind": "global_time", "cut": cut}
    if smoke:
        return [time_cut]
    return [{"name": "seed-7", "kind": "fold_seed", "seed": dataset.seed + 7}, time_cut]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", choices=("tiny", "small", "full"))
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 unless the alternatives take at most {GOAL_RATIO:g}x the "
                             f"official run's time")
    parser.add_argument("--rounds", type=int, default=1,
                        help="interleaved rounds (official, then each alternative)")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: tiny data, the time cut only; measures nothing")
    args = parser.parse_args()
    scale = "tiny" if args.smoke else args.scale
    dataset = ChallengeDataset(scale=scale)
    config = {"source": "synthetic", "data_options": {"scale": scale}, "params": {},
              "reclist": None, "fold_params": dataset.fold_params,
              "dataset_fingerprint": dataset.fingerprint, "seed": 42, "k": 100,
              "n_boot": 100 if args.smoke else DEFAULT_N_BOOT, "expected_fingerprint": None}
    budgets = Budgets(wall_s=4 * 3600, memory_mb=None, processes=512, scratch_mb=4096)
    work = Path(tempfile.mkdtemp(prefix="bench-alternatives-"))
    try:
        checkout = template_checkout(work / "checkout")
        python = Path(sys.executable)
        alternatives = read_alternatives(_protocols(dataset, args.smoke))
        seconds: dict[str, list[float]] = {"official": []}
        for n in range(args.rounds):
            started = time.perf_counter()
            found, problem, _ = _run(python, checkout, config, work / f"official-{n}",
                                     work / f"official-{n}.log", budgets, False)
            seconds["official"].append(time.perf_counter() - started)
            if problem is not None or "user_values" not in found:
                print(f"the official run failed: {problem}")
                return 1
            print(f"round {n + 1}: official run ({scale}, {dataset.num_folds} folds): "
                  f"{seconds['official'][-1]:8.2f} s")
            for i, alternative in enumerate(alternatives):
                result = run_alternative(alternative, python, checkout, config,
                                         work / f"alternative-{n}-{i}",
                                         work / f"alternative-{n}-{i}.log", budgets, False)
                if result["status"] != "scored":
                    print(f"alternative {alternative.name} failed: {result['reason']}")
                    return 1
                cost = result["cost"]
                seconds.setdefault(alternative.name, []).append(cost["seconds"])
                print(f"round {n + 1}: alternative {alternative.name:<12} ({alternative.kind}): "
                      f"{cost['seconds']:8.2f} s (train {cost['train_seconds']} s, predict "
                      f"{cost['predict_seconds']} s, peak {cost['peak_rss_mib']} MiB)")
        for name, values in seconds.items():
            print(f"{name:<24} median {statistics.median(values):8.2f} s  (min "
                  f"{min(values):.2f}, max {max(values):.2f}; {len(values)} rounds)")
        official = statistics.median(seconds["official"])
        added = sum(statistics.median(v) for k, v in seconds.items() if k != "official")
        ratio = added / official
        print(f"the alternatives add {added:.2f} s: {ratio:.2f}x the official run "
              f"(medians; goal <= {GOAL_RATIO:g}x at full scale)")
        peak = max(resource.getrusage(who).ru_maxrss
                   for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
        print(f"peak resident memory: {peak:.0f} MiB (this process or one sandboxed run); "
              f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if args.check and ratio > GOAL_RATIO:
            print("CHECK FAILED: the alternatives cost more than the goal")
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
