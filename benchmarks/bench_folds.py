"""Load + leave-one-out folds at full synthetic scale, side by side with the pandas reference.

    python benchmarks/bench_folds.py [--scale full | --data DIR] [--seed 42] [--num-folds 4]

Each measurement runs in a fresh subprocess so that its peak memory (``ru_maxrss``) is its own:
``load`` (read the cached dataset directory), ``load_source`` (the same through the
validating loader that ``ChallengeDataset`` uses), ``fast`` (load, then the four folds with the
vectorised path: ``ChallengeDataset.compute_folds``) and ``reference`` (load, then the 2022
pandas procedure of ``benchmarks/_folds_2022.py``). The reference also checks that its folds
equal the fast ones row for row. The dataset is generated once and cached (the first run at
full scale takes a minute or so).

Targets (issue 2): load <= 1.5 s, 4 folds <= 1.5 s (the reference: ~16 s), peak memory for
load + folds <= 1.5 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._here import run_here  # noqa: E402

_CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, {repo!r})
import numpy as np
from evaluation.data import read_tables

mode, path, seed, num_folds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = {{}}
t0, c0 = time.perf_counter(), time.process_time()
if mode == "load_source":
    from evaluation.data import load_source
    tables = load_source(path)
else:
    tables = read_tables(path)
out["load_s"] = time.perf_counter() - t0
out["load_cpu_s"] = time.process_time() - c0
out["rows"] = len(tables.events)
out["data"] = tables._fingerprint or f"{{len(tables.events)}} rows"  # stored at write time
out["load_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def digest(pairs):
    h = hashlib.sha256()
    for train, test in pairs:
        h.update(np.asarray(train, dtype=np.int64).tobytes())
        h.update(np.asarray(test, dtype=np.int64).tobytes())
    return h.hexdigest()


if mode == "fast":
    from evaluation.dataset import ChallengeDataset
    import tracemalloc
    # the procedure itself, not the on-disk fold cache
    ds = ChallengeDataset(tables, seed=seed, num_folds=num_folds, validate=False,
                          fold_cache=False)
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    folds = ds.compute_folds()
    out["folds_s"] = time.perf_counter() - t0
    out["folds_cpu_s"] = time.process_time() - c0
    out["folds_traced_peak_gib"] = tracemalloc.get_traced_memory()[1] / 2**30
    tracemalloc.stop()
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    out["digest"] = digest((f.train_rows, f.test_rows) for f in folds)
    out["test_users"] = [f.n_test_users for f in folds]
    out["train_rows"] = [len(f.train_rows) for f in folds]
    t0 = time.perf_counter()
    ds.get_train_set(0), ds.get_test_set(0)
    out["frames_s"] = time.perf_counter() - t0
elif mode == "reference":
    from benchmarks._folds_2022 import iter_folds_reference
    df_events = tables.events
    t0, c0 = time.perf_counter(), time.process_time()
    pairs = [(train.index.to_numpy(), test.index.to_numpy())
             for train, test in iter_folds_reference(df_events, num_folds, seed)]
    out["folds_s"] = time.perf_counter() - t0
    out["folds_cpu_s"] = time.process_time() - c0
    out["digest"] = digest(pairs)
out.setdefault("peak_rss_gib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
print(json.dumps(out))
"""


