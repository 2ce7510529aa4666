"""Harness overhead of a whole run, side by side with a 2022-style harness on the same data.

A 4-fold run at full synthetic scale (~37.5M event rows, ~29.9k test users per fold) with a
model that returns precomputed predictions, so that the model costs nothing and what is left
is the harness. The predictions (each fold's most-played unheard tracks) are computed first
and saved. Then three sides run, interleaved, each in a fresh process (so that its peak
memory is its own), ``--repeat`` times (medians with min-max):

* ``harness``: today's ``EvalRSRunner`` with its defaults (no reclist report folder);
* ``harness+reports``: the same with ``reports=True`` (reclist's charts and report folder);
* ``2022-style``: the 2022 harness composed from the pandas references kept in the
  benchmarks (the tests check the harness against them too): ``pd.read_parquet`` of the same
  data (the events from an uncompressed, plain-encoded parquet file of one row group, the
  fastest parquet to read; the users and tracks from the dataset's own files), the 2022 fold
  procedure (``benchmarks/_folds_2022.py: folds_reference``), ``fold.drop(test.index)`` for
  the training frame, and reclist's ``standard_metrics`` with per-user loops for the scores
  (``benchmarks/_scores_2022.py: reference_scores``). Its per-fold values are checked
  against today's run. It has no prediction checks and no bootstrap intervals.

Peak memory is the process's true peak: the runner resets the kernel's peak counter
(``VmHWM``) at each stage, so a thread samples ``VmRSS`` every 5 ms and the largest of the
samples and of the ``VmHWM`` readings is reported. The harness time excludes the model's
train and predict calls. The on-disk fold cache is used as a run would use it: the first
(untimed) warm-up run writes it, so the timed runs read each fold from it in the fold's
"data" stage (``--no-fold-cache`` cuts them there every time). Usage::

    python benchmarks/bench_harness.py                 # full scale (targets: 3 s, 1.5 GiB)
    python benchmarks/bench_harness.py --scale small   # a quick look
    python benchmarks/bench_harness.py --skip-2022 --repeat 1   # today's harness only
    python benchmarks/bench_harness.py --n-boot 0      # without the bootstrap CIs
    python benchmarks/bench_harness.py --smoke         # tiny scale, 2 folds, once: does it run?
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

from benchmarks._folds_2022 import folds_reference  # noqa: E402
from benchmarks._peak_memory import PeakSampler  # noqa: E402
from benchmarks._scores_2022 import reference_scores  # noqa: E402

TARGET_SECONDS, TARGET_SECONDS_REPORTS, TARGET_GIB = 3.0, 3.5, 1.5
SIDES = ("harness", "harness+reports", "2022-style")


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


def prepare(scale: str, folder: Path, folds: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evaluation import ChallengeDataset
    from evaluation.baselines import PopularityModel

    ds = ChallengeDataset(source="synthetic", scale=scale, num_folds=folds)
    # the 2022-style side reads the events from parquet, as the 2022 harness did: written
    # uncompressed, plain-encoded, in one row group (the fastest parquet to read)
    pq.write_table(pa.Table.from_pandas(ds.tables.events, preserve_index=False),
                   folder / "events.parquet", compression="none", use_dictionary=False,
                   row_group_size=len(ds.tables.events))
    sizes = {}
    for fold in range(ds.num_folds):
        train, test = ds.get_train_set(fold), ds.get_test_set(fold)
        pred = PopularityModel().train(train).predict(test[["user_id"]])
        np.save(folder / f"users_{fold}.npy", pred.index.to_numpy())
        np.save(folder / f"items_{fold}.npy", pred.to_numpy().astype(np.int32))
        sizes[str(len(train))] = fold
    (folder / "sizes.json").write_text(json.dumps(sizes))


def measure_harness(scale: str, folder: str, n_boot: int, reports: bool,
                    fold_cache: bool, folds: int) -> dict:
    """Today's harness, one run (in a fresh process)."""
    import warnings

    from evaluation import ChallengeDataset, EvalRSRunner

    warnings.simplefilter("ignore")
    sampler = PeakSampler()
    t0 = time.perf_counter()
    ds = ChallengeDataset(source="synthetic", scale=scale, fold_cache=fold_cache,
                          num_folds=folds)
    t_load = time.perf_counter() - t0
    # no separate fold step: as in a run of submission.py, each fold is read from the fold
    # cache (or cut) in its own "data" stage
    with tempfile.TemporaryDirectory() as results:
        runner = EvalRSRunner(ds, results_dir=results, progress=False, verbose=False,
                              reports=reports, n_boot=n_boot, references=None)
        t2 = time.perf_counter()
        res = runner.evaluate(PrecomputedModel(folder))
        t_run = time.perf_counter() - t2
    peak = sampler.stop()
    stages: dict[str, float] = {}
    for f in res.folds:
        for name, st in f["runtime"].items():
            stages[name] = stages.get(name, 0.0) + st["seconds"]
    model = stages.get("train", 0.0) + stages.get("predict", 0.0)
    return {
        "seconds": t_load + t_run - model, "peak_bytes": peak,
        "parts": {"load": t_load, **stages,
                  "aggregation": t_run - sum(stages.values())},
        "events": len(ds.tables.events), "test_users": [f["n_users"] for f in res.folds],
        "values": [f["tests"] for f in res.folds],
    }


