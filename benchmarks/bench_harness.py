"""Harness overhead of a whole run: load + folds + validation + scoring + aggregation.

A 4-fold run at full synthetic scale (~37.6M event rows, ~29.7k test users per fold) with a
model that returns precomputed predictions, so that the model costs nothing and what is left
is the harness. The predictions (each fold's most-played unheard tracks) are computed first,
in this process, and saved; the measured run happens in a fresh process so that its peak
memory is the harness's own. Usage::

    python benchmarks/bench_harness.py                 # full scale (targets: 3 s, 1.5 GiB)
    python benchmarks/bench_harness.py --scale small   # a quick look
    python benchmarks/bench_harness.py --n-boot 0      # without the bootstrap CIs

Printed: the time of each part, the total against the target, and the ratio to the 2022
harness's published figures for the same run (~36 s, ~5 GiB; not re-measured here).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled
TARGET_SECONDS, TARGET_GIB = 3.0, 1.5
REF_2022_SECONDS, REF_2022_GIB = 36.0, 5.0


class PrecomputedModel:
    """Returns the predictions saved for each fold; training only picks the fold's file."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.sizes = json.loads((self.folder / "sizes.json").read_text())
        self.fold = None

    def train(self, train_df, **kwargs) -> None:
        # the fold is recognised by its training-set size (each fold differs)
        self.fold = self.sizes[str(len(train_df))]

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        users = np.load(self.folder / f"users_{self.fold}.npy")
        items = np.load(self.folder / f"items_{self.fold}.npy", mmap_mode="r")
        order = pd.Index(users).get_indexer(user_ids["user_id"].to_numpy())
        return pd.DataFrame(np.asarray(items[order]), index=pd.Index(users[order],
                            name="user_id"), columns=[str(i) for i in range(items.shape[1])])


def vm_hwm() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def prepare(scale: str, folder: Path) -> None:
    from evaluation import ChallengeDataset
    from evaluation.baselines import PopularityModel

    ds = ChallengeDataset(source="synthetic", scale=scale)
    sizes = {}
    for fold in range(ds.num_folds):
        train, test = ds.get_train_set(fold), ds.get_test_set(fold)
        pred = PopularityModel().train(train).predict(test[["user_id"]])
        np.save(folder / f"users_{fold}.npy", pred.index.to_numpy())
        np.save(folder / f"items_{fold}.npy", pred.to_numpy().astype(np.int32))
        sizes[str(len(train))] = fold
    (folder / "sizes.json").write_text(json.dumps(sizes))


def measure(scale: str, folder: str, n_boot: int) -> dict:
    """The measured run (in a fresh process)."""
    import warnings

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from evaluation import ChallengeDataset, EvalRSRunner

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    ds = ChallengeDataset(source="synthetic", scale=scale)
    t_load = time.perf_counter() - t0
    peak_load = vm_hwm()
    t1 = time.perf_counter()
    ds.compute_folds()
    t_folds = time.perf_counter() - t1
    peak_folds = vm_hwm()
    with tempfile.TemporaryDirectory() as results:
        runner = EvalRSRunner(ds, results_dir=results, progress=False, verbose=False,
                              reports=False, n_boot=n_boot, references=None)
        t2 = time.perf_counter()
        res = runner.evaluate(PrecomputedModel(folder))
        t_run = time.perf_counter() - t2
    stages: dict[str, float] = {}
    peak_of = {"load": peak_load, "folds": peak_folds, "end": vm_hwm()}
    for f in res.folds:
        for name, st in f["runtime"].items():
            stages[name] = stages.get(name, 0.0) + st["seconds"]
            if st["peak_rss_mib"] is not None:
                peak_of[name] = max(peak_of.get(name, 0), int(st["peak_rss_mib"] * 2**20))
    return {
        "load": t_load, "folds": t_folds, "runner": t_run, "stages": stages,
        "aggregation": t_run - sum(stages.values()), "peak_bytes": max(peak_of.values()),
        "peaks_mib": {k: round(v / 2**20) for k, v in peak_of.items()},
        "events": len(ds.df_events), "test_users": [f["n_users"] for f in res.folds],
        "hit_rate": res.aggregate["mean"]["HIT_RATE"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="full", choices=["tiny", "small", "full"])
    p.add_argument("--n-boot", type=int, default=None,
                   help="bootstrap replicates (default: the runner's default)")
    p.add_argument("--predictions-dir", default=None,
                   help="keep the precomputed predictions here and reuse them next time")
    p.add_argument("--_measure", metavar="FOLDER", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._measure:
        from evaluation.runner import DEFAULT_N_BOOT

        n_boot = DEFAULT_N_BOOT if args.n_boot is None else args.n_boot
        print(json.dumps({"n_boot": n_boot, **measure(args.scale, args._measure, n_boot)}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.predictions_dir or tmp)
        if not (folder / "sizes.json").is_file():
            print(f"preparing precomputed predictions at scale {args.scale!r} ...",
                  file=sys.stderr)
            folder.mkdir(parents=True, exist_ok=True)
            prepare(args.scale, folder)
        cmd = [sys.executable, __file__, "--scale", args.scale, "--_measure", str(folder)]
        if args.n_boot is not None:
            cmd += ["--n-boot", str(args.n_boot)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"the measured run failed:\n{out.stderr[-4000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
    st = r["stages"]
    total = r["load"] + r["folds"] + r["runner"] - st.get("train", 0) - st.get("predict", 0)
    gib = r["peak_bytes"] / 2**30
    print(f"scale {args.scale}: {r['events']:,} events, test users per fold {r['test_users']}, "
          f"HIT_RATE {r['hit_rate']:.4f}")
    print(f"  load (parquet cache)      {r['load']:7.2f} s")
    print(f"  folds (4, computed)       {r['folds']:7.2f} s")
    for name in ("data", "validate", "score"):
        print(f"  {name + ' (4 folds)':<25} {st.get(name, 0):7.2f} s")
    print(f"  aggregation + CIs ({r['n_boot']:>4})  {r['aggregation']:7.2f} s   (includes results "
          f"files)")
    print(f"  model train+predict       {st.get('train', 0) + st.get('predict', 0):7.2f} s   "
          f"(precomputed; not harness time)")
    print(f"harness total {total:.2f} s (target {TARGET_SECONDS} s: ratio "
          f"{total / TARGET_SECONDS:.2f}; 2022 harness ~{REF_2022_SECONDS:.0f} s: "
          f"{REF_2022_SECONDS / total:.1f}x faster)")
    print("  peak RSS by phase (MiB): " + ", ".join(f"{k} {v}" for k, v in r["peaks_mib"].items()))
    print(f"peak memory {gib:.2f} GiB (target {TARGET_GIB} GiB: ratio {gib / TARGET_GIB:.2f}; "
          f"2022 harness ~{REF_2022_GIB:.0f} GiB: {REF_2022_GIB / gib:.1f}x less)")


if __name__ == "__main__":
    main()
