"""Are the bootstrap intervals honest? Coverage of the 95 % intervals on a known population.

    python benchmarks/bench_coverage.py [--reps 1000] [--n-boot 500] [--sizes 500 1000 2000]
                                        [--quick]

A population of 200,000 users with fixed hits, reciprocal ranks and four user-activity groups
(``benchmarks/_coverage.py``) has exact HIT_RATE, MRR and MRED values. Each repetition samples
test users without replacement and runs ``evaluation.challenge.bootstrap`` (the runner's
intervals) on them. Prints, per scenario, test and sample size: the share of intervals that
hold the population value with its binomial standard error, the mean interval width, and the
share of intervals listed as ``bias_dominated``.

Scenario ``gap``: the groups' miss rates differ (0.70, 0.78, 0.85, 0.62). Scenario ``equal``:
they do not (population MRED ~ 0), where a sampled MRED is biased away from 0 by construction;
its interval is not expected to cover, and the table shows by how much it does not.
``--quick``: 200 repetitions of 200 replicates, for a smoke run. ``--check``: the full study
of the test suite's cheaper check: 1,500 repetitions of 400 replicates at 2,000 test users, and
exit status 1 unless every test's coverage is within 93-97 % (a binomial standard error of 0.56
points: an honest 95 % interval falls outside with probability < 1 %) with no interval flagged.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._coverage import TESTS, coverage, population


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=500)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--population", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--check", action="store_true",
                        help="1,500 repetitions at 2,000 users; fail outside 93-97 %%")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.reps, args.n_boot, args.sizes, args.population = 20, 50, [200], 5_000
    if args.check:
        sys.exit(check(args.population, args.seed))
    if args.quick:
        args.reps, args.n_boot = 200, 200
    print(f"population {args.population:,} users, {args.reps} repetitions, "
          f"{args.n_boot} bootstrap replicates each, 95 % intervals, seed {args.seed}")
    print(f"{'scenario':9} {'test':20} {'n users':>8} {'reps':>6} {'coverage':>9} {'SE':>7} "
          f"{'mean width':>11} {'flagged':>8} {'true value':>11}")
    runs = [("gap", n) for n in args.sizes] + [("equal", max(args.sizes))]
    for scenario, n in runs:
        pop = population(args.population, scenario, seed=args.seed)
        start = time.perf_counter()
        table = coverage(pop, n, args.reps, n_boot=args.n_boot, seed=args.seed)
        seconds = time.perf_counter() - start
        for test in TESTS:
            row = table[test]
            print(f"{scenario:9} {test:20} {n:8,} {args.reps:6} {row['coverage']:9.3f} "
                  f"{row['se']:7.3f} {row['width']:11.4f} {row['flagged']:8.3f} "
                  f"{pop.truth[test]:11.4f}")
        print(f"{'':9} ({seconds:.1f} s, {1000 * seconds / args.reps:.1f} ms per repetition)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (ru_maxrss): {peak:.0f} MiB")


def check(n_population: int, seed: int) -> int:
    """The 93-97 % band at 2,000 test users; return the exit status (0: every test inside)."""
    pop = population(n_population, "gap", seed=seed)
    start = time.perf_counter()
    table = coverage(pop, n_test=2000, reps=1500, n_boot=400, seed=seed)
    failed = 0
    for test in TESTS:
        row = table[test]
        ok = 0.93 <= row["coverage"] <= 0.97 and row["flagged"] == 0.0
        failed += not ok
        print(f"{test:20} coverage {row['coverage']:.3f} (SE {row['se']:.3f}), flagged "
              f"{row['flagged']:.3f}: {'ok' if ok else 'OUTSIDE 93-97 %'}")
    print(f"({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    main()