def measure_2022(scale: str, folder: str, num_folds: int) -> dict:
    """The 2022-style harness, one run (in a fresh process)."""
    import warnings

    from evaluation.data._synthetic import synthetic_cache_path

    warnings.simplefilter("ignore")
    sampler = PeakSampler()
    root = synthetic_cache_path(scale, 42)
    t0 = time.perf_counter()
    events = pd.read_parquet(Path(folder) / "events.parquet")
    data = argparse.Namespace(df_users=pd.read_parquet(root / "users.parquet"),
                              df_tracks=pd.read_parquet(root / "tracks.parquet"))
    from evaluation.data import TrackVectors

    data.track_vectors = TrackVectors(np.load(root / "track_vector_ids.npy"),
                                      np.load(root / "track_vectors.npy"))
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    folds = folds_reference(events, num_folds, 42)
    t_folds = time.perf_counter() - t1
    model, values, t_model = PrecomputedModel(folder), [], 0.0
    t2 = time.perf_counter()
    for train, test in folds:
        m0 = time.perf_counter()
        model.train(train)
        preds = model.predict(test[["user_id"]])
        t_model += time.perf_counter() - m0
        out = reference_scores(data, train, test[["user_id", "track_id"]], preds, k=100)
        out.pop("stats")
        values.append(out)
    means = {name: float(np.mean([v[name] for v in values])) for name in values[0]}
    t_score = time.perf_counter() - t2 - t_model
    peak = sampler.stop()
    return {"seconds": t_load + t_folds + t_score, "peak_bytes": peak,
            "parts": {"load": t_load, "folds": t_folds, "scoring": t_score},
            "events": len(events), "test_users": [len(t) for _, t in folds], "values": values,
            "means": means}


def _child(args: argparse.Namespace) -> None:
    print(json.dumps(_measure_side(*args._measure, args)))


def _measure_side(side: str, folder: str, args: argparse.Namespace) -> dict:
    """One run of ``side`` in this process (a fresh one, but for the smoke run's later sides)."""
    if side == "2022-style":
        out = measure_2022(args.scale, folder, args.folds)
    else:
        from evaluation.runner import DEFAULT_N_BOOT

        n_boot = DEFAULT_N_BOOT if args.n_boot is None else args.n_boot
        out = measure_harness(args.scale, folder, n_boot, side == "harness+reports",
                              not args.no_fold_cache, args.folds)
    return out


def _run_side(side: str, folder: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--scale", args.scale, "--folds", str(args.folds),
           "--_measure", side, str(folder)]
    if args.n_boot is not None:
        cmd += ["--n-boot", str(args.n_boot)]
    if args.no_fold_cache:
        cmd.append("--no-fold-cache")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if out.returncode != 0:
        sys.exit(f"the {side} run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _read_through(path: Path) -> None:
    """Read a file once (into the page cache), discarding what is read."""
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1 << 24):
            pass


def _spread(xs: list[float], fmt: str = "{:.2f}") -> str:
    return (fmt.format(statistics.median(xs)) + " (" + fmt.format(min(xs)) + "-"
            + fmt.format(max(xs)) + ")")


