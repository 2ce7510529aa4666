"""A newcomer's first minutes: a fresh clone's set-up with uv against pip, and the first score.

    python benchmarks/bench_setup.py [--rounds 3] [--cold] [--no-bytecode-cache] [--keep]
    python benchmarks/bench_setup.py --smoke    # make --dry-run in two clones: does it run?

Each round clones the repository's committed HEAD twice into a temporary folder (``git clone``,
no hard links) and, in each clone, times

- ``make install``: the virtual environment and the harness's requirements, built by uv (the
  Makefile's default) in one clone and by pip in the other (``make install UV=``, the
  Makefile's fallback: ``python3 -m venv`` and ``pip install`` of the same requirements);
- ``make submission ARGS=--quiet``: the first evaluation of the template model on the default
  (small) synthetic data, with an empty harness cache (``EVALRS_CACHE_DIR`` and reclist's
  folder point into the round's temporary folder, so the dataset is generated and the folds
  cut as on a new machine).

The first score is the sum of the two: what ``make submission`` costs from a fresh clone. The
rounds interleave the two set-ups (uv first in even rounds, pip first in odd ones). By default
the package caches are warm: one untimed install of each set-up runs first, so uv's and pip's
own caches hold every wheel. ``--cold`` runs every install with an empty package cache of its
own instead (``UV_CACHE_DIR``, ``PIP_CACHE_DIR``): everything is downloaded from the package
index, so those figures move with the network. Python writes the bytecode of what it imports,
as on a newcomer's machine (``PYTHONDONTWRITEBYTECODE`` is removed from the environment);
``--no-bytecode-cache`` sets it instead, as some CI machines do: then the Makefile has uv
compile the whole environment at install, as pip always does. Prints each run, then medians
with their min-max and the ratios pip / uv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETUPS = ("uv", "pip")
#: What ``make`` is told for each set-up (``UV=`` empty: the Makefile's pip fallback).
MAKE_ARGS = {"uv": [], "pip": ["UV="]}


def clone(dest: Path) -> Path:
    """A fresh clone of the repository's committed HEAD at ``dest``."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)],
                   check=True)
    return dest


def timed_make(clone_dir: Path, target: list[str], env: dict[str, str],
               dry_run: bool = False) -> float:
    """Wall seconds of ``make TARGET`` in ``clone_dir`` (with ``dry_run``, of ``make --dry-run``:
    the commands printed, not run); its output is shown only on failure."""
    start = time.perf_counter()
    done = subprocess.run(["make", "--no-print-directory", *(["--dry-run"] if dry_run else []),
                           *target], cwd=clone_dir, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"make {' '.join(target)} failed in {clone_dir} (exit {done.returncode}):\n"
                 f"{(done.stdout + done.stderr)[-4000:]}")
    return seconds


def environment(work: Path, setup: str, cold: bool, bytecode: bool) -> dict[str, str]:
    """The run's environment: an empty harness cache, and empty package caches if ``cold``."""
    env = {**os.environ, "EVALRS_CACHE_DIR": str(work / "evalrs-cache"),
           "RECLIST_META_DATA_FOLDER": str(work / "reclist")}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if cold:
        env["UV_CACHE_DIR" if setup == "uv" else "PIP_CACHE_DIR"] = str(work / "package-cache")
    return env


def one_run(base: Path, name: str, setup: str, cold: bool,
            bytecode: bool, dry_run: bool = False) -> dict[str, float]:
    """Clone, ``make install``, ``make submission``; the seconds of each and their sum."""
    work = base / name
    work.mkdir()
    clone_dir = clone(work / "clone")
    env = environment(work, setup, cold, bytecode)
    install = timed_make(clone_dir, ["install", *MAKE_ARGS[setup]], env, dry_run)
    score = timed_make(clone_dir, ["submission", "ARGS=--quiet", *MAKE_ARGS[setup]], env,
                       dry_run)
    shutil.rmtree(work)
    return {"install": install, "submission": score, "first score": install + score}


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f} s ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", action="store_true",
                        help="empty package caches for every install (downloads everything)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="run with PYTHONDONTWRITEBYTECODE=1 (Python caches no bytecode)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing"
                             " (one round, no warm-up, make --dry-run: nothing is installed)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    bytecode = not args.no_bytecode_cache
    base = Path(tempfile.mkdtemp(prefix="evalrs-bench-setup-"))
    print(f"fresh clones of {REPO} (HEAD) under {base}; "
          f"{'cold' if args.cold else 'warm'} package caches, empty harness cache, "
          f"{'Python caches bytecode' if bytecode else 'PYTHONDONTWRITEBYTECODE=1'}")
    try:
        if not (args.cold or args.smoke):
            for setup in SETUPS:  # fill uv's and pip's caches; not timed
                one_run(base, f"warm-up-{setup}", setup, cold=False, bytecode=bytecode)
        times: dict[str, list[dict[str, float]]] = {s: [] for s in SETUPS}
        for r in range(args.rounds):
            order = SETUPS if r % 2 == 0 else SETUPS[::-1]
            for setup in order:
                run = one_run(base, f"round{r}-{setup}", setup, args.cold, bytecode,
                              dry_run=args.smoke)
                times[setup].append(run)
                print(f"round {r} {setup:3}: make install {run['install']:5.1f} s, "
                      f"make submission {run['submission']:5.1f} s, "
                      f"first score {run['first score']:5.1f} s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\nmedians of {args.rounds} interleaved rounds (min-max):")
    for part in ("install", "submission", "first score"):
        uv = [t[part] for t in times["uv"]]
        pip = [t[part] for t in times["pip"]]
        ratio = statistics.median(pip) / statistics.median(uv)
        print(f"  {part:12} uv {summary(uv)}   pip {summary(pip)}   pip / uv {ratio:.2f}x")


if __name__ == "__main__":
    main()
