"""The participant's view: the built-in baselines and the ALS recipe, their scores and wall times.

Each model is evaluated as ``submission.py`` evaluates it (4 folds of the synthetic data,
every test user, the runner's default 500-replicate intervals and the shipped references), in
a fresh process per run so that its time and peak memory are its own: the wall time counts
loading the dataset (from its parquet and fold caches, warmed by an untimed first run) and the
whole ``evaluate``, of which the model's own ``train`` + ``predict`` are shown apart. The
models run interleaved, ``--rounds`` times (medians with min-max); every round must give the
same scores to the last bit (they are seeded), or the script stops. ``RandomModel`` is the
reference: the other models' wall times and hit rates are also given as multiples of its.

Models: ``RandomModel`` (the 2022 template), ``PopularityModel`` (the most-played tracks the user
has not heard), ``CBOWModel`` (Word2Vec over listening sequences, the 2022 official baseline's
idea) and ``ALSModel`` (``examples/als_model.py``, ``implicit``'s ALS with 64 factors; left out,
saying so, when ``implicit`` is not installed). Usage::

    python benchmarks/bench_baselines.py                    # small scale, 3 rounds
    python benchmarks/bench_baselines.py --scale full --rounds 1
    python benchmarks/bench_baselines.py --models RandomModel,PopularityModel --scale tiny

Peak memory is the process's true peak: the runner resets the kernel's peak counter per
stage, so it is sampled (``benchmarks/_peak_memory.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled
MODELS = ("RandomModel", "PopularityModel", "CBOWModel", "ALSModel")
REFERENCE = "RandomModel"


#: The smoke run's trained models: one CBOW epoch, a small ALS for two iterations (the same
#: code paths as the defaults, a fraction of the time).
SMOKE_PARAMS = {"CBOWModel": {"epochs": 1}, "ALSModel": {"factors": 8, "iterations": 2}}


def make_model(name: str, dataset, smoke: bool = False):
    """A fresh model ``name`` for ``dataset`` (its default parameters, or the smoke run's
    ``SMOKE_PARAMS`` when ``smoke``)."""
    from evaluation.baselines import CBOWModel, PopularityModel, RandomModel

    params = SMOKE_PARAMS.get(name, {}) if smoke else {}
    if name == "ALSModel":
        from examples.als_model import ALSModel

        return ALSModel(dataset.df_tracks, **params)
    return {"RandomModel": lambda: RandomModel(dataset.df_tracks),
            "PopularityModel": PopularityModel,
            "CBOWModel": lambda: CBOWModel(**params)}[name]()


def measure(name: str, scale: str, smoke: bool = False) -> dict:
    """One run of model ``name`` (in a fresh process): times, peak memory, scores."""
    import warnings

    from benchmarks._peak_memory import PeakSampler
    from evaluation import ChallengeDataset, EvalRSRunner

    warnings.simplefilter("ignore")  # the random model recommends training items: expected
    sampler = PeakSampler()
    t0 = time.perf_counter()
    dataset = ChallengeDataset(source="synthetic", scale=scale)
    with tempfile.TemporaryDirectory() as results:
        runner = EvalRSRunner(dataset, results_dir=results, progress=False, verbose=False)
        res = runner.evaluate(make_model(name, dataset, smoke))
    seconds = time.perf_counter() - t0
    peak = sampler.stop()
    model = sum(f["runtime"][s]["seconds"] for f in res.folds for s in ("train", "predict"))
    ci = res.confidence_intervals or {}
    return {"seconds": seconds, "model_seconds": model, "peak_bytes": peak,
            "events": len(dataset.tables.events),
            "test_users": sum(f["n_users"] for f in res.folds),
            "hit_rate": res.aggregate["mean"]["HIT_RATE"], "mrr": res.aggregate["mean"]["MRR"],
            "phase1": res.phase1_score, "score": res.leaderboard_score,
            "score_ci": ci.get("phase2_score"), "references": res.references["note"],
            "folds": [f["tests"] for f in res.folds]}


def _run(name: str, scale: str, smoke: bool = False) -> dict:
    """``measure`` in a fresh process."""
    cmd = [sys.executable, __file__, "--scale", scale, "--_measure", name,
           *(["--smoke"] if smoke else [])]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if out.returncode != 0:
        sys.exit(f"the {name} run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _in_process(name: str, scale: str) -> dict:
    """``measure`` in this process, its figures as ``_run`` reads them (the smoke run's way to
    spare an interpreter's start: it measures nothing)."""
    return json.loads(json.dumps(measure(name, scale, smoke=True)))


def _spread(xs: list[float], fmt: str = "{:.1f}") -> str:
    return (fmt.format(statistics.median(xs)) + " (" + fmt.format(min(xs)) + "-"
            + fmt.format(max(xs)) + ")")


def _models(arg: str | None) -> list[str]:
    names = list(MODELS) if arg is None else [m.strip() for m in arg.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        sys.exit(f"--models: unknown {unknown}; choose among {list(MODELS)}")
    if "ALSModel" in names and importlib.util.find_spec("implicit") is None:
        print("ALSModel left out: implicit is not installed (make als)", file=sys.stderr)
        names.remove("ALSModel")
    return names


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"])
    p.add_argument("--rounds", type=int, default=3, help="runs of each model (default 3)")
    p.add_argument("--models", default=None,
                   help=f"comma-separated, among {', '.join(MODELS)} (default: all)")
    p.add_argument("--_measure", default=None, help=argparse.SUPPRESS)
    p.add_argument("--smoke", action="store_true",
                   help="the smallest run: checks that the benchmark works, measures nothing")
    args = p.parse_args()
    if args.smoke:
        args.scale, args.rounds = "tiny", 1
    if args._measure:
        print(json.dumps(measure(args._measure, args.scale, args.smoke)))
        return
    names = _models(args.models)
    if not args.smoke:  # untimed: writes the dataset's and the folds' caches, warms the page cache
        _run(names[0], args.scale)
    runs: dict[str, list[dict]] = {m: [] for m in names}
    load = []
    for rnd in range(args.rounds):
        for name in names:
            # the smoke run: the first model in a fresh process (a measured run's path), the
            # others in this one (the same ``measure``, without an interpreter's start each)
            fresh = not args.smoke or (rnd == 0 and name == names[0])
            runs[name].append(_run(name, args.scale, args.smoke) if fresh
                              else _in_process(name, args.scale))
            load.append(os.getloadavg()[0])
            r = runs[name][-1]
            print(f"  round {rnd + 1}/{args.rounds} {name:16} {r['seconds']:7.1f} s "
                  f"{r['peak_bytes'] / 2**30:5.2f} GiB", file=sys.stderr)
            if r["folds"] != runs[name][0]["folds"]:
                sys.exit(f"{name}: round {rnd + 1} gave other per-fold values than round 1")
    first = runs[names[0]][0]
    print(f"synthetic {args.scale}: {first['events']:,} events, {first['test_users']:,} test "
          f"users over 4 folds; medians of {args.rounds} interleaved runs (min-max); 1-minute "
          f"load average during the runs {min(load):.2f}-{max(load):.2f}; "
          f"{first['references']}")
    ref = runs.get(REFERENCE)
    print("| model | wall s | model's train + predict s | peak GiB | HIT_RATE | MRR | "
          "phase-1 | leaderboard score (95% CI) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        r0 = runs[name][0]
        secs = [r["seconds"] for r in runs[name]]
        wall = _spread(secs)
        hit = f"{r0['hit_rate']:.4g}"
        if ref and name != REFERENCE:
            ratio = statistics.median(secs) / statistics.median(x["seconds"] for x in ref)
            wall += f", {ratio:.1f}x"
            hit += f" ({r0['hit_rate'] / ref[0]['hit_rate']:.1f}x)"
        ci = r0["score_ci"]
        score = ("n/a" if r0["score"] is None else f"{r0['score']:.4g}"
                 + (f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""))
        print(f"| {name} | {wall} | {_spread([r['model_seconds'] for r in runs[name]])} | "
              f"{_spread([r['peak_bytes'] / 2**30 for r in runs[name]], '{:.2f}')} | {hit} | "
              f"{r0['mrr']:.4g} | {r0['phase1']:.4g} | {score} |")
    if ref:
        print(f"(x: multiples of {REFERENCE}'s wall time and hit rate)")


if __name__ == "__main__":
    main()