def _check_same_values(today: dict, old: dict) -> float:
    """Largest difference between the two sides' per-fold test values (they must agree)."""
    worst = 0.0
    for ours, theirs in zip(today["values"], old["values"]):
        for name, value in theirs.items():
            worst = max(worst, abs(float(ours[name]) - float(value)))
    if worst > 1e-9:
        sys.exit(f"the 2022-style harness and today's disagree by {worst:.3g}")
    return worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="full", choices=["tiny", "small", "full"])
    p.add_argument("--repeat", type=int, default=3, help="runs of each side (default 3)")
    p.add_argument("--folds", type=int, default=4, help="folds of each run (default 4)")
    p.add_argument("--n-boot", type=int, default=None,
                   help="bootstrap replicates (default: the runner's default)")
    p.add_argument("--skip-2022", action="store_true", help="today's harness only")
    p.add_argument("--no-fold-cache", action="store_true",
                   help="cut the folds in every run instead of reading the fold cache")
    p.add_argument("--predictions-dir", default=None,
                   help="keep the precomputed predictions here and reuse them next time")
    p.add_argument("--_measure", nargs=2, metavar=("SIDE", "FOLDER"), help=argparse.SUPPRESS)
    p.add_argument("--smoke", action="store_true",
                   help="the smallest run: checks that the benchmark works, measures nothing")
    args = p.parse_args()
    if args.smoke:
        args.scale, args.repeat, args.n_boot, args.folds = "tiny", 1, 20, 2
    if args._measure:
        _child(args)
        return
    sides = [s for s in SIDES if not (args.skip_2022 and s == "2022-style")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.predictions_dir or tmp)
        if not all((folder / f).is_file() for f in ("sizes.json", "events.parquet")):
            print(f"preparing precomputed predictions at scale {args.scale!r} ...",
                  file=sys.stderr)
            folder.mkdir(parents=True, exist_ok=True)
            prepare(args.scale, folder, args.folds)
        if not args.smoke:  # untimed: warms the page cache for every side, writes the fold cache
            _run_side("harness", folder, args)
        if "2022-style" in sides:
            _read_through(folder / "events.parquet")
        runs: dict[str, list[dict]] = {s: [] for s in sides}
        for rep in range(args.repeat):
            for side in sides:
                # the smoke run: the first side in a fresh process (a measured run's path), the
                # others in this one (the same measure, without an interpreter's start each)
                fresh = not args.smoke or (rep == 0 and side == sides[0])
                runs[side].append(_run_side(side, folder, args) if fresh else
                                  json.loads(json.dumps(_measure_side(side, str(folder), args))))
                print(f"  run {rep + 1}/{args.repeat} {side:16} {runs[side][-1]['seconds']:6.2f} s"
                      f"  {runs[side][-1]['peak_bytes'] / 2**30:5.2f} GiB", file=sys.stderr)
    first = runs["harness"][0]
    print(f"scale {args.scale}: {first['events']:,} events, test users per fold "
          f"{first['test_users']}; medians of {args.repeat} interleaved runs (min-max); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if "2022-style" in runs:
        worst = _check_same_values(first, runs["2022-style"][0])
        print(f"  per-fold test values of both harnesses agree (largest difference {worst:.1e})")
    base = runs.get("2022-style")
    for side in sides:
        secs = [r["seconds"] for r in runs[side]]
        gibs = [r["peak_bytes"] / 2**30 for r in runs[side]]
        line = f"{side:16} {_spread(secs)} s   peak {_spread(gibs)} GiB"
        if base and side != "2022-style":
            speed = statistics.median(r["seconds"] for r in base) / statistics.median(secs)
            memory = (statistics.median(r["peak_bytes"] for r in base)
                      / statistics.median(r["peak_bytes"] for r in runs[side]))
            line += f"   {speed:.1f}x faster, {memory:.1f}x less memory"
        target = {"harness": TARGET_SECONDS, "harness+reports": TARGET_SECONDS_REPORTS}.get(side)
        if target and args.scale == "full":  # the targets are for the full scale
            line += (f"   [target {target} s, {TARGET_GIB} GiB: "
                     f"{'met' if statistics.median(secs) <= target else 'NOT met'} / "
                     f"{'met' if statistics.median(gibs) <= TARGET_GIB else 'NOT met'}]")
        print(line)
        parts = runs[side][0]["parts"]
        print("    " + ", ".join(
            f"{name} {statistics.median(r['parts'][name] for r in runs[side]):.2f}"
            for name in parts if name not in ("train", "predict")))


if __name__ == "__main__":
    main()