def run_child(mode: str, args: argparse.Namespace, fresh: bool = True) -> dict:
    """One measurement ``mode``: in a fresh process, or (``fresh`` false: the smoke run's
    later ones, whose figures mean nothing) the same code in this one (see ``_here``)."""
    code = _CHILD.format(repo=str(REPO))
    if not fresh:
        return run_here(code, mode, str(args.data), str(args.seed), str(args.num_folds))
    proc = subprocess.run(
        [sys.executable, "-c", code, mode, str(args.data), str(args.seed), str(args.num_folds)],
        capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.exit(f"{mode} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="full", help="synthetic scale (default: full)")
    parser.add_argument("--data-seed", type=int, default=42, help="synthetic generator seed")
    parser.add_argument("--data", type=Path, default=None,
                        help="a dataset directory written by `data generate` (default: the "
                             "cached synthetic dataset of --scale/--data-seed)")
    parser.add_argument("--seed", type=int, default=42, help="fold seed")
    parser.add_argument("--num-folds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="fast runs (best time is kept)")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.scale, args.repeat = "tiny", 1

    if args.data is None:
        from evaluation.data._synthetic import synthetic_cache_path, synthetic_tables

        t0 = time.perf_counter()
        synthetic_tables(args.scale, args.data_seed)  # generate + cache once
        # Every child reads this very directory, even if the generator changes meanwhile.
        args.data = synthetic_cache_path(args.scale, args.data_seed)
        print(f"dataset synthetic:{args.scale}:seed{args.data_seed} ready "
              f"({time.perf_counter() - t0:.1f} s)")
    print(f"dataset: {args.data}")

    # the smoke run: the first load in a fresh process (a measured run's path), the other
    # measurements in this one (the same code, without an interpreter's start each)
    fresh = not args.smoke
    loads = [run_child("load", args, fresh or i == 0) for i in range(args.repeat)]
    validated = run_child("load_source", args, fresh)
    fasts = [run_child("fast", args, fresh) for _ in range(args.repeat)]
    if len({r["data"] for r in loads + fasts}) > 1:
        sys.exit("the cached dataset changed while the benchmark ran (regenerated by another "
                 "process?); run it again, or with its own EVALRS_CACHE_DIR")
    load = min(loads, key=lambda r: r["load_s"])
    fast = min(fasts, key=lambda r: r["folds_s"])
    if hasattr(os, "getloadavg"):
        print("load average (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
              + f" on {os.cpu_count()} CPUs (timings stretch on a busy machine)")
    print(f"rows: {fast['rows']:,}; test users per fold: {fast['test_users']}; "
          f"train rows per fold: {fast['train_rows']}")
    rows = [
        ("load (read_tables)", f"{load['load_s']:.2f} s", "<= 1.5 s",
         f"x{load['load_s'] / 1.5:.2f} of target"),
        ("load_source (validated)", f"{validated['load_s']:.2f} s", "", ""),
        (f"{args.num_folds} folds, fast path", f"{fast['folds_s']:.2f} s", "<= 1.5 s",
         f"x{fast['folds_s'] / 1.5:.2f} of target"),
        (f"{args.num_folds} folds, fast path, CPU time",
         f"{min(r['folds_cpu_s'] for r in fasts):.2f} s", "", "all threads"),
        ("fold 0 train/test frames", f"{fast['frames_s']:.2f} s", "", ""),
        ("peak memory, read_tables", f"{load['peak_rss_gib']:.2f} GiB", "", ""),
        ("peak memory, load_source", f"{validated['peak_rss_gib']:.2f} GiB", "", ""),
        ("peak memory, read_tables + folds",
         f"{max(r['peak_rss_gib'] for r in fasts):.2f} GiB", "<= 1.5 GiB", ""),
        ("memory allocated by the folds (peak)",
         f"{max(r['folds_traced_peak_gib'] for r in fasts):.2f} GiB", "", "tracemalloc"),
    ]
    if not args.no_reference:
        ref = run_child("reference", args, fresh)
        if ref["data"] != fast["data"]:
            sys.exit("the cached dataset changed while the benchmark ran; run it again")
        same = ref["digest"] == fast["digest"]
        rows.append((f"{args.num_folds} folds, pandas reference", f"{ref['folds_s']:.2f} s",
                     "~16 s", f"speed-up x{ref['folds_s'] / fast['folds_s']:.1f}"))
        cpu = min(r["folds_cpu_s"] for r in fasts)
        rows.append((f"{args.num_folds} folds, pandas reference, CPU time",
                     f"{ref['folds_cpu_s']:.2f} s", "",
                     f"CPU ratio x{ref['folds_cpu_s'] / cpu:.1f}"))
        rows.append(("folds identical to the reference", "yes" if same else "NO", "yes", ""))
        rows.append(("peak memory, load + reference", f"{ref['peak_rss_gib']:.2f} GiB", "", ""))
    width = max(len(r[0]) for r in rows)
    for name, value, target, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {target:>10}  {note}")
    if not args.no_reference and not same:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
