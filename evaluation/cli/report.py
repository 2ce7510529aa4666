"""``python -m evaluation report``: the HTML report and figures of one or more finished runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation.errors import ConfigError


def register(subparsers) -> None:
    """Add the ``report`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "report",
        help="write an HTML report (and PNG figures) of finished runs",
        description="Write report.html, one self-contained file with the figures embedded, and "
                    "the same figures as PNG: the nine tests per fold and overall with their "
                    "intervals, the miss rate per slice group, the leaderboard score's "
                    "bootstrap distribution; with several runs also their comparison with the "
                    "baseline (forest plot and table, corrected for multiple testing).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="a run directory (results/<run id>) or its results.json")
    p.add_argument("--baseline", metavar="RUN_DIR", default=None,
                   help="with several runs, the run the others are compared to (default: the "
                        "first RUN_DIR; added to the runs when it is not one of them)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: RUN_DIR/report of the first run)")
    p.add_argument("--n-boot", type=int, default=None, metavar="N",
                   help="bootstrap replicates of the figures (and of the comparison) "
                        "(default: each run's own)")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="seed of that bootstrap (default: each run's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report of ``args``; return the exit status."""
    from evaluation.analysis import load_results, write_report

    paths = [Path(r) for r in args.runs]
    if args.baseline is not None:
        base = Path(args.baseline)
        keys = [_key(p) for p in paths]
        if _key(base) in keys:
            baseline = keys.index(_key(base))
        else:
            paths.insert(0, base)
            baseline = 0
    else:
        baseline = None
    if baseline is not None and len(paths) < 2:
        raise ConfigError("--baseline needs another run to compare with it; pass two or more "
                          "RUN_DIRs.")
    if len(set(map(_key, paths))) != len(paths):
        raise ConfigError(f"the same run is given twice in {[str(p) for p in paths]}; pass each "
                          f"run once.")
    runs = [load_results(p) for p in paths]
    path = write_report(runs, args.out, baseline=baseline, n_boot=args.n_boot, seed=args.seed)
    print(f"Report: {path}")
    print(f"Figures: {path.parent}")
    return 0


def _key(path: Path) -> Path:
    """The run directory ``path`` names (a results.json names its folder), resolved."""
    path = path.resolve()
    return path.parent if path.name == "results.json" else path
