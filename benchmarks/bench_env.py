"""The organizer's view of ``reproduce``: how long an environment takes, and what the sandbox
costs per reproduction.

Three measurements, interleaved ``--rounds`` times (medians with min-max):

- *cached*: ``prepare_env`` for the template checkout when its environment is in the cache
  (with uv this includes resolving the requirements to the pinned set that keys the cache;
  goal: at most 5 s);
- *cold*: a new environment for the template's requirements in an empty cache folder, with uv
  and with the former pip path side by side (goal for uv: at most 30 s). The installers' own
  download caches stay warm, as on an organizer's machine after the first build; the
  environment itself is built from nothing each time;
- *sandbox overhead*: an interpreter that imports nothing, run in the sandbox with its budgets
  (cgroup set-up and removal included) and without it (goal: at most 1 s more).

Usage::

    python benchmarks/bench_env.py                 # 3 rounds
    python benchmarks/bench_env.py --rounds 1 --no-pip
    python benchmarks/bench_env.py --smoke         # the sandbox once, no builds: does it run?
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._checkout import template_checkout  # noqa: E402
from evaluation.reproduce import Bind, Budgets, prepare_env, run_sandboxed  # noqa: E402
from evaluation.reproduce._env import remove_tree  # noqa: E402


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _cold(checkout: Path, installer: str, log: Path) -> float:
    cache = Path(tempfile.mkdtemp(prefix=f"bench-env-{installer}-"))
    try:
        return _timed(lambda: prepare_env(checkout, cache, log=lambda line: None,
                                          log_path=log, installer=installer))
    finally:
        remove_tree(cache)


def _sandboxed(work: Path, sandbox: bool) -> float:
    command = [sys.executable, "-S", "-c", "pass"]
    if not sandbox:
        return _timed(lambda: subprocess.run(command, check=True))
    return _timed(lambda: run_sandboxed(
        command, binds=[Bind(Path(sys.prefix), sys.prefix)], env={"PATH": "/usr/bin:/bin"},
        budgets=Budgets(wall_s=60, memory_mb=1024, processes=64, scratch_mb=64),
        log_path=work / "sandbox.log", python=sys.executable))


def _line(name: str, values: list[float]) -> str:
    return (f"{name:<34} median {statistics.median(values):7.2f} s  "
            f"(min {min(values):.2f}, max {max(values):.2f}, n={len(values)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pip", action="store_true", help="skip the pip cold builds")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing"
                             " (one round of the sandbox only: the builds need the package "
                             "index and half a minute at least)")
    args = parser.parse_args()
    builds = not args.smoke
    if args.smoke:
        args.rounds = 1
    work = Path(tempfile.mkdtemp(prefix="bench-env-"))
    checkout = template_checkout(work / "checkout")
    log = work / "build.log"
    cache = work / "cache"
    if builds:
        prepare_env(checkout, cache, log=lambda line: None, log_path=log)  # untimed: fills it
    times: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        if builds:
            times.setdefault("cached environment (uv)", []).append(_timed(lambda: prepare_env(
                checkout, cache, log=lambda line: None, log_path=log)))
            times.setdefault("cold build (uv)", []).append(_cold(checkout, "uv", log))
        if builds and not args.no_pip:
            times.setdefault("cold build (pip)", []).append(_cold(checkout, "pip", log))
        times.setdefault("interpreter, no sandbox", []).append(_sandboxed(work, False))
        times.setdefault("interpreter, in the sandbox", []).append(_sandboxed(work, True))
    for name, values in times.items():
        print(_line(name, values))
    median = {name: statistics.median(values) for name, values in times.items()}
    if "cold build (pip)" in median:
        print(f"cold build: pip / uv = "
              f"{median['cold build (pip)'] / median['cold build (uv)']:.1f}x")
    overhead = median["interpreter, in the sandbox"] - median["interpreter, no sandbox"]
    print(f"sandbox overhead per run: {overhead:.3f} s (goal <= 1 s)")
    if cache.exists():
        remove_tree(cache)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
